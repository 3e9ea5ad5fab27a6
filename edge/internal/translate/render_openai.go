package translate

import (
	"encoding/json"
	"fmt"
)

type oaBody struct {
	Model          string            `json:"model"`
	Messages       []oaMessage       `json:"messages"`
	Tools          []oaTool          `json:"tools,omitempty"`
	ToolChoice     any               `json:"tool_choice,omitempty"`
	Stop           []string          `json:"stop,omitempty"`
	Temperature    *float64          `json:"temperature,omitempty"`
	TopP           *float64          `json:"top_p,omitempty"`
	MaxTokens      int64             `json:"max_tokens,omitempty"`
	Stream         bool              `json:"stream,omitempty"`
	StreamOptions  *oaStreamOpt      `json:"stream_options,omitempty"`
	ResponseFormat *oaResponseFormat `json:"response_format,omitempty"`
}

type oaStreamOpt struct {
	IncludeUsage bool `json:"include_usage"`
}

type oaMessage struct {
	Role string `json:"role"`
	// Content is a string or []oaPart; nil (omitted) for an assistant
	// turn of tool calls only.
	Content    any          `json:"content,omitempty"`
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type oaPart struct {
	Type     string      `json:"type"`
	Text     *string     `json:"text,omitempty"`
	ImageURL *oaImageURL `json:"image_url,omitempty"`
}

type oaImageURL struct {
	URL string `json:"url"`
}

type oaToolCall struct {
	ID       string     `json:"id"`
	Type     string     `json:"type"`
	Function oaFunction `json:"function"`
}

type oaFunction struct {
	Name string `json:"name"`
	// Arguments is the JSON object as a string, as OpenAI has it.
	Arguments string `json:"arguments"`
}

type oaTool struct {
	Type     string        `json:"type"`
	Function oaFunctionDef `json:"function"`
}

type oaFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type oaNamedChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// toolErrorPrefix starts the text of a failed tool's result toward a
// format with no error flag (OpenAI).
const toolErrorPrefix = "Error: "

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
	b := oaBody{Model: model, Messages: []oaMessage{}, Stop: r.Stop, Temperature: r.Temperature, TopP: r.TopP, MaxTokens: r.MaxOutput}
	if len(r.System) > 0 {
		b.Messages = append(b.Messages, oaMessage{Role: "system", Content: joinText(r.System, "\n\n")})
	}
	for _, m := range r.Messages {
		var err error
		if m.Role == RoleAssistant {
			err = oaAssistant(&b, m)
		} else {
			err = oaUser(&b, m)
		}
		if err != nil {
			return nil, err
		}
	}
	for _, t := range r.Tools {
		b.Tools = append(b.Tools, oaTool{Type: "function", Function: oaFunctionDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	if len(r.Tools) > 0 {
		switch r.ToolChoice.Mode {
		case ToolNone:
			b.ToolChoice = "none"
		case ToolRequired:
			b.ToolChoice = "required"
		case ToolNamed:
			c := oaNamedChoice{Type: "function"}
			c.Function.Name = r.ToolChoice.Name
			b.ToolChoice = c
		}
	}
	b.ResponseFormat = renderOAFormat(r.ResponseFormat)
	if r.Stream {
		b.Stream = true
		b.StreamOptions = &oaStreamOpt{IncludeUsage: true}
	}
	return renderJSON(b)
}

// oaAssistant adds an assistant turn: its text as one string, its tool
// calls as tool_calls.
func oaAssistant(b *oaBody, m Message) error {
	msg := oaMessage{Role: "assistant"}
	text, hasText := "", false
	for _, p := range m.Parts {
		switch p.Kind {
		case PartText:
			text += p.Text
			hasText = true
		case PartToolCall:
			args, err := renderArgs(p.Arguments)
			if err != nil {
				return err
			}
			msg.ToolCalls = append(msg.ToolCalls, oaToolCall{ID: p.ToolCallID, Type: "function", Function: oaFunction{Name: p.ToolName, Arguments: string(args)}})
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

// oaUser adds a user turn: its tool results as tool messages first, then
// the rest (and the results' images) as one user message.
func oaUser(b *oaBody, m Message) error {
	var rest []oaPart
	for _, p := range m.Parts {
		switch p.Kind {
		case PartToolResult:
			text := resultText(p.Content)
			if p.IsError {
				text = toolErrorPrefix + text
			}
			b.Messages = append(b.Messages, oaMessage{Role: "tool", ToolCallID: p.ToolCallID, Content: text})
			intro := false
			for _, c := range p.Content {
				if c.Kind != PartImage {
					continue
				}
				if !intro {
					rest = append(rest, oaTextPart(fmt.Sprintf("Image returned by tool call %s:", p.ToolCallID)))
					intro = true
				}
				rest = append(rest, oaImagePart(c))
			}
		case PartText:
			rest = append(rest, oaTextPart(p.Text))
		case PartImage:
			rest = append(rest, oaImagePart(p))
		default:
			return badf("", "a user turn cannot hold a tool call")
		}
	}
	switch {
	case len(rest) == 0:
		if len(m.Parts) == 0 {
			b.Messages = append(b.Messages, oaMessage{Role: "user", Content: ""})
		}
	case len(rest) == 1 && rest[0].Type == "text":
		b.Messages = append(b.Messages, oaMessage{Role: "user", Content: *rest[0].Text})
	default:
		b.Messages = append(b.Messages, oaMessage{Role: "user", Content: rest})
	}
	return nil
}

func oaTextPart(s string) oaPart { return oaPart{Type: "text", Text: &s} }

// oaImagePart writes an image as image_url: its URL, or a data: URL of an
// inline image.
func oaImagePart(p Part) oaPart {
	u := p.URL
	if p.Data != "" {
		u = "data:" + p.MediaType + ";base64," + p.Data
	}
	return oaPart{Type: "image_url", ImageURL: &oaImageURL{URL: u}}
}
