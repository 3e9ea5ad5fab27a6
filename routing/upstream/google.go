package upstream

import (
	"strings"
	"time"
)

// Google's error bodies (Gemini, native and OpenAI-compatible):
// {"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":…,
// "details":[{"violations":[{"quotaId":…}]},{"retryDelay":"26s"}]}},
// sometimes wrapped in a list. RESOURCE_EXHAUSTED is both Google's rate
// limit and its spent quota; the quota windows tell them apart (R-FAIL-2,
// R-FAIL-3): a quota per day, week or month is spent, one per minute or per
// second is a rate limit.
var (
	googleLongWindows  = []string{"perday", "per day", "daily", "perweek", "per week", "permonth", "per month"}
	googleShortWindows = []string{"perminute", "per minute", "persecond", "per second"}
)

// googleSpent reads a Google RESOURCE_EXHAUSTED error: spent when a message
// says the quota is exceeded, unless the only quota windows it names (in
// its quota ids, metrics and limits, or its messages) are per-minute or
// per-second ones. The reason is "RESOURCE_EXHAUSTED".
func (b *ErrorBody) googleSpent() (string, bool) {
	said := false
	for _, m := range b.messages {
		lm := strings.ToLower(strings.TrimSpace(m))
		if strings.Contains(lm, "exceeded your current quota") || strings.HasPrefix(lm, "quota exceeded") {
			said = true
			break
		}
	}
	if !said {
		return "", false
	}
	long, short := false, false
	for _, list := range [][]string{b.windows, b.messages} {
		for _, w := range list {
			lw := strings.ToLower(w)
			long = long || containsAny(lw, googleLongWindows)
			short = short || containsAny(lw, googleShortWindows)
		}
	}
	if short && !long {
		return "", false
	}
	return "RESOURCE_EXHAUSTED", true
}

// RetryDelay is the wait a Google RetryInfo names (its "retryDelay", such as
// "26s"), read as a duration of at most HintHorizon (R-FAIL-2). It reports
// false when the body names none or it does not parse.
func (b *ErrorBody) RetryDelay() (time.Duration, bool) {
	if b.retryDelay == "" {
		return 0, false
	}
	return duration(strings.TrimSpace(b.retryDelay))
}
