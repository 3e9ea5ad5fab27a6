package netguard

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// CheckURL is the static check of an upstream URL (a base_url or an OAuth2
// token URL) under policy p (R-SEC-2):
//   - it is absolute, with a host and no user info;
//   - its scheme is https, or http when the host is loopback (127.0.0.0/8,
//     ::1 or "localhost") or p is PolicyTrusted;
//   - its port, when given, is a number in 1-65535;
//   - a literal IP host must pass CheckAddr.
//
// A host name is not resolved here: the Dialer judges what it resolves to
// when connecting, which is what makes the guard hold. Errors wrap ErrBadURL,
// or ErrRefused for a literal address; they quote the URL without user info.
func CheckURL(raw string, p Policy) error {
	u, err := url.Parse(raw)
	if err != nil {
		// url's error quotes the raw URL, user info (a password) included.
		return fmt.Errorf("netguard: not a valid URL: %w", ErrBadURL)
	}
	return CheckParsedURL(u, p)
}

// CheckParsedURL is CheckURL of a URL already parsed (an upstream
// request's), without formatting and parsing it again.
func CheckParsedURL(u *url.URL, p Policy) error {
	bad := func(reason string) error {
		return fmt.Errorf("netguard: URL %q: %s: %w", u.Redacted(), reason, ErrBadURL)
	}
	switch {
	case u.User != nil:
		return bad("user info is not allowed")
	case u.Scheme == "":
		return bad("not absolute")
	case u.Opaque != "":
		return bad("not a hierarchical URL")
	case u.Host == "" || u.Hostname() == "":
		return bad("no host")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return bad("port is not a number in 1-65535")
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return bad("empty port")
	}
	host := u.Hostname()
	ip, ipErr := netip.ParseAddr(host)
	switch u.Scheme {
	case "https":
	case "http":
		if p != PolicyTrusted && !isLoopbackHost(host) {
			return bad("plain http is allowed only to loopback or on records cluster admins own")
		}
	default:
		return bad(fmt.Sprintf("scheme %q is not https or http", u.Scheme))
	}
	if ipErr == nil {
		if err := CheckAddr(ip, p); err != nil {
			err.(*RefusedError).Host = host
			return fmt.Errorf("netguard: URL %q: %w", u.Redacted(), err)
		}
	}
	return nil
}

// isLoopbackHost reports whether host (as url.URL.Hostname gives it) names
// the edge's own machine: a loopback literal or "localhost". Any other name
// may resolve anywhere, so it does not count, however it is spelt.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.WithZone("").Unmap().IsLoopback()
}
