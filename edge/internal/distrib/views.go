package distrib

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/edge/internal/gateway"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing"
	"weir.dev/routing/natsnames"
)

// viewPublisher puts each member's view (R-OBS-1) into WEIR_VIEWS: every
// Interval it looks at every member of every installed table and puts the
// view when it changed since the last put (so at most once an interval per
// member) or when the last put is Heartbeat old (so a live edge's views never
// expire, and a dead edge's do after ViewsMaxAge). Puts are asynchronous
// JetStream publishes on the bucket's subjects; a put that fails is retried
// on the next change or heartbeat. Nothing is put before open reports
// WEIR_VIEWS open: until then every view waits, and is put at the first
// scan after.
type viewPublisher struct {
	js        jetstream.JetStream
	nc        *nats.Conn
	reg       *gateway.Registry
	states    *routing.States
	edgeID    string
	edgeToken string
	now       func() time.Time
	log       *slog.Logger
	interval  time.Duration
	heartbeat time.Duration
	open      func() bool

	last map[string]sentView // by KV key
}

type sentView struct {
	body []byte // the view without observed_at
	at   time.Time
}

func (v *viewPublisher) run(ctx context.Context) {
	if v.last == nil {
		v.last = map[string]sentView{}
	}
	t := time.NewTicker(v.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !v.nc.IsConnected() || !v.open() {
			continue
		}
		v.scan()
	}
}

// scan puts every view that changed or is due for its heartbeat, and
// forgets members no longer in any table.
func (v *viewPublisher) scan() {
	now := v.now()
	live := make(map[string]bool, len(v.last))
	done := map[string]bool{} // member ids of managed records seen already
	for _, t := range v.reg.Tables() {
		for _, r := range t.Records {
			for _, m := range r.Members {
				if r.Managed {
					if done[m.ID] {
						continue
					}
					done[m.ID] = true
				}
				key := viewKey(r, m, v.edgeToken)
				live[key] = true
				mv := memberView(v.states.View(m, now), r, m, v.edgeID)
				body, err := proto.MarshalOptions{Deterministic: true}.Marshal(mv)
				if err != nil {
					continue
				}
				prev, ok := v.last[key]
				if ok && bytes.Equal(prev.body, body) && now.Sub(prev.at) < v.heartbeat {
					continue
				}
				mv.ObservedAt = timestamppb.New(now)
				val, err := proto.Marshal(mv)
				if err != nil {
					continue
				}
				if _, err := v.js.PublishAsync(natsnames.KVSubject(natsnames.ViewsBucket, key), val); err != nil {
					v.log.Debug("member view not put", "key", key, "err", err)
					continue
				}
				v.last[key] = sentView{body: body, at: now}
			}
		}
	}
	for key := range v.last {
		if !live[key] {
			delete(v.last, key)
		}
	}
}

// viewKey is "<tenant_id>.<record_id>.<member_name>.<edge_id>", with the
// tenant token ManagedTenantToken for managed records.
func viewKey(r *routing.Record, m *routing.Member, edgeToken string) string {
	tenant := r.TenantID
	if r.Managed {
		tenant = "" // natsnames.ViewKey writes ManagedTenantToken
	}
	return natsnames.ViewKey(tenant, r.ID, m.Name, edgeToken)
}

// memberView is the wire form of a member's state, without observed_at.
func memberView(s routing.View, r *routing.Record, m *routing.Member, edgeID string) *telemetryv1.MemberView {
	mv := &telemetryv1.MemberView{
		EdgeId: edgeID, TenantId: r.TenantID, RecordId: r.ID, RecordName: r.Name, MemberName: m.Name,
		Headroom: s.Headroom, LastStatus: uint32(max(s.LastStatus, 0)), Spent: s.Spent, Disabled: s.Disabled,
		InFlight: uint32(max(s.InFlight, 0)), Counters: s.Counters, ConsecutiveRefusals: uint32(max(s.Streak, 0)),
		// R-CAP-1, R-HEAD-6, R-HEAD-7: "in flight 3/5, today 120/1000" on
		// this edge, against its shares of the declared limits.
		MaxInFlight: uint32(min(max(s.MaxInFlight, 0), math.MaxUint32)), RequestsToday: uint64(max(s.RequestsToday, 0)),
		RpdShare: uint64(max(s.RPDShare, 0)), WireFormat: m.Format().String(),
	}
	if !s.LastAt.IsZero() {
		mv.LastStatusAt = timestamppb.New(s.LastAt)
	}
	if !s.CoolUntil.IsZero() {
		mv.Cooldown = &telemetryv1.Cooldown{Until: timestamppb.New(s.CoolUntil), Kind: gateway.FailureKindProto(s.CoolKind), Reason: s.CoolReason}
	}
	for _, d := range s.Dims {
		dv := &telemetryv1.DimensionView{Dimension: dimensionProto(d.Dim), Limit: d.Limit, Remaining: d.Remaining,
			Source: telemetryv1.HeadroomSource_HEADROOM_SOURCE_DECLARED}
		if d.FromHeaders {
			dv.Source = telemetryv1.HeadroomSource_HEADROOM_SOURCE_HEADERS
		}
		if !d.Reset.IsZero() {
			dv.ResetAt = timestamppb.New(d.Reset)
		}
		mv.Dimensions = append(mv.Dimensions, dv)
	}
	return mv
}

func dimensionProto(d routing.Dim) telemetryv1.Dimension {
	switch d {
	case routing.DimRequests:
		return telemetryv1.Dimension_DIMENSION_REQUESTS
	case routing.DimInputTokens:
		return telemetryv1.Dimension_DIMENSION_INPUT_TOKENS
	case routing.DimOutputTokens:
		return telemetryv1.Dimension_DIMENSION_OUTPUT_TOKENS
	case routing.DimTokens:
		return telemetryv1.Dimension_DIMENSION_TOKENS
	}
	return telemetryv1.Dimension_DIMENSION_UNSPECIFIED
}
