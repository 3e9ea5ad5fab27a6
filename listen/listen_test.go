package listen_test

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"weir.dev/listen"
	"weir.dev/listen/listentest"
)

// servedSerial makes one HTTPS call on a new connection and returns the
// serial of the certificate served and the protocol's major version.
func servedSerial(t *testing.T, url string, ca *listentest.CA) (int64, int) {
	t.Helper()
	cl := ca.Client()
	defer cl.CloseIdleConnections()
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	return resp.TLS.PeerCertificates[0].SerialNumber.Int64(), resp.ProtoMajor
}

func TestTLSReloadsAndKeepsLastGoodPair(t *testing.T) {
	t.Parallel()
	ca := listentest.NewCA(t)
	dir := t.TempDir()
	files := listen.Files{Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key")}
	c1, k1 := ca.Leaf(t, 1)
	listentest.WriteFile(t, files.Cert, c1)
	listentest.WriteFile(t, files.Key, k1)

	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := listen.TLS(raw, files, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	url := "https://" + raw.Addr().String() + "/"

	if serial, major := servedSerial(t, url, ca); serial != 1 || major != 2 {
		t.Fatalf("served serial %d over HTTP/%d, want 1 over HTTP/2", serial, major)
	}

	// A new pair is served without a restart.
	c2, k2 := ca.Leaf(t, 2)
	listentest.WriteFile(t, files.Cert, c2)
	listentest.WriteFile(t, files.Key, k2)
	if serial, _ := servedSerial(t, url, ca); serial != 2 {
		t.Fatalf("after replacing the files: serial %d, want 2", serial)
	}

	// Half of a rotation (a certificate whose key is not there yet), then a
	// corrupt key: the last good pair stays.
	c3, k3 := ca.Leaf(t, 3)
	listentest.WriteFile(t, files.Cert, c3)
	if serial, _ := servedSerial(t, url, ca); serial != 2 {
		t.Fatalf("with a mismatched key: serial %d, want the previous 2", serial)
	}
	listentest.WriteFile(t, files.Key, []byte("-----BEGIN EC PRIVATE KEY-----\nnonsense\n-----END EC PRIVATE KEY-----\n"))
	if serial, _ := servedSerial(t, url, ca); serial != 2 {
		t.Fatalf("with a corrupt key: serial %d, want the previous 2", serial)
	}
	// The rotation completes.
	listentest.WriteFile(t, files.Key, k3)
	if serial, _ := servedSerial(t, url, ca); serial != 3 {
		t.Fatalf("after the rotation completed: serial %d, want 3", serial)
	}
}

func TestTLSRefusesBadStart(t *testing.T) {
	t.Parallel()
	ca := listentest.NewCA(t)
	dir := t.TempDir()
	c1, _ := ca.Leaf(t, 1)
	_, k2 := ca.Leaf(t, 2)
	cert, key := filepath.Join(dir, "c"), filepath.Join(dir, "k")
	listentest.WriteFile(t, cert, c1)
	listentest.WriteFile(t, key, k2)
	tests := []struct {
		name  string
		files listen.Files
	}{
		{"mismatched pair", listen.Files{Cert: cert, Key: key}},
		{"missing file", listen.Files{Cert: cert, Key: filepath.Join(dir, "nope")}},
		{"cert without key", listen.Files{Cert: cert}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := listen.TLS(raw, tc.files, nil); err == nil {
				t.Error("TLS accepted a bad pair")
			}
		})
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if ln, err := listen.TLS(raw, listen.Files{}, nil); err != nil || ln != raw {
		t.Errorf("TLS without files = %v, %v; want the listener itself", ln, err)
	}
}
