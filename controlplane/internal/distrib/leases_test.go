package distrib_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"weir.dev/controlplane/internal/distrib"
	"weir.dev/controlplane/internal/store"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing/natsnames"
)

func TestGrantSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                          string
		available, edges, want, slice int64
		grant                         int64
	}{
		{"nothing left", 0, 1, 0, 10, 0},
		{"overdrawn", -5, 1, 0, 10, 0},
		{"half for one edge", 1000, 1, 0, 10, 500},
		{"a quarter each for two", 1000, 2, 0, 10, 250},
		{"at least the minimum", 1000, 100, 0, 50, 50},
		{"minimum above what is left", 30, 1, 0, 50, 30},
		{"a big reservation whole", 1000, 2, 700, 10, 700},
		{"never more than is left", 1000, 2, 5000, 10, 1000},
		{"no edges counted", 1000, 0, 0, 10, 500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := distrib.GrantSize(tc.available, tc.edges, tc.want, tc.slice); got != tc.grant {
				t.Errorf("grantSize(%d, %d, %d, %d) = %d, want %d", tc.available, tc.edges, tc.want, tc.slice, got, tc.grant)
			}
		})
	}
}

// leaseClient asks for leases over NATS as an edge does.
type leaseClient struct {
	t      testing.TB
	nc     *nats.Conn
	edge   string
	tenant string
	budget string
}

func (c leaseClient) request(want int64, leaseID string, returned int64) (*telemetryv1.LeaseGrant, nats.Header) {
	c.t.Helper()
	return c.raw(&telemetryv1.LeaseRequest{EdgeId: c.edge, TenantId: c.tenant, BudgetId: c.budget, WantNanos: want, LeaseId: leaseID, ReturnedNanos: returned})
}

// raw sends req on the lease subject of its edge, as that edge does.
func (c leaseClient) raw(req *telemetryv1.LeaseRequest) (*telemetryv1.LeaseGrant, nats.Header) {
	c.t.Helper()
	return c.rawOn(natsnames.LeaseSubject+"."+natsnames.Token(req.GetEdgeId()), req)
}

// rawOn sends req on subject.
func (c leaseClient) rawOn(subject string, req *telemetryv1.LeaseRequest) (*telemetryv1.LeaseGrant, nats.Header) {
	c.t.Helper()
	data, err := proto.Marshal(req)
	if err != nil {
		c.t.Errorf("lease request: %v", err)
	}
	// The lease server subscribes once the distributor has set up NATS;
	// an edge retries until it answers.
	msg, err := c.nc.Request(subject, data, 5*time.Second)
	for deadline := time.Now().Add(10 * time.Second); errors.Is(err, nats.ErrNoResponders) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		msg, err = c.nc.Request(subject, data, 5*time.Second)
	}
	if err != nil {
		c.t.Errorf("lease request: %v", err)
		return &telemetryv1.LeaseGrant{}, nats.Header{}
	}
	g := &telemetryv1.LeaseGrant{}
	if err := proto.Unmarshal(msg.Data, g); err != nil {
		c.t.Errorf("lease grant: %v", err)
	}
	return g, msg.Header
}

// TestLeaseProtocol walks one budget through grants, a renewal that
// returns the old lease, a pure return, exhaustion and the errors.
func TestLeaseProtocol(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	tid := e.tenant("acme")
	bid := e.budget("acme", "b", "", 1000)
	e.cfg.LeaseMinSlice = 10
	e.cfg.LeaseSettleLag = time.Hour // returned leases keep counting here
	e.runDistributor()
	a := leaseClient{t: t, nc: e.connect(), edge: "edge-a", tenant: store.UUIDString(tid), budget: store.UUIDString(bid)}
	b := a
	b.edge = "edge-b"

	g1, h := a.request(0, "", 0)
	if h.Get(distrib.HeaderError) != "" || g1.GetGrantedNanos() != 500 || g1.GetLeaseId() == "" || g1.GetExhausted() {
		t.Fatalf("first grant = %v (%v), want 500 of 1000", g1, h)
	}
	if d := time.Until(g1.GetExpiresAt().AsTime()); d < 50*time.Second || d > 70*time.Second {
		t.Errorf("lease expires in %s, want about 60s", d)
	}
	g2, _ := b.request(0, "", 0) // 500 left, two edges: a quarter
	if g2.GetGrantedNanos() != 125 {
		t.Errorf("second edge's grant = %d, want 125", g2.GetGrantedNanos())
	}
	// a renews: returns 400 unused of 500 (used 100, still counted until
	// settled) and wants more.
	g3, _ := a.request(1, g1.GetLeaseId(), 400)
	// available = 1000 - 125 (b) - 100 (a's used) = 775; two edges: 193.
	if g3.GetGrantedNanos() != 193 {
		t.Errorf("renewal = %d, want 193", g3.GetGrantedNanos())
	}
	lease, err := e.st.Q.GetBudgetLease(ctx, mustUUID(t, g1.GetLeaseId()))
	if err != nil || lease.UsedNanos != 100 || lease.ReturnedNanos != 400 {
		t.Errorf("returned lease = %+v, %v", lease, err)
	}
	// Returning it again changes nothing.
	if g, _ := a.request(0, g1.GetLeaseId(), 500); g.GetGrantedNanos() != 0 || g.GetLeaseId() != "" {
		t.Errorf("second return granted %v", g)
	}
	// A pure return of b's lease.
	if g, h := b.request(0, g2.GetLeaseId(), 125); g.GetGrantedNanos() != 0 || h.Get(distrib.HeaderError) != "" {
		t.Errorf("pure return = %v, %v", g, h)
	}
	// Ask for everything: what is left (1000 - 100 - 193 = 707) and no more.
	g4, _ := b.request(5000, "", 0)
	if g4.GetGrantedNanos() != 707 || !g4.GetExhausted() {
		t.Errorf("big want = %v, want 707 and exhausted", g4)
	}
	if g, _ := a.request(0, "", 0); g.GetGrantedNanos() != 0 || !g.GetExhausted() || g.GetLeaseId() != "" {
		t.Errorf("after exhaustion = %v", g)
	}
	// An edge cannot give back (or spend) another edge's lease: a request
	// naming edge-a on edge-b's subject is refused and the lease stays.
	if g, h := b.rawOn(natsnames.LeaseSubject+".edge-b", &telemetryv1.LeaseRequest{EdgeId: "edge-a", TenantId: a.tenant, BudgetId: a.budget, LeaseId: g3.GetLeaseId(), ReturnedNanos: 193}); h.Get(distrib.HeaderError) != distrib.ErrCodeInvalidRequest || g.GetGrantedNanos() != 0 {
		t.Errorf("request for edge-a on edge-b's subject = %v, %v; want invalid_request", g, h)
	}
	if l, err := e.st.Q.GetBudgetLease(ctx, mustUUID(t, g3.GetLeaseId())); err != nil || l.ReturnedNanos != 0 || l.ClosedAt.Valid {
		t.Errorf("edge-a's lease after edge-b's forged return = %+v, %v; want untouched", l, err)
	}
	// Errors.
	if g, h := a.raw(&telemetryv1.LeaseRequest{EdgeId: "x", TenantId: a.tenant, BudgetId: "00000000-0000-4000-8000-000000000000"}); h.Get(distrib.HeaderError) != distrib.ErrCodeUnknownBudget || !g.GetExhausted() {
		t.Errorf("unknown budget = %v, %v", g, h)
	}
	if _, h := a.raw(&telemetryv1.LeaseRequest{TenantId: "nope", BudgetId: a.budget, WantNanos: -1}); h.Get(distrib.HeaderError) != distrib.ErrCodeInvalidRequest {
		t.Errorf("invalid request = %v", h)
	}
	other := e.tenant("other")
	if _, h := a.raw(&telemetryv1.LeaseRequest{EdgeId: "x", TenantId: store.UUIDString(other), BudgetId: a.budget}); h.Get(distrib.HeaderError) != distrib.ErrCodeUnknownBudget {
		t.Errorf("another tenant's budget = %v", h)
	}
}

// simEdge is an edge's lease bookkeeping (R-COST-1/2 across edges): calls
// reserve against the current lease, settle back into it, and a lease is
// given back once it is replaced and its last call has settled.
type simEdge struct {
	client leaseClient
	mu     sync.Mutex
	cur    *simLease
	// grants counts the leases this edge was granted.
	grants int
}

type simLease struct {
	id       string
	balance  int64
	inflight int
	expires  time.Time
	retired  bool
}

// reserve takes r from the current lease, asking for a new one when it
// cannot cover r; nil means refused (402).
func (s *simEdge) reserve(r int64) (*simLease, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.cur; c != nil && c.balance >= r && time.Now().Before(c.expires) {
		c.balance -= r
		c.inflight++
		return c, false
	}
	var leaseID string
	var returned int64
	if c := s.cur; c != nil {
		c.retired = true
		if c.inflight == 0 { // give it back in the same request
			leaseID, returned = c.id, max(c.balance, 0)
		}
	}
	g, _ := s.client.request(r, leaseID, returned)
	s.cur = nil
	if g.GetGrantedNanos() > 0 {
		s.grants++
		s.cur = &simLease{id: g.GetLeaseId(), balance: g.GetGrantedNanos(), expires: g.GetExpiresAt().AsTime()}
	}
	if c := s.cur; c != nil && c.balance >= r {
		c.balance -= r
		c.inflight++
		return c, g.GetExhausted()
	}
	return nil, g.GetExhausted()
}

// settle puts back what the call did not cost and returns a retired lease
// whose last call this was.
func (s *simEdge) settle(l *simLease, r, cost int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l.balance += r - cost
	l.inflight--
	if l.retired && l.inflight == 0 {
		s.client.request(0, l.id, max(l.balance, 0))
	}
}

// close returns the current lease.
func (s *simEdge) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.cur; c != nil && c.inflight == 0 {
		s.client.request(0, c.id, max(c.balance, 0))
		s.cur = nil
	}
}

// TestLeaseOverspendBound runs 2 edges × 64 concurrent callers against one
// budget through the real lease server, usage stream and ingest. Each call
// reserves a random amount, costs a random part of it (one call in 20 costs
// more than it reserved: settlement excess), publishes its record and
// settles. Callers stop after the budget refuses them six times in a row
// (0.6 s apart: longer than the settle lag, so what returned leases used is
// available again by then). The settled spend must not exceed the limit by more than the
// documented bound (package doc): the sum of settlement excess, the
// assumptions holding here. And the budget must have been spent for the
// most part, so that the test says something.
func TestLeaseOverspendBound(t *testing.T) { leaseOverspend(t, 1) }

// TestLeaseOverspendBoundTwoReplicas: two control-plane replicas answer
// the lease requests of one budget at once (a queue group hands each
// request to one of them; issue 15); the bound holds as with one, and
// no request is answered twice.
func TestLeaseOverspendBoundTwoReplicas(t *testing.T) { leaseOverspend(t, 2) }

// leaseOverspend runs the overspend bound with replicas distributors on
// one database and one NATS server, each on its own connection.
func leaseOverspend(t *testing.T, replicas int) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tid := e.tenant("acme")
	tenant := store.UUIDString(tid)
	const limit = 40_000_000
	bid := e.budget("acme", "b", "", limit)
	e.cfg.LeaseMinSlice = 200_000
	e.cfg.LeaseSettleLag = 3 * time.Second
	e.cfg.IngestMaxWait = 20 * time.Millisecond
	for range replicas {
		d, err := distrib.New(e.st, e.connect(), e.cfg)
		if err != nil {
			t.Fatal(err)
		}
		e.run(d.Run)
	}

	const edges, callers = 2, 64
	var excess, published, refusedExhausted atomic.Int64
	var calls atomic.Int64
	var wg sync.WaitGroup
	sims := make([]*simEdge, edges)
	for ei := range edges {
		nc := e.connect()
		edge := &simEdge{client: leaseClient{t: t, nc: nc, edge: fmt.Sprintf("edge-%d", ei), tenant: tenant, budget: store.UUIDString(bid)}}
		var ewg sync.WaitGroup
		for ci := range callers {
			ewg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(ei), uint64(ci)))
				refusals := 0
				for n := 0; refusals < 6 && ctx.Err() == nil; n++ {
					r := 20_000 + rng.Int64N(80_000)
					lease, exhausted := edge.reserve(r)
					if lease == nil {
						if exhausted {
							refusedExhausted.Add(1)
						}
						refusals++
						time.Sleep(600 * time.Millisecond)
						continue
					}
					refusals = 0
					cost := r * (30 + rng.Int64N(71)) / 100
					if rng.IntN(20) == 0 {
						cost = r + rng.Int64N(r/5)
						excess.Add(cost - r)
					}
					time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond) // the call
					rec := callRecord(tenant, "", 0, cost)
					rec.CallId, rec.EdgeId = fmt.Sprintf("e%d-c%d-%d", ei, ci, n), edge.client.edge
					data, err := proto.Marshal(rec)
					if err == nil {
						m := nats.NewMsg(natsnames.UsageSubjectPrefix + tenant)
						m.Data = data
						m.Header.Set(jetstream.MsgIDHeader, rec.GetCallId())
						_, err = e.js.PublishMsg(ctx, m)
					}
					if err != nil {
						t.Errorf("publish: %v", err)
						return
					}
					published.Add(cost)
					calls.Add(1)
					edge.settle(lease, r, cost)
				}
			})
		}
		sims[ei] = edge
		wg.Go(func() {
			ewg.Wait()
			edge.close()
		})
	}
	wg.Wait()
	// Every lease in the database is one an edge was granted: no request
	// was answered twice (by two replicas).
	granted := 0
	for _, s := range sims {
		granted += s.grants
	}
	var rows int
	if err := e.st.Pool().QueryRow(ctx, "SELECT count(*) FROM budget_leases WHERE budget_id = $1 AND granted_nanos > 0", bid).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != granted {
		t.Errorf("%d leases in the database, %d granted to the edges", rows, granted)
	}
	var spent int64
	eventually(t, 30*time.Second, "every record settled", func() bool {
		err := e.st.Pool().QueryRow(ctx, "SELECT spent_nanos FROM budgets WHERE id = $1", bid).Scan(&spent)
		return err == nil && spent == published.Load()
	})
	bound := int64(limit) + excess.Load()
	t.Logf("%d calls, spent %d of %d (%.2f%%), settlement excess %d, bound %d, refusals on exhaustion %d",
		calls.Load(), spent, limit, 100*float64(spent)/limit, excess.Load(), bound, refusedExhausted.Load())
	if spent > bound {
		t.Errorf("spent %d > limit %d + settlement excess %d", spent, int64(limit), excess.Load())
	}
	if spent < limit*8/10 {
		t.Errorf("spent only %d of %d: the leases starved the callers", spent, int64(limit))
	}
	if refusedExhausted.Load() == 0 {
		t.Error("no caller was ever refused for an exhausted budget")
	}
}
