package provider

import (
	"errors"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
	"unicode"
)

// The basic checks below are the edge's (edge/internal/compile check.go)
// restated, not imported: the control plane must refuse everything the edge
// would refuse, or an accepted change would stop a tenant's snapshot at the
// edges.

// ValidName reports whether s is a tenant, record, member, key or secret
// name: 1-64 of [a-z0-9_-].
func ValidName(s string) bool {
	if len(s) < 1 || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

const nameRule = "must be 1-64 of [a-z0-9_-]"

// ValidRegion reports whether s is a region name: 1-64 of [A-Za-z0-9_-],
// the rule x-weir-regions applies (R-ELIG-3).
func ValidRegion(s string) bool {
	if len(s) < 1 || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !regionByte(s[i]) {
			return false
		}
	}
	return true
}

func regionByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

const regionRule = "must be 1-64 of [A-Za-z0-9_-]"

// validRegionPattern reports whether s may stand in a list of allowed
// regions: a region name or a glob using "*" and "?" (e.g. "eu-*"), 1-64
// characters, in path.Match syntax.
func validRegionPattern(s string) bool {
	if len(s) < 1 || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !regionByte(c) && c != '*' && c != '?' {
			return false
		}
	}
	_, err := path.Match(s, "x")
	return err == nil
}

// validModelName reports whether s may name a model: 1-128 bytes with no
// white space or control characters ("/", ".", ":" and "@" are fine).
func validModelName(s string) bool {
	if len(s) < 1 || len(s) > maxModelLen {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == unicode.ReplacementChar {
			return false
		}
	}
	return true
}

// validHeaderName reports whether s is an HTTP header field name (an RFC
// 9110 token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

// validText reports whether s is 1-n bytes of printable text without
// leading or trailing space (tags, accounts, api versions).
func validText(s string, n int) bool {
	if len(s) < 1 || len(s) > n || strings.TrimSpace(s) != s {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return false
		}
	}
	return true
}

// validToken reports whether s is 1-n bytes without white space or control
// characters (api versions).
func validToken(s string, n int) bool {
	return len(s) <= n && validModelName(s)
}

// isLoopbackHost reports whether host (as url.URL.Hostname returns it) is
// the edge's own machine: "localhost", 127.0.0.0/8 or ::1 (R-SEC-2).
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// forbiddenAddr reports whether a tenant's record may never reach a:
// private, link-local (with the cloud metadata address), multicast or
// unspecified (R-SEC-2).
func forbiddenAddr(a netip.Addr) bool {
	return a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified()
}

// checkURL checks an upstream address (a base_url or an OAuth2 token_url)
// against R-SEC-2: an absolute http or https URL with a host and no
// credentials or fragment; https unless the host is loopback or the record
// is cluster-owned (managed or internal); and, on other records, no literal
// private, link-local, multicast or unspecified address. Host names are not
// resolved: the edge applies the same rule after DNS at dial time. Problems
// never echo the URL, which may hold a secret by mistake.
func checkURL(ps *problems, field, raw string, clusterOwned bool) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		ps.add(field, CodeInvalidURL, "does not parse as a URL: %v", err)
		return
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		ps.add(field, CodeInvalidURL, "must be an absolute https URL, got scheme %s", strconv.Quote(u.Scheme))
		return
	}
	if u.Host == "" || u.Hostname() == "" {
		ps.add(field, CodeInvalidURL, "must name a host")
		return
	}
	if u.User != nil {
		ps.add(field, CodeInvalidURL, "must not carry credentials; put them in a secret")
	}
	if u.Fragment != "" {
		ps.add(field, CodeInvalidURL, "must not have a fragment")
	}
	if scheme == "http" && !clusterOwned && !isLoopbackHost(u.Hostname()) {
		ps.add(field, CodeNotHTTPS, "must be https: plain http is allowed only to loopback (127.0.0.0/8, ::1, localhost) or on managed or internal records (R-SEC-2)")
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil && !clusterOwned && forbiddenAddr(a.Unmap()) {
		ps.add(field, CodePrivateAddress, "must not be a private, link-local, multicast or unspecified address on a tenant's record (R-SEC-2)")
	}
}

// hostOf returns the lower-cased host name of a URL without its port, or ""
// when it has none.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
}

// hostPortOf returns the lower-cased host name and the port of a URL, the
// scheme's default port when it names none.
func hostPortOf(raw string) (host, port string) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", ""
	}
	port = u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")), port
}
