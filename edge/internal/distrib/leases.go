package distrib

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"weir.dev/routing"
)

// CodeBudgetUnavailable answers a call (503, retryable) that no lease of a
// budget can cover while no more can be had: the control plane did not
// answer, as opposed to answering that the budget is spent (402
// weir_budget_exceeded).
const CodeBudgetUnavailable = "weir_budget_unavailable"

// Leases implements gateway.Budgets across edges (R-COST-1, R-COST-2,
// DESIGN.md §1.5) with the control plane's leases: each grant is a lease of
// its own (an id, an amount, an expiry). A call reserves its amount against
// one lease of every budget that applies (the tenant's and its key's), all
// or none, and settles there at its actual cost. The contract with the
// control plane's lease server (controlplane/internal/distrib):
//
//  1. a reservation is made against a lease only before the lease expires,
//     and a lease never has more reserved and used than it was granted;
//  2. a lease is given back (lease_id, returned_nanos = granted − used)
//     only when no call holds a reservation on it and ReturnGrace has passed
//     since its last settlement, by which time the call's record is in the
//     usage journal. A lease goes back when it expired, or, in the request
//     that asks for the next lease, when what is left on it is too small
//     for the calls at hand; every lease goes back on shutdown.
//
// The edge asks for a lease when a call finds too little left, and in the
// background while the budget is in use and less than a quarter of the
// last grant is left (or less than a quarter of its time).
//
// When the control plane cannot be reached (no reply within Timeout, or an
// error reply), the edge keeps serving every call its leases still cover
// and retries in the background; a call they cannot cover is refused with
// 503 weir_budget_unavailable (retryable), never served on credit, which
// would break the overspend bound. Only when the control plane says the
// budget is exhausted (or unknown) and no lease covers the call is the
// answer 402 weir_budget_exceeded. Either verdict stands for RetryAfter, so
// a spent budget or an absent control plane costs one request per budget per
// RetryAfter, not one per call.
//
// Overspend: since every reservation fits in one live lease and a lease
// goes back only once its calls are settled and journaled, the control
// plane's bound holds (controlplane/internal/distrib, package doc): the
// final spend of a budget is at most its limit plus, over calls, the excess
// of a call's cost over its reservation (the input estimate's error), plus
// the spend of calls whose records stayed in a journal beyond the control
// plane's settle lag (a long NATS outage).
type Leases struct {
	req         Requester
	edgeID      string
	now         func() time.Time
	log         *slog.Logger
	timeout     time.Duration
	retryAfter  time.Duration
	returnGrace time.Duration
	tick        time.Duration

	mu      sync.Mutex
	budgets map[string]*budgetLease
}

// LeaseOptions configure Leases; zero values take defaults.
type LeaseOptions struct {
	EdgeID string
	// Timeout bounds one lease request (default 1 s).
	Timeout time.Duration
	// RetryAfter is how long an exhausted or failed answer stands before a
	// call may ask again (default 1 s).
	RetryAfter time.Duration
	// ReturnGrace is how long after a lease's last settlement it may be
	// given back (default 1 s).
	ReturnGrace time.Duration
	// Tick is the background renewal and return interval (default 250 ms).
	Tick time.Duration
	Now  func() time.Time
	Log  *slog.Logger
}

// lease is one grant.
type lease struct {
	id         string
	granted    routing.Nanos
	used       routing.Nanos // settled costs
	reserved   routing.Nanos // calls in flight
	expires    time.Time
	lastSettle time.Time
	returning  bool
}

func (l *lease) free() routing.Nanos   { return l.granted - l.used - l.reserved }
func (l *lease) unused() routing.Nanos { return max(l.granted-l.used, 0) }

// budgetLease is one budget's leases on this edge, oldest first.
type budgetLease struct {
	id, tenantID string
	leases       []*lease
	duration     time.Duration
	lastGrant    routing.Nanos
	lastAmount   routing.Nanos
	lastUse      time.Time
	exhaustedAt  time.Time
	failedAt     time.Time
	asking       chan struct{} // a request is in flight; closed when it ends
}

// NewLeases returns budgets that ask for leases through req.
func NewLeases(req Requester, o LeaseOptions) *Leases {
	if o.Timeout <= 0 {
		o.Timeout = time.Second
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = time.Second
	}
	if o.ReturnGrace <= 0 {
		o.ReturnGrace = time.Second
	}
	if o.Tick <= 0 {
		o.Tick = 250 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Leases{req: req, edgeID: o.EdgeID, now: o.Now, log: o.Log, timeout: o.Timeout, retryAfter: o.RetryAfter,
		returnGrace: o.ReturnGrace, tick: o.Tick, budgets: map[string]*budgetLease{}}
}

// pick returns the oldest lease that is not expired and can cover amount,
// so that old leases are used up before they expire. Caller holds mu.
func (b *budgetLease) pick(amount routing.Nanos, now time.Time) *lease {
	for _, l := range b.leases {
		if !l.returning && now.Before(l.expires) && l.free() >= amount {
			return l
		}
	}
	return nil
}

// free is what the budget's live leases have left. Caller holds mu.
func (b *budgetLease) free(now time.Time) routing.Nanos {
	var f routing.Nanos
	for _, l := range b.leases {
		if !l.returning && now.Before(l.expires) {
			f += max(l.free(), 0)
		}
	}
	return f
}

// Reserve implements gateway.Budgets.
func (l *Leases) Reserve(t *routing.Table, k *routing.Key, amount routing.Nanos) (func(routing.Nanos), *routing.Error) {
	var refs []routing.BudgetRef
	for _, ref := range t.Budgets {
		if ref.KeyID == "" || (k != nil && ref.KeyID == k.ID) {
			refs = append(refs, ref)
		}
	}
	if len(refs) == 0 || amount <= 0 {
		return func(routing.Nanos) {}, nil // nothing priced to reserve
	}
	for round := 0; ; round++ {
		l.mu.Lock()
		now := l.now()
		picked := make([]*lease, 0, len(refs))
		var short *budgetLease
		for _, ref := range refs {
			b := l.budget(t.TenantID, ref)
			b.lastUse, b.lastAmount = now, amount
			ls := b.pick(amount, now)
			if ls == nil {
				short = b
				break
			}
			picked = append(picked, ls)
		}
		if short == nil {
			for _, ls := range picked {
				ls.reserved += amount
			}
			l.mu.Unlock()
			return l.settler(picked, amount), nil
		}
		exhausted := !short.exhaustedAt.IsZero() && now.Sub(short.exhaustedAt) < l.retryAfter
		failed := !short.failedAt.IsZero() && now.Sub(short.failedAt) < l.retryAfter
		if exhausted || failed || round == 2 {
			l.mu.Unlock()
			if exhausted {
				return nil, &routing.Error{Status: http.StatusPaymentRequired, Code: routing.CodeBudgetExceeded,
					Message: "budget " + short.id + " cannot cover this call's reservation of $" + amount.String()}
			}
			yes := true
			return nil, &routing.Error{Status: http.StatusServiceUnavailable, Code: CodeBudgetUnavailable, RetryAfter: l.retryAfter, ShouldRetry: &yes,
				Message: "budget " + short.id + ": the edge's leases cannot cover this call and no more can be had now; retry shortly"}
		}
		ch := l.ask(short, l.want(amount), now)
		l.mu.Unlock()
		<-ch
	}
}

// settler returns the func that settles one reservation, once.
func (l *Leases) settler(picked []*lease, amount routing.Nanos) func(routing.Nanos) {
	var once sync.Once
	return func(cost routing.Nanos) {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			now := l.now()
			for _, ls := range picked {
				ls.reserved -= amount
				ls.used += max(cost, 0)
				ls.lastSettle = now
			}
		})
	}
}

// budget returns the lease state of a budget, creating it. Caller holds mu.
func (l *Leases) budget(tenantID string, ref routing.BudgetRef) *budgetLease {
	b := l.budgets[ref.ID]
	if b == nil {
		b = &budgetLease{id: ref.ID}
		l.budgets[ref.ID] = b
	}
	b.tenantID = tenantID
	return b
}

// want is how much to ask for: what the call at hand needs. The control
// plane sizes the lease (a share of what is left, at least its minimum
// slice and at least want), so asking for more would only take money
// other edges could use.
func (l *Leases) want(amount routing.Nanos) routing.Nanos { return max(amount, 1) }

// Held reports, for tests and diagnostics, what a budget's leases have
// left, what calls in flight hold, and how many leases the edge holds.
func (l *Leases) Held(budgetID string) (free, reserved routing.Nanos, leases int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.budgets[budgetID]
	if b == nil {
		return 0, 0, 0
	}
	for _, ls := range b.leases {
		free += ls.free()
		reserved += ls.reserved
	}
	return free, reserved, len(b.leases)
}

// Close gives back every lease no call holds, waiting for the control
// plane's replies until ctx ends. Call it after the gateway stopped taking
// calls and their records were flushed.
func (l *Leases) Close(ctx context.Context) {
	l.mu.Lock()
	var waits []chan struct{}
	for _, b := range l.budgets {
		for _, ls := range b.leases {
			if !ls.returning && ls.reserved == 0 {
				ch := make(chan struct{})
				l.giveBack(b, ls, ch)
				waits = append(waits, ch)
			}
		}
	}
	l.mu.Unlock()
	for _, ch := range waits {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}
