package provider

import (
	"net/url"
	"strings"

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
