package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"weir.dev/edge/internal/fakeprovider"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// Any caller, any member (ROUTING.md §11): the official SDKs against
// members of another format, over real HTTP against fake providers.

// anthropicRecord is an anthropic record "claude" serving claude-x over the
// given members (order 1, 2, … as given).
func anthropicRecord(t *testing.T, names ...string) recordSpec {
	sp := recordSpec{name: "claude", wire: configv1.WireFormat_WIRE_FORMAT_ANTHROPIC, models: []*configv1.Model{chatModel("claude-x")}}
	for i, n := range names {
		acct := "acct-" + n
		sp.members = append(sp.members, fakeMember{name: n, order: uint32(i + 1), fake: newFake(t, fakeprovider.Options{}),
			edit: func(m *configv1.Member) { m.Account = &acct }})
	}
	return sp
}

// asOpenAIMember turns member i of sp into an openai-format member of its
// own (R-FMT-4): its own wire format, base URL and auth.
func asOpenAIMember(sp recordSpec, i int) recordSpec {
	prev := sp.members[i].edit
	sp.members[i].edit = func(m *configv1.Member) {
		if prev != nil {
			prev(m)
		}
		m.WireFormat = configv1.WireFormat_WIRE_FORMAT_OPENAI
		m.BaseUrl += "/v1"
		m.Auth = &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "authorization"}
	}
	return sp
}

func TestTranslatedOpenAISDKToAnthropicMember(t *testing.T) {
	t.Parallel()
	h := newHarness(t, anthropicRecord(t, "a"))
	client := openai.NewClient(option.WithBaseURL(h.url+"/v1"), option.WithAPIKey(callerKey), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	params := openai.ChatCompletionNewParams{Model: "claude-x", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("be brief"), openai.UserMessage("hello")}}

	t.Run("R-FMT-2 whole answer", func(t *testing.T) {
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "" || resp.Usage.CompletionTokens == 0 || resp.Choices[0].FinishReason != "stop" {
			t.Fatalf("answer %+v", resp)
		}
		// Anthropic gives no time; the caller gets the call's.
		if d := time.Since(time.Unix(resp.Created, 0)); d < -2*time.Second || d > time.Minute {
			t.Errorf("created %d, %s from now", resp.Created, d)
		}
		last, _ := h.fakes["a"].LastRequest()
		var sent struct {
			System    any   `json:"system"`
			MaxTokens int64 `json:"max_tokens"`
			Messages  []any `json:"messages"`
		}
		if err := json.Unmarshal(last.Body, &sent); err != nil || last.Flavor != fakeprovider.FlavorAnthropic {
			t.Fatalf("upstream got %s %s: %v", last.Flavor, last.Body, err)
		}
		// R-FMT-2: the system prompt moves to "system"; the output cap,
		// required by Anthropic, is the record's default.
		if sent.System == nil || sent.MaxTokens != 4096 || len(sent.Messages) != 1 {
			t.Fatalf("upstream body %s", last.Body)
		}
		rec := h.record(1)
		if rec.MemberFormat != "anthropic" || !rec.Translated {
			t.Fatalf("R-FMT-6 record: format %q translated %v", rec.MemberFormat, rec.Translated)
		}
	})
	t.Run("R-FMT-2 streamed with usage", func(t *testing.T) {
		p := params
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		acc, n := accumulate(t, client.Chat.Completions.NewStreaming(ctx, p))
		if n < 3 || acc.Choices[0].Message.Content == "" || acc.Usage.CompletionTokens == 0 || acc.Choices[0].FinishReason != "stop" {
			t.Fatalf("%d chunks, %+v", n, acc.ChatCompletion)
		}
		if d := time.Since(time.Unix(acc.Created, 0)); d < -2*time.Second || d > time.Minute {
			t.Errorf("streamed created %d, %s from now", acc.Created, d)
		}
	})
}

func TestTranslatedAnthropicSDKToOpenAIMember(t *testing.T) {
	t.Parallel()
	sp := pool(t, "a")
	sp.models = []*configv1.Model{chatModel("gpt-x")}
	h := newHarness(t, sp)
	client := anthropic.NewClient(aoption.WithBaseURL(h.url), aoption.WithAPIKey(callerKey), aoption.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	params := anthropic.MessageNewParams{Model: "gpt-x", MaxTokens: 64, System: []anthropic.TextBlockParam{{Text: "be brief"}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}}

	t.Run("R-FMT-2 whole answer", func(t *testing.T) {
		msg, err := client.Messages.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if len(msg.Content) == 0 || msg.Content[0].Text == "" || msg.Usage.OutputTokens == 0 || msg.StopReason != "end_turn" {
			t.Fatalf("message %+v", msg)
		}
		last, _ := h.fakes["a"].LastRequest()
		if last.Flavor != fakeprovider.FlavorOpenAI || !strings.Contains(string(last.Body), `"role":"system"`) {
			t.Fatalf("upstream got %s %s", last.Flavor, last.Body)
		}
	})
	t.Run("R-FMT-2 streamed", func(t *testing.T) {
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
		if len(msg.Content) == 0 || msg.Content[0].Text == "" || msg.Usage.OutputTokens == 0 {
			t.Fatalf("streamed message %+v", msg)
		}
	})
	t.Run("R-FMT-5 a passed-on error is in the caller's shape", func(t *testing.T) {
		h.fakes["a"].Enqueue(fakeprovider.Status(400))
		_, err := client.Messages.New(ctx, params)
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.RawJSON(), `"invalid_request_error"`) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestTranslatedMixedPool(t *testing.T) {
	t.Parallel()
	// R-FMT-4: Anthropic direct in order 1, an openai-format member in
	// order 2; the second attempt is built again from the caller's body.
	h := newHarness(t, asOpenAIMember(anthropicRecord(t, "direct", "other"), 1))
	h.fakes["direct"].Enqueue(fakeprovider.RateLimited(5 * time.Second))
	res := h.post("/v1/messages", `{"model":"claude-x","max_tokens":32,"messages":[{"role":"user","content":"hi"}]}`)
	if res.status != 200 || res.header.Get("X-Weir-Member") != "other" || res.header.Get("X-Weir-Attempts") != "2" {
		t.Fatalf("status %d member %q attempts %q: %s", res.status, res.header.Get("X-Weir-Member"), res.header.Get("X-Weir-Attempts"), res.body)
	}
	var msg struct {
		Type    string `json:"type"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(res.body, &msg); err != nil || msg.Type != "message" || len(msg.Content) == 0 {
		t.Fatalf("answer %s", res.body)
	}
	last, _ := h.fakes["other"].LastRequest()
	if last.Flavor != fakeprovider.FlavorOpenAI {
		t.Fatalf("second member got %s %s", last.Flavor, last.Body)
	}
	rec := h.record(1)
	if rec.MemberFormat != "openai" || !rec.Translated || len(rec.Attempts) != 2 {
		t.Fatalf("record %v", rec.CallRecord)
	}
	t.Run("R-FMT-1 same format, same bytes", func(t *testing.T) {
		// A fresh pool: in h, "direct" still cools after its 429.
		h := newHarness(t, asOpenAIMember(anthropicRecord(t, "direct", "other"), 1))
		body := `{"model":"claude-x","max_tokens":32,"messages":[{"role":"user","content":"hi"}],"metadata":{"user_id":"u1"},"temperature":0.5}`
		res := h.post("/v1/messages", body)
		last, _ := h.fakes["direct"].LastRequest()
		if res.status != 200 || res.header.Get("X-Weir-Member") != "direct" || string(last.Body) != body {
			t.Fatalf("status %d member %q upstream body %s", res.status, res.header.Get("X-Weir-Member"), last.Body)
		}
	})
}

func TestTranslatedUnsupportedFeature(t *testing.T) {
	t.Parallel()
	// R-FMT-3: n > 1 cannot be said to an Anthropic member.
	h := newHarness(t, anthropicRecord(t, "a"))
	res := h.post("/v1/chat/completions", `{"model":"claude-x","n":2,"messages":[{"role":"user","content":"hi"}]}`)
	if res.status != 400 || res.header.Get("X-Weir-Error") != "weir_unsupported_feature" || !strings.Contains(string(res.body), `\"n\"`) {
		t.Fatalf("status %d: %s", res.status, res.body)
	}
	if h.fakes["a"].Total() != 0 {
		t.Fatal("the member was called")
	}
	// A hint is dropped, not refused.
	res = h.post("/v1/chat/completions", `{"model":"claude-x","prompt_cache_key":"j1","service_tier":"auto","messages":[{"role":"user","content":"hi"}]}`)
	if res.status != 200 {
		t.Fatalf("status %d: %s", res.status, res.body)
	}
	last, _ := h.fakes["a"].LastRequest()
	if strings.Contains(string(last.Body), "prompt_cache_key") || strings.Contains(string(last.Body), "service_tier") {
		t.Fatalf("hints reached the member: %s", last.Body)
	}

	t.Run("a member that can say it takes the call", func(t *testing.T) {
		h := newHarness(t, asOpenAIMember(anthropicRecord(t, "a", "b"), 1))
		res := h.post("/v1/chat/completions", `{"model":"claude-x","n":2,"messages":[{"role":"user","content":"hi"}]}`)
		if res.status != 200 || res.header.Get("X-Weir-Member") != "b" || res.header.Get("X-Weir-Attempts") != "1" {
			t.Fatalf("status %d member %q: %s", res.status, res.header.Get("X-Weir-Member"), res.body)
		}
	})
}

// toolUpstream is an Anthropic-format member that answers the first turn
// with a tool call and the turn carrying the tool's result with text,
// whole or streamed. It records the bodies it got.
func toolUpstream(t *testing.T, got *[]string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Stream   bool `json:"stream"`
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		raw, _ := io.ReadAll(r.Body)
		*got = append(*got, string(raw))
		_ = json.Unmarshal(raw, &body)
		withResult := strings.Contains(string(raw), `"tool_result"`)
		if !body.Stream {
			w.Header().Set("Content-Type", "application/json")
			if withResult {
				fmt.Fprint(w, `{"id":"msg_2","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"It is sunny."}],"stop_reason":"end_turn","usage":{"input_tokens":30,"output_tokens":4}}`)
				return
			}
			fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"toolu_01","name":"weather","input":{"city":"Oslo"}}],"stop_reason":"tool_use","usage":{"input_tokens":20,"output_tokens":9}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"usage":{"input_tokens":20,"output_tokens":1}}}`,
			`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01","name":"weather","input":{}}}`,
			`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}`,
			`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"Oslo\"}"}}`,
			`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}`,
			`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}}`,
			`event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
		} {
			fmt.Fprint(w, ev+"\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestTranslatedToolRoundTrip(t *testing.T) {
	t.Parallel()
	// R-FMT-2: tool definitions, the assistant's tool call and the tool's
	// result, matched by id, through the OpenAI SDK to an Anthropic member.
	var got []string
	up := toolUpstream(t, &got)
	sp := recordSpec{name: "claude", wire: configv1.WireFormat_WIRE_FORMAT_ANTHROPIC, models: []*configv1.Model{chatModel("claude-x")},
		members: []fakeMember{{name: "a", url: up.URL}}}
	h := newHarness(t, sp)
	client := openai.NewClient(option.WithBaseURL(h.url+"/v1"), option.WithAPIKey(callerKey), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
		Name: "weather", Description: openai.String("weather of a city"),
		Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}})}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather in Oslo?")}

	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "claude-x", Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	call := resp.Choices[0].Message.ToolCalls
	if resp.Choices[0].FinishReason != "tool_calls" || len(call) != 1 || call[0].ID != "toolu_01" || call[0].Function.Name != "weather" ||
		!strings.Contains(call[0].Function.Arguments, "Oslo") {
		t.Fatalf("answer %+v", resp.Choices[0])
	}
	if !strings.Contains(got[0], `"input_schema"`) || !strings.Contains(got[0], `"name":"weather"`) {
		t.Fatalf("tools not sent: %s", got[0])
	}

	t.Run("streamed tool call", func(t *testing.T) {
		acc, _ := accumulate(t, client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "claude-x", Messages: msgs, Tools: tools}))
		tc := acc.Choices[0].Message.ToolCalls
		if acc.Choices[0].FinishReason != "tool_calls" || len(tc) != 1 || tc[0].ID != "toolu_01" || tc[0].Function.Arguments != `{"city":"Oslo"}` {
			t.Fatalf("accumulated %+v", acc.Choices[0])
		}
	})

	msgs = append(msgs, resp.Choices[0].Message.ToParam(), openai.ToolMessage(`{"sky":"sunny"}`, "toolu_01"))
	resp, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "claude-x", Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "It is sunny." || resp.Choices[0].FinishReason != "stop" {
		t.Fatalf("answer %+v", resp.Choices[0])
	}
	last := got[len(got)-1]
	if !strings.Contains(last, `"tool_use_id":"toolu_01"`) || !strings.Contains(last, `"type":"tool_use"`) {
		t.Fatalf("the tool round trip was not carried: %s", last)
	}
}
