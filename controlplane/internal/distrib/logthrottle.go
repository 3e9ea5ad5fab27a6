package distrib

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// failureLog logs a loop's repeated failures without flooding the log: the
// first failure at once, then at most one line per interval while the
// failures go on, and one line when the loop recovers. It is safe for
// concurrent use.
type failureLog struct {
	log      *slog.Logger
	what     string
	interval time.Duration

	mu       sync.Mutex
	failing  bool
	lastLine time.Time
	count    int
}

func newFailureLog(log *slog.Logger, what string) *failureLog {
	return &failureLog{log: log, what: what, interval: 30 * time.Second}
}

// fail records one failure.
func (f *failureLog) fail(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return // shutting down: not a failure worth a line
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count++
	now := time.Now()
	if !f.failing || now.Sub(f.lastLine) >= f.interval {
		f.log.WarnContext(ctx, f.what+" failing; retrying", "err", err, "failures", f.count)
		f.lastLine = now
	}
	f.failing = true
}

// ok records a success, logging the recovery after failures.
func (f *failureLog) ok(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing {
		f.log.InfoContext(ctx, f.what+" recovered", "failures", f.count)
	}
	f.failing, f.count = false, 0
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

func orNow(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}

// sleep waits d or until ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
