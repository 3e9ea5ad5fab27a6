package routing

import (
	"sync"
	"time"
)

// States holds what this edge has learned about every member (cooldowns,
// headroom, streaks, marks). It is the edge's own (ROUTING.md appendix,
// "Per-edge state") and is safe for concurrent use. State is keyed by member
// ID, so it survives table swaps for members that keep their ID.
type States struct {
	mu sync.Mutex
	m  map[string]*memberState
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
func (ms *memberState) apply(v Verdict, rl *RateLimits, now time.Time, rec Recovery) {
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
	return View{
		MemberID: m.ID, Dims: ms.dims(m, now), Headroom: ms.headroom(m, now),
		CoolUntil: ms.coolUntil, CoolKind: ms.coolKind, CoolReason: ms.coolReason,
		LastStatus: ms.lastStatus, LastAt: ms.lastAt, Spent: ms.spent, Disabled: ms.disabled,
		InFlight: ms.inFlight, Streak: ms.streak, Counters: c, KeyPassOver: ms.keyUnavailableUntil,
	}
}
