package upstream

import "strings"

// The words of quota and rate-limit answers, across providers (R-FAIL-2,
// R-FAIL-3). Every entry is lower case. The phrase tables are ordered: the
// first phrase a message holds gives the reason, so an entry's place counts.
var (
	// quotaCodes are codes or types that mean quota or money spent; keys
	// are normalized by normCode.
	quotaCodes = map[string]string{
		"insufficientquota":       "insufficient_quota",         // OpenAI
		"billinghardlimitreached": "billing_hard_limit_reached", // OpenAI
		"billingnotactive":        "billing_not_active",         // OpenAI
		"billingerror":            "billing_error",              // Anthropic (402)
		"insufficientbalance":     "insufficient_balance",       // OpenAI-compatible APIs
	}
	// rateCodes are codes, types or reasons that name a rate limit: OpenAI's
	// rate_limit_exceeded and its "tokens"/"requests" types, Anthropic's
	// rate_limit_error, Azure's code "429", and the usual spellings.
	rateCodes = map[string]bool{
		"ratelimitexceeded": true, "ratelimiterror": true, "ratelimited": true,
		"ratelimit": true, "toomanyrequests": true, "throttlingerror": true,
		"throttled": true, "throttling": true, "tokens": true, "requests": true,
		"429": true,
	}
	// quotaPhrases say quota or money is spent.
	quotaPhrases = []struct{ phrase, reason string }{
		{"your credit balance is too low", "credit_balance_too_low"},                // Anthropic
		{"you exceeded your current quota", "insufficient_quota"},                   // OpenAI
		{"you have exceeded your current quota", "insufficient_quota"},              // OpenAI
		{"you have reached your specified api usage limits", "usage_limit_reached"}, // Anthropic
		{"billing hard limit has been reached", "billing_hard_limit_reached"},       // OpenAI
		{"your account is not active", "billing_not_active"},                        // OpenAI
		{"quota exceeded", "quota_exceeded"},
		{"insufficient quota", "insufficient_quota"},
		{"insufficient balance", "insufficient_balance"},
	}
	// weakPhrases count only on 402 and 429, anywhere in a message that
	// does not speak of a rate limit.
	weakPhrases = []struct{ phrase, reason string }{
		{"credit balance", "credit_balance_too_low"},
		{"payment required", "payment_required"},
		{"spend limit", "spend_limit_reached"},
		{"spending limit", "spend_limit_reached"},
		{"billing", "billing"},
	}
)

// normCode lower-cases a code and drops '_', '-' and spaces, so that
// insufficient_quota, InsufficientQuota and insufficient-quota compare equal.
func normCode(s string) string {
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

// Spent reports whether the body says quota or money is spent (R-FAIL-3),
// and the Reason to give: a fixed token, never text of the body. In order:
//
//  1. a code or type of quotaCodes (insufficient_quota, billing_error, …);
//  2. a Google RESOURCE_EXHAUSTED status: spent when a message says the
//     quota is exceeded, unless every window it names is per minute or per
//     second (see google.go); nothing below is read;
//  3. a code, type or reason naming a rate limit (rateCodes): not spent,
//     whatever the messages say, so Azure's "…exceeded token rate limit of
//     your current OpenAI S0 pricing tier… aka.ms/oai/quotaincrease" and
//     OpenAI's rate-limit text that mentions billing stay rate limits;
//  4. a message beginning with a phrase of quotaPhrases, or, when anywhere
//     is set, holding one anywhere;
//  5. only when anywhere is set, a message holding a phrase of weakPhrases
//     ("billing", "credit balance", …) and not "rate limit".
//
// routing sets anywhere for 402 and 429; on 400 and 403 (the request's or
// the key's own answers, which may echo caller text) a phrase counts only at
// the start of a message.
func (b *ErrorBody) Spent(anywhere bool) (reason string, ok bool) {
	for _, list := range [][]string{b.codes, b.types} {
		for _, c := range list {
			if r, ok := quotaCodes[normCode(c)]; ok {
				return r, true
			}
		}
	}
	for _, s := range b.statuses {
		if strings.EqualFold(s, "RESOURCE_EXHAUSTED") {
			return b.googleSpent()
		}
	}
	for _, list := range [][]string{b.codes, b.types, b.reasons} {
		for _, c := range list {
			if rateCodes[normCode(c)] {
				return "", false
			}
		}
	}
	for _, m := range b.messages {
		lm := strings.ToLower(strings.TrimSpace(m))
		for _, p := range quotaPhrases {
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
		for _, p := range weakPhrases {
			if strings.Contains(lm, p.phrase) {
				return p.reason, true
			}
		}
	}
	return "", false
}

// Reason is the body's own name for its error: the first error code that is
// a plain token (IsToken), else the first such error type, else the first
// such Google status; "" when there is none.
func (b *ErrorBody) Reason() string {
	for _, list := range [...][]string{b.codes, b.types, b.statuses} {
		for _, s := range list {
			if IsToken(s) {
				return s
			}
		}
	}
	return ""
}
