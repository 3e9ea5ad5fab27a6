package sim

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"weir.dev/routing"
)

// Config is what a run takes besides its scenario.
type Config struct {
	// Seed fixes every random draw: the workload, the members' errors and
	// latencies, and the policies' own choices.
	Seed uint64
	// Duration is the virtual time over which jobs start; the run goes on
	// until the last job's last turn is over.
	Duration time.Duration
}

// DefaultConfig is the run `make sim` prints.
func DefaultConfig() Config { return Config{Seed: 1, Duration: 10 * time.Minute} }

// Validate reports a config that cannot run.
func (c Config) Validate() error {
	if c.Duration < time.Minute {
		return fmt.Errorf("sim: duration %v is shorter than a minute", c.Duration)
	}
	if c.Duration > 24*time.Hour {
		return fmt.Errorf("sim: duration %v is longer than a day", c.Duration)
	}
	return nil
}

// Stats is one policy's outcome in one scenario.
type Stats struct {
	Policy string
	// Calls is every turn sent as a call.
	Calls int
	// Caller429 counts calls whose caller got a 429.
	Caller429 int
	// Failed counts calls whose caller got another error (5xx).
	Failed int
	// Attempts counts attempts that went out to members.
	Attempts int
	// P99Wait is the 99th percentile of a call's added wait: virtual time
	// spent in attempts that did not give the answer, before the answer (or
	// until the error for a call that got none).
	P99Wait time.Duration
	// SameMember and LaterTurns give cache affinity: of the answered turns
	// of a job after one of its turns was answered (LaterTurns), how many
	// went to the member that answered that earlier turn (SameMember).
	SameMember, LaterTurns int
	// Cost is the settled cost of every answered call at the serving
	// member's prices (R-COST-2). Failed attempts cost nothing: the members
	// only refuse (429) or fail (5xx) before running the model (R-COST-3).
	Cost routing.Nanos
}

// CallerFailures is caller-visible 429s plus failed calls.
func (s Stats) CallerFailures() int { return s.Caller429 + s.Failed }

// Affinity is the share of later turns served by the previous turn's
// member, 0 when there are none.
func (s Stats) Affinity() float64 {
	if s.LaterTurns == 0 {
		return 0
	}
	return float64(s.SameMember) / float64(s.LaterTurns)
}

// AttemptsPerCall is attempts sent over calls.
func (s Stats) AttemptsPerCall() float64 {
	if s.Calls == 0 {
		return 0
	}
	return float64(s.Attempts) / float64(s.Calls)
}

// tally collects Stats while a run goes.
type tally struct {
	Stats
	waits []time.Duration
}

func newTally(policy string) *tally { return &tally{Stats: Stats{Policy: policy}} }

func (t *tally) add(w *world, c *callRun, status int, a *answer) {
	t.Calls++
	t.Attempts += c.sent
	t.waits = append(t.waits, c.failedFor)
	switch {
	case status/100 == 2:
		m := w.table.Records[0].Members[a.member]
		t.Cost += routing.Settlement(m, Model, a.usage)
		if c.job.lastServed >= 0 {
			t.LaterTurns++
			if c.job.lastServed == a.member {
				t.SameMember++
			}
		}
	case status == 429:
		t.Caller429++
	default:
		t.Failed++
	}
}

func (t *tally) done() Stats {
	s := t.Stats
	if n := len(t.waits); n > 0 {
		slices.Sort(t.waits)
		i := (99*n+99)/100 - 1 // nearest rank
		s.P99Wait = t.waits[min(max(i, 0), n-1)]
	}
	return s
}

// Result is one scenario's run of every policy.
type Result struct {
	Scenario Scenario
	Config   Config
	// Jobs and Turns describe the workload every policy got.
	Jobs, Turns int
	// Policies are Weir's stats, then round robin's, then weighted random's.
	Policies []Stats
	// Shared is a shared scenario's stats instead (Scenario.Shared): Weir's
	// share counting, then per-edge counting.
	Shared []SharedStats
}

// Run plays one scenario's workload through Weir's policy and both
// baselines, each against its own fresh copy of the members, and returns
// their stats. The same scenario and config always give the same result.
func Run(ctx context.Context, sc Scenario, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if sc.Shared != nil {
		return runShared(ctx, sc, cfg)
	}
	jobs := NewWorkload(cfg.Seed, sc.Demand*float64(sc.Capacity()), cfg.Duration)
	res := Result{Scenario: sc, Config: cfg, Jobs: len(jobs)}
	for _, j := range jobs {
		res.Turns += len(j.Turns)
	}
	routers := []router{newWeirRouter(&sc, cfg.Seed), newRoundRobin(&sc), newWeightedRandom(&sc, cfg.Seed)}
	for _, r := range routers {
		w := newWorld(&sc, cfg.Seed, r)
		if err := w.run(ctx, jobs); err != nil {
			return Result{}, err
		}
		res.Policies = append(res.Policies, w.tally.done())
	}
	return res, nil
}

// WriteMarkdown writes the result as a Markdown section: a heading, one
// line on the pool and the load, and the comparison table.
func (r Result) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	sc := r.Scenario
	if sc.Shared != nil {
		r.writeShared(&b)
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "### %s\n\n", sc.Title)
	var ms []string
	for _, m := range sc.Members {
		s := fmt.Sprintf("%s %dk TPM/%d RPM w%d", m.Name, m.TPM/1000, m.RPM, m.Weight)
		if m.SpentAfter > 0 {
			s += fmt.Sprintf(", spent after %v", m.SpentAfter)
		}
		ms = append(ms, s)
	}
	fmt.Fprintf(&b, "%s pool: %s. Demand %.1f× of %dk tokens/min; %d jobs, %d turns over %v; seed %d.\n\n",
		sc.Wire, strings.Join(ms, "; "), sc.Demand, sc.Capacity()/1000, r.Jobs, r.Turns, r.Config.Duration, r.Config.Seed)
	b.WriteString("| policy | calls | caller-visible 429s | failed calls | attempts per call | p99 added wait (ms) | cache affinity | cost ($) |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.Policies {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %.2f | %d | %.1f%% | %s |\n",
			s.Policy, s.Calls, s.Caller429, s.Failed, s.AttemptsPerCall(), s.P99Wait.Milliseconds(),
			100*s.Affinity(), dollars(s.Cost))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// dollars formats nano-dollars as dollars with four decimals, rounded half
// up (amounts here are never negative).
func dollars(n routing.Nanos) string {
	q := (int64(n) + 50_000) / 100_000
	return fmt.Sprintf("%d.%04d", q/10_000, q%10_000)
}
