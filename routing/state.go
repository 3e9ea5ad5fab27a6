package routing

import (
	"sync"
	"sync/atomic"
	"time"
)

// States holds what this edge has learned about every member (cooldowns,
// headroom, streaks, marks). It is the edge's own (ROUTING.md appendix,
// "Per-edge state") and is safe for concurrent use. State is keyed by member
// ID, so it survives table swaps for members that keep their ID.
type States struct {
	mu sync.Mutex
	m  map[string]*memberState
	// edges is the live-edge count declared limits are shared among
	// (R-HEAD-7); 0 or 1: this edge alone.
	edges atomic.Int64
	// slots counts the calls holding each member's slots (R-CAP-1); nil:
	// no member is ever full. Guarded by mu.
	slots Slots
}

// Slots counts, for the routing core, the calls that hold a slot of a
// member on this edge (R-CAP-1). The edge implements it (it owns the slots
// and their waiters); the core only reads it to decide whether a member is
// full. Held is called with the States' lock held, so it must not call back
// into States.
type Slots interface {
	// Held is how many calls hold a slot of the member now.
	Held(memberID string) int64
}

// UseSlots gives the store the edge's slot counts (R-CAP-1). Until it is
// called (or with nil) no member is full.
func (s *States) UseSlots(sl Slots) {
	s.mu.Lock()
	s.slots = sl
	s.mu.Unlock()
}

// ShareAmong sets the number of live edges the members' declared limits
// are shared among (R-HEAD-7): from then on this edge counts rpm,
// input_tpm, output_tpm, rpd and max_in_flight against Share(limit, n).
// The edge calls it whenever its live-edge count changes; n < 1 counts as
// 1 (a standalone edge, the default, has whole limits).
func (s *States) ShareAmong(n int) {
	if v := int64(max(n, 1)); s.edges.Load() != v { // no write on the hot path when unchanged
		s.edges.Store(v)
	}
}

// LiveEdges is the count set by ShareAmong, 1 before any.
func (s *States) LiveEdges() int { return int(max(s.edges.Load(), 1)) }

// MaxInFlight is the member's cap on this edge: its share of the declared
// max_in_flight (R-CAP-1, R-HEAD-7); 0 when none is declared.
func (s *States) MaxInFlight(m *Member) int64 { return Share(m.Limits.MaxInFlight, s.LiveEdges()) }

// full reports whether m holds its cap of calls on this edge. Caller holds
// mu.
func (s *States) full(m *Member) bool {
	if s.slots == nil || m.Limits.MaxInFlight <= 0 {
		return false
	}
	return s.slots.Held(m.ID) >= Share(m.Limits.MaxInFlight, s.LiveEdges())
}

// NewStates returns an empty store.
func NewStates() *States { return &States{m: map[string]*memberState{}} }

type memberState struct {
	coolUntil  time.Time
	coolKind   FailureKind
	coolReason string
	// softCool marks a cooldown after an isolated 5xx (see apply): the
	// member is skipped while others can take calls, but tried as a last
	// resort instead of failing a call.
	softCool bool
	// streak counts consecutive refusals without a success (R-FAIL-2).
	streak int
	spent  bool
	// disabled is set by DisableAfter401s consecutive 401s (R-FAIL-6).
	disabled bool
	run401   int
	// keyUnavailableUntil: the member is tried only after the others until
	// then (R-END-3).
	keyUnavailableUntil time.Time
	lastStatus          int
	lastAt              time.Time
	inFlight            int
	counters            map[string]uint64
	hdr                 [NumDims]headerDim
	win                 window
	// day counts this edge's dispatches to the member in the current
	// calendar day of its record's day zone (R-HEAD-6).
	day dayCount
}

// get returns the state of a member, creating it. Caller holds mu.
func (s *States) get(id string) *memberState {
	ms := s.m[id]
	if ms == nil {
		ms = &memberState{counters: map[string]uint64{}}
		s.m[id] = ms
	}
	return ms
}

func (s *States) disabled(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ms := s.m[id]
	return ms != nil && ms.disabled
}

// cool moves the member's return to until unless it already returns later: a
// new cooldown never shortens an existing one. until is clamped to
// [now, now+max] so a garbage or huge retry-after cannot push it outside
// (ROUTING.md appendix, "Cooldown deadline").
func (ms *memberState) cool(now, until time.Time, max time.Duration, kind FailureKind, reason string) {
	if until.Before(now) {
		until = now
	}
	if lim := now.Add(max); until.After(lim) {
		until = lim
	}
	if until.After(ms.coolUntil) {
		ms.coolUntil, ms.coolKind, ms.coolReason, ms.softCool = until, kind, reason, false
	}
}

func (ms *memberState) cooling(now time.Time) bool { return now.Before(ms.coolUntil) }

// apply records one classified answer of a member (ROUTING.md §5 "the
// member" column). Key-refused cooldowns are not applied here: they wait
// for the end of the call (R-FAIL-6), see Call.Finish.
func (ms *memberState) apply(v Verdict, rl *RateLimits, now time.Time, rec Recovery, zone *time.Location) {
	if rl != nil && rl.Any() {
		ms.observe(rl)
	}
	if v.Status != 0 {
		ms.lastStatus, ms.lastAt = v.Status, now
	}
	ms.counters[v.Kind.String()]++
	switch v.Kind {
	case KindRateLimited, KindClientError, KindServerError, KindKeyRefused:
		// An answer that is not a quota refusal shows the account is not
		// spent (any more).
		ms.spent = false
	}
	if v.DayQuota && v.Kind != KindAnswered {
		// R-HEAD-6: a refusal naming a per-day quota cools the member
		// until its day ends in the record's zone, capped as every
		// cooldown (the later of that and any time the answer named).
		if end := NextMidnight(now, zone); end.After(v.Until) {
			v.Until = end
		}
	}
	switch v.Kind {
	case KindAnswered:
		ms.streak, ms.run401, ms.spent = 0, 0, false
	case KindRateLimited:
		until := v.Until
		if until.IsZero() {
			d := rec.CooldownBase
			for i := 0; i < ms.streak && d < rec.CooldownMax; i++ {
				d *= 2
			}
			until = now.Add(d)
		}
		ms.streak++
		ms.cool(now, until, rec.CooldownMax, v.Kind, v.Reason)
	case KindQuotaSpent:
		ms.spent = true
		ms.streak++
		until := now.Add(SpentCooldown)
		if v.Until.After(until) {
			until = v.Until
		}
		ms.cool(now, until, rec.CooldownMax, v.Kind, v.Reason)
	case KindServerError:
		// R-FAIL-4 cools the member 5 s. Weir's one refinement, found with
		// the simulator: an isolated 5xx (the member's last answer was a
		// success, and it names no time) is often one bad request, not a sick
		// deployment. Such a member is skipped like any cooling member while
		// another can take the call, but tried as a last resort rather than
		// failing a call with weir_pool_cooling. A second 5xx in a row, or a
		// named retry time, cools it as the rule says.
		isolated := ms.streak == 0 && v.Until.IsZero()
		ms.streak++
		until := now.Add(ServerErrorCooldown)
		if v.Until.After(until) {
			until = v.Until
		}
		wasCooling := ms.cooling(now)
		ms.cool(now, until, rec.CooldownMax, v.Kind, v.Reason)
		if isolated && !wasCooling && ms.coolUntil.Equal(until) {
			ms.softCool = true
		}
	case KindTransport, KindTimeout, KindUnknownOutcome:
		ms.streak++
		ms.cool(now, now.Add(TransportCooldown), rec.CooldownMax, v.Kind, v.Reason)
	case KindKeyRefused:
		if v.Status == 401 {
			ms.run401++
			if ms.run401 >= DisableAfter401s {
				ms.disabled = true
			}
		} else {
			ms.run401 = 0
		}
	case KindKeyUnavailable:
		if t := now.Add(KeyUnavailablePassOver); t.After(ms.keyUnavailableUntil) {
			ms.keyUnavailableUntil = t
		}
	}
}

// Reset clears a member's cooldown, spent mark, disable and streaks
// (R-OBS-4). Learned headroom is kept: it is evidence, not a verdict.
func (s *States) Reset(memberID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ms := s.get(memberID)
	ms.coolUntil, ms.coolKind, ms.coolReason, ms.softCool = time.Time{}, 0, "", false
	ms.streak, ms.run401, ms.spent, ms.disabled = 0, 0, false, false
	ms.keyUnavailableUntil = time.Time{}
}

// Done ends one in-flight dispatch of a member and adds the usage the
// provider reported to the rolling-minute count, correcting the input
// estimate counted at dispatch (R-HEAD-3).
func (s *States) Done(memberID string, now time.Time, estimatedInput int64, u Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ms := s.get(memberID)
	if ms.inFlight > 0 {
		ms.inFlight--
	}
	in := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	if in > 0 || u.OutputTokens > 0 {
		ms.win.add(now, 0, in-estimatedInput, u.OutputTokens)
	}
}

// View is a snapshot of one member's state for reporting (R-OBS-1).
type View struct {
	MemberID    string
	Dims        []DimView
	Headroom    float64
	CoolUntil   time.Time
	CoolKind    FailureKind
	CoolReason  string
	LastStatus  int
	LastAt      time.Time
	Spent       bool
	Disabled    bool
	InFlight    int
	Streak      int
	Counters    map[string]uint64
	KeyPassOver time.Time
	// MaxInFlight is the member's cap on this edge (its share of the
	// declared max_in_flight, R-CAP-1), 0 when none; InFlight then counts
	// the calls holding its slots.
	MaxInFlight int64
	// RequestsToday counts this edge's dispatches to the member in the
	// current day of its record's day zone; RPDShare is this edge's share
	// of the declared rpd (0 when none); DayEnds is the next midnight in
	// that zone (R-HEAD-6).
	RequestsToday int64
	RPDShare      int64
	DayEnds       time.Time
}

// Cooling reports whether the view shows the member cooling at now.
func (v View) Cooling(now time.Time) bool { return now.Before(v.CoolUntil) }

// View returns the member's state as of now.
func (s *States) View(m *Member, now time.Time) View {
	s.mu.Lock()
	defer s.mu.Unlock()
	ms := s.get(m.ID)
	c := make(map[string]uint64, len(ms.counters))
	for k, v := range ms.counters {
		c[k] = v
	}
	edges := s.LiveEdges()
	v := View{
		MemberID: m.ID, Dims: ms.dims(m, now, edges), Headroom: ms.headroom(m, now, edges),
		CoolUntil: ms.coolUntil, CoolKind: ms.coolKind, CoolReason: ms.coolReason,
		LastStatus: ms.lastStatus, LastAt: ms.lastAt, Spent: ms.spent, Disabled: ms.disabled,
		InFlight: ms.inFlight, Streak: ms.streak, Counters: c, KeyPassOver: ms.keyUnavailableUntil,
		MaxInFlight:   Share(m.Limits.MaxInFlight, edges),
		RequestsToday: ms.day.today(now, m.Record.dayZone()),
		RPDShare:      Share(m.Limits.RPD, edges),
		DayEnds:       ms.day.end,
	}
	if v.MaxInFlight > 0 && s.slots != nil {
		v.InFlight = int(s.slots.Held(m.ID))
	}
	return v
}
