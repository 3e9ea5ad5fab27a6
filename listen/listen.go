// Package listen serves TLS on Weir's listeners (the edge's gateway, the
// control plane's admin port) from a certificate and key on disk, reloaded
// when the files change, so that a renewed certificate takes effect without
// a restart. Standard library only: the edge links it without any database
// or NATS code.
//
// Reload contract: on each TLS handshake, KeyPair stats both files (two
// stat calls, no read); when the size, modification time or identity of
// either differs from what it last tried, it loads the pair again. A pair
// that does not load (a missing file, a key that does not match the
// certificate, a file caught half-written) is logged and ignored: the last
// good pair stays in service, and the files are tried again when they next
// change. Writing the certificate and then the key thus passes through one
// refused mismatched pair and ends on the new one.
package listen

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
)

// Files names a certificate (PEM, leaf first, then any intermediates) and
// its private key (PEM).
type Files struct {
	Cert, Key string
}

// Enabled reports whether TLS is asked for.
func (f Files) Enabled() bool { return f.Cert != "" || f.Key != "" }

// Validate reports a pair given by halves.
func (f Files) Validate() error {
	if (f.Cert == "") != (f.Key == "") {
		return errors.New("--tls-cert and --tls-key go together: give both or neither")
	}
	return nil
}

// stamp is what a file looked like when it was last loaded or tried.
type stamp struct {
	info os.FileInfo
}

func (s stamp) same(fi os.FileInfo) bool {
	return s.info != nil && fi != nil && os.SameFile(s.info, fi) &&
		s.info.Size() == fi.Size() && s.info.ModTime().Equal(fi.ModTime())
}

// KeyPair is a certificate and key served from files and reloaded when
// they change. It is safe for concurrent use.
type KeyPair struct {
	files Files
	log   *slog.Logger

	mu        sync.Mutex
	cert      *tls.Certificate
	certStamp stamp
	keyStamp  stamp
}

// LoadKeyPair loads files; it fails when they do not make a pair, so a
// binary refuses to start on a bad certificate. log receives reloads and
// refused pairs (nil discards).
func LoadKeyPair(files Files, log *slog.Logger) (*KeyPair, error) {
	if err := files.Validate(); err != nil {
		return nil, err
	}
	if !files.Enabled() {
		return nil, errors.New("listen: no certificate and key given")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	k := &KeyPair{files: files, log: log}
	cs, ks := k.stat()
	cert, err := tls.LoadX509KeyPair(files.Cert, files.Key)
	if err != nil {
		return nil, fmt.Errorf("tls certificate %s and key %s: %w", files.Cert, files.Key, err)
	}
	k.cert, k.certStamp, k.keyStamp = &cert, cs, ks
	return k, nil
}

// stat returns the files' current stamps (a nil info for a file that
// cannot be stat'ed).
func (k *KeyPair) stat() (cert, key stamp) {
	ci, _ := os.Stat(k.files.Cert)
	ki, _ := os.Stat(k.files.Key)
	return stamp{ci}, stamp{ki}
}

// GetCertificate returns the pair to serve, first loading it again when a
// file changed since it was last loaded or tried (see the package comment).
// It never fails once LoadKeyPair succeeded: a bad new pair leaves the
// last good one in service.
func (k *KeyPair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	cs, ks := k.stat()
	k.mu.Lock()
	defer k.mu.Unlock()
	if cs.info == nil || ks.info == nil || k.certStamp.same(cs.info) && k.keyStamp.same(ks.info) {
		// Unchanged, or a file is missing for now (being replaced): keep
		// serving what we have.
		return k.cert, nil
	}
	k.certStamp, k.keyStamp = cs, ks
	cert, err := tls.LoadX509KeyPair(k.files.Cert, k.files.Key)
	if err != nil {
		k.log.Warn("tls: new certificate or key refused; serving the previous pair", "cert", k.files.Cert, "key", k.files.Key, "err", err)
		return k.cert, nil
	}
	k.cert = &cert
	k.log.Info("tls: certificate reloaded", "cert", k.files.Cert)
	return k.cert, nil
}

// TLSConfig returns a server configuration serving k: TLS 1.2 or later,
// HTTP/2 and HTTP/1.1 offered by ALPN.
func (k *KeyPair) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: k.GetCertificate,
		NextProtos:     []string{"h2", "http/1.1"},
	}
}

// TLS returns ln serving TLS with the pair of files (see KeyPair), or ln
// itself when files are empty. An http.Server serving the returned listener
// speaks HTTP/2 to clients that offer it, as long as its Protocols allow
// HTTP/2 (the default). The error is a pair that does not load; ln is then
// left open for the caller to close.
func TLS(ln net.Listener, files Files, log *slog.Logger) (net.Listener, error) {
	if !files.Enabled() {
		return ln, nil
	}
	k, err := LoadKeyPair(files, log)
	if err != nil {
		return nil, err
	}
	return tls.NewListener(ln, k.TLSConfig()), nil
}
