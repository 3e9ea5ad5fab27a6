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
// wait; the edge meanwhile serves what it has. A watch that falls behind
// the bucket for a whole probe interval is rebuilt (Options.ConfigProbe).
func watchConfig(ctx context.Context, open func(context.Context) (jetstream.KeyValue, error), st *configState, restart <-chan struct{}, probeEvery time.Duration, synced func()) {
	bo := newBackoff(100*time.Millisecond, 5*time.Second)
	for ctx.Err() == nil {
		err := watchOnce(ctx, open, st, restart, probeEvery, synced)
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

// DefaultConfigProbe is how often a running config watch compares what it
// has delivered with the bucket's last revision (Options.ConfigProbe). A
// watch is a JetStream ordered consumer that notices its consumer is gone
// (its server died) only after two missed 5 s heartbeats; a watch still
// behind the revision the bucket had one probe earlier is rebuilt instead,
// so a change reaches an edge within about two probes of such a loss. One
// stream-info request per probe.
const DefaultConfigProbe = 2 * time.Second

// lastRevision is the last revision (stream sequence) of bucket kv; false
// when it cannot be read now.
func lastRevision(ctx context.Context, kv jetstream.KeyValue) (uint64, bool) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := kv.Status(ctx)
	if err != nil {
		return 0, false
	}
	b, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok || b.StreamInfo() == nil {
		return 0, false
	}
	return b.StreamInfo().State.LastSeq, true
}

// watchOnce runs one KV watch until it ends; a nil error means it ended for
// a restart and may be rebuilt at once.
func watchOnce(ctx context.Context, open func(context.Context) (jetstream.KeyValue, error), st *configState, restart <-chan struct{}, probeEvery time.Duration, synced func()) error {
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
	probe := time.NewTicker(probeEvery)
	defer probe.Stop()
	var batch []change
	initial := true
	var delivered, target uint64 // the watch's last revision; the bucket's last seen ahead of it
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-restart:
			return nil
		case <-probe.C:
			if initial {
				continue
			}
			last, ok := lastRevision(ctx, kv)
			switch {
			case !ok || last <= delivered:
				target = 0
			case target == 0:
				target = last // behind now; stalled if still behind it at the next probe
			case delivered < target:
				st.log.Warn("config watch: behind the bucket for a probe interval; rebuilding it",
					"delivered", delivered, "bucket", last)
				return nil
			default:
				target = last
			}
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("distrib: config watch closed")
			}
			if e != nil {
				delivered = max(delivered, e.Revision())
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
