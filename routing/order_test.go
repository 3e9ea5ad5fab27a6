package routing

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// firstPick starts a call and returns the member Next chooses first.
func firstPick(t *testing.T, tb *Table, st *States, req Request, seed uint64) *Member {
	t.Helper()
	c := begin(t, tb, st, req, seed)
	s, ok := c.Next(t0)
	if !ok {
		t.Fatal("no member")
	}
	return s.Member
}

func TestTiers(t *testing.T) {
	t.Parallel()
	r := rec("p", WireOpenAI, []string{"m"}, []*Member{mem("backup", order(2)), mem("a", order(1)), mem("b", order(1))})
	tb := table(DataRules{}, r)

	t.Run("R-ORDER-1 lowest tier first", func(t *testing.T) {
		for seed := uint64(0); seed < 50; seed++ {
			if m := firstPick(t, tb, NewStates(), chat("m"), seed); m.Name == "backup" {
				t.Fatalf("seed %d picked tier 2 first", seed)
			}
		}
	})
	t.Run("R-ORDER-1 next tier only when the tier before failed or cools", func(t *testing.T) {
		c := begin(t, tb, NewStates(), chat("m"), 3)
		tried, _ := drive(t, c, t0, map[string]answer{"a": rate429(), "b": v(KindServerError, 500)})
		if len(tried) != 3 || tried[2] != "backup" {
			t.Fatalf("tried %v", tried)
		}
		st := NewStates()
		st.get(r.ID + "/a").coolUntil = t0.Add(time.Minute)
		st.get(r.ID + "/b").coolUntil = t0.Add(time.Minute)
		if m := firstPick(t, tb, st, chat("m"), 1); m.Name != "backup" {
			t.Fatalf("picked %s while tier 1 cools", m.Name)
		}
	})
}

func TestHeadroomOnlyReorders(t *testing.T) {
	t.Parallel()
	// R-ORDER-2: a member whose known headroom is spent is tried after those
	// with headroom, never skipped.
	r := rec("p", WireOpenAI, []string{"m"}, []*Member{mem("full", weight(1)), mem("empty", weight(100))})
	tb := table(DataRules{}, r)
	st := NewStates()
	st.get(r.ID + "/empty").observe(&RateLimits{DimRequests: {Limit: 100, Remaining: 0, HasLimit: true, HasRemaining: true, Reset: t0.Add(time.Minute), HasReset: true}})
	for seed := uint64(0); seed < 30; seed++ {
		c := begin(t, tb, st, chat("m"), seed)
		tried, act := drive(t, c, t0, map[string]answer{"full": rate429()})
		if len(tried) != 2 || tried[0] != "full" || tried[1] != "empty" || act != ActDeliver {
			t.Fatalf("seed %d tried %v", seed, tried)
		}
		st.Reset(r.ID + "/full")
	}
}

func TestWeightedShares(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(st *States, r *Record)
		w     [2]uint32
		want  float64 // share of the first member
	}{
		{name: "R-ORDER-3 no headroom information: plain weighted random 3:1", w: [2]uint32{3, 1}, want: 0.75},
		{name: "R-ORDER-3 equal weights, headroom 90% vs 10%", w: [2]uint32{1, 1}, want: 0.9, setup: func(st *States, r *Record) {
			st.get(r.Members[0].ID).observe(&RateLimits{DimRequests: {Limit: 100, Remaining: 90, HasLimit: true, HasRemaining: true}})
			st.get(r.Members[1].ID).observe(&RateLimits{DimRequests: {Limit: 100, Remaining: 10, HasLimit: true, HasRemaining: true}})
		}},
		{name: "R-ORDER-3 a member at 10% is chosen less than one at 90% despite higher weight", w: [2]uint32{1, 3}, want: 0.75, setup: func(st *States, r *Record) {
			st.get(r.Members[0].ID).observe(&RateLimits{DimRequests: {Limit: 100, Remaining: 90, HasLimit: true, HasRemaining: true}})
			st.get(r.Members[1].ID).observe(&RateLimits{DimRequests: {Limit: 100, Remaining: 10, HasLimit: true, HasRemaining: true}})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := rec("p", WireOpenAI, []string{"m"}, []*Member{mem("a", weight(tc.w[0])), mem("b", weight(tc.w[1]))})
			tb := table(DataRules{}, r)
			st := NewStates()
			if tc.setup != nil {
				tc.setup(st, r)
			}
			const n = 20000
			rnd := newRand(42)
			first := 0
			for i := 0; i < n; i++ {
				c, err := tb.Begin(chat("m"), st, rnd, t0)
				if err != nil {
					t.Fatal(err)
				}
				s, _ := c.Next(t0) // not dispatched: headroom stays as set up
				if s.Member.Name == "a" {
					first++
				}
			}
			got := float64(first) / n
			if math.Abs(got-tc.want) > 0.015 {
				t.Fatalf("share of a = %.3f, want %.3f ± 0.015", got, tc.want)
			}
		})
	}
}

func TestSameAccountSkip(t *testing.T) {
	t.Parallel()
	// R-ORDER-4: one quota refusal skips the rest of that account for the
	// call; a skip is not an attempt.
	r := rec("p", WireOpenAI, []string{"m"}, []*Member{
		mem("a1", account("acct-a"), weight(100)), mem("a2", account("acct-a"), weight(100)), mem("b", account("acct-b"), weight(1)),
	})
	tb := table(DataRules{}, r)
	for seed := uint64(0); seed < 20; seed++ {
		c := begin(t, tb, NewStates(), chat("m"), seed)
		quota := answer{v: Verdict{Kind: KindQuotaSpent, Status: 429, AccountWide: true, Reason: "insufficient_quota"}}
		tried, act := drive(t, c, t0, map[string]answer{"a1": quota, "a2": quota})
		if act != ActDeliver || tried[len(tried)-1] != "b" || len(tried) != 2 {
			t.Fatalf("seed %d: tried %v, act %v", seed, tried, act)
		}
		if c.Sent() != 2 {
			t.Fatalf("sent %d, want 2 (the skip is not an attempt)", c.Sent())
		}
		skipped := 0
		for _, a := range c.Attempts {
			if a.Outcome == OutcomeSkipped && a.Reason == "same_account" {
				skipped++
			}
		}
		if skipped != 1 {
			t.Fatalf("recorded %d skips, want 1", skipped)
		}
	}
}

func TestSticky(t *testing.T) {
	t.Parallel()
	members := func() []*Member {
		return []*Member{mem("a", weight(1)), mem("b", weight(1)), mem("c", weight(1)), mem("d", weight(1))}
	}
	r := rec("p", WireOpenAI, []string{"m"}, members())
	tb := table(DataRules{}, r)

	t.Run("R-STICK-1 a job stays on the member that served its last call", func(t *testing.T) {
		for _, last := range []string{"a", "b", "c", "d"} {
			req := chat("m")
			req.JobID, req.LastMemberID = "job-1", r.ID+"/"+last
			for seed := uint64(0); seed < 10; seed++ {
				if m := firstPick(t, tb, NewStates(), req, seed); m.Name != last {
					t.Fatalf("picked %s, want %s", m.Name, last)
				}
			}
		}
	})
	t.Run("R-STICK-1 not while it has 5% or less headroom, nor while cooling", func(t *testing.T) {
		req := chat("m")
		req.JobID, req.LastMemberID = "job-1", r.ID+"/a"
		st := NewStates()
		st.get(r.ID + "/a").observe(&RateLimits{DimTokens: {Limit: 1000, Remaining: 50, HasLimit: true, HasRemaining: true}})
		if m := firstPick(t, tb, st, req, 1); m.Name == "a" {
			t.Fatal("stuck to a member at 5% headroom")
		}
		st = NewStates()
		st.get(r.ID + "/a").coolUntil = t0.Add(time.Second)
		if m := firstPick(t, tb, st, req, 1); m.Name == "a" {
			t.Fatal("stuck to a cooling member")
		}
	})
	t.Run("R-STICK-2 job id precedence", func(t *testing.T) {
		cases := [][4]string{
			{"j", "c", "k", "j"}, {"", "c", "k", "c"}, {"", "", "k", "k"}, {"", "", "", ""},
		}
		for _, x := range cases {
			if got := JobID(x[0], x[1], x[2]); got != x[3] {
				t.Fatalf("JobID(%q,%q,%q) = %q, want %q", x[0], x[1], x[2], got, x[3])
			}
		}
		if JobHash("t1", "j") == JobHash("t2", "j") || len(JobHash("t1", "j")) != 32 {
			t.Fatal("job hash must be per tenant and 32 hex chars")
		}
	})
	t.Run("R-STICK-3 two independent edges pick the same member for a job", func(t *testing.T) {
		r2 := rec("p", WireOpenAI, []string{"m"}, members())
		r2.ID = r.ID
		for i, m := range r2.Members {
			m.ID = r.ID + "/" + m.Name
			_ = i
		}
		other := table(DataRules{}, r2)
		for j := 0; j < 200; j++ {
			req := chat("m")
			req.JobID = fmt.Sprintf("job-%d", j)
			a := firstPick(t, tb, NewStates(), req, uint64(j))
			b := firstPick(t, other, NewStates(), req, uint64(j)*7+3)
			if a.Name != b.Name {
				t.Fatalf("job %s: edge 1 picked %s, edge 2 %s", req.JobID, a.Name, b.Name)
			}
		}
	})
}

func TestRendezvousStabilityAndShares(t *testing.T) {
	t.Parallel()
	mk := func(ws map[string]uint32, order []string) []*Member {
		var ms []*Member
		for _, n := range order {
			ms = append(ms, &Member{Name: n, Weight: ws[n]})
		}
		return ms
	}
	ws := map[string]uint32{"a": 1, "b": 2, "c": 1, "d": 4}
	all := mk(ws, []string{"a", "b", "c", "d"})
	without := mk(ws, []string{"a", "b", "d"})
	const n = 40000
	counts := map[string]int{}
	for i := 0; i < n; i++ {
		job := fmt.Sprintf("job-%d", i)
		before := Rendezvous(job, all).Name
		after := Rendezvous(job, without).Name
		counts[before]++
		// R-STICK-3: removing c moves only the jobs that were on c.
		if before != "c" && after != before {
			t.Fatalf("%s moved from %s to %s when c was removed", job, before, after)
		}
		// Adding c back moves jobs only onto c.
		if back := Rendezvous(job, all).Name; back != before {
			t.Fatalf("%s: not stable", job)
		}
	}
	// R-STICK-3: shares follow the weights (1:2:1:4 of 8).
	for name, w := range ws {
		got := float64(counts[name]) / n
		want := float64(w) / 8
		if math.Abs(got-want) > 0.015 {
			t.Errorf("share of %s = %.3f, want %.3f", name, got, want)
		}
	}
}

func TestRendezvousFixedHash(t *testing.T) {
	t.Parallel()
	// R-STICK-3: the hash is fixed for every edge of every version. These
	// values pin SHA-256-based scores; a change here breaks job affinity
	// across a rolling upgrade.
	got := fmt.Sprintf("%.6f %.6f", RendezvousScore("job-1", "sweden", 1), RendezvousScore("job-1", "france", 2))
	want := "3.672021 1.144866"
	if got != want {
		t.Fatalf("scores %s, want %s", got, want)
	}
}
