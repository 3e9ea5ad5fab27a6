package translate

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"weir.dev/routing"
)

// MaxErrorMessage bounds the message ErrorBody keeps from a member's error
// body, in bytes; a longer message is cut (on a character boundary) and
// ends with "…".
const MaxErrorMessage = 2048

// maxErrorInput bounds how much of a member's error body ErrorBody reads.
const maxErrorInput = 64 << 10

// ErrorBody rewrites a member's error answer (wire format from, HTTP status
// status, body as the member sent it) into the error shape of the caller's
// endpoint to (R-FMT-5): OpenAI's {"error":{"message","type","param","code"}}
// for chat, responses and embeddings, Anthropic's
// {"type":"error","error":{"type","message"}} for messages.
//
// The message is the member's own: error.message of an OpenAI, Anthropic or
// Google body (a Google body may come wrapped in a JSON list), the top-level
// message of an AWS (Bedrock) body, or the text of a body that is not JSON;
// at most MaxErrorMessage bytes of it. A body with no readable message gets a
// generic one naming the status. The type (and OpenAI's code) come from the
// status the way the caller's format would say it:
//   - Anthropic: the §6 table (400 invalid_request_error, 401
//     authentication_error, 402 billing_error, 403 and 412
//     permission_error, 404 not_found_error, 413 request_too_large, 429
//     rate_limit_error, 503 and 529 overloaded_error, other 5xx api_error,
//     other statuses invalid_request_error).
//   - OpenAI: 401 invalid_request_error/invalid_api_key, 403
//     request_forbidden, 429 rate_limit_error/rate_limit_exceeded, 503 and
//     529 service_unavailable_error/server_is_overloaded, other 5xx
//     server_error, other statuses invalid_request_error (code null). A
//     refusal routing reads as quota or money spent (routing.Classify's
//     KindQuotaSpent, e.g. Gemini's billing RESOURCE_EXHAUSTED or
//     Anthropic's "credit balance is too low") is type and code
//     insufficient_quota whatever its status, so that OpenAI clients end the
//     job instead of retrying (R-END-2).
//
// The result is always a valid JSON object, never nil, and at most
// 2×MaxErrorMessage+256 bytes long (control characters in the message
// become spaces, so only quotes, backslashes, newlines and tabs are escaped
// to two bytes).
func ErrorBody(from routing.WireFormat, to routing.Endpoint, status int, body []byte) []byte {
	if len(body) > maxErrorInput {
		body = body[:maxErrorInput]
	}
	msg := boundMessage(errorMessage(body))
	if msg == "" {
		msg = genericMessage(status)
	}
	var v any
	if to.AnthropicFormat() {
		type inner struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		v = struct {
			Type  string `json:"type"`
			Error inner  `json:"error"`
		}{"error", inner{anthropicType(status), msg}}
	} else {
		type inner struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		}
		typ, code := openAITypeCode(status)
		if routing.Classify(from, status, nil, body, time.Time{}).Kind == routing.KindQuotaSpent {
			typ, code = "insufficient_quota", "insufficient_quota"
		}
		e := inner{Message: msg, Type: typ}
		if code != "" {
			e.Code = &code
		}
		v = struct {
			Error inner `json:"error"`
		}{e}
	}
	out, err := marshalPlain(v)
	if err != nil { // not reached: every value is a plain string
		return []byte(`{"error":{"message":"upstream error","type":"api_error"}}`)
	}
	return out
}

// anthropicType is Anthropic's error type for status (ROUTING.md §6).
func anthropicType(status int) string {
	switch {
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
	case status >= 500 && status < 600:
		return "api_error"
	}
	return "invalid_request_error"
}

// openAITypeCode is OpenAI's error type and code for status ("" code:
// null).
func openAITypeCode(status int) (typ, code string) {
	switch {
	case status == 401:
		return "invalid_request_error", "invalid_api_key"
	case status == 403:
		return "request_forbidden", ""
	case status == 429:
		return "rate_limit_error", "rate_limit_exceeded"
	case status == 503 || status == 529:
		return "service_unavailable_error", "server_is_overloaded"
	case status >= 500 && status < 600:
		return "server_error", ""
	}
	return "invalid_request_error", ""
}

// genericMessage is the message of an error body with none.
func genericMessage(status int) string {
	if t := http.StatusText(status); t != "" {
		return "the upstream provider answered " + strconv.Itoa(status) + " " + t
	}
	return "the upstream provider answered with status " + strconv.Itoa(status)
}

// errorMessage finds the message of an error body in any member format;
// "" when it has none.
func errorMessage(body []byte) string {
	data := bytes.TrimSpace(body)
	if len(data) == 0 {
		return ""
	}
	if data[0] != '{' && data[0] != '[' {
		if !utf8.Valid(data) || looksLikeMarkup(data) {
			return "" // binary or an HTML page: the generic message says more
		}
		return string(data)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return ""
	}
	for range 4 { // a list wrapping the error: its first element
		l, ok := v.([]any)
		if !ok || len(l) == 0 {
			break
		}
		v = l[0]
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	switch e := obj["error"].(type) {
	case map[string]any:
		if m, ok := e["message"].(string); ok && m != "" {
			return m
		}
		for _, k := range []string{"status", "type", "code"} {
			if s, ok := e[k].(string); ok && s != "" {
				return s
			}
		}
	case string:
		if e != "" {
			return e
		}
	}
	for _, k := range []string{"message", "Message", "detail", "error_message"} {
		if s, ok := obj[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// looksLikeMarkup reports whether a text body is an HTML or XML page.
func looksLikeMarkup(data []byte) bool {
	return len(data) > 0 && data[0] == '<'
}

// boundMessage trims s and cuts it to MaxErrorMessage bytes on a character
// boundary. Invalid UTF-8 is replaced and control characters other than
// newline and tab become spaces, so the bound holds once encoded.
func boundMessage(s string) string {
	s = strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD"))
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	if len(s) <= MaxErrorMessage {
		return s
	}
	cut := MaxErrorMessage - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
