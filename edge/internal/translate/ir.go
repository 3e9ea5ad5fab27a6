package translate

import (
	"encoding/json"
	"fmt"

	"weir.dev/routing"
)

// Request is a chat request in the neutral form: what every caller format
// can say and every member format can be told (R-FMT-2). Hints a member
// cannot say are not kept (R-FMT-3).
type Request struct {
	// System is the system prompt / instructions, as text parts; empty
	// when none.
	System []Part
	// Messages are the user and assistant turns in order. Tool results are
	// parts of a user turn (Anthropic's and Gemini's shape); an OpenAI
	// "tool" message becomes one.
	Messages []Message
	Tools    []Tool
	// ToolChoice is the zero value (auto, or the provider's default) when
	// the caller gave none.
	ToolChoice ToolChoice
	Stop       []string
	// Temperature and TopP are nil when not given.
	Temperature, TopP *float64
	// MaxOutput is the output cap the caller gave (max_tokens,
	// max_completion_tokens, max_output_tokens); 0 when none.
	MaxOutput int64
	Stream    bool
	// IncludeUsage is OpenAI's stream_options.include_usage (callers on
	// the other formats always get usage in the stream).
	IncludeUsage bool
	// ResponseFormat is the structured output the caller asked for (chat
	// response_format, Responses text.format); nil for free text.
	ResponseFormat *ResponseFormat
}

// Role is the author of a turn.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one turn.
type Message struct {
	Role  Role
	Parts []Part
}

// PartKind says what a Part holds.
type PartKind uint8

const (
	// PartText: Text.
	PartText PartKind = iota + 1
	// PartImage: an image, either inline (MediaType and Data, base64) or
	// by URL.
	PartImage
	// PartToolCall: an assistant's call of tool Name with Arguments (a JSON
	// object), identified by ToolCallID.
	PartToolCall
	// PartToolResult: the result of the call ToolCallID, as Content parts
	// (text and images); IsError when the tool failed.
	PartToolResult
)

// Part is one piece of a turn.
type Part struct {
	Kind PartKind
	Text string
	// MediaType ("image/png") and Data (base64, no data: prefix) of an
	// inline image; URL of an image by reference.
	MediaType, Data, URL string
	// ToolCallID matches a tool call with its result. Gemini has no ids:
	// translating from it, ids are made up ("call_<n>") and results are
	// matched by order and name.
	ToolCallID string
	// ToolName is the called function's name (tool calls and, for Gemini,
	// tool results).
	ToolName string
	// Arguments is the call's arguments, a JSON object ("{}" when none).
	Arguments json.RawMessage
	// Content is a tool result's content.
	Content []Part
	IsError bool
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments (an object schema);
	// nil when the caller gave none.
	Parameters json.RawMessage
}

// ToolChoiceMode says how the model may use tools.
type ToolChoiceMode uint8

const (
	// ToolAuto: the model decides (the default).
	ToolAuto ToolChoiceMode = iota
	// ToolNone: no tool call.
	ToolNone
	// ToolRequired: some tool call (OpenAI "required", Anthropic "any",
	// Gemini mode ANY).
	ToolRequired
	// ToolNamed: a call of ToolChoice.Name.
	ToolNamed
)

// ToolChoice is tool_choice in the neutral form.
type ToolChoice struct {
	Mode ToolChoiceMode
	Name string
}

// Finish is why the model stopped (R-FMT-2).
type Finish uint8

const (
	FinishUnknown Finish = iota
	// FinishStop: a natural end (stop, end_turn, STOP).
	FinishStop
	// FinishLength: the output cap (length, max_tokens, MAX_TOKENS).
	FinishLength
	// FinishToolCalls: the model called tools (tool_calls, tool_use).
	FinishToolCalls
	// FinishStopSequence: a stop sequence matched (stop, stop_sequence);
	// Answer.StopSequence names it when the member said which.
	FinishStopSequence
	// FinishContentFilter: the provider's filter ended the answer
	// (content_filter, refusal, SAFETY and Gemini's other blocks).
	FinishContentFilter
)

// Answer is a whole (non-streamed) chat answer in the neutral form.
type Answer struct {
	// ID is the provider's id of the answer; "" when it gave none (the
	// encoder then makes one).
	ID string
	// Model is the model the provider says answered.
	Model string
	// Parts are the assistant's text and tool calls, in order.
	Parts        []Part
	Finish       Finish
	StopSequence string
	// Usage is in Weir's terms (routing.Usage): InputTokens excludes the
	// tokens read from or written to the prompt cache, which are counted
	// apart. OpenAI's prompt_tokens and Gemini's promptTokenCount include
	// cached tokens; decoders subtract, encoders add back.
	Usage routing.Usage
	// Created is the answer's time in Unix seconds as the member gave it
	// (OpenAI's created); 0 when it gave none. Encoders write it as is
	// (created, created_at); the caller of EncodeAnswer may set it.
	Created int64
}

// EventKind says what an Event is.
type EventKind uint8

const (
	// EventStart opens the answer: ID and Model (either may be ""), and
	// the input usage when the member tells it first (Anthropic).
	EventStart EventKind = iota + 1
	// EventText: Text is the next piece of the text part Index.
	EventText
	// EventToolCall opens the tool call part Index: ToolCallID and
	// ToolName.
	EventToolCall
	// EventToolArgs: Text is the next piece of the JSON arguments of the
	// tool call part Index.
	EventToolArgs
	// EventPartStop closes part Index.
	EventPartStop
	// EventFinish: the model stopped (Finish, StopSequence); Usage holds
	// the usage known so far.
	EventFinish
	// EventUsage: the final usage (Usage), when the member sends it after
	// the finish (OpenAI's usage chunk).
	EventUsage
	// EventDone: the answer is complete; nothing follows.
	EventDone
)

// Event is one step of a streamed answer in the neutral form. Parts are
// numbered from 0 in the order they open; a part's pieces come after its
// opening (text parts open with their first EventText).
type Event struct {
	Kind         EventKind
	Index        int
	ID, Model    string
	Text         string
	ToolCallID   string
	ToolName     string
	Finish       Finish
	StopSequence string
	Usage        routing.Usage
}

// BadRequest is a caller body the translation cannot read or cannot carry:
// the gateway answers 400 invalid_request with Field and the message.
type BadRequest struct {
	// Field is the JSON path of the problem ("messages[2].content"), ""
	// for the whole body.
	Field string
	Msg   string
}

func (e *BadRequest) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// badf returns a *BadRequest.
func badf(field, format string, args ...any) *BadRequest {
	return &BadRequest{Field: field, Msg: fmt.Sprintf(format, args...)}
}
