package sim

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"weir.dev/routing"
)

// beatSeeds are the fixed seeds the comparison is asserted for; seed 1 is
// the one `make sim` prints.
var beatSeeds = []uint64{1, 2, 3, 4, 5, 6, 7, 8}

// TestWeirBeatsBaselines asserts issue 3's claim for every scenario whose
// pool can carry its demand: Weir's caller-visible failures (429s plus
// failed calls) are fewer than each baseline's (or both are zero), and its
// cache affinity is higher.
func TestWeirBeatsBaselines(t *testing.T) {
	t.Parallel()
	for _, sc := range Scenarios() {
		if sc.Demand > 1 || sc.Shared != nil {
			continue
		}
		for _, seed := range beatSeeds {
			t.Run(fmt.Sprintf("%s/seed=%d", sc.ID, seed), func(t *testing.T) {
				t.Parallel()
				res, err := Run(context.Background(), sc, Config{Seed: seed, Duration: 10 * time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				weir := res.Policies[0]
				if weir.Policy != PolicyWeir {
					t.Fatalf("first policy is %q, want %q", weir.Policy, PolicyWeir)
				}
				for _, b := range res.Policies[1:] {
					wf, bf := weir.CallerFailures(), b.CallerFailures()
					if wf > bf || (bf > 0 && wf >= bf) {
						t.Errorf("caller-visible failures: weir %d (%d 429s, %d failed) vs %s %d (%d 429s, %d failed); want fewer",
							wf, weir.Caller429, weir.Failed, b.Policy, bf, b.Caller429, b.Failed)
					}
					if weir.Affinity() <= b.Affinity() {
						t.Errorf("cache affinity: weir %.3f vs %s %.3f; want higher", weir.Affinity(), b.Policy, b.Affinity())
					}
				}
				if t.Failed() {
					var buf bytes.Buffer
					_ = res.WriteMarkdown(&buf)
					t.Log("\n" + buf.String())
				}
			})
		}
	}
}

// TestDeterministic: the same seed prints the same table, another seed
// another one.
func TestDeterministic(t *testing.T) {
	t.Parallel()
	sc := Scenarios()[1]
	table := func(seed uint64) string {
		res, err := Run(context.Background(), sc, Config{Seed: seed, Duration: 3 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := res.WriteMarkdown(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	a, b := table(42), table(42)
	if a != b {
		t.Fatalf("same seed, different tables:\n%s\n%s", a, b)
	}
	if c := table(43); c == a {
		t.Fatalf("seeds 42 and 43 printed the same table:\n%s", a)
	}
}

// TestEveryTurnIsACall: every policy sends every turn of the workload
// exactly once and accounts for every call.
func TestEveryTurnIsACall(t *testing.T) {
	t.Parallel()
	for _, sc := range Scenarios() {
		if sc.Shared != nil {
			continue // TestTwoEdgesShared
		}
		t.Run(sc.ID, func(t *testing.T) {
			t.Parallel()
			res, err := Run(context.Background(), sc, Config{Seed: 9, Duration: 2 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Policies) != 3 {
				t.Fatalf("%d policies, want 3", len(res.Policies))
			}
			for _, s := range res.Policies {
				if s.Calls != res.Turns {
					t.Errorf("%s: %d calls, want %d turns", s.Policy, s.Calls, res.Turns)
				}
				if s.Attempts > s.Calls*routing.DefaultMaxAttempts {
					t.Errorf("%s: %d attempts for %d calls", s.Policy, s.Attempts, s.Calls)
				}
				if s.SameMember > s.LaterTurns || s.Cost <= 0 {
					t.Errorf("%s: affinity %d/%d, cost %v", s.Policy, s.SameMember, s.LaterTurns, s.Cost)
				}
			}
		})
	}
}

func TestRunCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, Scenarios()[0], DefaultConfig()); err == nil {
		t.Fatal("a cancelled run returned no error")
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, 59 * time.Second, 25 * time.Hour} {
		if err := (Config{Seed: 1, Duration: d}).Validate(); err == nil {
			t.Errorf("duration %v: no error", d)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("default config: %v", err)
	}
}

// TestWorkload: the same seed draws the same jobs; their tokens reach the
// demand over the duration (overshooting by less than one job); turns grow
// by the previous turn's output, so each prompt starts with the previous
// turn whole.
func TestWorkload(t *testing.T) {
	t.Parallel()
	const perMin, d = 500_000.0, 5 * time.Minute
	a, b := NewWorkload(3, perMin, d), NewWorkload(3, perMin, d)
	if len(a) != len(b) {
		t.Fatalf("same seed: %d and %d jobs", len(a), len(b))
	}
	var total int64
	for i, j := range a {
		if j.ID != b[i].ID || j.Start != b[i].Start || len(j.Turns) != len(b[i].Turns) {
			t.Fatalf("same seed, job %d differs", i)
		}
		if j.Start < 0 || j.Start >= d || (i > 0 && j.Start < a[i-1].Start) {
			t.Fatalf("job %d starts at %v", i, j.Start)
		}
		if n := len(j.Turns); n < minTurns || n > maxTurns {
			t.Fatalf("job %d has %d turns", i, n)
		}
		for k := 1; k < len(j.Turns); k++ {
			prev, cur := j.Turns[k-1], j.Turns[k]
			if grow := cur.Prompt - prev.Prompt - prev.Output; grow < minUserTokens || grow > maxUserTokens {
				t.Fatalf("job %d turn %d grows by %d new tokens", i, k, grow)
			}
		}
		total += j.Tokens()
	}
	target := int64(perMin * d.Minutes())
	if last := a[len(a)-1].Tokens(); total < target || total-last >= target {
		t.Fatalf("workload has %d tokens for a target of %d", total, target)
	}
}

// TestTable: the table is built from routing types as the core expects.
func TestTable(t *testing.T) {
	t.Parallel()
	sc := Scenarios()[1]
	tab := sc.Table()
	if len(tab.Records) != 1 {
		t.Fatalf("%d records", len(tab.Records))
	}
	rec := tab.Records[0]
	if !rec.Pool || rec.Wire != sc.Wire || rec.Models[Model] != routing.KindChat || rec.Recovery != routing.DefaultRecovery() {
		t.Fatalf("record %+v", rec)
	}
	for i, m := range rec.Members {
		spec := sc.Members[i]
		if m.Record != rec || m.ID != recordID+"/"+spec.Name || tab.Member(m.ID) != m || m.Weight != spec.Weight || m.Order != 1 || m.Account == "" {
			t.Errorf("member %d: %+v", i, m)
		}
		if !m.Serves(Model) || !rec.Priced(Model) {
			t.Errorf("member %s does not serve or price %s", m.Name, Model)
		}
	}
	call, err := tab.Begin(routing.Request{Endpoint: sc.endpoint(), Model: Model, JobID: "j", InputTokens: 10}, routing.NewStates(), fixedRand(0.5), epoch())
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if got := len(call.Members()); got != len(sc.Members) {
		t.Fatalf("call may go to %d members, want %d", got, len(sc.Members))
	}
}

type fixedRand float64

func (f fixedRand) Float64() float64 { return float64(f) }

// TestMembersAnswerLikeProviders runs simulated members' answers through
// the core's own parsers: rate-limit headers, retry-after in each style,
// quota refusals, server errors, and cache reads on a job's next turn.
func TestMembersAnswerLikeProviders(t *testing.T) {
	t.Parallel()
	now := epoch()
	spec := MemberSpec{Name: "m", RPM: 60, TPM: 100_000, Weight: 1}
	for _, tc := range []struct {
		wire  routing.WireFormat
		style RetryStyle
	}{
		{routing.WireOpenAI, RetrySeconds}, {routing.WireOpenAI, RetryMillis}, {routing.WireOpenAI, RetryNone},
		{routing.WireAnthropic, RetrySeconds}, {routing.WireAnthropic, RetryNone},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.wire, tc.style), func(t *testing.T) {
			spec := spec
			spec.Retry = tc.style
			p := newProvider(spec, tc.wire, 0, 1, 0, now)
			// A served answer reports what is left.
			a := p.handle(request{job: "j", prompt: 30_000, output: 10_000}, now)
			if a.status != 200 || a.usage.CacheReadTokens != 0 {
				t.Fatalf("first turn: %d %+v", a.status, a.usage)
			}
			if v := routing.ClassifyWith(tc.wire, a.status, a.header, a.body, nil, now); v.Kind != routing.KindAnswered {
				t.Fatalf("served answer classified %v", v.Kind)
			}
			rl := routing.ParseRateLimits(a.header, nil, now)
			tok, req := rl[routing.DimTokens], rl[routing.DimRequests]
			if !tok.HasLimit || tok.Limit != 100_000 || !tok.HasRemaining || tok.Remaining != 60_000 || !tok.HasReset || !tok.Reset.After(now) {
				t.Fatalf("tokens reading %+v", tok)
			}
			if !req.HasLimit || req.Limit != 60 || req.Remaining != 59 {
				t.Fatalf("requests reading %+v", req)
			}
			// The job's next turn reads its prefix from the cache.
			b := p.handle(request{job: "j", prompt: 41_000, output: 10_000}, now.Add(time.Second))
			if b.status != 200 || b.usage.CacheReadTokens != 40_000 {
				t.Fatalf("second turn: %d %+v", b.status, b.usage)
			}
			// The bucket is down to ~10k tokens: a 429 naming the wait.
			c := p.handle(request{job: "k", prompt: 30_000, output: 1_000}, now.Add(time.Second))
			if c.status != 429 {
				t.Fatalf("over the limit: status %d", c.status)
			}
			v := routing.ClassifyWith(tc.wire, c.status, c.header, c.body, nil, now.Add(time.Second))
			if v.Kind != routing.KindRateLimited {
				t.Fatalf("429 classified %v (%s)", v.Kind, v.Reason)
			}
			if got := !v.Until.IsZero(); got != (tc.style != RetryNone) {
				t.Fatalf("style %d: Until %v", tc.style, v.Until)
			}
			if !v.Until.IsZero() {
				// ~21k tokens short at 100k/min: ~12.6 s.
				wait := v.Until.Sub(now.Add(time.Second))
				if wait < 12*time.Second || wait > 14*time.Second {
					t.Fatalf("429 names a wait of %v", wait)
				}
			}
		})
	}
	t.Run("spent", func(t *testing.T) {
		spec := spec
		spec.SpentAfter = time.Minute
		p := newProvider(spec, routing.WireOpenAI, 0, 1, 0, now)
		if a := p.handle(request{job: "j", prompt: 10, output: 10}, now); a.status != 200 {
			t.Fatalf("before running out: %d", a.status)
		}
		a := p.handle(request{job: "j", prompt: 10, output: 10}, now.Add(time.Minute))
		v := routing.ClassifyWith(routing.WireOpenAI, a.status, a.header, a.body, nil, now)
		if a.status != 429 || v.Kind != routing.KindQuotaSpent || !v.AccountWide {
			t.Fatalf("spent member: %d %+v", a.status, v)
		}
	})
	t.Run("server errors", func(t *testing.T) {
		for _, w := range []routing.WireFormat{routing.WireOpenAI, routing.WireAnthropic} {
			p := newProvider(spec, w, 1, 1, 0, now)
			for range 10 {
				a := p.handle(request{job: "j", prompt: 10, output: 10}, now)
				v := routing.ClassifyWith(w, a.status, a.header, a.body, nil, now)
				if a.status < 500 || a.status == 502 || a.status == 504 || v.Kind != routing.KindServerError {
					t.Fatalf("%s: %d classified %v", w, a.status, v.Kind)
				}
			}
		}
	})
}

func TestDollars(t *testing.T) {
	t.Parallel()
	for n, want := range map[routing.Nanos]string{0: "0.0000", 49_999: "0.0000", 50_000: "0.0001", 1_234_567_890: "1.2346", 12_000_000_000: "12.0000"} {
		if got := dollars(n); got != want {
			t.Errorf("dollars(%d) = %s, want %s", n, got, want)
		}
	}
}

// R-HEAD-7, R-CAP-1: two edges sharing one member. Counting against its
// share (limit ÷ live edges), the member never gets more than its declared
// rpm in any 60 s nor more than its max_in_flight at once; each edge
// counting against the whole limit sends it up to about twice both.
func TestTwoEdgesShared_RHEAD7(t *testing.T) {
	t.Parallel()
	var sc Scenario
	for _, s := range Scenarios() {
		if s.ID == "two-edges-shared" {
			sc = s
		}
	}
	if sc.Shared == nil {
		t.Fatal("no two-edges-shared scenario")
	}
	sp := sc.Shared
	for _, seed := range []uint64{1, 2, 3, 4} {
		res, err := Run(context.Background(), sc, Config{Seed: seed, Duration: 5 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Shared) != 2 || res.Shared[0].Policy != CountingShare || res.Shared[1].Policy != CountingPerEdge {
			t.Fatalf("policies %+v", res.Shared)
		}
		share, perEdge := res.Shared[0], res.Shared[1]
		if share.Calls != perEdge.Calls || share.Calls == 0 {
			t.Fatalf("seed %d: %d and %d calls", seed, share.Calls, perEdge.Calls)
		}
		if share.PeakRPM > sp.RPM || share.PeakInFlight > sp.MaxInFlight {
			t.Errorf("seed %d: share counting sent %d/min and %d at once, declared %d and %d", seed, share.PeakRPM, share.PeakInFlight, sp.RPM, sp.MaxInFlight)
		}
		// The demand is well above the limits: the share is used.
		if share.PeakRPM < sp.RPM*9/10 || share.PeakInFlight < sp.MaxInFlight-1 {
			t.Errorf("seed %d: share counting used only %d/min and %d at once", seed, share.PeakRPM, share.PeakInFlight)
		}
		if perEdge.PeakRPM < sp.RPM*3/2 || perEdge.PeakInFlight <= sp.MaxInFlight || perEdge.PeakRPM > 2*sp.RPM || perEdge.PeakInFlight > 2*sp.MaxInFlight {
			t.Errorf("seed %d: per-edge counting sent %d/min and %d at once; want up to about twice %d and %d", seed, perEdge.PeakRPM, perEdge.PeakInFlight, sp.RPM, sp.MaxInFlight)
		}
		var b strings.Builder
		if err := res.WriteMarkdown(&b); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"### Two edges sharing", "| " + CountingShare + " |", "| " + CountingPerEdge + " |", "declared max_in_flight"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("table lacks %q:\n%s", want, b.String())
			}
		}
	}
}

func TestPeakPerMinute(t *testing.T) {
	t.Parallel()
	at := func(secs ...float64) []time.Time {
		var out []time.Time
		for _, s := range secs {
			out = append(out, epoch().Add(time.Duration(s*float64(time.Second))))
		}
		return out
	}
	for _, tc := range []struct {
		ts   []time.Time
		want int64
	}{
		{nil, 0},
		{at(0), 1},
		{at(0, 59.9, 60), 2},   // 0 and 60 are a whole minute apart
		{at(30, 0, 59, 10), 4}, // unsorted
		{at(0, 1, 61, 62, 63), 3},
	} {
		if got := peakPerMinute(tc.ts); got != tc.want {
			t.Errorf("peakPerMinute(%v) = %d, want %d", tc.ts, got, tc.want)
		}
	}
}
