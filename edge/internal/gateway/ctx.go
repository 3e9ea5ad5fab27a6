package gateway

import (
	"context"
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
// which the caller stops when the attempt ends), or by cancel.
func (c *callRun) attemptContext(pol netguard.Policy) (context.Context, context.CancelFunc, *time.Timer) {
	if int(pol) >= len(c.attemptParents) {
		p := &attemptParent{parent: c.req.Context(), deadline: c.call.Deadline, policy: pol}
		actx, cancel := context.WithCancel(p)
		return actx, cancel, time.AfterFunc(time.Until(c.call.Deadline), cancel)
	}
	p := &c.attemptParents[pol]
	if p.parent == nil {
		*p = attemptParent{parent: c.req.Context(), deadline: c.call.Deadline, policy: pol}
	}
	actx, cancel := context.WithCancel(p)
	return actx, cancel, time.AfterFunc(time.Until(c.call.Deadline), cancel)
}

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
