package gateway_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"weir.dev/edge/internal/fakeprovider"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// geminiRecord is a gemini-format record "gem" serving chat model
// gemini-x and embeddings model embed-x, with one Gemini API member per
// name (x-goog-api-key), in orders 1, 2, ….
func geminiRecord(t *testing.T, names ...string) recordSpec {
	sp := recordSpec{name: "gem", wire: configv1.WireFormat_WIRE_FORMAT_GEMINI,
		models: []*configv1.Model{chatModel("gemini-x"), {Name: "embed-x", Kind: configv1.ModelKind_MODEL_KIND_EMBEDDINGS}},
		auth:   &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "x-goog-api-key"}}
	for i, n := range names {
		acct := "acct-" + n
		f := newFake(t, fakeprovider.Options{Flavor: fakeprovider.FlavorGemini, APIKey: providerKey})
		sp.members = append(sp.members, fakeMember{name: n, order: uint32(i + 1), fake: f,
			edit: func(m *configv1.Member) {
				m.Account = &acct
				m.BaseUrl += "/v1beta"
				m.ModelMap = map[string]string{"gemini-x": "gemini-2.5-flash", "embed-x": "gemini-embedding-001"}
			}})
	}
	return sp
}

// The OpenAI SDK against a Gemini API member: whole and streamed answers,
// a tool call round trip, and embeddings (R-FMT-2, R-FMT-7).
func TestTranslatedOpenAISDKToGeminiMember(t *testing.T) {
	t.Parallel()
	h := newHarness(t, geminiRecord(t, "g"))
	client := openai.NewClient(option.WithBaseURL(h.url+"/v1"), option.WithAPIKey(callerKey), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	params := openai.ChatCompletionNewParams{Model: "gemini-x", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("be brief"), openai.UserMessage("hello")}}

	t.Run("R-FMT-2 whole answer", func(t *testing.T) {
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "" || resp.Usage.CompletionTokens == 0 ||
			resp.Choices[0].FinishReason != "stop" || resp.Model != "gemini-x" {
			t.Fatalf("answer %+v", resp)
		}
		last, _ := h.fakes["g"].LastRequest()
		if !strings.HasSuffix(last.Path, "/models/gemini-2.5-flash:generateContent") || !strings.Contains(string(last.Body), `"systemInstruction"`) {
			t.Fatalf("upstream got %s %s", last.Path, last.Body)
		}
		if got := last.Header.Get("X-Goog-Api-Key"); got != providerKey {
			t.Fatalf("upstream key header %q", got)
		}
		rec := h.record(1)
		if rec.MemberFormat != "gemini" || !rec.Translated {
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
		last, _ := h.fakes["g"].LastRequest()
		if !strings.Contains(last.Path, ":streamGenerateContent") || !strings.Contains(last.RawQuery, "alt=sse") {
			t.Fatalf("upstream got %s?%s", last.Path, last.RawQuery)
		}
	})
	t.Run("R-FMT-2 tool round trip", func(t *testing.T) {
		tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: "weather", Description: openai.String("weather of a city"),
			Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
				"required": []string{"city"}}})}
		msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("what is the weather in Oslo?")}
		resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gemini-x", Messages: msgs, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		calls := resp.Choices[0].Message.ToolCalls
		if resp.Choices[0].FinishReason != "tool_calls" || len(calls) != 1 || calls[0].ID == "" || calls[0].Function.Name != "weather" ||
			!strings.Contains(calls[0].Function.Arguments, `"city"`) {
			t.Fatalf("answer %+v", resp.Choices[0])
		}
		msgs = append(msgs, resp.Choices[0].Message.ToParam(), openai.ToolMessage(`{"sky":"sunny"}`, calls[0].ID))
		resp, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gemini-x", Messages: msgs, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Choices[0].FinishReason != "stop" || !strings.Contains(resp.Choices[0].Message.Content, "sunny") {
			t.Fatalf("answer after the tool result %+v", resp.Choices[0])
		}
		last, _ := h.fakes["g"].LastRequest()
		// The call and its result, matched by the function's name as
		// Gemini matches them.
		if !strings.Contains(string(last.Body), `"functionCall"`) || !strings.Contains(string(last.Body), `"functionResponse"`) {
			t.Fatalf("the tool round trip was not carried: %s", last.Body)
		}
	})
	t.Run("R-FMT-7 embeddings", func(t *testing.T) {
		resp, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "embed-x",
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"one", "two", "three"}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Data) != 3 || len(resp.Data[2].Embedding) == 0 || resp.Data[2].Index != 2 || resp.Model != "embed-x" {
			t.Fatalf("embeddings %d vectors, model %q", len(resp.Data), resp.Model)
		}
		last, _ := h.fakes["g"].LastRequest()
		if !strings.HasSuffix(last.Path, "/models/gemini-embedding-001:batchEmbedContents") {
			t.Fatalf("upstream got %s", last.Path)
		}
	})
}

// A Vertex AI member: the edge trades the service account's JSON key for
// an access token at the key's token_uri (the fake checks the JWT's
// signature) and sends it as a bearer token; the token is cached across
// calls.
func TestTranslatedOpenAISDKToVertexMember(t *testing.T) {
	t.Parallel()
	f := newFake(t, fakeprovider.Options{Flavor: fakeprovider.FlavorVertex, GCPProject: "weir-test"})
	sp := recordSpec{name: "vertex", wire: configv1.WireFormat_WIRE_FORMAT_GEMINI, models: []*configv1.Model{chatModel("gemini-x")},
		auth:     &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_GOOGLE_SERVICE_ACCOUNT},
		keyValue: f.ServiceAccountKey(""),
		members: []fakeMember{{name: "v", fake: f, edit: func(m *configv1.Member) {
			m.BaseUrl += "/v1/projects/weir-test/locations/us-central1/publishers/google"
			m.ModelMap = map[string]string{"gemini-x": "gemini-2.5-flash"}
		}}}}
	h := newHarness(t, sp)
	client := openai.NewClient(option.WithBaseURL(h.url+"/v1"), option.WithAPIKey(callerKey), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 2 {
		resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gemini-x",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if resp.Choices[0].Message.Content == "" {
			t.Fatalf("call %d: answer %+v", i, resp)
		}
	}
	var tokens, calls int
	var auth []string
	for _, r := range f.Requests() {
		switch {
		case r.Path == "/token":
			tokens++
		case strings.HasSuffix(r.Path, "/models/gemini-2.5-flash:generateContent"):
			calls++
			auth = append(auth, r.Header.Get("Authorization"))
		}
	}
	if tokens != 1 || calls != 2 {
		t.Fatalf("%d token requests and %d calls, want 1 and 2 (the token is cached)", tokens, calls)
	}
	if !strings.HasPrefix(auth[0], "Bearer ") || auth[0] != auth[1] || strings.Contains(auth[0], "PRIVATE KEY") {
		t.Fatalf("upstream Authorization %q", auth)
	}
}

// R-FMT-8 over HTTP: the Gemini member's per-day quota answer (a 429 with
// a PerDay quota violation) moves the call to the next member, and the
// member then stays out of later calls: the day is not over in a minute.
func TestGeminiDayQuotaFailsOver(t *testing.T) {
	t.Parallel()
	sp := geminiRecord(t, "g1", "g2")
	h := newHarness(t, sp)
	quota, err := fakeprovider.ParseFault("quota-day")
	if err != nil {
		t.Fatal(err)
	}
	h.fakes["g1"].Enqueue(quota)
	body := `{"model":"gemini-x","messages":[{"role":"user","content":"hi"}]}`
	res := h.post("/v1/chat/completions", body)
	if res.status != http.StatusOK || res.header.Get("X-Weir-Member") != "g2" {
		t.Fatalf("status %d member %q: %s", res.status, res.header.Get("X-Weir-Member"), res.body)
	}
	if got := h.record(1).sent(); !slices.Equal(got, []string{"g1:429:failed_over", "g2:200:answered"}) {
		t.Fatalf("attempts %v", got)
	}
	res = h.post("/v1/chat/completions", body)
	if res.status != http.StatusOK || res.header.Get("X-Weir-Member") != "g2" || res.header.Get("X-Weir-Attempts") != "1" {
		t.Fatalf("second call: status %d member %q attempts %q", res.status, res.header.Get("X-Weir-Member"), res.header.Get("X-Weir-Attempts"))
	}
	if n := h.fakes["g1"].Total(); n != 1 {
		t.Fatalf("the member out of its day's quota got %d calls, want 1", n)
	}
}
