package fakeprovider

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// headers picks the named headers of resp ("" when absent).
func headers(resp *http.Response, names ...string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		out[n] = resp.Header.Get(n)
	}
	return out
}

func TestRequestBucketOpenAI(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	s, base := start(t, Options{Now: clk.Now, Limits: Limits{RPM: 2}})
	req := reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: chatBody("gpt-4o", "")}
	names := []string{"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests", "retry-after", "retry-after-ms", "x-ratelimit-limit-tokens"}

	steps := []struct {
		advance time.Duration
		status  int
		headers map[string]string
	}{
		{0, 200, map[string]string{"x-ratelimit-limit-requests": "2", "x-ratelimit-remaining-requests": "1", "x-ratelimit-reset-requests": "30s", "retry-after": "", "retry-after-ms": "", "x-ratelimit-limit-tokens": ""}},
		{0, 200, map[string]string{"x-ratelimit-limit-requests": "2", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1m0s", "retry-after": "", "retry-after-ms": "", "x-ratelimit-limit-tokens": ""}},
		{0, 429, map[string]string{"x-ratelimit-limit-requests": "2", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1m0s", "retry-after": "30", "retry-after-ms": "30000", "x-ratelimit-limit-tokens": ""}},
		{10 * time.Second, 429, map[string]string{"x-ratelimit-limit-requests": "2", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "50s", "retry-after": "20", "retry-after-ms": "20000", "x-ratelimit-limit-tokens": ""}},
		{20 * time.Second, 200, map[string]string{"x-ratelimit-limit-requests": "2", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1m0s", "retry-after": "", "retry-after-ms": "", "x-ratelimit-limit-tokens": ""}},
		{90 * time.Second, 200, map[string]string{"x-ratelimit-limit-requests": "2", "x-ratelimit-remaining-requests": "1", "x-ratelimit-reset-requests": "30s", "retry-after": "", "retry-after-ms": "", "x-ratelimit-limit-tokens": ""}},
	}
	for i, st := range steps {
		clk.Advance(st.advance)
		resp, body := do(t, base, req)
		if resp.StatusCode != st.status {
			t.Fatalf("step %d: status %d, want %d: %s", i, resp.StatusCode, st.status, body)
		}
		if diff := cmp.Diff(st.headers, headers(resp, names...)); diff != "" {
			t.Errorf("step %d headers (-want +got):\n%s", i, diff)
		}
		if st.status == 429 {
			v := decode(t, body)
			if path(v, "error.code") != "rate_limit_exceeded" || path(v, "error.type") != "requests" ||
				!strings.HasPrefix(path(v, "error.message").(string), "Rate limit reached for gpt-4o") {
				t.Errorf("step %d: body %s", i, body)
			}
		}
	}
	if got := s.Count("/v1/chat/completions"); got != len(steps) {
		t.Errorf("Count = %d, want %d (refused requests count too)", got, len(steps))
	}

	// New limits start full.
	s.SetLimits(Limits{RPM: 1})
	if resp, _ := do(t, base, req); resp.StatusCode != 200 || resp.Header.Get("x-ratelimit-limit-requests") != "1" {
		t.Errorf("after SetLimits: %d %v", resp.StatusCode, resp.Header)
	}
	s.SetLimits(Limits{})
	if resp, _ := do(t, base, req); resp.StatusCode != 200 || resp.Header.Get("x-ratelimit-limit-requests") != "" {
		t.Errorf("unlimited: %d, headers %v", resp.StatusCode, resp.Header)
	}
}

func TestOutputTokenBucket(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	_, base := start(t, Options{Now: clk.Now, Tokens: 4, Limits: Limits{OutputTPM: 10}})
	req := reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: chatBody("gpt-4o", "")}
	for range 2 {
		if resp, body := do(t, base, req); resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
	}
	resp, body := do(t, base, req)
	got := headers(resp, "x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "retry-after", "retry-after-ms")
	want := map[string]string{"x-ratelimit-limit-tokens": "10", "x-ratelimit-remaining-tokens": "2", "retry-after": "12", "retry-after-ms": "12000"}
	if resp.StatusCode != 429 || cmp.Diff(want, got) != "" {
		t.Fatalf("status %d, headers (-want +got):\n%s", resp.StatusCode, cmp.Diff(want, got))
	}
	if v := decode(t, body); path(v, "error.type") != "tokens" {
		t.Errorf("body %s", body)
	}
	clk.Advance(12 * time.Second)
	if resp, body := do(t, base, req); resp.StatusCode != 200 {
		t.Fatalf("after refill: %d %s", resp.StatusCode, body)
	}
}

func TestAnthropicRateHeaders(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	body := messagesBody("claude", "")
	in := estimateInput([]byte(body))
	_, base := start(t, Options{Now: clk.Now, Tokens: 5, Limits: Limits{RPM: 60, InputTPM: in * 2, OutputTPM: 1000}})
	req := reqSpec{path: "/v1/messages", header: anthropicHeaders(), body: body}
	resp, _ := do(t, base, req)
	now := clk.Now()
	names := []string{
		"anthropic-ratelimit-requests-limit", "anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-requests-reset",
		"anthropic-ratelimit-input-tokens-limit", "anthropic-ratelimit-input-tokens-remaining", "anthropic-ratelimit-input-tokens-reset",
		"anthropic-ratelimit-output-tokens-limit", "anthropic-ratelimit-output-tokens-remaining", "anthropic-ratelimit-output-tokens-reset",
		"anthropic-ratelimit-tokens-limit", "anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-tokens-reset",
		"x-ratelimit-limit-requests",
	}
	rfc := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	want := map[string]string{
		"anthropic-ratelimit-requests-limit": "60", "anthropic-ratelimit-requests-remaining": "59", "anthropic-ratelimit-requests-reset": rfc(time.Second),
		"anthropic-ratelimit-input-tokens-limit": itoa(in * 2), "anthropic-ratelimit-input-tokens-remaining": itoa(in), "anthropic-ratelimit-input-tokens-reset": rfc(30 * time.Second),
		"anthropic-ratelimit-output-tokens-limit": "1000", "anthropic-ratelimit-output-tokens-remaining": "995", "anthropic-ratelimit-output-tokens-reset": rfc(time.Second),
		// The tightest token bucket is the input one, at half.
		"anthropic-ratelimit-tokens-limit": itoa(in * 2), "anthropic-ratelimit-tokens-remaining": itoa(in), "anthropic-ratelimit-tokens-reset": rfc(30 * time.Second),
		"x-ratelimit-limit-requests": "",
	}
	if diff := cmp.Diff(want, headers(resp, names...)); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	do(t, base, req)
	resp, b := do(t, base, req)
	if resp.StatusCode != 429 || resp.Header.Get("retry-after") != "30" || resp.Header.Get("retry-after-ms") != "" {
		t.Fatalf("status %d retry-after %q retry-after-ms %q", resp.StatusCode, resp.Header.Get("retry-after"), resp.Header.Get("retry-after-ms"))
	}
	v := decode(t, b)
	if v["type"] != "error" || path(v, "error.type") != "rate_limit_error" || !strings.Contains(path(v, "error.message").(string), "input tokens per minute") {
		t.Errorf("body %s", b)
	}
}

func TestRateLimitBodiesPerFlavor(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	_, base := start(t, Options{Now: clk.Now, Limits: Limits{RPM: 1}})
	azure := reqSpec{path: "/openai/deployments/gpt/chat/completions?api-version=2024-10-21", header: azureHeaders(), body: chatBody("x", "")}
	bedrock := reqSpec{path: "/model/m/invoke", header: bedrockHeaders(), body: bedrockBody}
	do(t, base, azure)

	resp, b := do(t, base, azure)
	msg, _ := path(decode(t, b), "error.message").(string)
	if resp.StatusCode != 429 || path(decode(t, b), "error.code") != "429" || resp.Header.Get("retry-after-ms") != "60000" ||
		!strings.HasPrefix(msg, "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded call rate limit") ||
		!strings.Contains(msg, "Please retry after 60 seconds.") {
		t.Errorf("azure: %d %v %s", resp.StatusCode, resp.Header, b)
	}

	resp, b = do(t, base, bedrock)
	if resp.StatusCode != 429 || !strings.HasPrefix(resp.Header.Get("x-amzn-ErrorType"), "ThrottlingException:") ||
		string(b) != `{"message":"Too many requests, please wait before trying again."}` {
		t.Errorf("bedrock: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	for k := range resp.Header {
		if strings.Contains(strings.ToLower(k), "ratelimit") || strings.EqualFold(k, "retry-after") {
			t.Errorf("bedrock sent %s", k)
		}
	}
}

func TestFormatOpenAIReset(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0: "0s", 20 * time.Millisecond: "20ms", time.Second: "1s", 6 * time.Minute: "6m0s",
		1500*time.Millisecond + 1: "1.501s", 17*time.Millisecond + 300*time.Microsecond: "18ms",
	} {
		if got := formatOpenAIReset(d); got != want {
			t.Errorf("formatOpenAIReset(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestOversizedRequestNeverFits(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	_, base := start(t, Options{Now: clk.Now, Limits: Limits{InputTPM: 2}})
	resp, _ := do(t, base, reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: chatBody("gpt-4o", "")})
	if resp.StatusCode != 429 {
		t.Fatalf("status %d, want 429 for a prompt larger than the bucket", resp.StatusCode)
	}
}

func TestConcurrentRequestsShareTheBucket(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	s, base := start(t, Options{Now: clk.Now, Limits: Limits{RPM: 25}})
	statuses := make(chan int, 60)
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%7 == 0 {
				s.SetLatency(0, 0) // settings change while requests run
			}
			resp, _ := do(t, base, flavorRequests()[FlavorOpenAI])
			statuses <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(statuses)
	got := map[int]int{}
	for st := range statuses {
		got[st]++
	}
	if diff := cmp.Diff(map[int]int{200: 25, 429: 35}, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if s.InFlight() != 0 || s.Total() != 60 {
		t.Errorf("InFlight %d, Total %d", s.InFlight(), s.Total())
	}
}
