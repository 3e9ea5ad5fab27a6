package translate

import (
	"errors"
	"fmt"

	"weir.dev/routing"
)

// ErrStreamFailed is wrapped by the error a Decoder returns when the
// member's stream itself reports a failure (Anthropic's "error" event, an
// OpenAI or Gemini chunk holding an error object). The message the member
// gave follows it. The relay ends the caller's stream with an error event
// in the caller's format (R-FAIL-11).
var ErrStreamFailed = errors.New("member stream failed")

// Decoder reads one member's streamed answer, event by event, into the
// neutral Events (R-FMT-2).
//
// Decode takes one member event: its SSE event name (for Bedrock, the
// Anthropic event's "type") and its data, and calls emit with each Event it
// yields, in order; an error of emit is returned as is. data is not kept
// after Decode returns. An event with no data (an SSE comment, a keep-alive)
// and an event of a kind the decoder does not know are skipped. Malformed
// JSON in an event the decoder reads is an error; a stream reporting a
// failure is an error wrapping ErrStreamFailed. After the stream's end
// (EventDone) every further event is ignored.
//
// The Events a Decoder yields keep these promises, which the Encoders rely
// on: EventStart first (made up from the first chunk when the member has no
// opening event); parts numbered from 0 in the order they open, with no gap
// (parts the neutral form cannot carry, such as thinking blocks, are
// dropped and not counted); a part's pieces after its opening; every part
// closed by EventPartStop before EventFinish; EventDone last. A tool call's
// EventToolArgs pieces concatenate to its JSON arguments ("{}" when the
// member sent none).
//
// Gemini has no terminal event (its stream just ends): its decoder ends the
// answer (EventFinish, then EventDone) at the chunk carrying finishReason,
// which is also the chunk carrying the final usageMetadata. A Gemini stream
// that ends without a finishReason is therefore seen as cut (R-FAIL-11).
//
// A Decoder is for one stream and is not safe for concurrent use.
type Decoder interface {
	Decode(name string, data []byte, emit func(Event) error) error
}

// NewDecoder returns a Decoder for a member speaking wire format w. Bedrock
// streams are decoded from their binary frames by the Bedrock adapter and
// arrive as Anthropic events. An unknown format yields a Decoder that fails
// on every event.
func NewDecoder(w routing.WireFormat) Decoder {
	switch w {
	case routing.WireOpenAI:
		return &openAIStreamDecoder{parts: streamParts{open: -1}}
	case routing.WireAnthropic, routing.WireBedrock:
		return &anthropicStreamDecoder{parts: streamParts{open: -1}}
	case routing.WireGemini:
		return &geminiStreamDecoder{parts: streamParts{open: -1}}
	}
	return failingDecoder{w}
}

type failingDecoder struct{ w routing.WireFormat }

func (d failingDecoder) Decode(string, []byte, func(Event) error) error {
	return fmt.Errorf("translate: no stream decoder for wire format %v", d.w)
}

// streamFailed wraps ErrStreamFailed with what the member said.
func streamFailed(kind, msg string) error {
	switch {
	case kind != "" && msg != "":
		return fmt.Errorf("%w: %s: %s", ErrStreamFailed, kind, msg)
	case kind != "" || msg != "":
		return fmt.Errorf("%w: %s%s", ErrStreamFailed, kind, msg)
	}
	return ErrStreamFailed
}

// streamMergeUsage overwrites the counts of u that x knows (non-zero): streamed
// usage counts are running totals, and a later report omits what it does
// not repeat.
func streamMergeUsage(u *routing.Usage, x routing.Usage) {
	if x.InputTokens != 0 {
		u.InputTokens = x.InputTokens
	}
	if x.OutputTokens != 0 {
		u.OutputTokens = x.OutputTokens
	}
	if x.CacheReadTokens != 0 {
		u.CacheReadTokens = x.CacheReadTokens
	}
	if x.CacheWriteTokens != 0 {
		u.CacheWriteTokens = x.CacheWriteTokens
	}
}

// streamParts tracks the parts of a decoded stream: the next part number
// and the part that is open (-1 when none) with its kind. Anthropic and
// Gemini send parts one after another, so at most one is open; OpenAI's
// tool calls are kept open apart (see openAIStreamDecoder).
type streamParts struct {
	next     int
	open     int
	openKind EventKind // EventText or EventToolCall
	started  bool
}

// start emits EventStart once.
func (p *streamParts) start(id, model string, u routing.Usage, emit func(Event) error) error {
	if p.started {
		return nil
	}
	p.started = true
	return emit(Event{Kind: EventStart, ID: id, Model: model, Usage: u})
}

// closeOpen emits EventPartStop for the open part, if any.
func (p *streamParts) closeOpen(emit func(Event) error) error {
	if p.open < 0 {
		return nil
	}
	i := p.open
	p.open = -1
	return emit(Event{Kind: EventPartStop, Index: i})
}

// text emits a text piece, opening a text part when the open part is not
// one.
func (p *streamParts) text(s string, emit func(Event) error) error {
	if p.open < 0 || p.openKind != EventText {
		if err := p.closeOpen(emit); err != nil {
			return err
		}
		p.open, p.openKind = p.next, EventText
		p.next++
	}
	return emit(Event{Kind: EventText, Index: p.open, Text: s})
}

// toolCall closes the open part and opens a tool call part, returning its
// number.
func (p *streamParts) toolCall(id, name string, emit func(Event) error) (int, error) {
	if err := p.closeOpen(emit); err != nil {
		return 0, err
	}
	i := p.next
	p.next++
	p.open, p.openKind = i, EventToolCall
	return i, emit(Event{Kind: EventToolCall, Index: i, ToolCallID: id, ToolName: name})
}

// finish closes the open part and emits EventFinish.
func (p *streamParts) finish(f Finish, seq string, u routing.Usage, emit func(Event) error) error {
	if err := p.closeOpen(emit); err != nil {
		return err
	}
	return emit(Event{Kind: EventFinish, Finish: f, StopSequence: seq, Usage: u})
}

// streamJSONError is the error for a member event that is not the JSON
// its format promises.
func streamJSONError(what string, err error) error {
	return fmt.Errorf("translate: malformed %s: %w", what, err)
}
