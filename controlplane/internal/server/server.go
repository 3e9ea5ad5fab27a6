// Package server wires the control plane's admin API into one HTTP handler
// and serves it: Connect, gRPC and gRPC-Web on one port (HTTP/1.1 and
// HTTP/2, cleartext or TLS), with gRPC health checking and server
// reflection.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	"connectrpc.com/otelconnect"
	"go.opentelemetry.io/otel/trace"

	"weir.dev/controlplane/internal/admin"
	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/console"
	"weir.dev/controlplane/internal/distrib"
	"weir.dev/controlplane/internal/provider"
	"weir.dev/controlplane/internal/secretbox"
	"weir.dev/controlplane/internal/store"
	"weir.dev/controlplane/internal/throttle"
	"weir.dev/db/pgserver"
	"weir.dev/listen"
	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/rules"
	"weir.dev/tracing"
)

// Config is the control plane server's configuration.
type Config struct {
	// Listen is the address of the admin API (WEIR_CP_LISTEN).
	Listen string
	// DatabaseURL is the PostgreSQL DSN (DATABASE_URL). In dev mode an empty
	// one means a private or local server found by pgserver.Ensure.
	DatabaseURL string
	// Dev keeps the master and edge keys under VarDir when the environment
	// has none, and finds a database when DatabaseURL is empty.
	Dev bool
	// VarDir holds dev-mode state (keys). Default "var".
	VarDir string
	// ShutdownTimeout bounds the graceful shutdown. Default 10s.
	ShutdownTimeout time.Duration
	// NatsURL is the NATS server (cluster) the control plane distributes
	// through (NATS_URL). In dev mode an empty one means an embedded server
	// (package natsembed) on NatsListen with its state under VarDir/nats;
	// outside dev mode, no distribution at all (logged).
	NatsURL string
	// NatsListen is the embedded NATS server's address (dev mode without
	// NatsURL). Default 127.0.0.1:4222.
	NatsListen string
	// NatsListenFallback lets the embedded NATS server listen on a free
	// port when NatsListen's is in use, logging the URL it took
	// (natsembed.Options.FreePortIfTaken). The command sets it when
	// NatsListen is the default rather than the operator's choice.
	NatsListenFallback bool
	// NatsAuth authenticates and secures the connection to NatsURL.
	// Outside dev mode an unauthenticated or plain-text one is refused
	// unless NatsAuth.Insecure.
	NatsAuth NatsAuth
	// NatsReplicas is how many servers of a JetStream cluster keep each
	// bucket and the usage stream (WEIR_NATS_REPLICAS, --nats-replicas),
	// 1-5: 1 on a single server (the default), 3 in a three-node cluster.
	NatsReplicas int
	// NatsEdges are the edge ids the embedded NATS server (dev mode) has
	// users for, their passwords generated under VarDir/nats-auth. Default
	// edge-1 and edge-2 (make run's).
	NatsEdges []string
	// SecureCookies marks the console's cookies Secure on every request,
	// for a console behind a TLS-terminating proxy
	// (WEIR_CONSOLE_SECURE_COOKIES). Requests over TLS get Secure cookies
	// anyway.
	SecureCookies bool
	// TLS is the certificate and key the admin port serves TLS with
	// (WEIR_CP_TLS_CERT, WEIR_CP_TLS_KEY), re-read when the files change
	// (package weir.dev/listen). Empty: plain HTTP.
	TLS listen.Files
	// TenantLoopbackPorts are the ports of an edge's own machine (loopback)
	// that tenant-owned records may reach, such as a local vLLM's
	// (WEIR_TENANT_LOOPBACK_PORTS, --tenant-loopback-ports; ROUTING.md
	// R-SEC-2). Edges get them in the cluster snapshot. None by default;
	// in dev mode every port. The ports of the NATS servers are never
	// among them.
	TenantLoopbackPorts []uint16
	// DefaultTenantMaxInFlight is the cluster default of a tenant's
	// max_in_flight (WEIR_DEFAULT_TENANT_MAX_IN_FLIGHT,
	// --default-tenant-max-in-flight; ROUTING.md R-CAP-2), 1-1000000,
	// default 512. Edges get it in the cluster snapshot and apply it to
	// tenants whose own max_in_flight is 0; tenant admins may set their
	// tenant's up to it, only cluster admins above.
	DefaultTenantMaxInFlight int64
}

// TenantLoopback is what the cluster snapshot says of tenant loopback
// ports: every port in dev mode, else TenantLoopbackPorts.
func (c Config) TenantLoopback() *configv1.TenantLoopback {
	if c.Dev {
		return &configv1.TenantLoopback{AllPorts: true}
	}
	out := &configv1.TenantLoopback{}
	for _, p := range c.TenantLoopbackPorts {
		out.Ports = append(out.Ports, uint32(p))
	}
	return out
}

// ParsePorts reads a comma-separated list of ports (each 1-65535), such as
// "8000,11434", into increasing order without duplicates; "" is none.
func ParsePorts(s string) ([]uint16, error) {
	var out []uint16
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.ParseUint(f, 10, 16)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("port %q is not a number in 1-65535", f)
		}
		out = append(out, uint16(n))
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// natsPorts are the ports of the NATS servers c uses: those of NatsURL
// (4222 when a URL names none), or the embedded server's in dev mode.
func (c Config) natsPorts() []uint16 {
	var out []uint16
	if c.NatsURL == "" {
		if _, p, err := net.SplitHostPort(c.NatsListen); err == nil {
			if n, err := strconv.ParseUint(p, 10, 16); err == nil {
				out = append(out, uint16(n))
			}
		}
		return out
	}
	return append(out, rules.NATSPorts(c.NatsURL)...)
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Listen: "127.0.0.1:7070", VarDir: "var", ShutdownTimeout: 10 * time.Second, NatsListen: "127.0.0.1:4222",
		NatsEdges: []string{"edge-1", "edge-2"}, DefaultTenantMaxInFlight: admin.DefaultTenantMaxInFlight, NatsReplicas: 1}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen address %q: %w", c.Listen, err))
	}
	if c.DatabaseURL == "" && !c.Dev {
		errs = append(errs, errors.New("no database: set DATABASE_URL or --database-url (or use --dev)"))
	}
	if c.VarDir == "" {
		errs = append(errs, errors.New("the var directory must not be empty"))
	}
	if c.NatsURL == "" && c.Dev {
		if _, _, err := net.SplitHostPort(c.NatsListen); err != nil {
			errs = append(errs, fmt.Errorf("embedded NATS address %q: %w", c.NatsListen, err))
		}
	}
	if c.NatsReplicas < 1 || c.NatsReplicas > 5 {
		errs = append(errs, fmt.Errorf("NATS replicas %d: must be 1-5 (JetStream keeps at most 5 copies)", c.NatsReplicas))
	}
	if err := c.NatsAuth.Check(c.NatsURL, c.Dev); err != nil {
		errs = append(errs, err)
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, errors.New("the shutdown timeout must be positive"))
	}
	errs = append(errs, c.TLS.Validate())
	if c.DefaultTenantMaxInFlight < 1 || c.DefaultTenantMaxInFlight > admin.MaxInFlight {
		errs = append(errs, fmt.Errorf("default tenant max in flight %d: must be 1-%d (R-CAP-2)", c.DefaultTenantMaxInFlight, admin.MaxInFlight))
	}
	for _, p := range c.natsPorts() {
		if slices.Contains(c.TenantLoopbackPorts, p) {
			errs = append(errs, fmt.Errorf("tenant loopback ports: %d is a NATS port, which tenant records may never reach (R-SEC-2)", p))
		}
	}
	return errors.Join(errs...)
}

// Deps are what Handler needs.
type Deps struct {
	Store *store.Store
	// Box seals secret values under the master key.
	Box *secretbox.Box
	// Log receives one line per failed RPC and internal errors; nil
	// discards. Request and response bodies are never logged.
	Log *slog.Logger
	// Now is the clock (nil: time.Now); Rand the source of keys and tokens
	// (nil: crypto/rand).
	Now  func() time.Time
	Rand io.Reader
	// Resetter sends member resets to the edges and Revoker key
	// revocations (both *distrib.Commander); nil sends none.
	Resetter provider.Resetter
	Revoker  admin.Revoker
	// MasterKey is the master key the web console derives its cookie keys
	// from (nil: a random key, so console sessions end with the process).
	// ConsoleSecureCookies marks the console's cookies Secure even on
	// plain-HTTP requests (behind a TLS-terminating proxy).
	MasterKey            []byte
	ConsoleSecureCookies bool
	// AuthLimiter slows down repeated failed admin-token checks and console
	// sign-ins per client address; nil: one with throttle's defaults (5
	// failures, then one per second).
	AuthLimiter *throttle.Limiter
	// Stopping is closed when the server begins to shut down; the console's
	// long-lived streams end then instead of holding the shutdown up. Nil:
	// never.
	Stopping <-chan struct{}
	// Limits bound request bodies (zero: the defaults).
	Limits Limits
	// DefaultTenantMaxInFlight is the cluster default of a tenant's
	// max_in_flight (Config.DefaultTenantMaxInFlight); 0 means 512.
	DefaultTenantMaxInFlight int64
	// TracerProvider traces the admin RPCs, a server span each
	// (otelconnect; no header or body is recorded); nil traces nothing.
	TracerProvider trace.TracerProvider
}

// Handler returns the admin API (every service, health and reflection) and
// the web console under /console/ (with / redirecting there).
//
// Every request to a service is authenticated from its headers before its
// body is read (auth.RequireToken); only health checking and reflection are
// public. Bodies are bounded as sent and as decompressed, and must arrive
// within a deadline (Deps.Limits).
func Handler(d Deps) http.Handler {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.AuthLimiter == nil {
		d.AuthLimiter = throttle.New(throttle.Config{Now: d.Now})
	}
	limits := d.Limits.withDefaults()
	interceptors := []connect.Interceptor{newLogInterceptor(d.Log), auth.NewInterceptor(d.Store.Q, d.Log, auth.WithLimiter(d.AuthLimiter)), fillSlot{}}
	if d.TracerProvider != nil {
		// Outermost, so that refused calls are traced too. A caller's
		// trace context is linked to, not taken as the parent
		// (otelconnect's default for servers).
		traced, err := otelconnect.NewInterceptor(otelconnect.WithTracerProvider(d.TracerProvider),
			otelconnect.WithPropagator(tracing.Propagator()), otelconnect.WithoutMetrics())
		if err != nil {
			panic(fmt.Sprintf("server: otelconnect: %v", err)) // only invalid options get here
		}
		interceptors = append([]connect.Interceptor{traced}, interceptors...)
	}
	opts := append(limits.handlerOptions(), connect.WithInterceptors(interceptors...))
	services := http.NewServeMux()
	admin.Register(services, admin.Deps{Store: d.Store, Box: d.Box, Log: d.Log, Now: d.Now, Rand: d.Rand, Revoker: d.Revoker, DefaultTenantMaxInFlight: d.DefaultTenantMaxInFlight}, opts...)
	provider.Register(services, provider.Deps{Store: d.Store, Log: d.Log, Now: d.Now, Resetter: d.Resetter}, opts...)
	names := append(admin.ServiceNames(),
		adminv1connect.ProviderServiceName, adminv1connect.PoolServiceName, adminv1connect.PriceServiceName)
	mux := http.NewServeMux()
	// Everything but the public endpoints below needs a token, unknown
	// paths included.
	mux.Handle("/", auth.RequireToken(d.Store.Q, d.Log, d.AuthLimiter, services))
	public := limits.handlerOptions()
	mux.Handle(grpchealth.NewHandler(&checker{store: d.Store, services: names}, public...))
	reflector := grpcreflect.NewStaticReflector(names...)
	mux.Handle(grpcreflect.NewHandlerV1(reflector, public...))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(reflector, public...))
	// The console calls the API above in-process, as the signed-in admin.
	api := http.Handler(mux)
	ui, err := console.New(console.Deps{API: api, Sessions: pgSessions{d.Store}, MasterKey: d.MasterKey, SecureCookies: d.ConsoleSecureCookies, Stopping: d.Stopping, Now: d.Now, Log: d.Log})
	if err != nil {
		// Only a master key shorter than 32 bytes gets here; Run loads
		// 32-byte keys.
		panic(fmt.Sprintf("server: console: %v", err))
	}
	root := http.NewServeMux()
	root.Handle("/", api)
	root.Handle("/console/", ui)
	root.Handle("GET /{$}", http.RedirectHandler("/console/", http.StatusFound))
	return limits.limitBodies(root)
}

// Run serves the admin API per cfg until ctx ends.
func Run(ctx context.Context, cfg Config, getenv func(string) string, log *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	traces, err := tracing.Start(ctx, "weir-controlplane", getenv)
	if err != nil {
		return err
	}
	// Last, once the server and the distribution stopped: their spans
	// are flushed.
	defer traces.CloseLogged(5*time.Second, log)
	var tracer trace.Tracer
	if traces.Enabled() {
		log.Info("tracing admin RPCs and usage ingest over OTLP (OTEL_* environment)")
		tracer = traces.TracerProvider().Tracer("weir.dev/controlplane")
	}
	master, err := secretbox.MasterKey(getenv, cfg.Dev, cfg.VarDir)
	if err != nil {
		return err
	}
	box, err := secretbox.NewBox(master, nil)
	if err != nil {
		return err
	}
	// The edge key seals secrets in snapshots; it is checked at start so
	// that a control plane that cannot serve edges does not start.
	edgeKey, err := secretbox.EdgeKey(getenv, cfg.Dev, cfg.VarDir)
	if err != nil {
		return err
	}
	// The config signing key signs snapshots and commands for edges, which
	// verify them with its public key (controlplane config-public-key).
	signingKey, err := secretbox.ConfigSigningKey(getenv, cfg.Dev, cfg.VarDir)
	if err != nil {
		return err
	}
	dsn, err := OpenDatabase(ctx, cfg, getenv, log)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := resealAll(ctx, st, box, log); err != nil {
		return err
	}
	raw, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	ln, err := listen.TLS(raw, cfg.TLS, log)
	if err != nil {
		_ = raw.Close()
		return err
	}
	dist, err := startDistribution(ctx, cfg, st, box, edgeKey, signingKey, tracer, log)
	if err != nil {
		_ = ln.Close()
		return err
	}
	defer dist.stop()
	deps := Deps{Store: st, Box: box, Log: log, MasterKey: master, Stopping: ctx.Done(), ConsoleSecureCookies: cfg.SecureCookies,
		DefaultTenantMaxInFlight: cfg.DefaultTenantMaxInFlight}
	if traces.Enabled() {
		deps.TracerProvider = traces.TracerProvider()
	}
	if dist.commander != nil {
		deps.Resetter, deps.Revoker = dist.commander, dist.commander
	}
	log.Info("admin API listening", "addr", ln.Addr().String(), "tls", cfg.TLS.Enabled(), "dev", cfg.Dev)
	return Serve(ctx, ln, Handler(deps), log, cfg.ShutdownTimeout)
}

// ResealSecrets re-seals every secret of an older seal version with its
// tenant, name and hosts as additional data (secretbox.ResealAll), as
// `controlplane migrate` does after the migrations. It loads the master key
// only when such secrets exist: without one (and outside --dev) it fails,
// saying how many wait.
func ResealSecrets(ctx context.Context, cfg Config, getenv func(string) string, st *store.Store, log *slog.Logger) error {
	n, err := st.Q.CountSecretsBelowSealVersion(ctx, secretbox.SealVersion)
	if err != nil {
		return fmt.Errorf("count secrets to re-seal: %w", err)
	}
	if n == 0 {
		return nil
	}
	master, err := secretbox.MasterKey(getenv, cfg.Dev, cfg.VarDir)
	if err != nil {
		return fmt.Errorf("%d secrets must be re-sealed under the master key: %w", n, err)
	}
	box, err := secretbox.NewBox(master, nil)
	if err != nil {
		return err
	}
	_, err = resealAll(ctx, st, box, log)
	return err
}

// resealAll runs secretbox.ResealAll and logs how many secrets it re-sealed.
func resealAll(ctx context.Context, st *store.Store, box *secretbox.Box, log *slog.Logger) (int, error) {
	n, err := secretbox.ResealAll(ctx, st.Pool(), box)
	if err != nil {
		return 0, err
	}
	if n > 0 {
		log.Info("re-sealed secrets with their tenant, name and hosts", "count", n)
	}
	return n, nil
}

// ConfigPublicKey returns the public key edges verify config snapshots and
// commands with (their --config-public-key), as base64: that of
// WEIR_CONFIG_SIGNING_KEY, or in dev mode of the key kept under VarDir
// (created when missing).
func ConfigPublicKey(cfg Config, getenv func(string) string) (string, error) {
	seed, err := secretbox.ConfigSigningKey(getenv, cfg.Dev, cfg.VarDir)
	if err != nil {
		return "", err
	}
	s, err := distrib.NewSigner(seed)
	if err != nil {
		return "", err
	}
	return s.PublicKeyText(), nil
}

// OpenDatabase returns the DSN of the control plane's database: cfg's
// DatabaseURL, else (dev mode) database "weir" on the server pgserver.Ensure
// finds or starts. The DSN is never logged.
func OpenDatabase(ctx context.Context, cfg Config, getenv func(string) string, log *slog.Logger) (string, error) {
	if cfg.DatabaseURL != "" {
		return cfg.DatabaseURL, nil
	}
	if !cfg.Dev {
		return "", errors.New("no database: set DATABASE_URL or --database-url (or use --dev)")
	}
	adminDSN, err := pgserver.Ensure(ctx, pgserver.Options{Getenv: getenv, Log: slogWriter{log}})
	if err != nil {
		return "", err
	}
	return pgserver.EnsureDatabase(ctx, adminDSN, "weir")
}

// Serve serves h on ln until ctx ends, then shuts down, waiting at most
// shutdownTimeout for requests in flight. HTTP/1.1 and HTTP/2 are both
// served, in clear text or over TLS when ln is a TLS listener (package
// weir.dev/listen), so gRPC clients work either way. Headers are bounded
// in size (64 KiB) and in time (10s); an idle keep-alive connection is
// closed after 2 minutes. There is no ReadTimeout or WriteTimeout: they
// would cut server-streaming RPCs and the console's event streams; bodies
// get a deadline of their own (Limits.BodyReadTimeout).
func Serve(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger, shutdownTimeout time.Duration) error {
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Handler:           h,
		Protocols:         protocols,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// checker reports the API serving while the database answers.
type checker struct {
	store    *store.Store
	services []string
}

func (c *checker) Check(ctx context.Context, req *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	if req.Service != "" {
		known := false
		for _, s := range c.services {
			known = known || s == req.Service
		}
		if !known {
			return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("unknown service %s", req.Service))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := c.store.Pool().Ping(ctx); err != nil {
		return &grpchealth.CheckResponse{Status: grpchealth.StatusNotServing}, nil
	}
	return &grpchealth.CheckResponse{Status: grpchealth.StatusServing}, nil
}

// slogWriter turns pgserver's progress lines into log records.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.log.Info("pgserver", "msg", string(p))
	return len(p), nil
}
