package callerlimit

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"weir.dev/routing"
)

// clock is a settable clock for the tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func table(rpm, mif int64) *routing.Table {
	return &routing.Table{TenantID: "t1", TenantName: "acme", Limits: routing.CallerLimits{RPM: rpm, MaxInFlight: mif}}
}

func key(id string, rpm, mif int64) *routing.Key {
	return &routing.Key{ID: id, Name: id, Limits: routing.CallerLimits{RPM: rpm, MaxInFlight: mif}}
}

// admit acquires and fails the test on a refusal.
func admit(t *testing.T, l *Limiter, tb *routing.Table, k *routing.Key) Slot {
	t.Helper()
	s, r := l.Acquire(tb, k)
	if r != nil {
		t.Fatalf("refused: %+v", r)
	}
	return s
}

// refuse acquires and fails the test unless the call is refused by want.
func refuse(t *testing.T, l *Limiter, tb *routing.Table, k *routing.Key, want Limit) *Refusal {
	t.Helper()
	s, r := l.Acquire(tb, k)
	if r == nil {
		s.Release()
		t.Fatalf("admitted, want a refusal by %s", want)
	}
	if r.Limit != want {
		t.Fatalf("refused by %s, want %s", r.Limit, want)
	}
	return r
}

// R-HEAD-7: caller limits use routing.Share: the limit over the live
// edges, rounded up, the whole limit over one edge.
func TestShareRHEAD7(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limit int64
		edges int
		want  int64
	}{{5, 2, 3}, {5, 1, 5}, {5, 0, 5}, {5, -3, 5}, {1, 3, 1}, {6, 3, 2}, {7, 3, 3}, {0, 2, 0}, {100_000_000, 7, 14_285_715}} {
		if got := routing.Share(tc.limit, tc.edges); got != tc.want {
			t.Errorf("Share(%d, %d) = %d, want %d", tc.limit, tc.edges, got, tc.want)
		}
	}
}

// R-CAP-2: rpm is a bucket of the share, refilled share/60 per second; a
// refusal names the time until the next token and takes none.
func TestTenantRPMRCAP2(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := New(nil, c.now)
	tb := table(2, 0)
	admit(t, l, tb, nil).Release()
	admit(t, l, tb, nil).Release()
	r := refuse(t, l, tb, nil, TenantRPM)
	if r.RetryAfter != 30*time.Second || r.Share != 2 {
		t.Fatalf("refusal %+v, want 30 s, share 2", r)
	}
	c.add(20 * time.Second)
	r = refuse(t, l, tb, nil, TenantRPM)
	if r.RetryAfter < 9*time.Second || r.RetryAfter > 10*time.Second {
		t.Fatalf("retry after %v, want ~10 s", r.RetryAfter)
	}
	// The refusals took nothing: the token is there 30 s after the last
	// admitted call, and only one.
	c.add(10 * time.Second)
	admit(t, l, tb, nil).Release()
	refuse(t, l, tb, nil, TenantRPM)
}

// R-CAP-2: max_in_flight counts held slots; a refusal says retry in 1 s;
// a released slot admits the next call.
func TestTenantMaxInFlightRCAP2(t *testing.T) {
	t.Parallel()
	l := New(nil, newClock().now)
	tb := table(0, 2)
	a, b := admit(t, l, tb, nil), admit(t, l, tb, nil)
	if r := refuse(t, l, tb, nil, TenantMaxInFlight); r.RetryAfter != time.Second || r.Share != 2 {
		t.Fatalf("refusal %+v", r)
	}
	a.Release()
	c := admit(t, l, tb, nil)
	refuse(t, l, tb, nil, TenantMaxInFlight)
	b.Release()
	c.Release()
	if n := l.InFlight("t1", ""); n != 0 {
		t.Fatalf("in flight %d after every release", n)
	}
}

// R-CAP-2: the key's limits apply on top of the tenant's, and a refusal by
// the key gives back what the tenant's check would have taken: another
// key still gets the tenant's last token and slot.
func TestKeyRefusalTakesNothingFromTenantRCAP2(t *testing.T) {
	t.Parallel()
	l := New(nil, newClock().now)
	tb := table(2, 2)
	limited, free := key("k1", 1, 1), key("k2", 0, 0)
	s := admit(t, l, tb, limited)
	refuse(t, l, tb, limited, KeyRPM) // its one token is spent
	s.Release()
	refuse(t, l, tb, limited, KeyRPM)
	if n := l.InFlight("t1", ""); n != 0 {
		t.Fatalf("tenant in flight %d after key refusals", n)
	}
	admit(t, l, tb, free).Release() // the tenant's second token
	refuse(t, l, tb, free, TenantRPM)

	// In flight too: the tenant is full only with its own two slots.
	l2 := New(nil, newClock().now)
	tb2 := table(0, 2)
	held := admit(t, l2, tb2, key("k1", 0, 1))
	refuse(t, l2, tb2, key("k1", 0, 1), KeyMaxInFlight)
	other := admit(t, l2, tb2, free)
	refuse(t, l2, tb2, free, TenantMaxInFlight)
	held.Release()
	other.Release()
}

// R-HEAD-7: with 2 live edges a limit of 5 gives this edge 3; the shares
// follow the count when it changes.
func TestSharesFollowLiveEdgesRHEAD7(t *testing.T) {
	t.Parallel()
	var edges atomic.Int64
	edges.Store(2)
	c := newClock()
	l := New(func() int { return int(edges.Load()) }, c.now)
	tb := table(5, 5)
	var held []Slot
	for range 3 {
		held = append(held, admit(t, l, tb, nil))
	}
	if r := refuse(t, l, tb, nil, TenantRPM); r.Share != 3 {
		t.Fatalf("share %d, want 3", r.Share)
	}
	c.add(time.Minute) // the bucket is full again; three calls hold slots
	if r := refuse(t, l, tb, nil, TenantMaxInFlight); r.Share != 3 {
		t.Fatalf("share %d, want 3", r.Share)
	}
	edges.Store(1) // the other edge left: this one has the whole limit
	held = append(held, admit(t, l, tb, nil), admit(t, l, tb, nil))
	refuse(t, l, tb, nil, TenantMaxInFlight)
	for _, s := range held {
		s.Release()
	}
}

// New limits of a tenant (a new table) take effect on its next call.
func TestLimitsChangeRCAP2(t *testing.T) {
	t.Parallel()
	l := New(nil, newClock().now)
	s := admit(t, l, table(0, 1), nil)
	refuse(t, l, table(0, 1), nil, TenantMaxInFlight)
	s2 := admit(t, l, table(0, 2), nil)
	s.Release()
	s2.Release()
	admit(t, l, table(1, 2), nil).Release()
	refuse(t, l, table(1, 2), nil, TenantRPM)
	admit(t, l, table(0, 2), nil).Release() // rpm lifted
}

// Entries unused for IdleAfter with nothing in flight are dropped; one
// holding a slot stays however old.
func TestIdleEntriesDropped(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := New(nil, c.now)
	held := admit(t, l, table(0, 10), key("k1", 0, 5))
	tb2 := &routing.Table{TenantID: "t2", Limits: routing.CallerLimits{MaxInFlight: 1}}
	admit(t, l, tb2, key("k2", 3, 0)).Release()
	admit(t, l, tb2, key("unlimited", 0, 0)).Release()
	if nt, nk := l.Len(); nt != 2 || nk != 2 {
		t.Fatalf("entries %d tenants %d keys, want 2 and 2 (no entry for a key without limits)", nt, nk)
	}
	c.add(IdleAfter)
	admit(t, l, table(0, 10), nil).Release() // sweeps
	if nt, nk := l.Len(); nt != 1 || nk != 1 {
		t.Fatalf("entries %d tenants %d keys after a minute, want the held ones", nt, nk)
	}
	held.Release()
	c.add(IdleAfter)
	admit(t, l, tb2, nil).Release()
	if nt, nk := l.Len(); nt != 1 || nk != 0 {
		t.Fatalf("entries %d tenants %d keys, want only t2", nt, nk)
	}
}

// The hot path allocates nothing once a tenant's and key's entries exist.
func TestAcquireAllocatesNothing(t *testing.T) {
	l := New(nil, nil)
	tb, k := table(100_000_000, 1_000_000), key("k", 100_000_000, 1_000_000)
	admit(t, l, tb, k).Release()
	if n := testing.AllocsPerRun(1000, func() {
		s, r := l.Acquire(tb, k)
		if r != nil {
			t.Fatal(r)
		}
		s.Release()
	}); n != 0 {
		t.Fatalf("%v allocations per Acquire and Release", n)
	}
}

// Property (run with -race): concurrent callers never hold more than the
// in-flight share at once, and never start more calls than the rpm share
// while the clock stands still, whatever the interleaving and the key mix.
func TestConcurrentNeverExceedsShareRCAP2(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := New(func() int { return 3 }, c.now)
	tb := table(300, 20) // shares: 100 rpm, 7 in flight
	keys := []*routing.Key{key("a", 0, 2), key("b", 30, 0), nil, key("c", 0, 0)}
	var inFlight, peak, admitted, keyB atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(g), 1))
			for range 200 {
				k := keys[rnd.IntN(len(keys))]
				s, r := l.Acquire(tb, k)
				if r != nil {
					continue
				}
				admitted.Add(1)
				if k != nil && k.ID == "b" {
					keyB.Add(1)
				}
				n := inFlight.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				if rnd.IntN(4) == 0 {
					time.Sleep(time.Microsecond)
				}
				inFlight.Add(-1)
				s.Release()
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > 7 {
		t.Errorf("peak in flight %d, share 7", p)
	}
	if a := admitted.Load(); a != 100 {
		t.Errorf("%d calls admitted in a frozen minute, want exactly the rpm share 100", a)
	}
	if b := keyB.Load(); b > 10 {
		t.Errorf("key b started %d calls, share 10", b)
	}
	if n := l.InFlight("t1", ""); n != 0 {
		t.Errorf("tenant in flight %d after every release", n)
	}
}
