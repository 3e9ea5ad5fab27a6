package routing

import (
	"testing"
	"time"
)

// onePool is a pool of two members a (weight 1000) and b (weight 1), so a is
// almost always tried first; tests that need a strict order check it.
func onePool(opts ...ropt) (*Table, *Record) {
	r := rec("pool", WireOpenAI, []string{"m"}, []*Member{mem("a", weight(10000)), mem("b", weight(1))}, opts...)
	return table(DataRules{}, r), r
}

// tryFirst makes a call whose first attempt goes to a and returns the call
// after a's answer, with the action.
func tryFirst(t *testing.T, tb *Table, st *States, ans answer, now time.Time) (*Call, Action) {
	t.Helper()
	for seed := uint64(0); ; seed++ {
		c, err := tb.Begin(chat("m"), st, newRand(seed), now)
		if err != nil {
			t.Fatal(err)
		}
		s, ok := c.Next(now)
		if !ok {
			t.Fatal("no member")
		}
		if s.Member.Name != "a" {
			continue
		}
		c.Dispatch(now)
		return c, c.Report(ans.v, ans.rl, now)
	}
}

func coolOf(st *States, r *Record, name string) (time.Time, FailureKind) {
	ms := st.get(r.ID + "/" + name)
	return ms.coolUntil, ms.coolKind
}

func TestFailureRows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		ans       answer
		wantAct   Action
		wantCool  time.Duration // 0 = not cooling
		wantKind  FailureKind
		wantSpent bool
	}{
		{name: "R-FAIL-1 success answers", ans: ok200(), wantAct: ActDeliver},
		{name: "R-FAIL-2 429 with a named time cools until then", ans: rate429Until(t0.Add(42 * time.Second)), wantAct: ActNext, wantCool: 42 * time.Second, wantKind: KindRateLimited},
		{name: "R-FAIL-2 429 naming nothing cools 10s", ans: rate429(), wantAct: ActNext, wantCool: 10 * time.Second, wantKind: KindRateLimited},
		{name: "R-FAIL-2 a retry-after beyond 1h is capped", ans: rate429Until(t0.Add(30 * time.Hour)), wantAct: ActNext, wantCool: time.Hour, wantKind: KindRateLimited},
		{name: "R-FAIL-2 a retry-after in the past cools nothing", ans: rate429Until(t0.Add(-time.Hour)), wantAct: ActNext, wantKind: 0},
		{name: "R-FAIL-3 quota spent cools 5 min and marks spent", ans: answer{v: Verdict{Kind: KindQuotaSpent, Status: 400, AccountWide: true}}, wantAct: ActNext, wantCool: 5 * time.Minute, wantKind: KindQuotaSpent, wantSpent: true},
		{name: "R-FAIL-3 quota naming a longer time cools longer", ans: answer{v: Verdict{Kind: KindQuotaSpent, Status: 429, Until: t0.Add(20 * time.Minute)}}, wantAct: ActNext, wantCool: 20 * time.Minute, wantKind: KindQuotaSpent, wantSpent: true},
		{name: "R-FAIL-4 5xx cools 5s", ans: v(KindServerError, 503), wantAct: ActNext, wantCool: 5 * time.Second, wantKind: KindServerError},
		{name: "R-FAIL-4 5xx naming longer cools longer", ans: answer{v: Verdict{Kind: KindServerError, Status: 529, Until: t0.Add(time.Minute)}}, wantAct: ActNext, wantCool: time.Minute, wantKind: KindServerError},
		{name: "R-FAIL-5 transport failure cools 5s", ans: v(KindTransport, 0), wantAct: ActNext, wantCool: 5 * time.Second, wantKind: KindTransport},
		{name: "R-FAIL-6 key refused fails over, cools nothing yet", ans: v(KindKeyRefused, 401), wantAct: ActNext},
		{name: "R-FAIL-7 502 is delivered, cools 5s", ans: v(KindUnknownOutcome, 502), wantAct: ActDeliver, wantCool: 5 * time.Second, wantKind: KindUnknownOutcome},
		{name: "R-FAIL-8 other 4xx is delivered, nothing cools", ans: v(KindClientError, 422), wantAct: ActDeliver},
		{name: "R-FAIL-9 timeout fails over, cools 5s", ans: v(KindTimeout, 0), wantAct: ActNext, wantCool: 5 * time.Second, wantKind: KindTimeout},
		{name: "R-FAIL-10 cancelled stops the call", ans: v(KindCancelled, 0), wantAct: ActStop},
		{name: "R-FAIL-11 a failure mid-stream stops, no second answer", ans: v(KindMidStream, 200), wantAct: ActStop},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb, r := onePool()
			st := NewStates()
			c, act := tryFirst(t, tb, st, tc.ans, t0)
			if act != tc.wantAct {
				t.Fatalf("action %v, want %v", act, tc.wantAct)
			}
			until, kind := coolOf(st, r, "a")
			if tc.wantCool == 0 {
				if until.After(t0) {
					t.Fatalf("cools until %v", until.Sub(t0))
				}
			} else if got := until.Sub(t0); got != tc.wantCool || kind != tc.wantKind {
				t.Fatalf("cools %v (%v), want %v (%v)", got, kind, tc.wantCool, tc.wantKind)
			}
			if st.get(r.ID+"/a").spent != tc.wantSpent {
				t.Fatalf("spent = %v", !tc.wantSpent)
			}
			if tc.wantAct == ActStop {
				if _, ok := c.Next(t0); ok {
					t.Fatal("a stopped call offered another member")
				}
			}
		})
	}
}

func TestCooldownStreak(t *testing.T) {
	t.Parallel()
	tb, r := onePool()
	st := NewStates()
	now := t0
	// R-FAIL-2: 10s doubled for each consecutive refusal: 10, 20, 40, 80 …
	for i, want := range []time.Duration{10, 20, 40, 80, 160} {
		_, _ = tryFirst(t, tb, st, rate429(), now)
		until, _ := coolOf(st, r, "a")
		if got := until.Sub(now); got != want*time.Second {
			t.Fatalf("refusal %d cools %v, want %v", i+1, got, want*time.Second)
		}
		now = until
	}
	// R-FAIL-1: a success resets the streak.
	_, _ = tryFirst(t, tb, st, ok200(), now)
	_, _ = tryFirst(t, tb, st, rate429(), now)
	if until, _ := coolOf(st, r, "a"); until.Sub(now) != 10*time.Second {
		t.Fatalf("after a success the cooldown is %v, want 10s", until.Sub(now))
	}
	// The streak is capped at 1h.
	st2 := NewStates()
	st2.get(r.ID + "/a").streak = 40
	_, _ = tryFirst(t, tb, st2, rate429(), t0)
	if until, _ := coolOf(st2, r, "a"); until.Sub(t0) != time.Hour {
		t.Fatalf("long streak cools %v, want 1h", until.Sub(t0))
	}
}

func TestCooldownNeverShortens(t *testing.T) {
	t.Parallel()
	// §5: a new cooldown never shortens an existing one.
	ms := &memberState{counters: map[string]uint64{}}
	ms.cool(t0, t0.Add(time.Minute), time.Hour, KindRateLimited, "x")
	ms.cool(t0, t0.Add(time.Second), time.Hour, KindServerError, "y")
	if !ms.coolUntil.Equal(t0.Add(time.Minute)) || ms.coolKind != KindRateLimited {
		t.Fatalf("cooldown shortened to %v %v", ms.coolUntil.Sub(t0), ms.coolKind)
	}
	ms.cool(t0, t0.Add(2*time.Minute), time.Hour, KindServerError, "z")
	if !ms.coolUntil.Equal(t0.Add(2 * time.Minute)) {
		t.Fatal("later deadline did not win")
	}
}

func TestKeyRefusal(t *testing.T) {
	t.Parallel()
	t.Run("R-FAIL-6 cools 5 min once another member served the call", func(t *testing.T) {
		tb, r := onePool()
		st := NewStates()
		c, act := tryFirst(t, tb, st, v(KindKeyRefused, 403), t0)
		if act != ActNext {
			t.Fatal("no failover")
		}
		s, _ := c.Next(t0)
		c.Dispatch(t0)
		if s.Member.Name != "b" || c.Report(ok200().v, nil, t0) != ActDeliver {
			t.Fatal("b did not serve")
		}
		if until, _ := coolOf(st, r, "a"); until.After(t0) {
			t.Fatal("cooled before the call finished")
		}
		c.Finish(t0, Usage{})
		if until, kind := coolOf(st, r, "a"); until.Sub(t0) != 5*time.Minute || kind != KindKeyRefused {
			t.Fatalf("cools %v %v, want 5m key_refused", until.Sub(t0), kind)
		}
		// R-ELIG-4: a key-refused member stays out of calls for its cooldown.
		for seed := uint64(0); seed < 10; seed++ {
			if m := firstPick(t, tb, st, chat("m"), seed); m.Name != "b" {
				t.Fatal("key-refused member chosen while cooling")
			}
		}
	})
	t.Run("R-FAIL-6 a 403 every member answers cools none and is the answer", func(t *testing.T) {
		tb, r := onePool()
		st := NewStates()
		c := begin(t, tb, st, chat("m"), 1)
		_, act := drive(t, c, t0, map[string]answer{"a": v(KindKeyRefused, 403), "b": v(KindKeyRefused, 404)})
		if act != 0 {
			t.Fatalf("action %v, want none left", act)
		}
		c.Finish(t0, Usage{})
		for _, n := range []string{"a", "b"} {
			if until, _ := coolOf(st, r, n); until.After(t0) {
				t.Fatalf("%s cooled", n)
			}
		}
		f := c.Final(t0)
		if f.Err != nil || f.PassThrough < 0 || c.Attempts[f.PassThrough].Status != 404 {
			t.Fatalf("final %+v, want the last refusal as is", f)
		}
	})
	t.Run("R-FAIL-6 three 401s in a row disable the member until reset", func(t *testing.T) {
		tb, r := onePool()
		st := NewStates()
		for i := 0; i < 3; i++ {
			c, _ := tryFirst(t, tb, st, v(KindKeyRefused, 401), t0)
			c.Finish(t0, Usage{})
		}
		if !st.get(r.ID + "/a").disabled {
			t.Fatal("not disabled after three 401s")
		}
		for seed := uint64(0); seed < 10; seed++ {
			if m := firstPick(t, tb, st, chat("m"), seed); m.Name != "b" {
				t.Fatal("disabled member chosen")
			}
		}
		st.Reset(r.ID + "/a") // R-OBS-4
		if st.get(r.ID + "/a").disabled {
			t.Fatal("reset did not clear disable")
		}
	})
	t.Run("R-FAIL-6 a success between 401s resets the run", func(t *testing.T) {
		tb, r := onePool()
		st := NewStates()
		for _, a := range []answer{v(KindKeyRefused, 401), v(KindKeyRefused, 401), ok200(), v(KindKeyRefused, 401)} {
			c, _ := tryFirst(t, tb, st, a, t0)
			c.Finish(t0, Usage{})
		}
		if st.get(r.ID + "/a").disabled {
			t.Fatal("disabled without three 401s in a row")
		}
	})
}

func TestCallLimits(t *testing.T) {
	t.Parallel()
	many := func() []*Member {
		var ms []*Member
		for _, n := range []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9"} {
			ms = append(ms, mem(n))
		}
		return ms
	}
	t.Run("R-FAIL-13 one attempt per member, at most 8 in all", func(t *testing.T) {
		r := rec("big", WireOpenAI, []string{"m"}, many())
		tb := table(DataRules{}, r)
		c := begin(t, tb, NewStates(), chat("m"), 1)
		script := map[string]answer{}
		for _, m := range r.Members {
			script[m.Name] = v(KindServerError, 500)
		}
		tried, _ := drive(t, c, t0, script)
		seen := map[string]bool{}
		for _, n := range tried {
			if seen[n] {
				t.Fatalf("%s tried twice", n)
			}
			seen[n] = true
		}
		if len(tried) != 8 || c.Sent() != 8 {
			t.Fatalf("%d attempts, want 8", len(tried))
		}
	})
	t.Run("R-FAIL-13 the call deadline is not reset by failover", func(t *testing.T) {
		r := rec("big", WireOpenAI, []string{"m"}, many(), recovery(func(rc *Recovery) { rc.CallDeadline = 10 * time.Second }))
		tb := table(DataRules{}, r)
		c := begin(t, tb, NewStates(), chat("m"), 1)
		now := t0
		n := 0
		for {
			_, ok := c.Next(now)
			if !ok {
				break
			}
			c.Dispatch(now)
			c.Report(v(KindTimeout, 0).v, nil, now)
			n++
			now = now.Add(4 * time.Second) // each attempt takes 4s
		}
		if n != 3 {
			t.Fatalf("%d attempts within a 10s deadline of 4s attempts, want 3", n)
		}
		if f := c.Final(now); f.Err == nil || f.Err.Code != CodeUpstreamTimeout || f.Err.Status != 504 {
			t.Fatalf("final %+v", f)
		}
	})
	t.Run("R-FAIL-13 a Retry-After is respected only while it fits the deadline", func(t *testing.T) {
		r := rec("p", WireOpenAI, []string{"m"}, []*Member{mem("a")}, recovery(func(rc *Recovery) {
			rc.CallDeadline, rc.MaxWait = 20*time.Second, time.Minute
		}))
		tb := table(DataRules{}, r)
		c := begin(t, tb, NewStates(), chat("m"), 1)
		tried, _ := drive(t, c, t0, map[string]answer{"a": rate429Until(t0.Add(30 * time.Second))})
		if len(tried) != 1 {
			t.Fatalf("waited past the deadline: %v", tried)
		}
	})
}

func TestKeepAlive(t *testing.T) {
	t.Parallel()
	// R-FAIL-12: ": weir waiting" after 15s without upstream headers, then
	// every 15s; comments are not output, so failover goes on.
	for i, want := range []time.Duration{15, 30, 45} {
		if got := NextKeepAlive(t0, i).Sub(t0); got != want*time.Second {
			t.Fatalf("keep-alive %d at %v, want %v", i, got, want*time.Second)
		}
	}
}

func TestIsolatedServerError(t *testing.T) {
	t.Parallel()
	t.Run("R-FAIL-4 an isolated 5xx: skipped while another member can take calls", func(t *testing.T) {
		tb, r := onePool()
		st := NewStates()
		_, _ = tryFirst(t, tb, st, v(KindServerError, 500), t0)
		for seed := uint64(0); seed < 20; seed++ {
			if m := firstPick(t, tb, st, chat("m"), seed); m.Name != "b" {
				t.Fatal("cooling member chosen while b is free")
			}
		}
		if until, _ := coolOf(st, r, "a"); until.Sub(t0) != 5*time.Second {
			t.Fatalf("cools %v", until.Sub(t0))
		}
	})
	t.Run("R-FAIL-4 an isolated 5xx: tried as a last resort instead of failing the call", func(t *testing.T) {
		tb, r := onePool()
		st := NewStates()
		_, _ = tryFirst(t, tb, st, v(KindServerError, 500), t0)
		st.get(r.ID+"/b").cool(t0, t0.Add(time.Minute), time.Hour, KindRateLimited, "x")
		if m := firstPick(t, tb, st, chat("m"), 1); m.Name != "a" {
			t.Fatalf("picked %s", m.Name)
		}
	})
	t.Run("R-FAIL-4 a second 5xx in a row cools for real", func(t *testing.T) {
		tb, r := onePool()
		st := NewStates()
		_, _ = tryFirst(t, tb, st, v(KindServerError, 500), t0)
		st.get(r.ID + "/a").coolUntil = time.Time{} // its cooldown passed
		_, _ = tryFirst(t, tb, st, v(KindServerError, 503), t0)
		st.get(r.ID+"/b").cool(t0, t0.Add(time.Minute), time.Hour, KindRateLimited, "x")
		c := begin(t, tb, st, chat("m"), 1)
		if _, ok := c.Next(t0); ok {
			t.Fatal("a member cooling after two 5xx in a row was tried")
		}
		if f := c.Final(t0); f.Err == nil || f.Err.Code != CodePoolCooling {
			t.Fatalf("final %+v", f)
		}
	})
}
