//go:build !nosdk

// The SDK tests link both official SDKs, which makes a fuzzing binary too
// big to fuzz at speed: fuzz with -tags nosdk.

package translate

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"weir.dev/routing"
)

// serveStream answers every request with the stream b, over loopback.
func serveStream(t *testing.T, b []byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// streamCases yields every golden member transcript decoded, in a fixed
// order.
func streamCases(t *testing.T) (keys []string, evs map[string][]Event) {
	t.Helper()
	evs = map[string][]Event{}
	for key := range streamWants {
		dir, name, _ := strings.Cut(key, "/")
		e, err := decodeStream(streamWires[dir], readStreamTranscript(t, "testdata/stream/"+dir+"/"+name+".sse"))
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		keys = append(keys, key)
		evs[key] = e
	}
	sort.Strings(keys)
	return keys, evs
}

// TestStreamOpenAISDK (R-FMT-2): the official openai-go SDK reads every
// translated Chat Completions stream (usage asked for) and every Responses
// stream, and accumulates the member's text, tool calls, finish and usage.
func TestStreamOpenAISDK(t *testing.T) {
	keys, all := streamCases(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, key := range keys {
		w := streamWants[key]
		t.Run(key+"/chat", func(t *testing.T) {
			b, _ := encodeStream(t, routing.EndpointChatCompletions, true, all[key])
			client := openai.NewClient(option.WithBaseURL(serveStream(t, b)), option.WithAPIKey("k"), option.WithMaxRetries(0))
			stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: streamCallerModel,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				if !acc.AddChunk(stream.Current()) {
					t.Fatalf("accumulator refused chunk %s", stream.Current().RawJSON())
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if len(acc.Choices) != 1 {
				t.Fatalf("choices %d", len(acc.Choices))
			}
			m := acc.Choices[0].Message
			var tools []streamTool
			for _, tc := range m.ToolCalls {
				tools = append(tools, streamTool{tc.ID, tc.Function.Name, tc.Function.Arguments})
			}
			got := fmt.Sprint(m.Content, tools, acc.Choices[0].FinishReason, acc.Usage.PromptTokens, acc.Usage.CompletionTokens, acc.Usage.PromptTokensDetails.CachedTokens, acc.Model)
			u := w.usage
			want := fmt.Sprint(w.text, w.tools, streamChatFinishWant[w.finish], u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens, u.OutputTokens, u.CacheReadTokens, streamCallerModel)
			if got != want {
				t.Errorf("SDK read\n %s\nwant\n %s", got, want)
			}
		})
		t.Run(key+"/responses", func(t *testing.T) {
			b, _ := encodeStream(t, routing.EndpointResponses, false, all[key])
			client := openai.NewClient(option.WithBaseURL(serveStream(t, b)), option.WithAPIKey("k"), option.WithMaxRetries(0))
			stream := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: streamCallerModel,
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
			var final *responses.Response
			var deltas strings.Builder
			for stream.Next() {
				ev := stream.Current()
				if ev.AsAny() == nil {
					t.Fatalf("SDK does not know event %q", ev.Type)
				}
				switch ev.Type {
				case "response.output_text.delta":
					deltas.WriteString(ev.AsResponseOutputTextDelta().Delta)
				case "response.completed", "response.incomplete":
					r := ev.Response
					final = &r
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if final == nil {
				t.Fatal("no final response")
			}
			var tools []streamTool
			for _, it := range final.Output {
				if it.Type == "function_call" {
					fc := it.AsFunctionCall()
					tools = append(tools, streamTool{fc.CallID, fc.Name, fc.Arguments})
				}
			}
			status := string(final.Status)
			if final.IncompleteDetails.Reason != "" {
				status += ":" + final.IncompleteDetails.Reason
			}
			got := fmt.Sprint(final.OutputText(), deltas.String(), tools, status, final.Usage.InputTokens, final.Usage.OutputTokens, final.Usage.InputTokensDetails.CachedTokens)
			u := w.usage
			want := fmt.Sprint(w.text, w.text, w.tools, streamResponsesFinishWant[w.finish], u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens, u.OutputTokens, u.CacheReadTokens)
			if got != want {
				t.Errorf("SDK read\n %s\nwant\n %s", got, want)
			}
		})
	}
}

// TestStreamAnthropicSDK (R-FMT-2): the official anthropic-sdk-go reads
// every translated Messages stream and its Accumulate rebuilds the
// member's answer, usage with cache counts included.
func TestStreamAnthropicSDK(t *testing.T) {
	keys, all := streamCases(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, key := range keys {
		w := streamWants[key]
		t.Run(key, func(t *testing.T) {
			b, _ := encodeStream(t, routing.EndpointMessages, false, all[key])
			client := anthropic.NewClient(aoption.WithBaseURL(serveStream(t, b)), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
			stream := client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: streamCallerModel, MaxTokens: 64,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
			var msg anthropic.Message
			for stream.Next() {
				if err := msg.Accumulate(stream.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			var tools []streamTool
			for _, c := range msg.Content {
				switch c.Type {
				case "text":
					text.WriteString(c.Text)
				case "tool_use":
					tools = append(tools, streamTool{c.ID, c.Name, string(c.Input)})
				default:
					t.Errorf("block %q", c.Type)
				}
			}
			u := msg.Usage
			got := fmt.Sprint(text.String(), tools, msg.StopReason, msg.StopSequence, u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, msg.Model)
			wu := w.usage
			want := fmt.Sprint(w.text, w.tools, streamMessagesFinishWant[w.finish], w.seq, wu.InputTokens, wu.OutputTokens, wu.CacheReadTokens, wu.CacheWriteTokens, streamCallerModel)
			if got != want {
				t.Errorf("SDK read\n %s\nwant\n %s", got, want)
			}
		})
	}
}
