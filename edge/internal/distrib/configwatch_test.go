package distrib

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"weir.dev/edge/internal/gateway"
	"weir.dev/natsconf"
	"weir.dev/routing/natsnames"
)

// When NATS comes back while the config watch waits out its backoff (which
// grows to seconds during an outage), the reconnection cuts the wait short:
// the watch is set up again at once, and the edge syncs without waiting
// for a timer. Regression: the reconnection signal was ignored during the
// wait, so an edge synced up to the backoff's 5 s cap after NATS returned.
func TestConfigWatchRetriesAtOnceOnReconnect(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	js := mustJS(t, connect(t, ns.URL()))
	var mu sync.Mutex
	var calls []time.Time
	up := false
	open := func(ctx context.Context) (jetstream.KeyValue, error) {
		mu.Lock()
		calls = append(calls, time.Now())
		ok := up
		mu.Unlock()
		if !ok {
			return nil, errors.New("NATS is away")
		}
		return ensureKV(ctx, js, natsconf.ConfigBucketConfig(1))
	}
	ncalls := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(calls)
	}
	restart := make(chan struct{}, 1)
	synced := make(chan struct{})
	st := newConfigState(gateway.NewRegistry(), &storeSink{}, testEdgeKey, testPublicKey, nil, testLog(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchConfig(ctx, open, st, restart, DefaultConfigProbe, func() { close(synced) })
	}()
	t.Cleanup(func() { cancel(); <-done })

	// Six failures: the wait after the sixth is at least 1.6 s.
	waitFor(t, 10*time.Second, "six failed setups", func() bool { return ncalls() >= 6 })
	mu.Lock()
	up = true
	mu.Unlock()
	back := time.Now()
	restart <- struct{}{} // NATS reconnected
	select {
	case <-synced:
	case <-time.After(time.Second):
		t.Fatalf("not synced within 1 s of NATS coming back (%d setups)", ncalls())
	}
	t.Logf("synced %v after NATS came back", time.Since(back))
}

// When the config watch's consumer vanishes (its NATS server died, in a
// cluster), the watch would notice only after two missed 5 s heartbeats;
// the probe sees it behind the bucket and rebuilds it, so the next change
// is served within about two probes.
func TestConfigWatchRebuiltWhenItsConsumerIsGone(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	fake := newFake(t)
	admin := connect(t, ns.URL())
	te := newTestEdge(t, ns.URL(), "edge-a", t.TempDir(), func(o *Options) { o.ConfigProbe = 200 * time.Millisecond })
	te.start(t)
	putKV(t, admin, natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+testTenant, mustMarshal(t, tenantSnap(t, 1, fake.URL())))
	waitFor(t, 5*time.Second, "version 1 served", func() bool { return servedVersion(te) == 1 })

	ctx := context.Background()
	stream, err := mustJS(t, admin).Stream(ctx, natsnames.KVStream(natsnames.ConfigBucket))
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for name := range stream.ConsumerNames(ctx).Name() {
		if err := stream.DeleteConsumer(ctx, name); err != nil {
			t.Fatal(err)
		}
		deleted++
	}
	if deleted == 0 {
		t.Fatal("the config watch has no consumer to delete")
	}
	start := time.Now()
	putKV(t, admin, natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+testTenant, mustMarshal(t, tenantSnap(t, 2, fake.URL())))
	waitFor(t, 3*time.Second, "version 2 served after the consumer was deleted", func() bool { return servedVersion(te) == 2 })
	t.Logf("served %v after the put, its watch's consumer deleted", time.Since(start))
}
