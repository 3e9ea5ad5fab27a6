package routing

import (
	"net/http"
	"time"

	"weir.dev/routing/upstream"
)

// HintHorizon bounds every time read from an upstream answer: a parsed
// reset or retry time is never more than HintHorizon after now
// (upstream.HintHorizon). Callers still clamp cooldowns to the pool's cap
// (1 h).
const HintHorizon = upstream.HintHorizon

// ParseRateLimits reads what an answer's rate-limit headers say of each
// dimension (R-HEAD-1, R-HEAD-2): custom, the record's rate_limit_headers,
// first, then Anthropic's anthropic-ratelimit-* headers, then OpenAI's and
// Azure's x-ratelimit-* headers. It never fails: a field that is absent or
// does not parse is left unset. It is upstream.ParseRateLimits, which
// documents the formats and the guarantees of the result.
func ParseRateLimits(h http.Header, custom map[string]string, now time.Time) RateLimits {
	return upstream.ParseRateLimits(h, custom, now)
}

// ParseRetryAfter reads the time an answer asks the caller to wait until
// (R-FAIL-2): retry-after-ms, then retry-after. When it reports true the
// time lies in [now, now+HintHorizon]; when false it is zero. It is
// upstream.ParseRetryAfter, which documents the formats.
func ParseRetryAfter(h http.Header, now time.Time) (time.Time, bool) {
	return upstream.ParseRetryAfter(h, now)
}
