package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// stallingUpstream answers with stream events, then waits for its request
// to end, which it reports on gone. events < 0: no answer at all.
func stallingUpstream(t *testing.T, events int) (string, chan struct{}) {
	gone := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // net/http notices a closed connection once the body is read
		if events >= 0 {
			w.Header().Set("Content-Type", "text/event-stream")
			for range events {
				_, _ = w.Write([]byte(`data: {"id":"x","object":"chat.completion.chunk","model":"gpt-x","choices":[{"index":0,"delta":{"content":"hi"}}]}` + "\n\n"))
			}
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
			gone <- struct{}{}
		case <-time.After(10 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", gone
}

func deadlines(attempt, call time.Duration) func(*configv1.ProviderRecord) {
	return func(r *configv1.ProviderRecord) {
		r.Recovery.AttemptDeadline = durationpb.New(attempt)
		r.Recovery.CallDeadline = durationpb.New(call)
	}
}

func waitGone(t *testing.T, gone chan struct{}, what string) {
	t.Helper()
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: the upstream request was not cancelled", what)
	}
}

// TestCallDeadlineCancelsUpstream: the call deadline ends an attempt before
// its headers (no attempt deadline, or a later one) and a stream after
// them, and cancels the upstream request.
func TestCallDeadlineCancelsUpstream(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		attempt time.Duration
		events  int
	}{
		{"no attempt deadline, no headers", 0, -1},
		{"later attempt deadline, no headers", 5 * time.Second, -1},
		{"stream stalls after headers", 5 * time.Second, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up, gone := stallingUpstream(t, tc.events)
			h := newHarness(t, recordSpec{name: "pool", wire: configv1.WireFormat_WIRE_FORMAT_OPENAI, models: []*configv1.Model{chatModel("gpt-x")},
				members: []fakeMember{{name: "m", url: up}}, edit: deadlines(tc.attempt, 400*time.Millisecond)})
			start := time.Now()
			res := h.post("/v1/chat/completions", `{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			if took := time.Since(start); took > 4*time.Second {
				t.Fatalf("the call took %v past its 400 ms deadline", took)
			}
			waitGone(t, gone, tc.name)
			if tc.events > 0 {
				if res.status != 200 || !strings.Contains(string(res.body), `"error"`) {
					t.Fatalf("%d %q", res.status, res.body)
				}
			} else if !strings.Contains(string(res.body), "weir_upstream_timeout") {
				t.Fatalf("%d %q", res.status, res.body)
			}
			h.record(1)
		})
	}
}

// TestClientGoneCancelsUpstream: the caller going away mid-stream cancels
// the upstream request.
func TestClientGoneCancelsUpstream(t *testing.T) {
	t.Parallel()
	up, gone := stallingUpstream(t, 2)
	h := newHarness(t, recordSpec{name: "pool", wire: configv1.WireFormat_WIRE_FORMAT_OPENAI, models: []*configv1.Model{chatModel("gpt-x")},
		members: []fakeMember{{name: "m", url: up}}, edit: deadlines(5*time.Second, 20*time.Second)})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.url+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+callerKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	waitGone(t, gone, "client gone")
	h.record(1)
}
