// Command fakeprovider serves a fake LLM provider (OpenAI, Azure OpenAI,
// Anthropic, Bedrock, Gemini API and Vertex AI wire formats) for local runs
// and benchmarks. It is the binary form of
// weir.dev/edge/internal/fakeprovider.
//
// Usage:
//
//	fakeprovider [-addr 127.0.0.1:9090] [-flavor all] [-rpm N] [-itpm N] [-otpm N]
//	             [-latency D] [-token-delay D] [-tokens N] [-cached N] [-fault F]
//	             [-gcp-key-file PATH] [-gcp-token-lifetime D]
//
// With -gcp-key-file it writes, once listening, the JSON key of the Vertex
// service account (mode 0600) whose token_uri is its own /token URL, so
// that a client (or `make run`) can register it as a google-service-account
// secret and get Vertex tokens from the fake.
//
// The key it accepts comes from FAKEPROVIDER_API_KEY (any non-empty key when
// unset; Gemini takes it as x-goog-api-key or ?key=) and the secret Bedrock
// signatures are checked with from
// FAKEPROVIDER_AWS_SECRET_ACCESS_KEY (any signature when unset), so that no
// secret appears on a command line. SIGINT or SIGTERM stops it, letting
// requests in flight finish for up to five seconds.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"weir.dev/edge/internal/fakeprovider"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// shutdownGrace bounds how long requests in flight may run after a signal.
const shutdownGrace = 5 * time.Second

// config is the command's configuration.
type config struct {
	Addr       string
	Flavor     string
	RPM        int
	InputTPM   int
	OutputTPM  int
	Latency    time.Duration
	TokenDelay time.Duration
	Tokens     int
	Cached     int
	Fault      string
	Control    string
	APIKey     string
	AWSSecret  string
	GCPKeyFile string
	TokenLife  time.Duration
}

// Validate reports every problem of c.
func (c config) Validate() error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("-addr is empty"))
	}
	flavor, err := fakeprovider.ParseFlavor(c.Flavor)
	if err != nil {
		errs = append(errs, err)
	} else if c.GCPKeyFile != "" && flavor != fakeprovider.FlavorVertex && flavor != fakeprovider.FlavorAll {
		errs = append(errs, fmt.Errorf("-gcp-key-file needs -flavor vertex or all, got %s", flavor))
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"-rpm", c.RPM}, {"-itpm", c.InputTPM}, {"-otpm", c.OutputTPM}, {"-tokens", c.Tokens}, {"-cached", c.Cached}} {
		if n.v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %d", n.name, n.v))
		}
	}
	if c.TokenLife < 0 {
		errs = append(errs, errors.New("-gcp-token-lifetime must not be negative"))
	}
	if c.Latency < 0 || c.TokenDelay < 0 {
		errs = append(errs, errors.New("-latency and -token-delay must not be negative"))
	}
	if _, err := fakeprovider.ParseFault(c.Fault); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// run parses args, serves until ctx is done and returns the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fakeprovider", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := config{APIKey: getenv("FAKEPROVIDER_API_KEY"), AWSSecret: getenv("FAKEPROVIDER_AWS_SECRET_ACCESS_KEY")}
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:9090", "address to listen on (port 0 picks a free one)")
	fs.StringVar(&cfg.Flavor, "flavor", "all", "wire format served: openai, azure, anthropic, bedrock, gemini, vertex or all")
	fs.StringVar(&cfg.GCPKeyFile, "gcp-key-file", "", "write the Vertex service account's JSON key (token_uri: this server's /token) to this file at startup")
	fs.DurationVar(&cfg.TokenLife, "gcp-token-lifetime", fakeprovider.DefaultTokenLifetime, "lifetime of the Vertex access tokens the fake issues")
	fs.IntVar(&cfg.RPM, "rpm", 0, "requests per minute (0: unlimited)")
	fs.IntVar(&cfg.InputTPM, "itpm", 0, "input tokens per minute (0: unlimited)")
	fs.IntVar(&cfg.OutputTPM, "otpm", 0, "output tokens per minute (0: unlimited)")
	fs.DurationVar(&cfg.Latency, "latency", 0, "time to first byte of each answer")
	fs.DurationVar(&cfg.TokenDelay, "token-delay", 0, "time per output token")
	fs.IntVar(&cfg.Tokens, "tokens", fakeprovider.DefaultTokens, "output tokens per answer")
	fs.IntVar(&cfg.Cached, "cached", 0, "prompt tokens reported as read from the cache")
	fs.StringVar(&cfg.Control, "control", "", "address of a control endpoint (loopback): POST /fault with a fault spec such as 429 or none sets the fault of every request")
	fs.StringVar(&cfg.Fault, "fault", "none", "fault on every request: 429, 429-ms, 429-bare, quota, quota-day, not-ready, 500, 503, 529, 502, 504, 401, reset, slow:2s, cut:3, hang …")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fakeprovider: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "fakeprovider: %v\n", err)
		return 2
	}
	flavor, _ := fakeprovider.ParseFlavor(cfg.Flavor)
	fault, _ := fakeprovider.ParseFault(cfg.Fault)

	srv := fakeprovider.New(fakeprovider.Options{
		Flavor:             flavor,
		Limits:             fakeprovider.Limits{RPM: cfg.RPM, InputTPM: cfg.InputTPM, OutputTPM: cfg.OutputTPM},
		Latency:            cfg.Latency,
		TokenDelay:         cfg.TokenDelay,
		Tokens:             cfg.Tokens,
		CachedTokens:       cfg.Cached,
		APIKey:             cfg.APIKey,
		AWSSecretAccessKey: cfg.AWSSecret,
		TokenLifetime:      cfg.TokenLife,
	})
	srv.SetSticky(fault)
	url, err := srv.Listen(cfg.Addr)
	if err != nil {
		fmt.Fprintf(stderr, "fakeprovider: %v\n", err)
		return 1
	}
	if cfg.GCPKeyFile != "" {
		if err := writeKeyFile(cfg.GCPKeyFile, srv.ServiceAccountKey(url+"/token")); err != nil {
			_ = srv.Close()
			fmt.Fprintf(stderr, "fakeprovider: -gcp-key-file: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "fakeprovider: Vertex service account key in %s\n", cfg.GCPKeyFile)
	}
	fmt.Fprintf(stdout, "fakeprovider: serving %s on %s (fault %s)\n", flavor, url, fault)
	if cfg.Control != "" {
		ctl, err := serveControl(cfg.Control, srv)
		if err != nil {
			fmt.Fprintf(stderr, "fakeprovider: control: %v\n", err)
			return 1
		}
		defer ctl.Close()
		fmt.Fprintf(stdout, "fakeprovider: control on http://%s/fault\n", cfg.Control)
	}

	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintf(stderr, "fakeprovider: shutdown: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "fakeprovider: stopped after %d requests\n", srv.Total())
	return 0
}

// writeKeyFile writes a service account key readable by its owner only.
func writeKeyFile(path string, key []byte) error {
	if key == nil {
		return errors.New("no service account key could be made")
	}
	return os.WriteFile(path, key, 0o600)
}

// serveControl serves POST /fault on addr: the body is a fault spec
// (fakeprovider.ParseFault) that every following request plays, "none" to
// clear it. It lets a person force a member to 429 in a demo.
func serveControl(addr string, srv *fakeprovider.Server) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /fault", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 256))
		f, err := fakeprovider.ParseFault(strings.TrimSpace(string(b)))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		srv.SetSticky(f)
		fmt.Fprintf(w, "fault %s\n", f)
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	return hs, nil
}
