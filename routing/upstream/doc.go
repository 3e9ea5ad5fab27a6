// Package upstream reads what an upstream provider's answer says: its
// rate-limit headers (R-HEAD-1, R-HEAD-2), the wait it names (R-FAIL-2), and
// the fields of its error body that tell a rate limit from spent quota or
// money (R-FAIL-2, R-FAIL-3, R-ORDER-4). It holds the knowledge of the
// providers' formats and decides nothing: what an answer does to the call
// and to the member is routing.ClassifyWith's, by the rules of ROUTING.md §5.
//
// By provider or format:
//
//   - anthropic.go: Anthropic's anthropic-ratelimit-* headers;
//   - openai.go: OpenAI's and Azure OpenAI's x-ratelimit-* headers;
//   - google.go: Google's RESOURCE_EXHAUSTED, its quota windows and RetryInfo;
//   - aws.go: AWS error types (x-amzn-ErrorType, "__type") and billing refusals;
//   - errorbody.go: ErrorBody, the keys of every provider's JSON error body;
//   - spent.go: the quota and rate-limit codes and phrases (R-FAIL-3);
//   - ratelimit.go, retryafter.go: ParseRateLimits and ParseRetryAfter;
//   - values.go: counts, decimals, durations, times and reason tokens.
//
// # A leaf
//
// The routing core (weir.dev/routing) imports this package, so this package
// imports nothing of Weir: the standard library only, no I/O, no clock (now
// is passed in), like the rest of the module. Its results cross to routing
// in two ways:
//
//   - the rate-limit readings (Dim, LimitReading, RateLimits, HintHorizon)
//     are defined here, because they are what the headers say and nothing
//     more. routing re-exports them under the same names (type aliases), so
//     its member state, the edge and the simulator use them as before, with
//     no copy; routing.ParseRateLimits and routing.ParseRetryAfter call the
//     functions of the same names here;
//   - the error-body readings are this package's own small results:
//     ErrorBody, whose methods say whether the body reads as spent quota
//     (Spent), its own error name (Reason), a Google retry delay
//     (RetryDelay) or an AWS billing refusal (AWSBilling), and AWSErrorType;
//     for gemini members, Google's quota window (GoogleWindow), billing
//     (GoogleBilling), credential refusals (GoogleKeyRefusal), statuses and
//     ErrorInfo reasons (HasStatus, HasReason).
//     The Verdict and its FailureKind stay in routing: they are a decision,
//     and routing makes it from these readings.
package upstream
