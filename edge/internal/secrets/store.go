package secrets

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
)

// Store holds the decrypted secrets of one config snapshot. It is immutable
// once built: a new snapshot builds a new Store, and a Store may be read
// from any number of goroutines. The nil *Store is an empty store.
type Store struct {
	byKey map[storeKey]*entry
}

type storeKey struct {
	tenantID, name string
}

type entry struct {
	bindings []hostPort
	value    []byte
}

// hostPort is a normalised host: lower case, no trailing dot, IP literals in
// canonical form (IPv6 without brackets); port "" means any port.
type hostPort struct {
	host, port string
}

// NewStore builds a Store from decrypted secrets. Values and hosts are
// copied, so the caller may clear its own copies afterwards.
//
// Every secret must have a name, at least one host (R-SEC-1: a secret is
// bound to one or more hosts), hosts that parse, and a (tenant, name) pair
// no other secret has. NewStore reports every problem at once, joined, each
// wrapping ErrInvalid, and then returns a nil Store.
func NewStore(list []Secret) (*Store, error) {
	s := &Store{byKey: make(map[storeKey]*entry, len(list))}
	var problems []error
	for i, sec := range list {
		where := fmt.Sprintf("secret %d %q (tenant %q)", i, sec.Name, sec.TenantID)
		if sec.Name == "" {
			problems = append(problems, fmt.Errorf("secrets: %s: no name: %w", where, ErrInvalid))
			continue
		}
		k := storeKey{sec.TenantID, sec.Name}
		if _, dup := s.byKey[k]; dup {
			problems = append(problems, fmt.Errorf("secrets: %s: duplicate: %w", where, ErrInvalid))
			continue
		}
		if len(sec.Hosts) == 0 {
			problems = append(problems, fmt.Errorf("secrets: %s: bound to no host: %w", where, ErrInvalid))
			continue
		}
		e := &entry{value: bytes.Clone(sec.Value)}
		if e.value == nil {
			e.value = []byte{}
		}
		ok := true
		for _, h := range sec.Hosts {
			hp, err := parseHost(h)
			if err != nil {
				problems = append(problems, fmt.Errorf("secrets: %s: host %q: %w", where, h, errors.Join(err, ErrInvalid)))
				ok = false
				continue
			}
			e.bindings = append(e.bindings, hp)
		}
		if ok {
			s.byKey[k] = e
		}
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return s, nil
}

// Get returns a copy of the value of the secret name owned by tenantID (""
// for a cluster-managed secret), only if the secret is bound to host.
//
// host is a URL's host as in url.URL.Host: "name", "name:port", "[v6]" or
// "[v6]:port"; case and a trailing dot do not matter. A binding without a
// port matches host on any port; a binding "name:port" matches only that
// port, so a host given without a port matches only port-less bindings.
// Callers that know the scheme should therefore pass the port explicitly
// (443 for https) so that a binding "api.example.com:443" matches.
//
// The errors wrap ErrNotSet or ErrNotBound and name the secret, the tenant
// and the host, never the value.
func (s *Store) Get(tenantID, name, host string) ([]byte, error) {
	var e *entry
	if s != nil {
		e = s.byKey[storeKey{tenantID, name}]
	}
	if e == nil {
		return nil, fmt.Errorf("secrets: %q of tenant %q: %w", name, tenantID, ErrNotSet)
	}
	want, err := parseHost(host)
	if err != nil {
		return nil, fmt.Errorf("secrets: %q of tenant %q: host %q does not parse (%v): %w", name, tenantID, host, err, ErrNotBound)
	}
	for _, b := range e.bindings {
		if b.host == want.host && (b.port == "" || b.port == want.port) {
			return bytes.Clone(e.value), nil
		}
	}
	return nil, fmt.Errorf("secrets: %q of tenant %q: host %q: %w", name, tenantID, host, ErrNotBound)
}

// Len is the number of secrets in the store.
func (s *Store) Len() int {
	if s == nil {
		return 0
	}
	return len(s.byKey)
}

// String describes the store without any value.
func (s *Store) String() string { return fmt.Sprintf("secrets.Store(%d secrets)", s.Len()) }

// GoString is the %#v form, without any value.
func (s *Store) GoString() string { return s.String() }

// Format keeps every fmt verb from walking the store's fields, which hold
// the values.
func (s *Store) Format(f fmt.State, verb rune) { formatRedacted(f, verb, s.String(), s.GoString()) }

// LogValue keeps values out of slog output.
func (s *Store) LogValue() slog.Value { return slog.StringValue(s.String()) }

// parseHost normalises a host as a binding or a URL names it. It accepts
// "name", "name:port", "[v6]", "[v6]:port" and a bare IPv6 literal; it
// refuses wildcards, user info, paths and empty parts.
func parseHost(s string) (hostPort, error) {
	var host, port string
	switch {
	case s == "":
		return hostPort{}, errors.New("empty host")
	case s[0] == '[':
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return hostPort{}, errors.New("missing ']'")
		}
		host = s[1:end]
		switch rest := s[end+1:]; {
		case rest == "":
		case rest[0] == ':':
			port = rest[1:]
			if port == "" {
				return hostPort{}, errors.New("empty port")
			}
		default:
			return hostPort{}, errors.New("junk after ']'")
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return hostPort{}, errors.New("not an IPv6 literal inside brackets")
		}
		host = canonicalAddr(a, host)
	case strings.Count(s, ":") > 1:
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return hostPort{}, errors.New("not an IPv6 literal")
		}
		host = canonicalAddr(a, s)
	default:
		host = s
		if i := strings.IndexByte(s, ':'); i >= 0 {
			host, port = s[:i], s[i+1:]
			if port == "" {
				return hostPort{}, errors.New("empty port")
			}
		}
		host = strings.ToLower(strings.TrimSuffix(host, "."))
		if err := checkName(host); err != nil {
			return hostPort{}, err
		}
		if strings.Trim(host, "0123456789.") == "" { // an IPv4 literal, or no address at all
			if a, err := netip.ParseAddr(host); err == nil {
				host = canonicalAddr(a, host)
			}
		}
	}
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return hostPort{}, errors.New("port is not a number in 1-65535")
		}
		if port[0] == '0' { // leading zeros: a digit string otherwise is its own form
			port = strconv.FormatUint(n, 10)
		}
	}
	return hostPort{host: host, port: port}, nil
}

// canonicalAddr is a.String(), or s when that is what s already says (no
// allocation for an address written canonically).
func canonicalAddr(a netip.Addr, s string) string {
	var buf [64]byte
	if b := a.AppendTo(buf[:0]); string(b) != s {
		return string(b)
	}
	return s
}

// checkName accepts DNS names and IPv4 literals: letters, digits, '-', '_'
// and '.', no empty label. '*' (a wildcard) is refused on purpose.
func checkName(h string) error {
	if h == "" {
		return errors.New("empty host")
	}
	label := 0 // the current label's length so far
	for i := 0; i < len(h); i++ {
		c := h[i]
		if c == '.' {
			if label == 0 {
				return errors.New("empty label")
			}
			label = 0
			continue
		}
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("character %q not allowed in a host name", c)
		}
		label++
	}
	if label == 0 {
		return errors.New("empty label")
	}
	return nil
}
