package fakeprovider

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"strconv"
)

type chatRequest struct {
	Model         string          `json:"model"`
	Messages      json.RawMessage `json:"messages"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Tools               json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
}

// chatToolCall is an assistant's function call; Index is set in stream
// deltas only.
type chatToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []chatChoice `json:"choices"`
	Usage             any          `json:"usage,omitempty"`
	ServiceTier       string       `json:"service_tier"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

type chatChoice struct {
	Index        int          `json:"index"`
	Message      *chatMessage `json:"message,omitempty"`
	Delta        *chatDelta   `json:"delta,omitempty"`
	Logprobs     *struct{}    `json:"logprobs"`
	FinishReason *string      `json:"finish_reason"`
}

type chatMessage struct {
	Role        string         `json:"role"`
	Content     *string        `json:"content"`
	Refusal     *string        `json:"refusal"`
	ToolCalls   []chatToolCall `json:"tool_calls,omitempty"`
	Annotations []string       `json:"annotations"`
}

// chatDelta is a stream delta; Content is a pointer so that the last delta
// can leave it out.
type chatDelta struct {
	Role      string         `json:"role,omitempty"`
	Content   *string        `json:"content,omitempty"`
	ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
}

type chatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int `json:"reasoning_tokens"`
		AudioTokens              int `json:"audio_tokens"`
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

// newChatUsage reports u the OpenAI way: prompt_tokens includes the cached
// tokens.
func newChatUsage(u usage) *chatUsage {
	cu := &chatUsage{PromptTokens: u.prompt, CompletionTokens: u.output, TotalTokens: u.prompt + u.output}
	cu.PromptTokensDetails.CachedTokens = u.cached
	return cu
}

// requireModel resolves the model of an OpenAI or Azure call: the Azure
// deployment when the path names one, else the body's model.
func (c *call) requireModel(bodyModel string) bool {
	if c.route.model == "" {
		c.model = bodyModel
	}
	c.s.setModel(c.seq, c.model)
	if c.model == "" {
		c.fail(apiErr{kind: eBadRequest, msg: "you must provide a model parameter"})
		return false
	}
	return true
}

// chat answers POST /v1/chat/completions and Azure's chat paths.
func (c *call) chat() {
	var req chatRequest
	if !c.decodeBody(&req) || !c.requireModel(req.Model) {
		return
	}
	if len(bytes.TrimSpace(req.Messages)) == 0 || string(req.Messages) == "null" {
		c.fail(apiErr{kind: eBadRequest, msg: "Missing required parameter: 'messages'."})
		return
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(req.Messages, &msgs); err != nil {
		c.badRequest("messages", "expected an array, but got something else instead")
		return
	}
	if len(msgs) == 0 {
		c.fail(apiErr{kind: eBadRequest, msg: "[] is too short - 'messages'"})
		return
	}
	maxTokens := req.MaxCompletionTokens
	if maxTokens == nil {
		maxTokens = req.MaxTokens
	}
	u, truncated := c.plan(maxTokens)
	var toolCall *chatToolCall
	decls, choice, userText, results := openAIChatTools(req.Messages, req.Tools, req.ToolChoice)
	if len(results) > 0 {
		truncated = c.useReply(resultText(results), &u, maxTokens)
	} else if d, ok := choice.choose(decls, userText); ok {
		toolCall = &chatToolCall{ID: newID("call_")[:29], Type: "function"}
		toolCall.Function.Name, toolCall.Function.Arguments = d.Name, string(mustJSON(placeholderArgs(d)))
		truncated = false
	}
	if !c.admit(u.prompt, u.output) {
		return
	}
	finish := "stop"
	switch {
	case toolCall != nil:
		finish = "tool_calls"
	case truncated:
		finish = "length"
	}
	id := newID("chatcmpl-")
	if req.Stream {
		c.chatStream(id, u, finish, req.StreamOptions != nil && req.StreamOptions.IncludeUsage, toolCall)
		return
	}
	if !c.waitWhole(u.output) {
		return
	}
	msg := &chatMessage{Role: "assistant", Annotations: []string{}}
	if toolCall != nil {
		msg.ToolCalls = []chatToolCall{*toolCall}
	} else {
		text := c.text(u.output)
		msg.Content = &text
	}
	c.writeJSON(http.StatusOK, chatCompletion{
		ID:      id,
		Object:  "chat.completion",
		Created: c.unixNow(),
		Model:   c.model,
		Choices: []chatChoice{{
			Message:      msg,
			FinishReason: &finish,
		}},
		Usage:             newChatUsage(u),
		ServiceTier:       "default",
		SystemFingerprint: "fp_fakeprovider",
	})
}

// chatStream sends a chat answer as chunks: the role, one chunk per token
// (or, for a tool call, its name and id then its arguments), the finish
// reason, the usage chunk when asked for, then [DONE].
func (c *call) chatStream(id string, u usage, finish string, includeUsage bool, toolCall *chatToolCall) {
	if !c.sleep(c.set.latency) {
		return
	}
	c.startSSE()
	chunk := chatCompletion{
		ID:                id,
		Object:            "chat.completion.chunk",
		Created:           c.unixNow(),
		Model:             c.model,
		ServiceTier:       "default",
		SystemFingerprint: "fp_fakeprovider",
	}
	if includeUsage {
		chunk.Usage = json.RawMessage("null")
	}
	send := func(delta chatDelta, finish *string) bool {
		chunk.Choices = []chatChoice{{Delta: &delta, FinishReason: finish}}
		return c.sseEvent("", mustJSON(chunk))
	}
	empty := ""
	tokens := u.output
	if toolCall != nil {
		tokens = 0
		if !send(chatDelta{Role: "assistant"}, nil) {
			return
		}
		zero := 0
		head, args := *toolCall, chatToolCall{Index: &zero}
		head.Index = &zero
		args.Function.Arguments, head.Function.Arguments = head.Function.Arguments, ""
		if !send(chatDelta{ToolCalls: []chatToolCall{head}}, nil) || !send(chatDelta{ToolCalls: []chatToolCall{args}}, nil) {
			return
		}
	} else if !send(chatDelta{Role: "assistant", Content: &empty}, nil) {
		return
	}
	for i := range tokens {
		if !c.sleep(c.set.tokenDelay) {
			return
		}
		t := c.word(i)
		if !send(chatDelta{Content: &t}, nil) {
			return
		}
	}
	if !send(chatDelta{}, &finish) {
		return
	}
	if includeUsage {
		chunk.Choices = []chatChoice{}
		chunk.Usage = newChatUsage(u)
		if !c.sseEvent("", mustJSON(chunk)) {
			return
		}
	}
	c.sseData([]byte("[DONE]"))
	c.finishStream()
}

type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

type embeddingList struct {
	Object string      `json:"object"`
	Data   []embedding `json:"data"`
	Model  string      `json:"model"`
	Usage  struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

type embedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

// embeddingInputs splits the input of an embeddings request into the texts
// (or token arrays) that each get a vector.
func embeddingInputs(raw json.RawMessage) ([]string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, false
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, one != ""
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		return nil, false
	}
	var n float64
	if json.Unmarshal(items[0], &n) == nil {
		// One array of token IDs is one input.
		return []string{string(raw)}, true
	}
	out := make([]string, len(items))
	for i, it := range items {
		var s string
		var toks []int
		switch {
		case json.Unmarshal(it, &s) == nil && s != "":
			out[i] = s
		case json.Unmarshal(it, &toks) == nil && len(toks) > 0:
			out[i] = string(it)
		default:
			return nil, false
		}
	}
	return out, true
}

// vector returns a deterministic unit vector for text.
func vector(text string, dims int) []float32 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(text))
	x := h.Sum64() | 1
	v := make([]float32, dims)
	var norm float64
	for i := range v {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		f := float64(int64(x>>11))/float64(1<<52) - 1
		v[i] = float32(f)
		norm += f * f
	}
	norm = math.Sqrt(norm)
	if norm > 0 {
		for i := range v {
			v[i] = float32(float64(v[i]) / norm)
		}
	}
	return v
}

// base64Floats encodes v as OpenAI's base64 embeddings: little-endian
// float32s.
func base64Floats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// embeddings answers POST /v1/embeddings with one deterministic vector per
// input, as floats or, when asked, base64 little-endian float32s.
func (c *call) embeddings() {
	var req embeddingsRequest
	if !c.decodeBody(&req) || !c.requireModel(req.Model) {
		return
	}
	inputs, ok := embeddingInputs(req.Input)
	if !ok {
		c.fail(apiErr{kind: eBadRequest, msg: "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."})
		return
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		c.fail(apiErr{kind: eBadRequest, msg: "'" + req.EncodingFormat + "' is not one of ['float', 'base64'] - 'encoding_format'"})
		return
	}
	dims := c.s.embedDims
	if req.Dimensions != nil {
		if *req.Dimensions < 1 || *req.Dimensions > 8192 {
			c.fail(apiErr{kind: eBadRequest, msg: "Invalid value for 'dimensions' = " + strconv.Itoa(*req.Dimensions) + ". Must be between 1 and 8192."})
			return
		}
		dims = *req.Dimensions
	}
	u, _ := c.plan(nil)
	if !c.admit(u.prompt, 0) || !c.sleep(c.set.latency) {
		return
	}
	out := embeddingList{Object: "list", Model: c.model, Data: make([]embedding, len(inputs))}
	for i, in := range inputs {
		v := vector(in, dims)
		out.Data[i] = embedding{Object: "embedding", Index: i, Embedding: v}
		if req.EncodingFormat == "base64" {
			out.Data[i].Embedding = base64Floats(v)
		}
	}
	out.Usage.PromptTokens, out.Usage.TotalTokens = u.prompt, u.prompt
	c.writeJSON(http.StatusOK, out)
}

type responsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    *string         `json:"instructions"`
	Stream          bool            `json:"stream"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
}

type responsesUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

type outputText struct {
	Type        string   `json:"type"`
	Text        string   `json:"text"`
	Annotations []string `json:"annotations"`
	Logprobs    []string `json:"logprobs"`
}

type outputMessage struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

type responseObject struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Background         bool               `json:"background"`
	Error              *struct{}          `json:"error"`
	IncompleteDetails  *incompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []outputMessage    `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Store              bool               `json:"store"`
	Temperature        float64            `json:"temperature"`
	Text               struct {
		Format struct {
			Type string `json:"type"`
		} `json:"format"`
	} `json:"text"`
	ToolChoice string            `json:"tool_choice"`
	Tools      []string          `json:"tools"`
	TopP       float64           `json:"top_p"`
	Truncation string            `json:"truncation"`
	Usage      *responsesUsage   `json:"usage"`
	User       *string           `json:"user"`
	Metadata   map[string]string `json:"metadata"`
}

// responses answers POST /v1/responses with one output_text message.
func (c *call) responses() {
	var req responsesRequest
	if !c.decodeBody(&req) || !c.requireModel(req.Model) {
		return
	}
	if len(bytes.TrimSpace(req.Input)) == 0 && req.Instructions == nil {
		c.fail(apiErr{kind: eBadRequest, msg: "Missing required parameter: 'input'."})
		return
	}
	u, truncated := c.plan(req.MaxOutputTokens)
	if !c.admit(u.prompt, u.output) {
		return
	}
	resp := responseObject{
		ID:                newID("resp_"),
		Object:            "response",
		CreatedAt:         c.unixNow(),
		Status:            "completed",
		Instructions:      req.Instructions,
		MaxOutputTokens:   req.MaxOutputTokens,
		Model:             c.model,
		Output:            []outputMessage{},
		ParallelToolCalls: true,
		Store:             true,
		Temperature:       1,
		ToolChoice:        "auto",
		Tools:             []string{},
		TopP:              1,
		Truncation:        "disabled",
		Metadata:          map[string]string{},
	}
	resp.Text.Format.Type = "text"
	ru := &responsesUsage{InputTokens: u.prompt, OutputTokens: u.output, TotalTokens: u.prompt + u.output}
	ru.InputTokensDetails.CachedTokens = u.cached
	msg := outputMessage{ID: newID("msg_"), Type: "message", Status: "completed", Role: "assistant", Content: []outputText{{Type: "output_text", Text: c.text(u.output), Annotations: []string{}, Logprobs: []string{}}}}
	done := func(r *responseObject) {
		r.Output, r.Usage, r.Status = []outputMessage{msg}, ru, "completed"
		if truncated {
			r.Status, r.IncompleteDetails = "incomplete", &incompleteDetails{Reason: "max_output_tokens"}
			r.Output[0].Status = "incomplete"
		}
	}
	if !req.Stream {
		if !c.waitWhole(u.output) {
			return
		}
		done(&resp)
		c.writeJSON(http.StatusOK, resp)
		return
	}
	c.responsesStream(resp, msg, u, done)
}

// responsesStream sends the Responses API's event sequence.
func (c *call) responsesStream(resp responseObject, msg outputMessage, u usage, done func(*responseObject)) {
	if !c.sleep(c.set.latency) {
		return
	}
	c.startSSE()
	seq := 0
	send := func(typ string, fields map[string]any) bool {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		return c.sseEvent(typ, mustJSON(fields))
	}
	resp.Status = "in_progress"
	if !send("response.created", map[string]any{"response": resp}) ||
		!send("response.in_progress", map[string]any{"response": resp}) {
		return
	}
	item := msg
	item.Status, item.Content = "in_progress", []outputText{}
	if !send("response.output_item.added", map[string]any{"output_index": 0, "item": item}) {
		return
	}
	part := outputText{Type: "output_text", Text: "", Annotations: []string{}, Logprobs: []string{}}
	if !send("response.content_part.added", map[string]any{"item_id": msg.ID, "output_index": 0, "content_index": 0, "part": part}) {
		return
	}
	for i := range u.output {
		if !c.sleep(c.set.tokenDelay) {
			return
		}
		if !send("response.output_text.delta", map[string]any{"item_id": msg.ID, "output_index": 0, "content_index": 0, "delta": c.word(i), "logprobs": []string{}}) {
			return
		}
	}
	text := msg.Content[0].Text
	part.Text = text
	done(&resp)
	if !send("response.output_text.done", map[string]any{"item_id": msg.ID, "output_index": 0, "content_index": 0, "text": text, "logprobs": []string{}}) ||
		!send("response.content_part.done", map[string]any{"item_id": msg.ID, "output_index": 0, "content_index": 0, "part": part}) ||
		!send("response.output_item.done", map[string]any{"output_index": 0, "item": resp.Output[0]}) {
		return
	}
	final := "response.completed"
	if resp.Status == "incomplete" {
		final = "response.incomplete"
	}
	if !send(final, map[string]any{"response": resp}) {
		return
	}
	c.finishStream()
}

type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type anthropicModel struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

// listModels answers GET /v1/models in OpenAI's or Anthropic's shape.
func (c *call) listModels() {
	if c.route.flavor == FlavorAnthropic {
		out := struct {
			Data    []anthropicModel `json:"data"`
			HasMore bool             `json:"has_more"`
			FirstID string           `json:"first_id"`
			LastID  string           `json:"last_id"`
		}{Data: make([]anthropicModel, len(c.s.models))}
		for i, m := range c.s.models {
			out.Data[i] = anthropicModel{Type: "model", ID: m, DisplayName: m, CreatedAt: "2025-01-01T00:00:00Z"}
		}
		out.FirstID, out.LastID = c.s.models[0], c.s.models[len(c.s.models)-1]
		c.writeJSON(http.StatusOK, out)
		return
	}
	out := struct {
		Object string        `json:"object"`
		Data   []openAIModel `json:"data"`
	}{Object: "list", Data: make([]openAIModel, len(c.s.models))}
	for i, m := range c.s.models {
		out.Data[i] = openAIModel{ID: m, Object: "model", Created: 1735689600, OwnedBy: "fakeprovider"}
	}
	c.writeJSON(http.StatusOK, out)
}
