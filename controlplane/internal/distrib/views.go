package distrib

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	"weir.dev/natsconf"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing/natsnames"
)

// ViewConfig configures the view mirror.
type ViewConfig struct {
	// Replicas is WEIR_VIEWS's replica count when the mirror recreates it
	// (Config.Replicas).
	Replicas int
	// FlushInterval is how long views are gathered before one batch write.
	FlushInterval time.Duration
	// Log receives failures; nil discards.
	Log *slog.Logger
}

// ViewMirror copies the edges' member views (R-OBS-1) from WEIR_VIEWS into
// the member_views and edges tables, where the admin API reads them
// (`weir provider show`, `weir provider pool list`, `weir edges list`,
// `weir doctor`). Create it with NewViewMirror.
//
// Contract: each view put in the bucket is stored as that edge's view of
// that member unless a later one (by observed_at) is stored already, and
// the edge's last_seen moves to the latest observed_at. A view of a record
// that no longer exists is ignored. Views are never deleted here: the
// bucket's max age expires a stopped edge's views without telling
// watchers, so the tables keep them and the admin API marks those older
// than the max age expired (and the edge silent); the janitor deletes them
// later. The record id, member name and edge id come from the value; the
// key (<tenant_id>.<record_id>.<member_name>.<edge_id>) fills in what the
// value leaves empty. The tenant segment is not used: the record decides
// ownership (a managed record's views carry the token "cluster" there).
type ViewMirror struct {
	st   *store.Store
	js   jetstream.JetStream
	cfg  ViewConfig
	fail *failureLog
}

// NewViewMirror returns a mirror of WEIR_VIEWS (read through js) into st.
func NewViewMirror(st *store.Store, js jetstream.JetStream, cfg ViewConfig) *ViewMirror {
	cfg.Log = orDiscard(cfg.Log)
	return &ViewMirror{st: st, js: js, cfg: cfg, fail: newFailureLog(cfg.Log, "view mirror")}
}

// Run watches the bucket (every current view first, then each update) and
// writes views in batches until ctx ends; it restarts the watch after a
// failure and returns nil when ctx ends.
func (v *ViewMirror) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := v.watch(ctx); err != nil {
			v.fail.fail(ctx, err)
			sleep(ctx, time.Second)
		}
	}
	return nil
}

// watch runs one watcher (on the bucket, created when missing) until it
// fails or ctx ends.
func (v *ViewMirror) watch(ctx context.Context) error {
	kv, err := v.js.CreateOrUpdateKeyValue(ctx, natsconf.ViewsBucketConfig(v.cfg.Replicas))
	if err != nil {
		return fmt.Errorf("distrib: bucket %s: %w", natsnames.ViewsBucket, err)
	}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("distrib: watch %s: %w", natsnames.ViewsBucket, err)
	}
	defer func() { _ = w.Stop() }()
	tick := time.NewTicker(v.cfg.FlushInterval)
	defer tick.Stop()
	pending := map[string]*telemetryv1.MemberView{}
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		if err := v.write(ctx, pending); err != nil {
			return err
		}
		clear(pending)
		v.fail.ok(ctx)
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return flush()
		case <-tick.C:
			if err := flush(); err != nil {
				return err
			}
		case e, ok := <-w.Updates():
			if !ok {
				return errors.Join(flush(), fmt.Errorf("distrib: watch %s: the watcher stopped", natsnames.ViewsBucket))
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue // end of the initial values, or a delete
			}
			mv, err := viewOf(e)
			if err != nil {
				v.cfg.Log.WarnContext(ctx, "member view ignored", "key", e.Key(), "err", err)
				continue
			}
			pending[e.Key()] = mv
		}
	}
}

// write stores views in one transaction.
func (v *ViewMirror) write(ctx context.Context, views map[string]*telemetryv1.MemberView) error {
	var rows []sqlc.MirrorMemberViewParams
	seen := map[string]time.Time{}
	for _, mv := range views {
		rec, _ := parseUUID(mv.GetRecordId())
		at := mv.GetObservedAt().AsTime()
		raw, err := proto.Marshal(mv)
		if err != nil {
			return fmt.Errorf("distrib: member view: %w", err)
		}
		rows = append(rows, sqlc.MirrorMemberViewParams{
			EdgeID: mv.GetEdgeId(), RecordID: rec, MemberName: mv.GetMemberName(), View: raw, ObservedAt: ts(at),
		})
		if at.After(seen[mv.GetEdgeId()]) {
			seen[mv.GetEdgeId()] = at
		}
	}
	var edges []sqlc.MirrorEdgeParams
	for id, at := range seen {
		edges = append(edges, sqlc.MirrorEdgeParams{ID: id, LastSeen: ts(at)})
	}
	return v.st.Tx(ctx, store.Actor{Name: "controlplane"}, func(tx *store.Tx) error {
		var errs []error
		tx.Q.MirrorMemberView(ctx, rows).Exec(func(_ int, err error) { errs = append(errs, err) })
		tx.Q.MirrorEdge(ctx, edges).Exec(func(_ int, err error) { errs = append(errs, err) })
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("distrib: store member views: %w", err)
		}
		return nil
	})
}

// viewOf decodes a WEIR_VIEWS entry, filling the names the value leaves
// empty from the key and observed_at from the time of the put.
func viewOf(e jetstream.KeyValueEntry) (*telemetryv1.MemberView, error) {
	mv := &telemetryv1.MemberView{}
	if err := proto.Unmarshal(e.Value(), mv); err != nil {
		return nil, fmt.Errorf("not a MemberView: %w", err)
	}
	if parts := strings.SplitN(e.Key(), ".", 4); len(parts) == 4 {
		if mv.RecordId == "" {
			mv.RecordId = parts[1]
		}
		if mv.MemberName == "" {
			mv.MemberName = parts[2]
		}
		if mv.EdgeId == "" {
			mv.EdgeId = parts[3]
		}
	}
	var problems []string
	if _, ok := parseUUID(mv.GetRecordId()); !ok {
		problems = append(problems, fmt.Sprintf("record id %q is not a UUID", mv.GetRecordId()))
	}
	if mv.GetMemberName() == "" || mv.GetEdgeId() == "" {
		problems = append(problems, "no member name or edge id")
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	if mv.GetObservedAt() == nil || !mv.GetObservedAt().IsValid() {
		mv.ObservedAt = timestamppb.New(e.Created())
	}
	mv.EdgeId, mv.MemberName = clean(mv.EdgeId), clean(mv.MemberName)
	return mv, nil
}
