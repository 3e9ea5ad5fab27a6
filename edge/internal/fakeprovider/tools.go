package fakeprovider

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Tool behaviour, the same in every flavor so that a test reads alike
// whatever the format:
//
//   - when the last turn returns tool results, the answer is text naming
//     each tool and repeating its result (cut to maxResultEcho bytes);
//   - else, when tools are declared and the caller forces a call (Gemini
//     mode ANY, OpenAI tool_choice "required" or a named function,
//     Anthropic tool_choice any or tool) or the last user text names a
//     declared tool, the answer is one call of that tool (the first
//     allowed or declared one when the text names none) whose arguments
//     fill each required property of its schema with a placeholder
//     (placeholderArgs); the finish reason is Gemini's STOP, OpenAI's
//     tool_calls, Anthropic's tool_use;
//   - a caller that forbids calls (Gemini NONE, OpenAI/Anthropic "none")
//     gets text.

// toolChoice is what the caller allows: auto (call when the text names a
// tool), any (must call one of allowed, or of all when allowed is empty)
// or none.
type toolChoice struct {
	mode    string // "AUTO", "ANY" or "NONE", Gemini's words
	allowed []string
}

// choose returns the tool to call, if any (see chooseFunctionCall).
func (tc toolChoice) choose(decls []geminiFunctionDecl, lastUserText string) (geminiFunctionDecl, bool) {
	return chooseFunctionCall(decls, tc.mode, tc.allowed, lastUserText)
}

// toolResult is one tool result of the last turn.
type toolResult struct {
	name   string
	result string
}

// resultText is the answer to the last turn's tool results.
func resultText(results []toolResult) string {
	var b strings.Builder
	for _, r := range results {
		result := r.result
		if len(result) > maxResultEcho {
			result = result[:maxResultEcho] + "…"
		}
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "The function %s returned %s.", r.name, result)
	}
	return b.String()
}

// compactJSON returns raw compacted, or its text when it is a JSON string,
// or "{}" when it is not JSON.
func compactJSON(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "{}"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// textOf returns the text of an OpenAI or Anthropic content: a string, or
// the text of its text parts.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// useReply makes the call answer with text instead of the generated
// words: u.output becomes its token count, cut to maxTokens (truncated
// then says so).
func (c *call) useReply(text string, u *usage, maxTokens *int) (truncated bool) {
	c.reply = splitWords(text)
	u.output = len(c.reply)
	if maxTokens != nil && *maxTokens >= 0 && *maxTokens < u.output {
		c.reply, u.output, truncated = c.reply[:*maxTokens], *maxTokens, true
	}
	return truncated
}

// word returns output token i of the call's answer.
func (c *call) word(i int) string {
	if c.reply != nil {
		return c.reply[i%len(c.reply)]
	}
	return tokenText(c.s.words, i)
}

// openAIChatTools reads the tools of a chat request: the declared
// functions, the choice, the last user text and the last turn's tool
// results.
func openAIChatTools(raw json.RawMessage, toolsRaw, choiceRaw json.RawMessage) (decls []geminiFunctionDecl, choice toolChoice, userText string, results []toolResult) {
	var tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	_ = json.Unmarshal(toolsRaw, &tools)
	for _, t := range tools {
		if t.Function.Name != "" {
			decls = append(decls, geminiFunctionDecl{Name: t.Function.Name, Parameters: t.Function.Parameters})
		}
	}
	choice.mode = "AUTO"
	var s string
	var named struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	switch {
	case json.Unmarshal(choiceRaw, &s) == nil:
		switch s {
		case "none":
			choice.mode = "NONE"
		case "required":
			choice.mode = "ANY"
		}
	case json.Unmarshal(choiceRaw, &named) == nil && named.Function.Name != "":
		choice = toolChoice{mode: "ANY", allowed: []string{named.Function.Name}}
	}
	var msgs []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tool_calls"`
	}
	_ = json.Unmarshal(raw, &msgs)
	names := map[string]string{}
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			names[tc.ID] = tc.Function.Name
		}
	}
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role == "tool"; i-- {
		name := names[msgs[i].ToolCallID]
		if name == "" {
			name = msgs[i].ToolCallID
		}
		results = append([]toolResult{{name, strings.TrimSpace(textOf(msgs[i].Content))}}, results...)
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			userText = textOf(msgs[i].Content)
			break
		}
	}
	return decls, choice, userText, results
}

// anthropicTools reads the tools of a Messages request, as
// openAIChatTools does.
func anthropicTools(raw json.RawMessage, toolsRaw, choiceRaw json.RawMessage) (decls []geminiFunctionDecl, choice toolChoice, userText string, results []toolResult) {
	var tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	_ = json.Unmarshal(toolsRaw, &tools)
	for _, t := range tools {
		if t.Name != "" && len(t.InputSchema) > 0 {
			decls = append(decls, geminiFunctionDecl{Name: t.Name, Parameters: t.InputSchema})
		}
	}
	var tc struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	choice.mode = "AUTO"
	if json.Unmarshal(choiceRaw, &tc) == nil {
		switch tc.Type {
		case "any":
			choice.mode = "ANY"
		case "tool":
			choice = toolChoice{mode: "ANY", allowed: []string{tc.Name}}
		case "none":
			choice.mode = "NONE"
		}
	}
	type block struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
	}
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(raw, &msgs)
	names := map[string]string{}
	for i, m := range msgs {
		var blocks []block
		if json.Unmarshal(m.Content, &blocks) != nil {
			if m.Role == "user" {
				userText = textOf(m.Content)
			}
			continue
		}
		if m.Role == "user" {
			userText = textOf(m.Content)
		}
		for _, b := range blocks {
			switch {
			case b.Type == "tool_use":
				names[b.ID] = b.Name
			case b.Type == "tool_result" && i == len(msgs)-1:
				name := names[b.ToolUseID]
				if name == "" {
					name = b.ToolUseID
				}
				results = append(results, toolResult{name, strings.TrimSpace(textOf(b.Content))})
			}
		}
	}
	return decls, choice, userText, results
}
