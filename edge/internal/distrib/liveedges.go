package distrib

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

const (
	// LiveEdgeWindow is how recent an edge's latest member view must be for
	// the edge to count as live (ROUTING.md R-HEAD-7). Edges put every view
	// at least every ViewHeartbeat (20 s by default), so a running edge
	// stays inside it.
	LiveEdgeWindow = 30 * time.Second
	// liveEdgeForget is how long an edge not heard from is remembered at
	// all; it bounds the map to the edges of the last two minutes.
	liveEdgeForget = 2 * time.Minute
)

var errViewsNotOpen = errors.New("distrib: WEIR_VIEWS is not open yet")

// liveEdges counts the live edges of the cluster for the caller limits'
// shares (R-CAP-2, R-HEAD-7). It watches WEIR_VIEWS for metadata only (no
// view is transferred): every put's key ends with the token of the edge
// that put it, and its Created time (the server's clock) is when. An edge
// is live while its newest put is younger than the window; this edge is
// always live (it is serving calls), so the count is at least 1. The count
// is recomputed on every tick and after the watch's initial delivery, and
// read with one atomic load (Count).
type liveEdges struct {
	self   string // this edge's token in view keys
	window time.Duration
	tick   time.Duration
	now    func() time.Time
	log    *slog.Logger

	mu   sync.Mutex
	seen map[string]time.Time // other edges' tokens → their newest put
	n    atomic.Int64
	// onChange, when set, is told every new count (the member states'
	// ShareAmong, R-HEAD-7). Called from the counting goroutine only.
	onChange func(n int)
}

func newLiveEdges(self string, window time.Duration, now func() time.Time, log *slog.Logger) *liveEdges {
	if window <= 0 {
		window = LiveEdgeWindow
	}
	l := &liveEdges{self: self, window: window, tick: min(time.Second, window/10), now: now, log: log, seen: map[string]time.Time{}}
	l.n.Store(1)
	return l
}

// Count is the number of live edges, at least 1.
func (l *liveEdges) Count() int { return int(l.n.Load()) }

// note takes one put of a view key
// "<tenant>.<record>.<member>.<edge>" made at created.
func (l *liveEdges) note(key string, created time.Time) {
	i := strings.LastIndexByte(key, '.')
	if i < 0 || i == len(key)-1 {
		return
	}
	edge := key[i+1:]
	if edge == l.self {
		return
	}
	l.mu.Lock()
	if prev, ok := l.seen[edge]; !ok || created.After(prev) {
		l.seen[edge] = created
	}
	l.mu.Unlock()
}

// recount forgets edges not heard from for liveEdgeForget and publishes
// the count of live edges.
func (l *liveEdges) recount() {
	now := l.now()
	n := int64(1)
	l.mu.Lock()
	for edge, at := range l.seen {
		age := now.Sub(at)
		switch {
		case age > liveEdgeForget:
			delete(l.seen, edge)
		case age < l.window:
			n++
		}
	}
	l.mu.Unlock()
	if old := l.n.Swap(n); old != n {
		l.log.Info("live edges changed", "live_edges", n, "was", old)
		if l.onChange != nil {
			l.onChange(int(n))
		}
	}
}

// run keeps the count until ctx ends. open returns WEIR_VIEWS, or nil
// while it is not open yet. The watch is rebuilt when it ends or NATS
// reconnects (restart), and retried with backoff while it cannot be made;
// the count keeps ageing meanwhile, so edges that stopped putting drop out
// (this edge, alone, counts 1: a partitioned edge takes the whole limit
// only after the window, and errs on the side of serving).
func (l *liveEdges) run(ctx context.Context, open func() jetstream.KeyValue, restart <-chan struct{}) {
	t := time.NewTicker(l.tick)
	defer t.Stop()
	bo := newBackoff(100*time.Millisecond, 5*time.Second)
	for {
		err := l.watchOnce(ctx, open, restart, t.C)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			bo.reset()
			continue
		}
		if !errors.Is(err, errViewsNotOpen) {
			l.log.Warn("live edges: views watch retrying", "err", err)
		}
		wait := time.NewTimer(bo.next())
	waiting:
		for {
			select {
			case <-ctx.Done():
				wait.Stop()
				return
			case <-restart:
				break waiting
			case <-wait.C:
				break waiting
			case <-t.C:
				l.recount()
			}
		}
		wait.Stop()
	}
}

// watchOnce runs one metadata-only watch of WEIR_VIEWS until it ends; a nil
// error means it ended for a restart.
func (l *liveEdges) watchOnce(ctx context.Context, open func() jetstream.KeyValue, restart <-chan struct{}, tick <-chan time.Time) error {
	kv := open()
	if kv == nil {
		return errViewsNotOpen
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	w, err := kv.WatchAll(wctx, jetstream.MetaOnly(), jetstream.IgnoreDeletes())
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-restart:
			return nil
		case <-tick:
			l.recount()
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("distrib: views watch closed")
			}
			if e == nil { // the current keys are all delivered
				l.recount()
				continue
			}
			if e.Operation() == jetstream.KeyValuePut {
				l.note(e.Key(), e.Created())
			}
		}
	}
}
