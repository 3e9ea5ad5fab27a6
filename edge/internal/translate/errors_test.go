package translate

import (
	"encoding/json"
	"strings"
	"testing"

	"weir.dev/routing"
)

type openAIErr struct {
	Error *struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    *string `json:"code"`
		Param   *string `json:"param"`
	} `json:"error"`
}

type anthropicErr struct {
	Type  string `json:"type"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestErrorBody_RFMT5: a member's error body in any format is rewritten
// into the caller's error shape, keeping the member's message, with the
// type (and OpenAI's code) the caller's format gives the status.
func TestErrorBody_RFMT5(t *testing.T) {
	tests := []struct {
		name     string
		from     routing.WireFormat
		to       routing.Endpoint
		status   int
		body     string
		msg      string
		typ      string
		code     string // OpenAI shape only; "" is null
		anthType string
	}{
		{
			name: "anthropic overloaded to chat", from: routing.WireAnthropic, to: routing.EndpointChatCompletions, status: 529,
			body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`,
			msg:  "Overloaded", typ: "service_unavailable_error", code: "server_is_overloaded",
		},
		{
			name: "anthropic rate limit to responses", from: routing.WireAnthropic, to: routing.EndpointResponses, status: 429,
			body: `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization (b1d3) of 50,000 input tokens per minute."}}`,
			msg:  "This request would exceed the rate limit for your organization (b1d3) of 50,000 input tokens per minute.", typ: "rate_limit_error", code: "rate_limit_exceeded",
		},
		{
			name: "anthropic credit balance to chat is insufficient_quota (R-END-2)", from: routing.WireAnthropic, to: routing.EndpointChatCompletions, status: 400,
			body: `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}`,
			msg:  "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.", typ: "insufficient_quota", code: "insufficient_quota",
		},
		{
			name: "anthropic bad request to chat", from: routing.WireAnthropic, to: routing.EndpointChatCompletions, status: 400,
			body: `{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0.tool_result: unexpected tool_use_id"}}`,
			msg:  "messages.1.content.0.tool_result: unexpected tool_use_id", typ: "invalid_request_error",
		},
		{
			name: "bedrock AWS body to chat", from: routing.WireBedrock, to: routing.EndpointChatCompletions, status: 403,
			body: `{"message":"You don't have access to the model with the specified model ID."}`,
			msg:  "You don't have access to the model with the specified model ID.", typ: "request_forbidden",
		},
		{
			name: "bedrock throttling to embeddings", from: routing.WireBedrock, to: routing.EndpointEmbeddings, status: 429,
			body: `{"message":"Too many requests, please wait before trying again."}`,
			msg:  "Too many requests, please wait before trying again.", typ: "rate_limit_error", code: "rate_limit_exceeded",
		},
		{
			name: "gemini wrapped in a list to chat", from: routing.WireGemini, to: routing.EndpointChatCompletions, status: 400,
			body: `[{"error":{"code":400,"message":"Please use a valid role: user, model.","status":"INVALID_ARGUMENT"}}]`,
			msg:  "Please use a valid role: user, model.", typ: "invalid_request_error",
		},
		{
			name: "gemini unavailable to chat", from: routing.WireGemini, to: routing.EndpointChatCompletions, status: 503,
			body: `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`,
			msg:  "The model is overloaded. Please try again later.", typ: "service_unavailable_error", code: "server_is_overloaded",
		},
		{
			name: "gemini per-minute quota to chat stays a rate limit", from: routing.WireGemini, to: routing.EndpointChatCompletions, status: 429,
			body: `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"17s"}]}}`,
			msg:  "You exceeded your current quota, please check your plan and billing details.", typ: "rate_limit_error", code: "rate_limit_exceeded",
		},
		{
			name: "gemini quota with no window to chat is insufficient_quota (R-END-2)", from: routing.WireGemini, to: routing.EndpointChatCompletions, status: 429,
			body: `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED"}}`,
			msg:  "You exceeded your current quota, please check your plan and billing details.", typ: "insufficient_quota", code: "insufficient_quota",
		},
		{
			name: "gemini permission to messages", from: routing.WireGemini, to: routing.EndpointMessages, status: 403,
			body:     `{"error":{"code":403,"message":"Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.","status":"PERMISSION_DENIED"}}`,
			msg:      "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
			anthType: "permission_error",
		},
		{
			name: "gemini not found to messages", from: routing.WireGemini, to: routing.EndpointMessages, status: 404,
			body: `{"error":{"code":404,"message":"models/gemini-9 is not found for API version v1beta, or is not supported for generateContent.","status":"NOT_FOUND"}}`,
			msg:  "models/gemini-9 is not found for API version v1beta, or is not supported for generateContent.", anthType: "not_found_error",
		},
		{
			name: "openai rate limit to messages", from: routing.WireOpenAI, to: routing.EndpointMessages, status: 429,
			body: `{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29000, Requested 1500.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			msg:  "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29000, Requested 1500.", anthType: "rate_limit_error",
		},
		{
			name: "openai invalid key to messages", from: routing.WireOpenAI, to: routing.EndpointMessages, status: 401,
			body: `{"error":{"message":"Incorrect API key provided: sk-abc***xyz. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			msg:  "Incorrect API key provided: sk-abc***xyz. You can find your API key at https://platform.openai.com/account/api-keys.", anthType: "authentication_error",
		},
		{
			name: "openai server error to messages", from: routing.WireOpenAI, to: routing.EndpointMessages, status: 500,
			body: `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`,
			msg:  "The server had an error while processing your request. Sorry about that!", anthType: "api_error",
		},
		{
			name: "openai too large to messages", from: routing.WireOpenAI, to: routing.EndpointMessages, status: 413,
			body: `{"error":{"message":"Request too large.","type":"invalid_request_error"}}`,
			msg:  "Request too large.", anthType: "request_too_large",
		},
		{
			name: "plain text to chat", from: routing.WireOpenAI, to: routing.EndpointResponses, status: 502,
			body: "upstream connect error or disconnect/reset before headers. reset reason: connection termination",
			msg:  "upstream connect error or disconnect/reset before headers. reset reason: connection termination", typ: "server_error",
		},
		{
			name: "HTML page gets the generic message", from: routing.WireGemini, to: routing.EndpointMessages, status: 502,
			body: "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
			msg:  "the upstream provider answered 502 Bad Gateway", anthType: "api_error",
		},
		{
			name: "empty body gets the generic message", from: routing.WireAnthropic, to: routing.EndpointChatCompletions, status: 404,
			msg: "the upstream provider answered 404 Not Found", typ: "invalid_request_error",
		},
		{
			name: "truncated JSON gets the generic message", from: routing.WireGemini, to: routing.EndpointChatCompletions, status: 500,
			body: `{"error":{"code":500,"message":"Internal`,
			msg:  "the upstream provider answered 500 Internal Server Error", typ: "server_error",
		},
		{
			name: "odd status", from: routing.WireGemini, to: routing.EndpointMessages, status: 799,
			body: `{}`, msg: "the upstream provider answered with status 799", anthType: "invalid_request_error",
		},
		{
			name: "google status when no message", from: routing.WireGemini, to: routing.EndpointChatCompletions, status: 504,
			body: `{"error":{"code":504,"status":"DEADLINE_EXCEEDED"}}`, msg: "DEADLINE_EXCEEDED", typ: "server_error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := ErrorBody(tt.from, tt.to, tt.status, []byte(tt.body))
			if tt.to == routing.EndpointMessages {
				var e anthropicErr
				if err := json.Unmarshal(out, &e); err != nil || e.Error == nil {
					t.Fatalf("not Anthropic's shape: %s (%v)", out, err)
				}
				if e.Type != "error" || e.Error.Type != tt.anthType || e.Error.Message != tt.msg {
					t.Errorf("got %s", out)
				}
				return
			}
			var e openAIErr
			if err := json.Unmarshal(out, &e); err != nil || e.Error == nil {
				t.Fatalf("not OpenAI's shape: %s (%v)", out, err)
			}
			code := ""
			if e.Error.Code != nil {
				code = *e.Error.Code
			}
			if e.Error.Message != tt.msg || e.Error.Type != tt.typ || code != tt.code || e.Error.Param != nil {
				t.Errorf("got %s", out)
			}
			if !strings.Contains(string(out), `"param":null`) || !strings.Contains(string(out), `"code":`) {
				t.Errorf("param and code must be present: %s", out)
			}
		})
	}
}

// TestErrorBodyBounded_RFMT5: a huge message is cut on a character
// boundary, control characters do not blow up the encoding, and the result
// stays within the documented bound.
func TestErrorBodyBounded_RFMT5(t *testing.T) {
	long := strings.Repeat("é\x01\"", 5000)
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": long}})
	for _, to := range []routing.Endpoint{routing.EndpointChatCompletions, routing.EndpointMessages} {
		out := ErrorBody(routing.WireGemini, to, 400, body)
		if len(out) > 2*MaxErrorMessage+256 {
			t.Errorf("%v: %d bytes", to, len(out))
		}
		var v struct {
			Error struct{ Message string } `json:"error"`
		}
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%v: %v", to, err)
		}
		if len(v.Error.Message) > MaxErrorMessage || !strings.HasSuffix(v.Error.Message, "…") || !strings.HasPrefix(v.Error.Message, "é \"é") {
			t.Errorf("%v: message %q…", to, v.Error.Message[:20])
		}
	}
	raw := []byte(strings.Repeat("x", 1<<20))
	if out := ErrorBody(routing.WireOpenAI, routing.EndpointMessages, 500, raw); len(out) > 2*MaxErrorMessage+256 {
		t.Errorf("plain text: %d bytes", len(out))
	}
}
