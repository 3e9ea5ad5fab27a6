// Package fakeprovider is a fake LLM provider that speaks the wire formats of
// OpenAI, Azure OpenAI, Anthropic Messages, Anthropic models on Amazon
// Bedrock, the Gemini API and Gemini on Vertex AI closely enough that the
// official SDKs and Weir's adapters work against it.
//
// A Server answers with generated text, reports usage, enforces token-bucket
// rate limits with the providers' real rate-limit headers, and plays scripted
// faults (429s, quota refusals, 5xx, connection resets, slow headers, cut
// streams, hangs). Everything can be changed while the server runs, from any
// goroutine, so a test can change the script mid-test. Tests inspect what the
// server received through Count, LastRequest and Requests.
//
// The path decides the wire format:
//
//	OpenAI     POST /v1/chat/completions, /v1/embeddings, /v1/responses; GET /v1/models
//	Azure      POST /openai/deployments/{deployment}/{chat/completions,embeddings,responses}?api-version=…
//	           POST /openai/v1/{chat/completions,embeddings,responses}; GET /openai/v1/models
//	Anthropic  POST /v1/messages (GET /v1/models answers in Anthropic's shape when
//	           the request carries anthropic-version)
//	Bedrock    POST /model/{modelId}/invoke, /model/{modelId}/invoke-with-response-stream
//	Gemini     POST /v1beta/models/{model}:{generateContent,streamGenerateContent,batchEmbedContents}
//	           (also under /v1/models/)
//	Vertex     POST /v1/projects/{p}/locations/{l}/publishers/google/models/{model}:{same methods}
//	           POST /token (OAuth2 JWT-bearer grant issuing Vertex access tokens)
//
// Every answer carries the flavor's rate-limit headers for each limited
// dimension (OpenAI and Azure: x-ratelimit-*; Anthropic:
// anthropic-ratelimit-*). Bedrock, Gemini and Vertex, like the real
// services, send none; Bedrock's throttling names no time to wait unless a
// scripted fault does, and Google's 429s name it in the body (RetryInfo).
//
// A request is handled in this order: route (unknown paths 404), body read
// (too large 413), method (405), the next scripted fault, credentials,
// body validation (400), token buckets (429), then latency and the answer.
// Google's flavors answer in Google's error shape (an "error" object with
// code, message, status and details): an unknown path or method is 404
// NOT_FOUND and a body too large 400 INVALID_ARGUMENT, as Google answers.
//
// Vertex calls carry "Authorization: Bearer" access tokens that only the
// server's own token endpoint issues: ServiceAccountKey gives the JSON key
// of the service account whose signed JWTs POST /token exchanges for
// tokens (the OAuth2 JWT-bearer grant, RFC 7523); scripted faults and the
// buckets never touch /token. TokenRequests, ExpireTokens and
// SetTokenLifetime script the token side.
//
// Tools behave alike in every flavor (see tools.go): a forced call, or a
// last user text naming a declared tool, is answered with one call of it;
// a last turn of tool results is answered with text repeating them.
package fakeprovider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Flavor names one provider wire format.
type Flavor string

// The flavors a Server speaks. FlavorAll (or the empty Flavor) serves every
// one on its own paths.
const (
	FlavorAll       Flavor = "all"
	FlavorOpenAI    Flavor = "openai"
	FlavorAzure     Flavor = "azure"
	FlavorAnthropic Flavor = "anthropic"
	FlavorBedrock   Flavor = "bedrock"
	// FlavorGemini is the Gemini API (generativelanguage.googleapis.com),
	// authenticated by an API key.
	FlavorGemini Flavor = "gemini"
	// FlavorVertex is Gemini on Vertex AI, authenticated by OAuth2 access
	// tokens the server's own token endpoint issues to its service account.
	FlavorVertex Flavor = "vertex"
)

// ParseFlavor returns the Flavor named by s ("openai", "azure", "anthropic",
// "bedrock", "gemini", "vertex" or "all"; "" is all).
func ParseFlavor(s string) (Flavor, error) {
	switch f := Flavor(strings.ToLower(strings.TrimSpace(s))); f {
	case "", FlavorAll:
		return FlavorAll, nil
	case FlavorOpenAI, FlavorAzure, FlavorAnthropic, FlavorBedrock, FlavorGemini, FlavorVertex:
		return f, nil
	}
	return "", fmt.Errorf("fakeprovider: unknown flavor %q (want openai, azure, anthropic, bedrock, gemini, vertex or all)", s)
}

// Defaults used when the matching Options field is zero.
const (
	DefaultTokens        = 16
	DefaultEmbeddingDims = 16
	DefaultHistory       = 256
	DefaultMaxBodyBytes  = 32 << 20
)

// Options configure a Server. The zero value is usable: every flavor, no rate
// limits, no latency, DefaultTokens output tokens, any non-empty key accepted.
type Options struct {
	// Flavor restricts the server to one wire format; other paths answer 404.
	// Empty or FlavorAll serves every format.
	Flavor Flavor

	// Limits are the token buckets; zero fields are unlimited.
	Limits Limits

	// Latency is the time to first byte of a successful answer: the delay
	// before the status line.
	Latency time.Duration
	// TokenDelay is the time to generate one output token. Streams wait it
	// before each text delta; non-streaming answers wait Tokens×TokenDelay
	// (after Latency) before the status line.
	TokenDelay time.Duration
	// Tokens is the number of output tokens of each answer (DefaultTokens
	// when zero). A smaller max_tokens in the request caps it, and the answer
	// then says so (finish_reason "length", stop_reason "max_tokens",
	// finishReason "MAX_TOKENS").
	Tokens int
	// CachedTokens is the part of each prompt reported as read from the
	// prompt cache (OpenAI cached_tokens, Anthropic cache_read_input_tokens,
	// Gemini cachedContentTokenCount), at most the prompt's estimated size.
	CachedTokens int
	// CacheCreationTokens is the part of each prompt reported as written to
	// the cache (Anthropic cache_creation_input_tokens).
	CacheCreationTokens int
	// EmbeddingDims is the length of each embedding when the request names
	// no dimensions (DefaultEmbeddingDims when zero).
	EmbeddingDims int
	// Models are listed by GET /v1/models.
	Models []string

	// APIKey, when set, is the only key accepted (Bearer, api-key,
	// x-api-key, x-goog-api-key or Gemini's ?key=); otherwise any non-empty
	// key is.
	APIKey string
	// GCPProject is the project of the Vertex service account
	// (DefaultGCPProject when empty).
	GCPProject string
	// TokenLifetime is how long the Vertex access tokens the server issues
	// stay valid (DefaultTokenLifetime when zero).
	TokenLifetime time.Duration
	// AWSSecretAccessKey, when set, makes Bedrock requests carry a valid
	// SigV4 signature made with it; otherwise any AWS4-HMAC-SHA256 or
	// Bearer Authorization header is accepted.
	AWSSecretAccessKey string

	// Now is the clock of the token buckets (time.Now when nil). Latencies
	// always use real time.
	Now func() time.Time
	// History bounds how many requests Requests keeps (DefaultHistory when
	// zero, none when negative).
	History int
	// MaxBodyBytes bounds request bodies (DefaultMaxBodyBytes when zero);
	// larger bodies get 413.
	MaxBodyBytes int64
}

// settings are the Options that may change while the server runs.
type settings struct {
	latency, tokenDelay        time.Duration
	tokens                     int
	cachedTokens, cacheCreated int
	apiKey, awsSecret          string
	tokenLifetime              time.Duration
}

// Server is a fake provider. It is an http.Handler; Start serves it on a
// loopback port. All methods are safe for concurrent use.
type Server struct {
	flavor       Flavor
	now          func() time.Time
	models       []string
	embedDims    int
	historyCap   int
	maxBodyBytes int64
	words        []string

	mu       sync.Mutex
	set      settings
	limiter  limiter
	queue    []Fault
	sticky   Fault
	counts   map[string]int
	total    int
	history  []Request
	last     *Request
	closed   bool
	httpSrv  *http.Server
	listener net.Listener
	url      string

	inFlight atomic.Int64
	handlers sync.WaitGroup
	serveErr chan error
	done     chan struct{}
	ids      atomic.Uint64

	gcp gcpAuth
}

// New returns a Server configured by opts. It does not listen; use Start or
// mount it as an http.Handler.
func New(opts Options) *Server {
	s := &Server{
		flavor:       opts.Flavor,
		now:          opts.Now,
		models:       append([]string(nil), opts.Models...),
		embedDims:    opts.EmbeddingDims,
		historyCap:   opts.History,
		maxBodyBytes: opts.MaxBodyBytes,
		counts:       map[string]int{},
		words:        splitWords(answerText),
		done:         make(chan struct{}),
		set: settings{
			latency:       opts.Latency,
			tokenDelay:    opts.TokenDelay,
			tokens:        opts.Tokens,
			cachedTokens:  opts.CachedTokens,
			cacheCreated:  opts.CacheCreationTokens,
			apiKey:        opts.APIKey,
			awsSecret:     opts.AWSSecretAccessKey,
			tokenLifetime: opts.TokenLifetime,
		},
	}
	s.gcp.project = opts.GCPProject
	if s.gcp.project == "" {
		s.gcp.project = DefaultGCPProject
	}
	if s.flavor == "" {
		s.flavor = FlavorAll
	}
	if s.now == nil {
		s.now = time.Now
	}
	if len(s.models) == 0 {
		s.models = []string{"gpt-4o-mini", "gpt-4o", "text-embedding-3-small", "claude-sonnet-4-5"}
	}
	if s.embedDims <= 0 {
		s.embedDims = DefaultEmbeddingDims
	}
	if s.historyCap == 0 {
		s.historyCap = DefaultHistory
	}
	if s.maxBodyBytes <= 0 {
		s.maxBodyBytes = DefaultMaxBodyBytes
	}
	s.limiter.reset(opts.Limits, s.now())
	return s
}

// Start serves the server on a fresh 127.0.0.1 port and returns its base URL
// (for example "http://127.0.0.1:41234"), which clients extend with the
// paths of the package comment. Start may be called once.
func (s *Server) Start() (string, error) {
	return s.Listen("127.0.0.1:0")
}

// Listen serves the server on addr and returns its base URL. Like Start it
// may be called once, and Close stops it.
func (s *Server) Listen(addr string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", errors.New("fakeprovider: server closed")
	}
	if s.httpSrv != nil {
		return "", errors.New("fakeprovider: already started")
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("fakeprovider: listen: %w", err)
	}
	s.listener = l
	s.httpSrv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.url = "http://" + l.Addr().String()
	s.serveErr = make(chan error, 1)
	go func() { s.serveErr <- s.httpSrv.Serve(l) }()
	return s.url, nil
}

// URL returns the base URL given by Start or Listen, or "" before either.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Addr returns the listening address, or nil before Start or Listen.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == nil {
		return nil
	}
	return s.listener.Addr()
}

// Close releases every request that waits (hangs, latencies, slow headers),
// stops the listener Start opened and closes its connections, and waits for
// the handlers to return. Requests arriving after Close get 503. Close is
// idempotent. A caller that mounted the Server in its own http.Server should
// call Close before closing that server, since hanging requests only end
// here or when their clients go away.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	srv := s.httpSrv
	s.mu.Unlock()

	var err error
	if srv != nil {
		err = srv.Close()
		if serr := <-s.serveErr; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
	}
	s.handlers.Wait()
	return err
}

// Shutdown stops accepting connections and waits until the requests being
// answered end or ctx is done, then closes the server as Close does. Streams
// and hangs still running when ctx is done are cut.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv := s.httpSrv
	s.mu.Unlock()
	var err error
	if srv != nil {
		err = srv.Shutdown(ctx)
	}
	return errors.Join(err, s.Close())
}

// SetLimits replaces the token buckets; each starts full.
func (s *Server) SetLimits(l Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limiter.reset(l, s.now())
}

// SetLatency sets the time to first byte and the time per output token.
func (s *Server) SetLatency(ttfb, perToken time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set.latency, s.set.tokenDelay = ttfb, perToken
}

// SetTokens sets the number of output tokens of each answer (DefaultTokens
// when n is zero or negative).
func (s *Server) SetTokens(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set.tokens = n
}

// SetCache sets the prompt tokens reported as read from and written to the
// prompt cache.
func (s *Server) SetCache(read, created int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set.cachedTokens, s.set.cacheCreated = read, created
}

// SetAPIKey sets the only key accepted; "" accepts any non-empty key.
func (s *Server) SetAPIKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set.apiKey = key
}

// SetAWSSecret sets the secret Bedrock signatures are verified with; ""
// accepts any signature.
func (s *Server) SetAWSSecret(secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set.awsSecret = secret
}

// Request is what the server recorded of one request.
type Request struct {
	// Seq numbers requests from 1 in arrival order.
	Seq      int
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Body     []byte
	// Flavor is the wire format the path belongs to ("" for unknown paths).
	Flavor Flavor
	// Model is the model the answer names: the body's model, the Azure
	// deployment, the Bedrock model ID or the Gemini model of the path.
	Model string
	// Time is when the request arrived, by the server's clock.
	Time time.Time
}

// Count returns how many requests arrived for path (the URL path, without
// the query).
func (s *Server) Count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[path]
}

// Counts returns the number of requests per path.
func (s *Server) Counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.counts))
	for k, v := range s.counts {
		out[k] = v
	}
	return out
}

// Total returns how many requests arrived.
func (s *Server) Total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// InFlight returns how many requests are being answered now.
func (s *Server) InFlight() int {
	return int(s.inFlight.Load())
}

// LastRequest returns the most recent request; ok is false when none came.
func (s *Server) LastRequest() (r Request, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		return Request{}, false
	}
	return s.last.clone(), true
}

// Requests returns the recorded requests, oldest first (at most
// Options.History of them).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.history))
	for i := range s.history {
		out[i] = s.history[i].clone()
	}
	return out
}

// ResetStats forgets the counters and recorded requests.
func (s *Server) ResetStats() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts = map[string]int{}
	s.total = 0
	s.history = nil
	s.last = nil
}

// clone returns a copy of r that shares no memory with it.
func (r *Request) clone() Request {
	c := *r
	c.Header = r.Header.Clone()
	c.Body = append([]byte(nil), r.Body...)
	return c
}

// record stores req and returns its sequence number.
func (s *Server) record(req Request) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total++
	req.Seq = s.total
	s.counts[req.Path]++
	s.last = &req
	if s.historyCap > 0 {
		if len(s.history) >= s.historyCap {
			copy(s.history, s.history[1:])
			s.history = s.history[:len(s.history)-1]
		}
		s.history = append(s.history, req)
	}
	return req.Seq
}

// setModel fills in the model of the recorded request seq once the body is
// parsed.
func (s *Server) setModel(seq int, model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != nil && s.last.Seq == seq {
		s.last.Model = model
	}
	for i := len(s.history) - 1; i >= 0; i-- {
		if s.history[i].Seq == seq {
			s.history[i].Model = model
			break
		}
	}
}

// snapshot returns the current mutable settings.
func (s *Server) snapshot() settings {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.set
}

// ServeHTTP answers one request in the wire format its path belongs to.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		w.Header().Set("Connection", "close")
		http.Error(w, "fakeprovider: closed", http.StatusServiceUnavailable)
		return
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)

	c := &call{s: s, w: w, r: r, set: s.snapshot(), cutAfter: -1}
	c.route = s.route(r)
	c.model = c.route.model

	body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBodyBytes))
	c.body = body
	c.seq = s.record(Request{
		Method:   r.Method,
		Path:     r.URL.Path,
		RawQuery: r.URL.RawQuery,
		Header:   r.Header.Clone(),
		Body:     append([]byte(nil), body...),
		Flavor:   c.route.flavor,
		Model:    c.model,
		Time:     s.now(),
	})
	c.serve(readErr)
}
