package routing

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"weir.dev/routing/upstream"
)

// Classify is ClassifyWith without record-declared rate-limit headers.
func Classify(wire WireFormat, status int, h http.Header, body []byte, now time.Time) Verdict {
	return ClassifyWith(wire, status, h, body, nil, now)
}

// ClassifyWith says what one upstream answer means (ROUTING.md §5). status
// and h are the answer's status line and headers; body is a bounded peek of
// its error body (only the first MaxErrorPeek bytes are read; it may be
// empty, truncated JSON, or not JSON at all); custom is the record's
// rate_limit_headers (see ParseRateLimits), used only for the time a 429
// names. It reads no clock: now is the time the answer arrived.
//
// What the answer says is read by package upstream, which knows each
// provider's headers and error bodies (upstream.ErrorBody,
// upstream.AWSErrorType); the rules below, and their order, are this
// function's.
//
// A gemini member's answers are read by Google's error shape instead, and
// no rate-limit header is read (classifyGemini, R-FMT-8): a per-minute
// RESOURCE_EXHAUSTED is a rate limit with RetryInfo's delay, a per-day one
// a rate limit with DayQuota, billing or prepayment spent, a bare 429 or a
// 503 busy (KindServerError), API_KEY_INVALID or PERMISSION_DENIED a
// refused key, INVALID_ARGUMENT the request's own answer. custom is not
// read for them.
//
// Rules for the other formats, first match wins:
//
//  1. 2xx: KindAnswered (R-FAIL-1). The body is not read.
//  2. A 4xx carrying an AWS error type (header x-amzn-ErrorType such as
//     "ThrottlingException:http://internal.amazon.com/coral/…", else the
//     body's "__type", else on a bedrock record an "…Exception" code):
//     ThrottlingException, ModelNotReadyException and
//     TooManyRequestsException are KindRateLimited;
//     ServiceQuotaExceededException is KindRateLimited with AccountWide;
//     AccessDeniedException whose message is about payment or billing (for
//     instance INVALID_PAYMENT_INSTRUMENT) is KindQuotaSpent with
//     AccountWide. Other types fall through to the rules below.
//  3. Quota or money spent, read from the body, for status 400, 402, 403
//     and 429, and for any 4xx on a bedrock record: KindQuotaSpent with
//     AccountWide (R-FAIL-3, R-ORDER-4). A 402 is always spent. Otherwise
//     the body must say so: a code or type insufficient_quota,
//     billing_hard_limit_reached, billing_not_active, billing_error,
//     insufficient_balance; a Google RESOURCE_EXHAUSTED whose message says
//     the quota is exceeded, unless every quota it names is a per-minute or
//     per-second window (that is a rate limit: rule 4); or a message such as
//     "Your credit balance is too low…", "You exceeded your current quota…",
//     "You have reached your specified API usage limits…", "Quota
//     exceeded…". A body whose code or type names a rate limit
//     (rate_limit_exceeded, rate_limit_error, Azure's "429", OpenAI's
//     "tokens"/"requests", …) is never read as spent from its message, so
//     Azure's "…exceeded token rate limit of your current OpenAI S0 pricing
//     tier… aka.ms/oai/quotaincrease" and OpenAI's rate-limit text that
//     mentions billing stay rate limits. On 400 and 403 (the request's or
//     the key's own answers, which may echo caller text) a message counts
//     only when it begins with one of those phrases; on 402 and 429 it may
//     contain it anywhere, and there the weaker words "billing", "credit
//     balance", "payment required" and "spend limit" count too unless the
//     message speaks of a rate limit.
//  4. 429: KindRateLimited (R-FAIL-2).
//  5. 502, 504: KindUnknownOutcome (R-FAIL-7).
//  6. Other 5xx (500, 503, 529 …): KindServerError (R-FAIL-4).
//  7. 401, 403, 404: KindKeyRefused (R-FAIL-6).
//  8. Other 4xx: KindClientError (R-FAIL-8).
//  9. Any other status (1xx, 3xx, or outside 100–599): KindServerError, a
//     misbehaving upstream whose request did not run.
//
// Until: for KindRateLimited it is ParseRetryAfter's time, else the latest
// reset among the dimensions ParseRateLimits reads as spent (remaining 0
// with a reset), else a Google RetryInfo retryDelay in the body; for
// KindQuotaSpent and KindServerError it is ParseRetryAfter's time; zero
// otherwise and when nothing is named. A non-zero Until always lies in
// [now, now+HintHorizon]; callers clamp it to the pool's cap.
//
// AccountWide is set only on KindQuotaSpent and on
// ServiceQuotaExceededException.
//
// Reason is a short machine token, never free text: for a phrase-detected
// quota refusal a fixed token ("credit_balance_too_low",
// "usage_limit_reached", "quota_exceeded", …); otherwise the AWS error type,
// else the body's error code, else its error type, else its Google status,
// each only if it is a plain identifier (a letter, then at most 63 letters,
// digits, '_' or '.'), else "http_<status>". No header value other than the
// AWS error type name is ever copied into it.
//
// Status is always the status given.
func ClassifyWith(wire WireFormat, status int, h http.Header, body []byte, custom map[string]string, now time.Time) Verdict {
	v := Verdict{Status: status}
	if status >= 200 && status < 300 {
		v.Kind, v.Reason = KindAnswered, httpReason(status)
		return v
	}
	if len(body) > MaxErrorPeek {
		body = body[:MaxErrorPeek]
	}
	b := upstream.ParseErrorBody(body)
	if wire == WireGemini {
		return classifyGemini(v, status, h, &b, now)
	}
	aws := upstream.AWSErrorType(h, &b, wire == WireBedrock)
	is4xx := status >= 400 && status < 500

	// Rule 2: AWS error types.
	if is4xx && aws != "" {
		switch aws {
		case "ThrottlingException", "ModelNotReadyException", "TooManyRequestsException":
			return rateLimitedVerdict(v, aws, false, h, custom, &b, now)
		case "ServiceQuotaExceededException":
			return rateLimitedVerdict(v, aws, true, h, custom, &b, now)
		case "AccessDeniedException":
			if b.AWSBilling() {
				return spentVerdict(v, aws, h, now)
			}
		}
	}

	// Rule 3: quota or money spent.
	if status == 400 || status == 402 || status == 403 || status == 429 || (is4xx && (wire == WireBedrock || aws != "")) {
		if r, ok := b.Spent(status == 402 || status == 429); ok {
			return spentVerdict(v, r, h, now)
		}
		if status == 402 {
			return spentVerdict(v, reasonOf(aws, &b, status), h, now)
		}
	}

	reason := reasonOf(aws, &b, status)
	switch {
	case status == 429:
		return rateLimitedVerdict(v, reason, false, h, custom, &b, now)
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
	v.Reason = reason
	return v
}

// TransportVerdict is the verdict of an attempt never reached whole: a
// connect, TLS or DNS failure, a reset before the status line, or a
// destination the edge may not send to (R-FAIL-5). reason should be a short
// fixed token such as "dial", "tls", "dns" or "ssrf_blocked"; it is reduced
// to letters, digits, '_' and '.', at most 64 bytes, beginning with a letter
// ("transport" when nothing is left), so an error text passed by mistake
// cannot carry spaces, URLs or punctuation into attempts and views.
func TransportVerdict(reason string) Verdict {
	return Verdict{Kind: KindTransport, Reason: sanitizeReason(reason, "transport")}
}

// TimeoutVerdict is the verdict of an attempt without response headers
// within the attempt deadline (R-FAIL-9): KindTimeout, reason "timeout".
func TimeoutVerdict() Verdict {
	return Verdict{Kind: KindTimeout, Reason: "timeout"}
}

func rateLimitedVerdict(v Verdict, reason string, accountWide bool, h http.Header, custom map[string]string, b *upstream.ErrorBody, now time.Time) Verdict {
	v.Kind, v.Reason, v.AccountWide = KindRateLimited, reason, accountWide
	v.Until = rateUntil(h, custom, b, now)
	return v
}

func spentVerdict(v Verdict, reason string, h http.Header, now time.Time) Verdict {
	v.Kind, v.Reason, v.AccountWide = KindQuotaSpent, reason, true
	v.Until, _ = ParseRetryAfter(h, now)
	return v
}

// rateUntil is the time a rate-limit answer names (R-FAIL-2): retry-after-ms
// or retry-after; else the latest reset among dimensions whose remaining is
// 0; else a Google RetryInfo retryDelay. Zero when none is named.
func rateUntil(h http.Header, custom map[string]string, b *upstream.ErrorBody, now time.Time) time.Time {
	if t, ok := ParseRetryAfter(h, now); ok {
		return t
	}
	rl := ParseRateLimits(h, custom, now)
	var latest time.Time
	for _, r := range rl {
		if r.HasRemaining && r.Remaining == 0 && r.HasReset && r.Reset.After(latest) {
			latest = r.Reset
		}
	}
	if !latest.IsZero() {
		return latest
	}
	if d, ok := b.RetryDelay(); ok {
		return now.Add(d)
	}
	return time.Time{}
}

func httpReason(status int) string {
	if status < 0 || status > 9999 {
		return "http_invalid"
	}
	return "http_" + strconv.Itoa(status)
}

// reasonOf picks the Reason of a non-quota verdict: the AWS error type, else
// the body's own error name (upstream.ErrorBody.Reason), else
// "http_<status>".
func reasonOf(aws string, b *upstream.ErrorBody, status int) string {
	if aws != "" {
		return aws
	}
	if r := b.Reason(); r != "" {
		return r
	}
	return httpReason(status)
}

// sanitizeReason reduces s to a Reason token (upstream.IsToken), fallback
// when nothing is left.
func sanitizeReason(s, fallback string) string {
	var out []byte
	for i := 0; i < len(s) && len(out) < 64; i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.':
			out = append(out, c)
		default:
			if len(out) > 0 && out[len(out)-1] != '_' {
				out = append(out, '_')
			}
		}
	}
	r := strings.TrimRight(string(out), "_")
	if r == "" {
		return fallback
	}
	if !upstream.IsToken(r) {
		r = fallback + "_" + r
		if len(r) > 64 {
			r = strings.TrimRight(r[:64], "_")
		}
	}
	return r
}
