package natsembed_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"weir.dev/controlplane/internal/natsembed"
)

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts natsembed.Options
		ok   bool
	}{
		{"defaults with a store", natsembed.Options{StoreDir: "x"}, true},
		{"localhost", natsembed.Options{StoreDir: "x", Host: "localhost", Port: 4222}, true},
		{"ipv6 loopback", natsembed.Options{StoreDir: "x", Host: "::1"}, true},
		{"no store", natsembed.Options{}, false},
		{"public host", natsembed.Options{StoreDir: "x", Host: "0.0.0.0"}, false},
		{"bad port", natsembed.Options{StoreDir: "x", Port: 70000}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := tc.opts.Validate(); (err == nil) != tc.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// TestJetStreamSurvivesRestart checks that the embedded server serves
// JetStream KV and keeps it across a restart on the same store directory
// and port.
func TestJetStreamSurvivesRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	s, err := natsembed.Start(natsembed.Options{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	port := s.Port()
	if port == 0 {
		t.Fatal("no port")
	}
	put := func(url string) {
		nc, err := nats.Connect(url)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "T"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	put(s.ClientURL())
	s.Close()
	s.Close() // idempotent

	s2, err := natsembed.Start(natsembed.Options{StoreDir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.Port() != port {
		t.Errorf("restarted on port %d, want %d", s2.Port(), port)
	}
	nc, err := nats.Connect(s2.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, "k")
	if err != nil || string(e.Value()) != "v" {
		t.Fatalf("after restart: %v, %v", e, err)
	}
}

func TestNewTest(t *testing.T) {
	t.Parallel()
	s := natsembed.NewTest(t)
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if !nc.IsConnected() {
		t.Error("not connected")
	}
}

func TestPortInUseFailsFast(t *testing.T) {
	t.Parallel()
	s := natsembed.NewTest(t)
	start := time.Now()
	_, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir(), Port: s.Port()})
	if err == nil {
		t.Fatal("a second server took a port in use")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s to fail", d)
	}
}

// TestFreePortIfTaken checks that with FreePortIfTaken a port in use is
// replaced by a free one, which the log names together with the port in
// use, and that without it the port in use is an error.
func TestFreePortIfTaken(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port

	if _, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir(), Port: taken}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("Start on a port in use = %v, want an error saying it is in use", err)
	}

	var logs bytes.Buffer
	s, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir(), Port: taken, FreePortIfTaken: true,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Port() == taken || s.Port() == 0 {
		t.Fatalf("Port() = %d with %d in use", s.Port(), taken)
	}
	if want := fmt.Sprintf("nats://127.0.0.1:%d", s.Port()); s.ClientURL() != want {
		t.Errorf("ClientURL() = %q, want %q", s.ClientURL(), want)
	}
	if out := logs.String(); !strings.Contains(out, fmt.Sprintf("127.0.0.1:%d is in use", taken)) || !strings.Contains(out, "level=WARN") ||
		!strings.Contains(out, "--nats-url "+s.ClientURL()) {
		t.Errorf("log does not say which port is in use and which URL to use instead:\n%s", out)
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()

	// A free port is taken as asked, with no warning.
	logs.Reset()
	free := s.Port()
	s.Close()
	s2, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir(), Port: free, FreePortIfTaken: true,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.Port() != free || strings.Contains(logs.String(), "in use") {
		t.Errorf("free port %d: got %d, log %q", free, s2.Port(), logs.String())
	}
}
