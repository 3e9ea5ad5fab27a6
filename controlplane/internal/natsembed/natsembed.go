// Package natsembed runs a JetStream-enabled NATS server inside the control
// plane's process, for dev mode (`controlplane --dev` without NATS_URL) and
// for tests. Production deployments run NATS as its own cluster and give the
// control plane its URL instead (DESIGN.md §1, §6).
//
// The server listens on loopback only, keeps JetStream state (the WEIR_*
// buckets and the WEIR_USAGE stream) under Options.StoreDir, and takes the
// users of Options.Users (package natsauth: the same roles and permissions
// as a production NATS); without users it has no authentication, which
// only tests use.
package natsembed

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// DefaultReadyTimeout bounds how long Start waits for the server to accept
// clients when Options.ReadyTimeout is 0.
const DefaultReadyTimeout = 10 * time.Second

// Options configure an embedded server.
type Options struct {
	// Host is the address to listen on; "" means 127.0.0.1. It must be a
	// loopback address.
	Host string
	// Port is the client port; 0 picks a free port at random.
	Port int
	// FreePortIfTaken lets Start listen on a free port, picked at random,
	// when Port is in use by another process, instead of failing. Dev mode
	// sets it for its default address only (one the operator did not
	// choose). Start then logs a warning naming both ports and the URL
	// clients must use (Options.Log), and ClientURL and Port give it.
	FreePortIfTaken bool
	// StoreDir is the JetStream store directory, created when missing.
	// Required: JetStream state (config snapshots, queued usage) survives a
	// restart only when the same directory is used again.
	StoreDir string
	// ServerName names the server in NATS' own diagnostics; "" means
	// "weir-embedded".
	ServerName string
	// ReadyTimeout bounds the wait for the server to accept clients; 0
	// means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Log receives one line when the server starts; nil discards it. The
	// server's own logging is off.
	Log *slog.Logger
	// Users may connect, each with its permissions; none means anyone may
	// (tests only).
	Users []*server.User
}

// Validate reports every problem of o at once.
func (o Options) Validate() error {
	var errs []error
	if o.StoreDir == "" {
		errs = append(errs, errors.New("natsembed: a JetStream store directory is required"))
	}
	host := o.Host
	if host == "" {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		errs = append(errs, fmt.Errorf("natsembed: host %q is not a loopback address", o.Host))
	}
	if o.Port < 0 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("natsembed: port %d is out of range", o.Port))
	}
	if o.ReadyTimeout < 0 {
		errs = append(errs, errors.New("natsembed: the ready timeout must not be negative"))
	}
	return errors.Join(errs...)
}

// Server is a running embedded NATS server. Close it when done.
type Server struct {
	ns  *server.Server
	url string
}

// Start starts a server per opts and returns once it accepts clients.
func Start(opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.ServerName == "" {
		opts.ServerName = "weir-embedded"
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	if err := os.MkdirAll(opts.StoreDir, 0o700); err != nil {
		return nil, fmt.Errorf("natsembed: store directory: %w", err)
	}
	port, taken := opts.Port, "" // taken: the address in use when FreePortIfTaken applied
	if port == 0 {
		port = server.RANDOM_PORT
	} else {
		// The server only logs a port it cannot take (and logging is off):
		// find out now rather than after ReadyTimeout.
		addr := net.JoinHostPort(opts.Host, strconv.Itoa(port))
		ln, err := net.Listen("tcp", addr)
		switch {
		case err == nil:
			_ = ln.Close()
		case opts.FreePortIfTaken && errors.Is(err, syscall.EADDRINUSE):
			port, taken = server.RANDOM_PORT, addr
		default:
			return nil, fmt.Errorf("natsembed: %w", err)
		}
	}
	ns, err := server.NewServer(&server.Options{
		ServerName: opts.ServerName,
		Host:       opts.Host,
		Port:       port,
		JetStream:  true,
		StoreDir:   opts.StoreDir,
		NoSigs:     true,
		NoLog:      true,
		Users:      opts.Users,
		// No HTTP monitoring, leaf, cluster or gateway listeners.
		HTTPPort: 0,
	})
	if err != nil {
		return nil, fmt.Errorf("natsembed: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(opts.ReadyTimeout) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("natsembed: the server did not accept clients within %s (is %s in use?)",
			opts.ReadyTimeout, net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port)))
	}
	s := &Server{ns: ns, url: ns.ClientURL()}
	if opts.Log != nil {
		if taken != "" {
			opts.Log.Warn(fmt.Sprintf("%s is in use, so the embedded NATS server listens on %s instead: give edges --nats-url %s", taken, s.url, s.url),
				"in_use", taken, "url", s.url)
		}
		opts.Log.Info("embedded NATS server started", "url", s.url, "store_dir", opts.StoreDir)
	}
	return s, nil
}

// ClientURL is the URL clients connect to, e.g. "nats://127.0.0.1:4222".
func (s *Server) ClientURL() string { return s.url }

// Port is the client port the server listens on (the one picked when
// Options.Port was 0), so that a restarted server can take the same one.
func (s *Server) Port() int {
	if a, ok := s.ns.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

// Close shuts the server down and waits until it has stopped, so that its
// store directory can be reused at once. It is safe to call more than once.
func (s *Server) Close() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}
