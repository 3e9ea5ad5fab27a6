package fakeprovider

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/google/go-cmp/cmp"
)

func TestNonStreaming(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{Tokens: 6, CachedTokens: 4})
	deployment := "/openai/deployments/my-gpt4o/"
	tests := []struct {
		name  string
		req   reqSpec
		check map[string]any // JSON paths and the values they must hold
	}{{
		name: "openai chat",
		req:  reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: chatBody("gpt-4o", "")},
		check: map[string]any{
			"object": "chat.completion", "model": "gpt-4o",
			"choices.0.message.role": "assistant", "choices.0.message.content": "Hello from the Weir fake provider.",
			"choices.0.finish_reason": "stop", "usage.completion_tokens": 6.0, "usage.prompt_tokens_details.cached_tokens": 4.0,
		},
	}, {
		name:  "openai chat capped by max_completion_tokens",
		req:   reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: chatBody("gpt-4o", `"max_completion_tokens":2`)},
		check: map[string]any{"choices.0.message.content": "Hello from", "choices.0.finish_reason": "length", "usage.completion_tokens": 2.0},
	}, {
		name:  "openai embeddings",
		req:   reqSpec{path: "/v1/embeddings", header: openAIHeaders(), body: `{"model":"text-embedding-3-small","input":["a","b"],"dimensions":4}`},
		check: map[string]any{"object": "list", "model": "text-embedding-3-small", "data.1.index": 1.0, "data.1.object": "embedding"},
	}, {
		name: "openai responses",
		req:  reqSpec{path: "/v1/responses", header: openAIHeaders(), body: `{"model":"gpt-4o","input":"Say hello."}`},
		check: map[string]any{
			"object": "response", "status": "completed", "model": "gpt-4o",
			"output.0.content.0.type": "output_text", "output.0.content.0.text": "Hello from the Weir fake provider.",
			"usage.output_tokens": 6.0, "usage.input_tokens_details.cached_tokens": 4.0,
		},
	}, {
		name:  "openai models",
		req:   reqSpec{method: http.MethodGet, path: "/v1/models", header: openAIHeaders()},
		check: map[string]any{"object": "list", "data.0.object": "model"},
	}, {
		name:  "azure deployment chat echoes the deployment",
		req:   reqSpec{path: deployment + "chat/completions?api-version=2024-10-21", header: azureHeaders(), body: `{"messages":[{"role":"user","content":"hi"}]}`},
		check: map[string]any{"model": "my-gpt4o", "object": "chat.completion", "usage.completion_tokens": 6.0},
	}, {
		name:  "azure deployment embeddings",
		req:   reqSpec{path: deployment + "embeddings?api-version=2024-10-21", header: azureHeaders(), body: `{"input":"hi"}`},
		check: map[string]any{"model": "my-gpt4o", "data.0.object": "embedding"},
	}, {
		name:  "azure v1 chat",
		req:   reqSpec{path: "/openai/v1/chat/completions", header: map[string]string{"Authorization": "Bearer entra-token"}, body: chatBody("my-gpt4o", "")},
		check: map[string]any{"model": "my-gpt4o", "object": "chat.completion"},
	}, {
		name: "anthropic messages",
		req:  reqSpec{path: "/v1/messages", header: anthropicHeaders(), body: messagesBody("claude-sonnet-4-5", "")},
		check: map[string]any{
			"type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content.0.type": "text",
			"content.0.text": "Hello from the Weir fake provider.", "stop_reason": "end_turn",
			"usage.output_tokens": 6.0, "usage.cache_read_input_tokens": 4.0, "usage.cache_creation_input_tokens": 0.0,
		},
	}, {
		name:  "anthropic models",
		req:   reqSpec{method: http.MethodGet, path: "/v1/models", header: anthropicHeaders()},
		check: map[string]any{"data.0.type": "model", "has_more": false},
	}, {
		name: "bedrock invoke",
		req:  reqSpec{path: "/model/" + url.PathEscape("anthropic.claude-3-5-sonnet-20240620-v1:0") + "/invoke", header: bedrockHeaders(), body: bedrockBody},
		check: map[string]any{
			"type": "message", "model": "anthropic.claude-3-5-sonnet-20240620-v1:0", "content.0.text": "Hello from the Weir fake provider.",
			"stop_reason": "end_turn", "usage.output_tokens": 6.0,
		},
	}, {
		name:  "bedrock inference profile ARN",
		req:   reqSpec{path: "/model/" + url.PathEscape("arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-v1:0") + "/invoke", header: bedrockHeaders(), body: bedrockBody},
		check: map[string]any{"model": "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-v1:0"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := do(t, base, tt.req)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, body %s", resp.StatusCode, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			v := decode(t, body)
			for p, want := range tt.check {
				if diff := cmp.Diff(want, path(v, p)); diff != "" {
					t.Errorf("%s (-want +got):\n%s", p, diff)
				}
			}
		})
	}
}

func TestUsageSplitsCachedTokens(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{CachedTokens: 5, CacheCreationTokens: 3})
	body := messagesBody("claude", "")
	_, b := do(t, base, reqSpec{path: "/v1/messages", header: anthropicHeaders(), body: body})
	v := decode(t, b)
	prompt := estimateInput([]byte(body))
	got := []any{path(v, "usage.input_tokens"), path(v, "usage.cache_read_input_tokens"), path(v, "usage.cache_creation_input_tokens")}
	want := []any{float64(prompt - 8), 5.0, 3.0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Anthropic usage (-want +got):\n%s", diff)
	}
	body = chatBody("gpt-4o", "")
	_, b = do(t, base, reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: body})
	v = decode(t, b)
	got = []any{path(v, "usage.prompt_tokens"), path(v, "usage.prompt_tokens_details.cached_tokens")}
	want = []any{float64(estimateInput([]byte(body))), 5.0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OpenAI usage (-want +got):\n%s", diff)
	}
}

func TestEmbeddingsEncodings(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{})
	get := func(format string) []float32 {
		t.Helper()
		body := `{"model":"text-embedding-3-small","input":"same text","dimensions":6`
		if format != "" {
			body += `,"encoding_format":"` + format + `"`
		}
		_, b := do(t, base, reqSpec{path: "/v1/embeddings", header: openAIHeaders(), body: body + "}"})
		var out struct {
			Data []struct {
				Embedding json.RawMessage `json:"embedding"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &out); err != nil || len(out.Data) != 1 {
			t.Fatalf("bad answer %s: %v", b, err)
		}
		if format != "base64" {
			var v []float32
			if err := json.Unmarshal(out.Data[0].Embedding, &v); err != nil {
				t.Fatalf("float embedding: %v", err)
			}
			return v
		}
		var s string
		if err := json.Unmarshal(out.Data[0].Embedding, &s); err != nil {
			t.Fatalf("base64 embedding is not a string: %s", out.Data[0].Embedding)
		}
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(raw)%4 != 0 {
			t.Fatalf("base64 embedding: %v (%d bytes)", err, len(raw))
		}
		v := make([]float32, len(raw)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		return v
	}
	floats, b64, dflt := get("float"), get("base64"), get("")
	if len(floats) != 6 {
		t.Fatalf("got %d dimensions, want 6", len(floats))
	}
	if diff := cmp.Diff(floats, b64); diff != "" {
		t.Errorf("base64 differs from float (-float +base64):\n%s", diff)
	}
	if diff := cmp.Diff(floats, dflt); diff != "" {
		t.Errorf("default differs from float:\n%s", diff)
	}
}

func TestOpenAIChatStream(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{Tokens: 3})
	for _, includeUsage := range []bool{false, true} {
		extra := `"stream":true`
		if includeUsage {
			extra += `,"stream_options":{"include_usage":true}`
		}
		resp, body := do(t, base, reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: chatBody("gpt-4o", extra)})
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("Content-Type %q", ct)
		}
		events, err := readSSE(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if last := events[len(events)-1]; last.data != "[DONE]" {
			t.Fatalf("last event %q, want [DONE]", last.data)
		}
		var text strings.Builder
		var usage map[string]any
		finish := ""
		for _, e := range events[:len(events)-1] {
			v := decode(t, []byte(e.data))
			if v["object"] != "chat.completion.chunk" {
				t.Errorf("object %v", v["object"])
			}
			if u, ok := v["usage"].(map[string]any); ok {
				usage = u
			} else if _, present := v["usage"]; present != includeUsage {
				t.Errorf("usage present %v in %s, include_usage %v", present, e.data, includeUsage)
			}
			if c, ok := path(v, "choices.0.delta.content").(string); ok {
				text.WriteString(c)
			}
			if f, ok := path(v, "choices.0.finish_reason").(string); ok {
				finish = f
			}
		}
		if text.String() != "Hello from the" || finish != "stop" {
			t.Errorf("text %q finish %q", text.String(), finish)
		}
		if includeUsage != (usage != nil) {
			t.Fatalf("include_usage %v but usage chunk %v", includeUsage, usage)
		}
		if usage != nil && usage["completion_tokens"] != 3.0 {
			t.Errorf("usage %v", usage)
		}
	}
}

func TestResponsesStream(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{Tokens: 2, CachedTokens: 1})
	_, body := do(t, base, reqSpec{path: "/v1/responses", header: openAIHeaders(), body: `{"model":"gpt-4o","input":"hi","stream":true}`})
	events, err := readSSE(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i, e := range events {
		names = append(names, e.event)
		v := decode(t, []byte(e.data))
		if v["type"] != e.event || v["sequence_number"] != float64(i) {
			t.Errorf("event %d %q: type %v sequence %v", i, e.event, v["type"], v["sequence_number"])
		}
	}
	want := []string{
		"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.done",
		"response.content_part.done", "response.output_item.done", "response.completed",
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	done := decode(t, []byte(events[len(events)-1].data))
	got := []any{path(done, "response.status"), path(done, "response.usage.output_tokens"), path(done, "response.usage.input_tokens_details.cached_tokens"), path(done, "response.output.0.content.0.text")}
	if diff := cmp.Diff([]any{"completed", 2.0, 1.0, "Hello from"}, got); diff != "" {
		t.Errorf("response.completed (-want +got):\n%s", diff)
	}
}

// anthropicEventNames are the events of a two-token Anthropic stream.
func anthropicEventNames(ping bool) []string {
	names := []string{"message_start", "content_block_start"}
	if ping {
		names = append(names, "ping")
	}
	return append(names, "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop")
}

// checkAnthropicEvents checks the sequence and usage of an Anthropic stream.
func checkAnthropicEvents(t *testing.T, names []string, datas [][]byte, ping bool, cacheRead float64) {
	t.Helper()
	if diff := cmp.Diff(anthropicEventNames(ping), names); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	var text strings.Builder
	for i, d := range datas {
		v := decode(t, d)
		if v["type"] != names[i] {
			t.Errorf("event %q has type %v", names[i], v["type"])
		}
		switch names[i] {
		case "message_start":
			if path(v, "message.usage.cache_read_input_tokens") != cacheRead || path(v, "message.usage.input_tokens") == nil || path(v, "message.usage.cache_creation_input_tokens") == nil {
				t.Errorf("message_start usage %v", path(v, "message.usage"))
			}
		case "content_block_delta":
			if path(v, "delta.type") != "text_delta" {
				t.Errorf("delta %v", v["delta"])
			}
			text.WriteString(path(v, "delta.text").(string))
		case "message_delta":
			if path(v, "usage.output_tokens") != 2.0 || path(v, "delta.stop_reason") != "end_turn" {
				t.Errorf("message_delta %s", d)
			}
		}
	}
	if text.String() != "Hello from" {
		t.Errorf("text %q", text.String())
	}
}

func TestAnthropicStream(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{Tokens: 2, CachedTokens: 3})
	resp, body := do(t, base, reqSpec{path: "/v1/messages", header: anthropicHeaders(), body: messagesBody("claude-sonnet-4-5", `"stream":true`)})
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q", ct)
	}
	events, err := readSSE(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var datas [][]byte
	for _, e := range events {
		names, datas = append(names, e.event), append(datas, []byte(e.data))
	}
	checkAnthropicEvents(t, names, datas, true, 3)
}

// decodeBedrockStream reads event-stream frames until EOF and returns the
// Anthropic events they carry, checking each frame's headers.
func decodeBedrockStream(t *testing.T, r io.Reader) (names []string, datas [][]byte, err error) {
	t.Helper()
	dec := eventstream.NewDecoder()
	for {
		msg, err := dec.Decode(r, nil)
		if err != nil {
			if err == io.EOF {
				return names, datas, nil
			}
			return names, datas, err
		}
		for name, want := range map[string]string{":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"} {
			if h := msg.Headers.Get(name); h == nil || h.String() != want {
				t.Errorf("frame header %s = %v, want %q", name, h, want)
			}
		}
		var chunk struct {
			Bytes string `json:"bytes"`
		}
		if err := json.Unmarshal(msg.Payload, &chunk); err != nil {
			t.Fatalf("payload %s: %v", msg.Payload, err)
		}
		ev, err := base64.StdEncoding.DecodeString(chunk.Bytes)
		if err != nil {
			t.Fatalf("bytes: %v", err)
		}
		var typ struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(ev, &typ); err != nil {
			t.Fatalf("event %s: %v", ev, err)
		}
		names, datas = append(names, typ.Type), append(datas, ev)
	}
}

func TestBedrockStream(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{Tokens: 2})
	model := url.PathEscape("anthropic.claude-3-5-sonnet-20240620-v1:0")
	resp, body := do(t, base, reqSpec{path: "/model/" + model + "/invoke-with-response-stream", header: bedrockHeaders(), body: bedrockBody})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/vnd.amazon.eventstream" {
		t.Fatalf("Content-Type %q", ct)
	}
	names, datas, err := decodeBedrockStream(t, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	checkAnthropicEvents(t, names, datas, false, 0)
	stop := decode(t, datas[len(datas)-1])
	if path(stop, "amazon-bedrock-invocationMetrics.outputTokenCount") != 2.0 {
		t.Errorf("message_stop %s", datas[len(datas)-1])
	}
}

func TestStreamLatency(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{Tokens: 4, Latency: 60 * time.Millisecond, TokenDelay: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t0 := time.Now()
	resp, err := send(t, ctx, base, reqSpec{path: "/v1/messages", header: anthropicHeaders(), body: messagesBody("claude", `"stream":true`)})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ttfb := time.Since(t0)
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	total := time.Since(t0)
	if ttfb < 60*time.Millisecond || total < 140*time.Millisecond {
		t.Errorf("time to headers %v (want ≥ 60ms), whole stream %v (want ≥ 140ms)", ttfb, total)
	}
}
