package translate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// serveAnswer answers every request with the JSON body b, over loopback.
func serveAnswer(t *testing.T, b []byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// ansTool is a tool call as the SDKs show it.
type ansTool struct{ ID, Name, Args string }

// ansWant is what a caller's SDK should read of an answer.
func ansWant(a *Answer) (text string, tools []ansTool) {
	var b strings.Builder
	for i, p := range a.Parts {
		switch p.Kind {
		case PartText:
			b.WriteString(p.Text)
		case PartToolCall:
			tools = append(tools, ansTool{callID(p, i), p.ToolName, argsString(p)})
		}
	}
	return b.String(), tools
}

// TestAnswerSDKs_RFMT2: the official openai-go (Chat Completions and
// Responses) and anthropic-sdk-go clients read every translated golden
// answer, served over loopback, as the member's text, tool calls, finish
// and usage.
func TestAnswerSDKs_RFMT2(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ins, _ := filepath.Glob(filepath.Join("testdata", "ans", "in", "*", "*.json"))
	if len(ins) == 0 {
		t.Fatal("no inputs")
	}
	chatFinish := map[Finish]string{FinishStop: "stop", FinishStopSequence: "stop", FinishUnknown: "stop", FinishLength: "length",
		FinishToolCalls: "tool_calls", FinishContentFilter: "content_filter"}
	respStatus := map[Finish]string{FinishStop: "completed", FinishStopSequence: "completed", FinishUnknown: "completed",
		FinishToolCalls: "completed", FinishLength: "incomplete:max_output_tokens", FinishContentFilter: "incomplete:content_filter"}
	msgStop := map[Finish]string{FinishStop: "end_turn", FinishUnknown: "end_turn", FinishStopSequence: "stop_sequence",
		FinishLength: "max_tokens", FinishToolCalls: "tool_use", FinishContentFilter: "refusal"}
	for _, in := range ins {
		wname := filepath.Base(filepath.Dir(in))
		body, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		a, err := DecodeAnswer(ansWires[wname], body)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		key := wname + "/" + strings.TrimSuffix(filepath.Base(in), ".json")
		text, tools := ansWant(a)
		u := a.Usage
		prompt := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens

		t.Run(key+"/chat", func(t *testing.T) {
			b, err := EncodeAnswer(routing.EndpointChatCompletions, a, "caller-model")
			if err != nil {
				t.Fatal(err)
			}
			client := openai.NewClient(option.WithBaseURL(serveAnswer(t, b)), option.WithAPIKey("k"), option.WithMaxRetries(0))
			r, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "caller-model",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
			if err != nil {
				t.Fatal(err)
			}
			m := r.Choices[0].Message
			var got []ansTool
			for _, tc := range m.ToolCalls {
				got = append(got, ansTool{tc.ID, tc.Function.Name, tc.Function.Arguments})
			}
			g := fmt.Sprint(m.Content, got, r.Choices[0].FinishReason, r.Usage.PromptTokens, r.Usage.CompletionTokens,
				r.Usage.TotalTokens, r.Usage.PromptTokensDetails.CachedTokens, r.Model, strings.HasPrefix(r.ID, "chatcmpl-"))
			w := fmt.Sprint(text, tools, chatFinish[a.Finish], prompt, u.OutputTokens, prompt+u.OutputTokens, u.CacheReadTokens, "caller-model", true)
			if g != w {
				t.Errorf("SDK read\n %s\nwant\n %s", g, w)
			}
		})
		t.Run(key+"/responses", func(t *testing.T) {
			b, err := EncodeAnswer(routing.EndpointResponses, a, "caller-model")
			if err != nil {
				t.Fatal(err)
			}
			client := openai.NewClient(option.WithBaseURL(serveAnswer(t, b)), option.WithAPIKey("k"), option.WithMaxRetries(0))
			r, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "caller-model",
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
			if err != nil {
				t.Fatal(err)
			}
			var got []ansTool
			for _, it := range r.Output {
				if it.Type == "function_call" {
					fc := it.AsFunctionCall()
					got = append(got, ansTool{fc.CallID, fc.Name, fc.Arguments})
				}
			}
			status := string(r.Status)
			if r.IncompleteDetails.Reason != "" {
				status += ":" + r.IncompleteDetails.Reason
			}
			g := fmt.Sprint(r.OutputText(), got, status, r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.TotalTokens,
				r.Usage.InputTokensDetails.CachedTokens, r.Model, strings.HasPrefix(r.ID, "resp_"))
			w := fmt.Sprint(text, tools, respStatus[a.Finish], prompt, u.OutputTokens, prompt+u.OutputTokens, u.CacheReadTokens, "caller-model", true)
			if g != w {
				t.Errorf("SDK read\n %s\nwant\n %s", g, w)
			}
		})
		t.Run(key+"/messages", func(t *testing.T) {
			b, err := EncodeAnswer(routing.EndpointMessages, a, "caller-model")
			if err != nil {
				t.Fatal(err)
			}
			client := anthropic.NewClient(aoption.WithBaseURL(serveAnswer(t, b)), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
			m, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "caller-model", MaxTokens: 64,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
			if err != nil {
				t.Fatal(err)
			}
			var sb strings.Builder
			var got []ansTool
			for _, c := range m.Content {
				switch c.Type {
				case "text":
					sb.WriteString(c.Text)
				case "tool_use":
					got = append(got, ansTool{c.ID, c.Name, string(c.Input)})
				default:
					t.Errorf("block %q", c.Type)
				}
			}
			mu := m.Usage
			g := fmt.Sprint(sb.String(), got, m.StopReason, m.StopSequence, mu.InputTokens, mu.OutputTokens,
				mu.CacheReadInputTokens, mu.CacheCreationInputTokens, m.Model, strings.HasPrefix(m.ID, "msg_"))
			w := fmt.Sprint(text, tools, msgStop[a.Finish], a.StopSequence, u.InputTokens, u.OutputTokens,
				u.CacheReadTokens, u.CacheWriteTokens, "caller-model", true)
			if g != w {
				t.Errorf("SDK read\n %s\nwant\n %s", g, w)
			}
		})
	}
}

// TestErrorBodySDKs_RFMT5: the official SDKs read a rewritten error as an
// API error of the status, with the member's message and the type the
// caller's format gives it.
func TestErrorBodySDKs_RFMT5(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gemini := []byte(`[{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}]`)
	serve := func(status int, b []byte) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write(b)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}

	client := openai.NewClient(option.WithBaseURL(serve(429, ErrorBody(routing.WireGemini, routing.EndpointChatCompletions, 429, gemini))),
		option.WithAPIKey("k"), option.WithMaxRetries(0))
	_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 429 || oe.Message != "Resource has been exhausted (e.g. check quota)." ||
		oe.Type != "rate_limit_error" || oe.Code != "rate_limit_exceeded" {
		t.Errorf("openai SDK: %#v", err)
	}

	ac := anthropic.NewClient(aoption.WithBaseURL(serve(429, ErrorBody(routing.WireGemini, routing.EndpointMessages, 429, gemini))),
		aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
	_, err = ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "m", MaxTokens: 8,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 429 ||
		!strings.Contains(ae.RawJSON(), `"type":"rate_limit_error","message":"Resource has been exhausted (e.g. check quota)."`) {
		t.Errorf("anthropic SDK: %v", err)
	}
}
