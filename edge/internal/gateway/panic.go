package gateway

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"runtime/debug"

	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing"
)

// A panic while serving a request is a bug of the edge, but it must not end
// the caller's connection without a word (net/http would recover it, log
// to stderr, and cut the connection: the caller sees EOF and retries blind).
// Every call therefore recovers its own panics (callRun.recoverPanic) and
// answers them like any other failure of the gateway: 500 weir_internal in
// the caller's format, or, once a stream is under way, an error event
// ending it (R-FAIL-11). Each recovered panic is counted in
// weir_panics_total and logged at error level with the call id and the
// stack; the call is recorded once, as failed, and what it held (its
// member's in-flight slot, its budget reservation) is released.

// notePanic counts a recovered panic and logs it on log (the call's: its
// id and tenant) with the stack. The panic value is described by
// panicText, never printed whole: it could carry request data.
func (g *Gateway) notePanic(log *slog.Logger, ep routing.Endpoint, v any, stack []byte) {
	g.cfg.Metrics.Panics.Inc()
	log.Error("panic serving a call", "endpoint", ep.String(), "panic", panicText(v), "stack", string(stack))
}

// panicText describes a recovered panic value for the log without contents
// that could come from a request or a secret: a runtime error (index out
// of range, nil dereference, failed type assertion) names only positions
// and types and is given whole; any other value is named by its type. The
// stack logged with it locates the panic.
func panicText(v any) string {
	if re, ok := v.(runtime.Error); ok {
		return re.Error()
	}
	return fmt.Sprintf("%T", v)
}

// recoverPanic is deferred by serveCall and recovers a panic anywhere in
// the call's goroutine: the routing core, an adapter's Build or Relay, the
// signer, the sink. Deferred releases of the call (its budget settlement,
// its contexts, its keep-alive) have run by then, as for any return. Then:
//
//   - the panic is counted and logged (notePanic);
//   - the member that answered gets its in-flight slot back, as a cut
//     stream gives it (States.Done); an attempt still pending (sent, not
//     classified) is reported cancelled, which frees its slot and cools
//     no one;
//   - the call is recorded once, if no answer recorded it yet, with
//     outcome failed and error code weir_internal (status 500, or the
//     status the caller already got);
//   - the caller is answered: 500 weir_internal with x-weir-call-id,
//     x-weir-attempts and x-weir-error when nothing was written yet; an
//     error event in its format when its stream has started; nothing when
//     its answer was already written whole. A non-streamed answer whose
//     status line went out but whose body is not whole cannot be mended
//     or replaced: the response is aborted (http.ErrAbortHandler), so that
//     the caller sees a broken answer rather than a short one.
//
// http.ErrAbortHandler itself is passed on as is: it is a deliberate abort,
// not a bug.
func (c *callRun) recoverPanic() {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	c.gw.notePanic(c.logger(), c.endpoint, v, debug.Stack())
	abort := false
	c.safely(func() { abort = c.afterPanic() })
	if abort {
		panic(http.ErrAbortHandler)
	}
}

// safely runs f, recovering (counting and logging) a second panic inside
// it, so that a call in a state broken enough to panic again while being
// answered still never takes a panic to net/http.
func (c *callRun) safely(f func()) {
	defer func() {
		if v := recover(); v != nil {
			c.gw.notePanic(c.logger(), c.endpoint, v, debug.Stack())
		}
	}()
	f()
}

// afterPanic releases, records and answers a call that panicked (see
// recoverPanic). It returns true when the response must be aborted.
func (c *callRun) afterPanic() (abort bool) {
	c.out.stopKeepAlive()
	now := c.gw.cfg.Now()
	if c.call != nil {
		if m := c.call.Served(); m != nil {
			if !c.memberDone {
				c.memberDone = true
				var in int64
				if c.request != nil {
					in = estimateInputTokens(c.request.Body)
				}
				c.gw.cfg.States.Done(m.ID, now, in, c.usage)
			}
		} else if n := len(c.call.Attempts); n > 0 && c.call.Attempts[n-1].Outcome == routing.OutcomePending && c.call.Attempts[n-1].Sent {
			// Sent and not classified: its slot is released. One never
			// sent is no attempt (R-SEE-1) and stays out of the record.
			c.call.Report(routing.Verdict{Kind: routing.KindCancelled, Reason: codeInternal}, nil, now)
		}
	}
	e := internalError(c.id)
	started, via, content := c.out.state()
	if !c.recorded {
		c.outcome = telemetryv1.CallOutcome_CALL_OUTCOME_FAILED
		c.errorCode = codeInternal
		if !started || c.status == 0 {
			c.status = e.Status
		}
		c.safely(c.commit)
	}
	switch {
	case c.delivered:
		// The answer was written whole before the panic.
		return false
	case !started:
		h := c.out.rw.Header()
		clear(h) // whatever an answer being prepared had set
		h.Set(hCallID, c.id)
		c.metaHeaders(h)
		writeError(c.out.rw, c.endpoint, e, c.weirJSON())
		c.out.markStarted()
		return false
	case via || (c.request != nil && c.request.Stream):
		if via && !content {
			c.out.Start(e.Status, nil) // R-SEE-1's comment line, if not sent yet
		}
		_, _ = c.out.Write(streamErrorEvent(c.endpoint, e))
		c.out.Flush()
		return false
	}
	return true
}

// guard wraps a handler that serves no call record (GET /v1/models):
// a panic inside it is counted and logged like a call's, and answered 500
// weir_internal in ep's format with x-weir-call-id when nothing was written
// yet, else the response is aborted.
func (g *Gateway) guard(ep routing.Endpoint, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tw := &trackWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			id := w.Header().Get(hCallID)
			if id == "" {
				id = newCallID()
			}
			g.notePanic(callLogger(g.cfg.Log, id, nil), ep, v, debug.Stack())
			if tw.wrote {
				panic(http.ErrAbortHandler)
			}
			clear(w.Header())
			w.Header().Set(hCallID, id)
			w.Header().Set(hAttempts, "0")
			writeError(w, ep, internalError(id), weirJSON{})
		}()
		h(tw, r)
	}
}

// trackWriter notes whether a response's status line went out.
type trackWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *trackWriter) WriteHeader(status int) {
	w.wrote = true
	w.ResponseWriter.WriteHeader(status)
}

func (w *trackWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *trackWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
