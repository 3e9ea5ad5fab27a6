package server

import (
	"errors"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go"

	"weir.dev/controlplane/internal/natsauth"
)

// NatsAuth is how the control plane authenticates to NATS and secures the
// connection (DESIGN.md §4).
type NatsAuth struct {
	// Creds is a NATS .creds file (--nats-creds, NATS_CREDS).
	Creds string
	// User and Password (--nats-user, --nats-password).
	User, Password string
	// CA verifies the server's certificate (--nats-ca); Cert and Key are
	// the client certificate (--nats-cert, --nats-key).
	CA, Cert, Key string
	// Insecure allows an unauthenticated or plain-text connection outside
	// dev mode (--nats-insecure).
	Insecure bool
}

// check refuses, unless a.Insecure or dev, a connection to urls that would
// be unauthenticated (no .creds, no user and password, no user in the URL)
// or plain text (no tls:// URL, no CA, no client certificate).
func (a NatsAuth) check(urls string, dev bool) error {
	var errs []error
	if (a.User == "") != (a.Password == "") {
		errs = append(errs, errors.New("--nats-user and --nats-password go together"))
	}
	if a.Creds != "" && a.User != "" {
		errs = append(errs, errors.New("give --nats-creds or --nats-user, not both"))
	}
	if (a.Cert == "") != (a.Key == "") {
		errs = append(errs, errors.New("--nats-cert and --nats-key go together"))
	}
	if a.Insecure || dev || urls == "" || len(errs) > 0 {
		return errors.Join(errs...)
	}
	userInURL, tlsURL := false, false
	for _, u := range strings.Split(urls, ",") {
		if p, err := url.Parse(strings.TrimSpace(u)); err == nil {
			userInURL = userInURL || p.User != nil
			tlsURL = tlsURL || p.Scheme == "tls"
		}
	}
	if a.Creds == "" && a.User == "" && !userInURL {
		errs = append(errs, errors.New("the NATS connection is unauthenticated: give --nats-creds or --nats-user and --nats-password (or --nats-insecure)"))
	}
	if !tlsURL && a.CA == "" && a.Cert == "" {
		errs = append(errs, errors.New("the NATS connection is plain text: use a tls:// URL or --nats-ca (or --nats-insecure)"))
	}
	return errors.Join(errs...)
}

// options are a's nats.go options.
func (a NatsAuth) options() []nats.Option {
	var o []nats.Option
	if a.Creds != "" {
		o = append(o, nats.UserCredentials(a.Creds))
	}
	if a.User != "" {
		o = append(o, nats.UserInfo(a.User, a.Password))
	}
	if a.CA != "" {
		o = append(o, nats.RootCAs(a.CA))
	}
	if a.Cert != "" {
		o = append(o, nats.ClientCert(a.Cert, a.Key))
	}
	return o
}

// NatsConfig returns the nats-server authorization block (JSON, which
// nats-server's configuration format takes) of the control plane's user
// and of cfg.NatsEdges' users with their permissions, with the passwords
// kept under VarDir/nats-auth (created when missing), for a NATS server
// run apart from the control plane.
func NatsConfig(cfg Config) ([]byte, error) {
	users, err := natsauth.Ensure(filepath.Join(cfg.VarDir, "nats-auth"), cfg.NatsEdges)
	if err != nil {
		return nil, err
	}
	return users.ServerConfig()
}
