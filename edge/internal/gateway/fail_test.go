package gateway_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"weir.dev/edge/internal/fakeprovider"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

// TestFailureRowsOverHTTP drives every row of ROUTING.md §5 through real
// HTTP: a two-member pool where the first member plays the fault.
func TestFailureRowsOverHTTP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		fault      fakeprovider.Fault
		deadline   time.Duration // attempt deadline, 0 = default of the harness
		wantStatus int
		wantSent   []string
		wantMember string
		outcome    string // x-weir-outcome
	}{
		{name: "R-FAIL-1 success", fault: fakeprovider.Fault{}, wantStatus: 200, wantSent: []string{"a:200:answered"}, wantMember: "a"},
		{name: "R-FAIL-2 429 with retry-after fails over", fault: fakeprovider.RateLimited(3 * time.Second), wantStatus: 200, wantSent: []string{"a:429:failed_over", "b:200:answered"}, wantMember: "b"},
		{name: "R-FAIL-2 429 with retry-after-ms only", fault: fakeprovider.RateLimitedMillis(1500 * time.Millisecond), wantStatus: 200, wantSent: []string{"a:429:failed_over", "b:200:answered"}, wantMember: "b"},
		{name: "R-FAIL-2 429 naming no time", fault: fakeprovider.RateLimitedNoHint(), wantStatus: 200, wantSent: []string{"a:429:failed_over", "b:200:answered"}, wantMember: "b"},
		{name: "R-FAIL-3 quota fails over", fault: fakeprovider.QuotaExceeded(), wantStatus: 200, wantSent: []string{"a:429:failed_over", "b:200:answered"}, wantMember: "b"},
		{name: "R-FAIL-4 503 fails over", fault: fakeprovider.Status(503), wantStatus: 200, wantSent: []string{"a:503:failed_over", "b:200:answered"}, wantMember: "b"},
		{name: "R-FAIL-4 500 fails over", fault: fakeprovider.Status(500), wantStatus: 200, wantSent: []string{"a:500:failed_over", "b:200:answered"}, wantMember: "b"},
		{name: "R-FAIL-5 reset before the status line fails over", fault: fakeprovider.Reset(), wantStatus: 200, wantSent: []string{"a:0:failed_over", "b:200:answered"}, wantMember: "b"},
		{name: "R-FAIL-6 401 fails over", fault: fakeprovider.Status(401), wantStatus: 200, wantSent: []string{"a:401:failed_over", "b:200:answered"}, wantMember: "b"},
		{name: "R-FAIL-6 404 fails over", fault: fakeprovider.Status(404), wantStatus: 200, wantSent: []string{"a:404:failed_over", "b:200:answered"}, wantMember: "b"},
		{name: "R-FAIL-7 502 is the answer, outcome unknown", fault: fakeprovider.Status(502), wantStatus: 502, wantSent: []string{"a:502:failed"}, wantMember: "a", outcome: "unknown"},
		{name: "R-FAIL-7 504 is the answer, outcome unknown", fault: fakeprovider.Status(504), wantStatus: 504, wantSent: []string{"a:504:failed"}, wantMember: "a", outcome: "unknown"},
		{name: "R-FAIL-8 422 is the request's own answer", fault: fakeprovider.Status(422), wantStatus: 422, wantSent: []string{"a:422:failed"}, wantMember: "a"},
		{name: "R-FAIL-8 400 is the request's own answer", fault: fakeprovider.Status(400), wantStatus: 400, wantSent: []string{"a:400:failed"}, wantMember: "a"},
		{name: "R-FAIL-9 no headers within the attempt deadline fails over", fault: fakeprovider.SlowHeaders(3 * time.Second), deadline: 300 * time.Millisecond, wantStatus: 200, wantSent: []string{"a:0:failed_over", "b:200:answered"}, wantMember: "b"},
		{name: "R-FAIL-9 a hang fails over", fault: fakeprovider.Hang(), deadline: 300 * time.Millisecond, wantStatus: 200, wantSent: []string{"a:0:failed_over", "b:200:answered"}, wantMember: "b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sp := pool(t, "a", "b")
			if tc.deadline > 0 {
				sp.edit = func(r *configv1.ProviderRecord) { r.Recovery.AttemptDeadline = durationpb.New(tc.deadline) }
			}
			h := newHarness(t, sp)
			if tc.fault.Kind != fakeprovider.FaultNone {
				h.fakes["a"].Enqueue(tc.fault)
			}
			res := h.post("/v1/chat/completions", chatBody)
			if res.status != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", res.status, tc.wantStatus, res.body)
			}
			if got := res.header.Get("X-Weir-Member"); got != tc.wantMember {
				t.Fatalf("x-weir-member %q, want %q", got, tc.wantMember)
			}
			if got := res.header.Get("X-Weir-Attempts"); got != strconv.Itoa(len(tc.wantSent)) {
				t.Fatalf("x-weir-attempts %q, want %d", got, len(tc.wantSent))
			}
			if res.header.Get("X-Weir-Provider") != "pool" || res.header.Get("X-Weir-Call-Id") == "" {
				t.Fatalf("R-SEE-1 headers %v", res.header)
			}
			if got := res.header.Get("X-Weir-Outcome"); got != tc.outcome {
				t.Fatalf("x-weir-outcome %q, want %q", got, tc.outcome)
			}
			rec := h.record(1)
			if got := rec.sent(); !slices.Equal(got, tc.wantSent) {
				t.Fatalf("attempts %v, want %v", got, tc.wantSent)
			}
			if rec.CallId != res.header.Get("X-Weir-Call-Id") {
				t.Fatal("R-SEE-2 record is not the call's")
			}
		})
	}
}

func TestMidStreamCut(t *testing.T) {
	t.Parallel()
	// R-FAIL-11: after output reached the caller, no second answer: the
	// stream ends with an error event in the caller's format.
	h := newHarness(t, pool(t, "a", "b"))
	h.fakes["a"].Enqueue(fakeprovider.CutAfter(3))
	res := h.post("/v1/chat/completions", `{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if res.status != 200 || res.header.Get("X-Weir-Member") != "a" {
		t.Fatalf("status %d member %s", res.status, res.header.Get("X-Weir-Member"))
	}
	_, data := sseEvents(res.body)
	if len(data) < 2 || !strings.Contains(data[len(data)-1], `"error"`) {
		t.Fatalf("stream did not end with an error event: %s", res.body)
	}
	if h.fakes["b"].Total() != 0 {
		t.Fatal("a second answer was started")
	}
	rec := h.record(1)
	if rec.Outcome != telemetryv1.CallOutcome_CALL_OUTCOME_FAILED {
		t.Fatalf("outcome %v", rec.Outcome)
	}
}

func TestKeyRefusedCoolsAfterServed(t *testing.T) {
	t.Parallel()
	// R-FAIL-6: the refusing member cools once another member served, so the
	// next call goes straight to b (R-ELIG-4).
	h := newHarness(t, pool(t, "a", "b"))
	h.fakes["a"].Enqueue(fakeprovider.Status(403))
	if res := h.post("/v1/chat/completions", chatBody); res.status != 200 {
		t.Fatalf("first call %d", res.status)
	}
	res := h.post("/v1/chat/completions", chatBody)
	if res.header.Get("X-Weir-Member") != "b" || res.header.Get("X-Weir-Attempts") != "1" {
		t.Fatalf("second call went to %s in %s attempts", res.header.Get("X-Weir-Member"), res.header.Get("X-Weir-Attempts"))
	}
	if h.fakes["a"].Total() != 1 {
		t.Fatalf("a got %d calls", h.fakes["a"].Total())
	}
}

func TestClientCancel(t *testing.T) {
	t.Parallel()
	// R-FAIL-10: a call cancelled by its client goes to no further member.
	h := newHarness(t, pool(t, "a", "b"))
	h.fakes["a"].Enqueue(fakeprovider.Hang())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.url+"/v1/chat/completions", strings.NewReader(chatBody))
	req.Header.Set("Authorization", "Bearer "+callerKey)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("expected the client's own deadline")
	}
	rec := h.record(1)
	if rec.Outcome != telemetryv1.CallOutcome_CALL_OUTCOME_CANCELLED {
		t.Fatalf("outcome %v", rec.Outcome)
	}
	time.Sleep(100 * time.Millisecond)
	if h.fakes["b"].Total() != 0 {
		t.Fatal("a cancelled call went on to b")
	}
}

func TestSameAccountOverHTTP(t *testing.T) {
	t.Parallel()
	// R-ORDER-4 and R-END-2: a quota refusal skips the rest of the account;
	// the spent 429 is the answer as is, with x-should-retry: false.
	sp := pool(t, "a", "b")
	for i := range sp.members {
		sp.members[i].edit = nil // both sign with the record's key secret: one account
	}
	h := newHarness(t, sp)
	h.fakes["a"].Enqueue(fakeprovider.QuotaExceeded())
	res := h.post("/v1/chat/completions", chatBody)
	if res.status != 429 || res.header.Get("X-Should-Retry") != "false" {
		t.Fatalf("status %d x-should-retry %q: %s", res.status, res.header.Get("X-Should-Retry"), res.body)
	}
	if !strings.Contains(string(res.body), "insufficient_quota") || res.header.Get("X-Weir-Attempts") != "1" {
		t.Fatalf("body %s attempts %s", res.body, res.header.Get("X-Weir-Attempts"))
	}
	if h.fakes["b"].Total() != 0 {
		t.Fatal("b, of the same account, was tried")
	}
	rec := h.record(1)
	var skipped int
	for _, a := range rec.Attempts {
		if a.Outcome == telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_SKIPPED {
			skipped++
		}
	}
	if skipped != 1 {
		t.Fatalf("%d skips recorded, want 1", skipped)
	}
}
