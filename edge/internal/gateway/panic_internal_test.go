package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"weir.dev/edge/internal/wire"
	"weir.dev/routing"
)

// TestGuard: a handler without a call record (GET /v1/models) that panics
// answers 500 weir_internal with x-weir-call-id when nothing was written,
// and aborts the response when its status line already went out; both
// count in weir_panics_total.
func TestGuard(t *testing.T) {
	t.Parallel()
	g, err := New(Config{Registry: NewRegistry(), Transport: http.DefaultTransport,
		Adapters: map[routing.WireFormat]wire.Adapter{routing.WireOpenAI: nil}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/before", g.guard(routing.EndpointChatCompletions, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		panic("boom")
	}))
	mux.HandleFunc("/after", g.guard(routing.EndpointChatCompletions, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(200)
		_, _ = w.Write([]byte(`{"object":"li`))
		http.NewResponseController(w).Flush()
		panic("boom")
	}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/before")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 500 || resp.Header.Get(hError) != codeInternal || !strings.HasPrefix(resp.Header.Get(hCallID), "call_") ||
		resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(body), `"type":"weir_internal"`) {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}

	resp, err = http.Get(srv.URL + "/after")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Fatal("a response cut by a panic read as whole")
	}
	rec := httptest.NewRecorder()
	g.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), "\nweir_panics_total 2\n") {
		t.Fatalf("metrics lack weir_panics_total 2:\n%s", rec.Body.String())
	}
}
