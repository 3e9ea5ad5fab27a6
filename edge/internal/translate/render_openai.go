package translate

import (
	"encoding/json"
	"fmt"
)

type reqOABody struct {
	Model          string               `json:"model"`
	Messages       []reqOAMessage       `json:"messages"`
	Tools          []reqOATool          `json:"tools,omitempty"`
	ToolChoice     any                  `json:"tool_choice,omitempty"`
	Stop           []string             `json:"stop,omitempty"`
	Temperature    *float64             `json:"temperature,omitempty"`
	TopP           *float64             `json:"top_p,omitempty"`
	MaxTokens      int64                `json:"max_tokens,omitempty"`
	Stream         bool                 `json:"stream,omitempty"`
	StreamOptions  *reqOAStreamOpt      `json:"stream_options,omitempty"`
	ResponseFormat *reqOAResponseFormat `json:"response_format,omitempty"`
}

type reqOAStreamOpt struct {
	IncludeUsage bool `json:"include_usage"`
}

type reqOAMessage struct {
	Role string `json:"role"`
	// Content is a string or []reqOAPart; nil (omitted) for an assistant
	// turn of tool calls only.
	Content    any             `json:"content,omitempty"`
	ToolCalls  []reqOAToolCall `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type reqOAPart struct {
	Type     string         `json:"type"`
	Text     *string        `json:"text,omitempty"`
	ImageURL *reqOAImageURL `json:"image_url,omitempty"`
}

type reqOAImageURL struct {
	URL string `json:"url"`
}

type reqOAToolCall struct {
	ID       string        `json:"id"`
	Type     string        `json:"type"`
	Function reqOAFunction `json:"function"`
}

type reqOAFunction struct {
	Name string `json:"name"`
	// Arguments is the JSON object as a string, as OpenAI has it.
	Arguments string `json:"arguments"`
}

type reqOATool struct {
	Type     string           `json:"type"`
	Function reqOAFunctionDef `json:"function"`
}

type reqOAFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type reqOANamedChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// reqToolErrorPrefix starts the text of a failed tool's result toward a
// format with no error flag (OpenAI).
const reqToolErrorPrefix = "Error: "

// RenderOpenAI writes r as an OpenAI Chat Completions request body for
// model (R-FMT-2). The choices it makes:
//
//   - System parts become one leading system message, joined by a blank
//     line.
//
//   - The output cap is sent as max_tokens (understood by OpenAI-compatible
//     servers and Azure alike; max_completion_tokens is not).
//
//   - Tool results become one "tool" message each, ahead of the rest of
//     their turn. A tool message holds text only: a failed result's text
//     starts with "Error: ", and images a tool returned follow in a user
//     message, each introduced by a text part naming the call.
//
//   - tool_choice is sent only with tools (OpenAI refuses it alone) and
//     only when it is not the default (auto).
//
//   - A streamed call always asks for usage (stream_options.include_usage)
//     so the gateway can count it; the caller's own wish is applied when
//     the answer is translated back.
//
//   - A response format is response_format (json_object or json_schema).
//
// The output is compact JSON without HTML escaping, deterministic for a
// given r.
func RenderOpenAI(r *Request, model string) ([]byte, error) {
	if r == nil {
		return nil, fmt.Errorf("translate: nil request")
	}
	b := reqOABody{Model: model, Messages: []reqOAMessage{}, Stop: r.Stop, Temperature: r.Temperature, TopP: r.TopP, MaxTokens: r.MaxOutput}
	if len(r.System) > 0 {
		b.Messages = append(b.Messages, reqOAMessage{Role: "system", Content: reqJoinText(r.System, "\n\n")})
	}
	for _, m := range r.Messages {
		var err error
		if m.Role == RoleAssistant {
			err = reqOAAssistant(&b, m)
		} else {
			err = reqOAUser(&b, m)
		}
		if err != nil {
			return nil, err
		}
	}
	for _, t := range r.Tools {
		b.Tools = append(b.Tools, reqOATool{Type: "function", Function: reqOAFunctionDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	if len(r.Tools) > 0 {
		switch r.ToolChoice.Mode {
		case ToolNone:
			b.ToolChoice = "none"
		case ToolRequired:
			b.ToolChoice = "required"
		case ToolNamed:
			c := reqOANamedChoice{Type: "function"}
			c.Function.Name = r.ToolChoice.Name
			b.ToolChoice = c
		}
	}
	b.ResponseFormat = reqRenderOAFormat(r.ResponseFormat)
	if r.Stream {
		b.Stream = true
		b.StreamOptions = &reqOAStreamOpt{IncludeUsage: true}
	}
	return reqRenderJSON(b)
}

// reqOAAssistant adds an assistant turn: its text as one string, its tool
// calls as tool_calls.
func reqOAAssistant(b *reqOABody, m Message) error {
	msg := reqOAMessage{Role: "assistant"}
	text, hasText := "", false
	for _, p := range m.Parts {
		switch p.Kind {
		case PartText:
			text += p.Text
			hasText = true
		case PartToolCall:
			args, err := reqRenderArgs(p.Arguments)
			if err != nil {
				return err
			}
			msg.ToolCalls = append(msg.ToolCalls, reqOAToolCall{ID: p.ToolCallID, Type: "function", Function: reqOAFunction{Name: p.ToolName, Arguments: string(args)}})
		default:
			return badf("", "an assistant turn cannot hold this content toward OpenAI")
		}
	}
	if hasText || len(msg.ToolCalls) == 0 {
		msg.Content = text
	}
	b.Messages = append(b.Messages, msg)
	return nil
}

// reqOAUser adds a user turn: its tool results as tool messages first, then
// the rest (and the results' images) as one user message.
func reqOAUser(b *reqOABody, m Message) error {
	var rest []reqOAPart
	for _, p := range m.Parts {
		switch p.Kind {
		case PartToolResult:
			text := reqResultText(p.Content)
			if p.IsError {
				text = reqToolErrorPrefix + text
			}
			b.Messages = append(b.Messages, reqOAMessage{Role: "tool", ToolCallID: p.ToolCallID, Content: text})
			intro := false
			for _, c := range p.Content {
				if c.Kind != PartImage {
					continue
				}
				if !intro {
					rest = append(rest, reqOATextPart(fmt.Sprintf("Image returned by tool call %s:", p.ToolCallID)))
					intro = true
				}
				rest = append(rest, reqOAImagePart(c))
			}
		case PartText:
			rest = append(rest, reqOATextPart(p.Text))
		case PartImage:
			rest = append(rest, reqOAImagePart(p))
		default:
			return badf("", "a user turn cannot hold a tool call")
		}
	}
	switch {
	case len(rest) == 0:
		if len(m.Parts) == 0 {
			b.Messages = append(b.Messages, reqOAMessage{Role: "user", Content: ""})
		}
	case len(rest) == 1 && rest[0].Type == "text":
		b.Messages = append(b.Messages, reqOAMessage{Role: "user", Content: *rest[0].Text})
	default:
		b.Messages = append(b.Messages, reqOAMessage{Role: "user", Content: rest})
	}
	return nil
}

func reqOATextPart(s string) reqOAPart { return reqOAPart{Type: "text", Text: &s} }

// reqOAImagePart writes an image as image_url: its URL, or a data: URL of an
// inline image.
func reqOAImagePart(p Part) reqOAPart {
	u := p.URL
	if p.Data != "" {
		u = "data:" + p.MediaType + ";base64," + p.Data
	}
	return reqOAPart{Type: "image_url", ImageURL: &reqOAImageURL{URL: u}}
}
