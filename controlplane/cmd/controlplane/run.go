package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/server"
	"weir.dev/controlplane/internal/store"
	"weir.dev/listen/logflags"
)

// Exit codes.
const (
	exitOK      = 0
	exitFail    = 1
	exitBadArgs = 2
)

// run is the whole command: it parses args (the first may name a
// subcommand; "serve" is the default), reads the environment only through
// getenv, and writes only to stdout and stderr.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	o := optionsFromEnv(getenv)
	fs, known := o.flagSet(cmd, getenv, stderr)
	if !known {
		fmt.Fprintf(stderr, "controlplane: unknown command %q (serve, bootstrap-admin, migrate, config-public-key, nats-config)\n", cmd)
		return exitBadArgs
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitBadArgs
	}
	if code := o.finish(cmd, fs, getenv, stderr); code != exitOK {
		return code
	}
	log := o.log.Logger(stderr)
	if err := runCommand(ctx, cmd, o, getenv, log, stdout); err != nil {
		fmt.Fprintf(stderr, "controlplane %s: %v\n", cmd, err)
		return exitFail
	}
	return exitOK
}

// runOptions is what a command line sets: the server configuration, the
// flags that are read as text and parsed only once every flag is in
// (natsEdges, loopbackPorts, defaultInFlight), and bootstrap-admin's own.
type runOptions struct {
	cfg             server.Config
	natsEdges       string // comma-separated edge ids
	loopbackPorts   string // comma-separated ports, for server.ParsePorts
	defaultInFlight string // a number in 1-1000000, read by serve alone
	natsReplicas    string // a number in 1-5, read by serve alone
	name            string // bootstrap-admin --name
	force           bool   // bootstrap-admin --force
	// log is the log format and level: text by default with --dev, else
	// JSON.
	log logflags.Options
}

// optionsFromEnv returns the defaults the flags start from: the server's
// defaults overridden by the environment (getenv).
func optionsFromEnv(getenv func(string) string) *runOptions {
	cfg := server.DefaultConfig()
	if v := getenv("WEIR_CP_LISTEN"); v != "" {
		cfg.Listen = v
	}
	cfg.DatabaseURL = getenv("DATABASE_URL")
	cfg.NatsURL = getenv("NATS_URL")
	if v := getenv("WEIR_NATS_LISTEN"); v != "" {
		cfg.NatsListen = v
	}
	cfg.SecureCookies = getenv("WEIR_CONSOLE_SECURE_COOKIES") == "true"
	if v := getenv("WEIR_NATS_EDGES"); v != "" {
		cfg.NatsEdges = strings.Split(v, ",")
	}
	o := &runOptions{cfg: cfg, natsEdges: strings.Join(cfg.NatsEdges, ",")}
	o.cfg.TLS.Cert, o.cfg.TLS.Key = getenv("WEIR_CP_TLS_CERT"), getenv("WEIR_CP_TLS_KEY")
	o.loopbackPorts = getenv("WEIR_TENANT_LOOPBACK_PORTS")
	o.natsReplicas = getenv("WEIR_NATS_REPLICAS")
	if o.natsReplicas == "" {
		o.natsReplicas = strconv.Itoa(cfg.NatsReplicas)
	}
	o.defaultInFlight = getenv("WEIR_DEFAULT_TENANT_MAX_IN_FLIGHT")
	if o.defaultInFlight == "" {
		o.defaultInFlight = strconv.FormatInt(cfg.DefaultTenantMaxInFlight, 10)
	}
	return o
}

// flagSet returns the flags of cmd, each defaulting to o's value and
// parsing into o; known is false for a command that does not exist. The
// flag set prints its errors and help on stderr.
func (o *runOptions) flagSet(cmd string, getenv func(string) string, stderr io.Writer) (fs *flag.FlagSet, known bool) {
	cfg := &o.cfg
	fs = flag.NewFlagSet("controlplane "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.DatabaseURL, "database-url", cfg.DatabaseURL, "PostgreSQL DSN (env DATABASE_URL); with --dev, empty finds or starts a local server")
	fs.BoolVar(&cfg.Dev, "dev", false, "dev mode: keep keys under --var-dir and find a database when none is set")
	fs.StringVar(&cfg.VarDir, "var-dir", cfg.VarDir, "directory of dev-mode state")
	o.log.Register(fs, getenv, "with --dev")
	switch cmd {
	case "serve":
		fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "admin API address (env WEIR_CP_LISTEN)")
		fs.StringVar(&cfg.NatsURL, "nats-url", cfg.NatsURL, "NATS server URL (env NATS_URL); with --dev, empty starts an embedded server with its state under --var-dir")
		fs.StringVar(&cfg.NatsListen, "nats-listen", cfg.NatsListen, "address of the embedded NATS server (--dev without --nats-url; env WEIR_NATS_LISTEN); when neither is given and the default's port is in use, a free port, named in the log")
		fs.StringVar(&cfg.NatsAuth.Creds, "nats-creds", getenv("NATS_CREDS"), "NATS credentials file (.creds: JWT and nkey seed) (env NATS_CREDS)")
		fs.StringVar(&cfg.NatsAuth.User, "nats-user", getenv("NATS_USER"), "NATS user, with --nats-password (env NATS_USER)")
		fs.StringVar(&cfg.NatsAuth.Password, "nats-password", getenv("NATS_PASSWORD"), "NATS password (env NATS_PASSWORD)")
		fs.StringVar(&cfg.NatsAuth.CA, "nats-ca", getenv("NATS_CA"), "CA certificate (PEM) that verifies the NATS server (env NATS_CA)")
		fs.StringVar(&cfg.NatsAuth.Cert, "nats-cert", getenv("NATS_CERT"), "client certificate (PEM) for NATS, with --nats-key (env NATS_CERT)")
		fs.StringVar(&cfg.NatsAuth.Key, "nats-key", getenv("NATS_KEY"), "client certificate key (PEM) for NATS (env NATS_KEY)")
		fs.BoolVar(&cfg.NatsAuth.Insecure, "nats-insecure", getenv("NATS_INSECURE") == "true", "allow an unauthenticated or plain-text NATS connection outside --dev (env NATS_INSECURE=true)")
		fs.StringVar(&o.natsEdges, "nats-edges", o.natsEdges, "edge ids the embedded NATS server (--dev) has users for, comma-separated (env WEIR_NATS_EDGES)")
		fs.StringVar(&o.natsReplicas, "nats-replicas", o.natsReplicas, "how many servers of the JetStream cluster keep each bucket and the usage stream, 1-5: 3 in a three-node cluster (env WEIR_NATS_REPLICAS)")
		fs.StringVar(&cfg.TLS.Cert, "tls-cert", cfg.TLS.Cert, "serve the admin port over TLS with this PEM certificate (chain), re-read when it changes (env WEIR_CP_TLS_CERT)")
		fs.StringVar(&cfg.TLS.Key, "tls-key", cfg.TLS.Key, "the PEM private key of --tls-cert (env WEIR_CP_TLS_KEY)")
		fs.StringVar(&o.loopbackPorts, "tenant-loopback-ports", o.loopbackPorts, "comma-separated ports of an edge's own machine (loopback) that tenants' records may reach, e.g. 8000,11434 for local vLLM and Ollama (env WEIR_TENANT_LOOPBACK_PORTS); default none, every port with --dev")
		fs.StringVar(&o.defaultInFlight, "default-tenant-max-in-flight", o.defaultInFlight, "the calls a tenant may have in flight across the cluster when it sets no max_in_flight of its own, 1-1000000; tenant admins may set their tenant's up to it, only cluster admins above (R-CAP-2) (env WEIR_DEFAULT_TENANT_MAX_IN_FLIGHT)")
		fs.BoolVar(&cfg.SecureCookies, "console-secure-cookies", cfg.SecureCookies, "mark the console's cookies Secure even over plain HTTP, for a TLS-terminating proxy in front (env WEIR_CONSOLE_SECURE_COOKIES=true)")
	case "bootstrap-admin":
		fs.StringVar(&o.name, "name", "admin", "name of the first cluster admin")
		fs.BoolVar(&o.force, "force", false, "create a token even though a cluster admin exists")
	case "migrate", "config-public-key":
	case "nats-config":
		fs.StringVar(&o.natsEdges, "nats-edges", o.natsEdges, "edge ids to make NATS users for, comma-separated (env WEIR_NATS_EDGES)")
	default:
		return nil, false
	}
	return fs, true
}

// finish completes o.cfg from the parsed flags fs of cmd and checks it. It
// returns exitOK, or exitBadArgs after saying what is wrong on stderr.
func (o *runOptions) finish(cmd string, fs *flag.FlagSet, getenv func(string) string, stderr io.Writer) int {
	cfg := &o.cfg
	// The embedded NATS server's default address gives way to a free port
	// when another server holds it; an address the operator chose does not.
	cfg.NatsListenFallback = getenv("WEIR_NATS_LISTEN") == ""
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "nats-listen" {
			cfg.NatsListenFallback = false
		}
	})
	cfg.NatsEdges = nil
	for _, e := range strings.Split(o.natsEdges, ",") {
		if e = strings.TrimSpace(e); e != "" {
			cfg.NatsEdges = append(cfg.NatsEdges, e)
		}
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "controlplane %s: unexpected arguments %q\n", cmd, fs.Args())
		return exitBadArgs
	}
	o.log.Resolve(cfg.Dev)
	if err := o.log.Validate(); err != nil {
		fmt.Fprintf(stderr, "controlplane %s: %v\n", cmd, err)
		return exitBadArgs
	}
	ports, err := server.ParsePorts(o.loopbackPorts)
	if err != nil {
		fmt.Fprintf(stderr, "controlplane %s: --tenant-loopback-ports: %v\n", cmd, err)
		return exitBadArgs
	}
	cfg.TenantLoopbackPorts = ports
	if cmd == "serve" { // only serve sends it to edges and the admin API
		n, err := strconv.ParseInt(strings.TrimSpace(o.defaultInFlight), 10, 64)
		if err != nil || n < 1 || n > 1_000_000 {
			fmt.Fprintf(stderr, "controlplane %s: --default-tenant-max-in-flight: %q is not a number in 1-1000000\n", cmd, o.defaultInFlight)
			return exitBadArgs
		}
		cfg.DefaultTenantMaxInFlight = n
		r, err := strconv.Atoi(strings.TrimSpace(o.natsReplicas))
		if err != nil || r < 1 || r > 5 {
			fmt.Fprintf(stderr, "controlplane %s: --nats-replicas: %q is not a number in 1-5\n", cmd, o.natsReplicas)
			return exitBadArgs
		}
		cfg.NatsReplicas = r
	}
	if cmd != "serve" {
		cfg.NatsURL = "" // only serve connects to NATS; its checks are not the others'
	}
	if err := cfg.Validate(); err != nil && cmd != "config-public-key" && cmd != "nats-config" { // they need no database
		fmt.Fprintf(stderr, "controlplane %s: %v\n", cmd, err)
		return exitBadArgs
	}
	return exitOK
}

// runCommand runs cmd, a known command, with the finished options o; what
// it prints on success goes to stdout, and its error is the caller's to
// report.
func runCommand(ctx context.Context, cmd string, o *runOptions, getenv func(string) string, log *slog.Logger, stdout io.Writer) error {
	cfg := o.cfg
	var err error
	switch cmd {
	case "serve":
		err = server.Run(ctx, cfg, getenv, log)
	case "migrate":
		err = migrate(ctx, cfg, getenv, log)
		if err == nil {
			fmt.Fprintln(stdout, "migrations applied")
		}
	case "nats-config":
		var conf []byte
		conf, err = server.NatsConfig(cfg)
		if err == nil {
			fmt.Fprintf(stdout, "%s\n", conf)
		}
	case "config-public-key":
		var pub string
		pub, err = server.ConfigPublicKey(cfg, getenv)
		if err == nil {
			fmt.Fprintln(stdout, pub)
		}
	case "bootstrap-admin":
		var token string
		token, err = bootstrap(ctx, cfg, getenv, log, o.name, o.force)
		if err == nil {
			fmt.Fprintln(stdout, token)
		}
	}
	return err
}

// migrate applies the schema migrations (store.Open), then re-seals secrets
// of an older seal version (server.ResealSecrets), which needs the master
// key only when there are any.
func migrate(ctx context.Context, cfg server.Config, getenv func(string) string, log *slog.Logger) error {
	dsn, err := server.OpenDatabase(ctx, cfg, getenv, log)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	return server.ResealSecrets(ctx, cfg, getenv, st, log)
}

// bootstrap prints nothing itself: the token goes to stdout alone, once.
func bootstrap(ctx context.Context, cfg server.Config, getenv func(string) string, log *slog.Logger, name string, force bool) (string, error) {
	dsn, err := server.OpenDatabase(ctx, cfg, getenv, log)
	if err != nil {
		return "", err
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer st.Close()
	return auth.Bootstrap(ctx, st, name, force, rand.Reader)
}
