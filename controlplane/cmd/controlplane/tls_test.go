package main

import (
	"context"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"weir.dev/db/pgtest"
	"weir.dev/listen/listentest"
	"weir.dev/listen/logflags/logtest"
)

// TestServeTLS starts `serve --tls-cert --tls-key` and calls the admin port
// over HTTPS: HTTP/2 is negotiated, the admin API answers, and the
// console's cookies are Secure without --console-secure-cookies.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	if code := run(context.Background(), []string{"migrate"}, env(map[string]string{"DATABASE_URL": dsn}), io.Discard, io.Discard); code != exitOK {
		t.Fatalf("migrate = %d", code)
	}
	ca := listentest.NewCA(t)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	c, k := ca.Leaf(t, 7)
	listentest.WriteFile(t, cert, c)
	listentest.WriteFile(t, key, k)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr logtest.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--tls-cert", cert, "--tls-key", key}, env(map[string]string{
			"DATABASE_URL": dsn, "WEIR_CP_LISTEN": "127.0.0.1:0",
			"WEIR_MASTER_KEY": strings.Repeat("11", 32), "WEIR_EDGE_KEY": strings.Repeat("22", 32), "WEIR_CONFIG_SIGNING_KEY": strings.Repeat("33", 32),
		}), io.Discard, &stderr)
	}()
	// Outside --dev the log is JSON, one object a line.
	listening := regexp.MustCompile(`"msg":"admin API listening","addr":"(127\.0\.0\.1:\d+)","tls":true`)
	var m []string
	for deadline := time.Now().Add(30 * time.Second); m == nil; m = listening.FindStringSubmatch(stderr.String()) {
		select {
		case code := <-done:
			t.Fatalf("serve ended with %d:\n%s", code, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("not listening after 30s:\n%s", stderr.String())
		}
	}
	base := "https://" + m[1]
	cl := ca.Client()

	resp, err := cl.Post(base+"/weir.admin.v1.AdminService/WhoAmI", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 401 || resp.TLS.PeerCertificates[0].SerialNumber.Int64() != 7 {
		t.Errorf("WhoAmI without a token over HTTPS: HTTP/%d %d; want HTTP/2 401 with the certificate given", resp.ProtoMajor, resp.StatusCode)
	}
	resp, err = cl.Get(base + "/console/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(resp.Cookies()) == 0 {
		t.Error("the login page set no cookie")
	}
	for _, ck := range resp.Cookies() {
		if !ck.Secure {
			t.Errorf("cookie %s is not Secure over TLS", ck.Name)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("serve = %d after cancel:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}
