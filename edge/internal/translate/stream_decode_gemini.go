package translate

import (
	"bytes"
	"encoding/json"
	"strconv"

	"weir.dev/routing"
)

// geminiStreamDecoder reads streamGenerateContent?alt=sse chunks: each
// event's data is a whole GenerateContentResponse. Only candidate 0 is
// read. Text pieces extend the open text part; a functionCall arrives whole
// and becomes a tool call part with one argument piece, closed at once,
// with the id Gemini gave or a made-up "call_<n>" (n counts the answer's
// tool calls from 0). Thought parts are dropped.
//
// Gemini has no end event: the chunk carrying finishReason ends the answer
// (EventFinish, then EventDone). usageMetadata is a running total; the
// last one seen is the answer's.
type geminiStreamDecoder struct {
	parts streamParts
	calls int
	usage routing.Usage
	done  bool
}

type geminiStreamChunk struct {
	Candidates []struct {
		Index   int64 `json:"index"`
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
	ModelVersion  string   `json:"modelVersion"`
	ResponseID    string   `json:"responseId"`
	Error         *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	} `json:"error"`
}

func (d *geminiStreamDecoder) Decode(name string, data []byte, emit func(Event) error) error {
	data = bytes.TrimSpace(data)
	if d.done || len(data) == 0 {
		return nil
	}
	var c geminiStreamChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return streamJSONError("gemini chunk", err)
	}
	if c.Error != nil {
		return streamFailed(c.Error.Status, c.Error.Message)
	}
	if err := d.parts.start(c.ResponseID, c.ModelVersion, routing.Usage{}, emit); err != nil {
		return err
	}
	if u := c.UsageMetadata; u != nil {
		d.usage = u.usage()
	}
	finish := ""
	for i := range c.Candidates {
		cand := &c.Candidates[i]
		if cand.Index != 0 {
			continue
		}
		if cand.Content != nil {
			for _, p := range cand.Content.Parts {
				switch {
				case p.Thought:
				case p.FunctionCall != nil:
					if err := d.call(p.FunctionCall.ID, p.FunctionCall.Name, p.FunctionCall.Args, emit); err != nil {
						return err
					}
				case p.Text != nil && *p.Text != "":
					if err := d.parts.text(*p.Text, emit); err != nil {
						return err
					}
				}
			}
		}
		finish = cand.FinishReason
	}
	if finish == "" && len(c.Candidates) == 0 && c.PromptFeedback != nil && c.PromptFeedback.BlockReason != "" {
		finish = "SAFETY" // the prompt itself was blocked: no candidate follows
	}
	if finish == "" {
		return nil
	}
	f := geminiStreamFinish(finish)
	if f == FinishStop && d.calls > 0 {
		f = FinishToolCalls // Gemini says STOP after function calls
	}
	if err := d.parts.finish(f, "", d.usage, emit); err != nil {
		return err
	}
	d.done = true
	return emit(Event{Kind: EventDone, Usage: d.usage})
}

// call emits one whole function call as a tool call part.
func (d *geminiStreamDecoder) call(id, name string, args json.RawMessage, emit func(Event) error) error {
	if id == "" {
		id = "call_" + strconv.Itoa(d.calls)
	}
	d.calls++
	p, err := d.parts.toolCall(id, name, emit)
	if err != nil {
		return err
	}
	a := string(bytes.TrimSpace(args))
	if a == "" || a == "null" {
		a = "{}"
	}
	if err := emit(Event{Kind: EventToolArgs, Index: p, Text: a}); err != nil {
		return err
	}
	return d.parts.closeOpen(emit)
}

// geminiStreamFinish maps a finishReason (R-FMT-2): the blocks are the
// content filter; a reason Gemini adds later reads as a natural stop.
func geminiStreamFinish(r string) Finish {
	switch r {
	case "STOP", "FINISH_REASON_UNSPECIFIED", "OTHER", "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL":
		return FinishStop
	case "MAX_TOKENS":
		return FinishLength
	case "SAFETY", "RECITATION", "LANGUAGE", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
		"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION":
		return FinishContentFilter
	}
	return FinishStop
}
