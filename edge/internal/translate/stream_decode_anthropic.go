package translate

import (
	"encoding/json"

	"weir.dev/routing"
)

// anthropicStreamDecoder reads Anthropic Messages stream events (and
// Bedrock's, which are the same events). Blocks the neutral form does not
// carry (thinking, redacted_thinking, server tool blocks, …) are dropped
// with all their deltas, and the kept blocks are renumbered so that the
// dropped ones leave no gap.
type anthropicStreamDecoder struct {
	parts streamParts
	// blocks maps Anthropic's block index to the part number, -1 for a
	// dropped block; blocks not in it were never opened.
	blocks map[int64]anthropicStreamBlock
	// order holds the kept blocks' Anthropic indexes in part order.
	order    []int64
	usage    routing.Usage
	finished bool
	done     bool
}

type anthropicStreamBlock struct {
	part    int // -1: dropped
	tool    bool
	hasArgs bool
	stopped bool
}

type anthropicStreamEvent struct {
	Type    string `json:"type"`
	Message *struct {
		ID    string                `json:"id"`
		Model string                `json:"model"`
		Usage *anthropicStreamUsage `json:"usage"`
	} `json:"message"`
	Index        int64 `json:"index"`
	ContentBlock *struct {
		Type string `json:"type"`
		Text string `json:"text"`
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"content_block"`
	Delta *struct {
		Type         string  `json:"type"`
		Text         string  `json:"text"`
		PartialJSON  string  `json:"partial_json"`
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"`
	Usage *anthropicStreamUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type anthropicStreamUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

func (u *anthropicStreamUsage) weir() routing.Usage {
	return routing.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}
}

// maxAnthropicBlocks bounds the blocks one answer may open: a hostile
// stream cannot grow the block map without bound.
const maxAnthropicBlocks = 1 << 16

func (d *anthropicStreamDecoder) Decode(name string, data []byte, emit func(Event) error) error {
	if d.done || len(data) == 0 {
		return nil
	}
	switch name {
	case "", "message_start", "content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop", "error":
	default:
		return nil // ping and events added later
	}
	var e anthropicStreamEvent
	if err := json.Unmarshal(data, &e); err != nil {
		return streamJSONError("anthropic event", err)
	}
	if name == "" {
		name = e.Type
	}
	switch name {
	case "error":
		if e.Error != nil {
			return streamFailed(e.Error.Type, e.Error.Message)
		}
		return streamFailed("error", "")
	case "message_start":
		if e.Message == nil {
			return d.parts.start("", "", d.usage, emit)
		}
		if e.Message.Usage != nil {
			streamMergeUsage(&d.usage, e.Message.Usage.weir())
		}
		return d.parts.start(e.Message.ID, e.Message.Model, d.usage, emit)
	case "content_block_start":
		if err := d.parts.start("", "", d.usage, emit); err != nil {
			return err
		}
		if _, seen := d.blocks[e.Index]; seen || e.ContentBlock == nil || d.finished {
			return nil
		}
		if d.blocks == nil {
			d.blocks = map[int64]anthropicStreamBlock{}
		}
		if len(d.blocks) >= maxAnthropicBlocks {
			return streamFailed("too many content blocks", "")
		}
		switch e.ContentBlock.Type {
		case "text", "tool_use":
			p := d.parts.next
			d.parts.next++
			d.order = append(d.order, e.Index)
			if e.ContentBlock.Type == "tool_use" {
				d.blocks[e.Index] = anthropicStreamBlock{part: p, tool: true}
				return emit(Event{Kind: EventToolCall, Index: p, ToolCallID: e.ContentBlock.ID, ToolName: e.ContentBlock.Name})
			}
			d.blocks[e.Index] = anthropicStreamBlock{part: p}
			// The opening piece opens the text part, even when empty.
			return emit(Event{Kind: EventText, Index: p, Text: e.ContentBlock.Text})
		}
		d.blocks[e.Index] = anthropicStreamBlock{part: -1}
		return nil
	case "content_block_delta":
		b, ok := d.blocks[e.Index]
		if !ok || b.part < 0 || b.stopped || e.Delta == nil || d.finished {
			return nil
		}
		switch {
		case e.Delta.Type == "text_delta" && !b.tool:
			if e.Delta.Text == "" {
				return nil
			}
			return emit(Event{Kind: EventText, Index: b.part, Text: e.Delta.Text})
		case e.Delta.Type == "input_json_delta" && b.tool:
			if e.Delta.PartialJSON == "" {
				return nil
			}
			b.hasArgs = true
			d.blocks[e.Index] = b
			return emit(Event{Kind: EventToolArgs, Index: b.part, Text: e.Delta.PartialJSON})
		}
		return nil // thinking, signature and citation deltas
	case "content_block_stop":
		b, ok := d.blocks[e.Index]
		if !ok || b.part < 0 || b.stopped {
			return nil
		}
		b.stopped = true
		d.blocks[e.Index] = b
		return d.stopPart(b, emit)
	case "message_delta":
		if err := d.parts.start("", "", d.usage, emit); err != nil {
			return err
		}
		if e.Usage != nil {
			streamMergeUsage(&d.usage, e.Usage.weir())
		}
		if d.finished { // a second message_delta only updates the usage
			return emit(Event{Kind: EventUsage, Usage: d.usage})
		}
		if err := d.stopAll(emit); err != nil {
			return err
		}
		var f Finish
		var seq string
		if e.Delta != nil {
			f = anthropicStreamFinish(e.Delta.StopReason)
			if e.Delta.StopSequence != nil {
				seq = *e.Delta.StopSequence
			}
		}
		d.finished = true
		return emit(Event{Kind: EventFinish, Finish: f, StopSequence: seq, Usage: d.usage})
	case "message_stop":
		if err := d.parts.start("", "", d.usage, emit); err != nil {
			return err
		}
		if !d.finished { // no message_delta came
			if err := d.stopAll(emit); err != nil {
				return err
			}
			if err := emit(Event{Kind: EventFinish, Usage: d.usage}); err != nil {
				return err
			}
		}
		d.done = true
		return emit(Event{Kind: EventDone, Usage: d.usage})
	}
	return nil
}

// stopPart closes one kept block's part; a tool call that got no argument
// piece gets "{}".
func (d *anthropicStreamDecoder) stopPart(b anthropicStreamBlock, emit func(Event) error) error {
	if b.tool && !b.hasArgs {
		if err := emit(Event{Kind: EventToolArgs, Index: b.part, Text: "{}"}); err != nil {
			return err
		}
	}
	return emit(Event{Kind: EventPartStop, Index: b.part})
}

// stopAll closes the blocks still open, in part order.
func (d *anthropicStreamDecoder) stopAll(emit func(Event) error) error {
	for _, k := range d.order {
		if b := d.blocks[k]; !b.stopped {
			b.stopped = true
			d.blocks[k] = b
			if err := d.stopPart(b, emit); err != nil {
				return err
			}
		}
	}
	return nil
}

// anthropicStreamFinish maps a stop_reason (R-FMT-2).
func anthropicStreamFinish(r string) Finish {
	switch r {
	case "end_turn", "pause_turn":
		return FinishStop
	case "max_tokens", "model_context_window_exceeded":
		return FinishLength
	case "tool_use":
		return FinishToolCalls
	case "stop_sequence":
		return FinishStopSequence
	case "refusal":
		return FinishContentFilter
	}
	return FinishUnknown
}
