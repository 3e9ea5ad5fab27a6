package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"weir.dev/controlplane/internal/server"
	"weir.dev/db/pgtest"
	"weir.dev/routing/natsnames"
)

// freeAddrs returns n distinct loopback addresses with ports free at the
// moment.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		out = append(out, ln.Addr().String())
	}
	return out
}

// TestRunDevEmbedsNATS runs the control plane in dev mode without NATS_URL
// and checks that it starts an embedded NATS server with its state under
// the var directory, publishes the cluster snapshot there, and stops
// cleanly.
func TestRunDevEmbedsNATS(t *testing.T) {
	t.Parallel()
	cfg := server.DefaultConfig()
	cfg.Dev, cfg.DatabaseURL, cfg.VarDir = true, pgtest.NewDatabase(t), t.TempDir()
	addrs := freeAddrs(t, 2)
	cfg.Listen, cfg.NatsListen = addrs[0], addrs[1]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, cfg, func(string) string { return "" }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()

	var nc *nats.Conn
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		// The dev server has the production users (natsauth), passwords
		// under the var directory.
		pw, _ := os.ReadFile(filepath.Join(cfg.VarDir, "nats-auth", "controlplane.password"))
		if nc, err = nats.Connect("nats://"+cfg.NatsListen, nats.UserInfo("weir-controlplane", strings.TrimSpace(string(pw)))); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Run returned early: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no embedded NATS on %s: %v", cfg.NatsListen, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer nc.Close()
	if anon, err := nats.Connect("nats://" + cfg.NatsListen); err == nil {
		anon.Close()
		t.Error("the embedded NATS server let a client in without credentials")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for {
		kv, err := js.KeyValue(ctx, natsnames.ConfigBucket)
		if err == nil {
			if _, err = kv.Get(ctx, natsnames.ClusterKey); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no cluster snapshot in %s: %v", natsnames.ConfigBucket, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(cfg.VarDir, "nats")); err != nil {
		t.Errorf("embedded NATS state: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not stop")
	}
}
