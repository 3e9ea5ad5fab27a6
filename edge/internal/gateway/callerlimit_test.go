package gateway_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"weir.dev/edge/internal/gateway"
	"weir.dev/edge/internal/wire"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing"
)

// otherKey is a second API key of the harness's tenant (see withLimits).
const otherKey = "weir-test-key-other-9876543210"

// withLimits sets the tenant's and the "ci" key's caller limits (nil:
// none) and adds a second key "other" without limits of its own.
func withLimits(tenant, ci *configv1.CallerLimits) func(*configv1.TenantSnapshot) {
	return func(s *configv1.TenantSnapshot) {
		s.Tenant.Limits = tenant
		s.ApiKeys[0].Limits = ci
		sum := sha256.Sum256([]byte(otherKey))
		s.ApiKeys = append(s.ApiKeys, &configv1.ApiKey{Id: "key-2", Name: "other", Sha256: sum[:]})
	}
}

func metricsText(t *testing.T, h *harness) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.gw.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// checkLimited checks a caller-limit refusal as the caller sees it
// (R-CAP-2): 429 with code, Retry-After, x-should-retry and
// x-weir-attempts, in OpenAI's error shape.
func checkLimited(t *testing.T, res result, code, retryAfter string) {
	t.Helper()
	if res.status != http.StatusTooManyRequests || res.header.Get("X-Weir-Error") != code ||
		res.header.Get("Retry-After") != retryAfter || res.header.Get("X-Should-Retry") != "true" ||
		res.header.Get("X-Weir-Attempts") != "0" {
		t.Fatalf("answer %d %v %s; want 429 %s, Retry-After %s", res.status, res.header, res.body, code, retryAfter)
	}
	e := decodeErr(t, res.body)
	if e.Error.Code != code || e.Error.Type != code || e.Error.Message == "" || len(e.Weir.Attempts) != 0 {
		t.Fatalf("body %s", res.body)
	}
}

// checkRefusedRecord checks the call record of a refusal (R-CAP-3).
func checkRefusedRecord(t *testing.T, rec *callRecord, code string) {
	t.Helper()
	if rec.Outcome != telemetryv1.CallOutcome_CALL_OUTCOME_REFUSED || rec.ErrorCode != code || rec.Status != 429 ||
		len(rec.Attempts) != 0 || rec.TenantId != "tenant-1" || rec.KeyId == "" {
		t.Fatalf("record %v", rec.CallRecord)
	}
}

// R-CAP-2, R-CAP-3: a tenant over its rpm is refused 429 weir_tenant_limit
// before any member is tried, with the seconds until a call fits; the
// refusal is recorded (outcome refused, no attempts) and counted; an
// Anthropic-format caller gets Anthropic's error shape.
func TestCallerLimitsTenantRPMRCAP2(t *testing.T) {
	t.Parallel()
	h := newHarnessOpts(t, harnessOpts{tenant: withLimits(&configv1.CallerLimits{Rpm: 2}, nil)}, pool(t, "a"))
	for i := range 2 {
		if res := h.post("/v1/chat/completions", chatBody); res.status != 200 {
			t.Fatalf("call %d: %d %s", i, res.status, res.body)
		}
	}
	res := h.post("/v1/chat/completions", chatBody)
	// 2 per minute: the next token is 30 s away (less the test's own time,
	// rounded up).
	checkLimited(t, res, routing.CodeTenantLimit, "30")
	if !strings.Contains(string(res.body), "rpm") {
		t.Errorf("message does not name the limit: %s", res.body)
	}
	checkRefusedRecord(t, h.record(3), routing.CodeTenantLimit)

	// Every key of the tenant shares its limit; Anthropic's shape.
	res = h.post("/v1/messages", `{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
		"Authorization", "Bearer "+otherKey)
	var ae struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(res.body, &ae); err != nil || res.status != 429 || ae.Type != "error" ||
		ae.Error.Type != "rate_limit_error" || !strings.HasPrefix(ae.Error.Message, routing.CodeTenantLimit+": ") ||
		res.header.Get("Retry-After") == "" || res.header.Get("X-Weir-Attempts") != "0" {
		t.Fatalf("anthropic-format refusal %d %v %s", res.status, res.header, res.body)
	}
	if m := metricsText(t, h); !strings.Contains(m, `weir_caller_limited_total{limit="tenant_rpm",tenant="acme"} 2`) {
		t.Fatalf("metric missing:\n%s", m)
	}
	if n := h.fakes["a"].Total(); n != 2 {
		t.Fatalf("the provider saw %d calls, want the 2 admitted", n)
	}
}

// R-CAP-2: a key over its own rpm is refused 429 weir_key_limit, and the
// refusal takes nothing from its tenant: another key of the tenant still
// gets the tenant's last call of the minute.
func TestCallerLimitsKeyRPMRCAP2(t *testing.T) {
	t.Parallel()
	h := newHarnessOpts(t, harnessOpts{tenant: withLimits(&configv1.CallerLimits{Rpm: 2}, &configv1.CallerLimits{Rpm: 1})}, pool(t, "a"))
	if res := h.post("/v1/chat/completions", chatBody); res.status != 200 {
		t.Fatalf("first call %d %s", res.status, res.body)
	}
	res := h.post("/v1/chat/completions", chatBody)
	checkLimited(t, res, routing.CodeKeyLimit, "60")
	checkRefusedRecord(t, h.record(2), routing.CodeKeyLimit)
	if res := h.post("/v1/chat/completions", chatBody, "Authorization", "Bearer "+otherKey); res.status != 200 {
		t.Fatalf("the other key was refused: the key's refusal took the tenant's token: %d %s", res.status, res.body)
	}
	checkLimited(t, h.post("/v1/chat/completions", chatBody, "Authorization", "Bearer "+otherKey), routing.CodeTenantLimit, "30")
	m := metricsText(t, h)
	for _, want := range []string{`weir_caller_limited_total{limit="key_rpm",tenant="acme"} 1`, `weir_caller_limited_total{limit="tenant_rpm",tenant="acme"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// heldUpstream is an OpenAI-format provider whose streams send one event
// and then wait: for release of that stream (streams are told apart by
// their message content, which openStream makes unique) or for the edge to
// cut them.
type heldUpstream struct {
	url string

	mu      sync.Mutex
	waiting map[string]chan struct{} // by message content
}

// gate returns the channel that releases the stream with content id.
func (u *heldUpstream) gate(id string) chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	ch := u.waiting[id]
	if ch == nil {
		ch = make(chan struct{})
		u.waiting[id] = ch
	}
	return ch
}

// release lets the upstream end c's stream.
func (u *heldUpstream) release(c *heldCall) { close(u.gate(c.id)) }

func newHeldUpstream(t *testing.T) *heldUpstream {
	t.Helper()
	u := &heldUpstream{waiting: map[string]chan struct{}{}}
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		id := ""
		if len(body.Messages) > 0 {
			id = body.Messages[0].Content
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		_, _ = io.WriteString(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":null}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-u.gate(id):
			_, _ = io.WriteString(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],"+
				"\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}\n\ndata: [DONE]\n\n")
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // runs first: no handler holds Close
	u.url = srv.URL
	return u
}

// heldCall is a caller's stream in progress.
type heldCall struct {
	id     string // the call's message content, unique per stream
	resp   *http.Response
	cancel context.CancelFunc
}

// streamSeq numbers the streams openStream starts.
var streamSeq atomic.Int64

// openStream starts a streamed call with key and returns once its first
// event arrived; a refusal comes back as a result instead.
func openStream(t *testing.T, h *harness, key string) (*heldCall, *result) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	id := "stream-" + strconv.FormatInt(streamSeq.Add(1), 10)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.url+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"`+id+`"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		defer cancel()
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return nil, &result{resp.StatusCode, resp.Header, b}
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			cancel()
			t.Fatalf("stream ended before its first event: %v", err)
		}
		if strings.HasPrefix(line, "data: ") {
			break
		}
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return &heldCall{id: id, resp: resp, cancel: cancel}, nil
}

func heldHarness(t *testing.T, opts harnessOpts) (*harness, *heldUpstream) {
	t.Helper()
	up := newHeldUpstream(t)
	h := newHarnessOpts(t, opts, recordSpec{name: "pool", wire: configv1.WireFormat_WIRE_FORMAT_OPENAI,
		models: []*configv1.Model{chatModel("gpt-x")}, members: []fakeMember{{name: "m", url: up.url}}})
	return h, up
}

func waitInFlight(t *testing.T, h *harness, keyID string, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for h.gw.CallerLimits().InFlight("tenant-1", keyID) != want {
		if time.Now().After(deadline) {
			t.Fatalf("in flight %d, want %d", h.gw.CallerLimits().InFlight("tenant-1", keyID), want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// R-CAP-2: without limits of its own a tenant has the cluster's default
// max_in_flight (3 here; 512 when the cluster sets none, see the compile
// tests). Streams hold their slots until they end: the 4th concurrent call
// is refused 429 weir_tenant_limit with Retry-After 1; a stream that ends,
// or that its caller cuts, frees its slot for the next call.
func TestCallerLimitsTenantMaxInFlightStreamsRCAP2(t *testing.T) {
	t.Parallel()
	h, up := heldHarness(t, harnessOpts{tenant: withLimits(nil, nil), cluster: &configv1.ClusterSnapshot{DefaultTenantMaxInFlight: 3}})
	var held []*heldCall
	for range 3 {
		c, res := openStream(t, h, callerKey)
		if res != nil {
			t.Fatalf("stream refused: %d %s", res.status, res.body)
		}
		held = append(held, c)
	}
	checkLimited(t, h.post("/v1/chat/completions", chatBody), routing.CodeTenantLimit, "1")
	if _, res := openStream(t, h, otherKey); res == nil || res.status != 429 {
		t.Fatal("a 4th stream (another key) was admitted")
	}

	// One stream ends: its slot is free once the answer is over.
	up.release(held[0])
	if b, err := io.ReadAll(held[0].resp.Body); err != nil || !strings.Contains(string(b), "[DONE]") {
		t.Fatalf("the released stream: %v %q", err, b)
	}
	waitInFlight(t, h, "", 2)
	c, res := openStream(t, h, callerKey)
	if res != nil {
		t.Fatalf("no slot after a stream ended: %d %s", res.status, res.body)
	}
	held[0] = c
	checkLimited(t, h.post("/v1/chat/completions", chatBody), routing.CodeTenantLimit, "1")

	// The caller cuts one: its slot is free too.
	held[1].cancel()
	waitInFlight(t, h, "", 2)
	if _, res := openStream(t, h, otherKey); res != nil {
		t.Fatalf("no slot after a stream was cut: %d %s", res.status, res.body)
	}
	if m := metricsText(t, h); !strings.Contains(m, `weir_caller_limited_total{limit="tenant_max_in_flight",tenant="acme"} 3`) {
		t.Fatalf("metric:\n%s", m)
	}
}

// R-CAP-2: a key at its max_in_flight is refused 429 weir_key_limit and
// its refusal holds no tenant slot: the tenant's other key gets the
// tenant's remaining slot, and only then is the tenant full.
func TestCallerLimitsKeyMaxInFlightReleasesTenantRCAP2(t *testing.T) {
	t.Parallel()
	h, _ := heldHarness(t, harnessOpts{tenant: withLimits(&configv1.CallerLimits{MaxInFlight: 2}, &configv1.CallerLimits{MaxInFlight: 1})})
	if _, res := openStream(t, h, callerKey); res != nil {
		t.Fatalf("refused: %d %s", res.status, res.body)
	}
	checkLimited(t, h.post("/v1/chat/completions", chatBody), routing.CodeKeyLimit, "1")
	waitInFlight(t, h, "", 1)
	if _, res := openStream(t, h, otherKey); res != nil {
		t.Fatalf("the other key was refused: %d %s", res.status, res.body)
	}
	checkLimited(t, h.post("/v1/chat/completions", chatBody, "Authorization", "Bearer "+otherKey), routing.CodeTenantLimit, "1")
	if m := metricsText(t, h); !strings.Contains(m, `weir_caller_limited_total{limit="key_max_in_flight",tenant="acme"} 1`) {
		t.Fatalf("metric:\n%s", m)
	}
}

// R-HEAD-7: with 2 live edges, a limit of 5 gives this edge a share of 3.
func TestCallerLimitsShareOfLiveEdgesRHEAD7(t *testing.T) {
	t.Parallel()
	h := newHarnessOpts(t, harnessOpts{tenant: withLimits(&configv1.CallerLimits{Rpm: 5}, nil),
		cfg: func(c *gateway.Config) { c.LiveEdges = func() int { return 2 } }}, pool(t, "a"))
	for i := range 3 {
		if res := h.post("/v1/chat/completions", chatBody); res.status != 200 {
			t.Fatalf("call %d: %d %s", i, res.status, res.body)
		}
	}
	res := h.post("/v1/chat/completions", chatBody)
	checkLimited(t, res, routing.CodeTenantLimit, "20") // 3 per minute: a token every 20 s
	if !strings.Contains(string(res.body), "share of it is 3") {
		t.Fatalf("body %s", res.body)
	}
}

// A call that panics gives its caller-limit slot back (recoverPanic runs
// after the call's deferred releases).
func TestCallerLimitsSlotReleasedOnPanicRCAP2(t *testing.T) {
	t.Parallel()
	var at atomic.Int32
	at.Store(panicInRelay)
	h := newHarnessOpts(t, harnessOpts{tenant: withLimits(&configv1.CallerLimits{MaxInFlight: 1}, nil),
		adapters: func(m map[routing.WireFormat]wire.Adapter) {
			m[routing.WireOpenAI] = panicAdapter{Adapter: m[routing.WireOpenAI], at: &at}
		}}, pool(t, "a"))
	if res := h.post("/v1/chat/completions", chatBody); res.status != 500 {
		t.Fatalf("panicking call: %d %s", res.status, res.body)
	}
	waitInFlight(t, h, "", 0)
	at.Store(panicNone)
	if res := h.post("/v1/chat/completions", chatBody); res.status != 200 {
		t.Fatalf("after the panic: %d %s", res.status, res.body)
	}
}
