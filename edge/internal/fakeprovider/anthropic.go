package fakeprovider

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// messagesRequest is the body of Anthropic's Messages API and of Bedrock's
// InvokeModel for Anthropic models.
type messagesRequest struct {
	Model            *string         `json:"model"`
	MaxTokens        *int            `json:"max_tokens"`
	Messages         json.RawMessage `json:"messages"`
	Stream           *bool           `json:"stream"`
	AnthropicVersion *string         `json:"anthropic_version"`
	Tools            json.RawMessage `json:"tools"`
	ToolChoice       json.RawMessage `json:"tool_choice"`
}

// anthropicToolUse is an assistant's tool_use block.
type anthropicToolUse struct {
	Type  string         `json:"type"`
	ID    string         `json:"id"`
	Name  string         `json:"name"`
	Input map[string]any `json:"input"`
}

type anthropicMessage struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []any          `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        anthropicUsage `json:"usage"`
}

type anthropicBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anthropicUsage struct {
	InputTokens              int    `json:"input_tokens"`
	CacheCreationInputTokens int    `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int    `json:"cache_read_input_tokens"`
	OutputTokens             int    `json:"output_tokens"`
	ServiceTier              string `json:"service_tier,omitempty"`
}

// newAnthropicUsage reports u the Anthropic way: input_tokens excludes the
// tokens read from or written to the cache.
func newAnthropicUsage(u usage, output int) anthropicUsage {
	return anthropicUsage{
		InputTokens:              u.prompt - u.cached - u.cacheCreated,
		CacheCreationInputTokens: u.cacheCreated,
		CacheReadInputTokens:     u.cached,
		OutputTokens:             output,
		ServiceTier:              "standard",
	}
}

// checkMessages validates the parts of a Messages body both APIs require,
// answering 400 when one is missing.
func (c *call) checkMessages(req *messagesRequest) bool {
	if req.MaxTokens == nil {
		c.badRequest("max_tokens", "Field required")
		return false
	}
	if *req.MaxTokens < 1 {
		c.badRequest("max_tokens", "Input should be greater than or equal to 1")
		return false
	}
	if len(bytes.TrimSpace(req.Messages)) == 0 || string(req.Messages) == "null" {
		c.badRequest("messages", "Field required")
		return false
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(req.Messages, &msgs); err != nil {
		c.badRequest("messages", "Input should be a valid list")
		return false
	}
	return true
}

// messages answers POST /v1/messages.
func (c *call) messages() {
	var req messagesRequest
	if !c.decodeBody(&req) {
		return
	}
	if req.Model != nil {
		c.model = *req.Model
	}
	c.s.setModel(c.seq, c.model)
	if c.model == "" {
		c.badRequest("model", "Field required")
		return
	}
	if !c.checkMessages(&req) {
		return
	}
	c.answerMessages(&req, req.Stream != nil && *req.Stream, nil)
}

// answerMessages admits the call and answers req with an Anthropic message,
// or with its event sequence through em when stream is set (SSE when em is
// nil): a tool_use block when the request asks for a call (see tools.go),
// text otherwise.
func (c *call) answerMessages(req *messagesRequest, stream bool, em emitter) {
	u, truncated := c.plan(req.MaxTokens)
	var toolUse *anthropicToolUse
	decls, choice, userText, results := anthropicTools(req.Messages, req.Tools, req.ToolChoice)
	if len(results) > 0 {
		truncated = c.useReply(resultText(results), &u, req.MaxTokens)
	} else if d, ok := choice.choose(decls, userText); ok {
		toolUse = &anthropicToolUse{Type: "tool_use", ID: newID("toolu_")[:30], Name: d.Name, Input: placeholderArgs(d)}
		truncated = false
	}
	if !c.admit(u.prompt-u.cached, u.output) {
		return
	}
	stop := "end_turn"
	switch {
	case toolUse != nil:
		stop = "tool_use"
	case truncated:
		stop = "max_tokens"
	}
	msg := anthropicMessage{
		ID:           newID("msg_"),
		Type:         "message",
		Role:         "assistant",
		Model:        c.model,
		Content:      []any{},
		StopSequence: nil,
	}
	if !stream {
		c.answerWholeMessage(msg, u, stop, toolUse)
		return
	}
	c.streamMessage(msg, u, stop, em, toolUse)
}

// invocationLatencyMs is the latency, in milliseconds, Bedrock reports for
// a call answering output tokens: the first-byte latency plus a token delay
// per token.
func (c *call) invocationLatencyMs(output int) int {
	return int((c.set.latency + c.set.tokenDelay*timeDur(output)).Milliseconds())
}

// answerWholeMessage waits as long as the answer of u.output tokens takes,
// then answers 200 with msg (the message without content, stop reason and
// usage) completed: toolUse when set, else one text block of u.output tokens, stop as stop reason,
// u as usage, and for Bedrock the token counts and latency headers. It
// answers nothing when the wait is cut short.
func (c *call) answerWholeMessage(msg anthropicMessage, u usage, stop string, toolUse *anthropicToolUse) {
	if !c.waitWhole(u.output) {
		return
	}
	if toolUse != nil {
		msg.Content = append(msg.Content, *toolUse)
	} else {
		msg.Content = append(msg.Content, anthropicBlock{Type: "text", Text: c.text(u.output)})
	}
	msg.StopReason = &stop
	msg.Usage = newAnthropicUsage(u, u.output)
	if c.route.flavor == FlavorBedrock {
		h := c.w.Header()
		h.Set("X-Amzn-Bedrock-Input-Token-Count", itoa(u.prompt))
		h.Set("X-Amzn-Bedrock-Output-Token-Count", itoa(u.output))
		h.Set("X-Amzn-Bedrock-Invocation-Latency", itoa(c.invocationLatencyMs(u.output)))
	}
	c.writeJSON(http.StatusOK, msg)
}

// streamMessage waits the first-byte latency, starts the stream (SSE when
// em is nil, else em's AWS event stream) and sends the Anthropic event
// sequence of msg (the message without content, stop reason and usage):
// message_start, content_block_start, a ping (Anthropic only), one
// content_block_delta per output token a token delay apart, then the end
// of the sequence (see endMessageStream). It stops at the first wait cut
// short or event that cannot be sent.
func (c *call) streamMessage(msg anthropicMessage, u usage, stop string, em emitter, toolUse *anthropicToolUse) {
	if !c.sleep(c.set.latency) {
		return
	}
	if em == nil {
		c.startSSE()
		em = sseEmitter{c}
	} else {
		c.startEventStream()
	}
	msg.Usage = newAnthropicUsage(u, 1)
	if !em.emit("message_start", mustJSON(struct {
		Type    string           `json:"type"`
		Message anthropicMessage `json:"message"`
	}{"message_start", msg})) {
		return
	}
	if toolUse != nil {
		// A tool call: the block with empty input, then the input as one
		// input_json_delta.
		head := *toolUse
		head.Input = map[string]any{}
		if !em.emit("content_block_start", mustJSON(map[string]any{"type": "content_block_start", "index": 0, "content_block": head})) ||
			!em.emit("content_block_delta", mustJSON(map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]string{"type": "input_json_delta", "partial_json": string(mustJSON(toolUse.Input))}})) {
			return
		}
		c.endMessageStream(u, stop, em)
		return
	}
	if !em.emit("content_block_start", []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)) {
		return
	}
	if c.route.flavor == FlavorAnthropic && !em.emit("ping", []byte(`{"type": "ping"}`)) {
		return
	}
	type textDelta struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type blockDelta struct {
		Type  string    `json:"type"`
		Index int       `json:"index"`
		Delta textDelta `json:"delta"`
	}
	for i := range u.output {
		if !c.sleep(c.set.tokenDelay) {
			return
		}
		if !em.emit("content_block_delta", mustJSON(blockDelta{"content_block_delta", 0, textDelta{"text_delta", c.word(i)}})) {
			return
		}
	}
	c.endMessageStream(u, stop, em)
}

// endMessageStream sends the end of an Anthropic event sequence through em:
// content_block_stop, message_delta (stop as stop reason, u.output output
// tokens), message_stop (with Bedrock's invocation metrics for Bedrock),
// then finishes the stream. It stops at the first event that cannot be
// sent, without finishing the stream.
func (c *call) endMessageStream(u usage, stop string, em emitter) {
	if !em.emit("content_block_stop", []byte(`{"type":"content_block_stop","index":0}`)) {
		return
	}
	type messageDelta struct {
		Type  string `json:"type"`
		Delta struct {
			StopReason   string  `json:"stop_reason"`
			StopSequence *string `json:"stop_sequence"`
		} `json:"delta"`
		Usage struct {
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	md := messageDelta{Type: "message_delta"}
	md.Delta.StopReason = stop
	md.Usage.OutputTokens = u.output
	if !em.emit("message_delta", mustJSON(md)) {
		return
	}
	stopEvent := []byte(`{"type":"message_stop"}`)
	if c.route.flavor == FlavorBedrock {
		stopEvent = mustJSON(map[string]any{
			"type": "message_stop",
			"amazon-bedrock-invocationMetrics": map[string]int{
				"inputTokenCount":   u.prompt,
				"outputTokenCount":  u.output,
				"invocationLatency": c.invocationLatencyMs(u.output),
				"firstByteLatency":  int(c.set.latency.Milliseconds()),
			},
		})
	}
	if !em.emit("message_stop", stopEvent) {
		return
	}
	c.finishStream()
}
