// Package rules holds the format rules of Weir's configuration that both
// sides enforce: the control plane when it accepts a change, the edge when
// it compiles a snapshot. They live here once so the two can never disagree:
// a change the control plane accepts and the edge refuses would stop a
// tenant's whole snapshot at every edge. Standard library only.
package rules

import (
	"errors"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
	"unicode"
)

// Limits of names and sizes.
const (
	MaxNameLen  = 64
	MaxModelLen = 128
	MaxTagLen   = 64
)

// PrimaryMember is the name of a plain record's own endpoint: the one
// member a plain record compiles to, the member name its prices, health and
// resets go by, and the default name that endpoint keeps when the record
// becomes a pool.
const PrimaryMember = "primary"

// Rule texts for problems.
const (
	NameRule          = "must be 1-64 of [a-z0-9_-]"
	RegionRule        = "must be 1-64 of [A-Za-z0-9_-]"
	RegionPatternRule = "must be a region name or a glob such as \"eu-*\": 1-64 of [A-Za-z0-9_-*?]"
)

// ValidName reports whether s is a tenant, record, member, key or secret
// name: 1-64 of [a-z0-9_-].
func ValidName(s string) bool {
	if len(s) < 1 || len(s) > MaxNameLen {
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

// ValidRegion reports whether s is a region name: 1-64 of [A-Za-z0-9_-],
// the rule x-weir-regions applies (R-ELIG-3).
func ValidRegion(s string) bool {
	if len(s) < 1 || len(s) > MaxNameLen {
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

// ValidRegionPattern reports whether s may stand in a list of allowed
// regions (data rules, key regions, a pool's allowed regions): a region name
// or a glob using "*" and "?" (e.g. "eu-*"), 1-64 characters, in path.Match
// syntax. Character classes are refused: no rule needs them and they hide
// typos.
func ValidRegionPattern(s string) bool {
	if len(s) < 1 || len(s) > MaxNameLen {
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

// ValidModelName reports whether s may name a model: 1-128 bytes (the admin API's limit) with no
// white space or control characters; "/", ".", ":" and "@" are fine (e.g.
// "meta-llama/Llama-3-8B", "eu.anthropic.claude-x-v1:0").
func ValidModelName(s string) bool {
	if len(s) < 1 || len(s) > MaxModelLen {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == unicode.ReplacementChar {
			return false
		}
	}
	return true
}

// ValidHeaderName reports whether s is an HTTP header field name (an RFC
// 9110 token).
func ValidHeaderName(s string) bool {
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

// IsLoopbackHost reports whether host (as url.URL.Hostname returns it) is
// the edge's own machine: "localhost", 127.0.0.0/8 or ::1 (R-SEC-2).
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// URLProblemKind classifies a problem of an upstream URL.
type URLProblemKind uint8

const (
	// URLInvalid: not an absolute http(s) URL with a host, or it carries
	// credentials, a query or a fragment.
	URLInvalid URLProblemKind = iota + 1
	// URLNotHTTPS: plain http to a host that is not loopback on a tenant's
	// record.
	URLNotHTTPS
	// URLPrivateAddress: a literal address AddrRefusal refuses for the
	// record: private, link-local, shared, reserved and the like on a
	// tenant's record; unspecified, broadcast or multicast on any.
	URLPrivateAddress
)

// URLProblem is one problem of an upstream URL. Message never echoes the
// URL, which may hold a secret by mistake.
type URLProblem struct {
	Kind    URLProblemKind
	Message string
}

// CheckURL checks an upstream address (a base_url or an OAuth2 token_url)
// against R-SEC-2: an absolute http or https URL with a host and no
// credentials (user info), no query (not even an empty "?") and no fragment
// (not even an empty "#"), since the edge appends paths to it and a query or
// fragment would swallow them; https unless the host is loopback or the
// record is owned by cluster admins (clusterOwned: managed or internal); and
// no literal address that AddrRefusal refuses for the record. Host names are
// not resolved: the edge applies the same list after DNS at dial time. It
// returns every problem found.
func CheckURL(raw string, clusterOwned bool) []URLProblem {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return []URLProblem{{URLInvalid, "does not parse as a URL: " + err.Error()}}
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return []URLProblem{{URLInvalid, "must be an absolute http(s) URL, got scheme " + strconv.Quote(u.Scheme)}}
	}
	if u.Host == "" || u.Hostname() == "" {
		return []URLProblem{{URLInvalid, "must name a host"}}
	}
	var out []URLProblem
	if u.User != nil {
		out = append(out, URLProblem{URLInvalid, "must not carry credentials (user info); put them in a secret (R-SEC-2)"})
	}
	if u.RawQuery != "" || u.ForceQuery {
		out = append(out, URLProblem{URLInvalid, "must not have a query string (R-SEC-2)"})
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		out = append(out, URLProblem{URLInvalid, "must not have a fragment (R-SEC-2)"})
	}
	if scheme == "http" && !clusterOwned && !IsLoopbackHost(u.Hostname()) {
		out = append(out, URLProblem{URLNotHTTPS, "must be https: plain http is allowed only to loopback (127.0.0.0/8, ::1, localhost) or on managed or internal records (R-SEC-2)"})
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil {
		if reason := AddrRefusal(a, clusterOwned); reason != "" {
			who := "a tenant's record"
			if clusterOwned {
				who = "any record"
			}
			out = append(out, URLProblem{URLPrivateAddress, "must not be this address on " + who + ": " + reason + " (R-SEC-2)"})
		}
	}
	return out
}

// ValidTagText reports whether s may be a tag key or value (of a record, a
// member, or a data rule's required tags): 1-64 bytes of printable text
// without leading or trailing space.
func ValidTagText(s string) bool { return ValidText(s, MaxTagLen) }

// ValidText reports whether s is 1-n bytes of printable text without
// leading or trailing space (tags, accounts).
func ValidText(s string, n int) bool {
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

// RateLimitKeys is what ValidRateLimitKey accepts, in words.
const RateLimitKeys = "{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}"

// ValidRateLimitKey reports whether k (lowercase) is a key a record's
// rate_limit_headers may use: one of RateLimitKeys (R-HEAD-2).
func ValidRateLimitKey(k string) bool {
	for _, dim := range []string{"requests-", "tokens-", "input-tokens-", "output-tokens-"} {
		if rest, ok := strings.CutPrefix(k, dim); ok {
			return rest == "limit" || rest == "remaining" || rest == "reset"
		}
	}
	return false
}
