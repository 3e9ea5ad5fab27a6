package translate

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestParseResponsesBadRequest(t *testing.T) {
	call := `{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}`
	in := func(items string) string { return `{"input":[` + items + `]}` }
	reqRunBad(t, ParseResponses, []reqBadCase{
		{"not json", `nope`, ""},
		{"not an object", `[]`, ""},
		{"input missing", `{"model":"m"}`, "input"},
		{"input number", `{"input":1}`, "input"},
		{"input empty", `{"input":[]}`, "input"},
		{"previous_response_id", `{"input":"x","previous_response_id":"resp_1"}`, "previous_response_id"},
		{"prompt", `{"input":"x","prompt":{"id":"p"}}`, "prompt"},
		{"conversation", `{"input":"x","conversation":"conv_1"}`, "conversation"},
		{"instructions number", `{"input":"x","instructions":3}`, "instructions"},
		{"item not object", in(`"x"`), "input[0]"},
		{"item without type or role", in(`{"content":"x"}`), "input[0].type"},
		{"item unknown type", in(`{"type":"web_search_call"}`), "input[0].type"},
		{"item_reference", in(`{"type":"item_reference","id":"msg_1"}`), "input[0].type"},
		{"message role missing", in(`{"type":"message","content":"x"}`), "input[0].role"},
		{"message role unknown", in(`{"role":"tool","content":"x"}`), "input[0].role"},
		{"message content missing", in(`{"role":"user"}`), "input[0].content"},
		{"message content number", in(`{"role":"user","content":1}`), "input[0].content"},
		{"part type missing", in(`{"role":"user","content":[{"text":"x"}]}`), "input[0].content[0].type"},
		{"part text missing", in(`{"role":"user","content":[{"type":"input_text"}]}`), "input[0].content[0].text"},
		{"input_file", in(`{"role":"user","content":[{"type":"input_file","file_id":"f"}]}`), "input[0].content[0].type"},
		{"image file_id", in(`{"role":"user","content":[{"type":"input_image","file_id":"file_1"}]}`), "input[0].content[0].file_id"},
		{"image url missing", in(`{"role":"user","content":[{"type":"input_image"}]}`), "input[0].content[0].image_url"},
		{"image bad data url", in(`{"role":"user","content":[{"type":"input_image","image_url":"data:;base64,AA=="}]}`), "input[0].content[0].image_url"},
		{"image in assistant", in(`{"role":"assistant","content":[{"type":"input_image","image_url":"http://x"}]}`), "input[0].content[0].type"},
		{"call id missing", in(`{"type":"function_call","name":"f","arguments":"{}"}`), "input[0].call_id"},
		{"call name missing", in(`{"type":"function_call","call_id":"c","arguments":"{}"}`), "input[0].name"},
		{"call args not object", in(`{"type":"function_call","call_id":"c","name":"f","arguments":"1"}`), "input[0].arguments"},
		{"output unmatched", in(call + `,{"type":"function_call_output","call_id":"c2","output":"r"}`), "input[1].call_id"},
		{"output id missing", in(call + `,{"type":"function_call_output","output":"r"}`), "input[1].call_id"},
		{"output missing", in(call + `,{"type":"function_call_output","call_id":"c1"}`), "input[1].output"},
		{"output number", in(call + `,{"type":"function_call_output","call_id":"c1","output":5}`), "input[1].output"},
		{"part not object", in(`{"role":"user","content":["x"]}`), "input[0].content[0]"},
		{"output part bad", in(call + `,{"type":"function_call_output","call_id":"c1","output":[{"type":"input_file"}]}`), "input[1].output[0].type"},
		{"system content bad", in(`{"role":"system","content":[{"type":"input_image","image_url":"http://x"}]}`), "input[0].content[0].type"},
		{"tool not object", `{"input":"x","tools":[[]]}`, "tools[0]"},
		{"tool_choice type number", `{"input":"x","tool_choice":{"type":2}}`, "tool_choice.type"},
		{"tools object", `{"input":"x","tools":{}}`, "tools"},
		{"builtin tool", `{"input":"x","tools":[{"type":"web_search"}]}`, "tools[0].type"},
		{"tool name missing", `{"input":"x","tools":[{"type":"function"}]}`, "tools[0].name"},
		{"tool params array", `{"input":"x","tools":[{"type":"function","name":"f","parameters":[]}]}`, "tools[0].parameters"},
		{"tool_choice unknown", `{"input":"x","tool_choice":"any"}`, "tool_choice"},
		{"tool_choice hosted", `{"input":"x","tool_choice":{"type":"file_search"}}`, "tool_choice.type"},
		{"tool_choice no name", `{"input":"x","tool_choice":{"type":"function"}}`, "tool_choice.name"},
		{"tool_choice bool", `{"input":"x","tool_choice":true}`, "tool_choice"},
		{"max_output_tokens negative", `{"input":"x","max_output_tokens":-1}`, "max_output_tokens"},
		{"max_output_tokens string", `{"input":"x","max_output_tokens":"1"}`, "max_output_tokens"},
		{"temperature string", `{"input":"x","temperature":"1"}`, "temperature"},
		{"text string", `{"input":"x","text":"json"}`, "text"},
		{"text.format string", `{"input":"x","text":{"format":"json"}}`, "text.format"},
		{"text.format type unknown", `{"input":"x","text":{"format":{"type":"yaml"}}}`, "text.format.type"},
		{"text.format name missing", `{"input":"x","text":{"format":{"type":"json_schema","schema":{}}}}`, "text.format.name"},
		{"text.format schema array", `{"input":"x","text":{"format":{"type":"json_schema","name":"n","schema":[1]}}}`, "text.format.schema"},
		{"stream string", `{"input":"x","stream":"true"}`, "stream"},
	})
}

// TestParseResponses checks the neutral form read from a Responses body:
// instructions first in System, consecutive items of a role one turn,
// function calls and outputs matched by call_id, reasoning dropped
// (R-FMT-2, R-FMT-3).
func TestParseResponses(t *testing.T) {
	body := `{"instructions":"I","input":[
		{"role":"system","content":"S"},
		{"role":"user","content":"q"},
		{"type":"reasoning","id":"rs","summary":[{"type":"summary_text","text":"secret"}]},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"let me see"},{"type":"refusal","refusal":"no"}]},
		{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":[1, 2]}"},
		{"type":"function_call_output","call_id":"c1","output":"out"},
		{"role":"user","content":[{"type":"input_text","text":"more"}]}],
		"tool_choice":{"type":"function","name":"f"},"max_output_tokens":7,"temperature":0,"stream":true}`
	r, err := ParseResponses([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	zero := 0.0
	want := &Request{
		System: []Part{{Kind: PartText, Text: "I"}, {Kind: PartText, Text: "S"}},
		Messages: []Message{
			{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "q"}}},
			{Role: RoleAssistant, Parts: []Part{
				{Kind: PartText, Text: "let me see"},
				{Kind: PartToolCall, ToolCallID: "c1", ToolName: "f", Arguments: json.RawMessage(`{"a":[1,2]}`)},
			}},
			{Role: RoleUser, Parts: []Part{
				{Kind: PartToolResult, ToolCallID: "c1", ToolName: "f", Content: []Part{{Kind: PartText, Text: "out"}}},
				{Kind: PartText, Text: "more"},
			}},
		},
		ToolChoice:  ToolChoice{Mode: ToolNamed, Name: "f"},
		Temperature: &zero,
		MaxOutput:   7,
		Stream:      true,
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got  %+v\nwant %+v", r, want)
	}
}

// TestParseResponseFormat: json_object and json_schema are carried from
// both OpenAI shapes; "text" is free text (nil).
func TestParseResponseFormat(t *testing.T) {
	strict := true
	schema := &ResponseFormat{Name: "p", Description: "d", Strict: &strict, Schema: json.RawMessage(`{"type":"object"}`)}
	for _, c := range []struct {
		parse func([]byte) (*Request, error)
		body  string
		want  *ResponseFormat
	}{
		{ParseChat, `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"text"}}`, nil},
		{ParseChat, `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}}`, &ResponseFormat{}},
		{ParseChat, `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"p","description":"d","strict":true,"schema":{ "type" : "object" }}}}`, schema},
		{ParseChat, `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"p"}}}`, &ResponseFormat{Name: "p", Schema: json.RawMessage(`{}`)}},
		{ParseResponses, `{"input":"x","text":{"verbosity":"low"}}`, nil},
		{ParseResponses, `{"input":"x","text":{"format":{"type":"json_object"}}}`, &ResponseFormat{}},
		{ParseResponses, `{"input":"x","text":{"format":{"type":"json_schema","name":"p","description":"d","strict":true,"schema":{"type":"object"}}}}`, schema},
	} {
		r, err := c.parse([]byte(c.body))
		if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		if !reflect.DeepEqual(r.ResponseFormat, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.body, r.ResponseFormat, c.want)
		}
	}
}
