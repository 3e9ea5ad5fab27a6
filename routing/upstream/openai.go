package upstream

import "time"

// OpenAI's rate-limit headers (R-HEAD-2), which Azure OpenAI sends too:
// x-ratelimit-{limit,remaining,reset}-{requests,tokens}, limit and remaining
// plain counts, reset a duration from now such as "6m0s", "1s", "20ms" or
// "0.5s". There are no input- or output-token headers. Azure may send
// remaining without limit; whatever is there is kept. ParseRateLimits reads
// them last, after a record's declared headers and Anthropic's.
//
// OpenAI's and Azure's error bodies, {"error":{"code":…,"type":…,
// "message":…}}, are read by ParseErrorBody; their quota codes and phrases
// (insufficient_quota, billing_hard_limit_reached, Azure's code "429", …)
// are in spent.go. retry-after-ms, which both send, is read by
// ParseRetryAfter.
var openAIHeaders = familyHeaders{
	DimRequests: {
		fieldLimit:     "X-Ratelimit-Limit-Requests",
		fieldRemaining: "X-Ratelimit-Remaining-Requests",
		fieldReset:     "X-Ratelimit-Reset-Requests",
	},
	DimTokens: {
		fieldLimit:     "X-Ratelimit-Limit-Tokens",
		fieldRemaining: "X-Ratelimit-Remaining-Tokens",
		fieldReset:     "X-Ratelimit-Reset-Tokens",
	},
}

// openAIReset reads an OpenAI or Azure reset: a duration from now.
func openAIReset(v string, now time.Time) (time.Time, bool) {
	d, ok := duration(v)
	if !ok {
		return time.Time{}, false
	}
	return now.Add(d), true
}
