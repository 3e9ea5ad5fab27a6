package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"weir.dev/routing"
)

// SharedSpec is a scenario of several edges sharing one pool (R-HEAD-7):
// a member "shared" that declares rpm and max_in_flight, and a member
// "spill" without limits in the same tier that takes what the shared one
// may not. Each edge routes its own callers with its own routing.States
// and its own slots; the edges never talk. The providers refuse nothing:
// the run measures what the shared member is sent, against what it
// declared.
type SharedSpec struct {
	// Edges is how many edges route to the pool.
	Edges int
	// RPM and MaxInFlight are the shared member's declared limits,
	// cluster-wide.
	RPM, MaxInFlight int64
	// Weight is the shared member's weight (spill has weight 1): high, so
	// that it is chosen while it has room.
	Weight uint32
	// PerEdgeRPM is the calls each edge's callers start per minute
	// (Poisson arrivals).
	PerEdgeRPM float64
	// MinLatency and MaxLatency bound an answer's time (uniform).
	MinLatency, MaxLatency time.Duration
}

// Counting policies of a shared run, as printed.
const (
	CountingShare   = "weir: each edge counts against its share (limit ÷ live edges)"
	CountingPerEdge = "per edge: each edge counts against the whole limit"
)

// SharedStats is one counting policy's outcome in a shared run.
type SharedStats struct {
	Policy string
	// Calls is every call of every edge; ToShared how many the shared
	// member served.
	Calls, ToShared int
	// PeakRPM is the most requests the shared member got in any 60 s
	// (a sliding window over its arrival times); PeakInFlight the most it
	// held at once.
	PeakRPM, PeakInFlight int64
}

// sharedTable is the pool both edges route over: "shared" with its
// declared limits and weight, "spill" with none, one tier.
func (s *SharedSpec) table() *routing.Table {
	rec := &routing.Record{
		ID: recordID, Name: "pool", TenantID: "tenant-sim", Wire: routing.WireOpenAI,
		Models: map[string]routing.ModelKind{Model: routing.KindChat}, Pool: true,
		Recovery: routing.DefaultRecovery(), DefaultMaxOutput: routing.DefaultMaxOutput,
		CreatedAt: epoch(), DayZone: time.UTC,
	}
	p := prices(routing.WireOpenAI)
	for i, name := range []string{"shared", "spill"} {
		m := &routing.Member{
			ID: recordID + "/" + name, Name: name, Record: rec, Index: i,
			BaseURL: "https://" + name + ".sim.invalid", Auth: routing.Auth{Kind: routing.AuthAPIKey},
			KeySecret: "sim-key-" + name, Prices: map[string]routing.Price{Model: p}, Weight: 1, Order: 1,
		}
		if name == "shared" {
			m.Weight = s.Weight
			m.Limits = routing.Limits{RPM: s.RPM, MaxInFlight: s.MaxInFlight}
		}
		m.Account = "secret:" + m.KeySecret
		rec.Members = append(rec.Members, m)
	}
	return routing.NewTable("tenant-sim", "sim", routing.DataRules{}, []*routing.Record{rec}, nil)
}

// simSlots is one edge's member slots (R-CAP-1) in the single-threaded
// simulation: a count per member.
type simSlots map[string]int64

func (s simSlots) Held(id string) int64 { return s[id] }

// sharedEdge is one edge of a shared run.
type sharedEdge struct {
	states *routing.States
	slots  simSlots
	rnd    *rand.Rand
}

// runShared plays a shared scenario once per counting policy.
func runShared(ctx context.Context, sc Scenario, cfg Config) (Result, error) {
	sp := sc.Shared
	res := Result{Scenario: sc, Config: cfg}
	for _, policy := range []string{CountingShare, CountingPerEdge} {
		st, err := sp.run(ctx, policy, cfg)
		if err != nil {
			return Result{}, err
		}
		res.Shared = append(res.Shared, st)
	}
	return res, nil
}

// run is one counting policy's run: every edge gets the same arrivals
// (same seed) under both policies.
func (s *SharedSpec) run(ctx context.Context, policy string, cfg Config) (SharedStats, error) {
	tab := s.table()
	shared := tab.Records[0].Members[0]
	out := SharedStats{Policy: policy}
	var q eventQueue
	now := epoch()
	end := now.Add(cfg.Duration)
	var arrivals []time.Time // at the shared member
	var inFlight int64
	edges := make([]*sharedEdge, s.Edges)
	for i := range edges {
		e := &sharedEdge{states: routing.NewStates(), slots: simSlots{},
			rnd: rand.New(rand.NewPCG(cfg.Seed, uint64(0x73686172+i)))}
		e.states.UseSlots(e.slots)
		if policy == CountingShare {
			e.states.ShareAmong(s.Edges)
		}
		edges[i] = e
	}
	var arrive func(e *sharedEdge)
	arrive = func(e *sharedEdge) {
		next := now.Add(time.Duration(e.rnd.ExpFloat64() / s.PerEdgeRPM * float64(time.Minute)))
		if next.Before(end) {
			q.schedule(&event{at: next, kind: evRun, run: func() { arrive(e) }})
		}
		out.Calls++
		call, rerr := tab.Begin(routing.Request{Endpoint: routing.EndpointChatCompletions, Model: Model, InputTokens: 100, MaxOutput: 100}, e.states, e.rnd, now)
		if rerr != nil {
			return
		}
		for {
			step, ok := call.Next(now)
			if !ok {
				call.Finish(now, routing.Usage{})
				return
			}
			if len(step.Full) > 0 {
				call.Busy(step.Full) // the spill member never is: no wait in this pool
				continue
			}
			m := step.Member
			if m.Limits.MaxInFlight > 0 {
				e.slots[m.ID]++
			}
			call.Dispatch(now)
			if m == shared {
				out.ToShared++
				arrivals = append(arrivals, now)
				inFlight++
				out.PeakInFlight = max(out.PeakInFlight, inFlight)
			}
			lat := s.MinLatency + time.Duration(e.rnd.Int64N(int64(s.MaxLatency-s.MinLatency)+1))
			q.schedule(&event{at: now.Add(lat), kind: evRun, run: func() {
				call.Report(routing.Verdict{Kind: routing.KindAnswered, Status: 200}, nil, now)
				call.Finish(now, routing.Usage{InputTokens: 100, OutputTokens: 100})
				if m.Limits.MaxInFlight > 0 {
					e.slots[m.ID]--
				}
				if m == shared {
					inFlight--
				}
			}})
			return
		}
	}
	for _, e := range edges {
		e := e
		q.schedule(&event{at: now, kind: evRun, run: func() { arrive(e) }})
	}
	for n := 0; ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return SharedStats{}, err
			}
		}
		ev := q.next()
		if ev == nil {
			break
		}
		now = ev.at
		ev.run()
	}
	out.PeakRPM = peakPerMinute(arrivals)
	return out, nil
}

// peakPerMinute is the most of the sorted times that fall in any window
// of 60 s.
func peakPerMinute(ts []time.Time) int64 {
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	var best int64
	lo := 0
	for hi := range ts {
		for ts[hi].Sub(ts[lo]) >= time.Minute {
			lo++
		}
		best = max(best, int64(hi-lo+1))
	}
	return best
}

// writeShared writes a shared run's table.
func (r Result) writeShared(b *strings.Builder) {
	sp := r.Scenario.Shared
	fmt.Fprintf(b, "### %s\n\n", r.Scenario.Title)
	fmt.Fprintf(b, "%d edges share one openai pool: shared (declared %d rpm, max_in_flight %d, weight %d) and spill (no limits, weight 1), one tier. "+
		"Each edge starts %.0f calls/min; answers take %v–%v; providers refuse nothing; %v; seed %d.\n\n",
		sp.Edges, sp.RPM, sp.MaxInFlight, sp.Weight, sp.PerEdgeRPM, sp.MinLatency, sp.MaxLatency, r.Config.Duration, r.Config.Seed)
	b.WriteString("| counting | calls | to shared | peak requests/min at shared | declared rpm | peak in flight at shared | declared max_in_flight |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.Shared {
		fmt.Fprintf(b, "| %s | %d | %d | %d | %d | %d | %d |\n", s.Policy, s.Calls, s.ToShared, s.PeakRPM, sp.RPM, s.PeakInFlight, sp.MaxInFlight)
	}
	b.WriteString("\n")
}
