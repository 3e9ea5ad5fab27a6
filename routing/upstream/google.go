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

// GoogleWindow is the quota window a Google quota refusal names, read from
// its QuotaFailure (quotaId, quotaMetric) and ErrorInfo metadata
// (quota_limit, quota_metric) and from its messages.
type GoogleWindow uint8

const (
	// GoogleNoWindow: the body names no quota window.
	GoogleNoWindow GoogleWindow = iota
	// GoogleShortWindow: every window named is per minute or per second
	// ("GenerateRequestsPerMinutePerProjectPerModel-FreeTier").
	GoogleShortWindow
	// GoogleDayWindow: a per-day window is named ("…PerDay…", "per day",
	// "daily"), and none per week or month.
	GoogleDayWindow
	// GoogleLongWindow: a per-week or per-month window is named.
	GoogleLongWindow
)

var (
	googleDayWords   = []string{"perday", "per day", "per_day", "daily"}
	googleLongWords  = []string{"perweek", "per week", "per_week", "permonth", "per month", "per_month", "monthly", "weekly"}
	googleShortWords = []string{"perminute", "per minute", "per_minute", "persecond", "per second", "per_second"}
)

// GoogleWindow is the longest quota window the body names (see the
// constants); a month beats a day, a day beats a minute, so a refusal that
// names both a per-minute and a per-day quota is read by its day.
func (b *ErrorBody) GoogleWindow() GoogleWindow {
	day, long, short := false, false, false
	for _, list := range [][]string{b.windows, b.messages} {
		for _, w := range list {
			lw := strings.ToLower(w)
			day = day || containsAny(lw, googleDayWords)
			long = long || containsAny(lw, googleLongWords)
			short = short || containsAny(lw, googleShortWords)
		}
	}
	switch {
	case long:
		return GoogleLongWindow
	case day:
		return GoogleDayWindow
	case short:
		return GoogleShortWindow
	}
	return GoogleNoWindow
}

// HasStatus reports whether the body carries the Google status s
// ("RESOURCE_EXHAUSTED", "UNAVAILABLE", …), ignoring case.
func (b *ErrorBody) HasStatus(s string) bool {
	for _, st := range b.statuses {
		if strings.EqualFold(strings.TrimSpace(st), s) {
			return true
		}
	}
	return false
}

// HasReason reports whether an ErrorInfo reason of the body is r
// ("BILLING_DISABLED", "API_KEY_INVALID", …), ignoring case.
func (b *ErrorBody) HasReason(r string) bool {
	for _, x := range b.reasons {
		if strings.EqualFold(strings.TrimSpace(x), r) {
			return true
		}
	}
	return false
}

// googleBillingWords are what Google's quota and billing refusals say when
// the money, not a window, is the limit: the free tier's and paid tier's
// "You exceeded your current quota, please check your plan and billing
// details", a prepaid account's "Your prepayment credits are depleted…",
// and "…enable billing…".
var googleBillingWords = []string{
	"exceeded your current quota", "billing", "prepayment", "prepaid", "credits are depleted",
}

// GoogleBilling reports whether a message of the body speaks of billing,
// prepayment or the plan's quota (googleBillingWords), or an ErrorInfo
// reason is BILLING_DISABLED. It says nothing of windows: a per-minute
// refusal says "please check your plan and billing details" too, so the
// caller reads GoogleWindow first.
func (b *ErrorBody) GoogleBilling() bool {
	for _, r := range b.reasons {
		if strings.EqualFold(strings.TrimSpace(r), "BILLING_DISABLED") {
			return true
		}
	}
	return b.anyMessage(googleBillingWords)
}

// GoogleKeyRefusal reports whether the body refuses the credentials rather
// than the request (R-FAIL-6), and the Reason to give: an ErrorInfo reason
// naming the key or token (API_KEY_INVALID, API_KEY_SERVICE_BLOCKED, any
// API_KEY_…, ACCESS_TOKEN_…, CONSUMER_INVALID, CONSUMER_SUSPENDED,
// SERVICE_DISABLED, IAM_PERMISSION_DENIED), else the status
// UNAUTHENTICATED or PERMISSION_DENIED. Gemini answers a bad API key with
// 400 INVALID_ARGUMENT carrying ErrorInfo reason API_KEY_INVALID, so the
// status alone does not tell.
func (b *ErrorBody) GoogleKeyRefusal() (string, bool) {
	for _, r := range b.reasons {
		r = strings.TrimSpace(r)
		u := strings.ToUpper(r)
		switch {
		case strings.HasPrefix(u, "API_KEY_"), strings.HasPrefix(u, "ACCESS_TOKEN_"),
			u == "CONSUMER_INVALID", u == "CONSUMER_SUSPENDED", u == "SERVICE_DISABLED",
			u == "IAM_PERMISSION_DENIED":
			if IsToken(r) {
				return r, true
			}
		}
	}
	for _, s := range []string{"UNAUTHENTICATED", "PERMISSION_DENIED"} {
		if b.HasStatus(s) {
			return s, true
		}
	}
	return "", false
}
