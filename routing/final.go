package routing

import (
	"time"
)

// Final is the answer of a call no member answered (ROUTING.md §6).
type Final struct {
	// Err is the gateway's own answer, nil when PassThrough is set.
	Err *Error
	// PassThrough, when ≥ 0, is the index in Call.Attempts of the upstream
	// answer the caller gets as is (R-END-2's spent 429, R-END-5).
	PassThrough int
	// ShouldRetry is sent as x-should-retry when not nil (R-END-2).
	ShouldRetry *bool
}

var (
	retryTrue  = true
	retryFalse = false
)

// Final computes the answer when Next returned false and nothing was
// delivered, over every member of every record the call went through,
// checking R-END-1…6 in order.
func (c *Call) Final(now time.Time) Final {
	return c.final(c.plans[:c.ri+1], now)
}

// poolFailed reports whether the records' pool ended with a capacity or
// availability failure (R-MODEL-5): cooling, spent, unsigned keys,
// unreachable or timed out — not a key refusal (R-END-5) and not a cut call.
func (c *Call) poolFailed(plans []recordPlan, now time.Time) bool {
	f := c.final(plans, now)
	if f.Err == nil {
		return f.PassThrough >= 0 && c.Attempts[f.PassThrough].Kind == KindQuotaSpent
	}
	switch f.Err.Code {
	case CodePoolCooling, CodePoolSpent, CodeKeyUnavailable, CodeUpstreamUnreachable, CodeUpstreamTimeout, CodePoolUnavailable:
		return true
	}
	return false
}

func (c *Call) final(plans []recordPlan, now time.Time) Final {
	in := map[*Member]bool{}
	var members []*Member
	for _, p := range plans {
		for _, m := range p.members {
			in[m] = true
			members = append(members, m)
		}
	}
	c.st.mu.Lock()
	type cool struct {
		until time.Time
		kind  FailureKind
		spent bool
	}
	states := make(map[*Member]cool, len(members))
	for _, m := range members {
		ms := c.st.get(m.ID)
		var x cool
		if ms.cooling(now) {
			x.until, x.kind = ms.coolUntil, ms.coolKind
		}
		x.spent = ms.spent
		states[m] = x
	}
	c.st.mu.Unlock()

	// R-END-1: some member the call may go to is cooling after a rate limit
	// or a 5xx, or every member was already cooling (after a rate limit, a
	// 5xx, a transport failure or a timeout) when the call began.
	var first time.Time
	for _, m := range members {
		x := states[m]
		if !x.until.IsZero() && !x.spent && (x.kind == KindRateLimited || x.kind == KindServerError) {
			if first.IsZero() || x.until.Before(first) {
				first = x.until
			}
		}
	}
	if first.IsZero() && len(c.coolingAtStart) > 0 {
		all := true
		for _, m := range members {
			if !c.coolingAtStart.has(m) {
				all = false
				break
			}
			if u := states[m].until; !u.IsZero() && (first.IsZero() || u.Before(first)) {
				first = u
			}
		}
		if !all {
			first = time.Time{}
		}
	}
	if !first.IsZero() {
		e := newError(429, CodePoolCooling, "every deployment that may take this call is cooling down after rate limits or errors; retry after the Retry-After")
		e.RetryAfter = first.Sub(now)
		e.ShouldRetry = &retryTrue
		return Final{Err: e, PassThrough: -1}
	}
	// R-END-2: spent members and none cooling as above.
	for _, m := range members {
		if states[m].spent {
			if c.lastSpent429 >= 0 && in[c.Attempts[c.lastSpent429].Member] {
				return Final{PassThrough: c.lastSpent429, ShouldRetry: &retryFalse}
			}
			e := newError(429, CodePoolSpent, "the quota or credit of every deployment that may take this call is spent")
			e.ErrorCode = CodeInsufficientQuota
			e.ShouldRetry = &retryFalse
			return Final{Err: e, PassThrough: -1}
		}
	}
	// R-END-3: members passed over because the edge cannot sign for them.
	if c.keyUnavailable {
		return Final{Err: newError(412, CodeKeyUnavailable, "no key is available to sign for the deployments that may take this call"), PassThrough: -1}
	}
	// R-END-4: the call was cut while a member's key was being read.
	if c.ended {
		return Final{Err: newError(503, CodeCallEnded, "the call was ended while a deployment's key was being read"), PassThrough: -1}
	}
	// R-END-5: every member tried refused with 401, 403 or 404.
	sent, refused := 0, 0
	for _, a := range c.Attempts {
		if a.Sent && in[a.Member] {
			sent++
			if a.Kind == KindKeyRefused {
				refused++
			}
		}
	}
	if sent > 0 && sent == refused && c.lastKeyRefusal >= 0 {
		return Final{PassThrough: c.lastKeyRefusal}
	}
	// R-END-6: members failed by transport or timeout.
	var ret time.Time
	for _, m := range members {
		if u := states[m].until; !u.IsZero() && (ret.IsZero() || u.Before(ret)) {
			ret = u
		}
	}
	if sent > 0 || !now.Before(c.Deadline) {
		var e *Error
		if c.lastFailureKind == KindTimeout || (sent == 0 && !now.Before(c.Deadline)) {
			e = newError(504, CodeUpstreamTimeout, "no deployment answered within the deadline")
		} else {
			e = newError(502, CodeUpstreamUnreachable, "no deployment could be reached")
		}
		if !ret.IsZero() {
			e.RetryAfter = ret.Sub(now)
		}
		return Final{Err: e, PassThrough: -1}
	}
	// Not named by ROUTING.md: nothing was tried because every member is out
	// for a reason that is not a cooldown of R-END-1 (e.g. all refused the
	// key lately, R-ELIG-4). The pool is unavailable until the first returns.
	e := newError(503, CodePoolUnavailable, "no deployment can take this call now")
	if !ret.IsZero() {
		e.RetryAfter = ret.Sub(now)
	}
	return Final{Err: e, PassThrough: -1}
}
