package distrib

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"weir.dev/controlplane/internal/store"
	"weir.dev/routing/natsnames"
)

// RunRepair watches WEIR_CONFIG until ctx ends and repairs every entry this
// control plane did not sign: a value that is not an envelope, is signed
// with another key or for another key name, or a deletion. The owner's
// snapshot (or, for a tenant that no longer exists, its tombstone) is
// published again at once, replacing the foreign value whatever version
// it claims; a value under a key the publisher never uses is purged. Edges
// refuse such values anyway (they verify every signature); the repair
// makes sure an edge that starts later finds a good one. The watch
// delivers every current value first, so a start repairs whatever was
// forged while no control plane ran. Failures are logged and retried.
func (p *Publisher) RunRepair(ctx context.Context) error {
	fail := newFailureLog(p.cfg.Log, "config repair")
	status := p.js.Conn().StatusChanged(nats.CONNECTED)
	defer p.js.Conn().RemoveStatusListener(status)
	for ctx.Err() == nil {
		err := p.repairWatch(ctx, status)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			fail.fail(ctx, err)
			sleep(ctx, time.Second)
			continue
		}
		fail.ok(ctx)
	}
	return nil
}

// repairWatch runs one watch; a nil error means NATS reconnected and the
// watch should be built again.
func (p *Publisher) repairWatch(ctx context.Context, reconnected <-chan nats.Status) error {
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	kv, err := p.js.KeyValue(sctx, natsnames.ConfigBucket)
	cancel()
	if err != nil {
		return fmt.Errorf("distrib: repair: bucket %s: %w", natsnames.ConfigBucket, err)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	w, err := kv.WatchAll(wctx)
	if err != nil {
		return fmt.Errorf("distrib: repair: watch: %w", err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-reconnected:
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("distrib: repair: the watch ended")
			}
			if e == nil {
				continue
			}
			if err := p.repairEntry(ctx, kv, e); err != nil {
				return err
			}
		}
	}
}

// repairEntry repairs one entry when this control plane did not sign it.
func (p *Publisher) repairEntry(ctx context.Context, kv jetstream.KeyValue, e jetstream.KeyValueEntry) error {
	key := e.Key()
	put := e.Operation() == jetstream.KeyValuePut
	if put {
		if _, err := p.cfg.Signer.Open(key, e.Value()); err == nil {
			return nil
		}
	}
	owner, ok := configOwner(key)
	if !ok {
		if !put {
			return nil
		}
		p.cfg.Log.WarnContext(ctx, "config bucket: a value under a key no control plane writes; purged", "key", key)
		if err := kv.Purge(ctx, key); err != nil {
			return fmt.Errorf("distrib: repair: purge %s: %w", key, err)
		}
		return nil
	}
	p.cfg.Log.WarnContext(ctx, "config bucket: an entry this control plane did not sign; publishing the owner's snapshot again",
		"key", key, "operation", e.Operation().String())
	version, err := p.publishTo(ctx, kv, owner)
	if err != nil {
		if permanent(err) {
			p.cfg.Log.ErrorContext(ctx, "config snapshot cannot be built", "owner", key, "err", err)
			return nil
		}
		return err
	}
	return markPublished(ctx, p.st.Q, owner, version)
}

// configOwner is the owner of a WEIR_CONFIG key: store.Cluster for
// "cluster", the tenant of "tenant.<uuid>"; ok is false for any other key.
func configOwner(key string) (pgtype.UUID, bool) {
	if key == natsnames.ClusterKey {
		return store.Cluster, true
	}
	id, ok := strings.CutPrefix(key, natsnames.TenantKeyPrefix)
	if !ok {
		return pgtype.UUID{}, false
	}
	u, err := store.ParseUUID(id)
	if err != nil || store.UUIDString(u) != id {
		return pgtype.UUID{}, false
	}
	return u, true
}
