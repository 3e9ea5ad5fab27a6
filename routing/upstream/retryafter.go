package upstream

import (
	"net/http"
	"time"
)

// ParseRetryAfter reads the time an answer asks the caller to wait until
// (R-FAIL-2): retry-after-ms first (milliseconds, integer or decimal; sent
// by OpenAI and Azure), then retry-after (seconds, integer or decimal, or an
// HTTP date). A header that is absent, negative or garbage is not named and
// the next one is tried.
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
	if v := header(h, "retry-after-ms"); v != "" {
		if ms, ok := decimal(v); ok {
			return now.Add(seconds(ms / 1000)), true
		}
	}
	v := header(h, "retry-after")
	if v == "" {
		return time.Time{}, false
	}
	if sec, ok := decimal(v); ok {
		return now.Add(seconds(sec)), true
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
