package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"weir.dev/edge/internal/netguard"
)

// attemptParent is the context an attempt's context (a context.WithCancel)
// derives from: the caller's request context for cancellation and values,
// the call deadline as its Deadline, and the attempt's netguard policy as a
// value (netguard.PolicyFrom finds it).
//
// It has no cancellation of its own: Done and Err are the request
// context's, so the context.WithCancel under it registers with the request
// context directly, as under a context.WithValue, and the call needs no
// timerCtx, timer, children map or Done channel of its own. The call
// deadline is enforced on the attempt's context by the attempt's timer
// (attemptTimer), which cancels it at the call deadline, or before the
// response headers at the attempt deadline when that comes first.
//
// A call holds one per policy; each is set once, before the first attempt
// under that policy, and never changed: the transport may still read its
// values after the attempt (a dial finishing in the background).
type attemptParent struct {
	parent   context.Context
	deadline time.Time
	policy   netguard.Policy
}

func (p *attemptParent) Deadline() (time.Time, bool) {
	if d, ok := p.parent.Deadline(); ok && d.Before(p.deadline) {
		return d, true
	}
	return p.deadline, true
}

func (p *attemptParent) Done() <-chan struct{} { return p.parent.Done() }

func (p *attemptParent) Err() error { return p.parent.Err() }

func (p *attemptParent) Value(key any) any {
	if netguard.IsPolicyKey(key) {
		return p.policy
	}
	return p.parent.Value(key)
}

// detached is context.WithoutCancel held in the call: the request
// context's values, never cancelled, no deadline.
type detached struct{ parent context.Context }

func (detached) Deadline() (time.Time, bool) { return time.Time{}, false }
func (detached) Done() <-chan struct{}       { return nil }
func (detached) Err() error                  { return nil }
func (d *detached) Value(key any) any        { return d.parent.Value(key) }

// attemptContext returns attempt's context under policy pol: cancelled when
// the caller goes away, at the call deadline (by the timer it returns,
// which the caller releases when the attempt ends), or by cancel.
func (c *callRun) attemptContext(pol netguard.Policy) (context.Context, context.CancelFunc, *attemptTimer) {
	if int(pol) >= len(c.attemptParents) {
		p := &attemptParent{parent: c.req.Context(), deadline: c.call.Deadline, policy: pol}
		actx, cancel := context.WithCancel(p)
		return actx, cancel, newAttemptTimer(time.Until(c.call.Deadline), cancel)
	}
	p := &c.attemptParents[pol]
	if p.parent == nil {
		*p = attemptParent{parent: c.req.Context(), deadline: c.call.Deadline, policy: pol}
	}
	actx, cancel := context.WithCancel(p)
	return actx, cancel, newAttemptTimer(time.Until(c.call.Deadline), cancel)
}

// attemptTimer is an attempt's deadline timer: time.AfterFunc running the
// attempt's cancel. Stop and Reset are time.Timer's, and Reset follows
// only a Stop that returned true (the function did not run). Most attempts
// end long before their deadline: release then gives the timer back to
// attemptTimers, and the next attempt re-arms it instead of making a timer
// (and its function) of its own.
type attemptTimer struct {
	t *time.Timer
	// cancel is the context.CancelFunc the timer runs, set before each
	// arming: atomic because the timer's function reads it on a goroutine
	// of its own.
	cancel atomic.Value
}

// attemptTimers holds released attempt timers (*attemptTimer), stopped,
// whose function never ran.
var attemptTimers sync.Pool

// newAttemptTimer arms a timer that runs cancel after d.
func newAttemptTimer(d time.Duration, cancel context.CancelFunc) *attemptTimer {
	a, _ := attemptTimers.Get().(*attemptTimer)
	if a == nil {
		a = new(attemptTimer)
		a.cancel.Store(cancel)
		a.t = time.AfterFunc(d, a.fire)
		return a
	}
	a.cancel.Store(cancel)
	a.t.Reset(d)
	return a
}

func (a *attemptTimer) fire() { a.cancel.Load().(context.CancelFunc)() }

// Stop is time.Timer's Stop.
func (a *attemptTimer) Stop() bool { return a.t.Stop() }

// Reset is time.Timer's Reset, after a Stop that returned true.
func (a *attemptTimer) Reset(d time.Duration) { a.t.Reset(d) }

// release stops the timer when the attempt ends; a is not used after. When
// Stop reports the timer still armed, its function has never run: every
// Reset came after a Stop that found it armed. No goroutine can then hold
// it, and it goes back to attemptTimers, keeping no cancel of this attempt.
func (a *attemptTimer) release() {
	if a.t.Stop() {
		a.cancel.Store(context.CancelFunc(noCancel))
		attemptTimers.Put(a)
	}
}

func noCancel() {}

// callErr is what a context of the call with its deadline would report:
// context.Canceled once the caller went away, context.DeadlineExceeded
// once the call deadline passed, whichever came first; nil while the call
// may go on.
func (c *callRun) callErr() error {
	if c.ended == nil {
		if err := c.req.Context().Err(); err != nil {
			c.ended = err
		} else if !time.Now().Before(c.call.Deadline) {
			c.ended = context.DeadlineExceeded
		}
	}
	return c.ended
}

// waitContext is a context of the call with its deadline, for the waits
// between attempts (made on the first wait; answer cancels it).
func (c *callRun) waitContext() context.Context {
	if c.wctx == nil {
		c.wctx, c.wcancel = context.WithDeadline(c.req.Context(), c.call.Deadline)
	}
	return c.wctx
}
