package routing

import (
	"math"
	"testing"
)

func TestMoney(t *testing.T) {
	t.Parallel()
	// Prices in micro-dollars per million tokens.
	cheap := mem("cheap", price(1_000_000, 4_000_000, 100_000, 1_250_000, "m")) // $1 / $4
	dear := mem("dear", price(2_750_000, 11_000_000, 275_000, 3_437_500, "m"))  // $2.75 / $11
	r := rec("p", WireOpenAI, []string{"m"}, []*Member{cheap, dear}, func(r *Record) { r.DefaultMaxOutput = 1000 })

	t.Run("R-COST-1 reservation at the highest price, with the output cap", func(t *testing.T) {
		// 2000 in × $2.75/M + 500 out × $11/M = 0.0055 + 0.0055 = $0.011
		if got := Reservation(r.Members, "m", 2000, 500); got != 11_000_000 {
			t.Fatalf("reservation %d nanos, want 11000000", got)
		}
		// no request cap: the record's default_max_output (1000)
		if got := Reservation(r.Members, "m", 0, 0); got != 11_000_000 {
			t.Fatalf("reservation %d nanos, want 11000000", got)
		}
		if OutputCap(0, &Record{}) != 4096 || OutputCap(7, r) != 7 || OutputCap(0, r) != 1000 {
			t.Fatal("output cap")
		}
	})
	t.Run("R-COST-1 a budget that cannot cover the reservation refuses with 402", func(t *testing.T) {
		l := Ledger{Available: 10_000_000}
		if err := l.Reserve(11_000_000); err == nil || err.Status != 402 || err.Code != CodeBudgetExceeded {
			t.Fatalf("got %v", err)
		}
		if err := l.Reserve(6_000_000); err != nil {
			t.Fatal(err)
		}
		if err := l.Reserve(6_000_000); err == nil {
			t.Fatal("second reservation over the limit accepted")
		}
	})
	t.Run("R-COST-2 settlement at the serving member's price, counted once", func(t *testing.T) {
		u := Usage{InputTokens: 1000, OutputTokens: 200, CacheReadTokens: 5000, CacheWriteTokens: 100}
		// cheap: 1000×1 + 200×4 + 5000×0.1 + 100×1.25 = 1000+800+500+125 = 2425 micro-dollars
		if got := Settlement(cheap, "m", u); got != 2_425_000 {
			t.Fatalf("cheap %d", got)
		}
		l := Ledger{Available: 100_000_000}
		res := Reservation(r.Members, "m", 1000, 200)
		if err := l.Reserve(res); err != nil {
			t.Fatal(err)
		}
		l.Settle(res, Settlement(cheap, "m", u))
		if l.Reserved != 0 || l.Spent != 2_425_000 || l.Available != 100_000_000-2_425_000 {
			t.Fatalf("ledger %+v", l)
		}
	})
	t.Run("R-COST-3 refusals cost nothing; timeouts and unknown outcomes an estimated input cost", func(t *testing.T) {
		if c, est := AttemptCost(dear, "m", KindRateLimited, 1000); c != 0 || est {
			t.Fatalf("429 costs %d", c)
		}
		if c, est := AttemptCost(dear, "m", KindTimeout, 1000); c != 2_750_000 || !est {
			t.Fatalf("timeout costs %d %v", c, est)
		}
		if c, est := AttemptCost(dear, "m", KindUnknownOutcome, 1000); c != 2_750_000 || !est {
			t.Fatalf("unknown outcome costs %d %v", c, est)
		}
	})
	t.Run("R-COST-4 prices are per million tokens in four parts", func(t *testing.T) {
		p := Price{Input: 3_000_000, Output: 15_000_000, CacheRead: 300_000, CacheWrite: 3_750_000}
		if got := Cost(p, Usage{InputTokens: 1_000_000}); got != 3_000_000_000 {
			t.Fatalf("1M input at $3/M = %d nanos", got)
		}
		if got := Cost(p, Usage{CacheWriteTokens: 1_000_000}); got != 3_750_000_000 {
			t.Fatalf("cache write %d", got)
		}
	})
	t.Run("R-COST-5 exact integers, rounded up once per call", func(t *testing.T) {
		p := Price{Input: 1, Output: 1} // $0.000001 per million tokens
		// 1 token + 1 token = 2 pico-dollars → rounds up to 1 nano-dollar once,
		// not once per part.
		if got := Cost(p, Usage{InputTokens: 1, OutputTokens: 1}); got != 1 {
			t.Fatalf("got %d, want 1", got)
		}
		if got := Cost(p, Usage{InputTokens: 1000}); got != 1 {
			t.Fatalf("1000 picos = %d nanos, want 1", got)
		}
		if got := Cost(p, Usage{InputTokens: 1001}); got != 2 {
			t.Fatalf("1001 picos = %d nanos, want 2", got)
		}
		// No overflow for huge usage: saturates.
		big := Price{Input: math.MaxInt64}
		if got := Cost(big, Usage{InputTokens: math.MaxInt64}); got != math.MaxInt64 {
			t.Fatalf("saturation %d", got)
		}
		for n, want := range map[Nanos]string{0: "0.00", 1: "0.000000001", 1_500_000_000: "1.50", 11_000_000: "0.011", -2_000_000_000: "-2.00"} {
			if got := n.String(); got != want {
				t.Errorf("%d → %q, want %q", n, got, want)
			}
		}
	})
	t.Run("R-SEE-3 cache miss cost", func(t *testing.T) {
		// 10000 cached tokens × ($2.75 − $0.275)/M = $0.02475
		if got := CacheMissCost(dear, "m", 10000); got != 24_750_000 {
			t.Fatalf("miss cost %d", got)
		}
	})
}

func FuzzCost(f *testing.F) {
	f.Add(int64(1000), int64(10), int64(5), int64(0), int64(3_000_000), int64(15_000_000))
	f.Fuzz(func(t *testing.T, in, out, cr, cw, pin, pout int64) {
		p := Price{Input: Micros(pin), Output: Micros(pout), CacheRead: Micros(pin / 10), CacheWrite: Micros(pin)}
		u := Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: cr, CacheWriteTokens: cw}
		c := Cost(p, u)
		if c < 0 {
			t.Fatalf("negative cost %d", c)
		}
		// Monotone: more input never costs less.
		if in >= 0 && in < math.MaxInt64 {
			u2 := u
			u2.InputTokens++
			if Cost(p, u2) < c {
				t.Fatal("cost decreased with more tokens")
			}
		}
	})
}
