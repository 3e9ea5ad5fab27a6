package distrib

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"weir.dev/edge/internal/natstest"
)

// tlsServer starts a NATS server that requires TLS (a certificate for
// 127.0.0.1 from a fresh CA) and a user, and returns its URL and the CA's
// PEM file.
func tlsServer(t *testing.T) (url, caFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "weir test CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "nats"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	s := natstest.Start(t, natstest.Options{NoJetStream: true,
		TLS:   &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12},
		Users: []*server.User{{Username: "edge-a", Password: "secret"}}})
	return s.URL(), caFile
}

// An edge connects over TLS verified with --nats-ca and with its user;
// without the CA, or without its password, it does not get in.
func TestConnectTLSAndAuth(t *testing.T) {
	t.Parallel()
	url, ca := tlsServer(t)
	nc, err := Connect(url, "edge-a", Auth{User: "edge-a", Password: "secret", CA: ca}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !nc.IsConnected() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !nc.IsConnected() {
		t.Fatal("not connected over TLS with the CA and the user")
	}
	if _, err := nc.TLSConnectionState(); err != nil {
		t.Fatalf("the connection is not TLS: %v", err)
	}
	for name, o := range map[string][]nats.Option{
		"no CA":          {nats.UserInfo("edge-a", "secret")},
		"wrong password": {nats.UserInfo("edge-a", "nope"), nats.RootCAs(ca)},
		"no user":        {nats.RootCAs(ca)},
	} {
		if c, err := nats.Connect(url, o...); err == nil {
			c.Close()
			t.Errorf("%s: connected", name)
		}
	}
}

func TestAuthCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		urls string
		auth Auth
		want string // "" means accepted
	}{
		{"nats://n:4222", Auth{}, "unauthenticated"},
		{"nats://n:4222", Auth{Insecure: true}, ""},
		{"nats://n:4222", Auth{User: "e", Password: "p"}, "plain text"},
		{"tls://n:4222", Auth{User: "e", Password: "p"}, ""},
		{"nats://n:4222", Auth{Creds: "e.creds", CA: "ca.pem"}, ""},
		{"nats://u:p@n:4222", Auth{CA: "ca.pem"}, ""},
		{"nats://n:4222", Auth{Creds: "e.creds", Cert: "c.pem", Key: "k.pem"}, ""},
		{"nats://n:4222", Auth{Creds: "e.creds", Cert: "c.pem", Insecure: true}, "go together"},
		{"nats://n:4222", Auth{Creds: "e.creds", User: "e", Password: "p", Insecure: true}, "not both"},
	} {
		err := tc.auth.Check(tc.urls, false)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Check(%q, %+v) = %v, want %q", tc.urls, tc.auth, err, tc.want)
		}
	}
}
