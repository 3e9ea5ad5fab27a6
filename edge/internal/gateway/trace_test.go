package gateway_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"weir.dev/edge/internal/fakeprovider"
	"weir.dev/edge/internal/gateway"
	"weir.dev/tracing"
	"weir.dev/tracing/tracingtest"
)

// tracedHarness is newHarness with tracing on, exporting over OTLP/HTTP
// to an in-process receiver as the OTEL_* environment says. flush exports
// every span ended so far and stops the provider.
func tracedHarness(t *testing.T, specs ...recordSpec) (h *harness, recv *tracingtest.Receiver, flush func()) {
	t.Helper()
	recv = tracingtest.NewReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL())
	t.Setenv("OTEL_SERVICE_NAME", "weir-edge-test")
	p, err := tracing.Start(context.Background(), "weir-edge", os.Getenv)
	if err != nil || !p.Enabled() {
		t.Fatalf("tracing.Start: enabled %v, %v", p != nil && p.Enabled(), err)
	}
	h = newHarnessOpts(t, harnessOpts{cfg: func(c *gateway.Config) { c.Tracer = p.TracerProvider().Tracer("weir.dev/edge/gateway") }}, specs...)
	return h, recv, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Fatalf("flushing spans: %v", err)
		}
	}
}

// spansOf splits received spans into the call's (the one server span)
// and its attempts' (client spans), in start order.
func spansOf(t *testing.T, spans []tracingtest.Span) (call tracingtest.Span, attempts []tracingtest.Span) {
	t.Helper()
	n := 0
	for _, s := range spans {
		switch s.Kind {
		case tracepb.Span_SPAN_KIND_SERVER:
			call = s
			n++
		case tracepb.Span_SPAN_KIND_CLIENT:
			attempts = append(attempts, s)
		}
	}
	if n != 1 {
		t.Fatalf("%d server spans, want 1: %v", n, spans)
	}
	for i := 1; i < len(attempts); i++ {
		for j := i; j > 0 && attempts[j].StartTimeUnixNano < attempts[j-1].StartTimeUnixNano; j-- {
			attempts[j], attempts[j-1] = attempts[j-1], attempts[j]
		}
	}
	return call, attempts
}

// wantAttrs fails the test for each of want's attributes s lacks or has
// with another value.
func wantAttrs(t *testing.T, what string, s tracingtest.Span, want map[string]any) {
	t.Helper()
	got := s.Attrs()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %#v, want %#v", what, k, got[k], v)
		}
	}
}

// TestTraceOfFailover: a call whose first member answers 429 (R-FAIL-2)
// is one server span under the caller's traceparent with two attempt
// spans, and each attempt's upstream request carries the trace's id with
// that attempt's span as parent.
func TestTraceOfFailover(t *testing.T) {
	h, recv, flush := tracedHarness(t, pool(t, "a", "b"))
	h.fakes["a"].Enqueue(fakeprovider.RateLimited(3 * time.Second))
	const traceID, callerSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	res := h.post("/v1/chat/completions", chatBody,
		"traceparent", "00-"+traceID+"-"+callerSpan+"-01", "tracestate", "vendor=opaque")
	if res.status != 200 {
		t.Fatalf("status %d: %s", res.status, res.body)
	}
	rec := h.record(1)
	flush()

	call, attempts := spansOf(t, recv.Spans())
	if call.TraceID() != traceID || call.ParentID() != callerSpan {
		t.Errorf("call span in trace %s under %s, want %s under the caller's %s", call.TraceID(), call.ParentID(), traceID, callerSpan)
	}
	if call.Name != "chat gpt-x" || call.Service != "weir-edge-test" {
		t.Errorf("call span %q of service %q, want \"chat gpt-x\" of weir-edge-test", call.Name, call.Service)
	}
	wantAttrs(t, "call span", call, map[string]any{
		"gen_ai.system": "openai", "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-x", "gen_ai.response.model": "gpt-x",
		"gen_ai.usage.input_tokens": rec.Usage.InputTokens, "gen_ai.usage.output_tokens": rec.Usage.OutputTokens,
		"weir.tenant": "acme", "weir.record": "pool", "weir.member": "b", "weir.attempts": int64(2),
		"weir.call_id": res.header.Get("X-Weir-Call-Id"), "weir.outcome": "answered", "http.response.status_code": int64(200),
	})
	if rec.Usage.OutputTokens == 0 {
		t.Error("the record has no output tokens to compare the span's with")
	}
	if call.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("answered call has error status %v", call.Status)
	}

	if len(attempts) != 2 {
		t.Fatalf("%d attempt spans, want 2: %v", len(attempts), attempts)
	}
	for i, want := range []struct {
		member, outcome string
		status          int64
		err             bool
	}{{"a", "failed_over", 429, true}, {"b", "answered", 200, false}} {
		a := attempts[i]
		if a.TraceID() != traceID || a.ParentID() != call.SpanID() {
			t.Errorf("attempt %d in trace %s under %s, want under the call span %s", i, a.TraceID(), a.ParentID(), call.SpanID())
		}
		wantAttrs(t, "attempt "+want.member, a, map[string]any{
			"weir.member": want.member, "weir.record": "pool", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-x",
			"http.response.status_code": want.status, "weir.attempt.outcome": want.outcome, "weir.attempt.index": int64(i),
			"weir.attempt.reason": rec.Attempts[i].Reason,
		})
		if got := a.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR; got != want.err {
			t.Errorf("attempt %s: error status %v, want %v", want.member, got, want.err)
		}
		// The member got the attempt span's context, not the caller's.
		up, ok := h.fakes[want.member].LastRequest()
		if !ok {
			t.Fatalf("member %s got no request", want.member)
		}
		if tp, wantTP := up.Header.Get("Traceparent"), "00-"+traceID+"-"+a.SpanID()+"-01"; tp != wantTP {
			t.Errorf("member %s got traceparent %q, want %q", want.member, tp, wantTP)
		}
		if ts := up.Header.Get("Tracestate"); ts != "vendor=opaque" {
			t.Errorf("member %s got tracestate %q, want the caller's", want.member, ts)
		}
	}

	// R-SEC-6: no key or token of the caller or the provider is in any
	// attribute.
	for _, s := range recv.Spans() {
		for k, v := range s.Attrs() {
			if str, ok := v.(string); ok && (strings.Contains(str, providerKey) || strings.Contains(str, callerKey)) {
				t.Errorf("span %s attribute %s holds a key", s.Name, k)
			}
		}
	}
}

// TestTraceOfFailedCall: a call whose answer is a provider's 502 (R-FAIL-7,
// outcome unknown) ends its span with error status; without a caller's
// traceparent it starts a trace of its own, which goes upstream.
func TestTraceOfFailedCall(t *testing.T) {
	h, recv, flush := tracedHarness(t, pool(t, "a"))
	h.fakes["a"].Enqueue(fakeprovider.Status(502))
	if res := h.post("/v1/chat/completions", chatBody); res.status != 502 {
		t.Fatalf("status %d, want 502: %s", res.status, res.body)
	}
	h.record(1)
	flush()
	call, attempts := spansOf(t, recv.Spans())
	if call.ParentID() != "" {
		t.Errorf("call span without a caller's traceparent has parent %s", call.ParentID())
	}
	if call.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("call span status %v, want error", call.Status)
	}
	wantAttrs(t, "call span", call, map[string]any{"http.response.status_code": int64(502), "weir.outcome": "unknown", "weir.attempts": int64(1), "weir.member": "a"})
	if len(attempts) != 1 || attempts[0].Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Fatalf("attempt spans %v, want one with error status", attempts)
	}
	if up, _ := h.fakes["a"].LastRequest(); !strings.Contains(up.Header.Get("Traceparent"), call.TraceID()) {
		t.Errorf("member got traceparent %q, want one in trace %s", up.Header.Get("Traceparent"), call.TraceID())
	}
}
