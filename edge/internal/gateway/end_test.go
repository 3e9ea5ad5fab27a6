package gateway_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"weir.dev/edge/internal/fakeprovider"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

func TestPoolLevelAnswers(t *testing.T) {
	t.Parallel()
	t.Run("R-END-1 every member rate limited: 429 weir_pool_cooling with Retry-After", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, pool(t, "a", "b"))
		h.fakes["a"].Enqueue(fakeprovider.RateLimited(4 * time.Second))
		h.fakes["b"].Enqueue(fakeprovider.RateLimited(9 * time.Second))
		res := h.post("/v1/chat/completions", chatBody)
		if res.status != 429 || res.header.Get("X-Weir-Error") != "weir_pool_cooling" || res.header.Get("X-Should-Retry") != "true" {
			t.Fatalf("%d %v %s", res.status, res.header, res.body)
		}
		if ra, _ := strconv.Atoi(res.header.Get("Retry-After")); ra < 3 || ra > 4 {
			t.Fatalf("Retry-After %q, want about 4", res.header.Get("Retry-After"))
		}
		e := decodeErr(t, res.body)
		if e.Error.Type != "weir_pool_cooling" || e.Error.Code != "weir_pool_cooling" || e.Error.Param != nil || e.Weir.Provider != "pool" || len(e.Weir.Attempts) != 2 || e.Weir.Attempts[0].Status != 429 {
			t.Fatalf("body %+v", e)
		}
		// Both cool now: the next call is answered at once without attempts.
		res = h.post("/v1/chat/completions", chatBody)
		if res.status != 429 || res.header.Get("X-Weir-Attempts") != "0" || h.fakes["a"].Total() != 1 {
			t.Fatalf("second call %d attempts %s", res.status, res.header.Get("X-Weir-Attempts"))
		}
	})
	t.Run("R-END-1 in the Anthropic format", func(t *testing.T) {
		t.Parallel()
		sp := recordSpec{name: "claude", wire: configv1.WireFormat_WIRE_FORMAT_ANTHROPIC, models: []*configv1.Model{chatModel("claude-x")},
			members: []fakeMember{{name: "a", fake: newFake(t, fakeprovider.Options{})}}}
		h := newHarness(t, sp)
		h.fakes["a"].Enqueue(fakeprovider.RateLimited(2 * time.Second))
		res := h.post("/v1/messages", `{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, "Authorization", "", "X-Api-Key", callerKey)
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
			Weir struct {
				Provider string `json:"provider"`
			} `json:"weir"`
		}
		if err := json.Unmarshal(res.body, &e); err != nil || res.status != 429 || e.Type != "error" || e.Error.Type != "rate_limit_error" ||
			!strings.HasPrefix(e.Error.Message, "weir_pool_cooling: ") || e.Weir.Provider != "claude" {
			t.Fatalf("%d %s", res.status, res.body)
		}
	})
	t.Run("R-END-2 spent without a 429: weir_pool_spent with insufficient_quota", func(t *testing.T) {
		t.Parallel()
		sp := recordSpec{name: "claude", wire: configv1.WireFormat_WIRE_FORMAT_ANTHROPIC, models: []*configv1.Model{chatModel("claude-x")},
			members: []fakeMember{{name: "a", fake: newFake(t, fakeprovider.Options{})}}}
		h := newHarness(t, sp)
		h.fakes["a"].Enqueue(fakeprovider.QuotaExceeded()) // Anthropic: credit balance as 400
		res := h.post("/v1/messages", `{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
		if res.status != 429 || res.header.Get("X-Weir-Error") != "weir_pool_spent" || res.header.Get("X-Should-Retry") != "false" {
			t.Fatalf("%d %v %s", res.status, res.header, res.body)
		}
	})
	t.Run("R-END-2 OpenAI body code is insufficient_quota", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, pool(t, "a"))
		h.fakes["a"].Enqueue(fakeprovider.Custom(403, nil, `{"error":{"message":"Your account has exceeded its billing hard limit","type":"insufficient_quota","code":"billing_hard_limit_reached"}}`))
		res := h.post("/v1/chat/completions", chatBody)
		e := decodeErr(t, res.body)
		if res.status != 429 || e.Error.Type != "weir_pool_spent" || e.Error.Code != "insufficient_quota" {
			t.Fatalf("%d %s", res.status, res.body)
		}
	})
	t.Run("R-END-3 key secret not bound to the member's host: 412, nothing sent", func(t *testing.T) {
		t.Parallel()
		sp := pool(t, "a", "b")
		sp.secretHost = "api.openai.com"
		h := newHarness(t, sp)
		res := h.post("/v1/chat/completions", chatBody)
		if res.status != 412 || res.header.Get("X-Weir-Error") != "weir_key_unavailable" || res.header.Get("X-Weir-Attempts") != "0" {
			t.Fatalf("%d %v %s", res.status, res.header, res.body)
		}
		if h.fakes["a"].Total()+h.fakes["b"].Total() != 0 {
			t.Fatal("R-SEC-1: a request went to a host the secret is not bound to")
		}
	})
	t.Run("R-END-3 key secret not set", func(t *testing.T) {
		t.Parallel()
		sp := pool(t, "a")
		sp.noSecret = true
		h := newHarness(t, sp)
		if res := h.post("/v1/chat/completions", chatBody); res.status != 412 {
			t.Fatalf("%d %s", res.status, res.body)
		}
	})
	t.Run("R-END-5 every member refused the key: the last answer as is", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, pool(t, "a", "b"))
		h.fakes["a"].Enqueue(fakeprovider.Status(401))
		h.fakes["b"].Enqueue(fakeprovider.Custom(403, nil, `{"error":{"message":"b refuses","type":"permission_denied"}}`))
		res := h.post("/v1/chat/completions", chatBody)
		if res.status != 403 || !strings.Contains(string(res.body), "b refuses") || res.header.Get("X-Weir-Member") != "b" {
			t.Fatalf("%d %s", res.status, res.body)
		}
	})
	t.Run("R-END-6 unreachable members: 502 weir_upstream_unreachable", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, pool(t, "a", "b"))
		h.fakes["a"].Enqueue(fakeprovider.Reset())
		h.fakes["b"].Enqueue(fakeprovider.Reset())
		res := h.post("/v1/chat/completions", chatBody)
		if res.status != 502 || res.header.Get("X-Weir-Error") != "weir_upstream_unreachable" || res.header.Get("Retry-After") == "" {
			t.Fatalf("%d %v %s", res.status, res.header, res.body)
		}
	})
	t.Run("R-FAIL-13 at most 8 attempts", func(t *testing.T) {
		t.Parallel()
		names := []string{"m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9", "m10"}
		h := newHarness(t, pool(t, names...))
		for _, n := range names {
			h.fakes[n].Enqueue(fakeprovider.Status(500))
		}
		res := h.post("/v1/chat/completions", chatBody)
		if res.header.Get("X-Weir-Attempts") != "8" || h.fakes["m9"].Total() != 0 {
			t.Fatalf("%d attempts %s", res.status, res.header.Get("X-Weir-Attempts"))
		}
	})
}

func TestKeepAliveComments(t *testing.T) {
	t.Parallel()
	// R-FAIL-12 and R-SEE-1: a stream still without upstream headers gets 200
	// with ": weir waiting" comments; failover goes on, and the served
	// member is named in a comment before the first event.
	h := newHarness(t, pool(t, "a", "b"))
	h.fakes["a"].Enqueue(fakeprovider.Custom(503, nil, `{"error":{"message":"busy"}}`))
	h.fakes["a"].SetLatency(400*time.Millisecond, 0)
	h.fakes["b"].SetLatency(400*time.Millisecond, 0)
	res := h.post("/v1/chat/completions", `{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	body := string(res.body)
	if res.status != 200 || !strings.HasPrefix(body, ": weir waiting\n\n") {
		t.Fatalf("%d %q", res.status, body)
	}
	if res.header.Get("X-Weir-Member") != "" || res.header.Get("X-Weir-Call-Id") == "" {
		t.Fatalf("headers %v", res.header)
	}
	if !strings.Contains(body, ": weir provider=pool member=b attempts=2\n\n") {
		t.Fatalf("no member comment in %q", body)
	}
	if !strings.Contains(body, "data: [DONE]") {
		t.Fatalf("stream did not finish: %q", body)
	}
}

func TestKeepAliveThenPoolError(t *testing.T) {
	t.Parallel()
	// R-FAIL-12: a pool-level error after keep-alive comments is sent as the
	// error event of R-FAIL-11.
	sp := pool(t, "a")
	sp.edit = func(r *configv1.ProviderRecord) { r.Recovery.AttemptDeadline = durationpb.New(400 * time.Millisecond) }
	h := newHarness(t, sp)
	h.fakes["a"].Enqueue(fakeprovider.Hang())
	res := h.post("/v1/chat/completions", `{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	_, data := sseEvents(res.body)
	if res.status != 200 || len(data) != 1 || !strings.Contains(data[0], "weir_upstream_timeout") || !strings.HasPrefix(string(res.body), ": weir waiting") {
		t.Fatalf("%d %q", res.status, res.body)
	}
}
