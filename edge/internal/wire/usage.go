package wire

import (
	"bytes"
	"encoding/json"
	"strconv"

	"weir.dev/routing"
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

// usageKey is how a usage member starts in a JSON answer.
var usageKey = []byte(`"usage"`)

// lastUsageObject returns the JSON object of the last "usage" member of b,
// or nil when there is none or its value is not an object (e.g. null). Only
// that object is decoded afterwards: the rest of an answer, which can be
// large, is never parsed. Inside JSON strings quotes are escaped, so the raw
// bytes "usage" followed by a colon can only be a member name; providers put
// the answer's usage after its content, so the last one is the answer's.
func lastUsageObject(b []byte) []byte {
	for end := len(b); ; {
		i := lastUsageKey(b[:end])
		if i < 0 {
			return nil
		}
		j := skipWS(b, i+len(usageKey))
		if j < len(b) && b[j] == ':' {
			j = skipWS(b, j+1)
			if j >= len(b) || b[j] != '{' {
				return nil
			}
			e, err := skipValue(b, j)
			if err != nil {
				return nil
			}
			return b[j:e]
		}
		end = i
	}
}

// lastUsageKey is bytes.LastIndex(b, usageKey) by its closing quote: a
// stream's chunks hold the key near their end, which this finds in a few
// steps where bytes.LastIndex hashes the whole chunk.
func lastUsageKey(b []byte) int {
	for end := len(b); ; {
		q := bytes.LastIndexByte(b[:end], '"')
		if q < len(usageKey)-1 {
			return -1
		}
		if i := q + 1 - len(usageKey); string(b[i:q+1]) == string(usageKey) {
			return i
		}
		end = q
	}
}

// OpenAIBodyUsage reads usage from a non-streaming OpenAI-format answer
// (chat completions, embeddings, responses); ok is false when it has none.
func OpenAIBodyUsage(body []byte) (routing.Usage, bool) {
	obj := lastUsageObject(body)
	if obj == nil {
		return routing.Usage{}, false
	}
	var u openAIUsage
	if !scanOpenAIUsage(obj, &u) {
		u = openAIUsage{}
		if json.Unmarshal(obj, &u) != nil {
			return routing.Usage{}, false
		}
	}
	return u.usage(), true
}

// openAIUsageNames are openAIUsage's JSON names; openAIDetailsNames its
// details objects'.
var (
	openAIUsageNames   = []string{"prompt_tokens", "completion_tokens", "input_tokens", "output_tokens", "prompt_tokens_details", "input_tokens_details"}
	openAIDetailsNames = []string{"cached_tokens"}
)

// scanOpenAIUsage is json.Unmarshal(obj, u)'s fast path for a plain usage
// object (see scanInts); false leaves u to be read by encoding/json.
func scanOpenAIUsage(obj []byte, u *openAIUsage) bool {
	if !Valid(obj) {
		return false
	}
	var top [6]int64
	var details [2][]byte
	if !scanInts(obj, openAIUsageNames, top[:], 4, details[:]) {
		return false
	}
	u.PromptTokens, u.CompletionTokens, u.InputTokens, u.OutputTokens = top[0], top[1], top[2], top[3]
	for i, d := range details {
		var cached [1]int64
		if d != nil && !scanInts(d, openAIDetailsNames, cached[:], 1, nil) {
			return false
		}
		if i == 0 {
			u.PromptTokensDetails.CachedTokens = cached[0]
		} else {
			u.InputTokensDetails.CachedTokens = cached[0]
		}
	}
	return true
}

// scanInts reads the members of the valid JSON object obj named names[:ints]
// as int64s into vals, and returns the raw objects of those named
// names[ints:] in objs, as json.Unmarshal reads such members into a
// struct: unknown members ignored, a null member left unset. It returns
// false for anything it leaves to encoding/json: a key with escapes or
// non-ASCII bytes, one of the names in another case or twice, a value of
// another type, a number that is not an int64.
func scanInts(obj []byte, names []string, vals []int64, ints int, objs [][]byte) bool {
	var seen uint32
	ok := true
	err := ScanTop(obj, func(raw, v []byte) error {
		i := nameIndex(raw, names)
		if i == -2 || i >= 0 && seen&(1<<i) != 0 {
			ok = false
			return ErrNotObject
		}
		if i < 0 || string(v) == "null" {
			return nil
		}
		seen |= 1 << i
		if i >= ints {
			if v[0] != '{' {
				ok = false
				return ErrNotObject
			}
			objs[i-ints] = v
			return nil
		}
		if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
			ok = false
			return ErrNotObject
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			ok = false
			return ErrNotObject
		}
		vals[i] = n
		return nil
	})
	return ok && err == nil
}

// nameIndex is the index in names of a raw (undecoded) key: -1 when it is
// none of them in any case, -2 when it has escapes or non-ASCII bytes or is
// one of them in another case.
func nameIndex(raw []byte, names []string) int {
	for _, c := range raw {
		if c == '\\' || c >= 0x80 {
			return -2
		}
	}
	for i, n := range names {
		if string(raw) == n {
			return i
		}
	}
	for _, n := range names {
		if bytes.EqualFold(raw, []byte(n)) {
			return -2
		}
	}
	return -1
}

// AnthropicBodyUsage reads usage from a non-streaming Messages answer.
func AnthropicBodyUsage(body []byte) (routing.Usage, bool) {
	obj := lastUsageObject(body)
	var u anthropicUsage
	if obj == nil || json.Unmarshal(obj, &u) != nil {
		return routing.Usage{}, false
	}
	return u.usage(), true
}

// OpenAIChunkUsage reads the usage of one streamed OpenAI-format event:
// a chat completion chunk carrying "usage" (sent last when
// stream_options.include_usage is set), or a Responses API
// "response.completed" event. final reports a chat usage-only chunk (no
// choices), which the edge drops when the caller did not ask for usage.
func OpenAIChunkUsage(data []byte) (u routing.Usage, ok, usageOnly bool) {
	if lastUsageObject(data) == nil {
		return routing.Usage{}, false, false // most chunks: "usage":null
	}
	if u, ok, usageOnly, read := scanChunkUsage(data); read {
		return u, ok, usageOnly
	}
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

// chunkNames are the members OpenAIChunkUsage decodes; responseNames those
// of its "response" member.
var (
	chunkNames    = []string{"usage", "choices", "type", "response"}
	responseNames = []string{"usage"}
)

// scanChunkUsage is OpenAIChunkUsage's decoding without encoding/json for
// a plain chunk (read true): a valid object whose members usage, choices,
// type and response (and response's usage) occur at most once, spelled
// so, with values of the types decoded (or null), the usage objects plain
// as scanOpenAIUsage reads them. It returns read false for anything else,
// which encoding/json then reads (FuzzChunkUsage compares the two).
func scanChunkUsage(data []byte) (u routing.Usage, ok, usageOnly, read bool) {
	if !Valid(data) {
		return u, false, false, false
	}
	var seen uint32
	var usage, response []byte
	choices := 0 // 0 absent or null, 1 empty, 2 not empty
	err := ScanTop(data, func(raw, v []byte) error {
		i := nameIndex(raw, chunkNames)
		if i == -2 || i >= 0 && seen&(1<<i) != 0 {
			return ErrNotObject
		}
		if i < 0 {
			return nil
		}
		seen |= 1 << i
		if string(v) == "null" {
			return nil
		}
		switch i {
		case 0:
			if v[0] != '{' {
				return ErrNotObject
			}
			usage = v
		case 1:
			if v[0] != '[' {
				return ErrNotObject
			}
			choices = 2
			if v[skipWS(v, 1)] == ']' {
				choices = 1
			}
		case 2:
			if v[0] != '"' {
				return ErrNotObject
			}
		case 3:
			if v[0] != '{' {
				return ErrNotObject
			}
			response = v
		}
		return nil
	})
	if err != nil {
		return u, false, false, false
	}
	var ou openAIUsage
	if usage != nil {
		if !scanOpenAIUsage(usage, &ou) {
			return u, false, false, false
		}
		return ou.usage(), true, choices == 1, true
	}
	if response == nil {
		return u, false, false, true
	}
	var seenUsage bool
	err = ScanTop(response, func(raw, v []byte) error {
		switch nameIndex(raw, responseNames) {
		case -1:
			return nil
		case -2:
			return ErrNotObject
		}
		if seenUsage {
			return ErrNotObject
		}
		seenUsage = true
		if string(v) != "null" {
			if v[0] != '{' {
				return ErrNotObject
			}
			usage = v
		}
		return nil
	})
	if err != nil || usage != nil && !scanOpenAIUsage(usage, &ou) {
		return u, false, false, false
	}
	if usage == nil {
		return u, false, false, true
	}
	return ou.usage(), true, false, true
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
