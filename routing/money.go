package routing

import (
	"fmt"
	"math/bits"
)

// Micros is a price: micro-dollars (1e-6 USD) per million tokens (R-COST-4).
type Micros int64

// Nanos is an amount of money: nano-dollars (1e-9 USD) (R-COST-5).
type Nanos int64

// String formats an amount as decimal dollars with nine decimals trimmed of
// trailing zeros (at least two), e.g. "0.0125", "3.00".
func (n Nanos) String() string {
	neg := n < 0
	u := uint64(n)
	if neg {
		u = uint64(-n)
	}
	whole, frac := u/1e9, u%1e9
	s := fmt.Sprintf("%d.%09d", whole, frac)
	for len(s) > 0 && s[len(s)-1] == '0' && s[len(s)-3] != '.' {
		s = s[:len(s)-1]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// Usage is what a provider reported for a call.
type Usage struct {
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64
}

// picos multiplies tokens by a price in micro-dollars per million tokens,
// giving pico-dollars (1e-12 USD) exactly, as a 128-bit sum.
type picos struct{ hi, lo uint64 }

func (p *picos) add(tokens int64, price Micros) {
	if tokens <= 0 || price <= 0 {
		return
	}
	hi, lo := bits.Mul64(uint64(tokens), uint64(price))
	var c uint64
	p.lo, c = bits.Add64(p.lo, lo, 0)
	p.hi, _ = bits.Add64(p.hi, hi, c)
}

// nanos rounds the exact pico-dollar sum UP to whole nano-dollars, saturating
// at the largest Nanos. This is Weir's one rounding rule (R-COST-5): every
// cost is summed exactly per call and rounded up once, so no call is ever
// charged less than it cost and the error is below one nano-dollar per call.
func (p picos) nanos() Nanos {
	if p.hi >= 1000 {
		return Nanos(1<<63 - 1)
	}
	q, r := bits.Div64(p.hi, p.lo, 1000)
	if r != 0 {
		q++
	}
	if q > 1<<63-1 {
		return Nanos(1<<63 - 1)
	}
	return Nanos(q)
}

// Cost is the price of usage at price p, rounded up to nano-dollars once
// (R-COST-2, R-COST-5). Cache tokens are charged at their own prices; an unset
// cache price charges them nothing, which is why R-COST-4 demands whole
// prices where a record has none.
func Cost(p Price, u Usage) Nanos {
	var s picos
	s.add(u.InputTokens, p.Input)
	s.add(u.OutputTokens, p.Output)
	s.add(u.CacheReadTokens, p.CacheRead)
	s.add(u.CacheWriteTokens, p.CacheWrite)
	return s.nanos()
}

// OutputCap is the output tokens a reservation assumes (R-COST-1): the
// request's own cap, else the record's default_max_output, else 4096.
func OutputCap(reqMax int64, r *Record) int64 {
	if reqMax > 0 {
		return reqMax
	}
	if r != nil && r.DefaultMaxOutput > 0 {
		return r.DefaultMaxOutput
	}
	return DefaultMaxOutput
}

// Reservation is what a call reserves against every budget that applies
// before a member is chosen (R-COST-1): input estimate × input price + output
// cap × output price at the highest such price of any member the call may go
// to. A member with no price for the model reserves nothing.
func Reservation(members []*Member, model string, inputTokens, reqMaxOutput int64) Nanos {
	var best Nanos
	for _, m := range members {
		p, ok := m.Prices[model]
		if !ok {
			continue
		}
		c := Cost(p, Usage{InputTokens: inputTokens, OutputTokens: OutputCap(reqMaxOutput, m.Record)})
		if c > best {
			best = c
		}
	}
	return best
}

// Settlement is what a served call costs (R-COST-2): the usage the provider
// reported at the price of the member that served it.
func Settlement(m *Member, model string, u Usage) Nanos {
	return Cost(m.Prices[model], u)
}

// AttemptCost is what a failed attempt costs (R-COST-3): nothing for a
// refusal; the estimated input cost, flagged as estimated, for an attempt
// abandoned by timeout or with an unknown outcome (R-FAIL-7, R-FAIL-9).
func AttemptCost(m *Member, model string, k FailureKind, inputTokens int64) (cost Nanos, estimated bool) {
	switch k {
	case KindTimeout, KindUnknownOutcome:
		return Cost(m.Prices[model], Usage{InputTokens: inputTokens}), true
	}
	return 0, false
}

// CacheMissCost is the estimated cost of a prompt-cache miss when a job moves
// to another member (R-SEE-3): the last call's cached input tokens × (input
// price − cache-read price) of the member now serving. Never negative.
func CacheMissCost(m *Member, model string, cachedTokens int64) Nanos {
	p := m.Prices[model]
	diff := p.Input - p.CacheRead
	if diff <= 0 || cachedTokens <= 0 {
		return 0
	}
	return Cost(Price{Input: diff, HasInput: true}, Usage{InputTokens: cachedTokens})
}

// Ledger is one budget's account at an edge: what it may still spend (its
// lease), what calls in flight have reserved, and what settled calls spent.
// It is not safe for concurrent use; the edge guards it.
type Ledger struct {
	Available Nanos
	Reserved  Nanos
	Spent     Nanos
}

// Reserve takes amount out of what is available, or refuses with 402
// weir_budget_exceeded when the budget cannot cover it (R-COST-1).
func (l *Ledger) Reserve(amount Nanos) *Error {
	if amount < 0 {
		amount = 0
	}
	if l.Available-l.Reserved < amount {
		return newError(402, CodeBudgetExceeded, "the budget cannot cover this call's reservation of $"+amount.String())
	}
	l.Reserved += amount
	return nil
}

// Settle replaces a reservation by the call's actual cost (R-COST-2): the
// reservation is released and the cost is spent once, even when it exceeds
// the reservation (the provider's count wins; overspend is bounded by the
// reservation rule and the lease).
func (l *Ledger) Settle(reserved, cost Nanos) {
	l.Reserved -= reserved
	if l.Reserved < 0 {
		l.Reserved = 0
	}
	l.Spent += cost
	l.Available -= cost
}
