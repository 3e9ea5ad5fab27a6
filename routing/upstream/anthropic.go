package upstream

import "time"

// Anthropic's rate-limit headers (R-HEAD-2): anthropic-ratelimit-
// {requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset},
// limit and remaining plain counts, reset an RFC 3339 time. ParseRateLimits
// reads them after a record's declared headers and before OpenAI's.
//
// Anthropic's error bodies, {"type":"error","error":{"type":…,"message":…}},
// are read by ParseErrorBody (which skips the envelope's "type":"error"); the
// phrases that say its credit is spent are in spent.go.
var anthropicHeaders = familyHeaders{
	DimRequests: {
		fieldLimit:     "Anthropic-Ratelimit-Requests-Limit",
		fieldRemaining: "Anthropic-Ratelimit-Requests-Remaining",
		fieldReset:     "Anthropic-Ratelimit-Requests-Reset",
	},
	DimInputTokens: {
		fieldLimit:     "Anthropic-Ratelimit-Input-Tokens-Limit",
		fieldRemaining: "Anthropic-Ratelimit-Input-Tokens-Remaining",
		fieldReset:     "Anthropic-Ratelimit-Input-Tokens-Reset",
	},
	DimOutputTokens: {
		fieldLimit:     "Anthropic-Ratelimit-Output-Tokens-Limit",
		fieldRemaining: "Anthropic-Ratelimit-Output-Tokens-Remaining",
		fieldReset:     "Anthropic-Ratelimit-Output-Tokens-Reset",
	},
	DimTokens: {
		fieldLimit:     "Anthropic-Ratelimit-Tokens-Limit",
		fieldRemaining: "Anthropic-Ratelimit-Tokens-Remaining",
		fieldReset:     "Anthropic-Ratelimit-Tokens-Reset",
	},
}

// anthropicReset reads an Anthropic reset: an RFC 3339 time.
func anthropicReset(v string, _ time.Time) (time.Time, bool) {
	return rfc3339(v)
}
