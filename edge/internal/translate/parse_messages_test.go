package translate

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestParseMessagesBadRequest(t *testing.T) {
	use := `{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]}`
	u := func(content string) string { return `{"messages":[{"role":"user","content":` + content + `}]}` }
	reqRunBad(t, ParseMessages, []reqBadCase{
		{"not json", `{`, ""},
		{"not an object", `"x"`, ""},
		{"messages missing", `{"max_tokens":5}`, "messages"},
		{"messages not array", `{"messages":"hi"}`, "messages"},
		{"messages empty", `{"messages":[]}`, "messages"},
		{"message not object", `{"messages":[1]}`, "messages[0]"},
		{"role missing", `{"messages":[{"content":"x"}]}`, "messages[0].role"},
		{"role system", `{"messages":[{"role":"system","content":"x"}]}`, "messages[0].role"},
		{"content missing", `{"messages":[{"role":"user"}]}`, "messages[0].content"},
		{"content number", u(`1`), "messages[0].content"},
		{"block not object", u(`["x"]`), "messages[0].content[0]"},
		{"block type missing", u(`[{"text":"x"}]`), "messages[0].content[0].type"},
		{"block text missing", u(`[{"type":"text"}]`), "messages[0].content[0].text"},
		{"document block", u(`[{"type":"document","source":{}}]`), "messages[0].content[0].type"},
		{"image source missing", u(`[{"type":"image"}]`), "messages[0].content[0].source"},
		{"image source file", u(`[{"type":"image","source":{"type":"file","file_id":"f"}}]`), "messages[0].content[0].source.type"},
		{"image media type missing", u(`[{"type":"image","source":{"type":"base64","data":"AAEC"}}]`), "messages[0].content[0].source.media_type"},
		{"image data missing", u(`[{"type":"image","source":{"type":"base64","media_type":"image/png"}}]`), "messages[0].content[0].source.data"},
		{"image data not base64", u(`[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"%%"}}]`), "messages[0].content[0].source.data"},
		{"image url missing", u(`[{"type":"image","source":{"type":"url"}}]`), "messages[0].content[0].source.url"},
		{"image in assistant", `{"messages":[{"role":"assistant","content":[{"type":"image","source":{"type":"url","url":"http://x"}}]}]}`, "messages[0].content[0].type"},
		{"tool_use in user", u(`[{"type":"tool_use","id":"t","name":"f","input":{}}]`), "messages[0].content[0].type"},
		{"tool_use id missing", `{"messages":[{"role":"assistant","content":[{"type":"tool_use","name":"f"}]}]}`, "messages[0].content[0].id"},
		{"tool_use name missing", `{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t"}]}]}`, "messages[0].content[0].name"},
		{"tool_use input array", `{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":[1]}]}]}`, "messages[0].content[0].input"},
		{"tool_result in assistant", `{"messages":[` + use + `,{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"t1"}]}]}`, "messages[1].content[0].type"},
		{"tool_result id missing", `{"messages":[` + use + `,{"role":"user","content":[{"type":"tool_result"}]}]}`, "messages[1].content[0].tool_use_id"},
		{"tool_result unmatched", `{"messages":[` + use + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2"}]}]}`, "messages[1].content[0].tool_use_id"},
		{"tool_result content number", `{"messages":[` + use + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":3}]}]}`, "messages[1].content[0].content"},
		{"tool_result content doc", `{"messages":[` + use + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"document"}]}]}]}`, "messages[1].content[0].content[0].type"},
		{"tool_result is_error string", `{"messages":[` + use + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":"yes"}]}]}`, "messages[1].content[0].is_error"},
		{"system block not object", `{"system":["x"],"messages":[{"role":"user","content":"x"}]}`, "system[0]"},
		{"tool_result block not object", `{"messages":[` + use + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[1]}]}]}`, "messages[1].content[0].content[0]"},
		{"tool_result text missing", `{"messages":[` + use + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text"}]}]}]}`, "messages[1].content[0].content[0].text"},
		{"tool_result bad image", `{"messages":[` + use + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"image","source":{"type":"url"}}]}]}]}`, "messages[1].content[0].content[0].source.url"},
		{"image source not object", u(`[{"type":"image","source":"http://x"}]`), "messages[0].content[0].source"},
		{"tool not object", `{"messages":[{"role":"user","content":"x"}],"tools":[1]}`, "tools[0]"},
		{"tool_choice type number", `{"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":1}}`, "tool_choice.type"},
		{"system number", `{"system":1,"messages":[{"role":"user","content":"x"}]}`, "system"},
		{"system image block", `{"system":[{"type":"image"}],"messages":[{"role":"user","content":"x"}]}`, "system[0].type"},
		{"system text missing", `{"system":[{"type":"text"}],"messages":[{"role":"user","content":"x"}]}`, "system[0].text"},
		{"tools object", `{"messages":[{"role":"user","content":"x"}],"tools":{}}`, "tools"},
		{"server tool", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, "tools[0].type"},
		{"tool name missing", `{"messages":[{"role":"user","content":"x"}],"tools":[{"input_schema":{}}]}`, "tools[0].name"},
		{"tool schema string", `{"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f","input_schema":"x"}]}`, "tools[0].input_schema"},
		{"tool_choice string", `{"messages":[{"role":"user","content":"x"}],"tool_choice":"auto"}`, "tool_choice"},
		{"tool_choice type unknown", `{"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"required"}}`, "tool_choice.type"},
		{"tool_choice tool no name", `{"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"tool"}}`, "tool_choice.name"},
		{"stop_sequences string", `{"messages":[{"role":"user","content":"x"}],"stop_sequences":"X"}`, "stop_sequences"},
		{"stop_sequences number", `{"messages":[{"role":"user","content":"x"}],"stop_sequences":["a",2]}`, "stop_sequences[1]"},
		{"max_tokens string", `{"messages":[{"role":"user","content":"x"}],"max_tokens":"5"}`, "max_tokens"},
		{"max_tokens negative", `{"messages":[{"role":"user","content":"x"}],"max_tokens":-5}`, "max_tokens"},
		{"temperature bool", `{"messages":[{"role":"user","content":"x"}],"temperature":true}`, "temperature"},
		{"stream number", `{"messages":[{"role":"user","content":"x"}],"stream":1}`, "stream"},
	})
}

// TestParseMessages checks the neutral form read from a Messages body:
// thinking dropped (R-FMT-3), results matched with calls by id, is_error
// and result images carried (R-FMT-2).
func TestParseMessages(t *testing.T) {
	body := `{"system":"S","messages":[
		{"role":"user","content":"q"},
		{"role":"assistant","content":[{"type":"thinking","thinking":"secret","signature":"s"},{"type":"redacted_thinking","data":"x"},{"type":"tool_use","id":"t1","name":"f","input":{ "a" : 1 }},{"type":"tool_use","id":"t2","name":"g"}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[{"type":"text","text":"bad"},{"type":"image","source":{"type":"url","url":"https://x/i.png"}}]},{"type":"tool_result","tool_use_id":"t2"}]}],
		"tool_choice":{"type":"any"},"top_k":5}`
	r, err := ParseMessages([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := &Request{
		System: []Part{{Kind: PartText, Text: "S"}},
		Messages: []Message{
			{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "q"}}},
			{Role: RoleAssistant, Parts: []Part{
				{Kind: PartToolCall, ToolCallID: "t1", ToolName: "f", Arguments: json.RawMessage(`{"a":1}`)},
				{Kind: PartToolCall, ToolCallID: "t2", ToolName: "g", Arguments: json.RawMessage(`{}`)},
			}},
			{Role: RoleUser, Parts: []Part{
				{Kind: PartToolResult, ToolCallID: "t1", ToolName: "f", IsError: true, Content: []Part{{Kind: PartText, Text: "bad"}, {Kind: PartImage, URL: "https://x/i.png"}}},
				{Kind: PartToolResult, ToolCallID: "t2", ToolName: "g"},
			}},
		},
		ToolChoice: ToolChoice{Mode: ToolRequired},
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got  %+v\nwant %+v", r, want)
	}
}

// TestParseToolChoiceForms covers every tool_choice form of the Messages
// and Responses shapes.
func TestParseToolChoiceForms(t *testing.T) {
	for _, c := range []struct {
		parse func([]byte) (*Request, error)
		body  string
		want  ToolChoice
	}{
		{ParseMessages, `{"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"auto"}}`, ToolChoice{Mode: ToolAuto}},
		{ParseMessages, `{"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"none"}}`, ToolChoice{Mode: ToolNone}},
		{ParseMessages, `{"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"any"}}`, ToolChoice{Mode: ToolRequired}},
		{ParseMessages, `{"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"tool","name":"f"}}`, ToolChoice{Mode: ToolNamed, Name: "f"}},
		{ParseResponses, `{"input":"x","tool_choice":"auto"}`, ToolChoice{Mode: ToolAuto}},
		{ParseResponses, `{"input":"x","tool_choice":"none"}`, ToolChoice{Mode: ToolNone}},
		{ParseResponses, `{"input":"x","tool_choice":"required"}`, ToolChoice{Mode: ToolRequired}},
		{ParseResponses, `{"input":"x","tool_choice":{"type":"function","name":"f"}}`, ToolChoice{Mode: ToolNamed, Name: "f"}},
	} {
		r, err := c.parse([]byte(c.body))
		if err != nil || r.ToolChoice != c.want {
			t.Errorf("%s: got %+v %v, want %+v", c.body, r, err, c.want)
		}
	}
}
