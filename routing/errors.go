package routing

import (
	"fmt"
	"time"
)

// Codes of the gateway's own answers (ROUTING.md §1, §2, §6, §8, §8a).
const (
	CodeInvalidRequest      = "invalid_request"
	CodeInvalidAPIKey       = "invalid_api_key"
	CodeModelNotAvailable   = "model_not_available"
	CodeWrongEndpoint       = "wrong_endpoint_for_model"
	CodeModelNotAllowed     = "model_not_allowed_for_key"
	CodeProviderNotAllowed  = "provider_not_allowed_for_key"
	CodePoolUnavailable     = "weir_pool_unavailable"
	CodeDataRule            = "weir_data_rule"
	CodeNoRoute             = "weir_no_route"
	CodePoolCooling         = "weir_pool_cooling"
	CodePoolSpent           = "weir_pool_spent"
	CodeKeyUnavailable      = "weir_key_unavailable"
	CodeCallEnded           = "weir_call_ended"
	CodeUpstreamUnreachable = "weir_upstream_unreachable"
	CodeUpstreamTimeout     = "weir_upstream_timeout"
	CodeBudgetExceeded      = "weir_budget_exceeded"
	CodeInsufficientQuota   = "insufficient_quota"
	// CodeUnsupportedFeature: the call asks for a feature no eligible
	// member's wire format can say (R-FMT-3).
	CodeUnsupportedFeature = "weir_unsupported_feature"
	// CodeTenantLimit and CodeKeyLimit refuse a call over the tenant's or
	// the key's caller limits (R-CAP-2), with status 429.
	CodeTenantLimit = "weir_tenant_limit"
	CodeKeyLimit    = "weir_key_limit"
	// CodePoolBusy: every member that may take the call was full
	// (R-CAP-1) and none freed a slot in time; status 503 (R-END-7).
	CodePoolBusy = "weir_pool_busy"
)

// Error is an answer the gateway writes itself, in the caller's format, with
// header x-weir-error: Code.
type Error struct {
	Status  int
	Code    string
	Message string
	// ErrorCode is the "code" field of an OpenAI-format body when it differs
	// from Code (insufficient_quota for R-END-2).
	ErrorCode string
	// RetryAfter, when positive, is sent as Retry-After in whole seconds.
	RetryAfter time.Duration
	// ShouldRetry, when set, is sent as x-should-retry (R-END-2).
	ShouldRetry *bool
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

func newError(status int, code, msg string) *Error {
	return &Error{Status: status, Code: code, Message: msg}
}

// RetryAfterSeconds rounds d up to whole seconds, at least 1 (R-END-1).
func RetryAfterSeconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}
