package sim

import (
	"math/rand/v2"
	"time"

	"weir.dev/routing"
)

// router is a routing policy under test: it starts a session for each call.
type router interface {
	name() string
	start(c *callRun, now time.Time) session
}

// session routes one call, one attempt at a time.
type session interface {
	// next returns the member the next attempt goes to, after waiting
	// wait; ok is false when the call may try no other member.
	next(now time.Time) (member int, wait time.Duration, ok bool)
	// dispatch says the attempt next returned goes out now.
	dispatch(now time.Time)
	// report gives the attempt's answer and says whether the caller gets
	// it (deliver) or the call goes on (next) or stops (neither).
	report(a *answer, now time.Time) (deliver, next bool)
	// final is the status the caller gets when no answer was delivered.
	final(now time.Time) int
	// finish ends a call whose answer was delivered.
	finish(now time.Time, a *answer)
}

// Policy names, as printed in the tables.
const (
	PolicyWeir           = "weir"
	PolicyRoundRobin     = "round robin, 5 s cooldown"
	PolicyWeightedRandom = "weighted random, no headers"
)

// --- Weir -----------------------------------------------------------------

// weirRouter is Weir's policy: the routing core with one edge's States,
// the call loop Begin → Next → Dispatch → Report → Finish or Final, every
// answer classified by the core's own ClassifyWith and ParseRateLimits from
// real headers and bodies, and job affinity from a local map.
type weirRouter struct {
	sc     *Scenario
	table  *routing.Table
	states *routing.States
	rnd    *rand.Rand
	index  map[string]int    // member ID → provider index
	last   map[string]string // job ID → member ID of its last served call
}

func newWeirRouter(sc *Scenario, seed uint64) *weirRouter {
	t := sc.Table()
	w := &weirRouter{
		sc: sc, table: t, states: routing.NewStates(),
		rnd:   rand.New(rand.NewPCG(seed, 0x77656972)),
		index: map[string]int{}, last: map[string]string{},
	}
	for i, m := range t.Records[0].Members {
		w.index[m.ID] = i
	}
	return w
}

func (w *weirRouter) name() string { return PolicyWeir }

func (w *weirRouter) start(c *callRun, now time.Time) session {
	req := routing.Request{
		Endpoint: w.sc.endpoint(), Model: Model,
		JobID: c.job.job.ID, LastMemberID: w.last[c.job.job.ID],
		InputTokens: c.turn.Prompt, MaxOutput: requestMaxOut,
	}
	call, err := w.table.Begin(req, w.states, w.rnd, now)
	return &weirSession{w: w, call: call, err: err, job: c.job.job.ID}
}

type weirSession struct {
	w    *weirRouter
	call *routing.Call
	err  *routing.Error
	job  string
	cur  *routing.Member
}

func (s *weirSession) next(now time.Time) (int, time.Duration, bool) {
	if s.call == nil {
		return 0, 0, false
	}
	st, ok := s.call.Next(now)
	if !ok {
		return 0, 0, false
	}
	s.cur = st.Member
	return s.w.index[st.Member.ID], st.Wait, true
}

func (s *weirSession) dispatch(now time.Time) { s.call.Dispatch(now) }

func (s *weirSession) report(a *answer, now time.Time) (bool, bool) {
	custom := s.w.table.Records[0].RateLimitHeaders
	v := routing.ClassifyWith(s.w.sc.Wire, a.status, a.header, a.body, custom, now)
	rl := routing.ParseRateLimits(a.header, custom, now)
	switch s.call.Report(v, &rl, now) {
	case routing.ActDeliver:
		return true, false
	case routing.ActNext:
		return false, true
	}
	return false, false
}

func (s *weirSession) final(now time.Time) int {
	if s.call == nil {
		return s.err.Status
	}
	f := s.call.Final(now)
	s.call.Finish(now, routing.Usage{})
	if f.Err != nil {
		return f.Err.Status
	}
	return s.call.Attempts[f.PassThrough].Status
}

func (s *weirSession) finish(now time.Time, a *answer) {
	s.call.Finish(now, a.usage)
	if m := s.call.Served(); m != nil {
		s.w.last[s.job] = m.ID
	}
}

// --- Round robin with a fixed cooldown ------------------------------------

// fixedCooldown is how long the round-robin baseline rests a member after
// any failure.
const fixedCooldown = 5 * time.Second

// roundRobin is the first baseline: members in rotation, a member that
// failed in any way rests for fixedCooldown, failover to the next member in
// rotation, with Weir's attempt limits (one attempt per member, at most
// routing.DefaultMaxAttempts). It reads no headers and keeps no job
// affinity.
type roundRobin struct {
	n    int
	pos  int
	cool []time.Time
}

func newRoundRobin(sc *Scenario) *roundRobin {
	return &roundRobin{n: len(sc.Members), cool: make([]time.Time, len(sc.Members))}
}

func (r *roundRobin) name() string { return PolicyRoundRobin }

func (r *roundRobin) start(*callRun, time.Time) session {
	return &baselineSession{pick: r.pick, failed: r.failed, tried: make([]bool, r.n)}
}

func (r *roundRobin) pick(tried []bool, now time.Time) int {
	for i := range r.n {
		m := (r.pos + i) % r.n
		if !tried[m] && !now.Before(r.cool[m]) {
			r.pos = (m + 1) % r.n
			return m
		}
	}
	return -1
}

func (r *roundRobin) failed(m int, now time.Time) {
	if t := now.Add(fixedCooldown); t.After(r.cool[m]) {
		r.cool[m] = t
	}
}

// --- Weighted random without headers ---------------------------------------

// weightedRandom is the second baseline: for each call a random order of
// the members drawn by weight, failover down that order on 429 and 5xx,
// with Weir's attempt limits. It knows nothing beyond the current call: no
// headers, no cooldowns, no job affinity.
type weightedRandom struct {
	weights []float64
	rnd     *rand.Rand
}

func newWeightedRandom(sc *Scenario, seed uint64) *weightedRandom {
	w := &weightedRandom{rnd: rand.New(rand.NewPCG(seed, 0x77726e64))}
	for _, m := range sc.Members {
		w.weights = append(w.weights, float64(max(m.Weight, 1)))
	}
	return w
}

func (w *weightedRandom) name() string { return PolicyWeightedRandom }

func (w *weightedRandom) start(*callRun, time.Time) session {
	n := len(w.weights)
	order := make([]int, 0, n)
	left := make([]bool, n)
	for i := range left {
		left[i] = true
	}
	for range n {
		total := 0.0
		for i, ok := range left {
			if ok {
				total += w.weights[i]
			}
		}
		x := w.rnd.Float64() * total
		pick := -1
		for i, ok := range left {
			if !ok {
				continue
			}
			pick = i
			if x < w.weights[i] {
				break
			}
			x -= w.weights[i]
		}
		left[pick] = false
		order = append(order, pick)
	}
	k := 0
	pick := func(tried []bool, _ time.Time) int {
		for k < len(order) {
			m := order[k]
			k++
			if !tried[m] {
				return m
			}
		}
		return -1
	}
	return &baselineSession{pick: pick, failed: func(int, time.Time) {}, tried: make([]bool, n)}
}

// baselineSession is the call loop both baselines share: try the member
// pick names, fail over on 429 and 5xx, deliver anything else, and when no
// member is left give the caller the last answer (a proxy passes it
// through), or a 429 when no attempt could go out at all.
type baselineSession struct {
	pick   func(tried []bool, now time.Time) int
	failed func(member int, now time.Time)
	tried  []bool
	sent   int
	cur    int
	last   int
}

func (b *baselineSession) next(now time.Time) (int, time.Duration, bool) {
	if b.sent >= routing.DefaultMaxAttempts {
		return 0, 0, false
	}
	m := b.pick(b.tried, now)
	if m < 0 {
		return 0, 0, false
	}
	b.cur = m
	return m, 0, true
}

func (b *baselineSession) dispatch(time.Time) {
	b.tried[b.cur] = true
	b.sent++
}

func (b *baselineSession) report(a *answer, now time.Time) (bool, bool) {
	b.last = a.status
	if a.status == 429 || a.status >= 500 {
		b.failed(b.cur, now)
		return false, true
	}
	return true, false
}

func (b *baselineSession) final(time.Time) int {
	if b.last != 0 {
		return b.last
	}
	return 429
}

func (b *baselineSession) finish(time.Time, *answer) {}
