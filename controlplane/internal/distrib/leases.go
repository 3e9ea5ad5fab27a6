package distrib

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing/natsnames"
)

// Reply headers of a lease request that could not be served. The body is
// still a LeaseGrant (granted 0).
const (
	// HeaderError is a code: ErrCodeInvalidRequest, ErrCodeUnknownBudget
	// or ErrCodeUnavailable.
	HeaderError = "Weir-Error"
	// HeaderErrorMessage says what went wrong, for people.
	HeaderErrorMessage = "Weir-Error-Message"

	// ErrCodeInvalidRequest: the request cannot be served as sent (ids
	// missing or malformed, negative amounts); retrying will not help.
	ErrCodeInvalidRequest = "invalid_request"
	// ErrCodeUnknownBudget: the tenant has no such budget (it was
	// deleted); the grant says exhausted.
	ErrCodeUnknownBudget = "unknown_budget"
	// ErrCodeUnavailable: the control plane could not serve the request
	// now (Postgres away); retry later and keep using the current lease
	// until it expires.
	ErrCodeUnavailable = "unavailable"
)

// Errors of Grant.
var (
	ErrInvalidLeaseRequest = errors.New("invalid lease request")
	ErrUnknownBudget       = errors.New("unknown budget")
)

// LeaseConfig configures budget leases; see the package documentation for
// how they bound overspend.
type LeaseConfig struct {
	// TTL is how long a lease may be reserved against.
	TTL time.Duration
	// MinSlice is the smallest grant (nano-dollars) worth a round trip,
	// while the budget has that much left.
	MinSlice int64
	// SettleLag is how long a returned lease keeps counting at what it
	// used: the time its call records may take to be settled.
	SettleLag time.Duration
	// ReclaimAfter is how long after its expiry a lease never returned
	// keeps counting at its whole grant: the time its edge's in-flight
	// calls may take to finish and be settled.
	ReclaimAfter time.Duration
	// Workers is how many requests are served at once.
	Workers int
	// Now is the clock of expiries; nil means time.Now.
	Now func() time.Time
	// Log receives failures; nil discards.
	Log *slog.Logger
}

// LeaseServer answers LeaseRequests on weir.lease.request.<edge token> (in a
// queue group, so several control planes share the load). A request whose
// edge_id is not the one its subject names is refused as invalid: an edge's
// NATS user may publish only on its own subject, so an edge cannot return,
// renew or spend another edge's leases. Create it with
// NewLeaseServer.
type LeaseServer struct {
	st  *store.Store
	nc  *nats.Conn
	cfg LeaseConfig
}

// NewLeaseServer returns a lease server over st, answering on nc.
func NewLeaseServer(st *store.Store, nc *nats.Conn, cfg LeaseConfig) *LeaseServer {
	cfg.Log, cfg.Now = orDiscard(cfg.Log), orNow(cfg.Now)
	cfg.Workers = max(cfg.Workers, 1)
	return &LeaseServer{st: st, nc: nc, cfg: cfg}
}

// leaseQueue is the queue group of every control plane's lease server.
const leaseQueue = "weir-controlplane"

// Run serves requests until ctx ends, then stops taking new ones, finishes
// those taken and returns nil.
func (l *LeaseServer) Run(ctx context.Context) error {
	ch := make(chan *nats.Msg, 4*l.cfg.Workers)
	sub, err := l.nc.ChanQueueSubscribe(natsnames.LeaseSubjects, leaseQueue, ch)
	if err != nil {
		return fmt.Errorf("distrib: lease subscription: %w", err)
	}
	var wg sync.WaitGroup
	for range l.cfg.Workers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case m := <-ch:
					l.serve(ctx, m)
				}
			}
		})
	}
	<-ctx.Done()
	_ = sub.Unsubscribe()
	wg.Wait()
	return nil
}

// serve answers one request message.
func (l *LeaseServer) serve(ctx context.Context, m *nats.Msg) {
	req := &telemetryv1.LeaseRequest{}
	var grant *telemetryv1.LeaseGrant
	err := proto.Unmarshal(m.Data, req)
	switch {
	case err != nil:
		err = fmt.Errorf("%w: not a LeaseRequest: %w", ErrInvalidLeaseRequest, err)
	case m.Subject != natsnames.LeaseRequestSubject(req.GetEdgeId()):
		err = fmt.Errorf("%w: edge_id %q is not the edge of subject %s", ErrInvalidLeaseRequest, req.GetEdgeId(), m.Subject)
	default:
		grant, err = l.Grant(ctx, req)
	}
	if m.Reply == "" {
		return
	}
	reply := nats.NewMsg(m.Reply)
	if err != nil {
		code := ErrCodeUnavailable
		switch {
		case errors.Is(err, ErrInvalidLeaseRequest):
			code = ErrCodeInvalidRequest
		case errors.Is(err, ErrUnknownBudget):
			code = ErrCodeUnknownBudget
		default:
			l.cfg.Log.WarnContext(ctx, "lease request failed", "edge", req.GetEdgeId(), "budget", req.GetBudgetId(), "err", err)
		}
		reply.Header.Set(HeaderError, code)
		reply.Header.Set(HeaderErrorMessage, err.Error())
		grant = &telemetryv1.LeaseGrant{BudgetId: req.GetBudgetId(), Exhausted: code == ErrCodeUnknownBudget}
	}
	if reply.Data, err = proto.Marshal(grant); err != nil {
		l.cfg.Log.ErrorContext(ctx, "lease grant cannot be encoded", "err", err)
		return
	}
	if err := m.RespondMsg(reply); err != nil {
		l.cfg.Log.WarnContext(ctx, "lease reply not sent", "err", err)
	}
}

// Grant serves one request in one transaction that locks the budget's row
// (grants of one budget are serialized): it starts a new period when the
// stored one has ended, records the return of req.lease_id when given
// (returned_nanos unused, the rest used), and then, unless the request only
// returns a lease (lease_id set, want_nanos 0), grants a new lease of
// grantSize(available, edges, want) where available is the limit less
// the settled spend and the leases' commitments (LeaseCommitments). The
// grant says exhausted when nothing is left after it.
//
// Errors wrap ErrInvalidLeaseRequest, ErrUnknownBudget, or are about
// Postgres.
func (l *LeaseServer) Grant(ctx context.Context, req *telemetryv1.LeaseRequest) (*telemetryv1.LeaseGrant, error) {
	tenant, budgetID, leaseID, err := checkLeaseRequest(req)
	if err != nil {
		return nil, err
	}
	now := l.cfg.Now()
	out := &telemetryv1.LeaseGrant{BudgetId: req.GetBudgetId()}
	tx, err := l.st.Pool().BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return nil, fmt.Errorf("distrib: lease: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := sqlc.New(tx)
	b, err := q.LockBudgetForLease(ctx, sqlc.LockBudgetForLeaseParams{TenantID: tenant, ID: budgetID})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: tenant %s has no budget %s", ErrUnknownBudget, req.GetTenantId(), req.GetBudgetId())
	}
	if err != nil {
		return nil, fmt.Errorf("distrib: lease: budget: %w", err)
	}
	if begin, ok := periodStart(b.Period, now); ok && b.PeriodStart.Time.Before(begin) {
		if b, err = q.StartBudgetPeriod(ctx, sqlc.StartBudgetPeriodParams{TenantID: tenant, ID: budgetID, PeriodStart: ts(begin)}); err != nil {
			return nil, fmt.Errorf("distrib: lease: new period: %w", err)
		}
	}
	if leaseID.Valid {
		_, err := q.ReturnBudgetLease(ctx, sqlc.ReturnBudgetLeaseParams{
			ReturnedNanos: req.GetReturnedNanos(), Now: ts(now), ID: leaseID, BudgetID: budgetID, EdgeID: req.GetEdgeId(),
		})
		// A lease already returned or reclaimed, or not this edge's, is
		// not returned twice.
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("distrib: lease: return: %w", err)
		}
	}
	c, err := q.LeaseCommitments(ctx, sqlc.LeaseCommitmentsParams{
		ReclaimCutoff: ts(now.Add(-l.cfg.ReclaimAfter)), SettleCutoff: ts(now.Add(-l.cfg.SettleLag)),
		Now: ts(now), EdgeID: req.GetEdgeId(), BudgetID: budgetID,
	})
	if err != nil {
		return nil, fmt.Errorf("distrib: lease: commitments: %w", err)
	}
	available := b.LimitNanos - b.SpentNanos - c.CommittedNanos
	if !leaseID.Valid || req.GetWantNanos() > 0 {
		g := grantSize(available, c.OtherEdges+1, req.GetWantNanos(), l.cfg.MinSlice)
		if g > 0 {
			lease, err := q.GrantBudgetLease(ctx, sqlc.GrantBudgetLeaseParams{
				BudgetID: budgetID, EdgeID: req.GetEdgeId(), GrantedNanos: g, ExpiresAt: ts(now.Add(l.cfg.TTL)),
			})
			if err != nil {
				return nil, fmt.Errorf("distrib: lease: grant: %w", err)
			}
			out.LeaseId = store.UUIDString(lease.ID)
			out.GrantedNanos = g
			out.ExpiresAt = timestamppb.New(lease.ExpiresAt.Time)
			available -= g
		}
	}
	out.Exhausted = available <= 0
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("distrib: lease: commit: %w", err)
	}
	return out, nil
}

// grantSize is the size of a new lease: half of what is available shared
// among the edges holding leases (the requester included), so that every
// edge can get a share and the last ones shrink geometrically; at least
// minSlice, and at least want so that a call reserving more than a share
// can still be admitted; never more than is available.
func grantSize(available, edges, want, minSlice int64) int64 {
	if available <= 0 {
		return 0
	}
	g := available / (2 * max(edges, 1))
	g = max(g, minSlice, want)
	return min(g, available)
}

// checkLeaseRequest parses the request's ids, reporting every problem.
func checkLeaseRequest(req *telemetryv1.LeaseRequest) (tenant, budget, lease pgtype.UUID, err error) {
	var errs []error
	if req.GetEdgeId() == "" {
		errs = append(errs, errors.New("edge_id is required"))
	}
	var ok bool
	if tenant, ok = parseUUID(req.GetTenantId()); !ok {
		errs = append(errs, fmt.Errorf("tenant_id %q is not a UUID", req.GetTenantId()))
	}
	if budget, ok = parseUUID(req.GetBudgetId()); !ok {
		errs = append(errs, fmt.Errorf("budget_id %q is not a UUID", req.GetBudgetId()))
	}
	if req.GetLeaseId() != "" {
		if lease, ok = parseUUID(req.GetLeaseId()); !ok {
			errs = append(errs, fmt.Errorf("lease_id %q is not a UUID", req.GetLeaseId()))
		}
	}
	if req.GetWantNanos() < 0 || req.GetReturnedNanos() < 0 {
		errs = append(errs, errors.New("want_nanos and returned_nanos must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return tenant, budget, lease, fmt.Errorf("%w: %w", ErrInvalidLeaseRequest, err)
	}
	return tenant, budget, lease, nil
}

// periodStart is the start of the UTC day or month now is in, for a day or
// month budget (the rule of snapshot.currentPeriod); ok is false for a
// total budget.
func periodStart(period string, now time.Time) (time.Time, bool) {
	n := now.UTC()
	switch period {
	case "day":
		return time.Date(n.Year(), n.Month(), n.Day(), 0, 0, 0, 0, time.UTC), true
	case "month":
		return time.Date(n.Year(), n.Month(), 1, 0, 0, 0, 0, time.UTC), true
	}
	return time.Time{}, false
}

func ts(t time.Time) pgtype.Timestamptz { return pgtype.Timestamptz{Time: t, Valid: true} }
