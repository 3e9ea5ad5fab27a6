package routing

import (
	"math"
	"testing"
	"time"
)

func TestHeadroom(t *testing.T) {
	t.Parallel()
	r := rec("p", WireOpenAI, []string{"m"}, []*Member{mem("a", limits(Limits{RPM: 10, InputTPM: 10000, OutputTPM: 5000}))})
	m := r.Members[0]

	t.Run("R-HEAD-1 limit, remaining and reset per dimension", func(t *testing.T) {
		st := NewStates()
		reset := t0.Add(30 * time.Second)
		st.get(m.ID).observe(&RateLimits{DimTokens: {Limit: 1000, Remaining: 400, Reset: reset, HasLimit: true, HasRemaining: true, HasReset: true}})
		v := st.View(m, t0)
		var tok *DimView
		for i := range v.Dims {
			if v.Dims[i].Dim == DimTokens {
				tok = &v.Dims[i]
			}
		}
		if tok == nil || tok.Limit != 1000 || tok.Remaining != 400 || !tok.Reset.Equal(reset) || !tok.FromHeaders {
			t.Fatalf("tokens dimension %+v", tok)
		}
	})
	t.Run("R-HEAD-2 declared limits against the rolling minute", func(t *testing.T) {
		st := NewStates()
		for i := 0; i < 5; i++ {
			st.get(m.ID).dispatch(t0.Add(time.Duration(i)*time.Second), 100)
		}
		if h := st.View(m, t0.Add(5*time.Second)).Headroom; math.Abs(h-0.5) > 1e-9 {
			t.Fatalf("headroom %.3f after 5 of 10 rpm, want 0.5", h)
		}
		// A minute later the window has forgotten them.
		if h := st.View(m, t0.Add(65*time.Second)).Headroom; h != 1 {
			t.Fatalf("headroom %.3f a minute later, want 1", h)
		}
	})
	t.Run("R-HEAD-2 headers come before declared limits", func(t *testing.T) {
		st := NewStates()
		st.get(m.ID).dispatch(t0, 0) // 9 of 10 rpm left by declared count
		st.get(m.ID).observe(&RateLimits{DimRequests: {Limit: 100, Remaining: 20, HasLimit: true, HasRemaining: true}})
		if h := st.View(m, t0).Headroom; math.Abs(h-0.2) > 1e-9 {
			t.Fatalf("headroom %.3f, want 0.2 from headers", h)
		}
	})
	t.Run("R-HEAD-2 a reading whose reset passed counts as refilled", func(t *testing.T) {
		st := NewStates()
		st.get(m.ID).observe(&RateLimits{DimTokens: {Limit: 1000, Remaining: 0, Reset: t0.Add(time.Second), HasLimit: true, HasRemaining: true, HasReset: true}})
		if h := st.View(m, t0).Headroom; h != 0 {
			t.Fatalf("headroom %.3f before reset", h)
		}
		if h := st.View(m, t0.Add(2*time.Second)).Headroom; h != 1 {
			t.Fatalf("headroom %.3f after reset", h)
		}
	})
	t.Run("R-HEAD-3 dispatch subtracts at once, the answer overwrites", func(t *testing.T) {
		st := NewStates()
		ms := st.get(m.ID)
		ms.observe(&RateLimits{
			DimRequests:    {Limit: 100, Remaining: 50, HasLimit: true, HasRemaining: true},
			DimInputTokens: {Limit: 10000, Remaining: 5000, HasLimit: true, HasRemaining: true},
		})
		ms.dispatch(t0, 1000)
		ms.dispatch(t0, 1000)
		if ms.hdr[DimRequests].remaining != 48 || ms.hdr[DimInputTokens].remaining != 3000 || ms.inFlight != 2 {
			t.Fatalf("after two dispatches: %+v in flight %d", ms.hdr, ms.inFlight)
		}
		ms.observe(&RateLimits{DimRequests: {Limit: 100, Remaining: 70, HasLimit: true, HasRemaining: true}})
		if ms.hdr[DimRequests].remaining != 70 {
			t.Fatalf("answer did not overwrite: %d", ms.hdr[DimRequests].remaining)
		}
	})
	t.Run("R-HEAD-3 concurrent calls spread instead of piling on", func(t *testing.T) {
		rr := rec("q", WireOpenAI, []string{"m"}, []*Member{mem("a"), mem("b")})
		tb := table(DataRules{}, rr)
		st := NewStates()
		for _, x := range rr.Members {
			st.get(x.ID).observe(&RateLimits{DimRequests: {Limit: 10, Remaining: 10, HasLimit: true, HasRemaining: true}})
		}
		counts := map[string]int{}
		rnd := newRand(7)
		for i := 0; i < 16; i++ { // 16 calls before any answer returns
			c, _ := tb.Begin(chat("m"), st, rnd, t0)
			s, _ := c.Next(t0)
			c.Dispatch(t0)
			counts[s.Member.Name]++
		}
		if counts["a"] < 6 || counts["b"] < 6 {
			t.Fatalf("calls piled up: %v", counts)
		}
	})
	t.Run("R-HEAD-4 smallest remaining/limit; none known is 1", func(t *testing.T) {
		st := NewStates()
		bare := rec("bare", WireOpenAI, []string{"m"}, []*Member{mem("x")}).Members[0]
		if h := st.View(bare, t0).Headroom; h != 1 {
			t.Fatalf("headroom with nothing known %.3f", h)
		}
		st.get(bare.ID).observe(&RateLimits{
			DimRequests: {Limit: 100, Remaining: 80, HasLimit: true, HasRemaining: true},
			DimTokens:   {Limit: 1000, Remaining: 300, HasLimit: true, HasRemaining: true},
		})
		if h := st.View(bare, t0).Headroom; math.Abs(h-0.3) > 1e-9 {
			t.Fatalf("headroom %.3f, want 0.3", h)
		}
	})
	t.Run("R-HEAD-5 edges learn independently", func(t *testing.T) {
		edge1, edge2 := NewStates(), NewStates()
		edge1.get(m.ID).observe(&RateLimits{DimRequests: {Limit: 100, Remaining: 1, HasLimit: true, HasRemaining: true}})
		if a, b := edge1.View(m, t0).Headroom, edge2.View(m, t0).Headroom; a == b {
			t.Fatalf("edge 2 learned from edge 1's answer: %v %v", a, b)
		}
	})
}
