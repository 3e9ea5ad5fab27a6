package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"weir.dev/edge/internal/fakeprovider"
	"weir.dev/routing/rules"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func writeConfig(t *testing.T, upstream string) string {
	t.Helper()
	sum := sha256.Sum256([]byte("k-test"))
	cfg := fmt.Sprintf(`{"tenants":[{"version":"1","tenant":{"id":"t","name":"t"},
 "apiKeys":[{"id":"k","name":"k","sha256":"%s"}],
 "records":[{"id":"r","name":"pool","tenantId":"t","wireFormat":"WIRE_FORMAT_OPENAI",
  "models":[{"name":"gpt-x","kind":"MODEL_KIND_CHAT"}],"auth":{"kind":"AUTH_KIND_API_KEY","header":"authorization"},"keySecret":"s",
  "members":[{"name":"a","baseUrl":"%s/v1"}]}]}],
 "secrets":[{"name":"s","tenantId":"t","hosts":["127.0.0.1"],"env":"TEST_KEY"}]}`, base64.StdEncoding.EncodeToString(sum[:]), upstream)
	p := filepath.Join(t.TempDir(), "weir.json")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGracefulShutdown(t *testing.T) {
	// Item 9 of the edge issue: on shutdown the edge stops accepting, lets
	// in-flight streams finish within the grace period, and exits 0.
	fake := fakeprovider.New(fakeprovider.Options{Tokens: 20, TokenDelay: 50 * time.Millisecond})
	up, err := fake.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	getenv := func(k string) string {
		if k == "TEST_KEY" {
			return "sk-x"
		}
		return ""
	}
	go func() {
		done <- run(ctx, []string{"--config", writeConfig(t, up), "--listen", addr, "--admin-listen", "", "--shutdown-grace", "10s"}, getenv, io.Discard, &stderr)
	}()
	waitReady(t, addr, &stderr)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer k-test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	if _, err := rd.ReadString('\n'); err != nil { // the stream has begun
		t.Fatal(err)
	}
	cancel() // SIGTERM
	rest, err := io.ReadAll(rd)
	if err != nil || !strings.Contains(string(rest), "data: [DONE]") {
		t.Fatalf("in-flight stream cut by shutdown: %v %q", err, rest)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("edge did not exit")
	}
	if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
		c.Close()
		t.Fatal("edge still accepting after shutdown")
	}
}

func TestBadUsage(t *testing.T) {
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"--listen", ":0"}, func(string) string { return "" }, io.Discard, &stderr); code != 2 {
		t.Fatalf("exit %d without --config", code)
	}
	if code := run(context.Background(), []string{"--config", "/nonexistent.json"}, func(string) string { return "" }, io.Discard, &stderr); code != 1 {
		t.Fatalf("exit %d for a missing file", code)
	}
}

// Standalone, a valid config file without any tenant is a config: the edge
// is ready (and refuses every key).
func TestStandaloneReadyWithoutTenants(t *testing.T) {
	p := filepath.Join(t.TempDir(), "weir.json")
	if err := os.WriteFile(p, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--config", p, "--listen", addr, "--admin-listen", "", "--shutdown-grace", "1s"}, func(string) string { return "" }, io.Discard, &stderr)
	}()
	waitReady(t, addr, &stderr)
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// startEdge runs the edge with args (plus --listen and --admin-listen on
// free loopback ports) until the test ends, and returns its gateway and
// admin addresses once it is ready.
func startEdge(t *testing.T, getenv func(string) string, args ...string) (gw, admin string) {
	t.Helper()
	gw, admin = freeAddr(t), freeAddr(t)
	startEdgeAt(t, gw, admin, getenv, args...)
	return gw, admin
}

// startEdgeAt is startEdge on the given gateway and admin addresses.
func startEdgeAt(t *testing.T, gw, admin string, getenv func(string) string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"--listen", gw, "--admin-listen", admin, "--shutdown-grace", "1s"}, args...), getenv, io.Discard, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	waitReady(t, admin, &stderr)
}

// R-SEC-2: profiling endpoints (and the command line they show) are off
// unless --pprof is given; metrics stay on the admin port.
func TestPProfOnlyWithFlagRSEC2(t *testing.T) {
	p := filepath.Join(t.TempDir(), "weir.json")
	if err := os.WriteFile(p, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	none := func(string) string { return "" }
	status := func(url string) int {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	_, admin := startEdge(t, none, "--config", p)
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/symbol"} {
		if got := status("http://" + admin + path); got != http.StatusNotFound {
			t.Errorf("without --pprof, %s = %d, want 404", path, got)
		}
	}
	if got := status("http://" + admin + "/metrics"); got != http.StatusOK {
		t.Errorf("/metrics = %d", got)
	}
	_, admin = startEdge(t, none, "--config", p, "--pprof")
	if got := status("http://" + admin + "/debug/pprof/cmdline"); got != http.StatusOK {
		t.Errorf("with --pprof, /debug/pprof/cmdline = %d, want 200", got)
	}
}

// R-SEC-2: a tenant's record aimed at the edge's own admin port (metrics:
// other tenants' record and member names) or gateway port is refused at
// dial time, as a connect failure of that member (R-FAIL-5), even where
// loopback is open to tenants on every port (a standalone file that says
// nothing); the caller never sees the metrics.
func TestEdgeNeverDialsItselfRSEC2(t *testing.T) {
	gw, admin := freeAddr(t), freeAddr(t)
	sum := sha256.Sum256([]byte("k-test"))
	cfg := fmt.Sprintf(`{"tenants":[{"version":"1","tenant":{"id":"t","name":"t"},
 "apiKeys":[{"id":"k","name":"k","sha256":"%s"}],
 "records":[{"id":"r","name":"pool","tenantId":"t","wireFormat":"WIRE_FORMAT_OPENAI",
  "models":[{"name":"gpt-x","kind":"MODEL_KIND_CHAT"}],"auth":{"kind":"AUTH_KIND_API_KEY","header":"authorization"},"keySecret":"s",
  "members":[{"name":"admin","baseUrl":"http://%s/metrics"},{"name":"gateway","baseUrl":"http://localhost:%s/v1"}]}]}],
 "secrets":[{"name":"s","tenantId":"t","hosts":["127.0.0.1","localhost"],"env":"TEST_KEY"}]}`,
		base64.StdEncoding.EncodeToString(sum[:]), admin, gw[strings.LastIndex(gw, ":")+1:])
	dir := t.TempDir()
	p := filepath.Join(dir, "weir.json")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "TEST_KEY" {
			return "sk-x"
		}
		return ""
	}
	startEdgeAt(t, gw, admin, getenv, "--config", p)
	req, _ := http.NewRequest(http.MethodPost, "http://"+gw+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer k-test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || strings.Contains(string(body), "# HELP") || strings.Contains(string(body), "404 page not found") {
		t.Fatalf("call through members aimed at the edge itself: %d %s", resp.StatusCode, body)
	}
	if n := strings.Count(string(body), `"reason":"destination_refused"`); n != 2 {
		t.Errorf("want both members refused at dial time (destination_refused), got %d: %s", n, body)
	}
}

// R-SEC-2: tenant records never dial the ports of the edge's NATS servers.
func TestNATSPortsRSEC2(t *testing.T) {
	got := rules.NATSPorts("nats://127.0.0.1:4333, tls://nats.example.com,localhost:5222")
	if fmt.Sprint(got) != "[4333 4222 5222]" {
		t.Fatalf("natsPorts = %v", got)
	}
	if got := rules.NATSPorts(""); len(got) != 0 {
		t.Fatalf("NATSPorts(\"\") = %v", got)
	}
}

// The gateway's listener bounds what a caller can make it hold (DESIGN.md
// §5): a body slower than --body-timeout is answered 408, and headers above
// the server's limit 431, on the binary's own server.
func TestListenerLimits(t *testing.T) {
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	getenv := func(k string) string {
		if k == "TEST_KEY" {
			return "sk-x"
		}
		return ""
	}
	go func() {
		done <- run(ctx, []string{"--config", writeConfig(t, "http://127.0.0.1:1"), "--listen", addr, "--admin-listen", "",
			"--shutdown-grace", "1s", "--body-timeout", "300ms"}, getenv, io.Discard, &stderr)
	}()
	waitReady(t, addr, &stderr)
	ask := func(head string) (*http.Response, time.Duration) {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		// The server may answer before it has read everything.
		go func() { _, _ = io.WriteString(conn, head) }()
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		resp.Body.Close()
		return resp, time.Since(start)
	}
	resp, took := ask("POST /v1/chat/completions HTTP/1.1\r\nHost: e\r\nAuthorization: Bearer k-test\r\nContent-Length: 100\r\n\r\n{\"model\":")
	if resp.StatusCode != http.StatusRequestTimeout || resp.Header.Get("X-Weir-Error") != "invalid_request" || took < 250*time.Millisecond {
		t.Fatalf("slow body: %d %v after %v", resp.StatusCode, resp.Header, took)
	}
	resp, _ = ask("GET /healthz HTTP/1.1\r\nHost: e\r\nX-Pad: " + strings.Repeat("a", 2<<20) + "\r\n\r\n")
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("2 MiB of headers: %d", resp.StatusCode)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}
