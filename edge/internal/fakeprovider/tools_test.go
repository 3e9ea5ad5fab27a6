package fakeprovider

import (
	"encoding/json"
	"strings"
	"testing"
)

// weatherSchema is the JSON schema of get_weather in OpenAI's and
// Anthropic's words.
const weatherSchema = `{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"integer"}},"required":["city","unit"]}`

// wantArgs are the placeholder arguments every flavor gives get_weather.
var wantArgs = map[string]any{"city": "example city", "unit": "celsius"}

func sameArgs(t *testing.T, name string, got any) {
	t.Helper()
	if s, ok := got.(string); ok {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Errorf("%s: arguments %q: %v", name, s, err)
			return
		}
		got = m
	}
	m, _ := got.(map[string]any)
	if len(m) != len(wantArgs) || m["city"] != wantArgs["city"] || m["unit"] != wantArgs["unit"] {
		t.Errorf("%s: arguments %v, want %v", name, got, wantArgs)
	}
}

// R-FMT-2: every flavor calls a tool the same way, so translated calls can
// be compared across formats.
func TestToolCallsAcrossFlavors(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{})
	openAITools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":` + weatherSchema + `}}]`
	anthropicTool := `"tools":[{"name":"get_weather","input_schema":` + weatherSchema + `}]`

	// OpenAI: tool_choice required, and a user text naming the tool.
	for name, body := range map[string]string{
		"required": chatBody("gpt-4o", openAITools+`,"tool_choice":"required"`),
		"named":    `{"model":"gpt-4o","messages":[{"role":"user","content":"call get_weather please"}],` + openAITools + `}`,
		"forced":   chatBody("gpt-4o", openAITools+`,"tool_choice":{"type":"function","function":{"name":"get_weather"}}`),
	} {
		resp, b := do(t, base, reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: body})
		v := decode(t, b)
		if resp.StatusCode != 200 || path(v, "choices.0.finish_reason") != "tool_calls" || path(v, "choices.0.message.content") != nil ||
			path(v, "choices.0.message.tool_calls.0.function.name") != "get_weather" || path(v, "choices.0.message.tool_calls.0.type") != "function" {
			t.Errorf("openai %s: %d %s", name, resp.StatusCode, b)
			continue
		}
		sameArgs(t, "openai "+name, path(v, "choices.0.message.tool_calls.0.function.arguments"))
	}
	// Tools declared, not named, not forced: text.
	_, b := do(t, base, reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: chatBody("gpt-4o", openAITools)})
	if v := decode(t, b); path(v, "choices.0.finish_reason") != "stop" || path(v, "choices.0.message.tool_calls") != nil {
		t.Errorf("openai auto: %s", b)
	}
	// OpenAI streamed: the call comes as tool_calls deltas.
	_, b = do(t, base, reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: chatBody("gpt-4o", openAITools+`,"tool_choice":"required","stream":true`)})
	events, err := readSSE(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	var args, finish string
	for _, e := range events {
		if e.data == "[DONE]" {
			continue
		}
		v := decode(t, []byte(e.data))
		if a, ok := path(v, "choices.0.delta.tool_calls.0.function.arguments").(string); ok {
			args += a
		}
		if f, ok := path(v, "choices.0.finish_reason").(string); ok {
			finish = f
		}
	}
	if finish != "tool_calls" || !strings.Contains(string(b), `"name":"get_weather"`) {
		t.Errorf("openai stream: %s", b)
	}
	sameArgs(t, "openai stream", args)

	// Anthropic and Bedrock: tool_choice any.
	resp, b := do(t, base, reqSpec{path: "/v1/messages", header: anthropicHeaders(), body: messagesBody("claude", anthropicTool+`,"tool_choice":{"type":"any"}`)})
	v := decode(t, b)
	if resp.StatusCode != 200 || path(v, "stop_reason") != "tool_use" || path(v, "content.0.type") != "tool_use" || path(v, "content.0.name") != "get_weather" {
		t.Errorf("anthropic: %d %s", resp.StatusCode, b)
	} else {
		sameArgs(t, "anthropic", path(v, "content.0.input"))
	}
	bedrock := `{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":"use get_weather"}],` + anthropicTool + `}`
	resp, b = do(t, base, reqSpec{path: "/model/anthropic.claude-v2/invoke", header: bedrockHeaders(), body: bedrock})
	if v := decode(t, b); resp.StatusCode != 200 || path(v, "stop_reason") != "tool_use" || path(v, "content.0.name") != "get_weather" {
		t.Errorf("bedrock: %d %s", resp.StatusCode, b)
	}
	// Anthropic streamed: tool_use block then input_json_delta.
	_, b = do(t, base, reqSpec{path: "/v1/messages", header: anthropicHeaders(), body: messagesBody("claude", anthropicTool+`,"tool_choice":{"type":"tool","name":"get_weather"},"stream":true`)})
	events, err = readSSE(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	var partial, stop string
	for _, e := range events {
		v := decode(t, []byte(e.data))
		if p, ok := path(v, "delta.partial_json").(string); ok {
			partial += p
		}
		if s, ok := path(v, "delta.stop_reason").(string); ok {
			stop = s
		}
	}
	if stop != "tool_use" || !strings.Contains(string(b), `"content_block":{"type":"tool_use"`) {
		t.Errorf("anthropic stream: %s", b)
	}
	sameArgs(t, "anthropic stream", partial)
}

// R-FMT-2: tool results are answered with text naming the tool and its
// result, in every flavor.
func TestToolResultsAcrossFlavors(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{})
	openAI := `{"model":"gpt-4o","tool_choice":"required","tools":[{"type":"function","function":{"name":"get_weather","parameters":` + weatherSchema + `}}],"messages":[` +
		`{"role":"user","content":"weather?"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"{\"temp_c\":21}"}]}`
	resp, b := do(t, base, reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: openAI})
	v := decode(t, b)
	if text, _ := path(v, "choices.0.message.content").(string); resp.StatusCode != 200 || path(v, "choices.0.finish_reason") != "stop" ||
		text != `The function get_weather returned {"temp_c":21}.` {
		t.Errorf("openai: %d %s", resp.StatusCode, b)
	}
	anthropic := `{"model":"claude","max_tokens":64,"tool_choice":{"type":"any"},"tools":[{"name":"get_weather","input_schema":` + weatherSchema + `}],"messages":[` +
		`{"role":"user","content":"weather?"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"{\"temp_c\":21}"}]}]}`
	resp, b = do(t, base, reqSpec{path: "/v1/messages", header: anthropicHeaders(), body: anthropic})
	v = decode(t, b)
	if resp.StatusCode != 200 || path(v, "stop_reason") != "end_turn" || path(v, "content.0.text") != `The function get_weather returned {"temp_c":21}.` {
		t.Errorf("anthropic: %d %s", resp.StatusCode, b)
	}
	gemini := `{"contents":[{"role":"user","parts":[{"text":"weather?"}]},` +
		`{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{}}}]},` +
		`{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"temp_c":21}}}]}]}`
	resp, b = do(t, base, reqSpec{path: geminiPath + "generateContent", header: geminiHeaders(), body: gemini})
	v = decode(t, b)
	if resp.StatusCode != 200 || path(v, "candidates.0.content.parts.0.text") != `The function get_weather returned {"temp_c":21}.` {
		t.Errorf("gemini: %d %s", resp.StatusCode, b)
	}
}
