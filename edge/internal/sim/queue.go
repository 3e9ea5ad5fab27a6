package sim

import (
	"container/heap"
	"time"
)

// eventKind says what happens at an event's virtual time.
type eventKind uint8

const (
	// evTurn: a job's next turn arrives at the edge as a new call.
	evTurn eventKind = iota + 1
	// evDispatch: a call's attempt goes out after a wait the policy asked
	// for (a pool's max_wait); with max_wait 0 it is never used by Weir.
	evDispatch
	// evAnswer: a member's answer to an attempt reaches the edge.
	evAnswer
	// evRun: run the event's func (the two-edges run's events).
	evRun
)

// event is one entry of the virtual clock's queue.
type event struct {
	at   time.Time
	seq  uint64
	kind eventKind
	job  *jobRun
	call *callRun
	ans  *answer
	run  func()
}

// eventQueue is a min-heap of events by time, then by insertion order, so
// that events at the same virtual instant run in the order they were
// scheduled and a run is deterministic.
type eventQueue struct {
	items []*event
	seq   uint64
}

func (q *eventQueue) Len() int { return len(q.items) }

func (q *eventQueue) Less(i, j int) bool {
	a, b := q.items[i], q.items[j]
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return a.seq < b.seq
}

func (q *eventQueue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }

// Push is heap.Interface's; use schedule instead.
func (q *eventQueue) Push(x any) { q.items = append(q.items, x.(*event)) }

// Pop is heap.Interface's; use next instead.
func (q *eventQueue) Pop() any {
	n := len(q.items)
	e := q.items[n-1]
	q.items[n-1] = nil
	q.items = q.items[:n-1]
	return e
}

// schedule adds an event; its sequence number breaks ties in time.
func (q *eventQueue) schedule(e *event) {
	q.seq++
	e.seq = q.seq
	heap.Push(q, e)
}

// next removes and returns the earliest event, or nil when the queue is empty.
func (q *eventQueue) next() *event {
	if len(q.items) == 0 {
		return nil
	}
	return heap.Pop(q).(*event)
}
