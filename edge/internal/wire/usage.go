package wire

import (
	"encoding/json"

	"weir.dev/edge/internal/routing"
)

// openAIUsage covers chat completions, embeddings and the Responses API.
type openAIUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

func (u *openAIUsage) usage() routing.Usage {
	in, out, cached := u.PromptTokens, u.CompletionTokens, u.PromptTokensDetails.CachedTokens
	if in == 0 && u.InputTokens > 0 {
		in, out, cached = u.InputTokens, u.OutputTokens, u.InputTokensDetails.CachedTokens
	}
	if cached > in {
		cached = in
	}
	// OpenAI counts cached tokens inside prompt tokens; Weir prices them
	// apart (R-COST-2), so input is what was not read from the cache.
	return routing.Usage{InputTokens: in - cached, OutputTokens: out, CacheReadTokens: cached}
}

type anthropicUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

func (u *anthropicUsage) usage() routing.Usage {
	return routing.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}
}

// OpenAIBodyUsage reads usage from a non-streaming OpenAI-format answer
// (chat completions, embeddings, responses); ok is false when it has none.
func OpenAIBodyUsage(body []byte) (routing.Usage, bool) {
	var b struct {
		Usage *openAIUsage `json:"usage"`
	}
	if json.Unmarshal(body, &b) != nil || b.Usage == nil {
		return routing.Usage{}, false
	}
	return b.Usage.usage(), true
}

// AnthropicBodyUsage reads usage from a non-streaming Messages answer.
func AnthropicBodyUsage(body []byte) (routing.Usage, bool) {
	var b struct {
		Usage *anthropicUsage `json:"usage"`
	}
	if json.Unmarshal(body, &b) != nil || b.Usage == nil {
		return routing.Usage{}, false
	}
	return b.Usage.usage(), true
}

// OpenAIChunkUsage reads the usage of one streamed OpenAI-format event:
// a chat completion chunk carrying "usage" (sent last when
// stream_options.include_usage is set), or a Responses API
// "response.completed" event. final reports a chat usage-only chunk (no
// choices), which the edge drops when the caller did not ask for usage.
func OpenAIChunkUsage(data []byte) (u routing.Usage, ok, usageOnly bool) {
	var c struct {
		Usage    *openAIUsage      `json:"usage"`
		Choices  []json.RawMessage `json:"choices"`
		Type     string            `json:"type"`
		Response *struct {
			Usage *openAIUsage `json:"usage"`
		} `json:"response"`
	}
	if json.Unmarshal(data, &c) != nil {
		return routing.Usage{}, false, false
	}
	if c.Usage != nil {
		return c.Usage.usage(), true, c.Choices != nil && len(c.Choices) == 0
	}
	if c.Response != nil && c.Response.Usage != nil {
		return c.Response.Usage.usage(), true, false
	}
	return routing.Usage{}, false, false
}

// AnthropicStreamUsage folds one streamed Messages event into u:
// message_start carries input and cache tokens, message_delta the output
// tokens so far (cumulative).
func AnthropicStreamUsage(u *routing.Usage, name string, data []byte) {
	switch name {
	case "message_start":
		var e struct {
			Message struct {
				Usage anthropicUsage `json:"usage"`
			} `json:"message"`
		}
		if json.Unmarshal(data, &e) == nil {
			x := e.Message.Usage.usage()
			u.InputTokens, u.CacheReadTokens, u.CacheWriteTokens = x.InputTokens, x.CacheReadTokens, x.CacheWriteTokens
			if x.OutputTokens > u.OutputTokens {
				u.OutputTokens = x.OutputTokens
			}
		}
	case "message_delta":
		var e struct {
			Usage anthropicUsage `json:"usage"`
		}
		if json.Unmarshal(data, &e) == nil {
			if e.Usage.OutputTokens > u.OutputTokens {
				u.OutputTokens = e.Usage.OutputTokens
			}
			if e.Usage.InputTokens > 0 {
				u.InputTokens = e.Usage.InputTokens
			}
		}
	}
}
