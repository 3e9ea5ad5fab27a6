package routing

import (
	"time"
)

// AttemptOutcome is what became of one attempt (R-SEE-2).
type AttemptOutcome uint8

const (
	OutcomePending AttemptOutcome = iota
	OutcomeAnswered
	OutcomeFailedOver
	OutcomeFailed
	OutcomeSkipped
)

func (o AttemptOutcome) String() string {
	switch o {
	case OutcomeAnswered:
		return "answered"
	case OutcomeFailedOver:
		return "failed_over"
	case OutcomeFailed:
		return "failed"
	case OutcomeSkipped:
		return "skipped"
	}
	return "pending"
}

// Attempt is one member tried by a call, or one member skipped (R-SEE-2).
type Attempt struct {
	Member  *Member
	Status  int
	Kind    FailureKind
	Outcome AttemptOutcome
	Reason  string
	// Sent is true when the attempt went out to the member; skips and
	// pass-overs are recorded but are not attempts (R-SEE-1).
	Sent bool
}

// Action tells the edge what to do after an answer.
type Action uint8

const (
	// ActNext: fail over; ask Next for another member.
	ActNext Action = iota + 1
	// ActDeliver: give this answer to the caller (success, the request's own
	// 4xx, or a 502/504 with x-weir-outcome: unknown).
	ActDeliver
	// ActStop: the call is over (cancelled, cut mid-stream, or ended); call
	// Final if nothing was delivered.
	ActStop
)

// Step is the next member to try. When Wait is positive the edge waits that
// long first (a pool's max_wait, R-END-1), within the call deadline.
//
// When Full is not empty, every member that may take the call now is full
// (R-CAP-1): Member is nil and no attempt is pending. The edge then waits up
// to Wait for a slot of any member of Full, first come first served, and
// calls Take with the member whose slot it got, or Busy when none freed in
// time.
type Step struct {
	Member *Member
	Wait   time.Duration
	Full   []*Member
}

type recordPlan struct {
	rec     *Record
	members []*Member
}

// Call is the routing state of one call: its candidate records, the members
// it tried and what each answered. One goroutine uses a Call at a time.
type Call struct {
	t     *Table
	st    *States
	rnd   Rand
	req   Request
	model string

	plans []recordPlan
	ri    int

	// Attempts lists every attempt and skip in order.
	Attempts []Attempt
	// Deadline is the call deadline (R-FAIL-13); failover never resets it.
	Deadline time.Time

	sent           int
	maxAttempts    int
	pending        int // index of the attempt Next handed out, -1 when none
	tried          memberSet
	skipAccount    []string
	passedOver     memberSet
	keyUnavailable bool
	coolingAtStart memberSet
	waited         bool
	waitMember     *Member
	// busy lists the members that were full when the call gave up waiting
	// for a slot (R-CAP-1, R-END-7).
	busy memberSet
	// The first storage of plans, Attempts and tried: a call of one
	// record and up to two attempts allocates none for them.
	plansBuf        [1]recordPlan
	attemptsBuf     [2]Attempt
	triedBuf        [2]*Member
	membersBuf      [4]*Member // the plans' first members (Begin)
	ended           bool
	stopped         bool
	answered        *Member
	lastKeyRefusal  int
	lastSpent429    int
	lastFailureKind FailureKind
}

// Begin starts routing a call: it chooses the candidate records (R-MODEL-1…5)
// and their eligible members (R-ELIG-1…4). A record whose members are all
// filtered out is dropped; when none is left the error of the first
// candidate record is the answer. At most DefaultMaxRecords records are kept,
// and never an unpriced record after a priced one (R-MODEL-5).
func (t *Table) Begin(req Request, st *States, rnd Rand, now time.Time) (*Call, *Error) {
	recs, model, err := t.Candidates(&req)
	if err != nil {
		return nil, err
	}
	c := &Call{
		t: t, st: st, rnd: rnd, req: req, model: model, pending: -1,
		lastKeyRefusal: -1, lastSpent429: -1,
	}
	c.plans, c.Attempts, c.tried = c.plansBuf[:0], c.attemptsBuf[:0], c.triedBuf[:0]
	var firstErr *Error
	priced := false
	usedBuf := 0
	for _, r := range recs {
		if len(c.plans) == DefaultMaxRecords {
			break
		}
		p := r.Priced(model)
		if len(c.plans) > 0 && priced && !p {
			break
		}
		// Each record's members in a region of membersBuf of their own
		// when they fit, so that no append to one reaches another.
		var dst []*Member
		if n := len(r.Members); n <= len(c.membersBuf)-usedBuf {
			dst = c.membersBuf[usedBuf : usedBuf : usedBuf+n]
			usedBuf += n
		} else {
			dst = make([]*Member, 0, n)
		}
		ms, e := t.eligible(dst, r, model, &c.req, st)
		if e != nil {
			if firstErr == nil {
				firstErr = e
			}
			continue
		}
		if len(c.plans) == 0 {
			priced = p
		}
		c.plans = append(c.plans, recordPlan{rec: r, members: ms})
	}
	if len(c.plans) == 0 {
		return nil, firstErr
	}
	rec := c.plans[0].rec.Recovery
	c.maxAttempts = rec.MaxAttempts
	c.Deadline = now.Add(rec.CallDeadline)
	st.mu.Lock()
	for _, p := range c.plans {
		for _, m := range p.members {
			ms := st.get(m.ID)
			if ms.cooling(now) {
				switch ms.coolKind {
				case KindRateLimited, KindServerError, KindTransport, KindTimeout, KindUnknownOutcome:
					c.coolingAtStart = append(c.coolingAtStart, m)
				}
			} else if ms.dayFull(m, now, st.LiveEdges()) {
				// R-HEAD-6: out for the day, as if cooling after a rate
				// limit until midnight.
				c.coolingAtStart = append(c.coolingAtStart, m)
			}
		}
	}
	st.mu.Unlock()
	return c, nil
}

// Model is the caller's model without any record pin.
func (c *Call) Model() string { return c.model }

// Record is the record the call is on now.
func (c *Call) Record() *Record { return c.plans[c.ri].rec }

// Members lists every member of every record the call may go to.
func (c *Call) Members() []*Member {
	if len(c.plans) == 1 {
		m := c.plans[0].members
		return m[:len(m):len(m)] // capped: an append copies
	}
	var out []*Member
	for _, p := range c.plans {
		out = append(out, p.members...)
	}
	return out
}

// Sent is the number of attempts that went out (x-weir-attempts).
func (c *Call) Sent() int { return c.sent }

// Next returns the member the next attempt goes to, or false when the call
// may try no other member (then call Final). The attempt is pending until the
// edge calls Dispatch (it went out) or Report with a key verdict (it was
// passed over).
func (c *Call) Next(now time.Time) (Step, bool) {
	for {
		if c.ended || c.stopped || c.answered != nil || c.sent >= c.maxAttempts || !now.Before(c.Deadline) {
			return Step{}, false
		}
		p := &c.plans[c.ri]
		m, full := c.pick(p, now)
		if m != nil {
			c.Attempts = append(c.Attempts, Attempt{Member: m})
			c.pending = len(c.Attempts) - 1
			return Step{Member: m}, true
		}
		if len(full) > 0 && !c.busy.hasAny(full) {
			// R-CAP-1: every member that may take the call is full; wait
			// for a slot up to the record's max_wait (DefaultFullWait when
			// none), within the call deadline. Only once per record: when
			// that wait gave up, the members are busy (R-END-7).
			d := p.rec.Recovery.MaxWait
			if d <= 0 {
				d = DefaultFullWait
			}
			d = min(d, c.Deadline.Sub(now))
			if d > 0 {
				return Step{Full: full, Wait: d}, true
			}
			c.busy = append(c.busy, full...)
		}
		if m, d, ok := c.waitFor(p, now); ok {
			c.waited, c.waitMember = true, m
			c.Attempts = append(c.Attempts, Attempt{Member: m})
			c.pending = len(c.Attempts) - 1
			return Step{Member: m, Wait: d}, true
		}
		if c.ri+1 < len(c.plans) && c.poolFailed(c.plans[c.ri:c.ri+1], now) {
			c.ri++
			continue
		}
		return Step{}, false
	}
}

// pick chooses among the members of p that may take the next attempt:
// not tried in this call (R-FAIL-13), not of an account skipped in this call
// (R-ORDER-4), not passed over, not cooling (§5), not disabled (R-ELIG-4).
// Members whose key was unavailable lately come after all others (R-END-3),
// and members cooling after an isolated 5xx after those (see
// memberState.apply).
// Then the lowest tier (R-ORDER-1), and within it stickiness (R-STICK-1, 3)
// or headroom × weight (R-ORDER-2, 3).
//
// Members out for the day (their rpd share used, R-HEAD-6) are left out
// like cooling ones; members at their in-flight cap (R-CAP-1) are left out
// and returned as full, for the caller to wait on when no other member may
// take the call.
func (c *Call) pick(p *recordPlan, now time.Time) (*Member, []*Member) {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	edges := c.st.LiveEdges()
	// Small pools fit the arrays below, on the stack; larger ones grow
	// onto the heap.
	var normalBuf, candsBuf, withRoomBuf [8]*Member
	var roomsBuf, scoresBuf [8]float64
	normal := normalBuf[:0]
	var lastResort, soft, full []*Member
	for _, m := range p.members {
		if c.tried.has(m) || c.skipped(m.Account) || c.passedOver.has(m) {
			continue
		}
		ms := c.st.get(m.ID)
		if ms.disabled {
			continue
		}
		if ms.cooling(now) {
			if ms.softCool && !c.st.full(m) {
				soft = append(soft, m)
			}
			continue
		}
		if ms.dayFull(m, now, edges) {
			continue
		}
		if c.st.full(m) {
			full = append(full, m)
			continue
		}
		if now.Before(ms.keyUnavailableUntil) {
			lastResort = append(lastResort, m)
		} else {
			normal = append(normal, m)
		}
	}
	pool := normal
	if len(pool) == 0 {
		pool = lastResort
	}
	if len(pool) == 0 {
		pool = soft // isolated 5xx: a last resort, see memberState.apply
	}
	if len(pool) == 0 {
		return nil, full
	}
	tier := pool[0].Order
	for _, m := range pool {
		tier = min(tier, m.Order)
	}
	cands, rooms := candsBuf[:0], roomsBuf[:0]
	for _, m := range pool {
		if m.Order == tier {
			cands = append(cands, m)
			rooms = append(rooms, c.st.get(m.ID).headroom(m, now, edges))
		}
	}
	if c.req.JobID != "" {
		withRoom := withRoomBuf[:0]
		for i, m := range cands {
			if rooms[i] > StickyHeadroomFloor {
				if m.ID == c.req.LastMemberID {
					return m, nil // R-STICK-1
				}
				withRoom = append(withRoom, m)
			}
		}
		if len(withRoom) > 0 {
			return Rendezvous(c.req.JobID, withRoom), nil // R-STICK-3
		}
	}
	scores := scoresBuf[:0]
	for i, m := range cands {
		scores = append(scores, rooms[i]*float64(max(m.Weight, 1)))
	}
	return weightedPick(cands, scores, c.rnd), nil // R-ORDER-3
}

// Take makes m the pending attempt after the edge got one of its slots
// while waiting on a Step's Full members (R-CAP-1). It reports false, and
// makes nothing pending, when m may no longer take the call (it was tried,
// began cooling, is out for the day, is of a skipped account, or is not a
// member the call is choosing among now); the edge then gives the slot
// back and asks Next again.
func (c *Call) Take(m *Member, now time.Time) bool {
	if c.ended || c.stopped || c.answered != nil || c.pending >= 0 || c.sent >= c.maxAttempts || !now.Before(c.Deadline) {
		return false
	}
	in := false
	for _, x := range c.plans[c.ri].members {
		in = in || x == m
	}
	if !in || c.tried.has(m) || c.skipped(m.Account) || c.passedOver.has(m) {
		return false
	}
	c.st.mu.Lock()
	ms := c.st.get(m.ID)
	ok := !ms.disabled && !ms.cooling(now) && !ms.dayFull(m, now, c.st.LiveEdges())
	c.st.mu.Unlock()
	if !ok {
		return false
	}
	c.Attempts = append(c.Attempts, Attempt{Member: m})
	c.pending = len(c.Attempts) - 1
	return true
}

// Busy says the edge waited for a slot of the members of a Step's Full and
// none freed in time (R-CAP-1): they are not waited for again in this
// call, and when no other member answers the call ends with R-END-7.
func (c *Call) Busy(full []*Member) {
	for _, m := range full {
		if !c.busy.has(m) {
			c.busy = append(c.busy, m)
		}
	}
}

// Full says the pending attempt's member turned out full when the edge
// went to take its slot (another call took the last one since Next): the
// attempt is recorded as skipped with reason "full" (not an attempt,
// R-CAP-1), and Next chooses again.
func (c *Call) Full() {
	if c.pending < 0 || c.Attempts[c.pending].Sent {
		return
	}
	a := &c.Attempts[c.pending]
	a.Outcome, a.Reason = OutcomeSkipped, "full"
	c.pending = -1
}

// waitFor applies a pool's max_wait (R-END-1): when the first member of the
// pool to come back from a rate-limit or 5xx cooldown returns within
// max_wait and before the call deadline, the call waits for it and tries it
// once more, even if it refused earlier in this call. Only once per call.
func (c *Call) waitFor(p *recordPlan, now time.Time) (*Member, time.Duration, bool) {
	mw := p.rec.Recovery.MaxWait
	if mw <= 0 || c.waited {
		return nil, 0, false
	}
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	var best *Member
	var until time.Time
	for _, m := range p.members {
		if c.skipped(m.Account) || c.passedOver.has(m) {
			continue
		}
		ms := c.st.get(m.ID)
		if ms.disabled || !ms.cooling(now) || (ms.coolKind != KindRateLimited && ms.coolKind != KindServerError) {
			continue
		}
		if best == nil || ms.coolUntil.Before(until) {
			best, until = m, ms.coolUntil
		}
	}
	if best == nil {
		return nil, 0, false
	}
	d := until.Sub(now)
	if d > mw || !until.Before(c.Deadline) {
		return nil, 0, false
	}
	return best, d, true
}

// Dispatch records that the pending attempt went out to its member: it
// counts as an attempt and takes one request and the input estimate off the
// member's headroom at once (R-HEAD-3).
func (c *Call) Dispatch(now time.Time) {
	if c.pending < 0 {
		return
	}
	a := &c.Attempts[c.pending]
	if a.Sent {
		return
	}
	a.Sent = true
	c.sent++
	c.tried = append(c.tried, a.Member)
	c.st.mu.Lock()
	ms := c.st.get(a.Member.ID)
	ms.dispatch(now, c.req.InputTokens)
	ms.day.add(now, a.Member.Record.dayZone()) // R-HEAD-6
	c.st.mu.Unlock()
}

// Report records the classified answer of the pending attempt's member and
// says what the call does next (ROUTING.md §5 "the call" column). rl is what
// the answer's rate-limit headers said, or nil.
func (c *Call) Report(v Verdict, rl *RateLimits, now time.Time) Action {
	if c.pending < 0 {
		return ActStop
	}
	i := c.pending
	a := &c.Attempts[i]
	m := a.Member
	a.Status, a.Kind, a.Reason = v.Status, v.Kind, v.Reason
	if a.Reason == "" {
		a.Reason = v.Kind.String()
	}
	c.st.mu.Lock()
	ms := c.st.get(m.ID)
	ms.apply(v, rl, now, m.Record.Recovery, m.Record.dayZone())
	if a.Sent && v.Kind != KindAnswered && ms.inFlight > 0 {
		ms.inFlight--
	}
	c.st.mu.Unlock()
	switch v.Kind {
	case KindAnswered:
		a.Outcome = OutcomeAnswered
		c.answered = m
		c.pending = -1
		return ActDeliver
	case KindClientError, KindUnknownOutcome:
		a.Outcome = OutcomeFailed
		c.pending = -1
		return ActDeliver
	case KindKeyUnavailable, KindKeyPassing:
		if a.Sent {
			a.Sent = false
			c.sent--
		}
		a.Outcome = OutcomeSkipped
		c.passedOver = append(c.passedOver, m)
		c.keyUnavailable = true
		c.tried = c.tried.remove(m)
		c.pending = -1
		return ActNext
	case KindCallEnded:
		a.Outcome = OutcomeSkipped
		c.ended = true
		c.pending = -1
		return ActStop
	case KindCancelled, KindMidStream:
		a.Outcome = OutcomeFailed
		c.stopped = true
		c.pending = -1
		return ActStop
	}
	// R-FAIL-2…6, R-FAIL-9: fail over.
	a.Outcome = OutcomeFailedOver
	c.lastFailureKind = v.Kind
	switch v.Kind {
	case KindKeyRefused:
		c.lastKeyRefusal = i
	case KindQuotaSpent:
		if v.Status == 429 {
			c.lastSpent429 = i
		}
	}
	if v.AccountWide {
		c.skipAccountOf(m)
	}
	c.pending = -1
	return ActNext
}

// skipAccountOf skips every other member of m's account for the rest of the
// call (R-ORDER-4). Each skip is recorded but is not an attempt.
func (c *Call) skipAccountOf(m *Member) {
	if c.skipped(m.Account) {
		return
	}
	c.skipAccount = append(c.skipAccount, m.Account)
	for _, p := range c.plans {
		for _, o := range p.members {
			if o != m && o.Account == m.Account && !c.tried.has(o) {
				c.Attempts = append(c.Attempts, Attempt{Member: o, Outcome: OutcomeSkipped, Reason: "same_account"})
			}
		}
	}
}

// Finish ends the call after the edge delivered an answer or gave up: the
// serving member's in-flight count drops and its reported usage corrects the
// rolling-minute count; members that refused the caller's key cool now that
// another member served the call (R-FAIL-6); the last failed-over attempt of
// an unanswered call becomes "failed".
func (c *Call) Finish(now time.Time, u Usage) {
	if c.answered != nil {
		c.st.Done(c.answered.ID, now, c.req.InputTokens, u)
		c.st.mu.Lock()
		for _, a := range c.Attempts {
			if a.Sent && a.Kind == KindKeyRefused {
				ms := c.st.get(a.Member.ID)
				ms.cool(now, now.Add(KeyRefusedCooldown), KeyRefusedCooldown, KindKeyRefused, a.Reason)
			}
		}
		c.st.mu.Unlock()
		return
	}
	for i := len(c.Attempts) - 1; i >= 0; i-- {
		if c.Attempts[i].Outcome == OutcomeFailedOver {
			c.Attempts[i].Outcome = OutcomeFailed
			break
		}
	}
}

// Served is the member that answered, or nil.
func (c *Call) Served() *Member { return c.answered }

// LastTried is the last member an attempt went out to, or nil.
func (c *Call) LastTried() *Member {
	for i := len(c.Attempts) - 1; i >= 0; i-- {
		if c.Attempts[i].Sent {
			return c.Attempts[i].Member
		}
	}
	return nil
}

// memberSet is a small set of members; calls touch a handful, so a slice
// beats a map and costs nothing until used.
type memberSet []*Member

func (s memberSet) has(m *Member) bool {
	for _, x := range s {
		if x == m {
			return true
		}
	}
	return false
}

func (s memberSet) hasAny(ms []*Member) bool {
	for _, m := range ms {
		if s.has(m) {
			return true
		}
	}
	return false
}

func (s memberSet) remove(m *Member) memberSet {
	for i, x := range s {
		if x == m {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}

// skipped reports whether the call skips the account (R-ORDER-4).
func (c *Call) skipped(account string) bool {
	for _, a := range c.skipAccount {
		if a == account {
			return true
		}
	}
	return false
}
