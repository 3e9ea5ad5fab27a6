package routing

import (
	"net/http"
	"time"

	"weir.dev/routing/upstream"
)

// classifyGemini says what a non-2xx answer of a gemini member (Gemini API
// or Vertex AI, native format) means, by Google's own error body
// {"error":{"code":…,"status":…,"message":…,"details":[…]}} (R-FMT-8,
// R-FMT-5). Google sends no rate-limit headers, so none are read; a
// retry-after header, should one come, still names a wait. Rules, first
// match wins:
//
//  1. 429 naming a per-week or per-month quota: KindQuotaSpent with
//     AccountWide (R-FAIL-3).
//  2. 429 naming a per-day quota (a QuotaFailure quotaId such as
//     "GenerateRequestsPerDayPerProjectPerModel-FreeTier"): KindRateLimited
//     with DayQuota (R-HEAD-6); the router cools the member until the day
//     ends in its record's day zone. Until is what the answer names, if
//     anything (retry-after, else RetryInfo's retryDelay).
//  3. 429 naming only per-minute or per-second quotas: KindRateLimited
//     (R-FAIL-2), Until from retry-after, else RetryInfo's retryDelay
//     ("26s"), else zero (the router's backoff).
//  4. 429 naming no window whose message speaks of billing, prepayment or
//     the plan's quota ("You exceeded your current quota, please check your
//     plan and billing details", "Your prepayment credits are depleted"):
//     KindQuotaSpent with AccountWide (R-FAIL-3).
//  5. Any other 429 — bare, or a RESOURCE_EXHAUSTED naming no quota
//     ("Resource has been exhausted (e.g. check quota).", Vertex AI's
//     shared capacity): the model is busy for this key, KindServerError as
//     R-FAIL-4, Until from retry-after, else RetryInfo.
//  6. Another 4xx with ErrorInfo reason BILLING_DISABLED, or status
//     FAILED_PRECONDITION whose message speaks of billing: KindQuotaSpent
//     with AccountWide (R-FAIL-3).
//  7. Another 4xx refusing the credentials (upstream.GoogleKeyRefusal:
//     400 INVALID_ARGUMENT with reason API_KEY_INVALID, 401
//     UNAUTHENTICATED, 403 PERMISSION_DENIED, …): KindKeyRefused (R-FAIL-6),
//     Reason the ErrorInfo reason or the status.
//  8. Otherwise the status decides as for every format (ClassifyWith rules
//     5–9): 502/504 unknown outcome; other 5xx (500 INTERNAL, 503
//     UNAVAILABLE "The model is overloaded") KindServerError with Until from
//     retry-after; 401/403/404 KindKeyRefused; other 4xx (400
//     INVALID_ARGUMENT) KindClientError, the request's own answer (R-FAIL-8).
//
// Reason is "RESOURCE_EXHAUSTED" for rules 1–4 and for 5 when the body
// says so; otherwise as ClassifyWith (the body's Google status such as
// "UNAVAILABLE" or "INVALID_ARGUMENT", else "http_<status>").
func classifyGemini(v Verdict, status int, h http.Header, b *upstream.ErrorBody, now time.Time) Verdict {
	const exhausted = "RESOURCE_EXHAUSTED"
	is4xx := status >= 400 && status < 500
	if status == 429 {
		switch b.GoogleWindow() {
		case upstream.GoogleLongWindow:
			return spentVerdict(v, exhausted, h, now)
		case upstream.GoogleDayWindow:
			v = geminiWait(v, KindRateLimited, exhausted, h, b, now)
			v.DayQuota = true
			return v
		case upstream.GoogleShortWindow:
			return geminiWait(v, KindRateLimited, exhausted, h, b, now)
		}
		if b.GoogleBilling() {
			return spentVerdict(v, exhausted, h, now)
		}
		return geminiWait(v, KindServerError, reasonOf("", b, status), h, b, now)
	}
	if is4xx {
		if b.HasReason("BILLING_DISABLED") || (b.HasStatus("FAILED_PRECONDITION") && b.GoogleBilling()) {
			return spentVerdict(v, "BILLING_DISABLED", h, now)
		}
		if r, ok := b.GoogleKeyRefusal(); ok {
			v.Kind, v.Reason = KindKeyRefused, r
			return v
		}
	}
	v.Reason = reasonOf("", b, status)
	switch {
	case status == 502 || status == 504:
		v.Kind = KindUnknownOutcome
	case status >= 500 && status < 600:
		v.Kind = KindServerError
		v.Until, _ = ParseRetryAfter(h, now)
	case status == 401 || status == 403 || status == 404:
		v.Kind = KindKeyRefused
	case is4xx:
		v.Kind = KindClientError
	default:
		v.Kind = KindServerError
		v.Until, _ = ParseRetryAfter(h, now)
	}
	return v
}

// geminiWait is a verdict of kind k whose Until is what the answer names:
// retry-after (or retry-after-ms), else a RetryInfo retryDelay; zero when
// neither is there.
func geminiWait(v Verdict, k FailureKind, reason string, h http.Header, b *upstream.ErrorBody, now time.Time) Verdict {
	v.Kind, v.Reason = k, reason
	if t, ok := ParseRetryAfter(h, now); ok {
		v.Until = t
	} else if d, ok := b.RetryDelay(); ok {
		v.Until = now.Add(d)
	}
	return v
}
