package gateway_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"weir.dev/edge/internal/fakeprovider"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// The official SDKs are the callers Weir must serve unchanged.

// accumulate reads a streamed Chat Completions answer whole with the SDK's
// accumulator, failing the test on a stream error; it returns the answer
// and the number of chunks.
func accumulate(t *testing.T, stream *ssestream.Stream[openai.ChatCompletionChunk]) (openai.ChatCompletionAccumulator, int) {
	t.Helper()
	var acc openai.ChatCompletionAccumulator
	n := 0
	for stream.Next() {
		acc.AddChunk(stream.Current())
		n++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return acc, n
}

func TestOpenAISDK(t *testing.T) {
	t.Parallel()
	h := newHarness(t, pool(t, "a", "b"))
	client := openai.NewClient(option.WithBaseURL(h.url+"/v1"), option.WithAPIKey(callerKey), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	params := openai.ChatCompletionNewParams{Model: "gpt-x", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}}

	t.Run("non-streaming, first member answers 429", func(t *testing.T) {
		h.fakes["a"].Enqueue(fakeprovider.RateLimited(2 * time.Second))
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Choices) == 0 || resp.Choices[0].Message.Content == "" || resp.Usage.CompletionTokens == 0 {
			t.Fatalf("answer %+v", resp)
		}
	})
	t.Run("streaming", func(t *testing.T) {
		acc, n := accumulate(t, client.Chat.Completions.NewStreaming(ctx, params))
		if n < 2 || acc.Choices[0].Message.Content == "" {
			t.Fatalf("%d chunks, content %q", n, acc.Choices[0].Message.Content)
		}
	})
	t.Run("embeddings with the SDK's default base64 encoding", func(t *testing.T) {
		h2 := newHarness(t, func() recordSpec {
			sp := pool(t, "e")
			sp.models = []*configv1.Model{{Name: "embed-x", Kind: configv1.ModelKind_MODEL_KIND_EMBEDDINGS}}
			return sp
		}())
		c2 := openai.NewClient(option.WithBaseURL(h2.url+"/v1"), option.WithAPIKey(callerKey), option.WithMaxRetries(0))
		resp, err := c2.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "embed-x", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hi")}})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Data) != 1 || len(resp.Data[0].Embedding) == 0 {
			t.Fatalf("embedding %+v", resp.Data)
		}
	})
}

func TestOpenAISDKRetriesPoolCooling(t *testing.T) {
	t.Parallel()
	// R-END-1 / R-END-2: weir_pool_cooling carries Retry-After and
	// x-should-retry: true, which the SDK's own retry honours; the second
	// try finds the member back.
	h := newHarness(t, pool(t, "a"))
	h.fakes["a"].Enqueue(fakeprovider.RateLimited(time.Second))
	client := openai.NewClient(option.WithBaseURL(h.url+"/v1"), option.WithAPIKey(callerKey), option.WithMaxRetries(2))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-x", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content == "" || h.fakes["a"].Total() != 2 {
		t.Fatalf("content %q, upstream calls %d", resp.Choices[0].Message.Content, h.fakes["a"].Total())
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Fatalf("SDK retried after %v, before the Retry-After", waited)
	}
	if recs := h.record(2); recs == nil {
		t.Fatal("no records")
	}
}

func TestOpenAISDKStopsOnSpent(t *testing.T) {
	t.Parallel()
	// R-END-2: x-should-retry: false ends the SDK's retries at once.
	h := newHarness(t, pool(t, "a"))
	h.fakes["a"].SetSticky(fakeprovider.QuotaExceeded())
	client := openai.NewClient(option.WithBaseURL(h.url+"/v1"), option.WithAPIKey(callerKey), option.WithMaxRetries(3))
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-x", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "insufficient_quota" {
		t.Fatalf("err %v (%s)", err, apiErr.RawJSON())
	}
	if h.fakes["a"].Total() != 1 {
		t.Fatalf("SDK retried a spent pool: %d upstream calls", h.fakes["a"].Total())
	}
}

func TestAnthropicSDK(t *testing.T) {
	t.Parallel()
	newRec := func(name string, fa, fb *fakeprovider.Server) recordSpec {
		return recordSpec{name: name, wire: configv1.WireFormat_WIRE_FORMAT_ANTHROPIC, models: []*configv1.Model{chatModel("claude-x")},
			members: []fakeMember{{name: "a", order: 1, fake: fa, edit: func(m *configv1.Member) { s := "acct-a"; m.Account = &s }},
				{name: "b", order: 2, fake: fb, edit: func(m *configv1.Member) { s := "acct-b"; m.Account = &s }}}}
	}
	h := newHarness(t, newRec("claude", newFake(t, fakeprovider.Options{}), newFake(t, fakeprovider.Options{})))
	client := anthropic.NewClient(aoption.WithBaseURL(h.url), aoption.WithAPIKey(callerKey), aoption.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	params := anthropic.MessageNewParams{Model: "claude-x", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}}

	t.Run("non-streaming, first member overloaded", func(t *testing.T) {
		h.fakes["a"].Enqueue(fakeprovider.Status(529))
		msg, err := client.Messages.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if len(msg.Content) == 0 || msg.Content[0].Text == "" || msg.Usage.OutputTokens == 0 {
			t.Fatalf("message %+v", msg)
		}
	})
	t.Run("streaming", func(t *testing.T) {
		stream := client.Messages.NewStreaming(ctx, params)
		var msg anthropic.Message
		for stream.Next() {
			if err := msg.Accumulate(stream.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(msg.Content) == 0 || msg.Content[0].Text == "" {
			t.Fatalf("streamed message %+v", msg)
		}
	})
	t.Run("a 429 pool answer is an SDK rate-limit error", func(t *testing.T) {
		h.fakes["a"].Enqueue(fakeprovider.RateLimited(5 * time.Second))
		h.fakes["b"].Enqueue(fakeprovider.RateLimited(5 * time.Second))
		_, err := client.Messages.New(ctx, params)
		if err == nil || !strings.Contains(err.Error(), "rate_limit_error") || !strings.Contains(err.Error(), "weir_pool_cooling") {
			t.Fatalf("err %v", err)
		}
	})
}
