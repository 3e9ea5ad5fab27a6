package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// streamSummary is what a caller's stream says, read back by a checker
// that also enforces the format's ordering rules.
type streamSummary struct {
	ID     string
	Text   string
	Tools  []streamTool
	Finish string // the caller format's finish reason / stop_reason / status(+reason)
	Seq    string
	// Usage in the caller's terms: Input as the format counts it (OpenAI
	// formats: cached included; Anthropic: excluded).
	Input, Output, CacheRead, CacheWrite int64
	HasUsage                             bool
}

type streamTool struct{ ID, Name, Args string }

// splitStreamEvents splits a produced stream into its events, each "event" name
// (possibly "") and data. Every event must end with a blank line.
func splitStreamEvents(b []byte) ([][2]string, error) {
	if len(b) > 0 && !bytes.HasSuffix(b, []byte("\n\n")) {
		return nil, fmt.Errorf("stream does not end with a blank line")
	}
	var out [][2]string
	for _, raw := range strings.Split(string(b), "\n\n") {
		if raw == "" {
			continue
		}
		var name, data string
		for _, line := range strings.Split(raw, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				if data != "" {
					return nil, fmt.Errorf("two data lines in %q", raw)
				}
				data = line[len("data: "):]
			default:
				return nil, fmt.Errorf("bad line %q", line)
			}
		}
		out = append(out, [2]string{name, data})
	}
	return out, nil
}

type streamChatChunkT struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role      *string `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    *int    `json:"index"`
				ID       *string `json:"id"`
				Type     *string `json:"type"`
				Function struct {
					Name      *string `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		TotalTokens         int64 `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// checkChatStream reads a Chat Completions stream, enforcing: data lines only;
// the role first; a tool call's id and name on its first delta only, tool
// indexes opening in order; one finish_reason with nothing after it but
// the usage chunk (only when includeUsage) and "[DONE]" last.
func checkChatStream(b []byte, model string, includeUsage bool) (s streamSummary, err error) {
	evs, err := splitStreamEvents(b)
	if err != nil {
		return s, err
	}
	if len(evs) == 0 || evs[len(evs)-1][1] != "[DONE]" {
		return s, fmt.Errorf("chat stream does not end with [DONE]")
	}
	finished := false
	for i, ev := range evs[:len(evs)-1] {
		if ev[0] != "" {
			return s, fmt.Errorf("chat event with a name %q", ev[0])
		}
		var c streamChatChunkT
		dec := json.NewDecoder(strings.NewReader(ev[1]))
		if err := dec.Decode(&c); err != nil {
			return s, fmt.Errorf("chunk %d: %v: %s", i, err, ev[1])
		}
		if c.Object != "chat.completion.chunk" || !strings.HasPrefix(c.ID, "chatcmpl-") || c.Model != model {
			return s, fmt.Errorf("chunk %d head: %s", i, ev[1])
		}
		if s.ID == "" {
			s.ID = c.ID
		} else if s.ID != c.ID {
			return s, fmt.Errorf("chunk %d: id changed", i)
		}
		if c.Usage != nil {
			if !includeUsage || len(c.Choices) != 0 || !finished || i != len(evs)-2 {
				return s, fmt.Errorf("chunk %d: usage chunk out of place: %s", i, ev[1])
			}
			s.HasUsage = true
			s.Input, s.Output, s.CacheRead = c.Usage.PromptTokens, c.Usage.CompletionTokens, c.Usage.PromptTokensDetails.CachedTokens
			if c.Usage.TotalTokens != s.Input+s.Output {
				return s, fmt.Errorf("total_tokens %d", c.Usage.TotalTokens)
			}
			continue
		}
		if len(c.Choices) != 1 || c.Choices[0].Index != 0 {
			return s, fmt.Errorf("chunk %d: choices: %s", i, ev[1])
		}
		ch := c.Choices[0]
		if finished {
			return s, fmt.Errorf("chunk %d after the finish", i)
		}
		if i == 0 {
			if ch.Delta.Role == nil || *ch.Delta.Role != "assistant" {
				return s, fmt.Errorf("first chunk without role")
			}
		} else if ch.Delta.Role != nil {
			return s, fmt.Errorf("chunk %d repeats the role", i)
		}
		if ch.Delta.Content != nil {
			s.Text += *ch.Delta.Content
		}
		for _, tc := range ch.Delta.ToolCalls {
			if tc.Index == nil {
				return s, fmt.Errorf("tool call delta without index")
			}
			n := *tc.Index
			switch {
			case n == len(s.Tools):
				if tc.ID == nil || tc.Function.Name == nil || tc.Type == nil || *tc.Type != "function" {
					return s, fmt.Errorf("first tool call delta without id, name or type: %s", ev[1])
				}
				s.Tools = append(s.Tools, streamTool{ID: *tc.ID, Name: *tc.Function.Name})
			case n < len(s.Tools):
				if tc.ID != nil || tc.Function.Name != nil {
					return s, fmt.Errorf("tool call %d repeats its id or name", n)
				}
			default:
				return s, fmt.Errorf("tool call index %d skips", n)
			}
			if tc.Function.Arguments != nil {
				s.Tools[n].Args += *tc.Function.Arguments
			}
		}
		if ch.FinishReason != nil {
			finished = true
			s.Finish = *ch.FinishReason
		}
	}
	if !finished {
		return s, fmt.Errorf("no finish_reason")
	}
	if includeUsage && !s.HasUsage {
		return s, fmt.Errorf("no usage chunk")
	}
	return s, nil
}

type streamMessagesEventT struct {
	Type    string `json:"type"`
	Message *struct {
		ID    string                `json:"id"`
		Type  string                `json:"type"`
		Role  string                `json:"role"`
		Model string                `json:"model"`
		Usage *streamMessagesUsageT `json:"usage"`
	} `json:"message"`
	Index        *int `json:"index"`
	ContentBlock *struct {
		Type  string          `json:"type"`
		Text  *string         `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta *struct {
		Type         string  `json:"type"`
		Text         *string `json:"text"`
		PartialJSON  *string `json:"partial_json"`
		StopReason   *string `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"`
	Usage *streamMessagesUsageT `json:"usage"`
}

type streamMessagesUsageT struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
}

// checkMessagesStream reads an Anthropic Messages stream, enforcing: names equal
// types; message_start first; blocks start at the next index; deltas only
// for open blocks of their kind; every block stopped before message_delta;
// message_stop once, last.
func checkMessagesStream(b []byte, model string) (s streamSummary, err error) {
	evs, err := splitStreamEvents(b)
	if err != nil {
		return s, err
	}
	type block struct {
		tool, stop bool
	}
	var blocks []block
	tools := map[int]int{}
	var delta, stop bool
	for i, ev := range evs {
		var e streamMessagesEventT
		if err := json.Unmarshal([]byte(ev[1]), &e); err != nil {
			return s, fmt.Errorf("event %d: %v", i, err)
		}
		if e.Type != ev[0] {
			return s, fmt.Errorf("event %d: name %q type %q", i, ev[0], e.Type)
		}
		if (i == 0) != (e.Type == "message_start") {
			return s, fmt.Errorf("event %d: message_start out of place", i)
		}
		if stop {
			return s, fmt.Errorf("event after message_stop")
		}
		if delta && e.Type != "message_stop" {
			return s, fmt.Errorf("%s after message_delta", e.Type)
		}
		switch e.Type {
		case "message_start":
			m := e.Message
			if m == nil || !strings.HasPrefix(m.ID, "msg_") || m.Type != "message" || m.Role != "assistant" || m.Model != model || m.Usage == nil {
				return s, fmt.Errorf("message_start: %s", ev[1])
			}
			s.ID = m.ID
		case "content_block_start":
			if e.Index == nil || *e.Index != len(blocks) || e.ContentBlock == nil {
				return s, fmt.Errorf("content_block_start out of order: %s", ev[1])
			}
			switch e.ContentBlock.Type {
			case "text":
				if e.ContentBlock.Text == nil || *e.ContentBlock.Text != "" {
					return s, fmt.Errorf("text block opens with text")
				}
				blocks = append(blocks, block{})
			case "tool_use":
				if e.ContentBlock.ID == "" || string(e.ContentBlock.Input) != "{}" {
					return s, fmt.Errorf("tool_use block: %s", ev[1])
				}
				tools[len(blocks)] = len(s.Tools)
				s.Tools = append(s.Tools, streamTool{ID: e.ContentBlock.ID, Name: e.ContentBlock.Name})
				blocks = append(blocks, block{tool: true})
			default:
				return s, fmt.Errorf("block type %q", e.ContentBlock.Type)
			}
		case "content_block_delta":
			if e.Index == nil || *e.Index >= len(blocks) || blocks[*e.Index].stop || e.Delta == nil {
				return s, fmt.Errorf("delta for no open block: %s", ev[1])
			}
			bl := blocks[*e.Index]
			switch {
			case e.Delta.Type == "text_delta" && !bl.tool && e.Delta.Text != nil:
				s.Text += *e.Delta.Text
			case e.Delta.Type == "input_json_delta" && bl.tool && e.Delta.PartialJSON != nil:
				s.Tools[tools[*e.Index]].Args += *e.Delta.PartialJSON
			default:
				return s, fmt.Errorf("delta of the wrong kind: %s", ev[1])
			}
		case "content_block_stop":
			if e.Index == nil || *e.Index >= len(blocks) || blocks[*e.Index].stop {
				return s, fmt.Errorf("stop for no open block: %s", ev[1])
			}
			blocks[*e.Index].stop = true
		case "message_delta":
			for i, bl := range blocks {
				if !bl.stop {
					return s, fmt.Errorf("message_delta with block %d open", i)
				}
			}
			if e.Delta == nil || e.Delta.StopReason == nil || e.Usage == nil || e.Usage.OutputTokens == nil {
				return s, fmt.Errorf("message_delta: %s", ev[1])
			}
			delta = true
			s.Finish = *e.Delta.StopReason
			if e.Delta.StopSequence != nil {
				s.Seq = *e.Delta.StopSequence
			}
			u := e.Usage
			s.HasUsage = true
			s.Output = *u.OutputTokens
			for _, f := range []struct {
				p *int64
				d *int64
			}{{u.InputTokens, &s.Input}, {u.CacheReadInputTokens, &s.CacheRead}, {u.CacheCreationInputTokens, &s.CacheWrite}} {
				if f.p != nil {
					*f.d = *f.p
				}
			}
		case "message_stop":
			if !delta {
				return s, fmt.Errorf("message_stop without message_delta")
			}
			stop = true
		default:
			return s, fmt.Errorf("unknown event %q", e.Type)
		}
	}
	if !stop {
		return s, fmt.Errorf("no message_stop")
	}
	return s, nil
}

type streamResponsesEventT struct {
	Type           string                `json:"type"`
	SequenceNumber *int64                `json:"sequence_number"`
	OutputIndex    *int                  `json:"output_index"`
	ContentIndex   *int                  `json:"content_index"`
	ItemID         string                `json:"item_id"`
	Item           *streamResponsesItemT `json:"item"`
	Delta          *string               `json:"delta"`
	Text           *string               `json:"text"`
	Arguments      *string               `json:"arguments"`
	Response       *struct {
		ID                string                 `json:"id"`
		Object            string                 `json:"object"`
		Status            string                 `json:"status"`
		Model             string                 `json:"model"`
		Output            []streamResponsesItemT `json:"output"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Usage *struct {
			InputTokens        int64 `json:"input_tokens"`
			OutputTokens       int64 `json:"output_tokens"`
			TotalTokens        int64 `json:"total_tokens"`
			InputTokensDetails struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		} `json:"usage"`
	} `json:"response"`
}

type streamResponsesItemT struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Content   []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// checkResponsesStream reads a Responses API stream, enforcing: names equal
// types; sequence numbers from 0 without gap; created and in_progress
// first; items added at the next output index, their deltas only while
// open, their done events repeating exactly what the deltas said; one
// terminal event, last, whose output repeats the items.
func checkResponsesStream(b []byte, model string) (s streamSummary, err error) {
	evs, err := splitStreamEvents(b)
	if err != nil {
		return s, err
	}
	type item struct {
		id, kind, acc  string
		tool           int
		partOpen, done bool
	}
	var items []*item
	terminal := false
	for i, ev := range evs {
		var e streamResponsesEventT
		if err := json.Unmarshal([]byte(ev[1]), &e); err != nil {
			return s, fmt.Errorf("event %d: %v", i, err)
		}
		if e.Type != ev[0] || e.SequenceNumber == nil || *e.SequenceNumber != int64(i) {
			return s, fmt.Errorf("event %d: name/type/sequence: %s %s", i, ev[0], ev[1])
		}
		if terminal {
			return s, fmt.Errorf("event after the terminal one")
		}
		if (i == 0) != (e.Type == "response.created") || (i == 1) != (e.Type == "response.in_progress") {
			return s, fmt.Errorf("event %d: %s out of place", i, e.Type)
		}
		at := func() (*item, error) {
			if e.OutputIndex == nil || *e.OutputIndex >= len(items) || items[*e.OutputIndex].done {
				return nil, fmt.Errorf("event %d for no open item: %s", i, ev[1])
			}
			it := items[*e.OutputIndex]
			if e.Type != "response.output_item.done" && e.ItemID != it.id {
				return nil, fmt.Errorf("event %d: item_id %q, streamWant %q", i, e.ItemID, it.id)
			}
			return it, nil
		}
		switch e.Type {
		case "response.created", "response.in_progress":
			if e.Response == nil || e.Response.Status != "in_progress" || e.Response.Model != model || !strings.HasPrefix(e.Response.ID, "resp_") {
				return s, fmt.Errorf("%s: %s", e.Type, ev[1])
			}
			s.ID = e.Response.ID
		case "response.output_item.added":
			if e.OutputIndex == nil || *e.OutputIndex != len(items) || e.Item == nil || e.Item.Status != "in_progress" {
				return s, fmt.Errorf("item added out of order: %s", ev[1])
			}
			it := &item{id: e.Item.ID, kind: e.Item.Type}
			switch it.kind {
			case "message":
			case "function_call":
				if e.Item.CallID == "" || e.Item.Arguments != "" {
					return s, fmt.Errorf("function_call added: %s", ev[1])
				}
				it.tool = len(s.Tools)
				s.Tools = append(s.Tools, streamTool{ID: e.Item.CallID, Name: e.Item.Name})
			default:
				return s, fmt.Errorf("item type %q", it.kind)
			}
			items = append(items, it)
		case "response.content_part.added":
			it, err := at()
			if err != nil {
				return s, err
			}
			if it.kind != "message" || it.partOpen || it.acc != "" {
				return s, fmt.Errorf("content_part.added: %s", ev[1])
			}
			it.partOpen = true
		case "response.output_text.delta":
			it, err := at()
			if err != nil {
				return s, err
			}
			if !it.partOpen || e.Delta == nil {
				return s, fmt.Errorf("text delta with no part open: %s", ev[1])
			}
			it.acc += *e.Delta
			s.Text += *e.Delta
		case "response.output_text.done":
			it, err := at()
			if err != nil {
				return s, err
			}
			if !it.partOpen || e.Text == nil || *e.Text != it.acc {
				return s, fmt.Errorf("output_text.done text differs: %s", ev[1])
			}
		case "response.content_part.done":
			it, err := at()
			if err != nil {
				return s, err
			}
			if !it.partOpen {
				return s, fmt.Errorf("content_part.done with no part open")
			}
			it.partOpen = false
		case "response.function_call_arguments.delta":
			it, err := at()
			if err != nil {
				return s, err
			}
			if it.kind != "function_call" || e.Delta == nil {
				return s, fmt.Errorf("arguments delta: %s", ev[1])
			}
			it.acc += *e.Delta
			s.Tools[it.tool].Args += *e.Delta
		case "response.function_call_arguments.done":
			it, err := at()
			if err != nil {
				return s, err
			}
			if it.kind != "function_call" || e.Arguments == nil || *e.Arguments != it.acc {
				return s, fmt.Errorf("arguments.done differs: %s", ev[1])
			}
		case "response.output_item.done":
			it, err := at()
			if err != nil {
				return s, err
			}
			if it.partOpen || e.Item == nil || e.Item.Status != "completed" || e.Item.ID != it.id {
				return s, fmt.Errorf("output_item.done: %s", ev[1])
			}
			if got := streamItemText(e.Item); got != it.acc {
				return s, fmt.Errorf("output_item.done repeats %q, deltas said %q", got, it.acc)
			}
			it.done = true
		case "response.completed", "response.incomplete":
			terminal = true
			r := e.Response
			if r == nil || r.Usage == nil || len(r.Output) != len(items) {
				return s, fmt.Errorf("%s: %s", e.Type, ev[1])
			}
			for k, it := range items {
				if !it.done || r.Output[k].ID != it.id || streamItemText(&r.Output[k]) != it.acc {
					return s, fmt.Errorf("%s: output %d differs", e.Type, k)
				}
			}
			s.Finish = r.Status
			if e.Type == "response.incomplete" {
				if r.Status != "incomplete" || r.IncompleteDetails == nil {
					return s, fmt.Errorf("incomplete without details")
				}
				s.Finish += ":" + r.IncompleteDetails.Reason
			} else if r.Status != "completed" {
				return s, fmt.Errorf("completed with status %q", r.Status)
			}
			s.HasUsage = true
			s.Input, s.Output, s.CacheRead = r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.InputTokensDetails.CachedTokens
			if r.Usage.TotalTokens != s.Input+s.Output {
				return s, fmt.Errorf("total_tokens")
			}
		default:
			return s, fmt.Errorf("unknown event %q", e.Type)
		}
	}
	if !terminal {
		return s, fmt.Errorf("no terminal event")
	}
	return s, nil
}

func streamItemText(it *streamResponsesItemT) string {
	if it.Type == "function_call" {
		return it.Arguments
	}
	var b strings.Builder
	for _, c := range it.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}
