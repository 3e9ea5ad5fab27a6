package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"weir.dev/routing"
)

// DecodeAnswer reads a member's whole (non-streamed) chat answer in wire
// format w into the neutral form (R-FMT-2). A body that is not the
// format's answer (not JSON, no choices or candidates where they are
// required, a tool call without a name) is an error; unknown fields are
// ignored.
//
// Per format:
//   - openai (Chat Completions): choices[0] only (callers asking n > 1 are
//     not translated, R-FMT-3). message.content as a string (or a list of
//     text parts, as some compatible servers send); message.refusal becomes
//     the text when there is no content. tool_calls' arguments strings are
//     kept when they are JSON, else carried as a JSON string. finish_reason
//     stop, length, tool_calls (and the legacy function_call),
//     content_filter. usage.prompt_tokens includes
//     prompt_tokens_details.cached_tokens: the cached part is moved to
//     CacheReadTokens. OpenAI reports no cache writes. created is kept.
//   - anthropic and bedrock (Messages): text and tool_use blocks; thinking,
//     redacted_thinking and server-tool blocks are dropped (this answer
//     goes to an OpenAI-format caller, which has no place for them: a
//     Messages caller gets a Messages member's answer as is). stop_reason
//     end_turn and pause_turn → stop, max_tokens and
//     model_context_window_exceeded → length, stop_sequence (with the
//     sequence), tool_use, refusal → content filter.
//   - gemini (generateContent): candidates[0]; text parts (thought parts
//     dropped, adjacent texts joined) and functionCall parts, whose ids are
//     the call's own id when Gemini gives one, else "call_<n>" (n counts the
//     answer's calls from 0). finishReason STOP → stop (tool calls when the
//     answer holds calls), MAX_TOKENS → length, SAFETY, RECITATION,
//     LANGUAGE, BLOCKLIST, PROHIBITED_CONTENT, SPII and the IMAGE_ blocks →
//     content filter, anything else (OTHER, MALFORMED_FUNCTION_CALL, a
//     reason Gemini adds later) → stop, as the stream decoder reads them. A prompt
//     blocked before any candidate (promptFeedback.blockReason) is a content
//     filter finish with no parts. promptTokenCount includes
//     cachedContentTokenCount (moved to CacheReadTokens);
//     toolUsePromptTokenCount counts as input; thoughtsTokenCount counts as
//     output.
//
// For every format, a natural stop on an answer that holds tool calls is
// FinishToolCalls, so that callers that loop on tool calls see them.
func DecodeAnswer(w routing.WireFormat, body []byte) (*Answer, error) {
	var a *Answer
	var err error
	switch w {
	case routing.WireOpenAI:
		a, err = decodeOpenAIAnswer(body)
	case routing.WireAnthropic, routing.WireBedrock:
		a, err = decodeAnthropicAnswer(body)
	case routing.WireGemini:
		a, err = decodeGeminiAnswer(body)
	default:
		return nil, fmt.Errorf("translate: no answer decoder for wire format %v", w)
	}
	if err != nil {
		return nil, fmt.Errorf("translate: %v answer: %w", w, err)
	}
	if a.Finish == FinishStop && hasToolCalls(a.Parts) {
		a.Finish = FinishToolCalls
	}
	return a, nil
}

func hasToolCalls(ps []Part) bool {
	for _, p := range ps {
		if p.Kind == PartToolCall {
			return true
		}
	}
	return false
}

// nonNeg returns n, or 0 when n is negative.
func nonNeg(n int64) int64 {
	if n < 0 {
		return 0
	}
	return n
}

// jsonObject unmarshals body, which must be a JSON object, into v.
func jsonObject(body []byte, v any) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return errors.New("not a JSON object")
	}
	return json.Unmarshal(body, v)
}

// toolArguments returns arguments as the neutral form keeps them: compact
// JSON, "{}" when empty or null.
func toolArguments(raw []byte) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), true
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, false
	}
	return json.RawMessage(buf.Bytes()), true
}

// --- OpenAI Chat Completions ---

type oaAnswer struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Created int64  `json:"created"`
	Choices []struct {
		Message *struct {
			Content   json.RawMessage `json:"content"`
			Refusal   *string         `json:"refusal"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

func decodeOpenAIAnswer(body []byte) (*Answer, error) {
	var r oaAnswer
	if err := jsonObject(body, &r); err != nil {
		return nil, err
	}
	if len(r.Choices) == 0 || r.Choices[0].Message == nil {
		return nil, errors.New("choices[0].message: missing")
	}
	c := r.Choices[0]
	a := &Answer{ID: r.ID, Model: r.Model, Created: r.Created}
	text, err := openAIContentText(c.Message.Content)
	if err != nil {
		return nil, fmt.Errorf("choices[0].message.content: %w", err)
	}
	if text == "" && c.Message.Refusal != nil {
		text = *c.Message.Refusal
	}
	if text != "" {
		a.Parts = append(a.Parts, Part{Kind: PartText, Text: text})
	}
	for i, tc := range c.Message.ToolCalls {
		if tc.Function.Name == "" {
			return nil, fmt.Errorf("choices[0].message.tool_calls[%d].function.name: missing", i)
		}
		args, err := openAIArguments(tc.Function.Arguments)
		if err != nil {
			return nil, fmt.Errorf("choices[0].message.tool_calls[%d].function.arguments: %w", i, err)
		}
		id := tc.ID
		if id == "" {
			id = "call_" + strconv.Itoa(i)
		}
		a.Parts = append(a.Parts, Part{Kind: PartToolCall, ToolCallID: id, ToolName: tc.Function.Name, Arguments: args})
	}
	if c.FinishReason != nil {
		switch *c.FinishReason {
		case "stop":
			a.Finish = FinishStop
		case "length":
			a.Finish = FinishLength
		case "tool_calls", "function_call":
			a.Finish = FinishToolCalls
		case "content_filter":
			a.Finish = FinishContentFilter
		}
	}
	if u := r.Usage; u != nil {
		var cached int64
		if u.PromptTokensDetails != nil {
			cached = nonNeg(u.PromptTokensDetails.CachedTokens)
		}
		a.Usage = routing.Usage{
			InputTokens:     nonNeg(nonNeg(u.PromptTokens) - cached),
			OutputTokens:    nonNeg(u.CompletionTokens),
			CacheReadTokens: cached,
		}
	}
	return a, nil
}

// openAIContentText reads message.content: a string, null, or a list of
// parts whose text parts are joined.
func openAIContentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("neither a string nor a list of parts")
	}
	var b bytes.Buffer
	for _, p := range parts {
		if p.Type == "text" || p.Type == "output_text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// openAIArguments reads a tool call's arguments: a string holding JSON (the
// standard), or a JSON object (some compatible servers). Arguments that are
// not JSON (a call cut by the output cap) are carried as a JSON string so
// that nothing the model wrote is lost.
func openAIArguments(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	if raw[0] != '"' {
		args, ok := toolArguments(raw)
		if !ok {
			return nil, errors.New("not JSON")
		}
		return args, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if args, ok := toolArguments([]byte(s)); ok {
		return args, nil
	}
	return json.Marshal(s)
}

// --- Anthropic Messages (also Bedrock) ---

type anAnswer struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Model   string `json:"model"`
	Content []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        *struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

func decodeAnthropicAnswer(body []byte) (*Answer, error) {
	var r anAnswer
	if err := jsonObject(body, &r); err != nil {
		return nil, err
	}
	if r.Type != "" && r.Type != "message" {
		return nil, fmt.Errorf("type: %q is not a message", r.Type)
	}
	if r.Content == nil && r.StopReason == nil {
		return nil, errors.New("content: missing")
	}
	a := &Answer{ID: r.ID, Model: r.Model}
	for i, b := range r.Content {
		switch b.Type {
		case "text":
			if b.Text != "" {
				a.Parts = append(a.Parts, Part{Kind: PartText, Text: b.Text})
			}
		case "tool_use":
			if b.Name == "" {
				return nil, fmt.Errorf("content[%d].name: missing", i)
			}
			args, ok := toolArguments(b.Input)
			if !ok {
				return nil, fmt.Errorf("content[%d].input: not JSON", i)
			}
			id := b.ID
			if id == "" {
				id = "toolu_" + strconv.Itoa(i)
			}
			a.Parts = append(a.Parts, Part{Kind: PartToolCall, ToolCallID: id, ToolName: b.Name, Arguments: args})
		}
	}
	if r.StopReason != nil {
		switch *r.StopReason {
		case "end_turn", "pause_turn":
			a.Finish = FinishStop
		case "max_tokens", "model_context_window_exceeded":
			a.Finish = FinishLength
		case "stop_sequence":
			a.Finish = FinishStopSequence
			if r.StopSequence != nil {
				a.StopSequence = *r.StopSequence
			}
		case "tool_use":
			a.Finish = FinishToolCalls
		case "refusal":
			a.Finish = FinishContentFilter
		}
	}
	if u := r.Usage; u != nil {
		a.Usage = routing.Usage{
			InputTokens:      nonNeg(u.InputTokens),
			OutputTokens:     nonNeg(u.OutputTokens),
			CacheReadTokens:  nonNeg(u.CacheReadInputTokens),
			CacheWriteTokens: nonNeg(u.CacheCreationInputTokens),
		}
	}
	return a, nil
}

// --- Gemini generateContent ---

type gmAnswer struct {
	Candidates []struct {
		Content *struct {
			Parts []struct {
				Text         *string `json:"text"`
				Thought      bool    `json:"thought"`
				FunctionCall *struct {
					ID   string          `json:"id"`
					Name string          `json:"name"`
					Args json.RawMessage `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *gmUsage `json:"usageMetadata"`
	ResponseID    string   `json:"responseId"`
	ModelVersion  string   `json:"modelVersion"`
}

// gmUsage is Gemini's usageMetadata, whole or in a streamed chunk.
type gmUsage struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
}

// usage is u in Weir's terms: promptTokenCount includes the cached tokens,
// which are counted apart (never more than the prompt); tool-use prompt
// tokens are input, thoughts are billed as output. Negative counts are 0
// and sums saturate, whatever the member sent.
func (u *gmUsage) usage() routing.Usage {
	in := satAdd(nonNeg(u.PromptTokenCount), nonNeg(u.ToolUsePromptTokenCount))
	cached := min(nonNeg(u.CachedContentTokenCount), in)
	return routing.Usage{
		InputTokens:     in - cached,
		OutputTokens:    satAdd(nonNeg(u.CandidatesTokenCount), nonNeg(u.ThoughtsTokenCount)),
		CacheReadTokens: cached,
	}
}

func decodeGeminiAnswer(body []byte) (*Answer, error) {
	var r gmAnswer
	if err := jsonObject(body, &r); err != nil {
		return nil, err
	}
	a := &Answer{ID: r.ResponseID, Model: r.ModelVersion}
	if u := r.UsageMetadata; u != nil {
		a.Usage = u.usage()
	}
	if len(r.Candidates) == 0 {
		if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
			a.Finish = FinishContentFilter
			return a, nil
		}
		return nil, errors.New("candidates: missing")
	}
	c := r.Candidates[0]
	calls := 0
	if c.Content != nil {
		for i, p := range c.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				if p.FunctionCall.Name == "" {
					return nil, fmt.Errorf("candidates[0].content.parts[%d].functionCall.name: missing", i)
				}
				args, ok := toolArguments(p.FunctionCall.Args)
				if !ok {
					return nil, fmt.Errorf("candidates[0].content.parts[%d].functionCall.args: not JSON", i)
				}
				id := p.FunctionCall.ID
				if id == "" {
					id = "call_" + strconv.Itoa(calls)
				}
				calls++
				a.Parts = append(a.Parts, Part{Kind: PartToolCall, ToolCallID: id, ToolName: p.FunctionCall.Name, Arguments: args})
			case p.Text != nil && !p.Thought && *p.Text != "":
				if n := len(a.Parts); n > 0 && a.Parts[n-1].Kind == PartText {
					a.Parts[n-1].Text += *p.Text
				} else {
					a.Parts = append(a.Parts, Part{Kind: PartText, Text: *p.Text})
				}
			}
		}
	}
	switch c.FinishReason {
	case "MAX_TOKENS":
		a.Finish = FinishLength
	case "SAFETY", "RECITATION", "LANGUAGE", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
		"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION":
		a.Finish = FinishContentFilter
	default: // STOP, and OTHER, MALFORMED_FUNCTION_CALL, … as the stream reads them
		a.Finish = FinishStop
	}
	return a, nil
}
