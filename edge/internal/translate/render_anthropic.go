package translate

import (
	"encoding/json"
	"fmt"
	"strings"
)

// reqAnthropicMaxOutput is the output cap sent to Anthropic when neither the
// caller nor the member's record gives one (Anthropic requires one).
const reqAnthropicMaxOutput = 4096

// reqAnthropicMaxTemperature is the top of Anthropic's temperature range
// (OpenAI's and Gemini's go to 2).
const reqAnthropicMaxTemperature = 1

type reqANBody struct {
	Model         string         `json:"model"`
	MaxTokens     int64          `json:"max_tokens"`
	System        any            `json:"system,omitempty"`
	Messages      []reqANMessage `json:"messages"`
	Tools         []reqANTool    `json:"tools,omitempty"`
	ToolChoice    *reqANChoice   `json:"tool_choice,omitempty"`
	StopSequences []string       `json:"stop_sequences,omitempty"`
	Temperature   *float64       `json:"temperature,omitempty"`
	TopP          *float64       `json:"top_p,omitempty"`
	Stream        bool           `json:"stream,omitempty"`
}

type reqANMessage struct {
	Role    string       `json:"role"`
	Content []reqANBlock `json:"content"`
}

type reqANBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Source    *reqANSource    `json:"source,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	// Content is a tool result's content: a string or []reqANBlock.
	Content any  `json:"content,omitempty"`
	IsError bool `json:"is_error,omitempty"`
}

type reqANSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type reqANTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type reqANChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

// RenderAnthropic writes r as an Anthropic Messages request body for model
// (R-FMT-2). Bedrock takes the same body; its adapter makes the Bedrock
// changes. The choices it makes:
//   - max_tokens, which Anthropic requires, is r.MaxOutput, else
//     defaultMaxOutput (the member record's default, R-COST-1), else 4096.
//   - Turns alternate as Anthropic requires: consecutive turns of one role
//     are merged, empty text blocks and turns left empty are dropped, and
//     in a user turn the tool_result blocks come first.
//   - Tool call ids are kept, except that characters Anthropic refuses in
//     an id (outside A-Z a-z 0-9 _ -) become "_", in calls and results
//     alike.
//   - A tool without a parameter schema gets the empty object schema.
//   - tool_choice is sent only with tools and only when not the default.
//   - Newer Claude models refuse temperature together with top_p: when both
//     are given only temperature is sent (R-FMT-3: top_p is then a hint).
//   - A temperature above 1, the top of Anthropic's range, is sent as 1.
//   - System is a string when it is one text, else text blocks.
//   - A response format is not sent: Anthropic has no JSON mode, and a
//     JSON schema is a feature routing keeps from Anthropic members
//     (R-FMT-3); a json_object request reaches it as its prompt says.
func RenderAnthropic(r *Request, model string, defaultMaxOutput int64) ([]byte, error) {
	if r == nil {
		return nil, fmt.Errorf("translate: nil request")
	}
	b := reqANBody{Model: model, Messages: []reqANMessage{}, StopSequences: r.Stop, Temperature: r.Temperature, TopP: r.TopP, Stream: r.Stream}
	switch {
	case r.MaxOutput > 0:
		b.MaxTokens = r.MaxOutput
	case defaultMaxOutput > 0:
		b.MaxTokens = defaultMaxOutput
	default:
		b.MaxTokens = reqAnthropicMaxOutput
	}
	if b.Temperature != nil && b.TopP != nil {
		b.TopP = nil
	}
	if b.Temperature != nil && *b.Temperature > reqAnthropicMaxTemperature {
		t := float64(reqAnthropicMaxTemperature)
		b.Temperature = &t
	}
	var sys []reqANBlock
	for _, p := range r.System {
		if p.Kind == PartText && p.Text != "" {
			sys = append(sys, reqANText(p.Text))
		}
	}
	switch len(sys) {
	case 0:
	case 1:
		b.System = *sys[0].Text
	default:
		b.System = sys
	}
	for _, m := range r.Messages {
		role := "user"
		if m.Role == RoleAssistant {
			role = "assistant"
		}
		blocks, err := reqANBlocks(m)
		if err != nil {
			return nil, err
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(b.Messages); n > 0 && b.Messages[n-1].Role == role {
			b.Messages[n-1].Content = append(b.Messages[n-1].Content, blocks...)
		} else {
			b.Messages = append(b.Messages, reqANMessage{Role: role, Content: blocks})
		}
	}
	for i := range b.Messages {
		if b.Messages[i].Role == "user" {
			reqANResultsFirst(b.Messages[i].Content)
		}
	}
	for _, t := range r.Tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		b.Tools = append(b.Tools, reqANTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	if len(r.Tools) > 0 {
		switch r.ToolChoice.Mode {
		case ToolNone:
			b.ToolChoice = &reqANChoice{Type: "none"}
		case ToolRequired:
			b.ToolChoice = &reqANChoice{Type: "any"}
		case ToolNamed:
			b.ToolChoice = &reqANChoice{Type: "tool", Name: r.ToolChoice.Name}
		}
	}
	return reqRenderJSON(b)
}

func reqANText(s string) reqANBlock { return reqANBlock{Type: "text", Text: &s} }

// reqANBlocks writes a turn's parts as content blocks.
func reqANBlocks(m Message) ([]reqANBlock, error) {
	var out []reqANBlock
	for _, p := range m.Parts {
		switch p.Kind {
		case PartText:
			if p.Text != "" {
				out = append(out, reqANText(p.Text))
			}
		case PartImage:
			out = append(out, reqANImage(p))
		case PartToolCall:
			args, err := reqRenderArgs(p.Arguments)
			if err != nil {
				return nil, err
			}
			out = append(out, reqANBlock{Type: "tool_use", ID: reqAnthropicID(p.ToolCallID), Name: p.ToolName, Input: args})
		case PartToolResult:
			res := reqANBlock{Type: "tool_result", ToolUseID: reqAnthropicID(p.ToolCallID), IsError: p.IsError}
			var content []reqANBlock
			for _, c := range p.Content {
				switch c.Kind {
				case PartText:
					if c.Text != "" {
						content = append(content, reqANText(c.Text))
					}
				case PartImage:
					content = append(content, reqANImage(c))
				}
			}
			switch {
			case len(content) == 1 && content[0].Type == "text":
				res.Content = *content[0].Text
			case len(content) > 0:
				res.Content = content
			}
			out = append(out, res)
		}
	}
	return out, nil
}

// reqANImage writes an image block: a base64 source for an inline image, a
// url source otherwise.
func reqANImage(p Part) reqANBlock {
	if p.Data != "" {
		return reqANBlock{Type: "image", Source: &reqANSource{Type: "base64", MediaType: p.MediaType, Data: p.Data}}
	}
	return reqANBlock{Type: "image", Source: &reqANSource{Type: "url", URL: p.URL}}
}

// reqANResultsFirst moves a user turn's tool_result blocks ahead of its other
// blocks, keeping the order within each kind.
func reqANResultsFirst(blocks []reqANBlock) {
	var results, rest []reqANBlock
	for _, bl := range blocks {
		if bl.Type == "tool_result" {
			results = append(results, bl)
		} else {
			rest = append(rest, bl)
		}
	}
	copy(blocks, results)
	copy(blocks[len(results):], rest)
}

// reqAnthropicID returns a tool call id Anthropic accepts: characters outside
// A-Z a-z 0-9 _ - become "_"; an empty id becomes "call".
func reqAnthropicID(id string) string {
	if id == "" {
		return "call"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, id)
}
