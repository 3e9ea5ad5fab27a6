package gateway

import (
	"context"
	"testing"
	"time"

	"weir.dev/routing"
)

func slotMember(id string) *routing.Member { return &routing.Member{ID: id, Name: id} }

// R-CAP-1: slots are taken up to the cap, given back once, and a member
// without a cap needs none; entries are forgotten when nothing is held.
func TestCapacityTakeRelease_RCAP1(t *testing.T) {
	t.Parallel()
	c := newCapacity()
	a := slotMember("a")
	s1, ok1 := c.take(a, 2)
	s2, ok2 := c.take(a, 2)
	if !ok1 || !ok2 || c.Held("a") != 2 {
		t.Fatalf("took %v %v, held %d", ok1, ok2, c.Held("a"))
	}
	if _, ok := c.take(a, 2); ok {
		t.Fatal("took a third slot of a member with cap 2")
	}
	s1.release()
	s1.release() // exactly once
	if c.Held("a") != 1 {
		t.Fatalf("held %d after one release (twice called)", c.Held("a"))
	}
	s2.release()
	if c.Held("a") != 0 || len(c.members) != 0 {
		t.Fatalf("held %d, %d entries after every release", c.Held("a"), len(c.members))
	}
	s, ok := c.take(a, 0)
	if !ok || s != nil || len(c.members) != 0 {
		t.Fatalf("uncapped member: slot %v ok %v", s, ok)
	}
	s.release() // a nil slot does nothing
}

// R-CAP-1: waiting calls get freed slots first come, first served, ahead
// of calls that arrive later; a wait that times out or whose call is gone
// leaves the queue and holds nothing.
func TestCapacityWaiters_RCAP1(t *testing.T) {
	t.Parallel()
	c := newCapacity()
	a, b := slotMember("a"), slotMember("b")
	held, _ := c.take(a, 1)
	hb, _ := c.take(b, 1)
	order := make(chan int, 3)
	got := make(chan *memberSlot, 3)
	for i := range 3 {
		go func() {
			s, m, ok := c.wait(context.Background(), []*routing.Member{a, b}, []int64{1, 1}, 5*time.Second)
			if !ok || (m != a && m != b) {
				order <- -1
				return
			}
			order <- i
			got <- s
		}()
		// Queue them in order.
		deadline := time.Now().Add(time.Second)
		for c.waiting("a") != i+1 {
			if time.Now().After(deadline) {
				t.Fatalf("%d waiting, want %d", c.waiting("a"), i+1)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// A later call may not take the freed slot ahead of them.
	held.release()
	if first := <-order; first != 0 {
		t.Fatalf("first served waiter %d, want 0", first)
	}
	if _, ok := c.take(a, 1); ok {
		t.Fatal("a new call overtook the waiters")
	}
	if c.waiting("b") != 2 {
		t.Fatalf("the served waiter is still queued on b: %d waiting", c.waiting("b"))
	}
	hb.release()
	if second := <-order; second != 1 {
		t.Fatalf("second served waiter %d, want 1", second)
	}
	// The cap grows (fewer live edges): the last waiter gets the new slot.
	if _, ok := c.take(a, 2); ok {
		t.Fatal("took a slot ahead of a waiter")
	}
	if third := <-order; third != 2 {
		t.Fatalf("third served waiter %d, want 2", third)
	}
	for range 3 {
		(<-got).release()
	}
	if len(c.members) != 0 {
		t.Fatalf("%d entries left", len(c.members))
	}

	// Timeout and cancellation leave the queue.
	held, _ = c.take(a, 1)
	if _, _, ok := c.wait(context.Background(), []*routing.Member{a}, []int64{1}, 20*time.Millisecond); ok {
		t.Fatal("wait got a slot none freed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, ok := c.wait(ctx, []*routing.Member{a}, []int64{1}, time.Second); ok {
		t.Fatal("cancelled wait got a slot")
	}
	if c.waiting("a") != 0 {
		t.Fatalf("%d waiting after timeout and cancel", c.waiting("a"))
	}
	held.release()
	if len(c.members) != 0 {
		t.Fatalf("%d entries left", len(c.members))
	}
}

// The queue of one member is bounded: a call that would be waiter
// MaxSlotWaiters+1 is busy at once.
func TestCapacityBoundedWaiters(t *testing.T) {
	t.Parallel()
	c := newCapacity()
	a := slotMember("a")
	held, _ := c.take(a, 1)
	c.mu.Lock()
	e := c.members["a"]
	for range MaxSlotWaiters {
		e.waiters = append(e.waiters, &slotWaiter{on: []string{"a"}, got: make(chan string, 1)})
	}
	c.mu.Unlock()
	start := time.Now()
	if _, _, ok := c.wait(context.Background(), []*routing.Member{a}, []int64{1}, 5*time.Second); ok || time.Since(start) > time.Second {
		t.Fatalf("wait on a full queue: ok %v after %v", ok, time.Since(start))
	}
	if c.waiting("a") != MaxSlotWaiters {
		t.Fatalf("%d waiting", c.waiting("a"))
	}
	held.release() // hands the slot to the first (fake) waiter
	if c.Held("a") != 1 || c.waiting("a") != MaxSlotWaiters-1 {
		t.Fatalf("after release: held %d waiting %d", c.Held("a"), c.waiting("a"))
	}
}
