package gemini

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"weir.dev/edge/internal/wire"
	"weir.dev/routing"
)

// seen is one request as the fake upstream received it.
type seen struct {
	method, path, rawPath, query, contentType, accept string
	header                                            http.Header
	body                                              string
}

// fakeUpstream records the requests it gets and answers 200 {}.
func fakeUpstream(t *testing.T) (*httptest.Server, func() []seen) {
	t.Helper()
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{
			method: r.Method, path: r.URL.Path, rawPath: r.URL.EscapedPath(), query: r.URL.RawQuery,
			contentType: r.Header.Get("Content-Type"), accept: r.Header.Get("Accept"),
			header: r.Header.Clone(), body: string(b),
		})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seen {
		mu.Lock()
		defer mu.Unlock()
		return append([]seen(nil), got...)
	}
}

// TestBuild sends what Build makes to a loopback upstream (DESIGN.md §3,
// R-FMT-2, R-FMT-7): the method by endpoint and stream, the model in the
// path below the member's base URL (Gemini API and Vertex AI shapes), the
// body unchanged.
func TestBuild(t *testing.T) {
	t.Parallel()
	srv, requests := fakeUpstream(t)
	const body = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":64}}`
	const embedBody = `{"requests":[{"model":"models/text-embedding-x","content":{"parts":[{"text":"a"}]}}]}`
	vertex := "/v1/projects/demo-project/locations/europe-west4/publishers/google"
	tests := []struct {
		name                string
		base, model         string
		ep                  routing.Endpoint
		stream              bool
		body                string
		wantPath, wantQuery string
		wantAccept          string
	}{
		{"R-FMT-2 gemini api chat", "/v1beta", "gemini-x-flash", routing.EndpointChatCompletions, false, body,
			"/v1beta/models/gemini-x-flash:generateContent", "", "application/json"},
		{"R-FMT-2 gemini api stream uses SSE", "/v1beta/", "gemini-x-flash", routing.EndpointMessages, true, body,
			"/v1beta/models/gemini-x-flash:streamGenerateContent", "alt=sse", "text/event-stream"},
		{"R-FMT-2 responses caller, listed model name", "/v1beta", "models/gemini-x-pro", routing.EndpointResponses, false, body,
			"/v1beta/models/gemini-x-pro:generateContent", "", "application/json"},
		{"R-FMT-7 embeddings", "/v1beta", "text-embedding-x", routing.EndpointEmbeddings, false, embedBody,
			"/v1beta/models/text-embedding-x:batchEmbedContents", "", "application/json"},
		{"R-FMT-7 embeddings never stream", "/v1beta", "text-embedding-x", routing.EndpointEmbeddings, true, embedBody,
			"/v1beta/models/text-embedding-x:batchEmbedContents", "", "application/json"},
		{"R-FMT-2 vertex publisher model", vertex, "gemini-x-flash-001", routing.EndpointChatCompletions, false, body,
			vertex + "/models/gemini-x-flash-001:generateContent", "", "application/json"},
		{"R-FMT-2 vertex stream", vertex, "gemini-x-flash-001", routing.EndpointChatCompletions, true, body,
			vertex + "/models/gemini-x-flash-001:streamGenerateContent", "alt=sse", "text/event-stream"},
		{"R-FMT-2 model with a slash keeps its parts", "/v1/projects/p/locations/global", "publishers/google/models/gemini-x", routing.EndpointChatCompletions, false, body,
			"/v1/projects/p/locations/global/models/publishers/google/models/gemini-x:generateContent", "", "application/json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &routing.Member{BaseURL: srv.URL + tc.base}
			req := &wire.Request{Endpoint: tc.ep, Body: []byte(tc.body), Model: "caller-model", Stream: tc.stream,
				Header: http.Header{"X-Caller-Secret": {"do-not-pass"}, "Authorization": {"Bearer caller-key"}}}
			r, err := Adapter{}.Build(context.Background(), req, m, tc.model)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(r)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			all := requests()
			g := all[len(all)-1]
			if g.method != http.MethodPost || g.path != tc.wantPath || g.query != tc.wantQuery {
				t.Errorf("got %s %s ? %s, want POST %s ? %s", g.method, g.path, g.query, tc.wantPath, tc.wantQuery)
			}
			if g.contentType != "application/json" || g.accept != tc.wantAccept {
				t.Errorf("content-type %q accept %q, want application/json and %q", g.contentType, g.accept, tc.wantAccept)
			}
			if g.body != tc.body {
				t.Errorf("body changed:\n got %s\nwant %s", g.body, tc.body)
			}
			if g.header.Get("X-Caller-Secret") != "" || g.header.Get("Authorization") != "" {
				t.Errorf("caller headers passed on: %v", g.header)
			}
		})
	}
}

// TestURLRefusesModelsThatMoveTheResource: a model name can only name a
// model below the base, never another resource or method.
func TestURLRefusesModelsThatMoveTheResource(t *testing.T) {
	t.Parallel()
	for _, model := range []string{
		"", "models/", "../../projects/other", "a/../b", "a//b", "./a", "gemini:streamGenerateContent",
		"a?key=1", "a#frag", "a%2F..", "a\\b", "a\nb", strings.Repeat("m", 257),
	} {
		if u, err := URL("https://generativelanguage.googleapis.com/v1beta", model, MethodGenerate); err == nil {
			t.Errorf("model %q accepted: %s", model, u)
		}
	}
	u, err := URL("https://x/v1beta/", "gemini x@001", MethodBatchEmbed)
	if err != nil || u != "https://x/v1beta/models/gemini%20x@001:batchEmbedContents" {
		t.Errorf("got %q %v", u, err)
	}
}

func TestBuildRefusesUnknownEndpoint(t *testing.T) {
	t.Parallel()
	_, err := Adapter{}.Build(context.Background(), &wire.Request{Body: []byte("{}")}, &routing.Member{BaseURL: "https://x/v1beta"}, "m")
	if err == nil {
		t.Fatal("an unknown endpoint was built")
	}
}

// nopOut fails the test if anything is written.
type nopOut struct{ t *testing.T }

func (o nopOut) Start(int, http.Header)      { o.t.Error("Start called") }
func (o nopOut) Write(p []byte) (int, error) { o.t.Error("Write called"); return len(p), nil }
func (o nopOut) Flush()                      { o.t.Error("Flush called") }
func (o nopOut) Complete(routing.Usage)      { o.t.Error("Complete called") }

// TestRelayRefuses: gemini answers are relayed by the translated adapter;
// this Relay writes nothing and says why.
func TestRelayRefuses(t *testing.T) {
	t.Parallel()
	resp := &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{"candidates":[]}`))}
	u, err := Adapter{}.Relay(&wire.Request{}, resp, nopOut{t})
	if !errors.Is(err, ErrRelay) || u != (routing.Usage{}) {
		t.Fatalf("Relay = %v, %v; want ErrRelay and no usage", u, err)
	}
}
