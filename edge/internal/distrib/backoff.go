package distrib

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff is a capped exponential backoff with jitter, for one goroutine.
type backoff struct {
	min, max, cur time.Duration
}

func newBackoff(min, max time.Duration) *backoff { return &backoff{min: min, max: max, cur: min} }

// next returns the next wait and doubles the one after.
func (b *backoff) next() time.Duration {
	d := b.cur
	b.cur = min(b.cur*2, b.max)
	return d/2 + rand.N(d/2+1)
}

// sleep waits the next wait; false when ctx ended first.
func (b *backoff) sleep(ctx context.Context) bool { return b.sleepOr(ctx, nil) }

// sleepOr waits the next wait or until wake delivers (what was awaited
// came back: retry at once); false when ctx ended first.
func (b *backoff) sleepOr(ctx context.Context, wake <-chan struct{}) bool {
	t := time.NewTimer(b.next())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-wake:
		return true
	case <-t.C:
		return true
	}
}

func (b *backoff) reset() { b.cur = b.min }
