package secrets

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

// checkNameSplit is checkName as it was: labels from strings.Split.
func checkNameSplit(h string) error {
	if h == "" {
		return errors.New("empty host")
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" {
			return errors.New("empty label")
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("character %q not allowed in a host name", c)
			}
		}
	}
	return nil
}

// FuzzParseHostForms: checkName answers as its strings.Split form did, and
// parseHost's host and port are the canonical forms (a.String(),
// strconv.FormatUint) it used to format on every call.
func FuzzParseHostForms(f *testing.F) {
	for _, s := range []string{"api.openai.com", "127.0.0.1:8080", "10.0.0.01", "[::1]:443", "::ffff:1.2.3.4", "a..b", ".a", "a.", "A.b$:0080", "x:007", "[2001:DB8::1]", "h:65535"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := fmt.Sprint(checkName(s)), fmt.Sprint(checkNameSplit(s)); got != want {
			t.Fatalf("checkName(%q) = %s, was %s", s, got, want)
		}
		hp, err := parseHost(s)
		if err != nil {
			return
		}
		if a, err := netip.ParseAddr(hp.host); err == nil && a.String() != hp.host {
			t.Fatalf("parseHost(%q): host %q, not canonical %q", s, hp.host, a.String())
		}
		if hp.port != "" {
			n, err := strconv.ParseUint(hp.port, 10, 16)
			if err != nil || strconv.FormatUint(n, 10) != hp.port {
				t.Fatalf("parseHost(%q): port %q not canonical", s, hp.port)
			}
		}
	})
}

func TestParseHostAllocations(t *testing.T) {
	for _, s := range []string{"api.openai.com", "127.0.0.1:8080", "[::1]:443"} {
		if n := testing.AllocsPerRun(100, func() { _, _ = parseHost(s) }); n != 0 {
			t.Errorf("parseHost(%q): %v allocations", s, n)
		}
	}
}
