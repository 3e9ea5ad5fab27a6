package fakeprovider

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// googleErrBody is Google's error envelope (google.rpc.Status as JSON).
type googleErrBody struct {
	Error googleErrInner `json:"error"`
}

type googleErrInner struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []any  `json:"details,omitempty"`
}

// Type URLs of the google.rpc detail messages the fake sends.
const (
	typeErrorInfo    = "type.googleapis.com/google.rpc.ErrorInfo"
	typeQuotaFailure = "type.googleapis.com/google.rpc.QuotaFailure"
	typeRetryInfo    = "type.googleapis.com/google.rpc.RetryInfo"
	typeHelp         = "type.googleapis.com/google.rpc.Help"
)

// Quota IDs the fake's Google 429s name. QuotaPerDay is the one a caller
// reads as "spent until the day ends" (ROUTING R-HEAD-6).
const (
	QuotaPerMinute            = "GenerateRequestsPerMinutePerProjectPerModel"
	QuotaPerDay               = "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
	QuotaInputTokensPerMinute = "GenerateContentInputTokensPerModelPerMinute"
	// QuotaOutputTokensPerMinute has no real counterpart (Google limits
	// input tokens only); the fake names it when its output bucket refuses.
	QuotaOutputTokensPerMinute = "GenerateContentOutputTokensPerModelPerMinute"
)

// Messages of Google's answers that callers and tests recognise.
const (
	googleKeyInvalidMsg  = "API key not valid. Please pass a valid API key."
	googleOverloadedMsg  = "The model is overloaded. Please try again later."
	googleUnauthMsg      = "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
	googleBareExhausted  = "Resource has been exhausted (e.g. check quota)."
	googleNoCallerMsg    = "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."
	googleRateLimitsHelp = "https://ai.google.dev/gemini-api/docs/rate-limits"
)

// googleStatusName is the google.rpc.Code name Google pairs with an HTTP
// status.
func googleStatusName(status int) string {
	switch status {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 501:
		return "UNIMPLEMENTED"
	case 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

// googleDuration formats d as a google.protobuf.Duration in JSON ("20s",
// "1.5s").
func googleDuration(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

// errorInfo is a google.rpc.ErrorInfo detail.
func errorInfo(reason, domain string, metadata map[string]string) map[string]any {
	d := map[string]any{"@type": typeErrorInfo, "reason": reason, "domain": domain}
	if len(metadata) > 0 {
		d["metadata"] = metadata
	}
	return d
}

// quotaMetric names the metric a Google 429 reports for the call's flavor.
func (c *call) quotaMetric(daily bool, dim dimension) string {
	if c.route.flavor == FlavorVertex {
		switch {
		case daily:
			return "aiplatform.googleapis.com/generate_content_requests_per_day_per_project_per_base_model"
		case dim == dimRequests:
			return "aiplatform.googleapis.com/generate_content_requests_per_minute_per_project_per_base_model"
		}
		return "aiplatform.googleapis.com/generate_content_input_tokens_per_minute_per_base_model"
	}
	switch {
	case daily:
		return "generativelanguage.googleapis.com/generate_content_free_tier_requests"
	case dim == dimRequests:
		return "generativelanguage.googleapis.com/generate_content_requests"
	}
	return "generativelanguage.googleapis.com/generate_content_input_token_count"
}

// googleRateLimit returns the message and details of a Google 429: bare
// when e names neither a bucket, a wait nor a day; otherwise a QuotaFailure
// naming the quota, and a RetryInfo with the wait unless the quota is the
// day's.
func (c *call) googleRateLimit(e apiErr) (string, []any) {
	if !e.daily && !e.fromBucket && e.wait <= 0 {
		return googleBareExhausted, nil
	}
	quotaID, limit := QuotaPerMinute, e.limit
	switch {
	case e.daily:
		quotaID, limit = QuotaPerDay, 200
	case !e.fromBucket:
		limit = 15
	case e.dim == dimInput:
		quotaID = QuotaInputTokensPerMinute
	case e.dim == dimOutput:
		quotaID = QuotaOutputTokensPerMinute
	}
	metric := c.quotaMetric(e.daily, e.dim)
	msg := fmt.Sprintf("You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: %s.\n* Quota exceeded for metric: %s, limit: %d, model: %s", googleRateLimitsHelp, metric, limit, c.modelName())
	if e.wait > 0 && !e.daily {
		msg += "\nPlease retry in " + googleDuration(e.wait) + "."
	}
	details := []any{
		map[string]any{"@type": typeQuotaFailure, "violations": []any{map[string]any{
			"quotaMetric":     metric,
			"quotaId":         quotaID,
			"quotaDimensions": map[string]string{"location": "global", "model": c.modelName()},
			"quotaValue":      strconv.Itoa(limit),
		}}},
		map[string]any{"@type": typeHelp, "links": []any{map[string]string{"description": "Learn more about Gemini API quotas", "url": googleRateLimitsHelp}}},
	}
	if e.wait > 0 && !e.daily {
		details = append(details, map[string]any{"@type": typeRetryInfo, "retryDelay": googleDuration(ceilDur(e.wait, time.Millisecond))})
	}
	return msg, details
}

// googleError returns the status and body Gemini or Vertex answers for e.
// Unlike the other flavors the body repeats the status, so e.status (a
// scripted status) is settled here: Google never answers 529, so an
// overload is its 503.
func (c *call) googleError(e apiErr) (int, []byte) {
	status := e.status
	var msg string
	var details []any
	switch e.kind {
	case eBadRequest:
		status, msg = http.StatusBadRequest, "Invalid JSON payload received."
	case eUnauthorized:
		switch {
		case c.route.flavor == FlavorVertex || e.status == http.StatusUnauthorized:
			reason := "ACCESS_TOKEN_TYPE_UNSUPPORTED"
			if e.code != "" {
				reason = e.code
			}
			status, msg = http.StatusUnauthorized, googleUnauthMsg
			details = []any{errorInfo(reason, "googleapis.com", nil)}
		default:
			status, msg = http.StatusBadRequest, googleKeyInvalidMsg
			details = []any{errorInfo("API_KEY_INVALID", "googleapis.com", map[string]string{"service": "generativelanguage.googleapis.com"})}
		}
	case eForbidden:
		status, msg = http.StatusForbidden, "The caller does not have permission"
	case eNotFound:
		status, msg = http.StatusNotFound, fmt.Sprintf("models/%s is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.", c.modelName())
	case eNoRoute, eMethod:
		status, msg = http.StatusNotFound, "Requested entity was not found."
	case eTooLarge:
		status, msg = http.StatusBadRequest, fmt.Sprintf("Request payload size exceeds the limit: %d bytes.", c.s.maxBodyBytes)
	case eRateLimit:
		status = http.StatusTooManyRequests
		msg, details = c.googleRateLimit(e)
	case eQuota:
		if c.route.flavor == FlavorVertex {
			status, msg = http.StatusForbidden, "This API method requires billing to be enabled. Please enable billing on project #"+c.s.gcp.project+" by visiting https://console.developers.google.com/billing/enable?project="+c.s.gcp.project+" then retry."
			details = []any{errorInfo("BILLING_DISABLED", "googleapis.com", map[string]string{"consumer": "projects/" + c.s.gcp.project, "service": "aiplatform.googleapis.com"})}
		} else {
			status, msg = http.StatusTooManyRequests, "Your prepayment credits are depleted. Please go to AI Studio at https://ai.studio/projects to manage your project and billing."
		}
	case eServer:
		status, msg = http.StatusInternalServerError, "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
	case eBadGateway:
		status, msg = http.StatusBadGateway, "Bad Gateway"
	case eUnavailable, eOverloaded, eModelNotReady:
		status, msg = http.StatusServiceUnavailable, googleOverloadedMsg
	case eTimeout:
		status, msg = http.StatusGatewayTimeout, "Deadline expired before operation could complete."
	case eOther:
		msg = http.StatusText(status)
	}
	if status == 0 {
		status = http.StatusInternalServerError
	}
	if e.msg != "" {
		msg = e.msg
	}
	return status, mustJSON(googleErrBody{Error: googleErrInner{Code: status, Message: msg, Status: googleStatusName(status), Details: details}})
}
