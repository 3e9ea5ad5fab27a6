package upstream

import (
	"math"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// The value formats of headers and bodies, shared by every provider. Each
// parser refuses what it does not fully understand and bounds its input, so
// none can overflow, allocate much, or name a time beyond HintHorizon.

// header returns the trimmed first value of header name, also when the
// header map was built by hand with a lower-case (non-canonical) key.
func header(h http.Header, name string) string {
	vs := h[name] // known names are stored canonical: no allocation
	if len(vs) == 0 {
		vs = h[textproto.CanonicalMIMEHeaderKey(name)]
	}
	if len(vs) == 0 {
		vs = h[strings.ToLower(name)]
	}
	if len(vs) == 0 {
		return ""
	}
	return strings.TrimSpace(vs[0])
}

// count parses a non-negative decimal integer of at most 18 digits (so it
// always fits an int64). Signs, spaces inside, decimals and exponents are
// refused.
func count(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// decimal parses a non-negative plain decimal number ("12", "0.5", ".5",
// "3."), at most 32 bytes long. Signs, exponents, hex, "Inf" and "NaN" are
// refused, unlike strconv.ParseFloat.
func decimal(s string) (float64, bool) {
	if len(s) == 0 || len(s) > 32 {
		return 0, false
	}
	digits, dots := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return 0, false
		}
	}
	if digits == 0 || dots > 1 {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, false
	}
	return f, true
}

// seconds converts a non-negative number of seconds to a duration,
// saturating at HintHorizon.
func seconds(sec float64) time.Duration {
	if !(sec >= 0) {
		return 0
	}
	if sec >= HintHorizon.Seconds() {
		return HintHorizon
	}
	return time.Duration(math.Round(sec * float64(time.Second)))
}

// durationUnits are the units duration accepts, longest first where one is
// a prefix of another.
var durationUnits = [...]struct {
	name string
	d    time.Duration
}{
	{"ns", time.Nanosecond},
	{"us", time.Microsecond},
	{"µs", time.Microsecond},
	{"μs", time.Microsecond},
	{"ms", time.Millisecond},
	{"s", time.Second},
	{"m", time.Minute},
	{"h", time.Hour},
	{"d", 24 * time.Hour},
}

// duration parses a Go-style duration such as "6m0s", "1s", "20ms",
// "0.5s", "1m30.5s" or "1d2h", or a bare decimal number of seconds. It
// refuses signs and anything longer than HintHorizon, so it never overflows.
func duration(s string) (time.Duration, bool) {
	if len(s) == 0 || len(s) > 64 {
		return 0, false
	}
	if f, ok := decimal(s); ok {
		if f > HintHorizon.Seconds() {
			return 0, false
		}
		return seconds(f), true
	}
	var total float64 // seconds
	for len(s) > 0 {
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		num, ok := decimal(s[:i])
		if !ok {
			return 0, false
		}
		s = s[i:]
		matched := false
		for _, u := range durationUnits {
			if strings.HasPrefix(s, u.name) {
				// "m" must not swallow the "m" of "ms".
				if u.name == "m" && strings.HasPrefix(s, "ms") {
					continue
				}
				total += num * u.d.Seconds()
				s = s[len(u.name):]
				matched = true
				break
			}
		}
		if !matched || total > HintHorizon.Seconds() {
			return 0, false
		}
	}
	return seconds(total), true
}

// rfc3339 parses an RFC 3339 time, with or without fractional seconds.
func rfc3339(s string) (time.Time, bool) {
	if len(s) > 64 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// IsToken reports whether s may be used as a verdict's Reason as is: a
// letter, then at most 63 letters, digits, '_' or '.'. Names read from an
// answer (an AWS error type, a body's error code) are kept only when they
// are tokens, so no free text, URL or secret reaches attempts and views.
func IsToken(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if i == 0 && !letter {
			return false
		}
		if !letter && !(c >= '0' && c <= '9') && c != '_' && c != '.' {
			return false
		}
	}
	return true
}
