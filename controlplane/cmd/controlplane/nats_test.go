package main

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"weir.dev/db/pgtest"
	"weir.dev/listen/logflags/logtest"
)

// holdDefaultNATSPort makes sure 127.0.0.1:4222 is in use while the test
// runs: by a listener of its own, or by whatever already holds it.
func holdDefaultNATSPort(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:4222")
	switch {
	case err == nil:
		t.Cleanup(func() { _ = ln.Close() })
	case errors.Is(err, syscall.EADDRINUSE):
	default:
		t.Skipf("cannot hold 127.0.0.1:4222: %v", err)
	}
}

// TestDevNATSDefaultPortTaken checks that `serve --dev` without
// --nats-listen or WEIR_NATS_LISTEN starts its embedded NATS server on a
// free port when 4222 is in use and logs which, while an address the
// operator chose is refused when in use.
func TestDevNATSDefaultPortTaken(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	holdDefaultNATSPort(t)
	if code := run(context.Background(), []string{"migrate"}, env(map[string]string{"DATABASE_URL": dsn}), &strings.Builder{}, &logtest.Buffer{}); code != exitOK {
		t.Fatalf("migrate = %d", code)
	}

	t.Run("default address", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var stdout, stderr logtest.Buffer
		done := make(chan int, 1)
		varDir := t.TempDir()
		go func() {
			done <- run(ctx, []string{"serve", "--dev", "--var-dir", varDir},
				env(map[string]string{"DATABASE_URL": dsn, "WEIR_CP_LISTEN": "127.0.0.1:0"}), &stdout, &stderr)
		}()
		started := regexp.MustCompile(`embedded NATS server started"? url=(nats://127\.0\.0\.1:(\d+))`)
		var m []string
		for deadline := time.Now().Add(30 * time.Second); m == nil; {
			select {
			case code := <-done:
				t.Fatalf("serve ended with %d before the embedded NATS server started:\n%s", code, stderr.String())
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("no embedded NATS server after 30s:\n%s", stderr.String())
			}
			m = started.FindStringSubmatch(stderr.String())
		}
		if m[2] == "4222" {
			t.Fatalf("the embedded server took 4222, which is in use:\n%s", stderr.String())
		}
		if !strings.Contains(stderr.String(), "127.0.0.1:4222 is in use, so the embedded NATS server listens on "+m[1]) {
			t.Errorf("the log does not say that 4222 is in use and which URL is used instead:\n%s", stderr.String())
		}
		pw, err := os.ReadFile(filepath.Join(varDir, "nats-auth", "controlplane.password"))
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(m[1], nats.UserInfo("weir-controlplane", strings.TrimSpace(string(pw))))
		if err != nil {
			t.Fatalf("connect to %s: %v", m[1], err)
		}
		nc.Close()
		cancel()
		select {
		case code := <-done:
			if code != exitOK {
				t.Errorf("serve = %d after cancel:\n%s", code, stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatal("serve did not stop")
		}
	})

	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"--nats-listen", []string{"--nats-listen", "127.0.0.1:4222"}, nil},
		{"WEIR_NATS_LISTEN", nil, map[string]string{"WEIR_NATS_LISTEN": "127.0.0.1:4222"}},
	} {
		t.Run("chosen by "+tc.name, func(t *testing.T) {
			e := map[string]string{"DATABASE_URL": dsn, "WEIR_CP_LISTEN": "127.0.0.1:0"}
			for k, v := range tc.env {
				e[k] = v
			}
			var stdout, stderr logtest.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			code := run(ctx, append([]string{"serve", "--dev", "--var-dir", t.TempDir()}, tc.args...), env(e), &stdout, &stderr)
			if code != exitFail || !strings.Contains(stderr.String(), "address already in use") {
				t.Errorf("serve = %d, stderr:\n%s\nwant %d and the port in use named", code, stderr.String(), exitFail)
			}
		})
	}
}
