package provider

import (
	"net/url"
	"strings"
	"unicode"

	"weir.dev/routing/rules"
)

// The basic format checks are weir.dev/routing/rules, shared with the edge's
// snapshot compiler: the control plane must refuse everything the edge would
// refuse, or an accepted change would stop a tenant's snapshot at the edges.

// ValidName reports whether s is a tenant, record, member, key or secret
// name: 1-64 of [a-z0-9_-].
func ValidName(s string) bool { return rules.ValidName(s) }

// ValidRegion reports whether s is a region name: 1-64 of [A-Za-z0-9_-],
// the rule x-weir-regions applies (R-ELIG-3).
func ValidRegion(s string) bool { return rules.ValidRegion(s) }

const (
	nameRule   = rules.NameRule
	regionRule = rules.RegionRule
)

func validRegionPattern(s string) bool { return rules.ValidRegionPattern(s) }
func validModelName(s string) bool     { return rules.ValidModelName(s) }
func validHeaderName(s string) bool    { return rules.ValidHeaderName(s) }

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

// checkURL adds every R-SEC-2 problem of an upstream address (a base_url
// or an OAuth2 token_url) found by rules.CheckURL; problems never echo the
// URL, which may hold a secret by mistake.
func checkURL(ps *problems, field, raw string, clusterOwned bool) {
	for _, p := range rules.CheckURL(raw, clusterOwned) {
		code := CodeInvalidURL
		switch p.Kind {
		case rules.URLNotHTTPS:
			code = CodeNotHTTPS
		case rules.URLPrivateAddress:
			code = CodePrivateAddress
		}
		ps.add(field, code, "%s", p.Message)
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
