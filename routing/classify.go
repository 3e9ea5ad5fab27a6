package routing

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
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
// Rules, first match wins:
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
//  3. Quota or money clsSpent, read from the body, for status 400, 402, 403
//     and 429, and for any 4xx on a bedrock record: KindQuotaSpent with
//     AccountWide (R-FAIL-3, R-ORDER-4). A 402 is always clsSpent. Otherwise
//     the body must say so: a code or type insufficient_quota,
//     billing_hard_limit_reached, billing_not_active, billing_error,
//     insufficient_balance; a Google RESOURCE_EXHAUSTED whose message says
//     the quota is exceeded, unless every quota it names is a per-minute or
//     per-second window (that is a rate limit: rule 4); or a message such as
//     "Your credit balance is too low…", "You exceeded your current quota…",
//     "You have reached your specified API usage limits…", "Quota
//     exceeded…". A body whose code or type names a rate limit
//     (rate_limit_exceeded, rate_limit_error, Azure's "429", OpenAI's
//     "tokens"/"requests", …) is never read as clsSpent from its message, so
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
// reset among the dimensions ParseRateLimits reads as clsSpent (remaining 0
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
		v.Kind, v.Reason = KindAnswered, clsHTTPReason(status)
		return v
	}
	if len(body) > MaxErrorPeek {
		body = body[:MaxErrorPeek]
	}
	b := clsParseBody(body)
	aws := clsAWSType(wire, h, &b)
	is4xx := status >= 400 && status < 500

	// Rule 2: AWS error types.
	if is4xx && aws != "" {
		switch aws {
		case "ThrottlingException", "ModelNotReadyException", "TooManyRequestsException":
			return clsRateLimited(v, aws, false, h, custom, &b, now)
		case "ServiceQuotaExceededException":
			return clsRateLimited(v, aws, true, h, custom, &b, now)
		case "AccessDeniedException":
			if b.anyMessage(clsAWSBillingWords) {
				return clsSpent(v, aws, h, now)
			}
		}
	}

	// Rule 3: quota or money clsSpent.
	if status == 400 || status == 402 || status == 403 || status == 429 || (is4xx && (wire == WireBedrock || aws != "")) {
		if r, ok := clsQuotaReason(&b, status); ok {
			return clsSpent(v, r, h, now)
		}
		if status == 402 {
			return clsSpent(v, clsReasonOf(aws, &b, status), h, now)
		}
	}

	reason := clsReasonOf(aws, &b, status)
	switch {
	case status == 429:
		return clsRateLimited(v, reason, false, h, custom, &b, now)
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
	return Verdict{Kind: KindTransport, Reason: clsSanitize(reason, "transport")}
}

// TimeoutVerdict is the verdict of an attempt without response headers
// within the attempt deadline (R-FAIL-9): KindTimeout, reason "timeout".
func TimeoutVerdict() Verdict {
	return Verdict{Kind: KindTimeout, Reason: "timeout"}
}

func clsRateLimited(v Verdict, reason string, accountWide bool, h http.Header, custom map[string]string, b *clsBody, now time.Time) Verdict {
	v.Kind, v.Reason, v.AccountWide = KindRateLimited, reason, accountWide
	v.Until = clsRateUntil(h, custom, b, now)
	return v
}

func clsSpent(v Verdict, reason string, h http.Header, now time.Time) Verdict {
	v.Kind, v.Reason, v.AccountWide = KindQuotaSpent, reason, true
	v.Until, _ = ParseRetryAfter(h, now)
	return v
}

// clsRateUntil is the time a rate-limit answer names (R-FAIL-2): retry-after-ms
// or retry-after; else the latest reset among dimensions whose remaining is
// 0; else a Google RetryInfo retryDelay. Zero when none is named.
func clsRateUntil(h http.Header, custom map[string]string, b *clsBody, now time.Time) time.Time {
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
	if b.retryDelay != "" {
		if d, ok := rlDuration(strings.TrimSpace(b.retryDelay)); ok {
			return now.Add(d)
		}
	}
	return time.Time{}
}

func clsHTTPReason(status int) string {
	if status < 0 || status > 9999 {
		return "http_invalid"
	}
	return "http_" + strconv.Itoa(status)
}

// clsReasonOf picks the Reason of a non-quota verdict: the AWS error type, else
// the first plain-identifier error code, error type, or Google status, else
// "http_<status>".
func clsReasonOf(aws string, b *clsBody, status int) string {
	if aws != "" {
		return aws
	}
	for _, list := range [...][]string{b.codes, b.types, b.statuses} {
		for _, s := range list {
			if clsIsToken(s) {
				return s
			}
		}
	}
	return clsHTTPReason(status)
}

// clsIsToken reports whether s may be used as a Reason as is: a letter,
// then at most 63 letters, digits, '_' or '.'.
func clsIsToken(s string) bool {
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

func clsSanitize(s, fallback string) string {
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
	if !clsIsToken(r) {
		r = fallback + "_" + r
		if len(r) > 64 {
			r = strings.TrimRight(r[:64], "_")
		}
	}
	return r
}

// clsAWSType is the AWS error type name of an answer: the header
// x-amzn-ErrorType, else the body's "__type", else, on a bedrock record, the
// first body code ending in "Exception". Prefixes ("com.amazon…#") and
// suffixes (":http://…") are cut; "" unless what is left is a plain
// identifier.
func clsAWSType(wire WireFormat, h http.Header, b *clsBody) string {
	cands := []string{rlHeader(h, "x-amzn-ErrorType")}
	cands = append(cands, b.awsTypes...)
	if wire == WireBedrock {
		for _, c := range b.codes {
			if strings.HasSuffix(c, "Exception") {
				cands = append(cands, c)
			}
		}
	}
	for _, c := range cands {
		if i := strings.IndexByte(c, ':'); i >= 0 {
			c = c[:i]
		}
		if i := strings.LastIndexByte(c, '#'); i >= 0 {
			c = c[i+1:]
		}
		c = strings.TrimSpace(c)
		if clsIsToken(c) {
			return c
		}
	}
	return ""
}

// Phrase tables. Every entry is lower case.
var (
	// clsQuotaCodes are codes or types that mean quota or money clsSpent; keys
	// are normalized by clsNormCode.
	clsQuotaCodes = map[string]string{
		"insufficientquota":       "insufficient_quota",
		"billinghardlimitreached": "billing_hard_limit_reached",
		"billingnotactive":        "billing_not_active",
		"billingerror":            "billing_error",
		"insufficientbalance":     "insufficient_balance",
	}
	// clsRateCodes are codes, types or reasons that name a rate limit.
	clsRateCodes = map[string]bool{
		"ratelimitexceeded": true, "ratelimiterror": true, "ratelimited": true,
		"ratelimit": true, "toomanyrequests": true, "throttlingerror": true,
		"throttled": true, "throttling": true, "tokens": true, "requests": true,
		"429": true,
	}
	// clsQuotaPhrases say quota or money is clsSpent.
	clsQuotaPhrases = []struct{ phrase, reason string }{
		{"your credit balance is too low", "credit_balance_too_low"},
		{"you exceeded your current quota", "insufficient_quota"},
		{"you have exceeded your current quota", "insufficient_quota"},
		{"you have reached your specified api usage limits", "usage_limit_reached"},
		{"billing hard limit has been reached", "billing_hard_limit_reached"},
		{"your account is not active", "billing_not_active"},
		{"quota exceeded", "quota_exceeded"},
		{"insufficient quota", "insufficient_quota"},
		{"insufficient balance", "insufficient_balance"},
	}
	// clsWeakPhrases count only on 402 and 429, anywhere in a message that
	// does not speak of a rate limit.
	clsWeakPhrases = []struct{ phrase, reason string }{
		{"credit balance", "credit_balance_too_low"},
		{"payment required", "payment_required"},
		{"spend limit", "spend_limit_reached"},
		{"spending limit", "spend_limit_reached"},
		{"billing", "billing"},
	}
	// clsAWSBillingWords make an AccessDeniedException a money refusal.
	clsAWSBillingWords = []string{"payment instrument", "invalid_payment_instrument", "billing", "payment method", "insufficient funds"}
	// Quota windows of Google errors.
	clsLongWindows  = []string{"perday", "per day", "daily", "perweek", "per week", "permonth", "per month"}
	clsShortWindows = []string{"perminute", "per minute", "persecond", "per second"}
)

// clsNormCode lower-cases a code and drops '_', '-' and spaces, so that
// insufficient_quota, InsufficientQuota and insufficient-quota compare equal.
func clsNormCode(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s) && i < 64; i++ {
		c := s[i]
		switch {
		case c == '_' || c == '-' || c == ' ':
		case c >= 'A' && c <= 'Z':
			sb.WriteByte(c + 'a' - 'A')
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// clsQuotaReason reports whether the body says quota or money is clsSpent, and
// the Reason to give (rule 3 of ClassifyWith).
func clsQuotaReason(b *clsBody, status int) (string, bool) {
	codes := [][]string{b.codes, b.types}
	for _, list := range codes {
		for _, c := range list {
			if r, ok := clsQuotaCodes[clsNormCode(c)]; ok {
				return r, true
			}
		}
	}
	for _, s := range b.statuses {
		if strings.EqualFold(s, "RESOURCE_EXHAUSTED") {
			return clsGoogleQuota(b)
		}
	}
	for _, list := range [][]string{b.codes, b.types, b.reasons} {
		for _, c := range list {
			if clsRateCodes[clsNormCode(c)] {
				return "", false
			}
		}
	}
	anywhere := status == 402 || status == 429
	for _, m := range b.messages {
		lm := strings.ToLower(strings.TrimSpace(m))
		for _, p := range clsQuotaPhrases {
			if strings.HasPrefix(lm, p.phrase) || anywhere && strings.Contains(lm, p.phrase) {
				return p.reason, true
			}
		}
	}
	if !anywhere {
		return "", false
	}
	for _, m := range b.messages {
		lm := strings.ToLower(m)
		if strings.Contains(lm, "rate limit") || strings.Contains(lm, "ratelimit") {
			continue
		}
		for _, p := range clsWeakPhrases {
			if strings.Contains(lm, p.phrase) {
				return p.reason, true
			}
		}
	}
	return "", false
}

// clsGoogleQuota reads a Google RESOURCE_EXHAUSTED error: clsSpent when a message
// says the quota is exceeded, unless the only quota windows it names are
// per-minute or per-second ones.
func clsGoogleQuota(b *clsBody) (string, bool) {
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
			long = long || clsContainsAny(lw, clsLongWindows)
			short = short || clsContainsAny(lw, clsShortWindows)
		}
	}
	if short && !long {
		return "", false
	}
	return "RESOURCE_EXHAUSTED", true
}

func clsContainsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// clsBody is what the classifier reads from an error body.
type clsBody struct {
	codes, types, statuses, reasons []string
	messages, windows, awsTypes     []string
	retryDelay                      string
}

func (b *clsBody) empty() bool {
	return len(b.codes)+len(b.types)+len(b.statuses)+len(b.reasons)+len(b.messages)+len(b.windows)+len(b.awsTypes) == 0 && b.retryDelay == ""
}

func (b *clsBody) anyMessage(words []string) bool {
	for _, m := range b.messages {
		if clsContainsAny(strings.ToLower(m), words) {
			return true
		}
	}
	return false
}

// Bounds of body reading.
const (
	clsMaxTokens   = 4096
	clsMaxDepth    = 64
	clsMaxPerField = 16
	clsMaxString   = 1024
)

func clsAppend(list []string, s string) []string {
	if len(list) >= clsMaxPerField {
		return list
	}
	if len(s) > clsMaxString {
		s = s[:clsMaxString]
	}
	return append(list, s)
}

func (b *clsBody) add(key, val string) {
	switch strings.ToLower(key) {
	case "code", "error_code", "errorcode":
		b.codes = clsAppend(b.codes, val)
	case "type":
		if val != "error" { // Anthropic's envelope: {"type":"error","error":{…}}
			b.types = clsAppend(b.types, val)
		}
	case "__type":
		b.awsTypes = clsAppend(b.awsTypes, val)
	case "status":
		b.statuses = clsAppend(b.statuses, val)
	case "reason":
		b.reasons = clsAppend(b.reasons, val)
	case "message", "error_message", "errormessage", "error":
		b.messages = clsAppend(b.messages, val)
	case "quotaid", "quota_id", "quotametric", "quota_metric", "quota_limit", "quotalimit":
		b.windows = clsAppend(b.windows, val)
	case "retrydelay", "retry_delay":
		if b.retryDelay == "" && len(val) <= 64 {
			b.retryDelay = val
		}
	}
}

// clsParseBody reads the fields the classifier needs from an error body.
// It walks JSON tokens, so a body truncated by the peek still yields every
// field before the cut; an array body (Gemini's OpenAI-compatible endpoint
// wraps its error in a list) and a short text prefix before the first '{'
// ("data: {…}") are read too. A body with no JSON field at all is taken, up
// to clsMaxString bytes, as one message.
func clsParseBody(body []byte) clsBody {
	var b clsBody
	data := bytes.TrimSpace(body)
	if len(data) == 0 {
		return b
	}
	if data[0] != '{' && data[0] != '[' {
		head := data
		if len(head) > 256 {
			head = head[:256]
		}
		if i := bytes.IndexByte(head, '{'); i >= 0 {
			clsWalkJSON(data[i:], &b)
		}
	} else {
		clsWalkJSON(data, &b)
	}
	if b.empty() {
		b.messages = clsAppend(nil, string(data))
	}
	return b
}

func clsWalkJSON(data []byte, b *clsBody) {
	type frame struct {
		obj     bool
		wantKey bool
		key     string
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []frame
	for n := 0; n < clsMaxTokens; n++ {
		tok, err := dec.Token()
		if err != nil {
			return
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) >= clsMaxDepth {
					return
				}
				stack = append(stack, frame{obj: t == '{', wantKey: t == '{'})
			case '}', ']':
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
				if len(stack) > 0 && stack[len(stack)-1].obj {
					stack[len(stack)-1].wantKey = true
				}
			}
		case string:
			if top != nil && top.obj && top.wantKey {
				top.key, top.wantKey = t, false
				continue
			}
			if top != nil && top.obj {
				b.add(top.key, t)
				top.wantKey = true
			}
		case json.Number:
			if top != nil && top.obj && !top.wantKey {
				if strings.EqualFold(top.key, "code") {
					b.codes = clsAppend(b.codes, t.String())
				}
				top.wantKey = true
			}
		default: // bool, nil
			if top != nil && top.obj && !top.wantKey {
				top.wantKey = true
			}
		}
	}
}
