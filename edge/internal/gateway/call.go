package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/edge/internal/callerlimit"
	"weir.dev/edge/internal/netguard"
	"weir.dev/edge/internal/translate"
	"weir.dev/edge/internal/wire"
	"weir.dev/edge/internal/wire/translated"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing"
)

// heldAnswer is an upstream error answer kept in case it becomes the call's
// answer as is (R-END-2's spent 429, R-END-5's key refusal).
type heldAnswer struct {
	status int
	header http.Header
	body   []byte
	// wire is the answering member's format: a body passed on to a caller
	// of another format is rewritten into the caller's error shape
	// (R-FMT-5).
	wire routing.WireFormat
}

// adapter is the adapter of an attempt to m: the member format's own when
// the caller speaks it (R-FMT-1, the body goes as sent), else the
// translating adapter over it (R-FMT-2). nil when the edge has no adapter
// for the member's format.
func (c *callRun) adapter(m *routing.Member) wire.Adapter {
	f := m.Format()
	native := c.gw.cfg.Adapters[f]
	if native == nil || c.endpoint.Native(f) {
		return native
	}
	return translated.Adapter{Wire: f, Native: native}
}

// attemptInfo is what the gateway measured of one attempt.
type attemptInfo struct {
	// set says the attempt was measured (it went out, or was refused
	// its destination).
	set      bool
	start    time.Time
	latency  time.Duration
	cost     routing.Nanos
	estimate bool
}

// callRun is one call in flight, from the caller's request to its record.
type callRun struct {
	gw       *Gateway
	endpoint routing.Endpoint
	id       string
	start    time.Time
	// req is the caller's request; the sink gets its context without its
	// cancellation.
	req *http.Request
	out *out
	// outv is what out points to, held in the call to save an allocation.
	outv out
	// log is the call's logger once built (see logger): nil until the
	// call logs a line.
	log *slog.Logger
	// table and key are the caller's tenant and API key (table nil: the
	// key is unknown).
	table *routing.Table
	key   *routing.Key
	// request is the caller's body as read (nil until bodyRead), held in
	// inbound.
	request *Inbound
	inbound Inbound
	// bodyRead is set once the caller's body was read whole.
	bodyRead bool
	// jobHash names the call's job for affinity and cache reports ("" for
	// none).
	jobHash string
	// call is the routing core's state of this call (nil until a member
	// could be chosen).
	call *routing.Call
	// measured holds what the gateway measured of each attempt, and
	// heldAnswers the upstream error answers kept in case one becomes the
	// call's answer as is; both by attempt index (see measure and held).
	// measuredBuf is measured's first storage, so that a call of one or
	// two attempts allocates none for it.
	measured    []attemptInfo
	measuredBuf [2]attemptInfo
	heldAnswers []*heldAnswer
	// usage and cost are what the answering member reported and cost;
	// costFlagged says the cost is an estimate (R-COST-3); reserved is the
	// budget reservation (R-COST-1).
	usage       routing.Usage
	cost        routing.Nanos
	costFlagged bool
	reserved    routing.Nanos
	// status and errorCode are the answer's HTTP status and, for the
	// gateway's own errors, its code.
	status    int
	errorCode string
	outcome   telemetryv1.CallOutcome
	// cacheReport is R-SEE-3's report when the job moved to another member.
	cacheReport *telemetryv1.CacheReport
	// upstreamTime sums time spent waiting on providers, for the overhead
	// metric.
	upstreamTime time.Duration
	// recorded is set once the call's record went to the sink (commit).
	recorded bool
	// memberDone is set once the member that answered got its in-flight
	// slot back (Call.Finish or States.Done).
	memberDone bool
	// attemptParents are the attempts' parent contexts, by netguard
	// policy (attemptContext); detachedCtx is the request context without
	// its cancellation, for the sink.
	attemptParents [2]attemptParent
	detachedCtx    detached
	// ended is callErr's answer once not nil.
	ended error
	// wctx is the call's context with its deadline for waits between
	// attempts (nil until one waits), wcancel its cancel.
	wctx    context.Context
	wcancel context.CancelFunc
	// delivered is set once the caller's answer was written whole: a
	// relayed answer (or a cut stream's error event), a passed-through
	// upstream answer, or the gateway's own error.
	delivered bool
	// slot is the in-flight slot of the member the current attempt went
	// to (R-CAP-1), nil when none is held or the member has no cap. It is
	// held until the call's answer has ended or was cut, and given back
	// when the attempt fails over (releaseSlot).
	slot *memberSlot
	// traced is the call's trace span, nil when tracing is off (a
	// pointer: the call's own size stays the same without tracing).
	traced *callSpan
	// rec is the storage of the call's record (commit), held in the call
	// so that the record takes one allocation, the call's, not one per
	// message. The sink may keep the record: the call is then kept with it.
	rec recordStore
	// idVal and metaVals hold the values of the x-weir-call-id and
	// metaHeaders headers (metaUsed: metaVals is in use).
	idVal    [1]string
	metaVals [3]string
	metaUsed bool
}

// recordStore holds a call record and the messages it points to, for one
// or two attempts; more attempts take allocations of their own.
type recordStore struct {
	rec         telemetryv1.CallRecord
	usage       telemetryv1.Usage
	started     timestamppb.Timestamp
	dur         durationpb.Duration
	attempts    [2]telemetryv1.Attempt
	attStarted  [2]timestamppb.Timestamp
	attLatency  [2]durationpb.Duration
	attemptPtrs [2]*telemetryv1.Attempt
}

// measure returns the measurement of attempt idx, marked set, growing
// measured as needed. The pointer is valid until the next measure.
func (c *callRun) measure(idx int) *attemptInfo {
	if c.measured == nil {
		c.measured = c.measuredBuf[:0]
	}
	for len(c.measured) <= idx {
		c.measured = append(c.measured, attemptInfo{})
	}
	ai := &c.measured[idx]
	ai.set = true
	return ai
}

// measuredAt is the measurement of attempt idx, nil when there is none.
func (c *callRun) measuredAt(idx int) *attemptInfo {
	if idx < 0 || idx >= len(c.measured) || !c.measured[idx].set {
		return nil
	}
	return &c.measured[idx]
}

// held is the upstream error answer attempt idx kept, nil when none.
func (c *callRun) held(idx int) *heldAnswer {
	if idx < 0 || idx >= len(c.heldAnswers) {
		return nil
	}
	return c.heldAnswers[idx]
}

// hold keeps attempt idx's upstream error answer h.
func (c *callRun) hold(idx int, h *heldAnswer) {
	for len(c.heldAnswers) <= idx {
		c.heldAnswers = append(c.heldAnswers, nil)
	}
	c.heldAnswers[idx] = h
}

// serveCall runs one call from its caller's request to its one answer
// (R-SEE-1) and hands its record to the sink (R-SEE-2) before the caller
// can hold that answer whole (see commit).
func (g *Gateway) serveCall(rw http.ResponseWriter, r *http.Request, ep routing.Endpoint) {
	c := &callRun{gw: g, endpoint: ep, id: newCallID(), start: g.cfg.Now(), req: r}
	c.out = &c.outv
	c.out.init(rw)
	c.out.run = c
	c.idVal[0] = c.id
	rw.Header()[hCallID] = c.idVal[:] // Set, with the call's own storage
	if g.cfg.Tracer != nil {
		c.startSpan()
	}
	defer c.finish()
	defer c.recoverPanic()

	defer c.releaseSlot() // R-CAP-1: on every return and panic
	if g.cfg.LiveEdges != nil {
		g.cfg.States.ShareAmong(g.cfg.LiveEdges()) // R-HEAD-7
	}
	c.table, c.key = g.cfg.Registry.Lookup(apiKey(r.Header))
	if c.table == nil {
		c.fail(invalidKey())
		return
	}
	// R-CAP-2: caller limits, before the body is read. The slot is held
	// until serveCall returns: the answer has ended (a stream's last event
	// included) or was cut; a panic releases it too (deferred).
	slot, refused := g.limits.Acquire(c.table, c.key)
	if refused != nil {
		g.cfg.Metrics.CallerLimited.WithLabelValues(c.table.TenantName, refused.Limit.String()).Inc() // R-CAP-3
		c.fail(limitError(refused))
		return
	}
	defer slot.Release()
	req, job, e := c.routingRequest()
	if e != nil {
		c.fail(e)
		return
	}
	call, e := c.table.Begin(req, g.cfg.States, callRand{}, g.cfg.Now())
	if e != nil {
		c.fail(e)
		return
	}
	c.call = call
	// R-COST-1: reserve before choosing a member.
	c.reserved = routing.Reservation(call.Members(), call.Model(), req.InputTokens, req.MaxOutput)
	settle, e := g.cfg.Budgets.Reserve(c.table, c.key, c.reserved)
	if e != nil {
		c.fail(e)
		return
	}
	defer func() { settle(c.cost) }()
	c.answer(job)
}

// jobMemory is what affinity remembers of the call's job: the member its
// last call went to and the input tokens that member holds cached (for
// R-SEE-3's cache report).
type jobMemory struct {
	lastMember string
	lastCached int64
}

// routingRequest reads the caller's body and headers into the request the
// routing core chooses members for, and looks up the job's last member.
func (c *callRun) routingRequest() (routing.Request, jobMemory, *routing.Error) {
	r, g := c.req, c.gw
	in, e := readInbound(r, c.out.rc, c.endpoint, g.body, &c.inbound)
	if e != nil {
		return routing.Request{}, jobMemory{}, e
	}
	c.request, c.bodyRead = in, true
	regions, e := routing.ParseRegions(strings.Join(r.Header.Values("X-Weir-Regions"), ","))
	if e != nil {
		return routing.Request{}, jobMemory{}, e
	}
	bodyJob := in.PromptCacheKey
	if c.endpoint == routing.EndpointMessages {
		bodyJob = in.UserID
	}
	req := routing.Request{Endpoint: c.endpoint, Model: in.Model, Key: c.key, Regions: regions,
		JobID:       routing.JobID(r.Header.Get("X-Weir-Job"), r.Header.Get("X-Weir-Conversation"), bodyJob),
		InputTokens: estimateInputTokens(in.Body), MaxOutput: in.MaxOutput, Features: in.Features}
	var job jobMemory
	if req.JobID != "" {
		c.jobHash = routing.JobHash(c.table.TenantID, req.JobID)
		job.lastMember, job.lastCached, _ = g.cfg.Affinity.Get(c.table.TenantID, c.jobHash)
		req.LastMemberID = job.lastMember
	}
	return req, job, nil
}

// answer runs the attempts within the call's deadline and writes the
// call's one answer: a member's, an upstream answer passed on as is, or
// the gateway's own error (R-END-*). A caller that went away gets nothing
// (recorded as cancelled, 499).
func (c *callRun) answer(job jobMemory) {
	g, call, r := c.gw, c.call, c.req
	defer func() {
		if c.wcancel != nil {
			c.wcancel()
		}
	}()
	if c.request.Stream {
		c.out.keepAlive(c.start, g.cfg.KeepAlive, g.cfg.Now)
		defer c.out.stopKeepAlive()
	}
	c.out.setMeta()
	if c.attempts(job) {
		if served := call.Served(); served != nil && c.jobHash != "" {
			g.cfg.Affinity.Put(c.table.TenantID, c.jobHash, served.ID, c.usage.CacheReadTokens+c.usage.CacheWriteTokens)
		}
		return
	}
	c.out.stopKeepAlive()
	if r.Context().Err() != nil {
		c.outcome = telemetryv1.CallOutcome_CALL_OUTCOME_CANCELLED
		c.status = 499
		return
	}
	f := call.Final(g.cfg.Now())
	if f.PassThrough >= 0 {
		if h := c.held(f.PassThrough); h != nil {
			if f.ShouldRetry != nil {
				h.header.Set(hShouldRetry, strconv.FormatBool(*f.ShouldRetry))
			}
			c.passThrough(h, false)
			return
		}
	}
	if f.Err == nil {
		f.Err = &routing.Error{Status: http.StatusBadGateway, Code: routing.CodeUpstreamUnreachable, Message: "no deployment answered"}
	}
	c.fail(f.Err)
}

// attempts runs the attempt loop. It returns true when an answer was
// delivered to the caller (success, the request's own 4xx, or an unknown
// outcome), false when the call's final answer is still to be written.
// job is the job's previous member, for R-SEE-3's cache report.
func (c *callRun) attempts(job jobMemory) bool {
	for {
		c.releaseSlot() // a failed-over attempt's member gets its slot back
		step, ok := c.call.Next(c.gw.cfg.Now())
		if !ok {
			return false
		}
		if len(step.Full) > 0 {
			// R-CAP-1: every member that may take the call is full.
			m, proceed := c.waitSlot(step)
			if !proceed {
				if c.callErr() != nil {
					return false
				}
				continue
			}
			step = routing.Step{Member: m}
		}
		if step.Wait > 0 {
			t := time.NewTimer(step.Wait)
			select {
			case <-c.waitContext().Done():
				t.Stop()
			case <-t.C:
			}
		}
		if c.callErr() != nil {
			// R-FAIL-10: cancelled (or out of time) before the attempt went out.
			c.call.Report(routing.Verdict{Kind: routing.KindCancelled, Reason: "cancelled"}, nil, c.gw.cfg.Now())
			return false
		}
		if c.slot == nil && !c.takeSlot(step.Member) {
			c.call.Full() // another call took its last slot since Next
			continue
		}
		switch c.try(step.Member, len(c.call.Attempts)-1, job) {
		case tryDelivered:
			return true
		case tryEnded:
			return false
		}
	}
}

// takeSlot takes a slot of m for the attempt about to go to it (R-CAP-1);
// false when m is full.
func (c *callRun) takeSlot(m *routing.Member) bool {
	s, ok := c.gw.slots.take(m, c.gw.cfg.States.MaxInFlight(m))
	c.slot = s
	return ok
}

// waitSlot waits, first come first served, up to step.Wait for a slot of
// one of step.Full (R-CAP-1) and makes that member the pending attempt. It
// returns the member and true when the attempt may go to it; false when
// none freed in time (the call is then busy, R-END-7), the call's context
// ended, or the member may no longer take the call (ask Next again).
func (c *callRun) waitSlot(step routing.Step) (*routing.Member, bool) {
	g := c.gw
	caps := make([]int64, len(step.Full))
	for i, m := range step.Full {
		caps[i] = g.cfg.States.MaxInFlight(m)
	}
	s, m, ok := g.slots.wait(c.waitContext(), step.Full, caps, step.Wait)
	if !ok {
		if err := c.callErr(); err == nil || errors.Is(err, context.DeadlineExceeded) {
			c.call.Busy(step.Full)
		}
		return nil, false
	}
	c.slot = s
	if !c.call.Take(m, g.cfg.Now()) {
		c.releaseSlot()
		return nil, false
	}
	return m, true
}

// releaseSlot gives back the slot the call holds, if any (exactly once).
func (c *callRun) releaseSlot() {
	c.slot.release()
	c.slot = nil
}

// tryResult says how the attempt loop goes on after one try.
type tryResult uint8

const (
	// tryNext: the member did not answer for the caller; ask the routing
	// core for the next step.
	tryNext tryResult = iota
	// tryDelivered: an answer went to the caller.
	tryDelivered
	// tryEnded: the call ends without an answer written yet (the core
	// said stop); its final answer is still to be written.
	tryEnded
)

// try is tryAttempt, within the attempt's span when tracing is on.
func (c *callRun) try(m *routing.Member, idx int, job jobMemory) tryResult {
	if c.traced == nil {
		return c.tryAttempt(m, idx, job, nil)
	}
	s := c.startAttempt(m, idx)
	defer c.endAttempt(s, idx)
	return c.tryAttempt(m, idx, job, s)
}

// tryAttempt sends attempt idx of the call to member m and reports its
// verdict to the routing core: it builds the upstream request, checks where
// it may go (R-SEC-2), signs it, sends it, classifies the answer
// (R-FAIL-*) and, when the core says deliver, relays the answer to the
// caller. span is the attempt's trace span (nil when tracing is off): its
// context goes upstream in the request's traceparent.
func (c *callRun) tryAttempt(m *routing.Member, idx int, job jobMemory, span trace.Span) tryResult {
	g, call := c.gw, c.call
	ad := c.adapter(m)
	if ad == nil {
		call.Report(routing.TransportVerdict("no adapter for wire format "+m.Format().String()), nil, g.cfg.Now())
		return tryNext
	}
	pol := netguard.PolicyFor(m.Record.Managed, m.Record.Internal)
	actx, acancel, timer := c.attemptContext(pol)
	defer acancel()
	defer timer.release()
	ureq, err := ad.Build(actx, c.request, m, m.UpstreamModel(call.Model()))
	if err != nil {
		msg := "request body cannot be sent to the provider"
		if bad, ok := errors.AsType[*translate.BadRequest](err); ok {
			msg = "request body cannot be translated for the provider: " + bad.Error()
		}
		c.fail(&routing.Error{Status: 400, Code: routing.CodeInvalidRequest, Message: msg})
		return tryDelivered
	}
	if span != nil {
		span.SetAttributes(attrServerAddress.String(ureq.URL.Hostname()))
		injectAttempt(span, ureq.Header) // before signing: a signature covers it
	}
	if err := netguard.CheckParsedURL(ureq.URL, pol); err != nil {
		// R-SEC-2 / R-FAIL-5: the edge may not send to this member.
		call.Dispatch(g.cfg.Now())
		c.measure(idx).start = g.cfg.Now()
		c.event(m, "destination_refused")
		call.Report(routing.TransportVerdict("destination_refused"), nil, g.cfg.Now())
		return tryNext
	}
	if err := g.cfg.Signer.Sign(actx, ureq, upstreamBody(ureq, m), m, c.table.TenantID); err != nil {
		kind := g.cfg.SignErrorKind(err)
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			kind = routing.KindCallEnded // R-END-4
		}
		c.event(m, "key_unavailable")
		if call.Report(routing.Verdict{Kind: kind, Reason: kind.String()}, nil, g.cfg.Now()) == routing.ActStop {
			return tryEnded
		}
		return tryNext
	}
	call.Dispatch(g.cfg.Now())
	ai := c.measure(idx)
	ai.start = g.cfg.Now()
	resp, timedOut, err := c.roundTrip(timer, acancel, ureq, m.Record.Recovery.AttemptDeadline)
	ai.latency = g.cfg.Now().Sub(ai.start)
	c.upstreamTime += ai.latency
	g.cfg.Metrics.Upstream(m.Record.Name, m.Name).Observe(ai.latency.Seconds())
	v, rl := c.verdict(m, idx, ureq, resp, timedOut, err)
	if v.Kind == routing.KindTimeout || v.Kind == routing.KindUnknownOutcome {
		ai.cost, ai.estimate = routing.AttemptCost(m, call.Model(), v.Kind, estimateInputTokens(c.request.Body))
	}
	c.event(m, v.Kind.String())
	switch call.Report(v, &rl, g.cfg.Now()) {
	case routing.ActDeliver:
		if v.Kind == routing.KindAnswered && c.jobHash != "" && m.ID != job.lastMember {
			c.cacheMiss(job.lastMember, m, job.lastCached) // in the record, written before the answer ends
		}
		if c.deliver(m, v, resp, idx) {
			return tryDelivered
		}
		return tryEnded
	case routing.ActStop:
		c.outcome = telemetryv1.CallOutcome_CALL_OUTCOME_CANCELLED
		return tryEnded
	}
	if resp != nil && v.Kind == routing.KindAnswered {
		_ = resp.Body.Close()
	}
	return tryNext
}

// verdict classifies one attempt's outcome (R-FAIL-*): the caller gone or
// the call out of time, an attempt timeout (R-FAIL-9), a transport failure
// (R-FAIL-5), or the member's answer with its rate-limit headers. An error
// answer is kept, redacted (R-SEC-6), in case it is passed on as is.
func (c *callRun) verdict(m *routing.Member, idx int, ureq *http.Request, resp *http.Response, timedOut bool, err error) (routing.Verdict, routing.RateLimits) {
	switch {
	case err != nil && c.callErr() != nil && !timedOut:
		// The caller went away (or the call deadline passed) while the
		// attempt was out.
		if errors.Is(c.callErr(), context.DeadlineExceeded) {
			return routing.TimeoutVerdict(), routing.RateLimits{}
		}
		return routing.Verdict{Kind: routing.KindCancelled, Reason: "cancelled"}, routing.RateLimits{}
	case err != nil && timedOut:
		return routing.TimeoutVerdict(), routing.RateLimits{} // R-FAIL-9
	case err != nil:
		return routing.TransportVerdict(transportReason(err)), routing.RateLimits{} // R-FAIL-5
	}
	now := c.gw.cfg.Now()
	rl := routing.ParseRateLimits(resp.Header, m.Record.RateLimitHeaders, now)
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return routing.Verdict{Kind: routing.KindAnswered, Status: resp.StatusCode}, rl
	}
	peek, _ := io.ReadAll(io.LimitReader(resp.Body, routing.MaxErrorPeek))
	_ = resp.Body.Close()
	v := routing.ClassifyWith(m.Format(), resp.StatusCode, resp.Header, peek, m.Record.RateLimitHeaders, now)
	// R-SEC-6: the answer may be passed on as is; it never carries the
	// member's key, token or signature.
	secrets := secretsOf(ureq, m)
	hdr := resp.Header.Clone()
	redactHeader(hdr, secrets)
	c.hold(idx, &heldAnswer{status: resp.StatusCode, header: hdr, body: redact(peek, secrets, len(peek) == routing.MaxErrorPeek), wire: m.Format()})
	return v, rl
}

// limitError is the answer to a call refused by a caller limit (R-CAP-2):
// 429 weir_tenant_limit or weir_key_limit, Retry-After when a call would
// fit (whole seconds, at least 1), x-should-retry: true.
func limitError(r *callerlimit.Refusal) *routing.Error {
	code, whose := routing.CodeKeyLimit, "the API key's"
	if r.Limit.Tenant() {
		code, whose = routing.CodeTenantLimit, "the tenant's"
	}
	what := "rpm"
	if r.Limit == callerlimit.TenantMaxInFlight || r.Limit == callerlimit.KeyMaxInFlight {
		what = "max_in_flight"
	}
	retry := true
	return &routing.Error{Status: http.StatusTooManyRequests, Code: code, RetryAfter: r.RetryAfter, ShouldRetry: &retry,
		Message: whose + " " + what + " limit is reached (this gateway's share of it is " + strconv.FormatInt(r.Share, 10) +
			"); retry after " + strconv.FormatInt(routing.RetryAfterSeconds(r.RetryAfter), 10) + " s"}
}

// upstreamBody returns the exact bytes an upstream request will send, for
// SigV4 to sign their hash; other auth kinds need no body.
func upstreamBody(r *http.Request, m *routing.Member) []byte {
	if m.Auth.Kind != routing.AuthSigV4 || r.GetBody == nil {
		return nil
	}
	rc, err := r.GetBody()
	if err != nil {
		return nil
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return b
}

// roundTrip sends one attempt. timer (attemptContext's) cancels the
// attempt at the call deadline; until the response headers come it fires
// at the attempt deadline instead when that comes first (R-FAIL-9; 0
// disables it), and it is set back to the call deadline when they came in
// time, for the answer's body.
func (c *callRun) roundTrip(timer *attemptTimer, cancel context.CancelFunc, req *http.Request, deadline time.Duration) (*http.Response, bool, error) {
	armed := deadline > 0 && deadline < time.Until(c.call.Deadline) && timer.Stop()
	if armed {
		timer.Reset(deadline)
	}
	resp, err := c.gw.cfg.Transport.RoundTrip(req)
	if armed {
		if !timer.Stop() {
			// The timer fired: its cancel has run or is running. Cancelling
			// again is a no-op that returns once the context is cancelled.
			cancel()
			if resp != nil {
				_ = resp.Body.Close()
			}
			return nil, true, context.DeadlineExceeded
		}
		timer.Reset(time.Until(c.call.Deadline))
	}
	return resp, false, err
}

// deliver gives an answer to the caller: a success is relayed through the
// adapter; the request's own 4xx (R-FAIL-8) and an unknown outcome (R-FAIL-7)
// go as they are.
func (c *callRun) deliver(m *routing.Member, v routing.Verdict, resp *http.Response, idx int) bool {
	c.out.stopKeepAlive()
	if v.Kind != routing.KindAnswered {
		h := c.held(idx)
		if v.Kind == routing.KindUnknownOutcome {
			h.header.Set(hOutcome, "unknown")
			c.outcome = telemetryv1.CallOutcome_CALL_OUTCOME_UNKNOWN
			c.costFlagged = true
			c.cost += c.measuredAt(idx).cost
		}
		c.passThrough(h, v.Kind == routing.KindUnknownOutcome)
		return true
	}
	defer resp.Body.Close()
	c.status = resp.StatusCode
	c.outcome = telemetryv1.CallOutcome_CALL_OUTCOME_ANSWERED
	u, err := c.adapter(m).Relay(c.request, resp, c.out)
	if c.recorded {
		c.delivered = true
		// The answer was complete and recorded (complete) before its end
		// was written: an error since (the caller left during the terminal
		// event, the provider's connection failed after it) changes
		// nothing, and there is no second record.
		return true
	}
	c.usage = u
	c.cost = routing.Settlement(m, c.call.Model(), u)
	if err != nil {
		now := c.gw.cfg.Now()
		// Headers (and maybe content) reached the caller: end the answer
		// with an error event, never a second answer (R-FAIL-11). The
		// record goes first, as for every answer.
		c.gw.cfg.States.Done(m.ID, now, estimateInputTokens(c.request.Body), u)
		c.memberDone = true
		c.call.Report(routing.Verdict{Kind: routing.KindMidStream, Status: resp.StatusCode, Reason: "stream_cut"}, nil, now)
		c.outcome = telemetryv1.CallOutcome_CALL_OUTCOME_FAILED
		if started, _, _ := c.out.state(); !started {
			// Nothing reached the caller (a whole answer that could not
			// be read or translated): the gateway's own 502 in the
			// caller's format.
			c.fail(&routing.Error{Status: http.StatusBadGateway, Code: routing.CodeUpstreamUnreachable,
				Message: "the provider's answer could not be read"})
			c.delivered = true
			return true
		}
		c.errorCode = "stream_cut"
		c.commit()
		_, _ = c.out.Write(streamErrorEvent(c.endpoint, &routing.Error{Status: http.StatusBadGateway, Code: routing.CodeUpstreamUnreachable,
			Message: "the provider's answer was cut after output began"}))
		c.out.Flush()
		c.delivered = true
		return true
	}
	// An adapter that never called Complete: the answer is recorded after
	// it (finish), as the record must still be written once.
	c.call.Finish(c.gw.cfg.Now(), u)
	c.memberDone = true
	c.delivered = true
	return true
}

// complete is wire.Out's Complete: the answer being relayed is complete
// with usage u, and its end is not written yet. It settles the call's usage
// and cost and writes its record (commit) before the adapter writes the
// terminal event or the body's last bytes.
func (c *callRun) complete(u routing.Usage) {
	if c.recorded || c.call == nil || c.call.Served() == nil {
		return
	}
	c.usage = u
	c.cost = routing.Settlement(c.call.Served(), c.call.Model(), u)
	c.call.Finish(c.gw.cfg.Now(), u)
	c.memberDone = true
	c.commit()
}

// passThrough writes an upstream answer as is. For a stream that already
// started with keep-alive comments the status cannot change: the answer is
// sent as an error event instead (R-FAIL-12).
func (c *callRun) passThrough(h *heldAnswer, unknown bool) {
	c.status = h.status
	if c.outcome == telemetryv1.CallOutcome_CALL_OUTCOME_UNSPECIFIED {
		c.outcome = telemetryv1.CallOutcome_CALL_OUTCOME_FAILED
	}
	c.commit()
	if _, via, _ := c.out.state(); via {
		msg := strings.TrimSpace(string(h.body))
		if len(msg) > 1024 {
			msg = msg[:1024]
		}
		c.out.Start(h.status, nil)
		_, _ = c.out.Write(streamErrorEvent(c.endpoint, &routing.Error{Status: h.status, Code: "upstream_" + strconv.Itoa(h.status), Message: msg}))
		c.out.Flush()
		c.delivered = true
		return
	}
	hdr := http.Header{}
	for _, k := range []string{"Content-Type", hOutcome, hShouldRetry, hRetryAfter, "Retry-After-Ms", "X-Request-Id", "Request-Id", "X-Amzn-Errortype", "X-Amzn-Requestid"} {
		if v := h.header.Get(k); v != "" {
			hdr.Set(k, v)
		}
	}
	body := h.body
	if !c.endpoint.Native(h.wire) {
		// R-FMT-5: status and message kept, in the caller's error shape.
		body = translate.ErrorBody(h.wire, c.endpoint, h.status, h.body)
		hdr.Set("Content-Type", "application/json")
	}
	c.out.Start(h.status, hdr)
	_, _ = c.out.Write(body)
	c.delivered = true
}

// fail writes the gateway's own error (or, for a stream already started by
// keep-alive comments, the error event of R-FAIL-11/12).
func (c *callRun) fail(e *routing.Error) {
	c.out.stopKeepAlive()
	c.status, c.errorCode = e.Status, e.Code
	if c.outcome == telemetryv1.CallOutcome_CALL_OUTCOME_UNSPECIFIED {
		c.outcome = telemetryv1.CallOutcome_CALL_OUTCOME_FAILED
		if c.call == nil || c.call.Sent() == 0 {
			c.outcome = telemetryv1.CallOutcome_CALL_OUTCOME_REFUSED
		}
	}
	c.commit()
	if _, via, _ := c.out.state(); via {
		c.out.Start(e.Status, nil)
		_, _ = c.out.Write(streamErrorEvent(c.endpoint, e))
		c.out.Flush()
		c.delivered = true
		return
	}
	c.metaHeaders(c.out.rw.Header())
	if !c.bodyRead {
		closeUnread(c.out.rw.Header(), c.req)
	}
	writeError(c.out.rw, c.endpoint, e, c.weirJSON())
	c.out.markStarted()
	c.delivered = true
}

// names returns the record and member to report (R-SEE-1): the member that
// answered, else the last one tried.
func (c *callRun) names() (record, member string) {
	if c.call == nil {
		return "", ""
	}
	m := c.call.Served()
	if m == nil {
		m = c.call.LastTried()
	}
	if m == nil {
		return "", ""
	}
	return m.Record.Name, m.Name
}

// metaHeaders sets x-weir-attempts, and x-weir-provider and x-weir-member
// when a member was tried (R-SEE-1).
func (c *callRun) metaHeaders(h http.Header) {
	n := 0
	if c.call != nil {
		n = c.call.Sent()
	}
	// The values go in one array, the call's own the first time: the
	// header keys are canonical, so this is h.Set without an allocation
	// per value.
	vals := c.metaVals[:]
	if c.metaUsed {
		vals = make([]string, len(c.metaVals))
	}
	c.metaUsed = true
	vals[0] = strconv.Itoa(n)
	h[hAttempts] = vals[0:1:1]
	if p, m := c.names(); p != "" {
		vals[1], vals[2] = p, m
		h[hProvider], h[hMember] = vals[1:2:2], vals[2:3:3]
	}
}

func (c *callRun) weirJSON() weirJSON {
	p, _ := c.names()
	w := weirJSON{Provider: p, Attempts: []attemptJSON{}}
	if c.call == nil {
		return w
	}
	for _, a := range c.call.Attempts {
		if a.Outcome == routing.OutcomePending {
			continue
		}
		w.Attempts = append(w.Attempts, attemptJSON{Member: a.Member.Name, Status: a.Status, Outcome: a.Outcome.String(), Reason: a.Reason})
	}
	return w
}

func (c *callRun) event(m *routing.Member, ev string) {
	c.gw.cfg.Metrics.Event(m.Record.Name, m.Name, ev).Inc()
	c.logAttempt(m, ev)
}

// cacheMiss notes R-SEE-3's report when a job moved to another member.
func (c *callRun) cacheMiss(prevID string, served *routing.Member, cached int64) {
	if prevID == "" {
		return
	}
	c.cacheReport = &telemetryv1.CacheReport{JobHash: c.jobHash, PreviousMember: prevID, Member: served.ID, Miss: "member_changed",
		PreviousCachedInputTokens: cached, EstimatedMissCostNanos: int64(routing.CacheMissCost(served, c.call.Model(), cached))}
}

// statusLabel is strconv.Itoa(status), without its allocation for the
// statuses calls end with most.
func statusLabel(status int) string {
	switch status {
	case 200:
		return "200"
	case 400:
		return "400"
	case 429:
		return "429"
	case 499:
		return "499"
	case 502:
		return "502"
	case 503:
		return "503"
	case 504:
		return "504"
	}
	return strconv.Itoa(status)
}

// finish records the call if no answer did (a cancelled call, an adapter
// that never completed) and observes its metrics.
func (c *callRun) finish() {
	c.commit()
	dur := c.gw.cfg.Now().Sub(c.start)
	c.gw.cfg.Metrics.DurationFor(c.endpoint, c.status).Observe(dur.Seconds())
	if c.call != nil {
		c.gw.cfg.Metrics.Overhead.Observe((dur - c.upstreamTime).Seconds())
		if m := c.call.Served(); m != nil {
			c.gw.cfg.Metrics.ServedBy(c.endpoint, m.Format(), !c.endpoint.Native(m.Format())).Inc()
		}
	}
	if c.traced != nil {
		c.endSpan()
	}
}

// commit hands the call's record to the sink, once per call (R-SEE-2,
// DESIGN.md §1.3). It runs before the caller can hold its answer whole: a
// relayed answer commits from complete, once the provider's terminal event
// (or whole body) is read and before that end is written to the caller; an
// error answer or a passed-through upstream answer commits before its body
// is written; a stream cut mid-way commits before its error event. So an
// answer a caller could take as complete is on the sink (the edge's journal,
// one write(2) that survives the process being killed) first, and a kill
// in between loses the answer's end, never its record. Later calls do
// nothing: an error after the end was recorded makes no second record.
//
// The record's Duration runs from the call's start to the commit, i.e. up
// to the terminal event, not the last byte's delivery; the attempts' own
// latencies are to response headers, as before.
//
// When the sink fails (the journal cannot be written), the call is still
// answered: the provider already did the work and the caller's answer is
// in hand, so refusing it would lose the answer as well as the record. The
// loss is logged at error level with the call id and counted in
// weir_call_records_lost_total, for an operator to alert on and reconcile.
func (c *callRun) commit() {
	if c.recorded {
		return
	}
	c.recorded = true
	if c.table == nil {
		return // an unknown key belongs to no tenant
	}
	dur := c.gw.cfg.Now().Sub(c.start)
	st := &c.rec
	rec := &st.rec
	rec.CallId, rec.TenantId, rec.EdgeId, rec.Endpoint = c.id, c.table.TenantID, c.gw.cfg.EdgeID, c.endpoint.String()
	rec.Status, rec.Outcome, rec.ErrorCode = uint32(max(c.status, 0)), c.outcome, c.errorCode
	rec.ReservedNanos, rec.CostNanos, rec.CostFlagged = int64(c.reserved), int64(c.cost), c.costFlagged
	rec.StartedAt, rec.Duration = setTimestamp(&st.started, c.start), setDuration(&st.dur, dur)
	rec.JobHash, rec.Cache = c.jobHash, c.cacheReport
	st.usage.InputTokens, st.usage.OutputTokens = c.usage.InputTokens, c.usage.OutputTokens
	st.usage.CacheReadTokens, st.usage.CacheWriteTokens = c.usage.CacheReadTokens, c.usage.CacheWriteTokens
	rec.Usage = &st.usage
	if c.key != nil {
		rec.KeyId = c.key.ID
	}
	if c.request != nil {
		rec.Model, rec.Stream = c.request.Model, c.request.Stream
	}
	if c.call != nil {
		if m := c.call.Served(); m != nil {
			rec.RecordName, rec.MemberName, rec.RecordId = m.Record.Name, m.Name, m.Record.ID
			// R-FMT-6: the record notes the serving member's format and
			// whether the call was translated to it.
			rec.MemberFormat, rec.Translated = m.Format().String(), !c.endpoint.Native(m.Format())
		} else if m := c.call.LastTried(); m != nil {
			rec.RecordName, rec.MemberName, rec.RecordId = m.Record.Name, m.Name, m.Record.ID
		}
		rec.Attempts = st.attemptPtrs[:0]
		for i, a := range c.call.Attempts {
			if a.Outcome == routing.OutcomePending {
				continue
			}
			var at *telemetryv1.Attempt
			var started *timestamppb.Timestamp
			var latency *durationpb.Duration
			if n := len(rec.Attempts); n < len(st.attempts) {
				at, started, latency = &st.attempts[n], &st.attStarted[n], &st.attLatency[n]
			} else {
				at, started, latency = &telemetryv1.Attempt{}, &timestamppb.Timestamp{}, &durationpb.Duration{}
			}
			at.Index, at.RecordName, at.MemberName = uint32(i), a.Member.Record.Name, a.Member.Name
			at.Status, at.Outcome, at.Kind, at.Reason = uint32(max(a.Status, 0)), attemptOutcome(a.Outcome), failureKind(a.Kind), a.Reason
			if ai := c.measuredAt(i); ai != nil {
				at.StartedAt, at.Latency = setTimestamp(started, ai.start), setDuration(latency, ai.latency)
				at.CostNanos, at.CostEstimated = int64(ai.cost), ai.estimate
			}
			if a.Outcome == routing.OutcomeAnswered {
				at.CostNanos = int64(c.cost)
			}
			rec.Attempts = append(rec.Attempts, at)
		}
		if len(rec.Attempts) == 0 {
			rec.Attempts = nil
		}
	}
	c.detachedCtx.parent = c.req.Context()
	if err := c.gw.cfg.Sink.Record(&c.detachedCtx, rec); err != nil {
		c.gw.cfg.Metrics.RecordsLost.Inc()
		c.logger().Error("call record lost", "err", err)
	}
}

// setTimestamp sets ts to t as timestamppb.New does, and returns it.
func setTimestamp(ts *timestamppb.Timestamp, t time.Time) *timestamppb.Timestamp {
	ts.Seconds, ts.Nanos = t.Unix(), int32(t.Nanosecond())
	return ts
}

// setDuration sets d to v as durationpb.New does, and returns it.
func setDuration(d *durationpb.Duration, v time.Duration) *durationpb.Duration {
	nanos := v.Nanoseconds()
	secs := nanos / 1e9
	d.Seconds, d.Nanos = secs, int32(nanos-secs*1e9)
	return d
}

func transportReason(err error) string {
	if errors.Is(err, netguard.ErrRefused) {
		return "destination_refused"
	}
	var ue interface{ Timeout() bool }
	if errors.As(err, &ue) && ue.Timeout() {
		return "transport_timeout"
	}
	s := err.Error()
	switch {
	case strings.Contains(s, "connection refused"):
		return "connection_refused"
	case strings.Contains(s, "connection reset"):
		return "connection_reset"
	case strings.Contains(s, "no such host"):
		return "dns"
	case strings.Contains(s, "tls"):
		return "tls"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "closed_before_answer"
	}
	return "transport"
}

func attemptOutcome(o routing.AttemptOutcome) telemetryv1.AttemptOutcome {
	switch o {
	case routing.OutcomeAnswered:
		return telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_ANSWERED
	case routing.OutcomeFailedOver:
		return telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_FAILED_OVER
	case routing.OutcomeFailed:
		return telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_FAILED
	case routing.OutcomeSkipped:
		return telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_SKIPPED
	}
	return telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_UNSPECIFIED
}

func failureKind(k routing.FailureKind) telemetryv1.FailureKind {
	switch k {
	case routing.KindAnswered:
		return telemetryv1.FailureKind_FAILURE_KIND_NONE
	case routing.KindRateLimited:
		return telemetryv1.FailureKind_FAILURE_KIND_RATE_LIMITED
	case routing.KindQuotaSpent:
		return telemetryv1.FailureKind_FAILURE_KIND_QUOTA_SPENT
	case routing.KindServerError:
		return telemetryv1.FailureKind_FAILURE_KIND_SERVER_ERROR
	case routing.KindTransport:
		return telemetryv1.FailureKind_FAILURE_KIND_TRANSPORT
	case routing.KindKeyRefused:
		return telemetryv1.FailureKind_FAILURE_KIND_KEY_REFUSED
	case routing.KindUnknownOutcome:
		return telemetryv1.FailureKind_FAILURE_KIND_UNKNOWN_OUTCOME
	case routing.KindClientError:
		return telemetryv1.FailureKind_FAILURE_KIND_CLIENT_ERROR
	case routing.KindTimeout:
		return telemetryv1.FailureKind_FAILURE_KIND_TIMEOUT
	case routing.KindCancelled:
		return telemetryv1.FailureKind_FAILURE_KIND_CANCELLED
	case routing.KindMidStream:
		return telemetryv1.FailureKind_FAILURE_KIND_MID_STREAM
	case routing.KindKeyUnavailable, routing.KindKeyPassing, routing.KindCallEnded:
		return telemetryv1.FailureKind_FAILURE_KIND_KEY_UNAVAILABLE
	}
	return telemetryv1.FailureKind_FAILURE_KIND_UNSPECIFIED
}
