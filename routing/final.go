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
	case CodePoolCooling, CodePoolSpent, CodeKeyUnavailable, CodeUpstreamUnreachable, CodeUpstreamTimeout, CodePoolUnavailable, CodePoolBusy:
		return true
	}
	return false
}

// final checks R-END-1…6 in order over the members of plans.
func (c *Call) final(plans []recordPlan, now time.Time) Final {
	v := c.endView(plans, now)
	if f, ok := c.endCooling(v, now); ok {
		return f
	}
	if f, ok := c.endSpent(v); ok {
		return f
	}
	// R-END-3: members passed over because the edge cannot sign for them.
	if c.keyUnavailable {
		return Final{Err: newError(412, CodeKeyUnavailable, "no key is available to sign for the deployments that may take this call"), PassThrough: -1}
	}
	// R-END-4: the call was cut while a member's key was being read.
	if c.ended {
		return Final{Err: newError(503, CodeCallEnded, "the call was ended while a deployment's key was being read"), PassThrough: -1}
	}
	if f, ok := c.endBusy(v); ok {
		return f
	}
	return c.endFailed(v, now)
}

// endBusy is R-END-7: members were passed over only because they were full
// (R-CAP-1) and none freed a slot within the wait. It is checked after
// R-END-1…4 (a cooling member still wins) and before R-END-5 and R-END-6:
// a full member might have served the call, so the caller is told to
// retry rather than given another member's refusal or failure.
func (c *Call) endBusy(v endView) (Final, bool) {
	for _, m := range v.members {
		if c.busy.has(m) {
			e := newError(503, CodePoolBusy, "every deployment that may take this call is at its concurrency cap and none freed a slot in time; retry after the Retry-After")
			e.RetryAfter = BusyRetryAfter
			e.ShouldRetry = &retryTrue
			return Final{Err: e, PassThrough: -1}, true
		}
	}
	return Final{}, false
}

// BusyRetryAfter is the Retry-After of R-END-7: when a slot frees cannot be
// known, so the shortest the rule allows.
const BusyRetryAfter = time.Second

// memberEnd is what final reads of a member's state.
type memberEnd struct {
	until time.Time // end of its cooldown; zero when not cooling
	kind  FailureKind
	spent bool
}

// endView is the members the call may go to, with their states read once
// under the states' lock.
type endView struct {
	in      map[*Member]bool
	members []*Member
	states  map[*Member]memberEnd
}

func (c *Call) endView(plans []recordPlan, now time.Time) endView {
	v := endView{in: map[*Member]bool{}}
	for _, p := range plans {
		for _, m := range p.members {
			v.in[m] = true
			v.members = append(v.members, m)
		}
	}
	v.states = make(map[*Member]memberEnd, len(v.members))
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	edges := c.st.LiveEdges()
	for _, m := range v.members {
		ms := c.st.get(m.ID)
		var x memberEnd
		if ms.cooling(now) {
			x.until, x.kind = ms.coolUntil, ms.coolKind
		}
		if ms.dayFull(m, now, edges) && ms.day.end.After(x.until) {
			// R-HEAD-6: out for the day counts as cooling after a rate
			// limit until midnight (R-END-1).
			x.until, x.kind = ms.day.end, KindRateLimited
		}
		x.spent = ms.spent
		v.states[m] = x
	}
	return v
}

// endCooling is R-END-1: some member the call may go to is cooling after a
// rate limit or a 5xx, or every member was already cooling (after a rate
// limit, a 5xx, a transport failure or a timeout) when the call began.
func (c *Call) endCooling(v endView, now time.Time) (Final, bool) {
	var first time.Time
	for _, m := range v.members {
		x := v.states[m]
		if !x.until.IsZero() && !x.spent && (x.kind == KindRateLimited || x.kind == KindServerError) {
			if first.IsZero() || x.until.Before(first) {
				first = x.until
			}
		}
	}
	if first.IsZero() && len(c.coolingAtStart) > 0 {
		all := true
		for _, m := range v.members {
			if !c.coolingAtStart.has(m) {
				all = false
				break
			}
			if u := v.states[m].until; !u.IsZero() && (first.IsZero() || u.Before(first)) {
				first = u
			}
		}
		if !all {
			first = time.Time{}
		}
	}
	if first.IsZero() {
		return Final{}, false
	}
	e := newError(429, CodePoolCooling, "every deployment that may take this call is cooling down after rate limits or errors; retry after the Retry-After")
	e.RetryAfter = first.Sub(now)
	e.ShouldRetry = &retryTrue
	return Final{Err: e, PassThrough: -1}, true
}

// endSpent is R-END-2: spent members and none cooling as in R-END-1. The
// last spent 429 of a member of v goes to the caller as is when there is
// one.
func (c *Call) endSpent(v endView) (Final, bool) {
	for _, m := range v.members {
		if !v.states[m].spent {
			continue
		}
		if c.lastSpent429 >= 0 && v.in[c.Attempts[c.lastSpent429].Member] {
			return Final{PassThrough: c.lastSpent429, ShouldRetry: &retryFalse}, true
		}
		e := newError(429, CodePoolSpent, "the quota or credit of every deployment that may take this call is spent")
		e.ErrorCode = CodeInsufficientQuota
		e.ShouldRetry = &retryFalse
		return Final{Err: e, PassThrough: -1}, true
	}
	return Final{}, false
}

// endFailed is R-END-5 (every member tried refused the key: the last
// refusal as is), R-END-6 (members failed by transport or timeout: 502 or
// 504 with the first member's return), or, when nothing was tried and the
// deadline is not past, 503 weir_pool_unavailable.
func (c *Call) endFailed(v endView, now time.Time) Final {
	sent, refused := 0, 0
	for _, a := range c.Attempts {
		if a.Sent && v.in[a.Member] {
			sent++
			if a.Kind == KindKeyRefused {
				refused++
			}
		}
	}
	if sent > 0 && sent == refused && c.lastKeyRefusal >= 0 {
		return Final{PassThrough: c.lastKeyRefusal}
	}
	var ret time.Time
	for _, m := range v.members {
		if u := v.states[m].until; !u.IsZero() && (ret.IsZero() || u.Before(ret)) {
			ret = u
		}
	}
	var e *Error
	switch {
	case c.lastFailureKind == KindTimeout && sent > 0, sent == 0 && !now.Before(c.Deadline):
		e = newError(504, CodeUpstreamTimeout, "no deployment answered within the deadline")
	case sent > 0:
		e = newError(502, CodeUpstreamUnreachable, "no deployment could be reached")
	default:
		// Not named by ROUTING.md: nothing was tried because every member
		// is out for a reason that is not a cooldown of R-END-1 (e.g. all
		// refused the key lately, R-ELIG-4). The pool is unavailable until
		// the first returns.
		e = newError(503, CodePoolUnavailable, "no deployment can take this call now")
	}
	if !ret.IsZero() {
		e.RetryAfter = ret.Sub(now)
	}
	return Final{Err: e, PassThrough: -1}
}
