package distrib

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/edge/internal/gateway"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing/natsnames"
)

// Affinity implements gateway.Affinity across edges (R-STICK-1, R-STICK-3).
// Get asks this edge's own memory first; only on a miss does it read
// WEIR_AFFINITY, bounded by a short timeout and skipped at once while NATS is
// disconnected, so a slow or absent NATS costs a call at most that timeout
// and then rendezvous hashing decides. Put records locally and hands the
// write to a background goroutine that coalesces writes per job and
// publishes them asynchronously: a call never waits on it. Until the edge
// has opened WEIR_AFFINITY (kv returns nil before), reads answer from the
// local memory only and writes wait.
type Affinity struct {
	local   *gateway.LocalAffinity
	nc      *nats.Conn
	js      jetstream.JetStream
	kv      func() jetstream.KeyValue
	timeout time.Duration
	now     func() time.Time
	log     *slog.Logger

	mu      sync.Mutex
	pending map[string]*telemetryAffinity // by KV key
	wake    chan struct{}
}

// Get implements gateway.Affinity.
func (a *Affinity) Get(tenantID, jobHash string) (string, int64, bool) {
	if m, c, ok := a.local.Get(tenantID, jobHash); ok {
		return m, c, true
	}
	kv := a.kv()
	if kv == nil || !a.nc.IsConnected() {
		return "", 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	e, err := kv.Get(ctx, affinityKey(tenantID, jobHash))
	if err != nil {
		return "", 0, false
	}
	var v telemetryv1.Affinity
	if err := proto.Unmarshal(e.Value(), &v); err != nil || v.GetRecordId() == "" || v.GetMemberName() == "" {
		return "", 0, false
	}
	id := v.GetRecordId() + "/" + v.GetMemberName()
	a.local.Put(tenantID, jobHash, id, v.GetCachedInputTokens())
	return id, v.GetCachedInputTokens(), true
}

// Put implements gateway.Affinity.
func (a *Affinity) Put(tenantID, jobHash, memberID string, cachedTokens int64) {
	a.local.Put(tenantID, jobHash, memberID, cachedTokens)
	i := strings.LastIndexByte(memberID, '/')
	if i <= 0 {
		return
	}
	v := &telemetryv1.Affinity{RecordId: memberID[:i], MemberName: memberID[i+1:], CachedInputTokens: cachedTokens, At: timestamppb.New(a.now())}
	a.mu.Lock()
	if len(a.pending) < maxPendingAffinity {
		a.pending[affinityKey(tenantID, jobHash)] = v
	}
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// maxPendingAffinity bounds the writes waiting for NATS; beyond it new jobs'
// writes are dropped (they fall back to rendezvous hashing elsewhere).
const maxPendingAffinity = 100_000

// run publishes pending writes until ctx ends. While NATS is away or the
// bucket is not open yet, writes wait (bounded) and the newest per job
// wins.
func (a *Affinity) run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
		case <-tick.C:
		}
		if !a.nc.IsConnected() || a.kv() == nil {
			continue
		}
		a.mu.Lock()
		batch := a.pending
		if len(batch) == 0 {
			a.mu.Unlock()
			continue
		}
		a.pending = map[string]*telemetryAffinity{}
		a.mu.Unlock()
		for key, v := range batch {
			b, err := proto.Marshal(v)
			if err != nil {
				continue
			}
			if _, err := a.js.PublishAsync(natsnames.KVSubject(natsnames.AffinityBucket, key), b); err != nil {
				a.log.Debug("job affinity not shared", "key", key, "err", err)
			}
		}
	}
}

func affinityKey(tenantID, jobHash string) string { return natsnames.AffinityKey(tenantID, jobHash) }

// telemetryAffinity is the KV value type, named for brevity.
type telemetryAffinity = telemetryv1.Affinity
