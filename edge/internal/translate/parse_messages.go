package translate

import (
	"encoding/json"
)

// reqMsgsBody is the part of an Anthropic Messages request the
// translation carries. metadata, top_k, thinking, service_tier,
// cache_control on blocks and disable_parallel_tool_use are hints and are
// dropped (R-FMT-3).
type reqMsgsBody struct {
	System        json.RawMessage `json:"system"`
	Messages      json.RawMessage `json:"messages"`
	Tools         json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage `json:"tool_choice"`
	StopSequences json.RawMessage `json:"stop_sequences"`
	MaxTokens     *int64          `json:"max_tokens"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	Stream        *bool           `json:"stream"`
}

type reqMsgsMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type reqMsgsBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	Source    json.RawMessage `json:"source"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID *string         `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   *bool           `json:"is_error"`
}

type reqMsgsTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// ParseMessages reads an Anthropic Messages request body into the neutral
// form (R-FMT-2). The model is not read; messages are required; max_tokens
// is not (a translated call without one gets the member's default).
// Thinking blocks in past assistant turns are dropped (R-FMT-3); server
// tools, documents and other blocks no other format can say are a
// *BadRequest, as is a tool_result whose tool_use_id matches no earlier
// tool_use.
func ParseMessages(body []byte) (*Request, error) {
	var b reqMsgsBody
	if err := reqBody(body, &b); err != nil {
		return nil, err
	}
	r := &Request{}
	var err error
	if r.System, err = reqMsgsSystem(b.System); err != nil {
		return nil, err
	}
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
		f := reqIndex("messages", i)
		var m reqMsgsMessage
		if err := reqObject(raw, f, &m); err != nil {
			return nil, err
		}
		var role Role
		switch m.Role {
		case "user":
			role = RoleUser
		case "assistant":
			role = RoleAssistant
		case "":
			return nil, badf(reqJoin(f, "role"), "is required")
		default:
			return nil, badf(reqJoin(f, "role"), "must be user or assistant")
		}
		parts, err := reqMsgsContent(m.Content, reqJoin(f, "content"), role, calls)
		if err != nil {
			return nil, err
		}
		r.Messages = append(r.Messages, Message{Role: role, Parts: parts})
	}
	if r.Tools, err = reqMsgsTools(b.Tools); err != nil {
		return nil, err
	}
	if r.ToolChoice, err = reqMsgsToolChoice(b.ToolChoice); err != nil {
		return nil, err
	}
	if !reqAbsent(b.StopSequences) {
		if !reqIsArray(b.StopSequences) {
			return nil, badf("stop_sequences", "must be an array of strings")
		}
		if r.Stop, err = reqStops(b.StopSequences, "stop_sequences"); err != nil {
			return nil, err
		}
	}
	if r.MaxOutput, err = reqMaxOutput(b.MaxTokens, "max_tokens"); err != nil {
		return nil, err
	}
	r.Temperature, r.TopP = b.Temperature, b.TopP
	r.Stream = b.Stream != nil && *b.Stream
	return r, nil
}

// reqMsgsSystem reads system: a string or an array of text blocks.
func reqMsgsSystem(raw json.RawMessage) ([]Part, error) {
	return reqPartsOf(raw, "system", false, "text blocks", func(it json.RawMessage, f string, parts []Part) ([]Part, error) {
		p, err := reqMsgsText(it, f)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
		return parts, nil
	})
}

// reqMsgsText reads a block that must be a text block.
func reqMsgsText(raw json.RawMessage, path string) (Part, error) {
	var bl reqMsgsBlock
	if err := reqObject(raw, path, &bl); err != nil {
		return Part{}, err
	}
	if bl.Type != "text" {
		return Part{}, badf(reqJoin(path, "type"), "must be text")
	}
	if bl.Text == nil {
		return Part{}, badf(reqJoin(path, "text"), "is required")
	}
	return Part{Kind: PartText, Text: *bl.Text}, nil
}

// reqMsgsContent reads a message's content: a string or an array of
// blocks. Tool calls are recorded in calls; tool results are checked
// against it.
func reqMsgsContent(raw json.RawMessage, path string, role Role, calls reqCalls) ([]Part, error) {
	return reqPartsOf(raw, path, true, "content blocks", func(it json.RawMessage, f string, parts []Part) ([]Part, error) {
		var bl reqMsgsBlock
		if err := reqObject(it, f, &bl); err != nil {
			return nil, err
		}
		tf := reqJoin(f, "type")
		switch bl.Type {
		case "text":
			if bl.Text == nil {
				return nil, badf(reqJoin(f, "text"), "is required")
			}
			parts = append(parts, Part{Kind: PartText, Text: *bl.Text})
		case "image":
			if role != RoleUser {
				return nil, badf(tf, "image blocks are allowed only in user messages")
			}
			p, err := reqMsgsImage(bl.Source, reqJoin(f, "source"))
			if err != nil {
				return nil, err
			}
			parts = append(parts, p)
		case "tool_use":
			if role != RoleAssistant {
				return nil, badf(tf, "tool_use blocks are allowed only in assistant messages")
			}
			if bl.ID == "" {
				return nil, badf(reqJoin(f, "id"), "is required")
			}
			if bl.Name == "" {
				return nil, badf(reqJoin(f, "name"), "is required")
			}
			args := json.RawMessage("{}")
			if !reqAbsent(bl.Input) {
				var err error
				if args, err = reqJSONObject(bl.Input, reqJoin(f, "input")); err != nil {
					return nil, err
				}
			}
			calls.add(bl.ID, bl.Name)
			parts = append(parts, Part{Kind: PartToolCall, ToolCallID: bl.ID, ToolName: bl.Name, Arguments: args})
		case "tool_result":
			if role != RoleUser {
				return nil, badf(tf, "tool_result blocks are allowed only in user messages")
			}
			id := ""
			if bl.ToolUseID != nil {
				id = *bl.ToolUseID
			}
			if err := calls.check(id, reqJoin(f, "tool_use_id")); err != nil {
				return nil, err
			}
			content, err := reqMsgsResultContent(bl.Content, reqJoin(f, "content"))
			if err != nil {
				return nil, err
			}
			parts = append(parts, Part{Kind: PartToolResult, ToolCallID: id, ToolName: calls[id], Content: content, IsError: bl.IsError != nil && *bl.IsError})
		case "thinking", "redacted_thinking":
			// The model's past reasoning is a hint to Anthropic models
			// only (R-FMT-3).
		case "":
			return nil, badf(tf, "is required")
		default:
			return nil, badf(tf, "content block %q cannot be translated", bl.Type)
		}
		return parts, nil
	})
}

// reqMsgsResultContent reads a tool_result's content: absent, a string,
// or an array of text and image blocks.
func reqMsgsResultContent(raw json.RawMessage, path string) ([]Part, error) {
	return reqPartsOf(raw, path, false, "content blocks", func(it json.RawMessage, f string, parts []Part) ([]Part, error) {
		var bl reqMsgsBlock
		if err := reqObject(it, f, &bl); err != nil {
			return nil, err
		}
		switch bl.Type {
		case "text":
			if bl.Text == nil {
				return nil, badf(reqJoin(f, "text"), "is required")
			}
			parts = append(parts, Part{Kind: PartText, Text: *bl.Text})
		case "image":
			p, err := reqMsgsImage(bl.Source, reqJoin(f, "source"))
			if err != nil {
				return nil, err
			}
			parts = append(parts, p)
		default:
			return nil, badf(reqJoin(f, "type"), "a tool result may hold only text and image blocks")
		}
		return parts, nil
	})
}

// reqMsgsImage reads an image source: base64 (media_type, data) or url.
func reqMsgsImage(raw json.RawMessage, path string) (Part, error) {
	if reqAbsent(raw) {
		return Part{}, badf(path, "is required")
	}
	var src struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	}
	if err := reqObject(raw, path, &src); err != nil {
		return Part{}, err
	}
	switch src.Type {
	case "base64":
		if src.MediaType == "" {
			return Part{}, badf(reqJoin(path, "media_type"), "is required")
		}
		if src.Data == "" {
			return Part{}, badf(reqJoin(path, "data"), "is required")
		}
		if !reqBase64(src.Data) {
			return Part{}, badf(reqJoin(path, "data"), "must be base64")
		}
		return Part{Kind: PartImage, MediaType: src.MediaType, Data: src.Data}, nil
	case "url":
		if src.URL == "" {
			return Part{}, badf(reqJoin(path, "url"), "is required")
		}
		return Part{Kind: PartImage, URL: src.URL}, nil
	}
	return Part{}, badf(reqJoin(path, "type"), "an image source must be base64 or url")
}

// reqMsgsTools reads the tools array (custom tools only: server tools
// such as web search run at Anthropic and cannot be translated).
func reqMsgsTools(raw json.RawMessage) ([]Tool, error) {
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
		var t reqMsgsTool
		if err := reqObject(it, f, &t); err != nil {
			return nil, err
		}
		if t.Type != "" && t.Type != "custom" {
			return nil, badf(reqJoin(f, "type"), "tool %q cannot be translated (custom tools only)", t.Type)
		}
		if t.Name == "" {
			return nil, badf(reqJoin(f, "name"), "is required")
		}
		params, err := reqSchema(t.InputSchema, reqJoin(f, "input_schema"))
		if err != nil {
			return nil, err
		}
		tools = append(tools, Tool{Name: t.Name, Description: t.Description, Parameters: params})
	}
	return tools, nil
}

// reqMsgsToolChoice reads tool_choice {type: auto|any|tool|none, name}.
func reqMsgsToolChoice(raw json.RawMessage) (ToolChoice, error) {
	if reqAbsent(raw) {
		return ToolChoice{}, nil
	}
	var tc struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := reqObject(raw, "tool_choice", &tc); err != nil {
		return ToolChoice{}, err
	}
	switch tc.Type {
	case "auto":
		return ToolChoice{Mode: ToolAuto}, nil
	case "none":
		return ToolChoice{Mode: ToolNone}, nil
	case "any":
		return ToolChoice{Mode: ToolRequired}, nil
	case "tool":
		if tc.Name == "" {
			return ToolChoice{}, badf("tool_choice.name", "is required")
		}
		return ToolChoice{Mode: ToolNamed, Name: tc.Name}, nil
	}
	return ToolChoice{}, badf("tool_choice.type", "must be auto, any, tool or none")
}
