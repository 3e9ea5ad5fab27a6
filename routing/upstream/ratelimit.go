package upstream

import (
	"math"
	"net/http"
	"strings"
	"time"
)

// HintHorizon bounds every time this package reads from an upstream answer.
// A rate-limit reset further than HintHorizon ahead of now is ignored as
// garbage, and a retry-after longer than HintHorizon is returned as
// now+HintHorizon. Either way a parsed time is never more than HintHorizon
// after now; callers still clamp cooldowns to the pool's cap (1 h).
const HintHorizon = 24 * time.Hour

// Dim is one rate-limit dimension (R-HEAD-1).
type Dim uint8

const (
	DimRequests Dim = iota
	DimInputTokens
	DimOutputTokens
	DimTokens
	NumDims
)

var dimNames = [NumDims]string{"requests", "input-tokens", "output-tokens", "tokens"}

func (d Dim) String() string {
	if d < NumDims {
		return dimNames[d]
	}
	return "unknown"
}

// LimitReading is what one answer's headers say of one dimension.
type LimitReading struct {
	Limit, Remaining int64
	Reset            time.Time
	HasLimit         bool
	HasRemaining     bool
	HasReset         bool
}

// RateLimits is what one answer's headers say of every dimension.
type RateLimits [NumDims]LimitReading

// Any reports whether any dimension was read.
func (r *RateLimits) Any() bool {
	for _, d := range r {
		if d.HasLimit || d.HasRemaining || d.HasReset {
			return true
		}
	}
	return false
}

// field is one of the three readings of a rate-limit dimension.
type field uint8

const (
	fieldLimit field = iota
	fieldRemaining
	fieldReset
	numFields
)

var fieldNames = [numFields]string{fieldLimit: "limit", fieldRemaining: "remaining", fieldReset: "reset"}

// familyHeaders names the headers of a fixed family of R-HEAD-2, per
// dimension and field; "" where the family has no such header.
type familyHeaders = [NumDims][numFields]string

// resetParser reads the reset of one header family as an absolute time.
type resetParser func(v string, now time.Time) (time.Time, bool)

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
//     milliseconds when greater than 1e12 (see customReset).
//   - Anthropic anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset},
//     reset an RFC 3339 time (see anthropic.go).
//   - OpenAI and Azure x-ratelimit-{limit,remaining,reset}-{requests,tokens},
//     reset a duration from now such as "6m0s", "1s", "20ms", "0.5s". Azure
//     may send remaining without limit; whatever is there is kept (see
//     openai.go).
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
		for f := fieldLimit; f < numFields; f++ {
			// Sources in precedence order; the first that parses wins.
			if declared != nil && readField(r, f, h, declared[d.String()+"-"+fieldNames[f]], customReset, now) {
				continue
			}
			if readField(r, f, h, anthropicHeaders[d][f], anthropicReset, now) {
				continue
			}
			readField(r, f, h, openAIHeaders[d][f], openAIReset, now)
		}
		if r.HasLimit && r.HasRemaining && r.Remaining > r.Limit {
			r.Remaining = r.Limit
		}
	}
	return rl
}

// readField reads header name, when named and present, into field f of r,
// a reset in the format reset reads. It reports whether the value was taken.
func readField(r *LimitReading, f field, h http.Header, name string, reset resetParser, now time.Time) bool {
	if name == "" {
		return false
	}
	v := header(h, name)
	if v == "" {
		return false
	}
	switch f {
	case fieldLimit:
		n, ok := count(v)
		if !ok || n == 0 {
			return false
		}
		r.Limit, r.HasLimit = n, true
	case fieldRemaining:
		n, ok := count(v)
		if !ok {
			return false
		}
		r.Remaining, r.HasRemaining = n, true
	case fieldReset:
		t, ok := reset(v, now)
		if !ok || t.Before(now) || t.After(now.Add(HintHorizon)) {
			return false
		}
		r.Reset, r.HasReset = t, true
	}
	return true
}

// hasRateLimitHeaders reports whether h may hold a header of a fixed family
// (anthropic-ratelimit-…, x-ratelimit-…), so that answers without any (most
// error answers, Bedrock) cost a scan of their header names and nothing else.
func hasRateLimitHeaders(h http.Header) bool {
	for k := range h {
		if len(k) > 12 && (strings.EqualFold(k[:12], "x-ratelimit-") || (len(k) > 20 && strings.EqualFold(k[:20], "anthropic-ratelimit-"))) {
			return true
		}
	}
	return false
}

// customReset parses a reset of a record-declared header: a plain number
// (seconds from now; unix epoch seconds when > 1e9; unix epoch milliseconds
// when > 1e12), a Go-style duration from now, an RFC 3339 time or an HTTP
// date. Range checks are the caller's.
func customReset(s string, now time.Time) (time.Time, bool) {
	if f, ok := decimal(s); ok {
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
			return now.Add(seconds(f)), true
		}
	}
	if d, ok := duration(s); ok {
		return now.Add(d), true
	}
	if t, ok := rfc3339(s); ok {
		return t, true
	}
	if len(s) <= 64 {
		if t, err := http.ParseTime(s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
