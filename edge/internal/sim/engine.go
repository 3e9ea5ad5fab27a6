package sim

import (
	"context"
	"fmt"
	"time"

	"weir.dev/routing"
)

// jobRun is one job's progress in one policy's run.
type jobRun struct {
	job  *Job
	next int // index of the next turn to send
	// lastServed is the member that served the job's last answered turn,
	// -1 before any.
	lastServed int
}

// callRun is one turn of a job sent as a call.
type callRun struct {
	job     *jobRun
	turn    Turn
	index   int
	arrived time.Time
	sess    session
	member  int
	sent    int
	// failedFor is virtual time spent in attempts that did not give the
	// answer: from arrival until the delivering attempt went out.
	failedFor time.Duration
}

// world is one policy's run of one scenario: the members as the providers
// see them, the virtual clock, and the tally.
type world struct {
	sc        *Scenario
	table     *routing.Table
	providers []*provider
	q         eventQueue
	now       time.Time
	r         router
	tally     *tally
}

func newWorld(sc *Scenario, seed uint64, r router) *world {
	w := &world{sc: sc, table: sc.Table(), now: epoch(), r: r, tally: newTally(r.name())}
	for i, ms := range sc.Members {
		w.providers = append(w.providers, newProvider(ms, sc.Wire, sc.ServerErrorRate, seed, i, w.now))
	}
	return w
}

// run plays every job of the workload through the policy until the last
// turn is over. It checks ctx every few thousand events.
func (w *world) run(ctx context.Context, jobs []*Job) error {
	for _, j := range jobs {
		w.q.schedule(&event{at: w.now.Add(j.Start), kind: evTurn, job: &jobRun{job: j, lastServed: -1}})
	}
	for n := 0; ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		e := w.q.next()
		if e == nil {
			return nil
		}
		w.now = e.at
		switch e.kind {
		case evTurn:
			w.startTurn(e.job)
		case evDispatch:
			w.send(e.call)
		case evAnswer:
			w.answer(e.call, e.ans)
		default:
			return fmt.Errorf("sim: unknown event kind %d", e.kind)
		}
	}
}

func (w *world) startTurn(j *jobRun) {
	c := &callRun{job: j, turn: j.job.Turns[j.next], index: j.next, arrived: w.now}
	j.next++
	c.sess = w.r.start(c, w.now)
	w.step(c)
}

// step asks the policy for the call's next member and sends the attempt,
// at once or after the wait the policy asks for; when no member is left
// the call ends with the policy's final answer.
func (w *world) step(c *callRun) {
	m, wait, ok := c.sess.next(w.now)
	if !ok {
		w.end(c, c.sess.final(w.now), nil)
		return
	}
	c.member = m
	if wait > 0 {
		w.q.schedule(&event{at: w.now.Add(wait), kind: evDispatch, call: c})
		return
	}
	w.send(c)
}

func (w *world) send(c *callRun) {
	c.sess.dispatch(w.now)
	c.sent++
	a := w.providers[c.member].handle(request{job: c.job.job.ID, prompt: c.turn.Prompt, output: c.turn.Output}, w.now)
	a.member = c.member
	w.q.schedule(&event{at: w.now.Add(a.latency), kind: evAnswer, call: c, ans: a})
}

func (w *world) answer(c *callRun, a *answer) {
	deliver, next := c.sess.report(a, w.now)
	switch {
	case deliver:
		c.sess.finish(w.now, a)
		w.end(c, a.status, a)
	case next:
		w.step(c)
	default:
		w.end(c, c.sess.final(w.now), nil)
	}
}

// end records the call's outcome and schedules the job's next turn after
// the caller's think time. A caller does not retry a failed turn: the job
// goes on with its next turn, so every policy gets the same jobs, turns and
// think times, whatever it answered.
func (w *world) end(c *callRun, status int, a *answer) {
	wait := w.now.Sub(c.arrived)
	if a != nil && status/100 == 2 {
		wait = a.started.Sub(c.arrived)
	}
	c.failedFor = wait
	w.tally.add(w, c, status, a)
	j := c.job
	if a != nil && status/100 == 2 {
		j.lastServed = a.member
	}
	if j.next < len(j.job.Turns) {
		w.q.schedule(&event{at: w.now.Add(c.turn.Think), kind: evTurn, job: j})
	}
}
