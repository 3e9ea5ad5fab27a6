package rules

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// NATSAuth is how a Weir process (control plane or edge) authenticates to
// NATS and secures the connection (--nats-creds, --nats-user,
// --nats-password, --nats-ca, --nats-cert, --nats-key, --nats-insecure).
// Each binary turns it into nats.go options; the rules about which
// combinations are allowed live here, once.
type NATSAuth struct {
	// Creds is a NATS .creds file (JWT and nkey seed).
	Creds string
	// User and Password authenticate with a user and password.
	User, Password string
	// CA verifies the server's certificate; Cert and Key are the client
	// certificate.
	CA, Cert, Key string
	// Insecure allows an unauthenticated or plain-text connection.
	Insecure bool
}

// Check reports every problem of a for a connection to urls (a
// comma-separated list). Flags that go in pairs must come in pairs, and
// .creds and a user exclude each other. Unless a.Insecure or allowPlain
// (the control plane's --dev), a connection that would be unauthenticated
// (no .creds, no user and password, no user in a URL) or plain text (no
// tls:// URL, no CA, no client certificate) is refused too.
func (a NATSAuth) Check(urls string, allowPlain bool) error {
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
	if a.Insecure || allowPlain || urls == "" || len(errs) > 0 {
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

// NATSPorts lists the ports of the NATS servers in urls (comma-separated;
// a URL without a scheme is taken as nats://, one without a port as 4222).
// Tenant records never dial them on an edge's own machine (R-SEC-2).
func NATSPorts(urls string) []uint16 {
	var out []uint16
	for _, raw := range strings.Split(urls, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		if !strings.Contains(raw, "://") {
			raw = "nats://" + raw
		}
		port := uint64(4222)
		if u, err := url.Parse(raw); err == nil && u.Port() != "" {
			if n, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
				port = n
			}
		}
		out = append(out, uint16(port))
	}
	return out
}
