package wire

import (
	"encoding/json"
	"testing"

	"weir.dev/routing"
)

func TestUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		body  string
		parse func([]byte) (routing.Usage, bool)
		want  routing.Usage
		ok    bool
	}{
		{"openai chat", `{"choices":[{"message":{"content":"say \"usage\": {\"x\":1}"}}],"usage":{"prompt_tokens":10,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":4}}}`,
			OpenAIBodyUsage, routing.Usage{InputTokens: 6, OutputTokens: 3, CacheReadTokens: 4}, true},
		{"openai embeddings", `{"data":[],"usage":{"prompt_tokens":7,"total_tokens":7}}`, OpenAIBodyUsage, routing.Usage{InputTokens: 7}, true},
		{"responses", `{"output":[],"usage":{"input_tokens":9,"output_tokens":2,"input_tokens_details":{"cached_tokens":1}}}`,
			OpenAIBodyUsage, routing.Usage{InputTokens: 8, OutputTokens: 2, CacheReadTokens: 1}, true},
		{"anthropic", `{"content":[],"usage":{"input_tokens":5,"output_tokens":6,"cache_read_input_tokens":7,"cache_creation_input_tokens":8}}`,
			AnthropicBodyUsage, routing.Usage{InputTokens: 5, OutputTokens: 6, CacheReadTokens: 7, CacheWriteTokens: 8}, true},
		{"null usage", `{"usage":null}`, OpenAIBodyUsage, routing.Usage{}, false},
		{"no usage", `{"a":1}`, OpenAIBodyUsage, routing.Usage{}, false},
		{"truncated", `{"usage":{"prompt_tokens":1`, OpenAIBodyUsage, routing.Usage{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := tc.parse([]byte(tc.body))
			if ok != tc.ok || got != tc.want {
				t.Fatalf("got %+v %v, want %+v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	if _, ok, _ := OpenAIChunkUsage([]byte(`{"choices":[{"delta":{"content":"x"}}],"usage":null}`)); ok {
		t.Fatal("null usage chunk read as usage")
	}
	u, ok, only := OpenAIChunkUsage([]byte(`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}`))
	if !ok || !only || u.OutputTokens != 4 {
		t.Fatalf("usage chunk %+v %v %v", u, ok, only)
	}
}

func FuzzUsage(f *testing.F) {
	f.Add(`{"usage":{"prompt_tokens":1}}`)
	f.Add(`"usage":`)
	f.Add(`{"usage" : {"a":[}`)
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range []func([]byte) (routing.Usage, bool){OpenAIBodyUsage, AnthropicBodyUsage} {
			u, ok := p([]byte(s))
			if !ok && u != (routing.Usage{}) {
				t.Fatal("usage without ok")
			}
		}
		_, _, _ = OpenAIChunkUsage([]byte(s))
	})
}

// FuzzScanOpenAIUsage: the fast path reads every usage object it accepts as
// encoding/json does, and accepts only objects encoding/json reads.
func FuzzScanOpenAIUsage(f *testing.F) {
	for _, s := range []string{
		`{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}`,
		`{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":1}}`,
		`{"input_tokens":7,"output_tokens":3,"input_tokens_details":{"cached_tokens":2}}`, `{"prompt_tokens":null,"PROMPT_TOKENS":3}`,
		`{"prompt_tokens":1.5}`, `{"prompt_tokens":"4"}`, `{"prompt_tokens":1,"prompt_tokens":2}`, `{"prompt_tokens_details":null}`,
		`{"prompt_tokens_details":{"cached_tokens":1,"Cached_Tokens":2}}`, `{"pr\u006fmpt_tokens":3}`, `{"prompt_tokens":99999999999999999999}`, `{`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, obj string) {
		var got openAIUsage
		if !scanOpenAIUsage([]byte(obj), &got) {
			return
		}
		var want openAIUsage
		if err := json.Unmarshal([]byte(obj), &want); err != nil {
			t.Fatalf("scanOpenAIUsage accepted %q, encoding/json refuses it: %v", obj, err)
		}
		if got != want {
			t.Fatalf("%q: scanOpenAIUsage read %+v, encoding/json %+v", obj, got, want)
		}
	})
}
