package distrib

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// watchConfig keeps the edge's config in step with WEIR_CONFIG until ctx
// ends. Before each watch, open returns the config bucket (the edge opens
// every bucket it uses there, so nothing from NATS is installed before they
// exist). A KV watch first delivers every current value, which is applied
// as one batch (one registry swap, one secret store; it makes the registry
// ready even when the bucket is empty), then each update as it comes, and
// synced is called after the first batch. The watch is rebuilt whenever it
// ends or NATS reconnects (restart signals it), and its setup is retried
// with backoff while NATS is away — at once when NATS reconnects during the
// wait; the edge meanwhile serves what it has.
func watchConfig(ctx context.Context, open func(context.Context) (jetstream.KeyValue, error), st *configState, restart <-chan struct{}, synced func()) {
	bo := newBackoff(100*time.Millisecond, 5*time.Second)
	for ctx.Err() == nil {
		err := watchOnce(ctx, open, st, restart, synced)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			st.log.Warn("config watch: retrying", "err", err)
			if !bo.sleepOr(ctx, restart) {
				return
			}
			continue
		}
		bo.reset()
	}
}

// watchOnce runs one KV watch until it ends; a nil error means it ended for
// a restart and may be rebuilt at once.
func watchOnce(ctx context.Context, open func(context.Context) (jetstream.KeyValue, error), st *configState, restart <-chan struct{}, synced func()) error {
	setup, cancel := context.WithTimeout(ctx, 5*time.Second)
	kv, err := open(setup)
	cancel()
	if err != nil {
		return err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	w, err := kv.WatchAll(wctx)
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	var batch []change
	initial := true
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-restart:
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("distrib: config watch closed")
			}
			if e == nil { // the initial values are all delivered
				if initial {
					st.apply(batch, true)
					batch, initial = nil, false
					if synced != nil {
						synced()
					}
				}
				continue
			}
			ch := change{key: e.Key(), raw: e.Value(), deleted: e.Operation() != jetstream.KeyValuePut}
			if initial {
				batch = append(batch, ch)
				continue
			}
			st.apply([]change{ch}, false)
		}
	}
}
