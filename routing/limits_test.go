package routing

import (
	"math"
	"sync"
	"testing"
	"time"
)

// R-HEAD-7: one edge's share of a cluster-wide limit.
func TestShare_RHEAD7(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limit int64
		edges int
		want  int64
	}{
		{0, 1, 0}, {-5, 3, 0}, // none declared
		{10, 0, 10}, {10, -2, 10}, {10, 1, 10}, // alone: the whole limit
		{10, 2, 5}, {11, 2, 6}, {10, 3, 4}, {9, 3, 3}, // rounded up
		{1, 5, 1}, {3, 100, 1}, // never below 1 for a set limit
		{1 << 62, 1 << 30, 1 << 32},
	} {
		if got := Share(tc.limit, tc.edges); got != tc.want {
			t.Errorf("Share(%d, %d) = %d, want %d", tc.limit, tc.edges, got, tc.want)
		}
	}
}

// R-HEAD-7: declared rpm, input_tpm and output_tpm count against the
// edge's share.
func TestSharedDeclaredLimits_RHEAD7(t *testing.T) {
	t.Parallel()
	r := rec("p", WireOpenAI, []string{"m"}, []*Member{mem("a", limits(Limits{RPM: 10, InputTPM: 10_000, OutputTPM: 4000}))})
	m := r.Members[0]
	dim := func(v View, d Dim) DimView {
		for _, x := range v.Dims {
			if x.Dim == d {
				return x
			}
		}
		t.Fatalf("no dimension %v in %+v", d, v.Dims)
		return DimView{}
	}
	for _, tc := range []struct {
		edges             int
		reqLimit, inLimit int64
		outLimit          int64
		headroom          float64
	}{
		{1, 10, 10_000, 4000, 0.5}, // 5 of 10 requests used
		{2, 5, 5000, 2000, 0},      // 5 of 5: no headroom left
	} {
		st := NewStates()
		st.ShareAmong(tc.edges)
		for i := range 5 {
			st.get(m.ID).dispatch(t0.Add(time.Duration(i)*time.Second), 500)
		}
		v := st.View(m, t0.Add(5*time.Second))
		if d := dim(v, DimRequests); d.Limit != tc.reqLimit || d.Remaining != max(tc.reqLimit-5, 0) || d.FromHeaders {
			t.Errorf("%d edges: requests %+v", tc.edges, d)
		}
		if d := dim(v, DimInputTokens); d.Limit != tc.inLimit || d.Remaining != tc.inLimit-2500 {
			t.Errorf("%d edges: input tokens %+v", tc.edges, d)
		}
		if d := dim(v, DimOutputTokens); d.Limit != tc.outLimit {
			t.Errorf("%d edges: output tokens %+v", tc.edges, d)
		}
		if math.Abs(v.Headroom-tc.headroom) > 1e-9 {
			t.Errorf("%d edges: headroom %.3f, want %.3f", tc.edges, v.Headroom, tc.headroom)
		}
	}
	st := NewStates()
	if st.LiveEdges() != 1 {
		t.Fatalf("default live edges %d, want 1", st.LiveEdges())
	}
	st.ShareAmong(0)
	if st.LiveEdges() != 1 {
		t.Fatalf("ShareAmong(0) gives %d live edges, want 1", st.LiveEdges())
	}
}

func TestDayBounds_RHEAD6(t *testing.T) {
	t.Parallel()
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Skip("no tz database:", err)
	}
	for _, tc := range []struct {
		name       string
		now        time.Time
		zone       *time.Location
		start, end time.Time
	}{
		{"UTC", time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC), time.UTC,
			time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		{"nil zone is UTC", time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC), nil,
			time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		// 07:30 UTC on 30 Nov is still 29 Nov in Los Angeles (PST, −8).
		{"LA standard time", time.Date(2026, 11, 30, 7, 30, 0, 0, time.UTC), la,
			time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC), time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)},
		// 8 March 2026: clocks spring forward, a 23-hour day.
		{"LA spring forward", time.Date(2026, 3, 8, 12, 0, 0, 0, time.UTC), la,
			time.Date(2026, 3, 8, 8, 0, 0, 0, time.UTC), time.Date(2026, 3, 9, 7, 0, 0, 0, time.UTC)},
		// 1 November 2026: clocks fall back, a 25-hour day.
		{"LA fall back", time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), la,
			time.Date(2026, 11, 1, 7, 0, 0, 0, time.UTC), time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)},
	} {
		start, end := dayBounds(tc.now, tc.zone)
		if !start.Equal(tc.start) || !end.Equal(tc.end) {
			t.Errorf("%s: day [%v, %v), want [%v, %v)", tc.name, start.UTC(), end.UTC(), tc.start, tc.end)
		}
		if got := NextMidnight(tc.now, tc.zone); !got.Equal(tc.end) {
			t.Errorf("%s: NextMidnight %v", tc.name, got.UTC())
		}
	}
}

// R-HEAD-6: rpd counted per calendar day of the record's zone; a member
// at its share is passed over until midnight there, also across a
// daylight-saving change; R-HEAD-7: the share of rpd among live edges.
func TestRequestsPerDay_RHEAD6(t *testing.T) {
	t.Parallel()
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Skip("no tz database:", err)
	}
	for _, tc := range []struct {
		name        string
		zone        *time.Location
		rpd         int64
		edges       int
		start       time.Time // a call of the day
		lastOfDay   time.Time // still that day
		firstOfNext time.Time // the next day's first instant
	}{
		{"UTC", nil, 3, 1, time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC),
			time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		{"LA spring forward, shared by 2 edges", la, 6, 2, time.Date(2026, 3, 8, 9, 0, 0, 0, time.UTC),
			time.Date(2026, 3, 9, 6, 59, 59, 0, time.UTC), time.Date(2026, 3, 9, 7, 0, 0, 0, time.UTC)},
		{"LA fall back", la, 3, 1, time.Date(2026, 11, 1, 7, 0, 0, 0, time.UTC),
			time.Date(2026, 11, 2, 7, 59, 59, 0, time.UTC), time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rec("p", WireOpenAI, []string{"m"}, []*Member{mem("a", limits(Limits{RPD: tc.rpd})), mem("b", order(2))})
			r.DayZone = tc.zone
			tb := table(DataRules{}, r)
			st := NewStates()
			st.ShareAmong(tc.edges)
			a := r.Members[0]
			share := Share(tc.rpd, tc.edges)
			first := func(now time.Time) string {
				c, e := tb.Begin(chat("m"), st, newRand(1), now)
				if e != nil {
					t.Fatal(e)
				}
				tried, _ := drive(t, c, now, nil)
				return tried[0]
			}
			for i := range share {
				if got := first(tc.start.Add(time.Duration(i) * time.Minute)); got != "a" {
					t.Fatalf("call %d went to %s before a's share of %d was used", i, got, share)
				}
			}
			if v := st.View(a, tc.start.Add(time.Hour)); v.RequestsToday != share || v.RPDShare != share || v.Headroom != 0 {
				t.Fatalf("view after the share: today %d share %d headroom %v", v.RequestsToday, v.RPDShare, v.Headroom)
			}
			if got := first(tc.lastOfDay); got != "b" {
				t.Fatalf("at the day's last second the call went to %s, want b", got)
			}
			if got := first(tc.firstOfNext); got != "a" {
				t.Fatalf("after midnight the call went to %s, want a", got)
			}
			if v := st.View(a, tc.firstOfNext); v.RequestsToday != 1 {
				t.Fatalf("next day counts %d, want 1", v.RequestsToday)
			}
		})
	}
	t.Run("every member out for the day: R-END-1 until midnight", func(t *testing.T) {
		r := rec("p", WireOpenAI, []string{"m"}, []*Member{mem("a", limits(Limits{RPD: 1}))})
		tb := table(DataRules{}, r)
		st := NewStates()
		now := time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC)
		c, _ := tb.Begin(chat("m"), st, newRand(1), now)
		drive(t, c, now, nil)
		c, _ = tb.Begin(chat("m"), st, newRand(1), now)
		if _, ok := c.Next(now); ok {
			t.Fatal("a member out for the day was chosen")
		}
		f := c.Final(now)
		if f.Err == nil || f.Err.Status != 429 || f.Err.Code != CodePoolCooling || f.Err.RetryAfter != 2*time.Hour {
			t.Fatalf("final %+v", f.Err)
		}
	})
}

// R-HEAD-6, R-FMT-8: a refusal naming a per-day quota cools the member
// until the day ends in its zone, capped as every cooldown.
func TestDayQuotaCooldown_RHEAD6(t *testing.T) {
	t.Parallel()
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Skip("no tz database:", err)
	}
	for _, tc := range []struct {
		name   string
		zone   *time.Location
		capMax time.Duration
		now    time.Time
		until  time.Time
	}{
		{"to UTC midnight", nil, DefaultCooldownMax, time.Date(2026, 11, 30, 23, 30, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		{"capped at the cooldown cap", nil, DefaultCooldownMax, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), time.Date(2026, 11, 30, 13, 0, 0, 0, time.UTC)},
		{"to LA midnight", la, 24 * time.Hour, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rec("p", WireGemini, []string{"m"}, []*Member{mem("a"), mem("b")}, recovery(func(rc *Recovery) { rc.CooldownMax = tc.capMax }))
			r.DayZone = tc.zone
			tb := table(DataRules{}, r)
			st := NewStates()
			c, _ := tb.Begin(chat("m"), st, newRand(1), tc.now)
			s, _ := c.Next(tc.now)
			c.Dispatch(tc.now)
			// Until names a shorter time (Google's RetryInfo for the
			// minute); the day wins.
			day := Verdict{Kind: KindRateLimited, Status: 429, Reason: "per_day", DayQuota: true, Until: tc.now.Add(20 * time.Second)}
			if act := c.Report(day, nil, tc.now); act != ActNext {
				t.Fatalf("action %v", act)
			}
			if v := st.View(s.Member, tc.now); !v.CoolUntil.Equal(tc.until) || v.CoolKind != KindRateLimited {
				t.Fatalf("cools until %v (%v), want %v", v.CoolUntil.UTC(), v.CoolKind, tc.until)
			}
		})
	}
}

// fakeSlots is the edge's slot counts as a map.
type fakeSlots struct {
	mu   sync.Mutex
	held map[string]int64
}

func (f *fakeSlots) Held(id string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held[id]
}

func (f *fakeSlots) set(id string, n int64) {
	f.mu.Lock()
	f.held[id] = n
	f.mu.Unlock()
}

// R-CAP-1: a member at its cap is skipped while another may take the
// call; when all are full the call waits for a slot (Step.Full), then
// R-END-7.
func TestFullMembers_RCAP1(t *testing.T) {
	t.Parallel()
	setup := func(maxWait time.Duration) (*Table, *States, *fakeSlots, *Member, *Member) {
		r := rec("p", WireOpenAI, []string{"m"}, []*Member{mem("a", limits(Limits{MaxInFlight: 2}), weight(100)), mem("b", limits(Limits{MaxInFlight: 1}))},
			recovery(func(rc *Recovery) { rc.MaxWait = maxWait }))
		st := NewStates()
		sl := &fakeSlots{held: map[string]int64{}}
		st.UseSlots(sl)
		return table(DataRules{}, r), st, sl, r.Members[0], r.Members[1]
	}
	t.Run("a full member is skipped, not an attempt", func(t *testing.T) {
		tb, st, sl, a, b := setup(0)
		sl.set(a.ID, 2)
		for seed := range uint64(20) {
			c := begin(t, tb, st, chat("m"), seed)
			s, ok := c.Next(t0)
			if !ok || s.Member != b || len(s.Full) != 0 {
				t.Fatalf("seed %d: step %+v", seed, s)
			}
		}
		if v := st.View(a, t0); v.MaxInFlight != 2 || v.InFlight != 2 {
			t.Fatalf("view in flight %d/%d", v.InFlight, v.MaxInFlight)
		}
	})
	t.Run("R-HEAD-7 the cap is the edge's share", func(t *testing.T) {
		tb, st, sl, a, b := setup(0)
		st.ShareAmong(2) // a's share is 1, b's 1
		sl.set(a.ID, 1)
		c := begin(t, tb, st, chat("m"), 1)
		if s, _ := c.Next(t0); s.Member != b {
			t.Fatalf("went to %v with a at its share", s.Member)
		}
		if st.MaxInFlight(a) != 1 {
			t.Fatalf("a's cap on this edge %d", st.MaxInFlight(a))
		}
	})
	t.Run("all full: wait, then take the freed member", func(t *testing.T) {
		tb, st, sl, a, b := setup(3 * time.Second)
		sl.set(a.ID, 2)
		sl.set(b.ID, 1)
		c := begin(t, tb, st, chat("m"), 1)
		s, ok := c.Next(t0)
		if !ok || s.Member != nil || len(s.Full) != 2 || s.Wait != 3*time.Second {
			t.Fatalf("step %+v", s)
		}
		if c.Sent() != 0 || len(c.Attempts) != 0 {
			t.Fatalf("waiting made attempts: %+v", c.Attempts)
		}
		// The edge got a slot of b.
		now := t0.Add(time.Second)
		if !c.Take(b, now) {
			t.Fatal("Take refused a free member")
		}
		if c.Take(a, now) {
			t.Fatal("Take accepted a second pending member")
		}
		c.Dispatch(now)
		if act := c.Report(ok200().v, nil, now); act != ActDeliver || c.Served() != b {
			t.Fatalf("action %v served %v", act, c.Served())
		}
	})
	t.Run("default wait is 10 s, within the deadline", func(t *testing.T) {
		tb, st, sl, a, b := setup(0)
		sl.set(a.ID, 2)
		sl.set(b.ID, 1)
		c := begin(t, tb, st, chat("m"), 1)
		if s, _ := c.Next(t0); s.Wait != DefaultFullWait {
			t.Fatalf("wait %v", s.Wait)
		}
		c = begin(t, tb, st, chat("m"), 1)
		near := c.Deadline.Add(-2 * time.Second)
		if s, _ := c.Next(near); s.Wait != 2*time.Second {
			t.Fatalf("wait %v near the deadline", s.Wait)
		}
	})
	t.Run("R-END-7 none freed in time", func(t *testing.T) {
		tb, st, sl, a, b := setup(0)
		sl.set(a.ID, 2)
		sl.set(b.ID, 1)
		c := begin(t, tb, st, chat("m"), 1)
		s, _ := c.Next(t0)
		later := t0.Add(DefaultFullWait)
		c.Busy(s.Full)
		if s2, ok := c.Next(later); ok {
			t.Fatalf("after the wait gave up: %+v", s2)
		}
		f := c.Final(later)
		if f.Err == nil || f.Err.Status != 503 || f.Err.Code != CodePoolBusy || f.Err.RetryAfter != time.Second ||
			f.Err.ShouldRetry == nil || !*f.Err.ShouldRetry {
			t.Fatalf("final %+v", f.Err)
		}
		if c.Sent() != 0 {
			t.Fatalf("%d attempts", c.Sent())
		}
	})
	t.Run("R-END-1 wins over R-END-7 when a member is cooling", func(t *testing.T) {
		tb, st, sl, a, b := setup(0)
		sl.set(b.ID, 1)
		c := begin(t, tb, st, chat("m"), 1)
		s, _ := c.Next(t0)
		if s.Member != a {
			t.Fatalf("step %+v", s)
		}
		c.Dispatch(t0)
		c.Report(rate429().v, nil, t0)
		s, _ = c.Next(t0)
		if len(s.Full) != 1 || s.Full[0] != b {
			t.Fatalf("step %+v", s)
		}
		c.Busy(s.Full)
		if _, ok := c.Next(t0); ok {
			t.Fatal("next after busy")
		}
		if f := c.Final(t0); f.Err == nil || f.Err.Code != CodePoolCooling {
			t.Fatalf("final %+v", f.Err)
		}
	})
	t.Run("lost the race for the last slot: skipped as full", func(t *testing.T) {
		tb, st, sl, a, b := setup(0)
		sl.set(a.ID, 2)
		c := begin(t, tb, st, chat("m"), 1)
		s, _ := c.Next(t0)
		if s.Member != b {
			t.Fatalf("step %+v", s)
		}
		sl.set(b.ID, 1) // another call took it
		c.Full()
		s, _ = c.Next(t0)
		if s.Member != nil || len(s.Full) != 2 {
			t.Fatalf("step after the race %+v", s)
		}
		if at := c.Attempts[0]; at.Outcome != OutcomeSkipped || at.Reason != "full" || at.Sent {
			t.Fatalf("attempt %+v", at)
		}
		if c.Take(b, t0) != true {
			t.Fatal("take b")
		}
		c.Dispatch(t0)
		c.Report(rate429().v, nil, t0)
		if c.Take(b, t0) {
			t.Fatal("Take accepted a member the call tried")
		}
	})
	t.Run("no slots given: never full", func(t *testing.T) {
		tb, _, _, _, _ := setup(0)
		st := NewStates()
		c := begin(t, tb, st, chat("m"), 1)
		if s, _ := c.Next(t0); s.Member == nil {
			t.Fatalf("step %+v", s)
		}
	})
}
