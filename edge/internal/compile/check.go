package compile

import (
	"errors"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
	"unicode"
)

// Limits on names and sizes that the snapshot must respect.
const (
	maxNameLen    = 64
	maxMembers    = 16
	maxWeight     = 10000
	maxModelLen   = 256
	primaryMember = "primary"
)

// validName reports whether s is a record, member, key or tenant name: 1–64
// of [a-z0-9_-].
func validName(s string) bool {
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

// validRegion reports whether s is a region name: 1–64 of [A-Za-z0-9_-], the
// same rule x-weir-regions applies (R-ELIG-3).
func validRegion(s string) bool {
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
// regions (data rules, key regions, a pool's allowed_regions): a region name
// or a glob over region names using "*" and "?" (e.g. "eu-*"), 1–64
// characters, in path.Match syntax. Character classes are not accepted: no
// region rule needs them, and they make typos hard to see.
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

const regionPatternRule = "must be a region name or a glob such as \"eu-*\": 1-64 of [A-Za-z0-9_-*?]"

// validModelName reports whether s may name a model: 1–256 bytes with no
// white space or control characters. Model names are otherwise free: they may
// hold "/", ".", ":" and "@" (e.g. "meta-llama/Llama-3-8B").
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

// validHeaderName reports whether s is an HTTP header field name (an RFC 9110
// token).
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

// isLoopbackHost reports whether host (as url.URL.Hostname returns it) is the
// edge's own machine: "localhost", 127.0.0.0/8 or ::1 (R-SEC-2).
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// checkURL checks an upstream address (a base_url or an OAuth2 token_url)
// against R-SEC-2: an absolute http or https URL with a host and no
// credentials; https unless the host is loopback or the record is owned by
// cluster admins (clusterOwned: managed or internal); and, on other records,
// no literal private, link-local, multicast or unspecified IP address. Host
// names are not resolved here: the same rule is applied after DNS at dial
// time. checkURL reports each problem through add and never echoes the URL,
// which may hold a secret by mistake.
func checkURL(raw string, clusterOwned bool, add func(format string, args ...any)) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		add("does not parse as a URL: %v", err)
		return
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		add("must be an absolute http(s) URL, got scheme %s", strconv.Quote(u.Scheme))
		return
	}
	if u.Host == "" || u.Hostname() == "" {
		add("must name a host")
		return
	}
	if u.User != nil {
		add("must not carry credentials; put them in a secret")
	}
	if u.Fragment != "" {
		add("must not have a fragment")
	}
	if scheme == "http" && !clusterOwned && !isLoopbackHost(u.Hostname()) {
		add("must be https: plain http is allowed only to loopback (127.0.0.0/8, ::1, localhost) or on managed or internal records (R-SEC-2)")
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil && !clusterOwned && forbiddenAddr(a.Unmap()) {
		add("must not be a private, link-local, multicast or unspecified address on a tenant's record (R-SEC-2)")
	}
}

// forbiddenAddr reports whether a tenant's record may never reach a: private
// (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16 with the
// cloud metadata address, fe80::/10), multicast or unspecified (R-SEC-2).
func forbiddenAddr(a netip.Addr) bool {
	return a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified()
}
