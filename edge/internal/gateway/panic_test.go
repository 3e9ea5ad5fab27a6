package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"weir.dev/edge/internal/fakeprovider"
	"weir.dev/edge/internal/gateway"
	"weir.dev/edge/internal/wire"
	"weir.dev/listen/logflags/logtest"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing"
)

// Where a panicAdapter panics.
const (
	panicNone         int32 = iota
	panicInBuild            // before the attempt goes out
	panicInRelay            // after the provider answered, before anything is written
	panicAfterEvent         // in Relay, at the second write: after the first event reached the caller
	panicAtFirstWrite       // in Relay, at the first write: after the status line went out
	panicInBuildLate        // in Build, once keep-alive comments started a stream (R-FAIL-12)
)

// panicAdapter is a test adapter: the real adapter of its wire format,
// panicking at the point *at says (a bug in an adapter, as issue 11's
// EditTop panic was).
type panicAdapter struct {
	wire.Adapter
	at *atomic.Int32
}

func (a panicAdapter) Build(ctx context.Context, req *wire.Request, m *routing.Member, model string) (*http.Request, error) {
	switch a.at.Load() {
	case panicInBuild:
		panic("test panic in Build: " + string(req.Body)) // the body must not reach the log
	case panicInBuildLate:
		time.Sleep(400 * time.Millisecond) // the harness's keep-alive is 150 ms
		panic("test panic in Build")
	}
	return a.Adapter.Build(ctx, req, m, model)
}

func (a panicAdapter) Relay(req *wire.Request, resp *http.Response, out wire.Out) (routing.Usage, error) {
	switch a.at.Load() {
	case panicInRelay:
		var m map[string]int
		m["x"]++ // a nil map write: a runtime error
	case panicAfterEvent:
		out = &panicOut{Out: out, after: 1}
	case panicAtFirstWrite:
		out = &panicOut{Out: out}
	}
	return a.Adapter.Relay(req, resp, out)
}

// panicOut panics at a Write once after writes went through.
type panicOut struct {
	wire.Out
	after, writes int
}

func (o *panicOut) Write(p []byte) (int, error) {
	if o.writes++; o.writes > o.after {
		panic("test panic after the first event")
	}
	return o.Out.Write(p)
}

// countingBudgets is the gateway's local budgets, counting reservations not
// settled yet.
type countingBudgets struct {
	*gateway.LocalBudgets
	open atomic.Int64
}

func (b *countingBudgets) Reserve(t *routing.Table, k *routing.Key, amount routing.Nanos) (func(routing.Nanos), *routing.Error) {
	settle, err := b.LocalBudgets.Reserve(t, k, amount)
	if err != nil {
		return nil, err
	}
	b.open.Add(1)
	return func(c routing.Nanos) { b.open.Add(-1); settle(c) }, nil
}

// TestPanicRecovered: a panic anywhere in a call (here: in an adapter) is
// answered 500 weir_internal in the caller's format with x-weir-call-id and
// x-weir-error (ROUTING.md §6–7), or ends a started stream with an error
// event (R-FAIL-11); never a silently cut connection. It is counted in
// weir_panics_total, logged with the call id and stack (not the body), the
// call is recorded once as failed (R-SEE-2), and neither the member's
// in-flight slot nor the budget reservation leaks.
func TestPanicRecovered(t *testing.T) {
	t.Parallel()
	at := &atomic.Int32{}
	budgets := &countingBudgets{LocalBudgets: gateway.NewLocalBudgets()}
	logs := &logtest.Buffer{}
	claude := recordSpec{name: "claude", wire: configv1.WireFormat_WIRE_FORMAT_ANTHROPIC, models: []*configv1.Model{chatModel("claude-x")},
		members: []fakeMember{{name: "primary", fake: newFake(t, fakeprovider.Options{Flavor: fakeprovider.FlavorAnthropic})}}}
	h := newHarnessOpts(t, harnessOpts{
		adapters: func(m map[routing.WireFormat]wire.Adapter) {
			for w, a := range m {
				m[w] = panicAdapter{Adapter: a, at: at}
			}
		},
		budgets: budgets,
		log:     slog.New(slog.NewJSONHandler(logs, nil)),
	}, pool(t, "a"), claude)

	calls := 0
	check := func(t *testing.T, res result, status int, panics float64) *callRecord {
		t.Helper()
		calls++
		id := res.header.Get("X-Weir-Call-Id")
		if !strings.HasPrefix(id, "call_") {
			t.Fatalf("x-weir-call-id %q", id)
		}
		if got := panicCount(t, h); got != panics {
			t.Fatalf("weir_panics_total %v, want %v", got, panics)
		}
		rec := h.record(calls)
		if rec.CallId != id || rec.Outcome != telemetryv1.CallOutcome_CALL_OUTCOME_FAILED || rec.ErrorCode != "weir_internal" || rec.Status != uint32(status) {
			t.Fatalf("record %s %v %q %d, want %s failed weir_internal %d", rec.CallId, rec.Outcome, rec.ErrorCode, rec.Status, id, status)
		}
		if n := len(h.sink.Records()); n != calls {
			t.Fatalf("%d records after %d calls", n, calls)
		}
		log := logs.String()
		if !strings.Contains(log, `"call_id":"`+id+`","tenant":"acme","tenant_id":"tenant-1"`) || !strings.Contains(log, `"level":"ERROR"`) || !strings.Contains(log, "panicAdapter") {
			t.Fatalf("panic not logged with call id %s, tenant and stack: %s", id, log)
		}
		if strings.Contains(log, "hello") || strings.Contains(log, providerKey) {
			t.Fatalf("request body or key in the log: %s", log)
		}
		if n := budgets.open.Load(); n != 0 {
			t.Fatalf("%d budget reservations left open", n)
		}
		for _, name := range []string{"pool", "claude"} {
			for _, m := range h.table.Record(name).Members {
				if v := h.states.View(m, time.Now()); v.InFlight != 0 {
					t.Fatalf("member %s in flight %d after the call", m.Name, v.InFlight)
				}
			}
		}
		return rec
	}

	t.Run("non-streaming OpenAI call: 500 weir_internal in OpenAI's shape", func(t *testing.T) {
		at.Store(panicInBuild)
		res := h.post("/v1/chat/completions", chatBody)
		if res.status != 500 || res.header.Get("X-Weir-Error") != "weir_internal" || res.header.Get("X-Weir-Attempts") != "0" ||
			res.header.Get("Content-Type") != "application/json" {
			t.Fatalf("%d %v %s", res.status, res.header, res.body)
		}
		e := decodeErr(t, res.body)
		if e.Error.Type != "weir_internal" || e.Error.Code != "weir_internal" || !strings.Contains(e.Error.Message, res.header.Get("X-Weir-Call-Id")) {
			t.Fatalf("body %s", res.body)
		}
		check(t, res, 500, 1)
	})

	t.Run("Anthropic-format call: 500 weir_internal in Anthropic's shape", func(t *testing.T) {
		at.Store(panicInRelay)
		res := h.post("/v1/messages", messagesBody)
		if res.status != 500 || res.header.Get("X-Weir-Error") != "weir_internal" || res.header.Get("X-Weir-Attempts") != "1" ||
			res.header.Get("X-Weir-Provider") != "claude" || res.header.Get("X-Weir-Member") != "primary" {
			t.Fatalf("%d %v %s", res.status, res.header, res.body)
		}
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(res.body, &e); err != nil || e.Type != "error" || e.Error.Type != "api_error" || !strings.HasPrefix(e.Error.Message, "weir_internal: ") {
			t.Fatalf("body %s", res.body)
		}
		rec := check(t, res, 500, 2)
		if got := rec.sent(); len(got) != 1 || got[0] != "primary:200:answered" {
			t.Fatalf("attempts %v", got)
		}
		if !strings.Contains(logs.String(), "assignment to entry in nil map") {
			t.Fatalf("runtime error not logged: %s", logs.String())
		}
	})

	t.Run("R-FAIL-11 stream that panics after its first event ends with an error event", func(t *testing.T) {
		at.Store(panicAfterEvent)
		res := h.post("/v1/chat/completions", `{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hello"}]}`)
		_, data := sseEvents(res.body)
		if res.status != 200 || res.header.Get("Content-Type") != "text/event-stream" || len(data) != 2 {
			t.Fatalf("%d %v %s", res.status, res.header, res.body)
		}
		if !strings.Contains(data[0], `"choices"`) {
			t.Fatalf("first event %s", data[0])
		}
		var e errBody
		if err := json.Unmarshal([]byte(data[1]), &e); err != nil || e.Error.Type != "weir_internal" || e.Error.Code != "weir_internal" {
			t.Fatalf("last event %s", data[1])
		}
		check(t, res, 200, 3)
	})

	t.Run("R-FAIL-12 stream started by keep-alive comments ends with an error event", func(t *testing.T) {
		at.Store(panicInBuildLate)
		res := h.post("/v1/messages", `{"model":"claude-x","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hello"}]}`)
		names, data := sseEvents(res.body)
		if res.status != 200 || !strings.Contains(string(res.body), ": weir waiting\n\n: weir provider=") || len(data) != 1 || names[0] != "error" {
			t.Fatalf("%d %s", res.status, res.body)
		}
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(data[0]), &e); err != nil || e.Type != "error" || e.Error.Type != "api_error" || !strings.HasPrefix(e.Error.Message, "weir_internal: ") {
			t.Fatalf("error event %s", data[0])
		}
		check(t, res, 500, 4)
	})

	t.Run("non-streamed answer whose status line went out is aborted, never cut short silently", func(t *testing.T) {
		at.Store(panicAtFirstWrite)
		req, _ := http.NewRequest(http.MethodPost, h.url+"/v1/chat/completions", strings.NewReader(chatBody))
		req.Header.Set("Authorization", "Bearer "+callerKey)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if err == nil {
			t.Fatalf("caller got a whole answer (%d) from a relay that never wrote its body", resp.StatusCode)
		}
		if got := panicCount(t, h); got != 5 {
			t.Fatalf("weir_panics_total %v, want 5", got)
		}
		calls++
		if rec := h.record(calls); rec.Outcome != telemetryv1.CallOutcome_CALL_OUTCOME_ANSWERED {
			// RelayBody recorded the answer (Complete) before writing it,
			// as a caller leaving at that point would find it.
			t.Fatalf("record %v", rec.CallRecord)
		}
		if n := budgets.open.Load(); n != 0 {
			t.Fatalf("%d budget reservations left open", n)
		}
	})

	t.Run("the edge still serves after the panics", func(t *testing.T) {
		at.Store(panicNone)
		if res := h.post("/v1/chat/completions", chatBody); res.status != 200 {
			t.Fatalf("%d %s", res.status, res.body)
		}
	})
}

// panicCount reads weir_panics_total from the gateway's /metrics.
func panicCount(t *testing.T, h *harness) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	h.gw.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, "weir_panics_total "); ok {
			var f float64
			if err := json.Unmarshal([]byte(v), &f); err != nil {
				t.Fatalf("metric line %q", l)
			}
			return f
		}
	}
	t.Fatalf("weir_panics_total not exposed:\n%s", body)
	return 0
}
