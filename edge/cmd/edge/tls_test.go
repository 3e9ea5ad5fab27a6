package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"weir.dev/listen/listentest"
)

// syncWriter is an io.Writer safe for the edge's logger and a reader.
type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestGatewayTLS starts the edge with --tls-cert/--tls-key (the key from
// WEIR_EDGE_TLS_KEY) and calls the gateway over HTTPS: HTTP/2 is
// negotiated, the certificate given is served, and a replaced certificate
// is served without a restart.
func TestGatewayTLS(t *testing.T) {
	p := filepath.Join(t.TempDir(), "weir.json")
	if err := os.WriteFile(p, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := listentest.NewCA(t)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	c, k := ca.Leaf(t, 1)
	listentest.WriteFile(t, cert, c)
	listentest.WriteFile(t, key, k)
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncWriter
	done := make(chan int, 1)
	getenv := func(name string) string {
		if name == "WEIR_EDGE_TLS_KEY" {
			return key
		}
		return ""
	}
	go func() {
		done <- run(ctx, []string{"--config", p, "--listen", addr, "--admin-listen", "", "--shutdown-grace", "1s", "--tls-cert", cert}, getenv, io.Discard, &stderr)
	}()
	get := func() (*http.Response, error) {
		cl := ca.Client()
		defer cl.CloseIdleConnections()
		resp, err := cl.Get("https://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	var resp *http.Response
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err = get(); err == nil && resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no HTTPS answer (%v): %s", err, stderr.String())
		}
	}
	if resp.ProtoMajor != 2 || resp.TLS.PeerCertificates[0].SerialNumber.Int64() != 1 {
		t.Errorf("HTTP/%d, serial %d; want HTTP/2 and the certificate given", resp.ProtoMajor, resp.TLS.PeerCertificates[0].SerialNumber)
	}
	c, k = ca.Leaf(t, 2)
	listentest.WriteFile(t, cert, c)
	listentest.WriteFile(t, key, k)
	if resp, err = get(); err != nil || resp.TLS.PeerCertificates[0].SerialNumber.Int64() != 2 {
		t.Errorf("after replacing the files: %v, %v; want serial 2", resp, err)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

func TestTLSFlagsGoTogether(t *testing.T) {
	var stderr syncWriter
	code := run(context.Background(), []string{"--config", "x.json", "--tls-cert", "c.pem"}, func(string) string { return "" }, io.Discard, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "--tls-cert and --tls-key go together") {
		t.Errorf("exit %d, %s; want 2 and the pair named", code, stderr.String())
	}
}
