// Package natstest runs an embedded NATS server for the edge's tests: on a
// loopback port, with JetStream (its store in a temporary directory unless
// given), no logging, and stopped when the test ends. A test may stop it
// and start it again on the same port and store, to play a NATS outage.
//
// It is the edge's counterpart of the control plane's natsembed.NewTest,
// which the edge may not import.
package natstest

import (
	"crypto/tls"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Options shape the server; the zero value is a JetStream server without
// authentication on a random port.
type Options struct {
	// Port is the client port; 0 picks a free one (kept across Start).
	Port int
	// StoreDir holds JetStream's state; "" means a new temporary directory.
	StoreDir string
	// NoJetStream runs a plain NATS server.
	NoJetStream bool
	// MaxPayload caps a message's size; 0 means the server's default.
	MaxPayload int32
	// Users may connect; none means anyone may.
	Users []*server.User
	// TLS, when set, makes clients connect over TLS.
	TLS *tls.Config
}

// Server is a running (or stopped) embedded server.
type Server struct {
	t    testing.TB
	opts Options
	s    *server.Server
}

// Start starts a server and stops it when the test ends. It fails the test
// when the server does not start.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.StoreDir == "" && !opts.NoJetStream {
		opts.StoreDir = t.TempDir()
	}
	if opts.Port == 0 {
		opts.Port = -1
	}
	n := &Server{t: t, opts: opts}
	n.Start()
	t.Cleanup(n.Stop)
	return n
}

// Start starts the server again after Stop, on the same port and store.
func (n *Server) Start() {
	n.t.Helper()
	o := n.opts
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: o.Port, JetStream: !o.NoJetStream, StoreDir: o.StoreDir,
		NoLog: true, NoSigs: true, MaxPayload: o.MaxPayload, Users: o.Users, TLS: o.TLS != nil, TLSConfig: o.TLS})
	if err != nil {
		n.t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		n.t.Fatal("nats server not ready")
	}
	n.s = s
	n.opts.Port = s.Addr().(*net.TCPAddr).Port
}

// Stop shuts the server down and waits until it has; stopping a stopped
// server does nothing.
func (n *Server) Stop() {
	if n.s != nil {
		n.s.Shutdown()
		n.s.WaitForShutdown()
		n.s = nil
	}
}

// URL is the client URL, nats://127.0.0.1:PORT, or tls://… with Options.TLS
// (valid while stopped too).
func (n *Server) URL() string {
	scheme := "nats://"
	if n.opts.TLS != nil {
		scheme = "tls://"
	}
	return scheme + "127.0.0.1:" + strconv.Itoa(n.opts.Port)
}
