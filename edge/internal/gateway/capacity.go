package gateway

import (
	"context"
	"sync"
	"time"

	"weir.dev/routing"
)

// MaxSlotWaiters bounds the calls waiting for one member's slot (R-CAP-1).
// A call that finds every member it may go to full and this many calls
// already waiting on one of them does not queue: it is busy at once
// (R-END-7). It bounds the memory and goroutines a burst can hold.
const MaxSlotWaiters = 1024

// capacity holds this edge's member slots (R-CAP-1): per member with a
// declared max_in_flight, the calls holding a slot and a first-come,
// first-served queue of calls waiting for one. The routing core reads the
// counts through routing.Slots (Held) to skip full members; the gateway
// takes a slot before each attempt and holds it until the call's answer has
// ended or was cut. A member's cap is its share of the declared
// max_in_flight on this edge (States.MaxInFlight), given on every take and
// wait so that it follows the live-edge count.
//
// A freed slot goes straight to the first call waiting for it, so a call
// that arrives later cannot overtake a waiting one. Entries exist only for
// members with calls holding or waiting for slots, so memory is bounded by
// the calls in flight. It is safe for concurrent use.
type capacity struct {
	mu      sync.Mutex
	members map[string]*memberSlots
}

// memberSlots is one member's slots. Guarded by capacity.mu.
type memberSlots struct {
	held    int64
	cap     int64 // the cap given last
	waiters []*slotWaiter
}

// slotWaiter is one call waiting for a slot of any of several members.
type slotWaiter struct {
	on []string // the member IDs it waits on
	// got receives the member ID whose slot it was handed (capacity 1: the
	// hand-over never blocks).
	got chan string
	// done is set when it was handed a slot or gave up. Guarded by
	// capacity.mu.
	done bool
}

// memberSlot is a slot a call holds. release gives it back exactly once;
// later calls do nothing.
type memberSlot struct {
	c        *capacity
	memberID string
	released bool
}

func newCapacity() *capacity { return &capacity{members: map[string]*memberSlots{}} }

// Held is how many calls hold a slot of the member (routing.Slots).
func (c *capacity) Held(memberID string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.members[memberID]; e != nil {
		return e.held
	}
	return 0
}

// waiting is how many calls wait for a slot of the member.
func (c *capacity) waiting(memberID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.members[memberID]; e != nil {
		return len(e.waiters)
	}
	return 0
}

// entry returns the member's slots with cap updated, handing slots the new
// cap frees to waiters. Caller holds mu.
func (c *capacity) entry(id string, limit int64) *memberSlots {
	e := c.members[id]
	if e == nil {
		e = &memberSlots{}
		c.members[id] = e
	}
	e.cap = limit
	c.handOver(id, e)
	return e
}

// handOver gives free slots of the member to its first waiters. Caller
// holds mu.
func (c *capacity) handOver(id string, e *memberSlots) {
	for e.held < e.cap && len(e.waiters) > 0 {
		w := e.waiters[0]
		e.waiters[0] = nil
		e.waiters = e.waiters[1:]
		if w.done {
			continue
		}
		w.done = true
		e.held++
		w.got <- id
		c.unqueue(w)
	}
}

// unqueue removes a waiter from every queue it is in. Caller holds mu.
func (c *capacity) unqueue(w *slotWaiter) {
	for _, id := range w.on {
		e := c.members[id]
		if e == nil {
			continue
		}
		for i, x := range e.waiters {
			if x == w {
				e.waiters = append(e.waiters[:i], e.waiters[i+1:]...)
				break
			}
		}
		c.drop(id, e)
	}
}

// drop forgets a member's entry with nothing held or waiting. Caller holds
// mu.
func (c *capacity) drop(id string, e *memberSlots) {
	if e.held <= 0 && len(e.waiters) == 0 {
		delete(c.members, id)
	}
}

// take takes a slot of a member whose cap is limit, unless it is full or
// calls already wait for it (they come first). A member without a cap
// (limit ≤ 0) needs no slot: take returns a nil slot and true.
func (c *capacity) take(m *routing.Member, limit int64) (*memberSlot, bool) {
	if limit <= 0 {
		return nil, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entry(m.ID, limit)
	if len(e.waiters) > 0 || e.held >= e.cap {
		c.drop(m.ID, e)
		return nil, false
	}
	e.held++
	return &memberSlot{c: c, memberID: m.ID}, true
}

// wait takes a slot of any of members (caps[i] is the cap of members[i]),
// waiting first come, first served up to d for one to free. It gives up
// when d passes, ctx ends, or a member already has MaxSlotWaiters calls
// waiting; it then returns false and holds nothing.
func (c *capacity) wait(ctx context.Context, members []*routing.Member, caps []int64, d time.Duration) (*memberSlot, *routing.Member, bool) {
	byID := make(map[string]*routing.Member, len(members))
	w := &slotWaiter{got: make(chan string, 1)}
	c.mu.Lock()
	for i, m := range members {
		if caps[i] <= 0 {
			c.mu.Unlock()
			return nil, m, true // no cap (any more): no slot needed
		}
		e := c.entry(m.ID, caps[i])
		if len(e.waiters) == 0 && e.held < e.cap {
			e.held++
			c.mu.Unlock()
			return &memberSlot{c: c, memberID: m.ID}, m, true
		}
		if len(e.waiters) >= MaxSlotWaiters {
			c.mu.Unlock()
			return nil, nil, false
		}
		byID[m.ID] = m
		w.on = append(w.on, m.ID)
	}
	for _, id := range w.on {
		e := c.members[id]
		e.waiters = append(e.waiters, w)
	}
	c.mu.Unlock()

	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case id := <-w.got:
		return &memberSlot{c: c, memberID: id}, byID[id], true
	case <-t.C:
	case <-ctx.Done():
	}
	c.mu.Lock()
	if w.done {
		// A slot was handed over as the wait ended: the call takes it
		// unless it is gone, else it goes to the next waiter.
		c.mu.Unlock()
		id := <-w.got
		s := &memberSlot{c: c, memberID: id}
		if ctx.Err() != nil {
			s.release()
			return nil, nil, false
		}
		return s, byID[id], true
	}
	w.done = true
	c.unqueue(w)
	c.mu.Unlock()
	return nil, nil, false
}

// release gives the slot back, at most once; the next waiter gets it. A
// nil slot does nothing.
func (s *memberSlot) release() {
	if s == nil {
		return
	}
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.released {
		return
	}
	s.released = true
	e := c.members[s.memberID]
	if e == nil {
		return
	}
	e.held--
	c.handOver(s.memberID, e)
	c.drop(s.memberID, e)
}
