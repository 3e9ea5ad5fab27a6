package routing

import (
	"time"

	"weir.dev/routing/upstream"
)

// FailureKind is what one upstream answer (or its absence) means, per the
// rows of ROUTING.md §5.
type FailureKind uint8

const (
	// KindAnswered is a 2xx (R-FAIL-1).
	KindAnswered FailureKind = iota + 1
	// KindRateLimited is a 429 or busy answer (R-FAIL-2), also Bedrock's
	// ThrottlingException, ModelNotReadyException and
	// ServiceQuotaExceededException (the last with Verdict.AccountWide).
	KindRateLimited
	// KindQuotaSpent is quota or money spent, read from the body whatever the
	// status (R-FAIL-3).
	KindQuotaSpent
	// KindServerError is a 5xx other than 502/504 (R-FAIL-4).
	KindServerError
	// KindTransport is an answer never reached whole, or a destination the
	// edge may not send to (R-FAIL-5).
	KindTransport
	// KindKeyRefused is 401, or 403/404 not about quota (R-FAIL-6).
	KindKeyRefused
	// KindUnknownOutcome is 502 or 504: the model may have run (R-FAIL-7).
	KindUnknownOutcome
	// KindClientError is any other 4xx: the request's own answer (R-FAIL-8).
	KindClientError
	// KindTimeout is no response headers within the attempt deadline
	// (R-FAIL-9).
	KindTimeout
	// KindCancelled is a call cancelled before the attempt went out
	// (R-FAIL-10).
	KindCancelled
	// KindMidStream is a failure after output reached the caller (R-FAIL-11).
	KindMidStream
	// KindKeyUnavailable is a member the edge cannot sign for (R-END-3):
	// passed over, not an attempt.
	KindKeyUnavailable
	// KindKeyPassing is a passing key problem (R-END-3): passed over for this
	// call only.
	KindKeyPassing
	// KindCallEnded is a call cut while a member's key was read (R-END-4).
	KindCallEnded
)

var kindNames = [...]string{
	KindAnswered:       "answered",
	KindRateLimited:    "rate_limited",
	KindQuotaSpent:     "quota_spent",
	KindServerError:    "server_error",
	KindTransport:      "transport",
	KindKeyRefused:     "key_refused",
	KindUnknownOutcome: "unknown_outcome",
	KindClientError:    "client_error",
	KindTimeout:        "timeout",
	KindCancelled:      "cancelled",
	KindMidStream:      "mid_stream",
	KindKeyUnavailable: "key_unavailable",
	KindKeyPassing:     "key_passing",
	KindCallEnded:      "call_ended",
}

func (k FailureKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "unclassified"
}

// Verdict is the classification of one upstream answer.
type Verdict struct {
	Kind   FailureKind
	Status int
	// Until is the absolute time the answer names for the member's return:
	// retry-after-ms, retry-after (seconds or HTTP date), or the reset of the
	// limit its rate-limit headers say is spent. Zero when none is named.
	Until time.Time
	// AccountWide asks the call to skip every other member of the same
	// account (R-ORDER-4): quota refusals and Bedrock's
	// ServiceQuotaExceededException.
	AccountWide bool
	// Reason is a short machine-readable reason ("insufficient_quota",
	// "ThrottlingException", "http_429", …) for attempts and views.
	Reason string
	// DayQuota marks a refusal naming a per-day quota (Gemini's
	// RESOURCE_EXHAUSTED with a …PerDay… quota id): the member cools until
	// the current day ends in its record's DayZone (R-HEAD-6, R-FMT-8),
	// capped as every cooldown.
	DayQuota bool
}

// MaxErrorPeek bounds how much of an error body the classifier reads.
const MaxErrorPeek = 16 << 10

// The rate-limit readings of an answer (R-HEAD-1) are what its headers say
// and nothing more, so they are defined with their parser in package
// upstream; routing names them here as it always has.
type (
	// Dim is one rate-limit dimension (R-HEAD-1).
	Dim = upstream.Dim
	// LimitReading is what one answer's headers say of one dimension.
	LimitReading = upstream.LimitReading
	// RateLimits is what one answer's headers say of every dimension.
	RateLimits = upstream.RateLimits
)

// The rate-limit dimensions.
const (
	DimRequests     = upstream.DimRequests
	DimInputTokens  = upstream.DimInputTokens
	DimOutputTokens = upstream.DimOutputTokens
	DimTokens       = upstream.DimTokens
	NumDims         = upstream.NumDims
)

// NextKeepAlive is when a streaming call still without upstream headers sends
// its next ": weir waiting" comment (R-FAIL-12): KeepAliveInterval after the
// call began, then every KeepAliveInterval. sent is how many were sent.
// Comments are not output: failover goes on after them.
func NextKeepAlive(start time.Time, sent int) time.Time {
	return start.Add(time.Duration(sent+1) * KeepAliveInterval)
}
