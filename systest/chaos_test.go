package systest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	// loadRate is the steady load, calls a second over both edges.
	loadRate = 30
	// natsOutage is how long NATS stays stopped (issue 6: 30 s).
	natsOutage = 30 * time.Second
	// cpOutage, pgOutage and edgeOutage are how long the control plane,
	// PostgreSQL and the killed edge stay down under load.
	cpOutage   = 5 * time.Second
	pgOutage   = 8 * time.Second
	edgeOutage = 3 * time.Second
	// beforeFault and afterRecovery are how long the load runs around a
	// fault.
	beforeFault   = 3 * time.Second
	afterRecovery = 5 * time.Second
	// settleTimeout bounds the wait for ingestion to catch up: a record the
	// killed control plane had fetched but not acked comes back after the
	// consumer's ack wait (30 s).
	settleTimeout = 100 * time.Second
	// usageConsumer is the control plane's durable consumer on WEIR_USAGE.
	usageConsumer = "weir-controlplane-usage"
)

// fault is one phase's fault: from when it began to when the system was
// whole again, and which edge (if any) was killed, when, and when it
// served again.
type fault struct {
	phase      string
	from, to   time.Time
	killed     int // the edge SIGKILLed, -1 for none
	killAt, up time.Time
}

// killAndRestartEdge kills edge i with SIGKILL while it is answering a
// stream that has most of its answer to go (so that a call is cut after
// its headers for sure), restarts it with the same state dir after
// edgeOutage and waits until it serves; it notes all that in f.
func (s *system) killAndRestartEdge(ctx context.Context, l *load, f *fault, i int) {
	s.t.Helper()
	if err := waitFor(ctx, 10*time.Second, time.Millisecond, func() error {
		if !l.streamStarted(i, 40*time.Millisecond) {
			return errors.New("no stream just begun")
		}
		return nil
	}); err != nil {
		l.stop()
		s.fatalf("edge-%d: %v", i+1, err)
	}
	f.killed, f.killAt = i, time.Now()
	s.edges[i].kill()
	l.dropConns(i)
	time.Sleep(edgeOutage)
	if err := s.edges[i].start(); err != nil {
		l.stop()
		s.fatalf("restart edge-%d: %v", i+1, err)
	}
	s.waitEdgeServes(ctx, i)
	f.up = time.Now()
}

// TestChaosUnderSteadyLoad proves issue 6, "Done when" bullet 2: under
// steady load through two edges — NATS stopped for 30 s and restarted, the
// control plane killed (SIGKILL) and restarted, PostgreSQL stopped and
// restarted, and one edge killed with SIGKILL and restarted with the same
// state dir — the edges keep serving where they can, and the calls
// answered equal the calls recorded in Postgres, exactly, none counted
// twice. A fifth phase goes beyond the list: an edge killed while
// NATS is down, restarted from its disk cache and journal before NATS
// returns.
//
// A load generator sends loadRate chat completions a second, alternately
// to the two edges, half of them streaming. Each phase runs the load,
// injects its fault, recovers, runs the load a while longer, stops it,
// waits for ingestion to settle and then compares, cumulatively over all
// phases so far, the call ids the callers saw answered (from
// x-weir-call-id) with the calls table:
//
//   - every answered call is recorded once, by the edge that answered it,
//     with the status the caller saw (none missing);
//   - nothing else is recorded, except calls that were in flight on the
//     killed edge when it died (below);
//   - calls has no call id twice and call_attempts no (call, index) twice;
//     a successful call has exactly one answered attempt and as many sent
//     attempts as its x-weir-attempts said, and its usage.
//
// During NATS, control-plane and PostgreSQL outages every call to either
// edge must succeed; while an edge is down, every call to the other one.
//
// Calls in flight when an edge is SIGKILLed — the choice this test holds
// the system to. A call is answered when its whole HTTP response arrived
// (for a stream, through the chunked terminator after data: [DONE]). The
// edge writes a call's record to its journal when the call ends (one
// write(2): it survives the process dying), before the final bytes of the
// response leave the process, so an answered call is always recorded. A
// call cut by the kill is not answered: its caller got a transport error
// (a reset, or an answer cut short) and, as the OpenAI and Anthropic SDKs
// do on connection errors, retries it as a new call with a new id, which is
// recorded on its own. The cut call itself is recorded at most once: when
// its record reached the journal just before the kill it is replayed and
// recorded with what the edge knew (the provider may have done, and
// charged for, the work, so a gateway should keep it when it can);
// otherwise it died with the process, which bounds the provider spend left
// unaccounted by the calls in flight at a crash. The test allows exactly
// that: a recorded call no caller saw answered must have been in flight on
// the killed edge at the kill, and there are no more of them than such
// calls. (A caller that stops reading at data: [DONE], as SDKs do, could
// see a stream end in the microseconds between the edge's last flush and
// its journal write; this test reads answers to their HTTP end.)
func TestChaosUnderSteadyLoad(t *testing.T) {
	s := startSystem(t, "chaos", 8*time.Millisecond) // calls last ~140 ms: some are in flight at a kill
	ctx := context.Background()
	col := &collector{}
	l := newLoad(s, col)
	var faults []fault
	began := time.Now()

	// (a) NATS stopped for 30 s and restarted on the same port and store.
	l.start("nats", loadRate)
	time.Sleep(beforeFault)
	f := fault{phase: "nats", from: time.Now(), killed: -1}
	s.nats.stop()
	time.Sleep(natsOutage)
	if err := s.nats.start(); err != nil {
		l.stop()
		s.fatalf("restart NATS: %v", err)
	}
	f.to = time.Now()
	faults = append(faults, f)
	time.Sleep(afterRecovery)
	l.stop()
	s.verify(ctx, t, col.all(), faults)
	s.configStillServed(ctx, t, faults[len(faults)-1].phase)

	// (b) The control plane killed with SIGKILL and restarted.
	l.start("controlplane", loadRate)
	time.Sleep(beforeFault)
	f = fault{phase: "controlplane", from: time.Now(), killed: -1}
	s.cp.kill()
	time.Sleep(cpOutage)
	s.startCP(ctx)
	f.to = time.Now()
	faults = append(faults, f)
	time.Sleep(afterRecovery)
	l.stop()
	if out, err := s.weir(ctx, nil, "calls", "list", "--since", "1h"); err != nil {
		s.fatalf("weir calls list after the control plane's restart: %v\n%s", err, out)
	}
	s.verify(ctx, t, col.all(), faults)
	s.configStillServed(ctx, t, faults[len(faults)-1].phase)

	// (c) PostgreSQL stopped and restarted.
	l.start("postgres", loadRate)
	time.Sleep(beforeFault)
	f = fault{phase: "postgres", from: time.Now(), killed: -1}
	if err := s.stopPostgres(ctx); err != nil {
		l.stop()
		s.fatalf("stop PostgreSQL: %v", err)
	}
	time.Sleep(pgOutage)
	if err := s.startPostgres(ctx); err != nil {
		l.stop()
		s.fatalf("restart PostgreSQL: %v", err)
	}
	s.waitUp(ctx, s.cp, "control plane (after PostgreSQL's restart)", s.cpHealthy)
	f.to = time.Now()
	faults = append(faults, f)
	time.Sleep(afterRecovery)
	l.stop()
	if out, err := s.weir(ctx, nil, "calls", "list", "--since", "1h"); err != nil {
		s.fatalf("weir calls list after PostgreSQL's restart: %v\n%s", err, out)
	}
	s.verify(ctx, t, col.all(), faults)
	s.configStillServed(ctx, t, faults[len(faults)-1].phase)

	// (d) edge-1 killed with SIGKILL and restarted with the same state dir.
	l.start("edge", loadRate)
	time.Sleep(beforeFault)
	f = fault{phase: "edge", from: time.Now(), killed: -1}
	s.killAndRestartEdge(ctx, l, &f, 0)
	f.to = time.Now()
	faults = append(faults, f)
	time.Sleep(afterRecovery)
	l.stop()
	s.verify(ctx, t, col.all(), faults)
	s.configStillServed(ctx, t, f.phase)

	// (e) Beyond the list, the journal's hardest case: edge-2
	// killed while NATS is down, with records of both edges waiting in
	// their journals; it restarts from its disk cache (config) and journal
	// (records) and serves before NATS is back.
	l.start("edge-nats", loadRate)
	time.Sleep(beforeFault)
	f = fault{phase: "edge-nats", from: time.Now(), killed: -1}
	s.nats.stop()
	time.Sleep(edgeOutage) // records pile up in the journals
	s.killAndRestartEdge(ctx, l, &f, 1)
	time.Sleep(edgeOutage)
	if err := s.nats.start(); err != nil {
		l.stop()
		s.fatalf("restart NATS: %v", err)
	}
	f.to = time.Now()
	faults = append(faults, f)
	time.Sleep(afterRecovery)
	l.stop()
	s.verify(ctx, t, col.all(), faults)
	s.configStillServed(ctx, t, f.phase)

	t.Logf("chaos phases done in %s", time.Since(began).Round(time.Second))
}

// configStillServed makes a config change with the CLI after a phase and
// waits until both edges serve it: config push came back with the system
// (the edges' KV watches after NATS's restart, the publisher after the
// control plane's and PostgreSQL's, the killed edge's after its own).
func (s *system) configStillServed(ctx context.Context, t *testing.T, phase string) {
	t.Helper()
	model := "sys-after-" + phase
	if out, err := s.weir(ctx, nil, "provider", "set", poolName, "--models", poolModel+","+model); err != nil {
		s.fatalf("after phase %s: weir provider set: %v\n%s", phase, err, out)
	}
	exited := time.Now()
	c := &http.Client{Timeout: 5 * time.Second}
	for e := range s.edges {
		if err := waitFor(ctx, 30*time.Second, 5*time.Millisecond, func() error { return s.modelServed(c, e, model) }); err != nil {
			s.fatalf("after phase %s: edge-%d does not serve a config change: %v", phase, e+1, err)
		}
	}
	t.Logf("phase %-12s afterwards a CLI change reached both edges in %s", phase, time.Since(exited).Round(time.Millisecond))
}

// recorded is a row of calls with its attempts.
type recorded struct {
	edgeID           string
	startedAt        time.Time
	status           int
	outcome          string
	outputTokens     int64
	sentAttempts     int // attempts other than skips
	answeredAttempts int
}

// verify waits for ingestion to settle and checks the calls table against
// what the callers saw (see TestChaosUnderSteadyLoad), and the success of
// calls during each fault.
func (s *system) verify(ctx context.Context, t *testing.T, results []callResult, faults []fault) {
	t.Helper()
	cur := faults[len(faults)-1]
	s.checkServing(t, results, cur)

	answered := map[string]callResult{}
	cut := map[string]callResult{} // transport errors after answer headers: the id is known
	inFlightAtKill := 0            // calls the killed edge held when it died
	for _, r := range results {
		switch {
		case r.complete && r.callID == "":
			t.Errorf("call %d (edge-%d, %s): a complete answer (%d) without x-weir-call-id", r.seq, r.edge+1, r.phase, r.status)
		case r.complete:
			if _, dup := answered[r.callID]; dup {
				t.Errorf("call id %s answered twice", r.callID)
			}
			answered[r.callID] = r
		case r.callID != "":
			cut[r.callID] = r
		}
		if !r.complete {
			for _, f := range faults {
				if f.killed == r.edge && r.start.Before(f.killAt) && !r.end.Before(f.killAt) {
					inFlightAtKill++
				}
			}
		}
	}

	if cur.killed >= 0 {
		cutNow := 0
		for _, r := range results {
			if r.phase == cur.phase && !r.complete && r.callID != "" && wasKilledWith(r, faults[len(faults)-1:]) {
				cutNow++
			}
		}
		if cutNow == 0 {
			t.Errorf("phase %s: no call was cut after its headers by the kill of edge-%d: the case of calls in flight was not exercised", cur.phase, cur.killed+1)
		}
	}

	settleFrom := time.Now()
	got, streamMsgs, err := s.settle(ctx, answered)
	settled := time.Since(settleFrom)
	if err != nil {
		if got == nil {
			s.fatalf("phase %s: ingestion did not settle: %v", cur.phase, err)
		}
		t.Errorf("phase %s: ingestion did not settle: %v", cur.phase, err) // the checks below say what is off
	}

	// None missing.
	var missing []string
	for id := range answered {
		if _, ok := got[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		t.Errorf("phase %s: %d of %d answered calls are not recorded, e.g. %s", cur.phase, len(missing), len(answered), strings.Join(missing[:min(5, len(missing))], " "))
	}
	// Nothing else, but calls the killed edge held when it died.
	var extra []string
	extraCut, extraUnseen := 0, 0
	for id, row := range got {
		if _, ok := answered[id]; ok {
			continue
		}
		if r, ok := cut[id]; ok && wasKilledWith(r, faults) {
			extraCut++
			continue
		}
		if heldAtKill(row, faults) {
			extraUnseen++
			continue
		}
		extra = append(extra, id+" ("+row.edgeID+")")
	}
	if len(extra) > 0 {
		t.Errorf("phase %s: %d recorded calls no caller saw answered and no killed edge held: %s", cur.phase, len(extra), strings.Join(extra[:min(5, len(extra))], " "))
	}
	if extraCut+extraUnseen > inFlightAtKill {
		t.Errorf("phase %s: %d recorded calls were cut by a kill, but only %d calls were in flight on a killed edge", cur.phase, extraCut+extraUnseen, inFlightAtKill)
	}
	// Each answered call as the caller saw it.
	bad := 0
	for id, r := range answered {
		row, ok := got[id]
		if !ok {
			continue
		}
		var problems []string
		if want := fmt.Sprintf("edge-%d", r.edge+1); row.edgeID != want {
			problems = append(problems, fmt.Sprintf("edge_id %s, want %s", row.edgeID, want))
		}
		if row.status != r.status {
			problems = append(problems, fmt.Sprintf("status %d, the caller saw %d", row.status, r.status))
		}
		if r.success {
			if row.outcome != "answered" || row.answeredAttempts != 1 {
				problems = append(problems, fmt.Sprintf("outcome %s with %d answered attempts, want answered with 1", row.outcome, row.answeredAttempts))
			}
			if row.sentAttempts != r.attempts {
				problems = append(problems, fmt.Sprintf("%d attempts recorded, x-weir-attempts said %d", row.sentAttempts, r.attempts))
			}
			if row.outputTokens <= 0 {
				problems = append(problems, "no output tokens recorded")
			}
		}
		if len(problems) > 0 {
			bad++
			if bad <= 5 {
				t.Errorf("phase %s: call %s (%s, edge-%d): %s", cur.phase, id, r.phase, r.edge+1, strings.Join(problems, "; "))
			}
		}
	}
	if bad > 5 {
		t.Errorf("phase %s: %d recorded calls differ from what their callers saw", cur.phase, bad)
	}
	// None counted twice, over the whole table.
	var calls, distinctCalls, attempts, distinctAttempts int64
	err = s.query(ctx, func(c *pgx.Conn) error {
		if err := c.QueryRow(ctx, `SELECT count(*), count(DISTINCT call_id) FROM calls`).Scan(&calls, &distinctCalls); err != nil {
			return err
		}
		return c.QueryRow(ctx, `SELECT count(*), count(DISTINCT (call_id, attempt_index)) FROM call_attempts`).Scan(&attempts, &distinctAttempts)
	})
	if err != nil {
		s.fatalf("phase %s: counting: %v", cur.phase, err)
	}
	if calls != distinctCalls || attempts != distinctAttempts {
		t.Errorf("phase %s: counted twice: calls %d rows for %d ids, call_attempts %d rows for %d (call, index)", cur.phase, calls, distinctCalls, attempts, distinctAttempts)
	}
	if calls != int64(len(got)) {
		t.Errorf("phase %s: calls holds %d rows, the tenant's are %d: the test's tenant should be alone", cur.phase, calls, len(got))
	}

	// Report.
	var phaseCalls, phaseOK, cutN, refused int
	for _, r := range results {
		if r.phase != cur.phase {
			continue
		}
		phaseCalls++
		switch {
		case r.success:
			phaseOK++
		case r.callID != "":
			cutN++
		case r.err != nil:
			refused++
		}
	}
	t.Logf("phase %-12s %4d calls (%d succeeded, %d cut after headers, %d with no answer); fault %s; settled in %s; "+
		"recorded so far %d = answered %d (+%d cut, +%d unseen, of %d in flight at kills); calls rows %d, attempts rows %d; WEIR_USAGE messages %d",
		cur.phase, phaseCalls, phaseOK, cutN, refused, cur.to.Sub(cur.from).Round(100*time.Millisecond), settled.Round(100*time.Millisecond),
		len(got), len(answered), extraCut, extraUnseen, inFlightAtKill, calls, attempts, streamMsgs)
	if t.Failed() {
		s.fatalf("phase %s failed", cur.phase)
	}
}

// checkServing asserts that the edges kept serving through the current
// fault: every call of the phase succeeded, except calls to a killed edge
// that overlapped its time down; and it logs the success rate of the calls
// sent during the fault.
func (s *system) checkServing(t *testing.T, results []callResult, f fault) {
	t.Helper()
	var during [2]struct{ n, ok int }
	failed := 0
	for _, r := range results {
		if r.phase != f.phase {
			continue
		}
		if !r.start.Before(f.from) && r.start.Before(f.to) {
			during[r.edge].n++
			if r.success {
				during[r.edge].ok++
			}
		}
		if r.success {
			continue
		}
		if f.killed == r.edge && r.start.Before(f.up) && !r.end.Before(f.killAt) {
			continue // the edge was down (or dying) for this call
		}
		failed++
		if failed <= 5 {
			t.Errorf("phase %s: call %d to edge-%d at %+.3fs into the fault failed while that edge was up: status %d, error %v, body %.200s",
				f.phase, r.seq, r.edge+1, r.start.Sub(f.from).Seconds(), r.status, r.err, r.body)
		}
	}
	if failed > 5 {
		t.Errorf("phase %s: %d calls failed while their edge was up", f.phase, failed)
	}
	for e := range during {
		d := during[e]
		rate := 0.0
		if d.n > 0 {
			rate = 100 * float64(d.ok) / float64(d.n)
		}
		down := ""
		if f.killed == e {
			down = " (killed and restarted)"
		}
		t.Logf("phase %-12s during the fault edge-%d%s: %d/%d calls succeeded (%.1f %%)", f.phase, e+1, down, d.ok, d.n, rate)
		if f.killed != e && d.n == 0 {
			t.Errorf("phase %s: no call reached edge-%d during the fault: the load did not run", f.phase, e+1)
		}
	}
}

// wasKilledWith reports whether r was to an edge that was killed while r
// was in flight.
func wasKilledWith(r callResult, faults []fault) bool {
	for _, f := range faults {
		if f.killed == r.edge && r.start.Before(f.killAt) && !r.end.Before(f.killAt) {
			return true
		}
	}
	return false
}

// heldAtKill reports whether a recorded call could have been in flight on
// an edge when it was killed: recorded by that edge, started before the
// kill and not longer before it than a call lasts.
func heldAtKill(row recorded, faults []fault) bool {
	for _, f := range faults {
		if f.killed >= 0 && row.edgeID == fmt.Sprintf("edge-%d", f.killed+1) &&
			row.startedAt.Before(f.killAt) && row.startedAt.After(f.killAt.Add(-callTimeout)) {
			return true
		}
	}
	return false
}

// settle waits until every answered call is recorded and the control
// plane's consumer has nothing pending or unacked, twice in a row with the
// same count of rows, and returns the tenant's recorded calls and how many
// messages WEIR_USAGE holds (more than the calls when a record was
// published again after the stream's duplicate window).
func (s *system) settle(ctx context.Context, answered map[string]callResult) (map[string]recorded, uint64, error) {
	nc, err := nats.Connect(s.nats.url(), nats.Name("systest"), s.nats.controlPlaneAuth())
	if err != nil {
		return nil, 0, fmt.Errorf("connect to NATS: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, 0, err
	}
	var got map[string]recorded
	var msgs uint64
	lastCount := -1
	err = waitFor(ctx, settleTimeout, 250*time.Millisecond, func() error {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		cons, err := js.Consumer(cctx, "WEIR_USAGE", usageConsumer)
		if err != nil {
			lastCount = -1
			return fmt.Errorf("usage consumer: %w", err)
		}
		info, err := cons.Info(cctx)
		if err != nil {
			lastCount = -1
			return fmt.Errorf("usage consumer: %w", err)
		}
		if st, err := js.Stream(cctx, "WEIR_USAGE"); err == nil {
			if si, err := st.Info(cctx); err == nil {
				msgs = si.State.Msgs
			}
		}
		got, err = s.recordedCalls(ctx)
		if err != nil {
			lastCount = -1
			return err
		}
		missing := 0
		for id := range answered {
			if _, ok := got[id]; !ok {
				missing++
			}
		}
		stable := lastCount == len(got)
		lastCount = len(got)
		if missing > 0 || info.NumPending > 0 || info.NumAckPending > 0 || !stable {
			return fmt.Errorf("%d answered calls not recorded yet, %d recorded; consumer: %d pending, %d unacked, %d redelivered",
				missing, len(got), info.NumPending, info.NumAckPending, info.NumRedelivered)
		}
		return nil
	})
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("timed out: %w", err)
	}
	return got, msgs, err
}

// recordedCalls reads the test tenant's calls with their attempts.
func (s *system) recordedCalls(ctx context.Context) (map[string]recorded, error) {
	got := map[string]recorded{}
	err := s.query(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `
SELECT c.call_id, c.edge_id, c.started_at, c.status, c.outcome, c.output_tokens,
       count(a.call_id) FILTER (WHERE a.outcome <> 'skipped'),
       count(a.call_id) FILTER (WHERE a.outcome = 'answered')
FROM calls c
JOIN tenants t ON t.id = c.tenant_id AND t.name = $1
LEFT JOIN call_attempts a ON a.call_id = c.call_id
GROUP BY c.call_id`, s.tenant)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var r recorded
			if err := rows.Scan(&id, &r.edgeID, &r.startedAt, &r.status, &r.outcome, &r.outputTokens, &r.sentAttempts, &r.answeredAttempts); err != nil {
				return err
			}
			got[id] = r
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("reading calls: %w", err)
	}
	return got, nil
}
