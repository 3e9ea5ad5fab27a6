package translate

import (
	"bytes"
	"encoding/json"
	"strconv"

	"weir.dev/routing"
)

// openAIStreamDecoder reads Chat Completions chunks. Only choice 0 is read
// (a call asking for n > 1 is never translated, R-FMT-3).
//
// OpenAI may in principle interleave the pieces of parallel tool calls (by
// their "index"), so every tool call part stays open until the finish,
// when they are closed in the order they opened; a text part is closed
// when a tool call opens. Encoders accept several open parts.
type openAIStreamDecoder struct {
	parts    streamParts
	tools    []openAIStreamTool // in the order they opened
	finished bool
	usage    routing.Usage
	haveUse  bool
	done     bool
}

type openAIStreamTool struct {
	index   int64 // OpenAI's tool call index
	part    int
	hasArgs bool
}

type openAIStreamChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Index int64 `json:"index"`
		Delta struct {
			Content   *string `json:"content"`
			Refusal   *string `json:"refusal"`
			ToolCalls []struct {
				Index    int64  `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *openAIStreamUsage `json:"usage"`
	Error *struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

type openAIStreamUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// weir turns OpenAI's usage into Weir's terms: prompt_tokens include the
// cached ones, which are counted apart.
func (u *openAIStreamUsage) weir() routing.Usage {
	in, cached := u.PromptTokens, u.PromptTokensDetails.CachedTokens
	if cached > in {
		cached = in
	}
	if cached < 0 {
		cached = 0
	}
	return routing.Usage{InputTokens: in - cached, OutputTokens: u.CompletionTokens, CacheReadTokens: cached}
}

var openAIDone = []byte("[DONE]")

func (d *openAIStreamDecoder) Decode(name string, data []byte, emit func(Event) error) error {
	data = bytes.TrimSpace(data)
	if d.done || len(data) == 0 {
		return nil
	}
	if bytes.Equal(data, openAIDone) {
		return d.end(emit)
	}
	var c openAIStreamChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return streamJSONError("openai chunk", err)
	}
	if c.Error != nil {
		return streamFailed(c.Error.Type, c.Error.Message)
	}
	if name == "error" {
		return streamFailed("error", "")
	}
	if err := d.parts.start(c.ID, c.Model, routing.Usage{}, emit); err != nil {
		return err
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 || d.finished {
			continue
		}
		if t := ch.Delta.Content; t != nil && *t != "" {
			if err := d.parts.text(*t, emit); err != nil {
				return err
			}
		}
		if t := ch.Delta.Refusal; t != nil && *t != "" {
			if err := d.parts.text(*t, emit); err != nil {
				return err
			}
		}
		for _, tc := range ch.Delta.ToolCalls {
			t := d.tool(tc.Index)
			if t == nil {
				// A text part is closed when a tool call opens.
				if d.parts.open >= 0 {
					if err := d.parts.closeOpen(emit); err != nil {
						return err
					}
				}
				id := tc.ID
				if id == "" {
					id = "call_" + strconv.Itoa(len(d.tools))
				}
				p := d.parts.next
				d.parts.next++
				d.tools = append(d.tools, openAIStreamTool{index: tc.Index, part: p})
				t = &d.tools[len(d.tools)-1]
				if err := emit(Event{Kind: EventToolCall, Index: p, ToolCallID: id, ToolName: tc.Function.Name}); err != nil {
					return err
				}
			}
			if tc.Function.Arguments != "" {
				t.hasArgs = true
				if err := emit(Event{Kind: EventToolArgs, Index: t.part, Text: tc.Function.Arguments}); err != nil {
					return err
				}
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			if c.Usage != nil {
				streamMergeUsage(&d.usage, c.Usage.weir())
				d.haveUse = true
				c.Usage = nil
			}
			if err := d.finish(openAIStreamFinish(*ch.FinishReason), emit); err != nil {
				return err
			}
		}
	}
	if c.Usage != nil {
		streamMergeUsage(&d.usage, c.Usage.weir())
		d.haveUse = true
		if d.finished {
			return emit(Event{Kind: EventUsage, Usage: d.usage})
		}
	}
	return nil
}

func (d *openAIStreamDecoder) tool(index int64) *openAIStreamTool {
	for i := range d.tools {
		if d.tools[i].index == index {
			return &d.tools[i]
		}
	}
	return nil
}

// finish closes the open text part and every tool call part, then emits
// EventFinish.
func (d *openAIStreamDecoder) finish(f Finish, emit func(Event) error) error {
	d.finished = true
	if err := d.parts.closeOpen(emit); err != nil {
		return err
	}
	for _, t := range d.tools {
		if !t.hasArgs {
			if err := emit(Event{Kind: EventToolArgs, Index: t.part, Text: "{}"}); err != nil {
				return err
			}
		}
		if err := emit(Event{Kind: EventPartStop, Index: t.part}); err != nil {
			return err
		}
	}
	return emit(Event{Kind: EventFinish, Finish: f, Usage: d.usage})
}

// end is "[DONE]": a stream that gave no finish_reason is finished first.
func (d *openAIStreamDecoder) end(emit func(Event) error) error {
	if err := d.parts.start("", "", routing.Usage{}, emit); err != nil {
		return err
	}
	if !d.finished {
		if err := d.finish(FinishUnknown, emit); err != nil {
			return err
		}
	}
	d.done = true
	return emit(Event{Kind: EventDone, Usage: d.usage})
}

// openAIStreamFinish maps a Chat Completions finish_reason (R-FMT-2).
func openAIStreamFinish(r string) Finish {
	switch r {
	case "stop":
		return FinishStop
	case "length":
		return FinishLength
	case "tool_calls", "function_call":
		return FinishToolCalls
	case "content_filter":
		return FinishContentFilter
	}
	return FinishUnknown
}
