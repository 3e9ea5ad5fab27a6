package fakeprovider

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// errKind is the reason of an error answer; each flavor turns it into its
// own status, type and message.
type errKind int

const (
	eBadRequest errKind = iota
	eUnauthorized
	eForbidden
	eNotFound
	eNoRoute
	eMethod
	eTooLarge
	eRateLimit
	eQuota
	eServer
	eBadGateway
	eUnavailable
	eTimeout
	eOverloaded
	eModelNotReady
	eOther
)

// kindForStatus picks the errKind whose realistic body fits a status.
func kindForStatus(status int) errKind {
	switch status {
	case 400:
		return eBadRequest
	case 401:
		return eUnauthorized
	case 403:
		return eForbidden
	case 404:
		return eNotFound
	case 405:
		return eMethod
	case 413:
		return eTooLarge
	case 429:
		return eRateLimit
	case 500:
		return eServer
	case 502:
		return eBadGateway
	case 503:
		return eUnavailable
	case 504:
		return eTimeout
	case 529:
		return eOverloaded
	}
	return eOther
}

// apiErr describes one error answer. Zero fields take the flavor's usual
// value for the kind.
type apiErr struct {
	status int
	kind   errKind
	msg    string
	// code overrides the flavor's code (OpenAI "code", Bedrock exception
	// name); "-" means none.
	code string
	// The rate-limit fields describe the bucket that refused.
	dim                    dimension
	wait                   time.Duration
	limit, used, requested int
	fromBucket             bool
	// daily marks a rate limit of a per-day allowance.
	daily bool
}

// fail writes an error answer in the call's flavor.
func (c *call) fail(e apiErr) {
	var status int
	var body []byte
	switch c.route.flavor {
	case FlavorGemini, FlavorVertex:
		// Google's bodies carry their status, so they settle it themselves.
		status, body = c.googleError(e)
		e.status = 0
	case FlavorAzure:
		status, body = c.azureError(e)
	case FlavorAnthropic:
		status, body = c.anthropicError(e)
	case FlavorBedrock:
		status, body = c.bedrockError(e)
	default:
		status, body = c.openAIError(e)
	}
	if e.status != 0 {
		status = e.status
	}
	c.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	c.writeHead(status, "application/json")
	_, _ = c.w.Write(body)
}

// modelName is the model an error message names.
func (c *call) modelName() string {
	if c.model != "" {
		return c.model
	}
	return "unknown"
}

// waitText formats a wait like OpenAI's messages do ("20s", "1.5s", "120ms").
func waitText(d time.Duration) string {
	return ceilDur(d, time.Millisecond).String()
}

// mustJSON marshals one of the package's fixed answer shapes.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only fixed shapes are marshalled
	}
	return b
}

type openAIErrBody struct {
	Error openAIErrInner `json:"error"`
}

type openAIErrInner struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    any     `json:"code"`
}

// openAIError returns the status and body OpenAI answers for e.
func (c *call) openAIError(e apiErr) (int, []byte) {
	inner := openAIErrInner{Type: "invalid_request_error"}
	status := http.StatusBadRequest
	code := any(nil)
	switch e.kind {
	case eBadRequest:
		inner.Message = "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"
	case eUnauthorized:
		status, code = http.StatusUnauthorized, "invalid_api_key"
		inner.Message = "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys."
	case eForbidden:
		status, code = http.StatusForbidden, "model_not_found"
		inner.Message = fmt.Sprintf("Project `proj_fakeprovider` does not have access to model `%s`", c.modelName())
	case eNotFound:
		status, code = http.StatusNotFound, "model_not_found"
		inner.Message = fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", c.modelName())
	case eNoRoute:
		status = http.StatusNotFound
		inner.Message = fmt.Sprintf("Invalid URL (%s %s)", c.r.Method, c.r.URL.Path)
	case eMethod:
		status = http.StatusMethodNotAllowed
		inner.Message = fmt.Sprintf("Invalid method for URL (%s %s)", c.r.Method, c.r.URL.Path)
	case eTooLarge:
		status = http.StatusRequestEntityTooLarge
		inner.Message = "Request too large."
	case eRateLimit:
		status, code = http.StatusTooManyRequests, "rate_limit_exceeded"
		inner.Type = "requests"
		unit := "requests per min (RPM)"
		if e.dim != dimRequests {
			inner.Type, unit = "tokens", "tokens per min (TPM)"
		}
		limit, used, req := e.limit, e.used, e.requested
		if !e.fromBucket {
			limit, used, req = 60, 60, 1
		}
		if e.daily {
			unit = "requests per day (RPD)"
			limit, used, req = 10000, 10000, 1
		}
		inner.Message = fmt.Sprintf("Rate limit reached for %s in organization org-fakeprovider on %s: Limit %d, Used %d, Requested %d.", c.modelName(), unit, limit, used, req)
		if e.wait > 0 {
			inner.Message += " Please try again in " + waitText(e.wait) + "."
		}
		inner.Message += " Visit https://platform.openai.com/account/rate-limits to learn more."
	case eQuota:
		status, code = http.StatusTooManyRequests, "insufficient_quota"
		inner.Type = "insufficient_quota"
		inner.Message = "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."
	case eServer:
		status, inner.Type = http.StatusInternalServerError, "server_error"
		inner.Message = "The server had an error while processing your request. Sorry about that!"
	case eBadGateway:
		status, code, inner.Type = http.StatusBadGateway, 502, "cf_bad_gateway"
		inner.Message = "Bad gateway."
	case eUnavailable, eModelNotReady:
		status, inner.Type = http.StatusServiceUnavailable, "server_error"
		inner.Message = "The server is overloaded or not ready yet."
	case eTimeout:
		status, code, inner.Type = http.StatusGatewayTimeout, 504, "cf_gateway_timeout"
		inner.Message = "Gateway timeout."
	case eOverloaded:
		status, inner.Type = 529, "server_error"
		inner.Message = "The server is overloaded."
	case eOther:
		status = e.status
		if status >= 500 {
			inner.Type = "server_error"
		}
		inner.Message = http.StatusText(status)
	}
	if e.msg != "" {
		inner.Message = e.msg
	}
	switch e.code {
	case "":
	case "-":
		code = nil
	default:
		code = e.code
	}
	inner.Code = code
	return status, mustJSON(openAIErrBody{Error: inner})
}

type azureErrBody struct {
	Error azureErrInner `json:"error"`
}

type azureErrInner struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// azureOperation names the operation in Azure's rate-limit messages.
func (c *call) azureOperation() string {
	switch c.route.op {
	case opEmbeddings:
		return "Embeddings_Create"
	case opResponses:
		return "Responses_Create"
	}
	return "ChatCompletions_Create"
}

// azureError returns the status and body Azure OpenAI answers for e.
func (c *call) azureError(e apiErr) (int, []byte) {
	var status int
	var inner azureErrInner
	switch e.kind {
	case eBadRequest:
		// Request validation comes from the model service, in OpenAI's shape.
		return c.openAIError(e)
	case eUnauthorized:
		status, inner = http.StatusUnauthorized, azureErrInner{"401", "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}
	case eForbidden:
		status, inner = http.StatusForbidden, azureErrInner{"PermissionDenied", "The principal does not have permission to perform this operation on the deployment."}
	case eNotFound:
		status, inner = http.StatusNotFound, azureErrInner{"DeploymentNotFound", "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}
	case eNoRoute:
		status, inner = http.StatusNotFound, azureErrInner{"404", "Resource not found"}
	case eMethod:
		status, inner = http.StatusMethodNotAllowed, azureErrInner{"405", "Method not allowed"}
	case eTooLarge:
		status, inner = http.StatusRequestEntityTooLarge, azureErrInner{"413", "Request entity too large"}
	case eRateLimit:
		version := c.r.URL.Query().Get("api-version")
		if version == "" {
			version = "v1"
		}
		kind := "call"
		if e.dim != dimRequests {
			kind = "token"
		}
		if e.daily {
			kind = "per-day call"
		}
		msg := fmt.Sprintf("Requests to the %s Operation under Azure OpenAI API version %s have exceeded %s rate limit of your current OpenAI S0 pricing tier.", c.azureOperation(), version, kind)
		if e.wait > 0 {
			msg += fmt.Sprintf(" Please retry after %s seconds.", retryAfterSeconds(e.wait))
		}
		msg += " Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit."
		status, inner = http.StatusTooManyRequests, azureErrInner{"429", msg}
	case eQuota:
		status, inner = http.StatusTooManyRequests, azureErrInner{"insufficient_quota", "You exceeded your current quota, please check your plan and billing details."}
	case eServer:
		status, inner = http.StatusInternalServerError, azureErrInner{"InternalServerError", "The server had an error while processing your request. Sorry about that!"}
	case eBadGateway:
		status, inner = http.StatusBadGateway, azureErrInner{"502", "Bad gateway."}
	case eUnavailable, eModelNotReady:
		status, inner = http.StatusServiceUnavailable, azureErrInner{"ServiceUnavailable", "The service is temporarily unable to process your request. Please try again later."}
	case eTimeout:
		status, inner = http.StatusGatewayTimeout, azureErrInner{"Timeout", "The operation was timeout."}
	case eOverloaded:
		status, inner = 529, azureErrInner{"ServiceUnavailable", "The service is temporarily unable to process your request. Please try again later."}
	case eOther:
		status, inner = e.status, azureErrInner{strconv.Itoa(e.status), http.StatusText(e.status)}
	}
	if e.msg != "" {
		inner.Message = e.msg
	}
	return status, mustJSON(azureErrBody{Error: inner})
}

type anthropicErrBody struct {
	Type      string            `json:"type"`
	Error     anthropicErrInner `json:"error"`
	RequestID string            `json:"request_id,omitempty"`
}

type anthropicErrInner struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// anthropicErrorObject returns the error object Anthropic sends, also as a
// stream's error event.
func anthropicErrorObject(typ, msg, reqID string) []byte {
	return mustJSON(anthropicErrBody{Type: "error", Error: anthropicErrInner{typ, msg}, RequestID: reqID})
}

// anthropicError returns the status and body Anthropic answers for e.
func (c *call) anthropicError(e apiErr) (int, []byte) {
	var status int
	var inner anthropicErrInner
	switch e.kind {
	case eBadRequest:
		status, inner = http.StatusBadRequest, anthropicErrInner{"invalid_request_error", "invalid request body"}
	case eUnauthorized:
		status, inner = http.StatusUnauthorized, anthropicErrInner{"authentication_error", "invalid x-api-key"}
	case eForbidden:
		status, inner = http.StatusForbidden, anthropicErrInner{"permission_error", "Your API key does not have permission to use the specified resource."}
	case eNotFound:
		status, inner = http.StatusNotFound, anthropicErrInner{"not_found_error", "model: " + c.modelName()}
	case eNoRoute:
		status, inner = http.StatusNotFound, anthropicErrInner{"not_found_error", "Not Found"}
	case eMethod:
		status, inner = http.StatusMethodNotAllowed, anthropicErrInner{"invalid_request_error", "Method Not Allowed"}
	case eTooLarge:
		status, inner = http.StatusRequestEntityTooLarge, anthropicErrInner{"request_too_large", "Request exceeds the maximum allowed number of bytes."}
	case eRateLimit:
		unit := "requests"
		switch e.dim {
		case dimInput:
			unit = "input tokens"
		case dimOutput:
			unit = "output tokens"
		}
		limit, per := e.limit, "minute"
		if !e.fromBucket {
			limit = 50
		}
		if e.daily {
			limit, per = 10000, "day"
		}
		status, inner = http.StatusTooManyRequests, anthropicErrInner{"rate_limit_error", fmt.Sprintf("This request would exceed the rate limit for your organization (00000000-0000-0000-0000-000000000000) of %d %s per %s. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase.", limit, unit, per)}
	case eQuota:
		status, inner = http.StatusBadRequest, anthropicErrInner{"invalid_request_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}
	case eServer:
		status, inner = http.StatusInternalServerError, anthropicErrInner{"api_error", "Internal server error"}
	case eBadGateway:
		status, inner = http.StatusBadGateway, anthropicErrInner{"api_error", "Bad gateway"}
	case eUnavailable, eModelNotReady:
		status, inner = http.StatusServiceUnavailable, anthropicErrInner{"api_error", "Service unavailable"}
	case eTimeout:
		status, inner = http.StatusGatewayTimeout, anthropicErrInner{"timeout_error", "Request timeout"}
	case eOverloaded:
		status, inner = 529, anthropicErrInner{"overloaded_error", "Overloaded"}
	case eOther:
		typ := "invalid_request_error"
		if e.status >= 500 {
			typ = "api_error"
		}
		status, inner = e.status, anthropicErrInner{typ, http.StatusText(e.status)}
	}
	if e.msg != "" {
		inner.Message = e.msg
	}
	return status, mustJSON(anthropicErrBody{Type: "error", Error: inner, RequestID: c.reqID})
}

// Suffixes of Bedrock's x-amzn-ErrorType header.
const (
	awsBedrockNS = ":http://internal.amazon.com/coral/com.amazon.bedrock/"
	awsCoralNS   = ":http://internal.amazon.com/coral/com.amazon.coral.service/"
)

// bedrockError returns the status and body Bedrock answers for e and sets
// its x-amzn-ErrorType header.
func (c *call) bedrockError(e apiErr) (int, []byte) {
	var status int
	var typ, ns, msg string
	ns = awsBedrockNS
	switch e.kind {
	case eBadRequest:
		status, typ, msg = http.StatusBadRequest, "ValidationException", "Malformed input request, please reformat your input and try again."
	case eUnauthorized:
		status, typ, ns, msg = http.StatusForbidden, "UnrecognizedClientException", awsCoralNS, "The security token included in the request is invalid."
	case eForbidden:
		status, typ, msg = http.StatusForbidden, "AccessDeniedException", "You don't have access to the model with the specified model ID."
	case eNotFound:
		status, typ, msg = http.StatusNotFound, "ResourceNotFoundException", "Could not resolve the foundation model from the provided model identifier."
	case eNoRoute, eMethod:
		status, typ, ns, msg = http.StatusNotFound, "UnknownOperationException", awsCoralNS, ""
	case eTooLarge:
		status, typ, msg = http.StatusRequestEntityTooLarge, "ValidationException", "Request body is too large."
	case eRateLimit:
		status, typ, msg = http.StatusTooManyRequests, "ThrottlingException", "Too many requests, please wait before trying again."
		if e.dim != dimRequests {
			msg = "Too many tokens, please wait before trying again."
		}
		if e.daily {
			msg = "Too many tokens per day, please wait before trying again."
		}
	case eQuota:
		status, typ, msg = http.StatusBadRequest, "ServiceQuotaExceededException", "Your request exceeds the service quota for your account. You can view your quotas at Viewing service quotas. You can resubmit your request later."
	case eServer:
		status, typ, msg = http.StatusInternalServerError, "InternalServerException", "The server encountered an internal error while processing the request."
	case eBadGateway:
		status, typ, msg = http.StatusBadGateway, "", "Bad Gateway"
	case eUnavailable, eOverloaded:
		status, typ, msg = http.StatusServiceUnavailable, "ServiceUnavailableException", "Bedrock is unable to process your request."
	case eModelNotReady:
		status, typ, msg = http.StatusTooManyRequests, "ModelNotReadyException", "Model is not ready to serve inference requests. The AWS SDK will automatically retry the operation up to 5 times. For information about configuring automatic retries, see Retry behavior in the AWS SDKs and Tools reference guide."
	case eTimeout:
		status, typ, msg = http.StatusGatewayTimeout, "", "Gateway Timeout"
	case eOther:
		status, typ, msg = e.status, "ValidationException", http.StatusText(e.status)
		if e.status >= 500 {
			typ = "InternalServerException"
		}
	}
	switch e.code {
	case "":
	case "-":
		typ = ""
	default:
		typ = e.code
	}
	if e.msg != "" {
		msg = e.msg
	}
	if typ != "" {
		c.w.Header().Set("x-amzn-ErrorType", typ+ns)
	}
	if msg == "" {
		return status, []byte("{}")
	}
	return status, mustJSON(struct {
		Message string `json:"message"`
	}{msg})
}
