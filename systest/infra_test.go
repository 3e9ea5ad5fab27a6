package systest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// natsServer is a JetStream-enabled NATS server run inside the test
// process, stoppable and restartable on the same port with the same store
// directory — the NATS the control plane and the edges are given by URL,
// as in production.
//
// It runs with the users and permissions the control plane makes for a
// NATS server run apart (`controlplane nats-config`): the control plane's
// user and one user per edge, as in production.
type natsServer struct {
	storeDir string
	port     int // 0 until the first start picks one
	users    []*server.User
	// cpPassword and edgePasswords are the passwords of the users.
	cpPassword    string
	edgePasswords map[string]string

	mu sync.Mutex
	ns *server.Server
}

func (n *natsServer) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ns != nil {
		return errors.New("NATS is already running")
	}
	port := n.port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	ns, err := server.NewServer(&server.Options{
		ServerName: "weir-systest",
		Host:       "127.0.0.1",
		Port:       port,
		JetStream:  true,
		StoreDir:   n.storeDir,
		NoSigs:     true,
		NoLog:      true,
		Users:      n.users,
		// A stopped server's port is taken again at once; a client that
		// connects during the outage is refused, as with a real server.
	})
	if err != nil {
		return fmt.Errorf("nats server: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return fmt.Errorf("nats server did not accept clients on port %d within 30s", n.port)
	}
	if !ns.JetStreamEnabled() {
		ns.Shutdown()
		ns.WaitForShutdown()
		return errors.New("nats server started without JetStream")
	}
	n.ns = ns
	n.port = ns.Addr().(*net.TCPAddr).Port
	return nil
}

// stop shuts the server down and waits until it stopped; a no-op when it
// is not running.
func (n *natsServer) stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ns == nil {
		return
	}
	n.ns.Shutdown()
	n.ns.WaitForShutdown()
	n.ns = nil
}

func (n *natsServer) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }

// authorize gives n the users of `controlplane nats-config` for edgeIDs,
// with their passwords kept under dir.
func (n *natsServer) authorize(ctx context.Context, dir string, edgeIDs []string) error {
	out, err := exec.CommandContext(ctx, bins.controlplane, "nats-config", "--var-dir", dir, "--nats-edges", strings.Join(edgeIDs, ",")).Output()
	if err != nil {
		return fmt.Errorf("controlplane nats-config: %w", err)
	}
	conf := filepath.Join(dir, "nats-auth.conf")
	if err := os.WriteFile(conf, out, 0o600); err != nil {
		return err
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		return fmt.Errorf("nats-server refuses the generated configuration: %w", err)
	}
	n.users = opts.Users
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, "nats-auth", name))
		return strings.TrimSpace(string(b)), err
	}
	if n.cpPassword, err = read("controlplane.password"); err != nil {
		return err
	}
	n.edgePasswords = map[string]string{}
	for _, id := range edgeIDs {
		if n.edgePasswords[id], err = read("edge-" + id + ".password"); err != nil {
			return err
		}
	}
	return nil
}

// controlPlaneAuth is the control plane's user, as a nats.go option.
func (n *natsServer) controlPlaneAuth() nats.Option {
	return nats.UserInfo("weir-controlplane", n.cpPassword)
}

// tcpProxy gives the private PostgreSQL cluster a port that stays the same
// across restarts: pgserver starts the cluster on a new free port each time
// (its DSN is only known after the start), while the control plane's
// DATABASE_URL is fixed when it starts. Every connection is dialled afresh
// to the current backend; while the backend is down a connection is closed
// at once, and stopping the backend ends the connections through it, so the
// control plane sees PostgreSQL go away and come back as it would without
// the proxy.
type tcpProxy struct {
	ln net.Listener

	mu      sync.Mutex
	backend string // host:port; "" while PostgreSQL is down
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

func newTCPProxy() (*tcpProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &tcpProxy{ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

// setBackend points new connections at backend ("" refuses them) and
// closes every connection to the previous one.
func (p *tcpProxy) setBackend(backend string) {
	p.mu.Lock()
	p.backend = backend
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
}

func (p *tcpProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

func (p *tcpProxy) serve(c net.Conn) {
	p.mu.Lock()
	backend := p.backend
	p.mu.Unlock()
	if backend == "" {
		_ = c.Close()
		return
	}
	b, err := net.DialTimeout("tcp", backend, 5*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.backend != backend {
		p.mu.Unlock()
		_ = c.Close()
		_ = b.Close()
		return
	}
	p.conns[c], p.conns[b] = struct{}{}, struct{}{}
	p.mu.Unlock()
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			_ = c.Close()
			_ = b.Close()
			p.mu.Lock()
			delete(p.conns, c)
			delete(p.conns, b)
			p.mu.Unlock()
		})
	}
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = io.Copy(b, c); closeBoth() })
	wg.Go(func() { _, _ = io.Copy(c, b); closeBoth() })
	wg.Wait()
}

func (p *tcpProxy) close() {
	_ = p.ln.Close()
	p.setBackend("")
	p.wg.Wait()
}

// hostPort returns the host:port of a postgres:// DSN.
func hostPort(dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", err
	}
	if u.Port() == "" {
		return "", fmt.Errorf("DSN without a port")
	}
	return u.Host, nil
}

// waitFor polls cond every interval until it returns nil or timeout passes,
// and returns cond's last error.
func waitFor(ctx context.Context, timeout, interval time.Duration, cond func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %s: %w", timeout, err)
		case <-time.After(interval):
		}
	}
}
