package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"weir.dev/edge/internal/callerlimit"
	"weir.dev/edge/internal/usage"
	"weir.dev/edge/internal/wire"
	"weir.dev/routing"
)

// Signer applies a member's auth to an upstream request. Its errors are
// classified by SignErrorKind.
type Signer interface {
	Sign(ctx context.Context, req *http.Request, body []byte, m *routing.Member, tenantID string) error
}

// Budgets reserves and settles calls' costs (R-COST-1, R-COST-2).
type Budgets interface {
	// Reserve takes amount from every budget that applies to the call, or
	// refuses with 402 weir_budget_exceeded. The returned func settles the
	// reservation at the call's actual cost; it must be called exactly once.
	Reserve(t *routing.Table, k *routing.Key, amount routing.Nanos) (settle func(cost routing.Nanos), err *routing.Error)
}

// Affinity remembers the member that served each job's last call
// (R-STICK-1, R-STICK-3) and how many cached input tokens it holds (R-SEE-3).
type Affinity interface {
	Get(tenantID, jobHash string) (memberID string, cachedTokens int64, ok bool)
	Put(tenantID, jobHash, memberID string, cachedTokens int64)
}

// Config holds the gateway's settings; zero values take defaults.
type Config struct {
	EdgeID string
	// MaxBodyBytes bounds a request body (default 32 MiB): a larger one is
	// refused with 413 invalid_request, before it is read when its
	// Content-Length says so.
	MaxBodyBytes int64
	// BodyTimeout bounds the time a caller may take to send a whole request
	// body, from when the gateway starts reading it: a slower one is refused
	// with 408 invalid_request. Zero means DefaultBodyTimeout; negative
	// means no bound (for tests). The answer's time is not bounded by it.
	BodyTimeout time.Duration
	Registry    *Registry
	States      *routing.States
	Adapters    map[routing.WireFormat]wire.Adapter
	Signer      Signer
	// SignErrorKind classifies Signer errors (R-END-3, R-END-4).
	SignErrorKind func(error) routing.FailureKind
	Transport     http.RoundTripper
	Sink          usage.Sink
	Budgets       Budgets
	Affinity      Affinity
	Metrics       *Metrics
	Log           *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// KeepAlive is the interval of ": weir waiting" comments to a stream
	// still without upstream headers (R-FAIL-12); default
	// routing.KeepAliveInterval. Tests shorten it.
	KeepAlive time.Duration
	// LiveEdges counts the live edges of the cluster (at least 1), so that
	// this edge enforces its share of each caller limit (R-CAP-2) and of
	// each member's declared limits (R-HEAD-7: the gateway hands it to
	// States.ShareAmong). It is called on every call and must be cheap (an
	// atomic load). Nil means 1: a standalone edge enforces whole limits.
	LiveEdges func() int
	// Tracer starts the spans of calls and their attempts (trace.go); nil
	// means no tracing, at no cost to a call.
	Tracer trace.Tracer
}

// Gateway is the edge's HTTP handler for callers.
type Gateway struct {
	cfg    Config
	mux    *http.ServeMux
	body   *bodyReader
	limits *callerlimit.Limiter
	// slots are the members' in-flight slots (R-CAP-1).
	slots *capacity
}

// New returns a gateway; cfg.Registry, cfg.Adapters and cfg.Transport are
// required.
func New(cfg Config) (*Gateway, error) {
	if cfg.Registry == nil || cfg.Transport == nil || len(cfg.Adapters) == 0 {
		return nil, errors.New("gateway: registry, transport and adapters are required")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 32 << 20
	}
	if cfg.BodyTimeout == 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.States == nil {
		cfg.States = routing.NewStates()
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = routing.KeepAliveInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Sink == nil {
		cfg.Sink = usage.NewMemory()
	}
	if cfg.Budgets == nil {
		cfg.Budgets = NewLocalBudgets()
	}
	if cfg.Affinity == nil {
		cfg.Affinity = NewLocalAffinity(100_000)
	}
	if cfg.Signer == nil {
		cfg.Signer = noSigner{}
	}
	if cfg.SignErrorKind == nil {
		cfg.SignErrorKind = func(error) routing.FailureKind { return routing.KindKeyUnavailable }
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	g := &Gateway{cfg: cfg, mux: http.NewServeMux(), body: newBodyReader(cfg.MaxBodyBytes, cfg.BodyTimeout),
		limits: callerlimit.New(cfg.LiveEdges, cfg.Now), slots: newCapacity()}
	cfg.States.UseSlots(g.slots)
	g.mux.HandleFunc("POST /v1/chat/completions", g.endpoint(routing.EndpointChatCompletions))
	g.mux.HandleFunc("POST /v1/embeddings", g.endpoint(routing.EndpointEmbeddings))
	g.mux.HandleFunc("POST /v1/responses", g.endpoint(routing.EndpointResponses))
	g.mux.HandleFunc("POST /v1/messages", g.endpoint(routing.EndpointMessages))
	g.mux.HandleFunc("GET /v1/models", g.guard(routing.EndpointChatCompletions, g.models))
	g.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	g.mux.HandleFunc("GET /readyz", g.ready)
	g.mux.HandleFunc("/", g.notFound)
	return g, nil
}

// Metrics are the gateway's Prometheus metrics (R-OBS-3).
func (g *Gateway) Metrics() *Metrics { return g.cfg.Metrics }

// States is the edge's member state (for views and operator resets).
func (g *Gateway) States() *routing.States { return g.cfg.States }

// CallerLimits is the edge's caller-limit state (R-CAP-2).
func (g *Gateway) CallerLimits() *callerlimit.Limiter { return g.limits }

// ServeHTTP implements http.Handler. A POST to one of the call endpoints,
// spelled exactly (no escapes, nothing to clean), is served without the
// mux's pattern matching; the mux would route it to the same handler
// (TestCallPathsServedAsByMux). Everything else goes through the mux.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.RawPath == "" {
		if ep, ok := callPath(r.URL.Path); ok {
			g.serveCall(w, r, ep)
			return
		}
	}
	g.mux.ServeHTTP(w, r)
}

// callPath is the call endpoint served at path, spelled exactly.
func callPath(path string) (routing.Endpoint, bool) {
	switch path {
	case "/v1/chat/completions":
		return routing.EndpointChatCompletions, true
	case "/v1/messages":
		return routing.EndpointMessages, true
	case "/v1/responses":
		return routing.EndpointResponses, true
	case "/v1/embeddings":
		return routing.EndpointEmbeddings, true
	}
	return 0, false
}

func (g *Gateway) endpoint(ep routing.Endpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { g.serveCall(w, r, ep) }
}

func (g *Gateway) ready(w http.ResponseWriter, _ *http.Request) {
	if !g.cfg.Registry.Ready() {
		http.Error(w, "no configuration yet", http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ready\n"))
}

func (g *Gateway) notFound(w http.ResponseWriter, r *http.Request) {
	ep := routing.EndpointChatCompletions
	if r.URL.Path == "/v1/messages" {
		ep = routing.EndpointMessages
	}
	w.Header().Set(hCallID, newCallID())
	closeUnread(w.Header(), r)
	writeError(w, ep, &routing.Error{Status: http.StatusNotFound, Code: routing.CodeInvalidRequest, Message: r.Method + " " + r.URL.Path + " is not an endpoint of this gateway"}, weirJSON{})
}

// models answers GET /v1/models (R-MODEL-6) in OpenAI's list format.
func (g *Gateway) models(w http.ResponseWriter, r *http.Request) {
	id := newCallID()
	w.Header().Set(hCallID, id)
	w.Header().Set(hAttempts, "0")
	t, k := g.cfg.Registry.Lookup(apiKey(r.Header))
	if t == nil {
		writeError(w, routing.EndpointChatCompletions, invalidKey(), weirJSON{})
		return
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, m := range t.Models(k) {
		list.Data = append(list.Data, model{ID: m, Object: "model", OwnedBy: "weir"})
	}
	writeJSON(w, http.StatusOK, list)
}

func invalidKey() *routing.Error {
	return &routing.Error{Status: http.StatusUnauthorized, Code: routing.CodeInvalidAPIKey, Message: "the API key is unknown or revoked"}
}

// newCallID returns a random 128-bit call id, hex, prefixed "call_".
func newCallID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// callRand is the routing core's randomness: the runtime's per-goroutine
// generator, which needs no lock.
type callRand struct{}

func (callRand) Float64() float64 { return mrand.Float64() }

type noSigner struct{}

func (noSigner) Sign(context.Context, *http.Request, []byte, *routing.Member, string) error {
	return nil
}
