package distrib

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing"
	"weir.dev/routing/natsnames"
)

// Requester sends a lease request and waits for its reply.
type Requester interface {
	RequestWithContext(ctx context.Context, subj string, data []byte) ([]byte, error)
}

// LeaseErrorHeader is the reply header in which the lease server names why
// it could not serve a request (its body then grants nothing, and a lease
// the request gave back was not taken back).
const LeaseErrorHeader = "Weir-Error"

// leaseUnknownBudget is the error code of a budget the control plane does
// not know: treated as exhausted, as its reply says.
const leaseUnknownBudget = "unknown_budget"

// LeaseError is an error reply of the lease server.
type LeaseError struct {
	Code, Message string
}

func (e *LeaseError) Error() string { return "lease server: " + e.Code + ": " + e.Message }

// natsRequester sends lease requests over core NATS request/reply.
type natsRequester struct{ nc *nats.Conn }

func (r natsRequester) RequestWithContext(ctx context.Context, subj string, data []byte) ([]byte, error) {
	m, err := r.nc.RequestWithContext(ctx, subj, data)
	if err != nil {
		return nil, err
	}
	if code := m.Header.Get(LeaseErrorHeader); code != "" {
		return m.Data, &LeaseError{Code: code, Message: m.Header.Get(LeaseErrorHeader + "-Message")}
	}
	return m.Data, nil
}

// returnable reports whether a lease may be given back now: no call holds
// it, its last settlement is ReturnGrace old (its record is journaled), and
// it expired or has too little left for the calls at hand. Caller holds mu.
func (l *Leases) returnable(b *budgetLease, ls *lease, now time.Time) bool {
	if ls.returning || ls.reserved > 0 || (!ls.lastSettle.IsZero() && now.Sub(ls.lastSettle) < l.returnGrace) {
		return false
	}
	return !now.Before(ls.expires) || ls.free() < max(b.lastAmount, 1)
}

// ask starts a request for a new lease of want, giving back one returnable
// lease in the same request, unless a request is in flight; it returns a
// channel closed when the request ends. Caller holds mu.
func (l *Leases) ask(b *budgetLease, want routing.Nanos, now time.Time) <-chan struct{} {
	if b.asking != nil {
		return b.asking
	}
	ch := make(chan struct{})
	b.asking = ch
	req := &telemetryv1.LeaseRequest{EdgeId: l.edgeID, TenantId: b.tenantID, BudgetId: b.id, WantNanos: int64(want)}
	var back *lease
	for _, ls := range b.leases {
		if l.returnable(b, ls, now) {
			back = ls
			back.returning = true
			req.LeaseId, req.ReturnedNanos = ls.id, int64(ls.unused())
			break
		}
	}
	go func() {
		defer close(ch)
		g, err := l.request(req)
		l.mu.Lock()
		defer l.mu.Unlock()
		b.asking = nil
		now := l.now()
		var le *LeaseError
		if err != nil && !(errors.As(err, &le) && le.Code == leaseUnknownBudget) {
			if back != nil {
				back.returning = false // not taken back: try again later
			}
			b.failedAt = now
			l.log.Warn("budget lease not granted; serving within what is left", "budget_id", b.id, "err", err)
			return
		}
		if back != nil {
			b.drop(back)
		}
		if g.GetGrantedNanos() > 0 {
			exp := g.GetExpiresAt().AsTime()
			if g.GetExpiresAt() == nil || !exp.After(now) {
				exp = now.Add(time.Minute)
			}
			b.leases = append(b.leases, &lease{id: g.GetLeaseId(), granted: routing.Nanos(g.GetGrantedNanos()), expires: exp})
			b.duration, b.lastGrant, b.failedAt = exp.Sub(now), routing.Nanos(g.GetGrantedNanos()), time.Time{}
		}
		switch {
		case g.GetExhausted():
			b.exhaustedAt = now
		case g.GetGrantedNanos() <= 0:
			b.failedAt = now // nothing granted, nothing said: try again later
		default:
			b.exhaustedAt = time.Time{}
		}
	}()
	return ch
}

// drop forgets a lease that was given back. Caller holds mu.
func (b *budgetLease) drop(ls *lease) {
	b.leases = slices.DeleteFunc(b.leases, func(x *lease) bool { return x == ls })
}

// request sends one lease request and decodes the grant. On an error reply
// it returns the decoded grant and a *LeaseError.
func (l *Leases) request(req *telemetryv1.LeaseRequest) (*telemetryv1.LeaseGrant, error) {
	data, err := proto.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("distrib: lease request: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	reply, rerr := l.req.RequestWithContext(ctx, natsnames.LeaseRequestSubject(req.GetEdgeId()), data)
	if rerr != nil && reply == nil {
		return nil, fmt.Errorf("distrib: lease request for budget %s: %w", req.GetBudgetId(), rerr)
	}
	g := &telemetryv1.LeaseGrant{}
	if err := proto.Unmarshal(reply, g); err != nil {
		return nil, fmt.Errorf("distrib: lease grant for budget %s does not decode: %w", req.GetBudgetId(), err)
	}
	if rerr != nil {
		return g, fmt.Errorf("distrib: lease request for budget %s: %w", req.GetBudgetId(), rerr)
	}
	return g, nil
}

// run renews leases in use and gives back spent or expired ones until ctx
// ends.
func (l *Leases) run(ctx context.Context) {
	t := time.NewTicker(l.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.maintain()
	}
}

// maintain is one pass of the background work.
func (l *Leases) maintain() {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for id, b := range l.budgets {
		if l.shouldRenew(b, now) {
			l.ask(b, l.want(b.lastAmount), now) // gives one lease back too
		}
		for _, ls := range b.leases {
			// Alone, only expired leases go back: one that merely runs low
			// goes back with the next request for a lease, so that while the
			// control plane is away what is left on it still serves.
			if !now.Before(ls.expires) && l.returnable(b, ls, now) {
				l.giveBack(b, ls, nil)
			}
		}
		if len(b.leases) == 0 && b.asking == nil && now.Sub(b.lastUse) > time.Hour {
			delete(l.budgets, id) // a budget gone from use (or from the config)
		}
	}
}

// shouldRenew: the budget was used within the last lease's time, no
// request is in flight, no recent verdict stands, and its live leases are
// low on money or time. Caller holds mu.
func (l *Leases) shouldRenew(b *budgetLease, now time.Time) bool {
	if b.asking != nil || b.lastUse.IsZero() || now.Sub(b.lastUse) > b.duration {
		return false
	}
	if (!b.exhaustedAt.IsZero() && now.Sub(b.exhaustedAt) < l.retryAfter) || (!b.failedAt.IsZero() && now.Sub(b.failedAt) < l.retryAfter) {
		return false
	}
	if b.free(now) < max(b.lastGrant/4, b.lastAmount) {
		return true
	}
	n := len(b.leases) // the newest lease is running out of time
	return n > 0 && b.leases[n-1].expires.Sub(now) < b.duration/4
}

// giveBack returns one lease (want 0) in the background; done, when set, is
// closed when the attempt ends. Caller holds mu.
func (l *Leases) giveBack(b *budgetLease, ls *lease, done chan<- struct{}) {
	req := &telemetryv1.LeaseRequest{EdgeId: l.edgeID, TenantId: b.tenantID, BudgetId: b.id, LeaseId: ls.id, ReturnedNanos: int64(ls.unused())}
	ls.returning = true
	go func() {
		if done != nil {
			defer close(done)
		}
		_, err := l.request(req)
		l.mu.Lock()
		defer l.mu.Unlock()
		if err != nil {
			ls.returning = false
			l.log.Warn("lease not given back yet; retrying", "budget_id", b.id, "lease_id", ls.id, "err", err)
			return
		}
		b.drop(ls)
	}()
}
