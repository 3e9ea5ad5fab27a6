package translate

import (
	"encoding/json"
)

// reqRespBody is the part of an OpenAI Responses request the translation
// carries. store, metadata, user, reasoning, truncation, include,
// parallel_tool_calls, prompt_cache_key, service_tier, text.verbosity are
// hints and are dropped (R-FMT-3).
type reqRespBody struct {
	Input              json.RawMessage `json:"input"`
	Instructions       json.RawMessage `json:"instructions"`
	Tools              json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	MaxOutputTokens    *int64          `json:"max_output_tokens"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"top_p"`
	Stream             *bool           `json:"stream"`
	Text               json.RawMessage `json:"text"`
	PreviousResponseID json.RawMessage `json:"previous_response_id"`
	Prompt             json.RawMessage `json:"prompt"`
	Conversation       json.RawMessage `json:"conversation"`
}

type reqRespItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    *string         `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

type reqRespPart struct {
	Type     string          `json:"type"`
	Text     *string         `json:"text"`
	ImageURL json.RawMessage `json:"image_url"`
	FileID   json.RawMessage `json:"file_id"`
}

type reqRespTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ParseResponses reads an OpenAI Responses request body into the neutral
// form (R-FMT-2). input is required: a string (one user turn) or a list of
// items — messages (input_text, input_image, output_text parts; system
// and developer messages join System after instructions), function_call
// and function_call_output items (matched by call_id). Consecutive items
// of one role are one turn. text.format (json_object, json_schema) is
// carried. Reasoning items are dropped (R-FMT-3). Server
// state (previous_response_id, prompt, conversation, item_reference), file
// inputs and built-in tools cannot be carried to another provider and are
// a *BadRequest.
func ParseResponses(body []byte) (*Request, error) {
	var b reqRespBody
	if err := reqBody(body, &b); err != nil {
		return nil, err
	}
	for _, st := range []struct {
		name string
		raw  json.RawMessage
	}{{"previous_response_id", b.PreviousResponseID}, {"prompt", b.Prompt}, {"conversation", b.Conversation}} {
		if !reqAbsent(st.raw) {
			return nil, badf(st.name, "stored state cannot be translated to another provider")
		}
	}
	r := &Request{}
	if !reqAbsent(b.Instructions) {
		s, ok := reqString(b.Instructions)
		if !ok {
			return nil, badf("instructions", "must be a string")
		}
		r.System = append(r.System, Part{Kind: PartText, Text: s})
	}
	if reqAbsent(b.Input) {
		return nil, badf("input", "is required")
	}
	if s, ok := reqString(b.Input); ok {
		r.Messages = []Message{{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: s}}}}
	} else {
		if !reqIsArray(b.Input) {
			return nil, badf("input", "must be a string or an array of items")
		}
		items, err := reqArray(b.Input, "input")
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return nil, badf("input", "must not be empty")
		}
		calls := reqCalls{}
		for i, it := range items {
			if err := reqRespItemInto(r, it, reqIndex("input", i), calls); err != nil {
				return nil, err
			}
		}
	}
	var err error
	if r.Tools, err = reqRespTools(b.Tools); err != nil {
		return nil, err
	}
	if r.ToolChoice, err = reqRespToolChoice(b.ToolChoice); err != nil {
		return nil, err
	}
	if r.MaxOutput, err = reqMaxOutput(b.MaxOutputTokens, "max_output_tokens"); err != nil {
		return nil, err
	}
	if !reqAbsent(b.Text) {
		// text.verbosity is a hint (R-FMT-3); text.format is carried.
		var text struct {
			Format json.RawMessage `json:"format"`
		}
		if err := reqObject(b.Text, "text", &text); err != nil {
			return nil, err
		}
		if r.ResponseFormat, err = reqParseResponseFormat(text.Format, "text.format", false); err != nil {
			return nil, err
		}
	}
	r.Temperature, r.TopP = b.Temperature, b.TopP
	r.Stream = b.Stream != nil && *b.Stream
	return r, nil
}

// reqRespItemInto adds the input item raw, found at path, to r.
func reqRespItemInto(r *Request, raw json.RawMessage, path string, calls reqCalls) error {
	var it reqRespItem
	if err := reqObject(raw, path, &it); err != nil {
		return err
	}
	switch it.Type {
	case "message", "":
		if it.Type == "" && it.Role == "" {
			return badf(reqJoin(path, "type"), "is required")
		}
		cf := reqJoin(path, "content")
		switch it.Role {
		case "system", "developer":
			parts, err := reqRespContent(it.Content, cf, false)
			if err != nil {
				return err
			}
			r.System = append(r.System, parts...)
		case "user":
			parts, err := reqRespContent(it.Content, cf, true)
			if err != nil {
				return err
			}
			r.Messages = reqAppendTurn(r.Messages, RoleUser, parts...)
		case "assistant":
			parts, err := reqRespContent(it.Content, cf, false)
			if err != nil {
				return err
			}
			r.Messages = reqAppendTurn(r.Messages, RoleAssistant, parts...)
		case "":
			return badf(reqJoin(path, "role"), "is required")
		default:
			return badf(reqJoin(path, "role"), "must be user, assistant, system or developer")
		}
	case "function_call":
		if it.CallID == nil || *it.CallID == "" {
			return badf(reqJoin(path, "call_id"), "is required")
		}
		if it.Name == "" {
			return badf(reqJoin(path, "name"), "is required")
		}
		args, err := reqArguments(it.Arguments, reqJoin(path, "arguments"))
		if err != nil {
			return err
		}
		calls.add(*it.CallID, it.Name)
		r.Messages = reqAppendTurn(r.Messages, RoleAssistant,
			Part{Kind: PartToolCall, ToolCallID: *it.CallID, ToolName: it.Name, Arguments: args})
	case "function_call_output":
		id := ""
		if it.CallID != nil {
			id = *it.CallID
		}
		if err := calls.check(id, reqJoin(path, "call_id")); err != nil {
			return err
		}
		content, err := reqRespOutput(it.Output, reqJoin(path, "output"))
		if err != nil {
			return err
		}
		r.Messages = reqAppendTurn(r.Messages, RoleUser,
			Part{Kind: PartToolResult, ToolCallID: id, ToolName: calls[id], Content: content})
	case "reasoning":
		// The model's past reasoning is a hint to OpenAI models only
		// (R-FMT-3).
	default:
		return badf(reqJoin(path, "type"), "input item %q cannot be translated", it.Type)
	}
	return nil
}

// reqRespContent reads a message item's content: a string or an array
// of parts (input_text, output_text; input_image when images is set;
// refusal is dropped).
func reqRespContent(raw json.RawMessage, path string, images bool) ([]Part, error) {
	return reqPartsOf(raw, path, true, "content parts", func(it json.RawMessage, f string, parts []Part) ([]Part, error) {
		p, keep, err := reqRespPartOf(it, f, images)
		if err != nil {
			return nil, err
		}
		if keep {
			parts = append(parts, p)
		}
		return parts, nil
	})
}

// reqRespPartOf reads one content part; keep is false for a part that is
// dropped.
func reqRespPartOf(raw json.RawMessage, path string, images bool) (p Part, keep bool, err error) {
	var cp reqRespPart
	if err := reqObject(raw, path, &cp); err != nil {
		return Part{}, false, err
	}
	switch cp.Type {
	case "input_text", "output_text", "text":
		if cp.Text == nil {
			return Part{}, false, badf(reqJoin(path, "text"), "is required")
		}
		return Part{Kind: PartText, Text: *cp.Text}, true, nil
	case "refusal":
		return Part{}, false, nil
	case "input_image":
		if !images {
			return Part{}, false, badf(reqJoin(path, "type"), "image parts are allowed only in user messages and tool outputs")
		}
		if !reqAbsent(cp.FileID) {
			return Part{}, false, badf(reqJoin(path, "file_id"), "stored files cannot be translated to another provider")
		}
		u, ok := reqString(cp.ImageURL)
		if !ok {
			return Part{}, false, badf(reqJoin(path, "image_url"), "must be a string")
		}
		p, err := reqImageURL(u, reqJoin(path, "image_url"))
		return p, err == nil, err
	case "":
		return Part{}, false, badf(reqJoin(path, "type"), "is required")
	}
	return Part{}, false, badf(reqJoin(path, "type"), "content part %q cannot be translated", cp.Type)
}

// reqRespOutput reads a function_call_output's output: a string or an
// array of input_text and input_image parts.
func reqRespOutput(raw json.RawMessage, path string) ([]Part, error) {
	if reqAbsent(raw) {
		return nil, badf(path, "is required")
	}
	return reqRespContent(raw, path, true)
}

// reqRespTools reads the tools array (function tools only, in the flat
// shape {type, name, description, parameters, strict}; strict is a hint).
func reqRespTools(raw json.RawMessage) ([]Tool, error) {
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
		var t reqRespTool
		if err := reqObject(it, f, &t); err != nil {
			return nil, err
		}
		if t.Type != "function" {
			return nil, badf(reqJoin(f, "type"), "only function tools can be translated")
		}
		if t.Name == "" {
			return nil, badf(reqJoin(f, "name"), "is required")
		}
		params, err := reqSchema(t.Parameters, reqJoin(f, "parameters"))
		if err != nil {
			return nil, err
		}
		tools = append(tools, Tool{Name: t.Name, Description: t.Description, Parameters: params})
	}
	return tools, nil
}

// reqRespToolChoice reads tool_choice: "none", "auto", "required" or
// {"type":"function","name":...}.
func reqRespToolChoice(raw json.RawMessage) (ToolChoice, error) {
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
		return ToolChoice{}, badf("tool_choice", "%q cannot be translated (none, auto, required or a named function)", s)
	}
	if !reqIsObject(raw) {
		return ToolChoice{}, badf("tool_choice", "must be a string or an object")
	}
	var tc struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := reqObject(raw, "tool_choice", &tc); err != nil {
		return ToolChoice{}, err
	}
	if tc.Type != "function" {
		return ToolChoice{}, badf("tool_choice.type", "only a named function can be translated")
	}
	if tc.Name == "" {
		return ToolChoice{}, badf("tool_choice.name", "is required")
	}
	return ToolChoice{Mode: ToolNamed, Name: tc.Name}, nil
}
