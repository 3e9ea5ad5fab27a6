package listen_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"weir.dev/listen"
)

// testCA signs leaf certificates for 127.0.0.1.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "weir test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// leaf returns PEM certificate and key for 127.0.0.1 with the serial.
func (ca *testCA) leaf(t *testing.T, serial int64) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// replace writes data to path through a rename, as certificate tools do.
func replace(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// servedSerial makes one HTTPS call on a new connection and returns the
// serial of the certificate served and the protocol's major version.
func servedSerial(t *testing.T, url string, pool *x509.CertPool) (int64, int) {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(url)
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
	ca := newCA(t)
	dir := t.TempDir()
	files := listen.Files{Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key")}
	c1, k1 := ca.leaf(t, 1)
	replace(t, files.Cert, c1)
	replace(t, files.Key, k1)

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

	if serial, major := servedSerial(t, url, ca.pool); serial != 1 || major != 2 {
		t.Fatalf("served serial %d over HTTP/%d, want 1 over HTTP/2", serial, major)
	}

	// A new pair is served without a restart.
	c2, k2 := ca.leaf(t, 2)
	replace(t, files.Cert, c2)
	replace(t, files.Key, k2)
	if serial, _ := servedSerial(t, url, ca.pool); serial != 2 {
		t.Fatalf("after replacing the files: serial %d, want 2", serial)
	}

	// Half of a rotation (a certificate whose key is not there yet), then a
	// corrupt key: the last good pair stays.
	c3, k3 := ca.leaf(t, 3)
	replace(t, files.Cert, c3)
	if serial, _ := servedSerial(t, url, ca.pool); serial != 2 {
		t.Fatalf("with a mismatched key: serial %d, want the previous 2", serial)
	}
	replace(t, files.Key, []byte("-----BEGIN EC PRIVATE KEY-----\nnonsense\n-----END EC PRIVATE KEY-----\n"))
	if serial, _ := servedSerial(t, url, ca.pool); serial != 2 {
		t.Fatalf("with a corrupt key: serial %d, want the previous 2", serial)
	}
	// The rotation completes.
	replace(t, files.Key, k3)
	if serial, _ := servedSerial(t, url, ca.pool); serial != 3 {
		t.Fatalf("after the rotation completed: serial %d, want 3", serial)
	}
}

func TestTLSRefusesBadStart(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	dir := t.TempDir()
	c1, _ := ca.leaf(t, 1)
	_, k2 := ca.leaf(t, 2)
	cert, key := filepath.Join(dir, "c"), filepath.Join(dir, "k")
	replace(t, cert, c1)
	replace(t, key, k2)
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
