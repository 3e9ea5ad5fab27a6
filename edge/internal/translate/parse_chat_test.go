package translate

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// reqBadCase is a body a parser must refuse, naming field.
type reqBadCase struct {
	name, body, field string
}

// reqRunBad checks that parse refuses every case with a *BadRequest naming
// the field (R-FMT-2: what cannot be carried is a 400 naming the field).
func reqRunBad(t *testing.T, parse func([]byte) (*Request, error), cases []reqBadCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := parse([]byte(c.body))
			var br *BadRequest
			if !errors.As(err, &br) {
				t.Fatalf("want *BadRequest, got %v (request %+v)", err, r)
			}
			if br.Field != c.field {
				t.Errorf("field = %q, want %q (msg %q)", br.Field, c.field, br.Msg)
			}
			if br.Msg == "" {
				t.Errorf("empty message")
			}
		})
	}
}

func TestParseChatBadRequest(t *testing.T) {
	call := `{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	reqRunBad(t, ParseChat, []reqBadCase{
		{"not json", `{"messages":`, ""},
		{"not an object", `[1,2]`, ""},
		{"legacy functions", `{"messages":[{"role":"user","content":"x"}],"functions":[{"name":"f"}]}`, "functions"},
		{"tool call not object", `{"messages":[{"role":"assistant","tool_calls":[3]}]}`, "messages[0].tool_calls[0]"},
		{"assistant content number", `{"messages":[{"role":"assistant","content":3}]}`, "messages[0].content"},
		{"assistant image", `{"messages":[{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"http://x"}}]}]}`, "messages[0].content[0].type"},
		{"image_url string", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":"http://x"}]}]}`, "messages[0].content[0].image_url"},
		{"tool not object", `{"messages":[{"role":"user","content":"x"}],"tools":["f"]}`, "tools[0]"},
		{"tool_choice function wrong", `{"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"function","function":"f"}}`, "tool_choice.function"},
		{"messages missing", `{"model":"m"}`, "messages"},
		{"messages null", `{"messages":null}`, "messages"},
		{"messages not array", `{"messages":{}}`, "messages"},
		{"messages empty", `{"messages":[]}`, "messages"},
		{"message not object", `{"messages":["hi"]}`, "messages[0]"},
		{"role missing", `{"messages":[{"content":"x"}]}`, "messages[0].role"},
		{"role wrong type", `{"messages":[{"role":5,"content":"x"}]}`, "messages[0].role"},
		{"role unknown", `{"messages":[{"role":"function","content":"x"}]}`, "messages[0].role"},
		{"user content missing", `{"messages":[{"role":"user"}]}`, "messages[0].content"},
		{"content wrong type", `{"messages":[{"role":"user","content":5}]}`, "messages[0].content"},
		{"part not object", `{"messages":[{"role":"user","content":[1]}]}`, "messages[0].content[0]"},
		{"part type missing", `{"messages":[{"role":"user","content":[{"text":"x"}]}]}`, "messages[0].content[0].type"},
		{"part text missing", `{"messages":[{"role":"user","content":[{"type":"text"}]}]}`, "messages[0].content[0].text"},
		{"part text wrong type", `{"messages":[{"role":"user","content":[{"type":"text","text":1}]}]}`, "messages[0].content[0].text"},
		{"audio part", `{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]}`, "messages[0].content[0].type"},
		{"image in system", `{"messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"http://x/a.png"}}]},{"role":"user","content":"x"}]}`, "messages[0].content[0].type"},
		{"image_url missing", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, "messages[0].content[0].image_url"},
		{"image url empty", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":""}}]}]}`, "messages[0].content[0].image_url.url"},
		{"data url not base64", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`, "messages[0].content[0].image_url.url"},
		{"data url bad base64", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,!!"}}]}]}`, "messages[0].content[0].image_url.url"},
		{"tool_calls not array", `{"messages":[{"role":"assistant","tool_calls":{}}]}`, "messages[0].tool_calls"},
		{"tool call id missing", `{"messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f"}}]}]}`, "messages[0].tool_calls[0].id"},
		{"tool call name missing", `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{}}]}]}`, "messages[0].tool_calls[0].function.name"},
		{"tool call args not object", `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`, "messages[0].tool_calls[0].function.arguments"},
		{"tool call args invalid", `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]}]}`, "messages[0].tool_calls[0].function.arguments"},
		{"tool call args not string", `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{}}}]}]}`, "messages[0].tool_calls[0].function.arguments"},
		{"tool call custom", `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"custom","custom":{}}]}]}`, "messages[0].tool_calls[0].type"},
		{"tool id missing", `{"messages":[` + call + `,{"role":"tool","content":"r"}]}`, "messages[1].tool_call_id"},
		{"tool id unmatched", `{"messages":[` + call + `,{"role":"tool","tool_call_id":"c2","content":"r"}]}`, "messages[1].tool_call_id"},
		{"tool before call", `{"messages":[{"role":"tool","tool_call_id":"c1","content":"r"},` + call + `]}`, "messages[0].tool_call_id"},
		{"tool content missing", `{"messages":[` + call + `,{"role":"tool","tool_call_id":"c1"}]}`, "messages[1].content"},
		{"tools not array", `{"messages":[{"role":"user","content":"x"}],"tools":{}}`, "tools"},
		{"tool not function", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"web_search"}]}`, "tools[0].type"},
		{"tool function missing", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]}`, "tools[0].function"},
		{"tool name missing", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{}}]}`, "tools[0].function.name"},
		{"tool params not object", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":"x"}}]}`, "tools[0].function.parameters"},
		{"tool_choice unknown string", `{"messages":[{"role":"user","content":"x"}],"tool_choice":"any"}`, "tool_choice"},
		{"tool_choice number", `{"messages":[{"role":"user","content":"x"}],"tool_choice":1}`, "tool_choice"},
		{"tool_choice allowed_tools", `{"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"allowed_tools"}}`, "tool_choice.type"},
		{"tool_choice no name", `{"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"function","function":{}}}`, "tool_choice.function.name"},
		{"stop number", `{"messages":[{"role":"user","content":"x"}],"stop":1}`, "stop"},
		{"stop list with number", `{"messages":[{"role":"user","content":"x"}],"stop":["a",1]}`, "stop[1]"},
		{"temperature string", `{"messages":[{"role":"user","content":"x"}],"temperature":"hot"}`, "temperature"},
		{"top_p string", `{"messages":[{"role":"user","content":"x"}],"top_p":"x"}`, "top_p"},
		{"max_tokens fraction", `{"messages":[{"role":"user","content":"x"}],"max_tokens":1.5}`, "max_tokens"},
		{"max_tokens negative", `{"messages":[{"role":"user","content":"x"}],"max_tokens":-1}`, "max_tokens"},
		{"max_completion_tokens negative", `{"messages":[{"role":"user","content":"x"}],"max_completion_tokens":-5}`, "max_completion_tokens"},
		{"response_format string", `{"messages":[{"role":"user","content":"x"}],"response_format":"json"}`, "response_format"},
		{"response_format type missing", `{"messages":[{"role":"user","content":"x"}],"response_format":{}}`, "response_format.type"},
		{"response_format type unknown", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"grammar"}}`, "response_format.type"},
		{"json_schema missing", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema"}}`, "response_format.json_schema"},
		{"json_schema string", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":"x"}}`, "response_format.json_schema"},
		{"json_schema name missing", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"schema":{}}}}`, "response_format.json_schema.name"},
		{"json_schema name number", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":1}}}`, "response_format.json_schema.name"},
		{"json_schema schema array", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":[]}}}`, "response_format.json_schema.schema"},
		{"stream string", `{"messages":[{"role":"user","content":"x"}],"stream":"yes"}`, "stream"},
		{"stream_options wrong", `{"messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":"yes"}}`, "stream_options.include_usage"},
	})
}

// TestParseChat checks the neutral form read from a chat body: system and
// developer join System, consecutive tool messages are one user turn, ids
// and names carried (R-FMT-2).
func TestParseChat(t *testing.T) {
	body := `{"messages":[
		{"role":"system","content":"S1"},
		{"role":"user","content":"hi"},
		{"role":"developer","content":[{"type":"text","text":"S2"}]},
		{"role":"assistant","content":"","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":""}},{"id":"b","type":"function","function":{"name":"g","arguments":" { \"x\" : 1 } "}}]},
		{"role":"tool","tool_call_id":"a","content":"ra"},
		{"role":"tool","tool_call_id":"b","content":"rb"},
		{"role":"user","content":"next"}],
		"max_tokens":10,"max_completion_tokens":20,"stop":"X","stream":false,"stream_options":{"include_usage":true}}`
	r, err := ParseChat([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := &Request{
		System: []Part{{Kind: PartText, Text: "S1"}, {Kind: PartText, Text: "S2"}},
		Messages: []Message{
			{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "hi"}}},
			{Role: RoleAssistant, Parts: []Part{
				{Kind: PartText, Text: ""},
				{Kind: PartToolCall, ToolCallID: "a", ToolName: "f", Arguments: json.RawMessage(`{}`)},
				{Kind: PartToolCall, ToolCallID: "b", ToolName: "g", Arguments: json.RawMessage(`{"x":1}`)},
			}},
			{Role: RoleUser, Parts: []Part{
				{Kind: PartToolResult, ToolCallID: "a", ToolName: "f", Content: []Part{{Kind: PartText, Text: "ra"}}},
				{Kind: PartToolResult, ToolCallID: "b", ToolName: "g", Content: []Part{{Kind: PartText, Text: "rb"}}},
			}},
			{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "next"}}},
		},
		Stop:      []string{"X"},
		MaxOutput: 20,
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got  %+v\nwant %+v", r, want)
	}
	// include_usage counts only for a streamed call.
	if r.IncludeUsage {
		t.Errorf("IncludeUsage set on a call that does not stream")
	}
	r, err = ParseChat([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":true}}`))
	if err != nil || !r.Stream || !r.IncludeUsage {
		t.Errorf("stream with include_usage: %+v %v", r, err)
	}
}

// TestParseChatToolChoice covers every tool_choice form.
func TestParseChatToolChoice(t *testing.T) {
	for in, want := range map[string]ToolChoice{
		`"auto"`:     {Mode: ToolAuto},
		`"none"`:     {Mode: ToolNone},
		`"required"`: {Mode: ToolRequired},
		`{"type":"function","function":{"name":"f"}}`: {Mode: ToolNamed, Name: "f"},
		`null`: {},
	} {
		r, err := ParseChat([]byte(`{"messages":[{"role":"user","content":"x"}],"tool_choice":` + in + `}`))
		if err != nil || r.ToolChoice != want {
			t.Errorf("%s: got %+v %v, want %+v", in, r, err, want)
		}
	}
}

// TestParseChatDataURL checks that a data: URL becomes an inline image and
// any other URL stays a URL.
func TestParseChatDataURL(t *testing.T) {
	r, err := ParseChat([]byte(`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,AAEC"}},{"type":"image_url","image_url":{"url":"https://x/y"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got := r.Messages[0].Parts
	if !reflect.DeepEqual(got[0], Part{Kind: PartImage, MediaType: "image/jpeg", Data: "AAEC"}) || !strings.HasPrefix(got[1].URL, "https://") || got[1].Data != "" {
		t.Errorf("got %+v", got)
	}
}
