package fakeprovider

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// flavorRequests returns one ordinary request per flavor.
func flavorRequests() map[Flavor]reqSpec {
	return map[Flavor]reqSpec{
		FlavorOpenAI:    {path: "/v1/chat/completions", header: openAIHeaders(), body: chatBody("gpt-4o", "")},
		FlavorAzure:     {path: "/openai/deployments/gpt/chat/completions?api-version=2024-10-21", header: azureHeaders(), body: chatBody("", "")},
		FlavorAnthropic: {path: "/v1/messages", header: anthropicHeaders(), body: messagesBody("claude", "")},
		FlavorBedrock:   {path: "/model/anthropic.claude-v2/invoke", header: bedrockHeaders(), body: bedrockBody},
	}
}

func TestFaultQueueThenSticky(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{Limits: Limits{RPM: 1}})
	req := flavorRequests()[FlavorOpenAI]
	s.Enqueue(Status(500), Status(503))
	s.SetSticky(Status(502))
	if s.Pending() != 2 {
		t.Fatalf("Pending = %d", s.Pending())
	}
	var got []int
	for range 4 {
		resp, _ := do(t, base, req)
		got = append(got, resp.StatusCode)
	}
	if diff := cmp.Diff([]int{500, 503, 502, 502}, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	s.ClearFaults()
	// Faults did not spend the one request the bucket holds.
	if resp, b := do(t, base, req); resp.StatusCode != 200 {
		t.Errorf("after ClearFaults: %d %s", resp.StatusCode, b)
	}
}

func TestRateLimitFaults(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{})
	type hints struct{ retryAfter, retryAfterMS string }
	tests := []struct {
		fault  Fault
		flavor Flavor
		want   hints
	}{
		{RateLimited(1500 * time.Millisecond), FlavorOpenAI, hints{"2", "1500"}},
		{RateLimited(1500 * time.Millisecond), FlavorAzure, hints{"2", "1500"}},
		{RateLimited(1500 * time.Millisecond), FlavorAnthropic, hints{"2", ""}},
		{RateLimited(0), FlavorBedrock, hints{"1", ""}},
		{RateLimitedMillis(250 * time.Millisecond), FlavorOpenAI, hints{"", "250"}},
		{RateLimitedMillis(250 * time.Millisecond), FlavorAnthropic, hints{"", "250"}},
		{RateLimitedNoHint(), FlavorOpenAI, hints{"", ""}},
		{RateLimitedNoHint(), FlavorAnthropic, hints{"", ""}},
		{Status(429), FlavorAzure, hints{"", ""}},
	}
	for _, tt := range tests {
		s.Enqueue(tt.fault)
		resp, body := do(t, base, flavorRequests()[tt.flavor])
		got := hints{resp.Header.Get("retry-after"), resp.Header.Get("retry-after-ms")}
		if resp.StatusCode != 429 || got != tt.want {
			t.Errorf("%v on %s: status %d, hints %+v, want %+v", tt.fault, tt.flavor, resp.StatusCode, got, tt.want)
		}
		if tt.flavor == FlavorBedrock && !strings.HasPrefix(resp.Header.Get("x-amzn-ErrorType"), "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/") {
			t.Errorf("bedrock error type %q", resp.Header.Get("x-amzn-ErrorType"))
		}
		if tt.flavor == FlavorOpenAI && path(decode(t, body), "error.code") != "rate_limit_exceeded" {
			t.Errorf("openai body %s", body)
		}
	}
}

func TestStatusFaults(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{})
	tests := []struct {
		fault  Fault
		flavor Flavor
		status int
		// want maps JSON paths of the body (or "header:NAME" prefixes) to
		// what they must hold.
		want map[string]string
	}{
		{QuotaExceeded(), FlavorOpenAI, 429, map[string]string{"error.code": "insufficient_quota", "error.type": "insufficient_quota"}},
		{QuotaExceeded(), FlavorAzure, 429, map[string]string{"error.code": "insufficient_quota"}},
		{QuotaExceeded(), FlavorAnthropic, 400, map[string]string{"type": "error", "error.type": "invalid_request_error", "error.message": "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}},
		{QuotaExceeded(), FlavorBedrock, 400, map[string]string{"header:x-amzn-ErrorType": "ServiceQuotaExceededException:"}},
		{ModelNotReady(), FlavorBedrock, 429, map[string]string{"header:x-amzn-ErrorType": "ModelNotReadyException:"}},
		{Status(500), FlavorOpenAI, 500, map[string]string{"error.type": "server_error"}},
		{Status(500), FlavorAnthropic, 500, map[string]string{"error.type": "api_error"}},
		{Status(500), FlavorBedrock, 500, map[string]string{"header:x-amzn-ErrorType": "InternalServerException:"}},
		{Status(503), FlavorOpenAI, 503, map[string]string{"error.type": "server_error"}},
		{Status(503), FlavorAzure, 503, map[string]string{"error.code": "ServiceUnavailable"}},
		{Status(503), FlavorBedrock, 503, map[string]string{"header:x-amzn-ErrorType": "ServiceUnavailableException:"}},
		{Status(529), FlavorAnthropic, 529, map[string]string{"error.type": "overloaded_error", "error.message": "Overloaded"}},
		{Status(502), FlavorOpenAI, 502, map[string]string{"error.type": "cf_bad_gateway", "error.message": "Bad gateway."}},
		{Status(504), FlavorOpenAI, 504, map[string]string{"error.type": "cf_gateway_timeout"}},
		{Status(504), FlavorAnthropic, 504, map[string]string{"error.type": "timeout_error"}},
		{Status(401), FlavorOpenAI, 401, map[string]string{"error.code": "invalid_api_key"}},
		{Status(401), FlavorAzure, 401, map[string]string{"error.code": "401"}},
		{Status(401), FlavorAnthropic, 401, map[string]string{"error.type": "authentication_error"}},
		{Status(401), FlavorBedrock, 401, map[string]string{"header:x-amzn-ErrorType": "UnrecognizedClientException:"}},
		{Status(403), FlavorOpenAI, 403, map[string]string{"error.code": "model_not_found"}},
		{Status(403), FlavorAnthropic, 403, map[string]string{"error.type": "permission_error"}},
		{Status(403), FlavorBedrock, 403, map[string]string{"header:x-amzn-ErrorType": "AccessDeniedException:"}},
		{Status(404), FlavorOpenAI, 404, map[string]string{"error.code": "model_not_found", "error.message": "The model `gpt-4o` does not exist or you do not have access to it."}},
		{Status(404), FlavorAzure, 404, map[string]string{"error.code": "DeploymentNotFound"}},
		{Status(404), FlavorAnthropic, 404, map[string]string{"error.type": "not_found_error", "error.message": "model: claude"}},
		{Status(404), FlavorBedrock, 404, map[string]string{"header:x-amzn-ErrorType": "ResourceNotFoundException:"}},
		{Status(418), FlavorAnthropic, 418, map[string]string{"error.type": "invalid_request_error"}},
	}
	for _, tt := range tests {
		s.Enqueue(tt.fault)
		resp, body := do(t, base, flavorRequests()[tt.flavor])
		if resp.StatusCode != tt.status {
			t.Errorf("%v on %s: status %d, want %d", tt.fault, tt.flavor, resp.StatusCode, tt.status)
			continue
		}
		v := decode(t, body)
		for k, want := range tt.want {
			if name, ok := strings.CutPrefix(k, "header:"); ok {
				if got := resp.Header.Get(name); !strings.HasPrefix(got, want) {
					t.Errorf("%v on %s: header %s = %q, want prefix %q", tt.fault, tt.flavor, name, got, want)
				}
				continue
			}
			if got, _ := path(v, k).(string); got != want {
				t.Errorf("%v on %s: %s = %q, want %q (body %s)", tt.fault, tt.flavor, k, got, want, body)
			}
		}
	}
}

func TestResetFault(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{})
	s.Enqueue(Reset())
	resp, err := send(t, context.Background(), base, flavorRequests()[FlavorAnthropic])
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got status %d, want a transport error", resp.StatusCode)
	}
	t.Logf("transport error: %v", err)
	if resp, _ := do(t, base, flavorRequests()[FlavorAnthropic]); resp.StatusCode != 200 {
		t.Errorf("after the reset: %d", resp.StatusCode)
	}
}

func TestSlowHeadersFault(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{})
	s.Enqueue(SlowHeaders(150 * time.Millisecond))
	t0 := time.Now()
	resp, _ := do(t, base, flavorRequests()[FlavorOpenAI])
	if el := time.Since(t0); resp.StatusCode != 200 || el < 150*time.Millisecond {
		t.Errorf("status %d after %v, want 200 after ≥ 150ms", resp.StatusCode, el)
	}

	// A client that gives up first sees no headers at all.
	s.Enqueue(SlowHeaders(5 * time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if resp, err := send(t, ctx, base, flavorRequests()[FlavorOpenAI]); err == nil {
		resp.Body.Close()
		t.Fatalf("got status %d before the slow headers", resp.StatusCode)
	}
}

func TestCutFault(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{Tokens: 10})
	get := func(r reqSpec) ([]byte, error) {
		t.Helper()
		resp, err := send(t, context.Background(), base, r)
		if err != nil {
			t.Fatalf("transport: %v", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return io.ReadAll(resp.Body)
	}

	t.Run("openai sse", func(t *testing.T) {
		s.Enqueue(CutAfter(3))
		body, err := get(reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: chatBody("gpt-4o", `"stream":true`)})
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("read error %v, want unexpected EOF", err)
		}
		if events, _ := readSSE(bytes.NewReader(body)); len(events) != 3 {
			t.Errorf("got %d events before the cut, want 3", len(events))
		}
	})
	t.Run("anthropic sse after headers", func(t *testing.T) {
		s.Enqueue(CutAfter(0))
		body, err := get(reqSpec{path: "/v1/messages", header: anthropicHeaders(), body: messagesBody("claude", `"stream":true`)})
		if !errors.Is(err, io.ErrUnexpectedEOF) || len(body) != 0 {
			t.Errorf("read error %v with %d bytes, want unexpected EOF with none", err, len(body))
		}
	})
	t.Run("bedrock frames", func(t *testing.T) {
		s.Enqueue(CutAfter(2))
		body, err := get(reqSpec{path: "/model/m/invoke-with-response-stream", header: bedrockHeaders(), body: bedrockBody})
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("read error %v, want unexpected EOF", err)
		}
		names, _, err := decodeBedrockStream(t, bytes.NewReader(body))
		if err != nil || len(names) != 2 {
			t.Errorf("decoded %v (%v), want the first 2 events", names, err)
		}
	})
	t.Run("non-streaming", func(t *testing.T) {
		s.Enqueue(CutAfter(0))
		body, err := get(reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: chatBody("gpt-4o", "")})
		if !errors.Is(err, io.ErrUnexpectedEOF) || len(body) == 0 {
			t.Errorf("read error %v with %d bytes, want unexpected EOF after part of the body", err, len(body))
		}
	})
}

func TestHangFault(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{})
	s.SetSticky(Hang())
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	resp, err := send(t, ctx, base, flavorRequests()[FlavorOpenAI])
	if err == nil {
		resp.Body.Close()
		t.Fatalf("hang answered %d", resp.StatusCode)
	}
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > 2*time.Second {
		t.Errorf("error %v after %v, want the client's deadline", err, time.Since(t0))
	}
	waitFor(t, "the hang to end after the client left", func() bool { return s.InFlight() == 0 })

	// Close releases hanging requests too.
	errc := make(chan error, 1)
	go func() {
		resp, err := send(t, context.Background(), base, flavorRequests()[FlavorAnthropic])
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	waitFor(t, "the request to hang", func() bool { return s.InFlight() == 1 })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Error("a request hanging at Close got an answer")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not release the hanging request")
	}
}

func TestCustomFault(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{})
	s.Enqueue(Custom(418, http.Header{"X-Teapot": {"yes"}, "Content-Type": {"text/plain"}}, "short and stout"))
	resp, body := do(t, base, flavorRequests()[FlavorOpenAI])
	if resp.StatusCode != 418 || resp.Header.Get("X-Teapot") != "yes" || string(body) != "short and stout" || resp.Header.Get("x-request-id") == "" {
		t.Errorf("got %d %v %q", resp.StatusCode, resp.Header, body)
	}
}

func TestParseFault(t *testing.T) {
	t.Parallel()
	good := map[string]Fault{
		"":          {},
		"none":      {},
		"429":       RateLimited(time.Second),
		"429:5s":    RateLimited(5 * time.Second),
		"429-ms":    RateLimitedMillis(time.Second),
		"429-bare":  RateLimitedNoHint(),
		"quota":     QuotaExceeded(),
		"not-ready": ModelNotReady(),
		"503":       Status(503),
		" 529 ":     Status(529),
		"reset":     Reset(),
		"slow:2s":   SlowHeaders(2 * time.Second),
		"cut:3":     CutAfter(3),
		"hang":      Hang(),
	}
	for in, want := range good {
		got, err := ParseFault(in)
		if err != nil || !cmp.Equal(want, got) {
			t.Errorf("ParseFault(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if in != "" && in != "none" {
			if again, err := ParseFault(got.String()); err != nil || !cmp.Equal(got, again) {
				t.Errorf("ParseFault(%q.String() = %q) = %+v, %v", in, got.String(), again, err)
			}
		}
	}
	for _, in := range []string{"slow", "cut", "cut:x", "429:fast", "99", "700", "teapot", "hang:1s", "reset:now"} {
		if f, err := ParseFault(in); err == nil {
			t.Errorf("ParseFault(%q) = %+v, want an error", in, f)
		}
	}
}

// waitFor polls cond for up to five seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
