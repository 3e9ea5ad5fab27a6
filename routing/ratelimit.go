package routing

import (
	"math"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// HintHorizon bounds every time this file reads from an upstream answer.
// A rate-limit reset further than HintHorizon ahead of now is ignored as
// garbage, and a retry-after longer than HintHorizon is returned as
// now+HintHorizon. Either way a parsed time is never more than HintHorizon
// after now; callers still clamp cooldowns to the pool's cap (1 h).
const HintHorizon = 24 * time.Hour

// rlField is one of the three readings of a rate-limit dimension.
type rlField uint8

const (
	rlLimit rlField = iota
	rlRemaining
	rlReset
)

var rlFieldNames = [...]string{rlLimit: "limit", rlRemaining: "remaining", rlReset: "reset"}

// rlKnownHeaders names the fixed header families of R-HEAD-2, per dimension
// and field; "" where a family has no such header.
var rlKnownHeaders = [NumDims][3]struct{ anthropic, openai string }{
	DimRequests: {
		rlLimit:     {"Anthropic-Ratelimit-Requests-Limit", "X-Ratelimit-Limit-Requests"},
		rlRemaining: {"Anthropic-Ratelimit-Requests-Remaining", "X-Ratelimit-Remaining-Requests"},
		rlReset:     {"Anthropic-Ratelimit-Requests-Reset", "X-Ratelimit-Reset-Requests"},
	},
	DimInputTokens: {
		rlLimit:     {"Anthropic-Ratelimit-Input-Tokens-Limit", ""},
		rlRemaining: {"Anthropic-Ratelimit-Input-Tokens-Remaining", ""},
		rlReset:     {"Anthropic-Ratelimit-Input-Tokens-Reset", ""},
	},
	DimOutputTokens: {
		rlLimit:     {"Anthropic-Ratelimit-Output-Tokens-Limit", ""},
		rlRemaining: {"Anthropic-Ratelimit-Output-Tokens-Remaining", ""},
		rlReset:     {"Anthropic-Ratelimit-Output-Tokens-Reset", ""},
	},
	DimTokens: {
		rlLimit:     {"Anthropic-Ratelimit-Tokens-Limit", "X-Ratelimit-Limit-Tokens"},
		rlRemaining: {"Anthropic-Ratelimit-Tokens-Remaining", "X-Ratelimit-Remaining-Tokens"},
		rlReset:     {"Anthropic-Ratelimit-Tokens-Reset", "X-Ratelimit-Reset-Tokens"},
	},
}

// ParseRateLimits reads what an answer's rate-limit headers say of each
// dimension (R-HEAD-1, R-HEAD-2). It never fails and never panics: a field
// that is absent or does not parse is left unset (its Has* flag false and its
// value zero), independently of the other fields.
//
// Sources, best first, per dimension and field:
//
//   - custom, the record's rate_limit_headers: keys
//     "{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}"
//     (case-insensitive) naming the header to read. A declared header that is
//     absent or unparsable falls back to the fixed families below. A custom
//     reset may be an RFC 3339 time, an HTTP date, a Go-style duration
//     ("1m30.5s", also "d" for days), or a plain decimal number: seconds from
//     now, or absolute unix epoch seconds when greater than 1e9, or unix epoch
//     milliseconds when greater than 1e12.
//   - Anthropic anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset},
//     reset an RFC 3339 time.
//   - OpenAI and Azure x-ratelimit-{limit,remaining,reset}-{requests,tokens},
//     reset a duration from now such as "6m0s", "1s", "20ms", "0.5s". Azure
//     may send remaining without limit; whatever is there is kept.
//
// "tokens" maps to DimTokens, "input-tokens" to DimInputTokens,
// "output-tokens" to DimOutputTokens and "requests" to DimRequests.
//
// The result obeys, for every dimension:
//   - HasLimit implies Limit > 0: a limit must be a positive decimal integer
//     that fits an int64 (a zero limit gives no ratio and is ignored);
//   - HasRemaining implies 0 <= Remaining, and Remaining <= Limit when
//     HasLimit (remaining above the limit is clamped to it); a negative or
//     non-integer remaining is ignored;
//   - HasReset implies now <= Reset <= now+HintHorizon: a reset in the past
//     or further than HintHorizon ahead is ignored.
func ParseRateLimits(h http.Header, custom map[string]string, now time.Time) RateLimits {
	var rl RateLimits
	if len(h) == 0 || (len(custom) == 0 && !hasRateLimitHeaders(h)) {
		return rl
	}
	var declared map[string]string
	if len(custom) > 0 {
		declared = make(map[string]string, len(custom))
		for k, v := range custom {
			if v = strings.TrimSpace(v); v != "" {
				declared[strings.ToLower(strings.TrimSpace(k))] = v
			}
		}
	}
	for d := Dim(0); d < NumDims; d++ {
		r := &rl[d]
		for f := rlLimit; f <= rlReset; f++ {
			// Candidates in precedence order; the first that parses wins.
			var cands [3]string
			var kinds [3]int // 0 custom, 1 anthropic, 2 openai
			n := 0
			if declared != nil {
				if name := declared[d.String()+"-"+rlFieldNames[f]]; name != "" {
					cands[n], kinds[n] = name, 0
					n++
				}
			}
			k := rlKnownHeaders[d][f]
			if k.anthropic != "" {
				cands[n], kinds[n] = k.anthropic, 1
				n++
			}
			if k.openai != "" {
				cands[n], kinds[n] = k.openai, 2
				n++
			}
			for i := 0; i < n; i++ {
				v := rlHeader(h, cands[i])
				if v == "" {
					continue
				}
				if rlSet(r, f, kinds[i], v, now) {
					break
				}
			}
		}
		if r.HasLimit && r.HasRemaining && r.Remaining > r.Limit {
			r.Remaining = r.Limit
		}
	}
	return rl
}

// rlSet parses one header value into field f of r, in the reset format of
// the header family kind (0 custom, 1 anthropic, 2 openai). It reports
// whether the value was taken.
func rlSet(r *LimitReading, f rlField, kind int, v string, now time.Time) bool {
	switch f {
	case rlLimit:
		n, ok := rlCount(v)
		if !ok || n == 0 {
			return false
		}
		r.Limit, r.HasLimit = n, true
	case rlRemaining:
		n, ok := rlCount(v)
		if !ok {
			return false
		}
		r.Remaining, r.HasRemaining = n, true
	case rlReset:
		var t time.Time
		var ok bool
		switch kind {
		case 0:
			t, ok = rlCustomReset(v, now)
		case 1:
			t, ok = rlRFC3339(v)
		default:
			var d time.Duration
			if d, ok = rlDuration(v); ok {
				t = now.Add(d)
			}
		}
		if !ok || t.Before(now) || t.After(now.Add(HintHorizon)) {
			return false
		}
		r.Reset, r.HasReset = t, true
	}
	return true
}

// rlHeader returns the trimmed first value of header name, also when the
// header map was built by hand with a lower-case (non-canonical) key.
func rlHeader(h http.Header, name string) string {
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

// hasRateLimitHeaders reports whether h may hold a fixed-family rate-limit
// header, so that answers without any (most error answers, Bedrock) cost a
// scan of their header names and nothing else.
func hasRateLimitHeaders(h http.Header) bool {
	for k := range h {
		if len(k) > 12 && (strings.EqualFold(k[:12], "x-ratelimit-") || (len(k) > 20 && strings.EqualFold(k[:20], "anthropic-ratelimit-"))) {
			return true
		}
	}
	return false
}

// rlCount parses a non-negative decimal integer of at most 18 digits (so it
// always fits an int64). Signs, spaces inside, decimals and exponents are
// refused.
func rlCount(s string) (int64, bool) {
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

// rlDecimal parses a non-negative plain decimal number ("12", "0.5", ".5",
// "3."), at most 32 bytes long. Signs, exponents, hex, "Inf" and "NaN" are
// refused, unlike strconv.ParseFloat.
func rlDecimal(s string) (float64, bool) {
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

// rlSeconds converts a non-negative number of seconds to a duration,
// saturating at HintHorizon.
func rlSeconds(sec float64) time.Duration {
	if !(sec >= 0) {
		return 0
	}
	if sec >= HintHorizon.Seconds() {
		return HintHorizon
	}
	return time.Duration(math.Round(sec * float64(time.Second)))
}

// rlUnits are the duration units rlDuration accepts, longest first where one
// is a prefix of another.
var rlUnits = [...]struct {
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

// rlDuration parses a Go-style duration such as "6m0s", "1s", "20ms",
// "0.5s", "1m30.5s" or "1d2h", or a bare decimal number of seconds. It
// refuses signs and anything longer than HintHorizon, so it never overflows.
func rlDuration(s string) (time.Duration, bool) {
	if len(s) == 0 || len(s) > 64 {
		return 0, false
	}
	if f, ok := rlDecimal(s); ok {
		if f > HintHorizon.Seconds() {
			return 0, false
		}
		return rlSeconds(f), true
	}
	var total float64 // seconds
	for len(s) > 0 {
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		num, ok := rlDecimal(s[:i])
		if !ok {
			return 0, false
		}
		s = s[i:]
		matched := false
		for _, u := range rlUnits {
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
	return rlSeconds(total), true
}

// rlRFC3339 parses an RFC 3339 time, with or without fractional seconds.
func rlRFC3339(s string) (time.Time, bool) {
	if len(s) > 64 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// rlCustomReset parses a reset of a record-declared header: a plain number
// (seconds from now; unix epoch seconds when > 1e9; unix epoch milliseconds
// when > 1e12), a Go-style duration from now, an RFC 3339 time or an HTTP
// date. Range checks are the caller's.
func rlCustomReset(s string, now time.Time) (time.Time, bool) {
	if f, ok := rlDecimal(s); ok {
		switch {
		case f > 1e15:
			return time.Time{}, false
		case f > 1e12:
			ms := int64(f)
			return time.UnixMilli(ms), true
		case f > 1e9:
			sec, frac := math.Modf(f)
			return time.Unix(int64(sec), int64(frac*1e9)), true
		case f > HintHorizon.Seconds():
			return time.Time{}, false
		default:
			return now.Add(rlSeconds(f)), true
		}
	}
	if d, ok := rlDuration(s); ok {
		return now.Add(d), true
	}
	if t, ok := rlRFC3339(s); ok {
		return t, true
	}
	if len(s) <= 64 {
		if t, err := http.ParseTime(s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// ParseRetryAfter reads the time an answer asks the caller to wait until
// (R-FAIL-2): retry-after-ms first (milliseconds, integer or decimal), then
// retry-after (seconds, integer or decimal, or an HTTP date). A header that
// is absent, negative or garbage is not named and the next one is tried.
//
// When it reports true, the returned time lies in [now, now+HintHorizon]: an
// HTTP date in the past is returned as now (retry at once), and a wait
// longer than HintHorizon is returned as now+HintHorizon. The caller clamps
// it further to the pool's cooldown cap. When it reports false the time is
// zero.
func ParseRetryAfter(h http.Header, now time.Time) (time.Time, bool) {
	if len(h) == 0 {
		return time.Time{}, false
	}
	if v := rlHeader(h, "retry-after-ms"); v != "" {
		if ms, ok := rlDecimal(v); ok {
			return now.Add(rlSeconds(ms / 1000)), true
		}
	}
	v := rlHeader(h, "retry-after")
	if v == "" {
		return time.Time{}, false
	}
	if sec, ok := rlDecimal(v); ok {
		return now.Add(rlSeconds(sec)), true
	}
	if len(v) > 64 {
		return time.Time{}, false
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return time.Time{}, false
	}
	if t.Before(now) {
		return now, true
	}
	if lim := now.Add(HintHorizon); t.After(lim) {
		return lim, true
	}
	return t, true
}
