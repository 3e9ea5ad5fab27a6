package gateway

import (
	"context"
	"errors"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"weir.dev/edge/internal/netguard"
	"weir.dev/routing"
)

// newCtxRun is a call whose request context is cancelled by the returned
// function, with the given call deadline.
func newCtxRun(deadline time.Time) (*callRun, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequestWithContext(ctx, "POST", "/v1/chat/completions", nil)
	return &callRun{req: r, call: &routing.Call{Deadline: deadline}}, cancel
}

func TestAttemptContextValuesAndDeadline(t *testing.T) {
	deadline := time.Now().Add(time.Hour)
	c, cancel := newCtxRun(deadline)
	defer cancel()
	for _, pol := range []netguard.Policy{netguard.PolicyTenant, netguard.PolicyTrusted, netguard.PolicyTenant} {
		actx, acancel, timer := c.attemptContext(pol)
		if got := netguard.PolicyFrom(actx); got != pol {
			t.Fatalf("policy %v, want %v", got, pol)
		}
		if d, ok := actx.Deadline(); !ok || !d.Equal(deadline) {
			t.Fatalf("deadline %v %v, want %v", d, ok, deadline)
		}
		if actx.Err() != nil {
			t.Fatal("a new attempt's context is done")
		}
		timer.Stop()
		acancel()
		if !errors.Is(actx.Err(), context.Canceled) {
			t.Fatalf("after cancel: %v", actx.Err())
		}
	}
	if c.callErr() != nil {
		t.Fatalf("callErr %v while the call goes on", c.callErr())
	}
	d := &c.detachedCtx
	d.parent = c.req.Context()
	cancel()
	if d.Err() != nil || d.Done() != nil {
		t.Fatal("the detached context is cancelled with the request")
	}
	if !errors.Is(c.callErr(), context.Canceled) {
		t.Fatalf("callErr %v after the caller left", c.callErr())
	}
}

// TestAttemptContextCancellation: the caller going away and the call
// deadline each cancel the attempt's context and a context made under it
// as the transport makes its own (context.WithCancelCause), racing with the
// attempt's own cancel and the timer's Stop and Reset (go test -race).
func TestAttemptContextCancellation(t *testing.T) {
	for _, how := range []string{"caller", "deadline", "attempt"} {
		t.Run(how, func(t *testing.T) {
			var wg sync.WaitGroup
			for range 200 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					d := time.Hour
					if how == "deadline" {
						d = time.Millisecond
					}
					c, cancel := newCtxRun(time.Now().Add(d))
					defer cancel()
					actx, acancel, timer := c.attemptContext(netguard.PolicyTenant)
					defer acancel()
					defer timer.release()
					tctx, tcancel := context.WithCancelCause(actx) // the transport's
					defer tcancel(nil)
					switch how {
					case "caller":
						go cancel()
					case "attempt":
						go acancel()
					}
					if timer.Stop() { // as roundTrip does around the response headers
						timer.Reset(time.Until(c.call.Deadline))
					}
					select {
					case <-tctx.Done():
					case <-time.After(10 * time.Second):
						t.Error("the transport's context was not cancelled")
						return
					}
					if actx.Err() == nil {
						t.Error("the attempt's context is not done")
					}
					switch how {
					case "caller":
						if !errors.Is(c.callErr(), context.Canceled) {
							t.Errorf("callErr %v", c.callErr())
						}
					case "deadline":
						if !errors.Is(c.callErr(), context.DeadlineExceeded) {
							t.Errorf("callErr %v", c.callErr())
						}
					case "attempt":
						if c.callErr() != nil {
							t.Errorf("callErr %v", c.callErr())
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

// TestAttemptContextAllocations: an attempt's contexts cost the
// context.WithCancel and at most the timer (a released one is reused), not
// a context per layer.
func TestAttemptContextAllocations(t *testing.T) {
	c, cancel := newCtxRun(time.Now().Add(time.Hour))
	defer cancel()
	c.req.Context().Done()
	n := testing.AllocsPerRun(100, func() {
		actx, acancel, timer := c.attemptContext(netguard.PolicyTrusted)
		_ = netguard.PolicyFrom(actx)
		timer.release()
		acancel()
	})
	if n > 3 {
		t.Fatalf("%v allocations an attempt", n)
	}
}

func TestStatusLabel(t *testing.T) {
	for s := 0; s < 1000; s++ {
		if got, want := statusLabel(s), strconv.Itoa(s); got != want {
			t.Fatalf("statusLabel(%d) = %q, want %q", s, got, want)
		}
	}
}
