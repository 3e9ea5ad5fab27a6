package translate

import (
	"encoding/json"
)

// reqChatBody is the part of an OpenAI Chat Completions request the
// translation carries. Other fields (seed, user, metadata, n, logprobs,
// logit_bias, penalties, parallel_tool_calls, prompt_cache_key,
// service_tier, reasoning_effort, store, ...) are hints the member may not
// be able to say and are dropped (R-FMT-3); shape-changing ones are
// refused earlier by routing.
type reqChatBody struct {
	Messages            json.RawMessage `json:"messages"`
	Tools               json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	Stop                json.RawMessage `json:"stop"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	Stream              *bool           `json:"stream"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	Functions           json.RawMessage `json:"functions"`
	StreamOptions       *struct {
		IncludeUsage *bool `json:"include_usage"`
	} `json:"stream_options"`
}

type reqChatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID *string         `json:"tool_call_id"`
}

type reqChatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type reqChatContentPart struct {
	Type     string          `json:"type"`
	Text     *string         `json:"text"`
	Refusal  *string         `json:"refusal"`
	ImageURL json.RawMessage `json:"image_url"`
}

type reqChatTool struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// ParseChat reads an OpenAI Chat Completions request body into the neutral
// form (R-FMT-2). The model is not read (the gateway has resolved it);
// messages are required. System and developer messages become System, in
// order; each run of consecutive tool messages becomes one user turn of
// tool results, each matched with an earlier assistant tool call by id.
// max_completion_tokens wins over max_tokens when both are given;
// response_format (json_object, json_schema) is carried. A body
// that cannot be read or carried is a *BadRequest naming the field.
func ParseChat(body []byte) (*Request, error) {
	var b reqChatBody
	if err := reqBody(body, &b); err != nil {
		return nil, err
	}
	if !reqAbsent(b.Functions) {
		// Dropping the legacy functions would silently take the tools
		// away; the caller can say the same with tools.
		return nil, badf("functions", "legacy functions cannot be translated; use tools")
	}
	r := &Request{}
	if reqAbsent(b.Messages) {
		return nil, badf("messages", "is required")
	}
	msgs, err := reqArray(b.Messages, "messages")
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, badf("messages", "must not be empty")
	}
	calls := reqCalls{}
	for i, raw := range msgs {
		if err := reqChatMessageInto(r, raw, reqIndex("messages", i), calls); err != nil {
			return nil, err
		}
	}
	if r.Tools, err = reqChatTools(b.Tools); err != nil {
		return nil, err
	}
	if r.ToolChoice, err = reqChatToolChoice(b.ToolChoice, "tool_choice"); err != nil {
		return nil, err
	}
	if r.Stop, err = reqStops(b.Stop, "stop"); err != nil {
		return nil, err
	}
	r.Temperature, r.TopP = b.Temperature, b.TopP
	if r.MaxOutput, err = reqMaxOutput(b.MaxTokens, "max_tokens"); err != nil {
		return nil, err
	}
	if b.MaxCompletionTokens != nil {
		if r.MaxOutput, err = reqMaxOutput(b.MaxCompletionTokens, "max_completion_tokens"); err != nil {
			return nil, err
		}
	}
	if r.ResponseFormat, err = reqParseResponseFormat(b.ResponseFormat, "response_format", true); err != nil {
		return nil, err
	}
	r.Stream = b.Stream != nil && *b.Stream
	if r.Stream && b.StreamOptions != nil && b.StreamOptions.IncludeUsage != nil {
		r.IncludeUsage = *b.StreamOptions.IncludeUsage
	}
	return r, nil
}

// reqChatMessageInto adds the message raw, found at path, to r.
func reqChatMessageInto(r *Request, raw json.RawMessage, path string, calls reqCalls) error {
	var m reqChatMessage
	if err := reqObject(raw, path, &m); err != nil {
		return err
	}
	switch m.Role {
	case "system", "developer":
		parts, err := reqChatContent(m.Content, reqJoin(path, "content"), false)
		if err != nil {
			return err
		}
		r.System = append(r.System, parts...)
	case "user":
		parts, err := reqChatContent(m.Content, reqJoin(path, "content"), true)
		if err != nil {
			return err
		}
		r.Messages = append(r.Messages, Message{Role: RoleUser, Parts: parts})
	case "assistant":
		var parts []Part
		if !reqAbsent(m.Content) {
			var err error
			if parts, err = reqChatContent(m.Content, reqJoin(path, "content"), false); err != nil {
				return err
			}
		}
		tcs, err := reqChatToolCalls(m.ToolCalls, reqJoin(path, "tool_calls"), calls)
		if err != nil {
			return err
		}
		parts = append(parts, tcs...)
		r.Messages = append(r.Messages, Message{Role: RoleAssistant, Parts: parts})
	case "tool":
		f := reqJoin(path, "tool_call_id")
		if m.ToolCallID == nil {
			return badf(f, "is required")
		}
		if err := calls.check(*m.ToolCallID, f); err != nil {
			return err
		}
		content, err := reqChatContent(m.Content, reqJoin(path, "content"), false)
		if err != nil {
			return err
		}
		res := Part{Kind: PartToolResult, ToolCallID: *m.ToolCallID, ToolName: calls[*m.ToolCallID], Content: content}
		// Consecutive tool messages are one user turn of results.
		if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == RoleUser && reqChatAllResults(r.Messages[n-1].Parts) {
			r.Messages[n-1].Parts = append(r.Messages[n-1].Parts, res)
		} else {
			r.Messages = append(r.Messages, Message{Role: RoleUser, Parts: []Part{res}})
		}
	case "":
		return badf(reqJoin(path, "role"), "is required")
	default:
		return badf(reqJoin(path, "role"), "%q cannot be translated (system, developer, user, assistant or tool)", m.Role)
	}
	return nil
}

// reqChatAllResults reports whether parts are all tool results (a turn made
// of tool messages).
func reqChatAllResults(parts []Part) bool {
	for _, p := range parts {
		if p.Kind != PartToolResult {
			return false
		}
	}
	return len(parts) > 0
}

// reqChatContent reads a message's content: a string or an array of parts
// (text, and image_url when images is set; refusal parts are dropped).
func reqChatContent(raw json.RawMessage, path string, images bool) ([]Part, error) {
	return reqPartsOf(raw, path, true, "content parts", func(it json.RawMessage, f string, parts []Part) ([]Part, error) {
		var cp reqChatContentPart
		if err := reqObject(it, f, &cp); err != nil {
			return nil, err
		}
		switch cp.Type {
		case "text":
			if cp.Text == nil {
				return nil, badf(reqJoin(f, "text"), "is required")
			}
			parts = append(parts, Part{Kind: PartText, Text: *cp.Text})
		case "refusal":
			// The assistant's refusal text is its own account of a past
			// turn; no member format has a place for it.
		case "image_url":
			if !images {
				return nil, badf(reqJoin(f, "type"), "image parts are allowed only in user messages")
			}
			p, err := reqChatImage(cp.ImageURL, reqJoin(f, "image_url"))
			if err != nil {
				return nil, err
			}
			parts = append(parts, p)
		case "":
			return nil, badf(reqJoin(f, "type"), "is required")
		default:
			return nil, badf(reqJoin(f, "type"), "content part %q cannot be translated", cp.Type)
		}
		return parts, nil
	})
}

// reqChatImage reads an image_url object ({url, detail}; detail is a hint and
// dropped).
func reqChatImage(raw json.RawMessage, path string) (Part, error) {
	if reqAbsent(raw) {
		return Part{}, badf(path, "is required")
	}
	var iu struct {
		URL string `json:"url"`
	}
	if err := reqObject(raw, path, &iu); err != nil {
		return Part{}, err
	}
	return reqImageURL(iu.URL, reqJoin(path, "url"))
}

// reqChatToolCalls reads an assistant message's tool_calls and records them.
func reqChatToolCalls(raw json.RawMessage, path string, calls reqCalls) ([]Part, error) {
	if reqAbsent(raw) {
		return nil, nil
	}
	items, err := reqArray(raw, path)
	if err != nil {
		return nil, err
	}
	parts := make([]Part, 0, len(items))
	for i, it := range items {
		f := reqIndex(path, i)
		var tc reqChatToolCall
		if err := reqObject(it, f, &tc); err != nil {
			return nil, err
		}
		if tc.Type != "" && tc.Type != "function" {
			return nil, badf(reqJoin(f, "type"), "tool call %q cannot be translated", tc.Type)
		}
		if tc.ID == "" {
			return nil, badf(reqJoin(f, "id"), "is required")
		}
		if tc.Function.Name == "" {
			return nil, badf(reqJoin(f, "function.name"), "is required")
		}
		args, err := reqArguments(tc.Function.Arguments, reqJoin(f, "function.arguments"))
		if err != nil {
			return nil, err
		}
		calls.add(tc.ID, tc.Function.Name)
		parts = append(parts, Part{Kind: PartToolCall, ToolCallID: tc.ID, ToolName: tc.Function.Name, Arguments: args})
	}
	return parts, nil
}

// reqChatTools reads the tools array (function tools only).
func reqChatTools(raw json.RawMessage) ([]Tool, error) {
	if reqAbsent(raw) {
		return nil, nil
	}
	items, err := reqArray(raw, "tools")
	if err != nil {
		return nil, err
	}
	tools := make([]Tool, 0, len(items))
	for i, it := range items {
		f := reqIndex("tools", i)
		var t reqChatTool
		if err := reqObject(it, f, &t); err != nil {
			return nil, err
		}
		if t.Type != "function" {
			return nil, badf(reqJoin(f, "type"), "only function tools can be translated")
		}
		if t.Function == nil {
			return nil, badf(reqJoin(f, "function"), "is required")
		}
		if t.Function.Name == "" {
			return nil, badf(reqJoin(f, "function.name"), "is required")
		}
		params, err := reqSchema(t.Function.Parameters, reqJoin(f, "function.parameters"))
		if err != nil {
			return nil, err
		}
		tools = append(tools, Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: params})
	}
	return tools, nil
}

// reqChatToolChoice reads tool_choice: "none", "auto", "required" or
// {"type":"function","function":{"name":...}}.
func reqChatToolChoice(raw json.RawMessage, path string) (ToolChoice, error) {
	if reqAbsent(raw) {
		return ToolChoice{}, nil
	}
	if s, ok := reqString(raw); ok {
		switch s {
		case "auto":
			return ToolChoice{Mode: ToolAuto}, nil
		case "none":
			return ToolChoice{Mode: ToolNone}, nil
		case "required":
			return ToolChoice{Mode: ToolRequired}, nil
		}
		return ToolChoice{}, badf(path, "%q cannot be translated (none, auto, required or a named function)", s)
	}
	var tc struct {
		Type     string `json:"type"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if !reqIsObject(raw) {
		return ToolChoice{}, badf(path, "must be a string or an object")
	}
	if err := reqObject(raw, path, &tc); err != nil {
		return ToolChoice{}, err
	}
	if tc.Type != "function" {
		return ToolChoice{}, badf(reqJoin(path, "type"), "only a named function can be translated")
	}
	if tc.Function == nil || tc.Function.Name == "" {
		return ToolChoice{}, badf(reqJoin(path, "function.name"), "is required")
	}
	return ToolChoice{Mode: ToolNamed, Name: tc.Function.Name}, nil
}
