package openai

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"weir.dev/edge/internal/wire"
	"weir.dev/routing"
)

func TestURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, base, model, version string
		ep                         routing.Endpoint
		want                       string
	}{
		{"openai", "https://api.openai.com/v1/", "gpt-4o", "", routing.EndpointChatCompletions, "https://api.openai.com/v1/chat/completions"},
		{"vllm embeddings", "http://127.0.0.1:8000/v1", "m", "", routing.EndpointEmbeddings, "http://127.0.0.1:8000/v1/embeddings"},
		{"azure deployment", "https://acme-sweden.openai.azure.com/openai", "my dep", "2024-10-21", routing.EndpointChatCompletions,
			"https://acme-sweden.openai.azure.com/openai/deployments/my%20dep/chat/completions?api-version=2024-10-21"},
		{"azure v1 path", "https://acme-sweden.openai.azure.com/openai/v1", "gpt-4o", "", routing.EndpointResponses,
			"https://acme-sweden.openai.azure.com/openai/v1/responses"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := URL(tc.base, tc.ep, tc.model, tc.version)
			if err != nil || got != tc.want {
				t.Fatalf("got %q %v, want %q", got, err, tc.want)
			}
		})
	}
	if _, err := URL("https://x", routing.EndpointMessages, "m", ""); err == nil {
		t.Fatal("messages endpoint accepted by the openai adapter")
	}
}

// TestURLMemo: URLs of members without an api-version are memoized per
// base and endpoint, made alike every time, concurrently, and with no
// allocation once known; past maxRootURLs bases they are still right.
func TestURLMemo(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range maxRootURLs + 50 {
				base := fmt.Sprintf("http://h%d.example/v1%s", i, strings.Repeat("/", (i+g)%3))
				for _, ep := range []routing.Endpoint{routing.EndpointChatCompletions, routing.EndpointEmbeddings} {
					want := strings.TrimRight(base, "/") + map[routing.Endpoint]string{routing.EndpointChatCompletions: "/chat/completions", routing.EndpointEmbeddings: "/embeddings"}[ep]
					if got, err := URL(base, ep, "m", ""); err != nil || got != want {
						t.Errorf("URL(%q, %v) = %q %v, want %q", base, ep, got, err, want)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if n := len(*rootURLs.Load()); n > maxRootURLs {
		t.Fatalf("%d URLs kept", n)
	}
	rootURLs.Store(nil) // room for the URL below
	if n := testing.AllocsPerRun(100, func() { _, _ = URL("http://h1.example/v1", routing.EndpointChatCompletions, "m", "") }); n != 0 {
		t.Fatalf("%v allocations for a known URL", n)
	}
}

// recOut keeps what was written and where Complete was called.
type recOut struct {
	bytes.Buffer
	completes int
	at        int
	u         routing.Usage
}

func (*recOut) Start(int, http.Header) {}
func (*recOut) Flush()                 {}
func (o *recOut) Complete(u routing.Usage) {
	o.completes++
	o.at, o.u = o.Len(), u
}

func TestRelayCompletesBeforeTheEnd(t *testing.T) {
	t.Parallel()
	// The answer is completed, with its final usage, before its terminal
	// event is written; nothing of the terminal event is written before.
	for _, tc := range []struct {
		name     string
		req      wire.Request
		stream   string
		terminal string
		want     routing.Usage
	}{
		{"chat, usage chunk dropped", wire.Request{Endpoint: routing.EndpointChatCompletions, Stream: true},
			"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\n" +
				"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7}}\n\n" +
				"data: [DONE]\n\n",
			"data: [DONE]", routing.Usage{InputTokens: 11, OutputTokens: 7}},
		{"responses API", wire.Request{Endpoint: routing.EndpointResponses, Stream: true},
			"event: response.created\ndata: {\"type\":\"response.created\"}\n\n" +
				"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":3}}}\n\n",
			"event: response.completed", routing.Usage{InputTokens: 5, OutputTokens: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(tc.stream))}
			var out recOut
			u, err := Adapter{}.Relay(&tc.req, resp, &out)
			s := out.String()
			if err != nil || u != tc.want || out.completes != 1 || out.u != tc.want || !strings.HasPrefix(s[out.at:], tc.terminal) || strings.Contains(s[:out.at], tc.terminal) {
				t.Fatalf("usage %+v err %v completes %d with %+v at %d of %q", u, err, out.completes, out.u, out.at, s)
			}
		})
	}
}
