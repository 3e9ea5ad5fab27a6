// Command edge is Weir's gateway: it serves callers' OpenAI- and
// Anthropic-format calls and routes them to providers. Standalone, it runs
// from a config file (--config); joined to a control plane, it takes its
// config from NATS (--nats-url) and reports back there; see README.md.
package main

import (
	// The IANA zone database is built in, so that a record's day_zone
	// (R-HEAD-6) loads on any machine, with or without tzdata installed.
	_ "time/tzdata"

	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"

	"weir.dev/edge/internal/distrib"
	"weir.dev/edge/internal/gateway"
	"weir.dev/edge/internal/netguard"
	"weir.dev/edge/internal/standalone"
	"weir.dev/edge/internal/upauth"
	"weir.dev/edge/internal/usage"
	"weir.dev/edge/internal/wire"
	"weir.dev/edge/internal/wire/anthropic"
	"weir.dev/edge/internal/wire/bedrock"
	"weir.dev/edge/internal/wire/gemini"
	"weir.dev/edge/internal/wire/openai"
	"weir.dev/listen"
	"weir.dev/listen/logflags"
	"weir.dev/routing"
	"weir.dev/routing/natsnames"
	"weir.dev/routing/rules"
	"weir.dev/tracing"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Config is the edge's configuration: flags, with environment variables as
// defaults.
type Config struct {
	ConfigFile string
	NATSURL    string
	StateDir   string
	EdgeKey    []byte
	// ConfigPublicKey verifies config snapshots and commands
	// (--config-public-key, WEIR_CONFIG_PUBLIC_KEY).
	ConfigPublicKey ed25519.PublicKey
	// NATSAuth authenticates and secures the NATS connection.
	NATSAuth    distrib.Auth
	Listen      string
	AdminListen string
	EdgeID      string
	UsageLog    string
	Grace       time.Duration
	Poll        time.Duration
	MaxBody     int64
	// TLS is the gateway's certificate and key (package weir.dev/listen:
	// re-read when the files change); empty serves plain HTTP.
	TLS listen.Files
	// PProf serves /debug/pprof/ on the admin listener; off by default, as
	// profiles and the command line are not for whoever reaches that port
	// (R-SEC-2).
	PProf bool
	// BodyTimeout bounds the time a caller may take to send a whole
	// request body (gateway.Config.BodyTimeout).
	BodyTimeout time.Duration
	// Log is the log format and level (--log-format, --log-level): JSON
	// unless told otherwise, as the edge has no dev mode.
	Log logflags.Options
}

// Validate reports every problem of c.
func (c Config) Validate() error {
	var errs []error
	switch {
	case c.ConfigFile == "" && c.NATSURL == "":
		errs = append(errs, errors.New("give --config (standalone) or --nats-url (with a control plane)"))
	case c.ConfigFile != "" && c.NATSURL != "":
		errs = append(errs, errors.New("give only one of --config and --nats-url"))
	case c.NATSURL != "":
		if c.UsageLog != "" {
			errs = append(errs, errors.New("--usage-log is for standalone mode; with NATS, records go to the WEIR_USAGE stream"))
		}
		if c.EdgeKey == nil {
			errs = append(errs, errors.New("WEIR_EDGE_KEY (32 bytes, hex or base64) is required with --nats-url"))
		}
		if c.EdgeID == "" {
			errs = append(errs, errors.New("--edge-id is empty"))
		}
		if err := c.NATSAuth.Check(c.NATSURL, false); err != nil {
			errs = append(errs, err)
		}
		if c.ConfigPublicKey == nil {
			errs = append(errs, errors.New("--config-public-key (WEIR_CONFIG_PUBLIC_KEY; `controlplane config-public-key` prints it) is required with --nats-url"))
		}
	}
	if c.Listen == "" {
		errs = append(errs, errors.New("--listen is empty"))
	}
	if c.Grace < 0 || c.Poll <= 0 {
		errs = append(errs, errors.New("--shutdown-grace must be ≥ 0 and --poll > 0"))
	}
	if c.MaxBody <= 0 {
		errs = append(errs, errors.New("--max-body must be positive"))
	}
	errs = append(errs, c.TLS.Validate())
	if c.BodyTimeout <= 0 {
		errs = append(errs, errors.New("--body-timeout must be positive"))
	}
	errs = append(errs, c.Log.Validate())
	return errors.Join(errs...)
}

func envOr(getenv func(string) string, k, def string) string {
	if v := getenv(k); v != "" {
		return v
	}
	return def
}

func parse(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	host, _ := os.Hostname()
	fs := flag.NewFlagSet("edge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c Config
	fs.StringVar(&c.ConfigFile, "config", getenv("WEIR_EDGE_CONFIG"), "standalone config file (protojson weir.config.v1.StandaloneConfig) [WEIR_EDGE_CONFIG]")
	fs.StringVar(&c.NATSURL, "nats-url", getenv("NATS_URL"), "NATS server(s) of the control plane, comma-separated [NATS_URL]")
	fs.StringVar(&c.StateDir, "state-dir", getenv("WEIR_EDGE_STATE_DIR"), "where the config cache and the usage journal live (default ./var/edge-<edge id>) [WEIR_EDGE_STATE_DIR]")
	fs.StringVar(&c.Listen, "listen", envOr(getenv, "WEIR_EDGE_LISTEN", ":8080"), "gateway address [WEIR_EDGE_LISTEN]")
	fs.StringVar(&c.AdminListen, "admin-listen", envOr(getenv, "WEIR_EDGE_ADMIN_LISTEN", "127.0.0.1:9090"), "metrics, health and (with --pprof) profiling address, empty to disable [WEIR_EDGE_ADMIN_LISTEN]")
	fs.StringVar(&c.EdgeID, "edge-id", envOr(getenv, "WEIR_EDGE_ID", host), "this edge's id [WEIR_EDGE_ID]")
	fs.StringVar(&c.UsageLog, "usage-log", getenv("WEIR_EDGE_USAGE_LOG"), "append call records as JSON lines to this file, - for stdout [WEIR_EDGE_USAGE_LOG]")
	fs.DurationVar(&c.Grace, "shutdown-grace", 30*time.Second, "how long in-flight calls may finish on shutdown")
	fs.DurationVar(&c.Poll, "poll", time.Second, "how often the config file is checked for changes")
	fs.Int64Var(&c.MaxBody, "max-body", 32<<20, "largest request body accepted, bytes")
	fs.StringVar(&c.NATSAuth.Creds, "nats-creds", getenv("NATS_CREDS"), "NATS credentials file (.creds: JWT and nkey seed) [NATS_CREDS]")
	fs.StringVar(&c.NATSAuth.User, "nats-user", getenv("NATS_USER"), "NATS user, with --nats-password [NATS_USER]")
	fs.StringVar(&c.NATSAuth.Password, "nats-password", getenv("NATS_PASSWORD"), "NATS password [NATS_PASSWORD]")
	fs.StringVar(&c.NATSAuth.CA, "nats-ca", getenv("NATS_CA"), "CA certificate (PEM) that verifies the NATS server [NATS_CA]")
	fs.StringVar(&c.NATSAuth.Cert, "nats-cert", getenv("NATS_CERT"), "client certificate (PEM) for NATS, with --nats-key [NATS_CERT]")
	fs.StringVar(&c.NATSAuth.Key, "nats-key", getenv("NATS_KEY"), "client certificate key (PEM) for NATS [NATS_KEY]")
	fs.BoolVar(&c.NATSAuth.Insecure, "nats-insecure", getenv("NATS_INSECURE") == "true", "allow an unauthenticated or plain-text NATS connection [NATS_INSECURE=true]")
	pubKey := fs.String("config-public-key", getenv("WEIR_CONFIG_PUBLIC_KEY"), "the control plane's Ed25519 public key, base64 (what `controlplane config-public-key` prints); snapshots and commands not signed with it are refused [WEIR_CONFIG_PUBLIC_KEY]")
	fs.StringVar(&c.TLS.Cert, "tls-cert", getenv("WEIR_EDGE_TLS_CERT"), "serve the gateway over TLS with this PEM certificate (chain), re-read when it changes [WEIR_EDGE_TLS_CERT]")
	fs.StringVar(&c.TLS.Key, "tls-key", getenv("WEIR_EDGE_TLS_KEY"), "the PEM private key of --tls-cert [WEIR_EDGE_TLS_KEY]")
	fs.BoolVar(&c.PProf, "pprof", false, "serve Go profiling (/debug/pprof/) on the admin listener")
	fs.DurationVar(&c.BodyTimeout, "body-timeout", gateway.DefaultBodyTimeout, "how long a caller may take to send a whole request body (slower: 408)")
	c.Log.Register(fs, getenv, "")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.Log.Resolve(false)
	var keyErr error
	if c.NATSURL != "" {
		if c.StateDir == "" {
			c.StateDir = filepath.Join("var", "edge-"+natsnames.Token(c.EdgeID))
		}
		if k := getenv("WEIR_EDGE_KEY"); k != "" {
			c.EdgeKey, keyErr = distrib.ParseEdgeKey(k)
		}
		if *pubKey != "" {
			var err error
			if c.ConfigPublicKey, err = distrib.ParsePublicKey(*pubKey); err != nil {
				keyErr = errors.Join(keyErr, err)
			}
		}
	}
	return c, errors.Join(keyErr, c.Validate())
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parse(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "edge:", err)
		return 2
	}
	log := cfg.Log.Logger(stderr)
	if err := serve(ctx, cfg, getenv, stdout, log); err != nil {
		fmt.Fprintln(stderr, "edge:", err)
		return 1
	}
	return 0
}

// upstreamTransport is the transport calls go upstream with, through the
// dial-time guard (R-SEC-2), and the function that sets which loopback
// ports tenant records may dial: that comes with the config, NATS's ports
// never, and pooled connections made under the old setting are dropped.
func upstreamTransport(cfg Config) (*netguard.Dialer, *netguard.Transport, func(rules.TenantLoopback)) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConns, base.MaxIdleConnsPerHost = 1024, 256
	base.ResponseHeaderTimeout = 0 // the attempt deadline governs (R-FAIL-9)
	dialer := &netguard.Dialer{}
	transport := netguard.NewTransport(dialer, base)
	never := rules.NATSPorts(cfg.NATSURL)
	return dialer, transport, func(l rules.TenantLoopback) {
		l.Never = never
		dialer.SetTenantLoopback(l)
		transport.CloseIdleConnections()
	}
}

// usageLogSink is sink, or, with --usage-log, a JSON-lines writer of call
// records to stdout ("-") or to the file path (appended, mode 0600); close
// closes that file.
func usageLogSink(path string, stdout io.Writer, sink usage.Sink) (_ usage.Sink, close func(), _ error) {
	switch path {
	case "":
		return sink, func() {}, nil
	case "-":
		return usage.NewJSONLines(stdout), func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, err
	}
	return usage.NewJSONLines(f), func() { _ = f.Close() }, nil
}

func serve(ctx context.Context, cfg Config, getenv func(string) string, stdout io.Writer, log *slog.Logger) error {
	traces, err := tracing.Start(ctx, "weir-edge", getenv)
	if err != nil {
		return err
	}
	defer traces.CloseLogged(5*time.Second, log) // last, after the calls have ended: their spans are flushed
	if traces.Enabled() {
		log.Info("tracing calls over OTLP (OTEL_* environment)")
	}
	dialer, transport, setLoopback := upstreamTransport(cfg)
	defer transport.CloseIdleConnections()

	tokenClient := &http.Client{Transport: transport, Timeout: upauth.TokenFetchTimeout}
	signer := upauth.New(nil, tokenClient, time.Now)

	reg := gateway.NewRegistry()
	states := routing.NewStates()
	var sink usage.Sink = usage.Discard{}
	var budgets gateway.Budgets
	var affinity gateway.Affinity
	var edge *distrib.Edge
	var liveEdges func() int // nil: standalone, whole caller limits (R-HEAD-7)
	if cfg.NATSURL != "" {
		setLoopback(rules.TenantLoopback{}) // none until a cluster snapshot says
		nc, err := distrib.Connect(cfg.NATSURL, cfg.EdgeID, cfg.NATSAuth, log)
		if err != nil {
			return err
		}
		defer nc.Close()
		edge, err = distrib.New(distrib.Options{NATS: nc, EdgeID: cfg.EdgeID, StateDir: cfg.StateDir, EdgeKey: cfg.EdgeKey,
			ConfigPublicKey: cfg.ConfigPublicKey, Registry: reg, States: states, Secrets: signer, TenantLoopback: setLoopback, Log: log})
		if err != nil {
			return err
		}
		sink, budgets, affinity = edge.Usage(), edge.Budgets(), edge.Affinity()
		liveEdges = edge.LiveEdges
	}
	sink, closeLog, err := usageLogSink(cfg.UsageLog, stdout, sink)
	if err != nil {
		return err
	}
	defer closeLog()
	metrics := gateway.NewMetrics()
	metrics.WatchMembers(reg, states, time.Now)
	gw, err := gateway.New(gateway.Config{
		EdgeID: cfg.EdgeID, MaxBodyBytes: cfg.MaxBody, BodyTimeout: cfg.BodyTimeout, Registry: reg, States: states, Budgets: budgets, Affinity: affinity,
		Adapters: map[routing.WireFormat]wire.Adapter{
			routing.WireOpenAI: openai.Adapter{}, routing.WireAnthropic: anthropic.Adapter{}, routing.WireBedrock: bedrock.Adapter{}, routing.WireGemini: gemini.Adapter{},
		},
		Signer: signer, SignErrorKind: upauth.Kind, Transport: transport, Sink: sink, Metrics: metrics, Log: log,
		LiveEdges: liveEdges, Tracer: gatewayTracer(traces),
	})
	if err != nil {
		return err
	}

	if edge != nil {
		// The edge serves at once from its disk cache (if any) and /readyz
		// turns ready when a config is installed: from disk, or the whole
		// of WEIR_CONFIG as first delivered (even with no tenant), which
		// the edge installs only once every bucket it uses exists.
		// Its loops outlive the shutdown signal: Close, after the last call,
		// flushes records and gives back leases, then stops them.
		if err := edge.Start(context.WithoutCancel(ctx)); err != nil {
			return err
		}
		defer func() {
			// Calls have ended: flush their records and give back leases.
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := edge.Close(cctx); err != nil {
				log.Error("closing the control-plane link", "err", err)
			}
		}()
	} else {
		watchCtx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		if err := loadStandalone(watchCtx, cfg, getenv, log, signer, reg, setLoopback); err != nil {
			return err
		}
	}
	return listenAndServe(ctx, cfg, gw, metrics, dialer, log)
}

// gatewayTracer is the tracer of the gateway's calls: none when tracing is
// off, so that calls pay nothing for it.
func gatewayTracer(p *tracing.Provider) trace.Tracer {
	if !p.Enabled() {
		return nil
	}
	return p.TracerProvider().Tracer("weir.dev/edge/gateway")
}

// loadStandalone watches the config file until ctx ends and returns once
// the first load is installed (or failed). A valid file is a config even
// without any tenant: the registry is then ready.
func loadStandalone(ctx context.Context, cfg Config, getenv func(string) string, log *slog.Logger, signer *upauth.Signer, reg *gateway.Registry, loopback func(rules.TenantLoopback)) error {
	loaded := make(chan error, 1)
	go func() {
		first := true
		err := standalone.Watch(ctx, cfg.ConfigFile, cfg.Poll, getenv, log, func(c *standalone.Config) {
			loopback(c.TenantLoopback)
			signer.SetStore(c.Secrets)
			reg.Set(c.Tables)
			if first {
				first = false
				loaded <- nil
			}
		})
		if err != nil {
			loaded <- err
		}
	}()
	select {
	case err := <-loaded:
		if err != nil {
			return err
		}
	case <-ctx.Done():
	}
	return nil
}

// listenAndServe serves callers (and the admin port) until ctx ends, then
// shuts down gracefully. Once bound, and before anything is served, the
// listeners' addresses go to dialer: no record ever dials the edge itself
// (R-SEC-2).
func listenAndServe(ctx context.Context, cfg Config, gw *gateway.Gateway, metrics *gateway.Metrics, dialer *netguard.Dialer, log *slog.Logger) error {
	if ctx.Err() != nil {
		return nil
	}
	raw, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	own := []net.Addr{raw.Addr()}
	var aln net.Listener
	if cfg.AdminListen != "" {
		if aln, err = net.Listen("tcp", cfg.AdminListen); err != nil {
			raw.Close()
			return err
		}
		own = append(own, aln.Addr())
	}
	closeAll := func() {
		raw.Close()
		if aln != nil {
			aln.Close()
		}
	}
	if err := dialer.SetListeners(own...); err != nil {
		closeAll()
		return err
	}
	ln, err := listen.TLS(raw, cfg.TLS, log)
	if err != nil {
		closeAll()
		return err
	}
	srv := &http.Server{Handler: gw, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: 1 << 20}
	errs := make(chan error, 2)
	go func() { errs <- srv.Serve(ln) }()
	var admin *http.Server
	if aln != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", metrics.Handler())
		if cfg.PProf {
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		}
		mux.Handle("/healthz", gw)
		mux.Handle("/readyz", gw)
		admin = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { errs <- admin.Serve(aln) }()
		log.Info("admin listening", "addr", aln.Addr().String())
	}
	log.Info("edge listening", "addr", ln.Addr().String(), "tls", cfg.TLS.Enabled(), "edge_id", cfg.EdgeID)
	select {
	case <-ctx.Done():
	case err := <-errs:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	// Graceful shutdown: stop accepting, let in-flight calls and streams
	// finish within the grace period. Records are written as calls end.
	log.Info("shutting down", "grace", cfg.Grace)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Grace)
	defer cancel()
	if admin != nil {
		_ = admin.Shutdown(sctx)
	}
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
