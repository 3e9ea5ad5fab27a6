package distrib

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing"
	"weir.dev/routing/natsnames"
)

// fakeLeaser is a control plane's lease server in miniature: it grants
// slices of at most `slice` from each budget's remaining amount, for `ttl`,
// and takes back what edges return.
type fakeLeaser struct {
	mu        sync.Mutex
	remaining map[string]int64
	slice     int64
	ttl       time.Duration
	granted   int64
	returned  int64
	requests  []*telemetryv1.LeaseRequest
	sub       *nats.Subscription
	nc        *nats.Conn
}

func newFakeLeaser(t *testing.T, nc *nats.Conn, slice int64, ttl time.Duration, budgets map[string]int64) *fakeLeaser {
	t.Helper()
	f := &fakeLeaser{remaining: budgets, slice: slice, ttl: ttl, nc: nc}
	sub, err := nc.Subscribe(natsnames.LeaseSubject+".*", func(m *nats.Msg) {
		var req telemetryv1.LeaseRequest
		if err := proto.Unmarshal(m.Data, &req); err != nil || m.Subject != natsnames.LeaseRequestSubject(req.GetEdgeId()) {
			return // like the real server: the subject names the asking edge
		}
		f.mu.Lock()
		f.requests = append(f.requests, &req)
		f.remaining[req.GetBudgetId()] += req.GetReturnedNanos()
		f.returned += req.GetReturnedNanos()
		var g int64
		if req.GetWantNanos() > 0 || req.GetLeaseId() == "" { // like the real one: slice, at least want
			g = min(max(f.slice, req.GetWantNanos()), f.remaining[req.GetBudgetId()])
		}
		f.remaining[req.GetBudgetId()] -= g
		f.granted += g
		lease := req.GetLeaseId()
		if lease == "" {
			lease = "lease-" + itoa(len(f.requests))
		}
		grant := &telemetryv1.LeaseGrant{LeaseId: lease, BudgetId: req.GetBudgetId(), GrantedNanos: g,
			ExpiresAt: timestamppb.New(time.Now().Add(f.ttl)), Exhausted: f.remaining[req.GetBudgetId()] == 0}
		f.mu.Unlock()
		b, _ := proto.Marshal(grant)
		_ = m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil { // the server knows the responder before any request
		t.Fatal(err)
	}
	f.sub = sub
	return f
}

func (f *fakeLeaser) totals() (granted, returned int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.granted, f.returned
}

func budgetTable(refs ...routing.BudgetRef) *routing.Table {
	t := routing.NewTable(testTenant, "acme", routing.DataRules{}, nil, nil)
	t.Budgets = refs
	return t
}

func newTestLeases(t *testing.T, url string) *Leases {
	t.Helper()
	l := NewLeases(natsRequester{connect(t, url)}, LeaseOptions{EdgeID: "edge-a", Timeout: 2 * time.Second, RetryAfter: 200 * time.Millisecond, ReturnGrace: 20 * time.Millisecond, Tick: 20 * time.Millisecond, Log: testLog(t)})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go l.run(ctx)
	return l
}

// Slices are granted as calls need them; a call that no lease covers once
// the budget can grant no more is refused with 402; what leases did not use
// goes back (when spent down or expired), so that in the end granted −
// returned = spent, and the budget is used up to within one call.
func TestLeasesGrantRefuseAndReturn(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	leaser := newFakeLeaser(t, connect(t, ns.URL()), 1000, 300*time.Millisecond, map[string]int64{"b1": 3000})
	l := newTestLeases(t, ns.URL())
	table := budgetTable(routing.BudgetRef{ID: "b1", Limit: 3000})

	var spent routing.Nanos
	refused := 0
	for round := 0; round < 6; round++ {
		served := 0
		for range 20 {
			settle, e := l.Reserve(table, &routing.Key{ID: "key-1"}, 400)
			if e != nil {
				if e.Status != http.StatusPaymentRequired || e.Code != routing.CodeBudgetExceeded {
					t.Fatalf("refusal %d %s, want 402 %s", e.Status, e.Code, routing.CodeBudgetExceeded)
				}
				refused++
				break
			}
			served++
			settle(350) // a call costs less than it reserved
			spent += 350
			if spent > 3000 {
				t.Fatalf("spent %d over the budget of 3000", spent)
			}
		}
		// What the leases did not use goes back.
		waitFor(t, 3*time.Second, "unused leases returned", func() bool {
			g, r := leaser.totals()
			_, _, n := l.Held("b1")
			return n == 0 && g-r == int64(spent)
		})
		if served == 0 {
			break
		}
		time.Sleep(250 * time.Millisecond) // let the exhausted verdict lapse
	}
	if refused == 0 {
		t.Fatal("never refused")
	}
	if spent <= 3000-400 {
		t.Fatalf("spent only %d of 3000: leases stranded money a call could have used", spent)
	}
}

// With the control plane gone, the edge serves what its lease still covers
// and then refuses with 503 weir_budget_unavailable, not 402; once it is
// back, calls are served again.
func TestLeasesControlPlaneDown(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	leaser := newFakeLeaser(t, connect(t, ns.URL()), 1000, time.Minute, map[string]int64{"b1": 1_000_000})
	l := newTestLeases(t, ns.URL())
	table := budgetTable(routing.BudgetRef{ID: "b1", Limit: 1_000_000})
	settle, e := l.Reserve(table, nil, 400)
	if e != nil {
		t.Fatal(e)
	}
	settle(400)
	if err := leaser.sub.Unsubscribe(); err != nil { // the control plane stops answering
		t.Fatal(err)
	}
	if err := leaser.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	settle, e = l.Reserve(table, nil, 400) // 600 left: covered
	if e != nil {
		t.Fatalf("a call the lease covers was refused: %v", e)
	}
	settle(400)
	if _, e := l.Reserve(table, nil, 400); e == nil || e.Status != http.StatusServiceUnavailable || e.Code != CodeBudgetUnavailable {
		t.Fatalf("beyond the lease with no control plane: %v, want 503 %s", e, CodeBudgetUnavailable)
	}
	if settle, e := l.Reserve(table, nil, 150); e != nil { // what is left still serves
		t.Fatalf("a call within what is left was refused: %v", e)
	} else {
		settle(150)
	}
	leaser = newFakeLeaser(t, connect(t, ns.URL()), 1000, time.Minute, map[string]int64{"b1": 1_000_000})
	waitFor(t, 3*time.Second, "renewal after the control plane returned", func() bool {
		settle, e := l.Reserve(table, nil, 400)
		if e != nil {
			return false
		}
		settle(0)
		return true
	})
	_ = leaser
}

// A call reserves against every budget that applies, all or none: when the
// key's budget cannot cover it, the tenant's is left untouched.
func TestLeasesAllOrNone(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	newFakeLeaser(t, connect(t, ns.URL()), 1000, time.Minute, map[string]int64{"tenant-b": 10_000, "key-b": 300})
	l := newTestLeases(t, ns.URL())
	table := budgetTable(routing.BudgetRef{ID: "tenant-b", Limit: 10_000}, routing.BudgetRef{ID: "key-b", KeyID: "key-1", Limit: 300}, routing.BudgetRef{ID: "other-key-b", KeyID: "key-2", Limit: 0})
	if _, e := l.Reserve(table, &routing.Key{ID: "key-1"}, 400); e == nil || e.Status != http.StatusPaymentRequired {
		t.Fatalf("key budget of 300 covered 400: %v", e)
	}
	if _, reserved, _ := l.Held("tenant-b"); reserved != 0 {
		t.Fatalf("tenant budget holds a reservation of %d after the key's refused", reserved)
	}
	settle, e := l.Reserve(table, &routing.Key{ID: "key-1"}, 200)
	if e != nil {
		t.Fatal(e)
	}
	if _, reserved, _ := l.Held("tenant-b"); reserved != 200 {
		t.Fatalf("tenant reservation %d, want 200", reserved)
	}
	settle(250) // costs more than reserved: the provider's count wins
	if free, reserved, _ := l.Held("key-b"); free != 50 || reserved != 0 {
		t.Fatalf("key budget's lease has %d left, %d reserved; want 50 and 0", free, reserved)
	}
}

// On shutdown the edge gives back everything it holds.
func TestLeasesReturnedOnClose(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	leaser := newFakeLeaser(t, connect(t, ns.URL()), 1000, time.Minute, map[string]int64{"b1": 5000})
	l := newTestLeases(t, ns.URL())
	table := budgetTable(routing.BudgetRef{ID: "b1", Limit: 5000})
	settle, e := l.Reserve(table, nil, 100)
	if e != nil {
		t.Fatal(e)
	}
	settle(100)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l.Close(ctx)
	if g, r := leaser.totals(); g-r != 100 {
		t.Fatalf("granted %d, returned %d: the edge kept %d beyond its spend of 100", g, r, g-r-100)
	}
}

// A lease left unspent goes back, with what it did not use, when it
// expires.
func TestLeasesReturnedOnExpiry(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	leaser := newFakeLeaser(t, connect(t, ns.URL()), 1000, 200*time.Millisecond, map[string]int64{"b1": 5000})
	l := newTestLeases(t, ns.URL())
	table := budgetTable(routing.BudgetRef{ID: "b1", Limit: 5000})
	settle, e := l.Reserve(table, nil, 100)
	if e != nil {
		t.Fatal(e)
	}
	settle(80)
	g, r := leaser.totals()
	if r != 0 {
		t.Fatalf("returned %d before expiry", r)
	}
	first := "lease-1"
	waitFor(t, 3*time.Second, "the expired lease returned", func() bool {
		leaser.mu.Lock()
		defer leaser.mu.Unlock()
		for _, req := range leaser.requests {
			if req.GetLeaseId() == first {
				if req.GetReturnedNanos() != g-80 {
					t.Errorf("lease returned with %d unused, want %d", req.GetReturnedNanos(), g-80)
				}
				return true
			}
		}
		return false
	})
}
