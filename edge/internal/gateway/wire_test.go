package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"weir.dev/edge/internal/fakeprovider"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

func TestOpenAIFormat(t *testing.T) {
	t.Parallel()
	sp := pool(t, "a")
	sp.models = append(sp.models, &configv1.Model{Name: "embed-x", Kind: configv1.ModelKind_MODEL_KIND_EMBEDDINGS})
	sp.members[0].edit = func(m *configv1.Member) { m.ModelMap = map[string]string{"gpt-x": "gpt-4o-mini"} }
	h := newHarness(t, sp)
	h.fakes["a"].SetCache(3, 0)

	t.Run("non-streaming chat: model map, provider key, usage recorded", func(t *testing.T) {
		res := h.post("/v1/chat/completions", chatBody)
		if res.status != 200 || !strings.Contains(string(res.body), `"choices"`) {
			t.Fatalf("%d %s", res.status, res.body)
		}
		last, _ := h.fakes["a"].LastRequest()
		if last.Model != "gpt-4o-mini" || last.Header.Get("Authorization") != "Bearer "+providerKey {
			t.Fatalf("upstream saw model %q auth %q", last.Model, last.Header.Get("Authorization"))
		}
		if strings.Contains(string(res.body), providerKey) || strings.Contains(res.header.Get("Authorization"), providerKey) {
			t.Fatal("provider key leaked to the caller")
		}
	})
	t.Run("streaming chat: every event relayed, usage captured, usage chunk hidden when not asked", func(t *testing.T) {
		n := len(h.sink.Records())
		res := h.post("/v1/chat/completions", `{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		_, data := sseEvents(res.body)
		if res.status != 200 || res.header.Get("Content-Type") != "text/event-stream" || len(data) < 3 || data[len(data)-1] != "[DONE]" {
			t.Fatalf("%d %s", res.status, res.body)
		}
		for _, d := range data {
			if strings.Contains(d, `"usage":{`) {
				t.Fatalf("caller got a usage chunk it did not ask for: %s", d)
			}
		}
		last, _ := h.fakes["a"].LastRequest()
		if !strings.Contains(string(last.Body), `"include_usage":true`) {
			t.Fatalf("edge did not ask for usage: %s", last.Body)
		}
		rec := h.record(n + 1)
		if rec.Usage.GetOutputTokens() == 0 || rec.Usage.GetCacheReadTokens() != 3 {
			t.Fatalf("usage %+v", rec.Usage)
		}
	})
	t.Run("streaming chat with include_usage keeps the usage chunk", func(t *testing.T) {
		res := h.post("/v1/chat/completions", `{"model":"gpt-x","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
		if !strings.Contains(string(res.body), `"usage":{`) {
			t.Fatalf("usage chunk missing: %s", res.body)
		}
	})
	t.Run("embeddings keep encoding_format base64", func(t *testing.T) {
		res := h.post("/v1/embeddings", `{"model":"embed-x","input":"hello","encoding_format":"base64"}`)
		if res.status != 200 {
			t.Fatalf("%d %s", res.status, res.body)
		}
		last, _ := h.fakes["a"].LastRequest()
		if !strings.Contains(string(last.Body), `"encoding_format":"base64"`) {
			t.Fatalf("option dropped: %s", last.Body)
		}
		var e struct {
			Data []struct {
				Embedding json.RawMessage `json:"embedding"`
			} `json:"data"`
		}
		if json.Unmarshal(res.body, &e) != nil || len(e.Data) != 1 || e.Data[0].Embedding[0] != '"' {
			t.Fatalf("embedding not base64: %s", res.body)
		}
	})
	t.Run("responses API through the pool", func(t *testing.T) {
		n := len(h.sink.Records())
		res := h.post("/v1/responses", `{"model":"gpt-x","input":"hi"}`)
		if res.status != 200 || res.header.Get("X-Weir-Member") != "a" {
			t.Fatalf("%d %s", res.status, res.body)
		}
		if rec := h.record(n + 1); rec.Usage.GetOutputTokens() == 0 {
			t.Fatalf("responses usage %+v", rec.Usage)
		}
		res = h.post("/v1/responses", `{"model":"gpt-x","input":"hi","stream":true}`)
		if names, _ := sseEvents(res.body); res.status != 200 || len(names) == 0 || names[len(names)-1] != "response.completed" {
			t.Fatalf("responses stream %d %s", res.status, res.body)
		}
	})
	t.Run("R-MODEL-2 embeddings model through chat is wrong_endpoint_for_model", func(t *testing.T) {
		res := h.post("/v1/chat/completions", `{"model":"embed-x","messages":[]}`)
		if res.status != 400 || res.header.Get("X-Weir-Error") != "wrong_endpoint_for_model" {
			t.Fatalf("%d %s", res.status, res.body)
		}
	})
	t.Run("R-MODEL-6 models list", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, h.url+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+callerKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var l struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		b, _ := io.ReadAll(resp.Body)
		if json.Unmarshal(b, &l) != nil || len(l.Data) != 2 || l.Data[0].ID != "embed-x" || l.Data[1].ID != "gpt-x" {
			t.Fatalf("models %s", b)
		}
	})
}

func TestAzureFormat(t *testing.T) {
	t.Parallel()
	fake := newFake(t, fakeprovider.Options{Flavor: fakeprovider.FlavorAzure})
	sp := recordSpec{name: "azure-eu", wire: configv1.WireFormat_WIRE_FORMAT_OPENAI, models: []*configv1.Model{chatModel("gpt-x")},
		auth:    &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "api-key"},
		members: []fakeMember{{name: "sweden", fake: fake, edit: func(m *configv1.Member) { m.ModelMap = map[string]string{"gpt-x": "my-deployment"} }}},
		edit: func(r *configv1.ProviderRecord) {
			r.ApiVersion = "2024-10-21"
			r.Members[0].BaseUrl = fake.URL() + "/openai"
		}}
	h := newHarness(t, sp)
	res := h.post("/v1/chat/completions", chatBody)
	if res.status != 200 {
		t.Fatalf("%d %s", res.status, res.body)
	}
	last, _ := fake.LastRequest()
	if last.Path != "/openai/deployments/my-deployment/chat/completions" || last.RawQuery != "api-version=2024-10-21" || last.Header.Get("Api-Key") != providerKey {
		t.Fatalf("azure request %s?%s api-key=%q", last.Path, last.RawQuery, last.Header.Get("Api-Key"))
	}
	if last.Header.Get("Authorization") != "" {
		t.Fatal("azure request carried an Authorization header")
	}
}

const messagesBody = `{"model":"claude-x","max_tokens":50,"messages":[{"role":"user","content":"hello"}]}`

func TestAnthropicFormat(t *testing.T) {
	t.Parallel()
	fake := newFake(t, fakeprovider.Options{Flavor: fakeprovider.FlavorAnthropic, CachedTokens: 5, CacheCreationTokens: 2})
	sp := recordSpec{name: "claude", wire: configv1.WireFormat_WIRE_FORMAT_ANTHROPIC, models: []*configv1.Model{chatModel("claude-x")},
		members: []fakeMember{{name: "primary", fake: fake}}}
	h := newHarness(t, sp)
	res := h.post("/v1/messages", messagesBody, "Anthropic-Beta", "prompt-caching-2024-07-31")
	if res.status != 200 || !strings.Contains(string(res.body), `"type":"message"`) {
		t.Fatalf("%d %s", res.status, res.body)
	}
	last, _ := fake.LastRequest()
	if last.Header.Get("X-Api-Key") != providerKey || last.Header.Get("Anthropic-Version") == "" || last.Header.Get("Anthropic-Beta") != "prompt-caching-2024-07-31" {
		t.Fatalf("anthropic request headers %v", last.Header)
	}
	rec := h.record(1)
	if rec.Usage.GetCacheReadTokens() != 5 || rec.Usage.GetCacheWriteTokens() != 2 || rec.Usage.GetOutputTokens() == 0 {
		t.Fatalf("usage %+v", rec.Usage)
	}
	res = h.post("/v1/messages", `{"model":"claude-x","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hello"}]}`)
	names, _ := sseEvents(res.body)
	if res.status != 200 || len(names) < 4 || names[0] != "message_start" || names[len(names)-1] != "message_stop" {
		t.Fatalf("%d %v", res.status, names)
	}
	if rec := h.record(2); rec.Usage.GetOutputTokens() == 0 || rec.Usage.GetCacheReadTokens() != 5 {
		t.Fatalf("stream usage %+v", rec.Usage)
	}
	t.Run("R-FAIL-11 Anthropic error event on a cut stream", func(t *testing.T) {
		fake.Enqueue(fakeprovider.CutAfter(2))
		res := h.post("/v1/messages", `{"model":"claude-x","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hello"}]}`)
		names, data := sseEvents(res.body)
		if names[len(names)-1] != "error" || !strings.Contains(data[len(data)-1], `"type":"error"`) {
			t.Fatalf("%v %s", names, res.body)
		}
	})
}

func TestBedrockFormat(t *testing.T) {
	t.Parallel()
	fake := newFake(t, fakeprovider.Options{Flavor: fakeprovider.FlavorBedrock, AWSSecretAccessKey: awsSecret})
	sp := recordSpec{name: "bedrock-eu", wire: configv1.WireFormat_WIRE_FORMAT_BEDROCK, models: []*configv1.Model{chatModel("claude-x")},
		members: []fakeMember{{name: "stockholm", fake: fake, edit: func(m *configv1.Member) {
			m.ModelMap = map[string]string{"claude-x": "eu.anthropic.claude-x-v1:0"}
		}}}}
	h := newHarness(t, sp)
	res := h.post("/v1/messages", messagesBody)
	if res.status != 200 || !strings.Contains(string(res.body), `"content"`) {
		t.Fatalf("%d %s", res.status, res.body)
	}
	last, _ := fake.LastRequest()
	if last.Path != "/model/eu.anthropic.claude-x-v1:0/invoke" || !strings.HasPrefix(last.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential="+awsID+"/") {
		t.Fatalf("bedrock request %s auth %q", last.Path, last.Header.Get("Authorization"))
	}
	var body map[string]any
	_ = json.Unmarshal(last.Body, &body)
	if body["anthropic_version"] != "bedrock-2023-05-31" || body["model"] != nil {
		t.Fatalf("bedrock body %s", last.Body)
	}
	res = h.post("/v1/messages", `{"model":"claude-x","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hello"}]}`)
	names, _ := sseEvents(res.body)
	if res.status != 200 || res.header.Get("Content-Type") != "text/event-stream" || len(names) < 4 || names[0] != "message_start" || names[len(names)-1] != "message_stop" {
		t.Fatalf("%d %v %s", res.status, names, res.body)
	}
	if rec := h.record(2); rec.Usage.GetOutputTokens() == 0 || rec.Usage.GetInputTokens() == 0 {
		t.Fatalf("bedrock stream usage %+v", rec.Usage)
	}
	t.Run("R-FAIL-2 ThrottlingException cools the member", func(t *testing.T) {
		fake.Enqueue(fakeprovider.Status(429))
		res := h.post("/v1/messages", messagesBody)
		if res.status != 429 || res.header.Get("X-Weir-Error") != "weir_pool_cooling" {
			t.Fatalf("%d %s", res.status, res.body)
		}
	})
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, pool(t, "a"))
	big := `{"model":"gpt-x","x":"` + strings.Repeat("a", 33<<20) + `"}`
	tests := []struct {
		name, path, body string
		hdr              []string
		status           int
		code             string
	}{
		{"unknown key", "/v1/chat/completions", chatBody, []string{"Authorization", "Bearer nope"}, 401, "invalid_api_key"},
		{"no key", "/v1/chat/completions", chatBody, []string{"Authorization", ""}, 401, "invalid_api_key"},
		{"x-api-key works", "/v1/chat/completions", chatBody, []string{"Authorization", "", "X-Api-Key", callerKey}, 200, ""},
		{"bad json", "/v1/chat/completions", `{"model":`, nil, 400, "invalid_request"},
		{"not an object", "/v1/chat/completions", `[1,2]`, nil, 400, "invalid_request"},
		{"wrong type", "/v1/chat/completions", `{"model":5}`, nil, 400, "invalid_request"},
		{"no model", "/v1/chat/completions", `{"messages":[]}`, nil, 400, "invalid_request"},
		{"R-ELIG-3 malformed x-weir-regions", "/v1/chat/completions", chatBody, []string{"X-Weir-Regions", "eu west"}, 400, "invalid_request"},
		{"R-ELIG-3 regions leave no member", "/v1/chat/completions", chatBody, []string{"X-Weir-Regions", "eu-west"}, 400, "weir_no_route"},
		{"R-MODEL-2 unknown model", "/v1/chat/completions", `{"model":"nope"}`, nil, 404, "model_not_available"},
		{"unknown path", "/v2/whatever", chatBody, nil, 404, "invalid_request"},
		{"too large", "/v1/chat/completions", big, nil, 413, "invalid_request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := h.post(tc.path, tc.body, tc.hdr...)
			if res.status != tc.status || res.header.Get("X-Weir-Error") != tc.code || res.header.Get("X-Weir-Call-Id") == "" {
				t.Fatalf("%d %q %s", res.status, res.header.Get("X-Weir-Error"), res.body)
			}
			if tc.code != "" {
				if e := decodeErr(t, res.body); e.Error.Type != tc.code {
					t.Fatalf("body %s", res.body)
				}
			}
		})
	}
}

// TestBedrockStreamSDKBody is issue 11's regression: the SDKs put model and
// stream last (`…,"model":"…","stream":true}`), the bedrock adapter deletes
// both, and EditTop used to panic on the two adjacent deletions, so the
// caller got EOF. The stream must go through, to invoke-with-response-stream,
// with neither member in the body Bedrock gets (Bedrock takes both from
// the path).
func TestBedrockStreamSDKBody(t *testing.T) {
	t.Parallel()
	fake := newFake(t, fakeprovider.Options{Flavor: fakeprovider.FlavorBedrock, AWSSecretAccessKey: awsSecret})
	sp := recordSpec{name: "bedrock-eu", wire: configv1.WireFormat_WIRE_FORMAT_BEDROCK, models: []*configv1.Model{chatModel("claude-x")},
		members: []fakeMember{{name: "stockholm", fake: fake, edit: func(m *configv1.Member) {
			m.ModelMap = map[string]string{"claude-x": "eu.anthropic.claude-x-v1:0"}
		}}}}
	h := newHarness(t, sp)
	res := h.post("/v1/messages", `{"max_tokens":50,"messages":[{"role":"user","content":"hello"}],"model":"claude-x","stream":true}`)
	names, _ := sseEvents(res.body)
	if res.status != 200 || len(names) < 4 || names[0] != "message_start" || names[len(names)-1] != "message_stop" {
		t.Fatalf("%d %v %s", res.status, names, res.body)
	}
	last, _ := fake.LastRequest()
	var body map[string]any
	if err := json.Unmarshal(last.Body, &body); err != nil {
		t.Fatalf("bedrock got %s: %v", last.Body, err)
	}
	_, hasModel := body["model"]
	_, hasStream := body["stream"]
	if last.Path != "/model/eu.anthropic.claude-x-v1:0/invoke-with-response-stream" || hasModel || hasStream ||
		body["anthropic_version"] != "bedrock-2023-05-31" || body["max_tokens"] != float64(50) {
		t.Fatalf("bedrock request %s %s", last.Path, last.Body)
	}
	if rec := h.record(1); rec.Outcome != telemetryv1.CallOutcome_CALL_OUTCOME_ANSWERED || rec.Usage.GetOutputTokens() == 0 {
		t.Fatalf("record %v", rec.CallRecord)
	}
}
