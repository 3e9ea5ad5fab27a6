package translate

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"

	"weir.dev/routing"
)

// EncodeAnswer writes the neutral answer a as a whole answer of the caller's
// endpoint ep (R-FMT-2). model is the model name the caller asked for; it is
// what the answer names, not a.Model (the member's own id for it).
//
// The output is deterministic: the same answer gives the same bytes. The
// answer's id is the endpoint's prefix ("chatcmpl-", "resp_", "msg_")
// followed by a.ID without the prefix of its own format (as the stream
// encoder does: "msg_01X" becomes "chatcmpl-01X"), or, when a.ID is
// empty, by a hash of the answer. created is a.Created (0 when the member
// gave no time). An empty model names a.Model.
//
// FinishUnknown reads as tool calls when the answer holds tool calls, else
// as the natural end.
//
// Lossy mappings, by endpoint:
//   - chat: FinishStopSequence is "stop" (Chat Completions does not say
//     which stop matched). prompt_tokens is input
//   - cache read + cache write, with cache reads as
//     prompt_tokens_details.cached_tokens; cache writes have no field.
//     Texts are joined into one content string; content is null when the
//     answer holds tool calls and no text.
//   - responses: status "completed", or "incomplete" with
//     incomplete_details.reason "max_output_tokens" (FinishLength) or
//     "content_filter" (FinishContentFilter); each text is a message item
//     and each tool call a function_call item, in the answer's order, with
//     the item ids the stream encoder gives ("msg_<id>_<n>",
//     "fc_<id>_<n>", n the output index). The request's parallel_tool_calls,
//     tool_choice and tools are not known here: true, "auto" and [] are
//     written. input_tokens counts cache reads and writes as for chat.
//   - messages: FinishContentFilter is "refusal". A tool call's arguments that are not a JSON object are
//     written as they are (a Messages client expects an object).
//
// A tool call without a name, or arguments that are not JSON, is an error.
func EncodeAnswer(ep routing.Endpoint, a *Answer, model string) ([]byte, error) {
	if a == nil {
		return nil, errors.New("translate: no answer to encode")
	}
	for i, p := range a.Parts {
		if p.Kind == PartToolCall {
			if p.ToolName == "" {
				return nil, fmt.Errorf("translate: answer part %d: tool call without a name", i)
			}
			if len(p.Arguments) > 0 && !json.Valid(p.Arguments) {
				return nil, fmt.Errorf("translate: answer part %d: tool call arguments are not JSON", i)
			}
		}
	}
	if model == "" {
		model = a.Model
	}
	if a.Finish == FinishUnknown && hasToolCalls(a.Parts) {
		b := *a
		b.Finish = FinishToolCalls
		a = &b
	}
	var v any
	switch ep {
	case routing.EndpointChatCompletions:
		v = chatAnswer(a, model)
	case routing.EndpointResponses:
		v = responsesAnswer(a, model)
	case routing.EndpointMessages:
		v = messagesAnswer(a, model)
	default:
		return nil, fmt.Errorf("translate: no answer encoder for endpoint %v", ep)
	}
	return marshalPlain(v)
}

// marshalPlain is json.Marshal without HTML escaping: the model's "<" and
// "&" reach the caller as written, as the providers send them.
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// answerID returns the answer's id with prefix (see EncodeAnswer).
func answerID(prefix string, a *Answer) string {
	for _, pre := range []string{"chatcmpl-", "msg_", "resp_"} {
		if strings.HasPrefix(a.ID, pre) && len(a.ID) > len(pre) {
			return prefix + a.ID[len(pre):]
		}
	}
	if a.ID != "" {
		return prefix + a.ID
	}
	h := fnv.New64a()
	for _, p := range a.Parts {
		fmt.Fprintf(h, "%d\x00%s\x00%s\x00%s\x00%s\x00", p.Kind, p.Text, p.ToolCallID, p.ToolName, p.Arguments)
	}
	fmt.Fprintf(h, "%d\x00%s\x00%v", a.Finish, a.StopSequence, a.Usage)
	return prefix + "weir" + hex.EncodeToString(h.Sum(nil))
}

// callID returns tool call part i's id, made up when it has none.
func callID(p Part, i int) string {
	if p.ToolCallID != "" {
		return p.ToolCallID
	}
	return "call_" + strconv.Itoa(i)
}

// args returns a tool call part's arguments, "{}" when it has none.
func args(p Part) json.RawMessage {
	if len(p.Arguments) == 0 {
		return json.RawMessage("{}")
	}
	return p.Arguments
}

// argsString is arguments as the string OpenAI formats carry: the JSON
// text, or the string itself when the arguments are a JSON string (a
// decoder's way of keeping arguments that were not JSON).
func argsString(p Part) string {
	raw := args(p)
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// promptTokens is the OpenAI count of input tokens: cached ones included.
func promptTokens(u routing.Usage) int64 {
	return satAdd(satAdd(u.InputTokens, u.CacheReadTokens), u.CacheWriteTokens)
}

// satAdd adds two counts, saturating instead of wrapping.
func satAdd(x, y int64) int64 {
	if s := x + y; (y > 0 && s < x) || (y < 0 && s > x) {
		if y > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return x + y
}

// --- Chat Completions ---

type chatToolCallJSON struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatChoiceJSON struct {
	Index   int `json:"index"`
	Message struct {
		Role      string             `json:"role"`
		Content   *string            `json:"content"`
		Refusal   *string            `json:"refusal"`
		ToolCalls []chatToolCallJSON `json:"tool_calls,omitempty"`
	} `json:"message"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason string    `json:"finish_reason"`
}

type chatAnswerJSON struct {
	ID      string           `json:"id"`
	Object  string           `json:"object"`
	Created int64            `json:"created"`
	Model   string           `json:"model"`
	Choices []chatChoiceJSON `json:"choices"`
	Usage   struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		TotalTokens         int64 `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

func chatFinish(f Finish) string {
	switch f {
	case FinishLength:
		return "length"
	case FinishToolCalls:
		return "tool_calls"
	case FinishContentFilter:
		return "content_filter"
	}
	return "stop"
}

func chatAnswer(a *Answer, model string) *chatAnswerJSON {
	out := &chatAnswerJSON{ID: answerID("chatcmpl-", a), Object: "chat.completion", Created: a.Created, Model: model}
	out.Choices = make([]chatChoiceJSON, 1)
	c := &out.Choices[0]
	c.Message.Role = "assistant"
	var text strings.Builder
	hasText := false
	for i, p := range a.Parts {
		switch p.Kind {
		case PartText:
			text.WriteString(p.Text)
			hasText = true
		case PartToolCall:
			var tc chatToolCallJSON
			tc.ID, tc.Type = callID(p, i), "function"
			tc.Function.Name, tc.Function.Arguments = p.ToolName, argsString(p)
			c.Message.ToolCalls = append(c.Message.ToolCalls, tc)
		}
	}
	if hasText || len(c.Message.ToolCalls) == 0 {
		s := text.String()
		c.Message.Content = &s
	}
	c.FinishReason = chatFinish(a.Finish)
	u := &out.Usage
	u.PromptTokens = promptTokens(a.Usage)
	u.CompletionTokens = a.Usage.OutputTokens
	u.TotalTokens = satAdd(u.PromptTokens, u.CompletionTokens)
	u.PromptTokensDetails.CachedTokens = a.Usage.CacheReadTokens
	return out
}

// --- Responses ---

type respTextJSON struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

// respItemJSON is an output item: a message or a function call.
type respItemJSON struct {
	Type      string         `json:"type"`
	ID        string         `json:"id"`
	Status    string         `json:"status"`
	Role      string         `json:"role,omitempty"`
	Content   []respTextJSON `json:"content,omitempty"`
	CallID    string         `json:"call_id,omitempty"`
	Name      string         `json:"name,omitempty"`
	Arguments *string        `json:"arguments,omitempty"`
}

type respAnswerJSON struct {
	ID                string    `json:"id"`
	Object            string    `json:"object"`
	CreatedAt         int64     `json:"created_at"`
	Status            string    `json:"status"`
	Error             *struct{} `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Model             string         `json:"model"`
	Output            []respItemJSON `json:"output"`
	ParallelToolCalls bool           `json:"parallel_tool_calls"`
	ToolChoice        string         `json:"tool_choice"`
	Tools             []any          `json:"tools"`
	Usage             struct {
		InputTokens        int64 `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int64 `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
		TotalTokens int64 `json:"total_tokens"`
	} `json:"usage"`
}

func responsesAnswer(a *Answer, model string) *respAnswerJSON {
	id := answerID("resp_", a)
	base := strings.TrimPrefix(id, "resp_")
	out := &respAnswerJSON{ID: id, Object: "response", CreatedAt: a.Created, Status: "completed", Model: model,
		Output: []respItemJSON{}, ParallelToolCalls: true, ToolChoice: "auto", Tools: []any{}}
	switch a.Finish {
	case FinishLength:
		out.Status = "incomplete"
		out.IncompleteDetails = &struct {
			Reason string `json:"reason"`
		}{"max_output_tokens"}
	case FinishContentFilter:
		out.Status = "incomplete"
		out.IncompleteDetails = &struct {
			Reason string `json:"reason"`
		}{"content_filter"}
	}
	for i, p := range a.Parts {
		n := "_" + strconv.Itoa(len(out.Output))
		switch p.Kind {
		case PartText:
			out.Output = append(out.Output, respItemJSON{Type: "message", ID: "msg_" + base + n, Status: "completed", Role: "assistant",
				Content: []respTextJSON{{Type: "output_text", Text: p.Text, Annotations: []any{}}}})
		case PartToolCall:
			s := argsString(p)
			out.Output = append(out.Output, respItemJSON{Type: "function_call", ID: "fc_" + base + n, Status: "completed",
				CallID: callID(p, i), Name: p.ToolName, Arguments: &s})
		}
	}
	u := &out.Usage
	u.InputTokens = promptTokens(a.Usage)
	u.InputTokensDetails.CachedTokens = a.Usage.CacheReadTokens
	u.OutputTokens = a.Usage.OutputTokens
	u.TotalTokens = satAdd(u.InputTokens, u.OutputTokens)
	return out
}

// --- Messages ---

type msgBlockJSON struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type msgAnswerJSON struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []msgBlockJSON `json:"content"`
	StopReason   string         `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        struct {
		InputTokens              int64 `json:"input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
	} `json:"usage"`
}

func messagesStop(f Finish) string {
	switch f {
	case FinishLength:
		return "max_tokens"
	case FinishToolCalls:
		return "tool_use"
	case FinishStopSequence:
		return "stop_sequence"
	case FinishContentFilter:
		return "refusal"
	}
	return "end_turn"
}

func messagesAnswer(a *Answer, model string) *msgAnswerJSON {
	out := &msgAnswerJSON{ID: answerID("msg_", a), Type: "message", Role: "assistant", Model: model, Content: []msgBlockJSON{}}
	for i, p := range a.Parts {
		switch p.Kind {
		case PartText:
			t := p.Text
			out.Content = append(out.Content, msgBlockJSON{Type: "text", Text: &t})
		case PartToolCall:
			out.Content = append(out.Content, msgBlockJSON{Type: "tool_use", ID: callID(p, i), Name: p.ToolName, Input: args(p)})
		}
	}
	out.StopReason = messagesStop(a.Finish)
	if a.Finish == FinishStopSequence && a.StopSequence != "" {
		s := a.StopSequence
		out.StopSequence = &s
	}
	u := &out.Usage
	u.InputTokens = a.Usage.InputTokens
	u.OutputTokens = a.Usage.OutputTokens
	u.CacheReadInputTokens = a.Usage.CacheReadTokens
	u.CacheCreationInputTokens = a.Usage.CacheWriteTokens
	return out
}
