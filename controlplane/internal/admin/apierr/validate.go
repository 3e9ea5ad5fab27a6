package apierr

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"

	"weir.dev/routing/rules"
)

// MaxName is the longest name of a tenant, record, member, key, secret,
// budget or admin.
const MaxName = 64

// Name checks a name: 1-64 of [a-z0-9_-]. It adds one problem to ps and
// returns false when the name is invalid.
func Name(ps *Problems, field, value string) bool {
	switch {
	case value == "":
		ps.Add(field, CodeRequired, "a name is required")
	case len(value) > MaxName:
		ps.Addf(field, CodeTooLong, "name is %d characters; at most %d", len(value), MaxName)
	case !rules.ValidName(value):
		ps.Add(field, CodeInvalidName, "name must be 1-64 of a-z, 0-9, '_' and '-'")
	default:
		return true
	}
	return false
}

// RegionGlob checks a region rule: an exact region or a glob such as "eu-*"
// (rules.ValidRegionPattern, the edges' rule).
func RegionGlob(ps *Problems, field, value string) bool {
	if !rules.ValidRegionPattern(value) {
		ps.Add(field, CodeInvalidValue, "a region rule is 1-64 of A-Z, a-z, 0-9, '_', '-', '*' and '?'")
		return false
	}
	return true
}

// Host checks a host a secret may be sent to — "name", "name:port", an IP
// literal, "[v6]" or "[v6]:port", without scheme, user info or path — and
// returns its normal form (lower case, no trailing dot, canonical IP, port
// without leading zeros), the form the edge compares (R-SEC-1). On failure it
// adds one problem and returns "", false.
func Host(ps *Problems, field, value string) (string, bool) {
	h, err := NormalizeHost(value)
	if err != nil {
		ps.Addf(field, CodeInvalidValue, "not a host or host:port (%v)", err)
		return "", false
	}
	return h, true
}

// NormalizeHost is Host without a Problems: the normal form, or why value is
// not a host. The error never quotes value.
func NormalizeHost(value string) (string, error) {
	host, port, err := splitHost(value)
	if err != nil {
		return "", err
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == "" {
		return host, nil
	}
	return host + ":" + port, nil
}

// HostPort splits a host into its normalised host (IPv6 without brackets) and
// port ("" when none).
func HostPort(value string) (host, port string, err error) { return splitHost(value) }

func splitHost(s string) (host, port string, err error) {
	switch {
	case s == "":
		return "", "", errors.New("empty")
	case len(s) > 255:
		return "", "", errors.New("longer than 255 characters")
	case strings.ContainsAny(s, "/@?# \t\r\n"):
		return "", "", errors.New("a scheme, path, user or space is not allowed")
	case s[0] == '[':
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", errors.New("missing ']'")
		}
		host = s[1:end]
		switch rest := s[end+1:]; {
		case rest == "":
		case rest[0] == ':':
			port = rest[1:]
			if port == "" {
				return "", "", errors.New("empty port")
			}
		default:
			return "", "", errors.New("junk after ']'")
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", "", errors.New("not an IPv6 literal inside brackets")
		}
		host = a.String()
	case strings.Count(s, ":") > 1:
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return "", "", errors.New("not an IPv6 literal")
		}
		host = a.String()
	default:
		host = s
		if i := strings.IndexByte(s, ':'); i >= 0 {
			host, port = s[:i], s[i+1:]
			if port == "" {
				return "", "", errors.New("empty port")
			}
		}
		host = strings.ToLower(strings.TrimSuffix(host, "."))
		if host == "" {
			return "", "", errors.New("empty host")
		}
		for _, label := range strings.Split(host, ".") {
			if label == "" {
				return "", "", errors.New("empty label")
			}
			if !only(label, func(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' }) {
				return "", "", errors.New("only letters, digits, '-', '_' and '.' may form a host name")
			}
		}
		if a, err := netip.ParseAddr(host); err == nil {
			host = a.String()
		}
	}
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return "", "", errors.New("port is not a number in 1-65535")
		}
		port = strconv.FormatUint(n, 10)
	}
	return host, port, nil
}

func only(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}
