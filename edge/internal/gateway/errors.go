package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"

	"weir.dev/routing"
)

// Response headers of ROUTING.md §6–7.
const (
	hCallID      = "X-Weir-Call-Id"
	hAttempts    = "X-Weir-Attempts"
	hProvider    = "X-Weir-Provider"
	hMember      = "X-Weir-Member"
	hError       = "X-Weir-Error"
	hOutcome     = "X-Weir-Outcome"
	hShouldRetry = "X-Should-Retry"
	hRetryAfter  = "Retry-After"
)

// codeInternal is the code of the gateway's answer to a call it could not
// serve because of its own bug (a panic recovered while serving it): 500,
// Anthropic type api_error.
const codeInternal = "weir_internal"

// internalError is the answer of a call that hit a bug in the gateway. It
// names the call id, which the log line of the panic carries too.
func internalError(callID string) *routing.Error {
	return &routing.Error{Status: http.StatusInternalServerError, Code: codeInternal,
		Message: "the gateway failed while serving this call (" + callID + "); it was logged"}
}

// attemptJSON is one attempt in the "weir" member of an error body.
type attemptJSON struct {
	Member  string `json:"member"`
	Status  int    `json:"status"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
}

type weirJSON struct {
	Provider string        `json:"provider"`
	Attempts []attemptJSON `json:"attempts"`
}

// anthropicErrorType maps a status to Anthropic's error type (ROUTING.md §6).
func anthropicErrorType(status int) string {
	switch {
	case status == 400:
		return "invalid_request_error"
	case status == 401:
		return "authentication_error"
	case status == 402:
		return "billing_error"
	case status == 403 || status == 412:
		return "permission_error"
	case status == 404:
		return "not_found_error"
	case status == 413:
		return "request_too_large"
	case status == 429:
		return "rate_limit_error"
	case status == 503 || status == 529:
		return "overloaded_error"
	case status >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}

// errorBody renders the gateway's own error in the caller's format.
func errorBody(ep routing.Endpoint, e *routing.Error, w weirJSON) []byte {
	if w.Attempts == nil {
		w.Attempts = []attemptJSON{}
	}
	var v any
	if ep.AnthropicFormat() {
		v = struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
			Weir weirJSON `json:"weir"`
		}{Type: "error", Error: struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}{anthropicErrorType(e.Status), e.Code + ": " + e.Message}, Weir: w}
	} else {
		code := e.Code
		if e.ErrorCode != "" {
			code = e.ErrorCode
		}
		v = struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Code    string  `json:"code"`
				Param   *string `json:"param"`
			} `json:"error"`
			Weir weirJSON `json:"weir"`
		}{Error: struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Code    string  `json:"code"`
			Param   *string `json:"param"`
		}{e.Message, e.Code, code, nil}, Weir: w}
	}
	b, _ := json.Marshal(v)
	return b
}

// writeError writes the gateway's own error with its headers.
func writeError(rw http.ResponseWriter, ep routing.Endpoint, e *routing.Error, w weirJSON) {
	h := rw.Header()
	h.Set("Content-Type", "application/json")
	h.Set(hError, e.Code)
	if e.RetryAfter > 0 {
		h.Set(hRetryAfter, strconv.FormatInt(routing.RetryAfterSeconds(e.RetryAfter), 10))
	}
	if e.ShouldRetry != nil {
		h.Set(hShouldRetry, strconv.FormatBool(*e.ShouldRetry))
	}
	rw.WriteHeader(e.Status)
	_, _ = rw.Write(errorBody(ep, e, w))
}

// streamErrorEvent is the error event that ends a stream that already sent
// output (R-FAIL-11), in the caller's format.
func streamErrorEvent(ep routing.Endpoint, e *routing.Error) []byte {
	if ep.AnthropicFormat() {
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": anthropicErrorType(e.Status), "message": e.Code + ": " + e.Message}})
		return append(append([]byte("event: error\ndata: "), b...), '\n', '\n')
	}
	code := e.Code
	if e.ErrorCode != "" {
		code = e.ErrorCode
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": e.Message, "type": e.Code, "code": code, "param": nil}})
	return append(append([]byte("data: "), b...), '\n', '\n')
}
