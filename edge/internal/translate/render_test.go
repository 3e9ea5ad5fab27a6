package translate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// reqRenderAll renders r in every member format.
func reqRenderAll(t *testing.T, r *Request) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for member, render := range reqRenderers {
		b, err := render(r)
		if err != nil {
			t.Fatalf("%s: %v", member, err)
		}
		if !json.Valid(b) {
			t.Fatalf("%s: not JSON: %s", member, b)
		}
		out[member] = b
	}
	return out
}

func reqParseFile(t *testing.T, caller, name string) *Request {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", "req", caller, "in", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := reqParsers[caller](body)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestR_FMT_3_HintsDropped: the basic inputs carry every hint their format
// has (seed, user, metadata, parallel_tool_calls, prompt_cache_key,
// service_tier, reasoning effort, penalties, logit_bias, store, top_k,
// thinking, cache_control, ...); none reaches any member, and each member
// body has only the top-level fields the translation writes.
func TestR_FMT_3_HintsDropped(t *testing.T) {
	allowed := map[string]map[string]bool{
		"openai":    reqSet("model", "messages", "tools", "tool_choice", "stop", "temperature", "top_p", "max_tokens", "stream", "stream_options", "response_format"),
		"anthropic": reqSet("model", "max_tokens", "system", "messages", "tools", "tool_choice", "stop_sequences", "temperature", "top_p", "stream"),
		"gemini":    reqSet("systemInstruction", "contents", "tools", "toolConfig", "generationConfig"),
	}
	// Keys are matched with their colon: "user" alone is also a role.
	banned := []string{`"seed":`, `"user":`, `"metadata":`, `"parallel_tool_calls":`, `"prompt_cache_key":`, `"service_tier":`,
		`"reasoning_effort":`, `"reasoning":`, `"frequency_penalty":`, `"presence_penalty":`, `"logit_bias":`, `"store":`,
		`"top_k":`, `"thinking":`, `"cache_control":`, `"truncation":`, `"include":`, `"strict":`, `"detail":`,
		`"disable_parallel_tool_use":`, `"signature":`, `"annotations":`, "u-1", "job-1", "flex", "hmm"}
	for caller := range reqParsers {
		for _, name := range []string{"basic", "tools", "images"} {
			if _, err := os.Stat(filepath.Join("testdata", "req", caller, "in", name+".json")); err != nil {
				continue
			}
			for member, out := range reqRenderAll(t, reqParseFile(t, caller, name)) {
				for _, b := range banned {
					if strings.Contains(string(out), b) {
						t.Errorf("%s/%s → %s carries hint %s: %s", caller, name, member, b, out)
					}
				}
				var top map[string]json.RawMessage
				if err := json.Unmarshal(out, &top); err != nil {
					t.Fatal(err)
				}
				for k := range top {
					if !allowed[member][k] {
						t.Errorf("%s/%s → %s: unexpected field %q", caller, name, member, k)
					}
				}
			}
		}
	}
}

func reqSet(keys ...string) map[string]bool {
	m := map[string]bool{}
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// TestRenderNoHTMLEscape: "<", ">" and "&" reach the member as written.
func TestRenderNoHTMLEscape(t *testing.T) {
	r := &Request{System: []Part{{Kind: PartText, Text: "a<b>&c"}}, Messages: []Message{{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "x"}}}}}
	for member, out := range reqRenderAll(t, r) {
		if !strings.Contains(string(out), "a<b>&c") || strings.Contains(string(out), `\u003c`) {
			t.Errorf("%s: %s", member, out)
		}
	}
}

// TestRenderAnthropicMaxTokens: Anthropic requires max_tokens — the
// caller's cap, else the record's default, else 4096 (R-FMT-2, R-COST-1).
func TestRenderAnthropicMaxTokens(t *testing.T) {
	for _, c := range []struct {
		max, def, want int64
	}{{0, 0, 4096}, {0, 777, 777}, {5, 777, 5}, {5, 0, 5}, {0, -1, 4096}} {
		r := &Request{MaxOutput: c.max, Messages: []Message{{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "x"}}}}}
		out, err := RenderAnthropic(r, "m", c.def)
		if err != nil {
			t.Fatal(err)
		}
		var b struct {
			MaxTokens int64 `json:"max_tokens"`
		}
		if err := json.Unmarshal(out, &b); err != nil || b.MaxTokens != c.want {
			t.Errorf("max %d default %d: max_tokens %d, want %d", c.max, c.def, b.MaxTokens, c.want)
		}
	}
}

func reqCall(id, name, args string) Part {
	return Part{Kind: PartToolCall, ToolCallID: id, ToolName: name, Arguments: json.RawMessage(args)}
}

func reqResult(id, text string) Part {
	return Part{Kind: PartToolResult, ToolCallID: id, Content: []Part{{Kind: PartText, Text: text}}}
}

func reqText(s string) Part { return Part{Kind: PartText, Text: s} }

// TestRenderAnthropicAlternation: consecutive turns of a role are merged,
// empty ones dropped, tool results first in their turn, ids made valid the
// same way in calls and results, top_p dropped beside temperature.
func TestRenderAnthropicAlternation(t *testing.T) {
	temp, topP := 0.5, 0.9
	r := &Request{
		Temperature: &temp, TopP: &topP,
		Messages: []Message{
			{Role: RoleUser, Parts: []Part{reqText("q")}},
			{Role: RoleUser, Parts: []Part{reqText("")}},
			{Role: RoleAssistant, Parts: []Part{reqCall("call.1/x", "f", `{"a":1}`)}},
			{Role: RoleUser, Parts: []Part{reqText("also this")}},
			{Role: RoleUser, Parts: []Part{reqResult("call.1/x", "r")}},
		},
	}
	out, err := RenderAnthropic(r, "m", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","max_tokens":4096,"messages":[` +
		`{"role":"user","content":[{"type":"text","text":"q"}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"call_1_x","name":"f","input":{"a":1}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1_x","content":"r"},{"type":"text","text":"also this"}]}],` +
		`"temperature":0.5}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}

// TestRenderAnthropicTemperature: OpenAI's range goes to 2, Anthropic's to
// 1; a higher temperature is sent as 1, others as given.
func TestRenderAnthropicTemperature(t *testing.T) {
	for in, want := range map[float64]string{1.7: `"temperature":1`, 0.3: `"temperature":0.3`, 0: `"temperature":0`, 1: `"temperature":1`} {
		temp := in
		out, err := RenderAnthropic(&Request{Temperature: &temp, Messages: []Message{{Role: RoleUser, Parts: []Part{reqText("x")}}}}, "m", 0)
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("%v: %s %v", in, out, err)
		}
	}
}

// TestRenderOpenAITurns: tool results become tool messages ahead of the
// rest of their turn, a failed result says so, arguments are a JSON
// string, result images follow in a user message.
func TestRenderOpenAITurns(t *testing.T) {
	res := reqResult("c1", "boom")
	res.IsError = true
	res.Content = append(res.Content, Part{Kind: PartImage, URL: "https://x/i.png"})
	r := &Request{
		Messages: []Message{
			{Role: RoleUser, Parts: []Part{reqText("q")}},
			{Role: RoleAssistant, Parts: []Part{reqText("ok "), reqText("then"), reqCall("c1", "f", `{"a":"<1>"}`)}},
			{Role: RoleUser, Parts: []Part{reqText("after"), res}},
		},
		ToolChoice: ToolChoice{Mode: ToolRequired}, // no tools: not sent
		Stream:     true,
	}
	out, err := RenderOpenAI(r, "m")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","messages":[` +
		`{"role":"user","content":"q"},` +
		`{"role":"assistant","content":"ok then","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":\"<1>\"}"}}]},` +
		`{"role":"tool","content":"Error: boom","tool_call_id":"c1"},` +
		`{"role":"user","content":[{"type":"text","text":"after"},{"type":"text","text":"Image returned by tool call c1:"},{"type":"image_url","image_url":{"url":"https://x/i.png"}}]}],` +
		`"stream":true,"stream_options":{"include_usage":true}}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}

// TestRenderToolChoiceNeedsTools: no member is sent a tool choice without
// tools (OpenAI refuses it), whatever the caller said.
func TestRenderToolChoiceNeedsTools(t *testing.T) {
	for _, mode := range []ToolChoiceMode{ToolNone, ToolRequired, ToolNamed} {
		r := &Request{ToolChoice: ToolChoice{Mode: mode, Name: "f"}, Messages: []Message{{Role: RoleUser, Parts: []Part{reqText("x")}}}}
		for member, out := range reqRenderAll(t, r) {
			if strings.Contains(string(out), "tool_choice") || strings.Contains(string(out), "toolConfig") {
				t.Errorf("%s mode %d: %s", member, mode, out)
			}
		}
	}
}

// TestRenderGeminiResults: a functionResponse is named after its call,
// found by id in an earlier turn; a result with no earlier call is
// refused; a failed tool's text goes under "error".
func TestRenderGeminiResults(t *testing.T) {
	res := reqResult("c2", "bad")
	res.IsError = true
	r := &Request{Messages: []Message{
		{Role: RoleUser, Parts: []Part{reqText("q")}},
		{Role: RoleAssistant, Parts: []Part{reqCall("c1", "f", `{}`), reqCall("c2", "g", `{"x":1}`)}},
		{Role: RoleUser, Parts: []Part{reqText("note"), reqResult("c1", "ok"), res}},
	}}
	out, err := RenderGemini(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"contents":[{"role":"user","parts":[{"text":"q"}]},` +
		`{"role":"model","parts":[{"functionCall":{"name":"f","args":{}},"thoughtSignature":"skip_thought_signature_validator"},{"functionCall":{"name":"g","args":{"x":1}}}]},` +
		`{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"ok"}}},{"functionResponse":{"name":"g","response":{"error":"bad"}}},{"text":"note"}]}]}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	r.Messages[2].Parts = append(r.Messages[2].Parts, reqResult("zz", "?"))
	var br *BadRequest
	if _, err := RenderGemini(r); !errors.As(err, &br) {
		t.Errorf("unmatched result: got %v, want *BadRequest", err)
	}
}

// TestRenderGeminiSchema: keys Gemini's Schema does not know are dropped at
// every depth, property names are kept whatever they are, key order is
// kept, a nullable type list becomes nullable.
func TestRenderGeminiSchema(t *testing.T) {
	in := `{"$schema":"x","type":"object","additionalProperties":false,"properties":{
		"$schema":{"type":"string","const":"a"},
		"list":{"type":"array","items":{"type":"object","additionalProperties":{"type":"string"},"properties":{"z":{"type":"integer","exclusiveMinimum":0},"a":{"type":["number","null"]}}}},
		"u":{"anyOf":[{"type":"string","$comment":"c"},{"type":"null"}]},
		"multi":{"type":["string","integer"],"description":"d"}},
		"required":["list"],"$defs":{"x":{}}}`
	got, err := reqGeminiSchema(json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{` +
		`"$schema":{"type":"string"},` +
		`"list":{"type":"array","items":{"type":"object","properties":{"z":{"type":"integer"},"a":{"type":"number","nullable":true}}}},` +
		`"u":{"anyOf":[{"type":"string"},{"type":"null"}]},` +
		`"multi":{"description":"d"}},"required":["list"]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, empty := range []string{`{"type":"object"}`, `{"type":"object","properties":{}}`, `{}`} {
		if got, err := reqGeminiSchema(json.RawMessage(empty)); err != nil || got != nil {
			t.Errorf("%s: got %s %v, want no parameters", empty, got, err)
		}
	}
	if got, err := reqGeminiSchema(nil); err != nil || got != nil {
		t.Errorf("nil: %s %v", got, err)
	}
}

// TestRenderImages: inline images as base64 in every format, URL images
// by reference (Gemini fileData with a media type from the file name).
func TestRenderImages(t *testing.T) {
	r := &Request{Messages: []Message{{Role: RoleUser, Parts: []Part{
		{Kind: PartImage, MediaType: "image/gif", Data: "R0lG"},
		{Kind: PartImage, URL: "https://x/a.PNG#f"},
		{Kind: PartImage, URL: "gs://b/o"},
	}}}}
	outs := reqRenderAll(t, r)
	for member, want := range map[string][]string{
		"openai":    {`"url":"data:image/gif;base64,R0lG"`, `"url":"https://x/a.PNG#f"`},
		"anthropic": {`{"type":"base64","media_type":"image/gif","data":"R0lG"}`, `{"type":"url","url":"https://x/a.PNG#f"}`},
		"gemini":    {`{"inlineData":{"mimeType":"image/gif","data":"R0lG"}}`, `{"fileData":{"mimeType":"image/png","fileUri":"https://x/a.PNG#f"}}`, `{"fileData":{"mimeType":"image/jpeg","fileUri":"gs://b/o"}}`},
	} {
		for _, w := range want {
			if !strings.Contains(string(outs[member]), w) {
				t.Errorf("%s: missing %s in %s", member, w, outs[member])
			}
		}
	}
}

// TestRenderRoundTripIDs: across every caller's tools input, each member
// body answers each tool call with a result under the same id (OpenAI,
// Anthropic) or name (Gemini), in order (R-FMT-2).
func TestRenderRoundTripIDs(t *testing.T) {
	for caller := range reqParsers {
		r := reqParseFile(t, caller, "tools")
		outs := reqRenderAll(t, r)
		var oa struct {
			Messages []struct {
				Role       string `json:"role"`
				ToolCallID string `json:"tool_call_id"`
				ToolCalls  []struct {
					ID string `json:"id"`
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(outs["openai"], &oa); err != nil {
			t.Fatal(err)
		}
		var calls, results []string
		for _, m := range oa.Messages {
			for _, c := range m.ToolCalls {
				calls = append(calls, c.ID)
			}
			if m.Role == "tool" {
				results = append(results, m.ToolCallID)
			}
		}
		if len(calls) != 2 || !reflect.DeepEqual(calls, results) {
			t.Errorf("%s → openai: calls %v results %v", caller, calls, results)
		}
		var an struct {
			Messages []struct {
				Content []struct {
					Type      string `json:"type"`
					ID        string `json:"id"`
					ToolUseID string `json:"tool_use_id"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(outs["anthropic"], &an); err != nil {
			t.Fatal(err)
		}
		calls, results = nil, nil
		for _, m := range an.Messages {
			for _, b := range m.Content {
				switch b.Type {
				case "tool_use":
					calls = append(calls, b.ID)
				case "tool_result":
					results = append(results, b.ToolUseID)
				}
			}
		}
		if len(calls) != 2 || !reflect.DeepEqual(calls, results) {
			t.Errorf("%s → anthropic: calls %v results %v", caller, calls, results)
		}
		if strings.Count(string(outs["gemini"]), `"functionResponse":{"name":"get_weather"`) != 2 {
			t.Errorf("%s → gemini: %s", caller, outs["gemini"])
		}
	}
}

// TestRenderDropsEmptyTurns: an assistant turn left empty once its
// thinking is dropped (R-FMT-3) and an empty user turn do not reach
// Anthropic or Gemini as empty turns (both refuse them), and the turns
// around them still alternate.
func TestRenderDropsEmptyTurns(t *testing.T) {
	r, err := ParseMessages([]byte(`{"messages":[
		{"role":"user","content":"a"},
		{"role":"assistant","content":[{"type":"thinking","thinking":"x","signature":"s"}]},
		{"role":"user","content":[]},
		{"role":"user","content":"b"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	outs := reqRenderAll(t, r)
	if want := `"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]`; !strings.Contains(string(outs["anthropic"]), want) {
		t.Errorf("anthropic: %s", outs["anthropic"])
	}
	if want := `{"contents":[{"role":"user","parts":[{"text":"a"},{"text":"b"}]}]}`; string(outs["gemini"]) != want {
		t.Errorf("gemini: %s", outs["gemini"])
	}
}
