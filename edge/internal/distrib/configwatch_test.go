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
		watchConfig(ctx, open, st, restart, func() { close(synced) })
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
