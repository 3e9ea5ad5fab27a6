package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"weir.dev/edge/internal/wire"
	"weir.dev/routing"
)

// TestCallPathsServedAsByMux: ServeHTTP's shortcut for the call endpoints
// answers every request exactly as the mux alone does — the endpoints
// spelled exactly, and near misses the mux cleans, redirects, refuses or
// does not match (escaped slashes, other methods, trailing slashes).
func TestCallPathsServedAsByMux(t *testing.T) {
	t.Parallel()
	g, err := New(Config{Registry: NewRegistry(), Transport: http.DefaultTransport,
		Adapters: map[routing.WireFormat]wire.Adapter{routing.WireOpenAI: nil}})
	if err != nil {
		t.Fatal(err)
	}
	shortcut := 0
	for _, tc := range []struct{ method, target string }{
		{"POST", "/v1/chat/completions"},
		{"POST", "/v1/messages"},
		{"POST", "/v1/responses"},
		{"POST", "/v1/embeddings"},
		{"POST", "/v1/chat/completions?x=1"},
		{"POST", "/v1/chat%2Fcompletions"},
		{"POST", "/v1/chat/completion%73"},
		{"POST", "/v1//chat/completions"},
		{"POST", "/v1/chat/../chat/completions"},
		{"POST", "/v1/chat/completions/"},
		{"POST", "/V1/chat/completions"},
		{"GET", "/v1/chat/completions"},
		{"PUT", "/v1/messages"},
		{"POST", "/v1/models"},
		{"GET", "/v1/models"},
	} {
		serve := func(h func(http.ResponseWriter, *http.Request)) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(tc.method, tc.target, strings.NewReader(`{"model":"m","messages":[]}`))
			req.Header.Set("Authorization", "Bearer nobody")
			h(rec, req)
			return rec
		}
		got, want := serve(g.ServeHTTP), serve(g.mux.ServeHTTP)
		norm := func(r *httptest.ResponseRecorder) string {
			return strings.ReplaceAll(r.Body.String(), r.Header().Get(hCallID), "ID")
		}
		if got.Code != want.Code || norm(got) != norm(want) || got.Header().Get("Location") != want.Header().Get("Location") {
			t.Errorf("%s %s: %d %q, the mux %d %q", tc.method, tc.target, got.Code, norm(got), want.Code, norm(want))
		}
		if r := httptest.NewRequest(tc.method, tc.target, nil); r.Method == http.MethodPost && r.URL.RawPath == "" {
			if _, ok := callPath(r.URL.Path); ok {
				shortcut++
			}
		}
	}
	if shortcut != 5 {
		t.Errorf("%d requests took the shortcut, want 5", shortcut)
	}
}
