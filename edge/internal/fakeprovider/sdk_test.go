package fakeprovider

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/bedrock"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// The official SDKs are the yardstick of "close enough to the real APIs":
// these tests run them, unmodified, against the fake.

func sdkContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestOpenAISDK(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{Tokens: 4, CachedTokens: 2})
	ctx := sdkContext(t)
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	chat := openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello.")},
	}

	comp, err := client.Chat.Completions.New(ctx, chat)
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if comp.Choices[0].Message.Content != "Hello from the Weir" || comp.Usage.CompletionTokens != 4 || comp.Usage.PromptTokensDetails.CachedTokens != 2 || comp.Model != "gpt-4o-mini" {
		t.Errorf("chat: %+v", comp)
	}

	chat.StreamOptions.IncludeUsage = openai.Bool(true)
	stream := client.Chat.Completions.NewStreaming(ctx, chat)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("chat stream: %v", err)
	}
	if acc.Choices[0].Message.Content != "Hello from the Weir" || acc.Usage.CompletionTokens != 4 || acc.Choices[0].FinishReason != "stop" {
		t.Errorf("chat stream: %+v", acc.ChatCompletion)
	}

	emb, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model:          "text-embedding-3-small",
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64,
		Dimensions:     openai.Int(8),
	})
	if err != nil {
		t.Fatalf("embeddings: %v", err)
	}
	if len(emb.Data) != 2 || len(emb.Data[1].Embedding) != 8 || emb.Data[1].Embedding[0] == 0 {
		t.Errorf("embeddings: %+v", emb.Data)
	}
	if last, _ := s.LastRequest(); !bytes.Contains(last.Body, []byte(`"encoding_format":"base64"`)) {
		t.Errorf("the SDK sent %s", last.Body)
	}

	resp, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "gpt-4o",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello.")},
	})
	if err != nil {
		t.Fatalf("responses: %v", err)
	}
	if resp.OutputText() != "Hello from the Weir" || resp.Usage.OutputTokens != 4 || resp.Usage.InputTokensDetails.CachedTokens != 2 {
		t.Errorf("responses: %q %+v", resp.OutputText(), resp.Usage)
	}

	rs := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{
		Model: "gpt-4o",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello.")},
	})
	var deltas string
	var completed responses.Response
	for rs.Next() {
		switch ev := rs.Current(); ev.Type {
		case "response.output_text.delta":
			deltas += ev.Delta
		case "response.completed":
			completed = ev.Response
		}
	}
	if err := rs.Err(); err != nil {
		t.Fatalf("responses stream: %v", err)
	}
	if deltas != "Hello from the Weir" || completed.Usage.OutputTokens != 4 || completed.Status != "completed" {
		t.Errorf("responses stream: %q %+v", deltas, completed.Usage)
	}

	models, err := client.Models.List(ctx)
	if err != nil || len(models.Data) == 0 {
		t.Errorf("models: %v %+v", err, models)
	}
}

func TestOpenAISDKErrorsAndRetries(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{})
	ctx := sdkContext(t)
	chat := openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}

	// The SDK's own retry honours retry-after-ms.
	retrying := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(1))
	s.Enqueue(RateLimitedMillis(20 * time.Millisecond))
	if _, err := retrying.Chat.Completions.New(ctx, chat); err != nil {
		t.Fatalf("retry after a 429: %v", err)
	}
	if n := s.Count("/v1/chat/completions"); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}

	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	s.Enqueue(QuotaExceeded())
	_, err := client.Chat.Completions.New(ctx, chat)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "insufficient_quota" {
		t.Errorf("quota: %v", err)
	}

	// An error after the stream started reaches the SDK as a broken stream.
	s.Enqueue(CutAfter(2))
	stream := client.Chat.Completions.NewStreaming(ctx, chat)
	n := 0
	for stream.Next() {
		n++
	}
	if stream.Err() == nil || n != 2 {
		t.Errorf("cut stream: %d chunks, error %v", n, stream.Err())
	}
}

func TestAzureWithOpenAISDK(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{Tokens: 2})
	ctx := sdkContext(t)
	chat := openai.ChatCompletionNewParams{Model: "ignored-by-azure", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}

	// A deployment URL, as Azure's classic API takes it.
	dep := openai.NewClient(
		option.WithBaseURL(base+"/openai/deployments/prod-gpt4o/"),
		option.WithQuery("api-version", "2024-10-21"),
		option.WithHeader("api-key", "azure-key"),
		option.WithMaxRetries(0),
	)
	comp, err := dep.Chat.Completions.New(ctx, chat)
	if err != nil {
		t.Fatalf("deployment chat: %v", err)
	}
	if comp.Model != "prod-gpt4o" || comp.Choices[0].Message.Content != "Hello from" {
		t.Errorf("deployment chat: %+v", comp)
	}
	last, _ := s.LastRequest()
	if last.Path != "/openai/deployments/prod-gpt4o/chat/completions" || last.Header.Get("api-key") != "azure-key" {
		t.Errorf("request %s %v", last.Path, last.Header)
	}

	// Azure's v1 path takes the deployment as the model.
	v1 := openai.NewClient(option.WithBaseURL(base+"/openai/v1/"), option.WithHeader("api-key", "azure-key"), option.WithMaxRetries(0))
	chat.Model = "prod-gpt4o"
	stream := v1.Chat.Completions.NewStreaming(ctx, chat)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil || acc.Choices[0].Message.Content != "Hello from" || acc.Model != "prod-gpt4o" {
		t.Errorf("v1 stream: %v %+v", err, acc.ChatCompletion)
	}

	s.Enqueue(RateLimited(time.Second))
	_, err = dep.Chat.Completions.New(ctx, chat)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
		t.Errorf("429: %v", err)
	}
}

func anthropicParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 64,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say hello."))},
	}
}

func TestAnthropicSDK(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{Tokens: 3, CachedTokens: 2, APIKey: "sk-ant-right"})
	ctx := sdkContext(t)
	client := anthropic.NewClient(anthropicoption.WithBaseURL(base), anthropicoption.WithAPIKey("sk-ant-right"), anthropicoption.WithMaxRetries(0))

	msg, err := client.Messages.New(ctx, anthropicParams())
	if err != nil {
		t.Fatalf("messages: %v", err)
	}
	if msg.Content[0].Text != "Hello from the" || msg.Usage.OutputTokens != 3 || msg.Usage.CacheReadInputTokens != 2 || msg.StopReason != "end_turn" {
		t.Errorf("messages: %+v", msg)
	}

	stream := client.Messages.NewStreaming(ctx, anthropicParams())
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if acc.Content[0].Text != "Hello from the" || acc.Usage.OutputTokens != 3 || acc.Usage.CacheReadInputTokens != 2 {
		t.Errorf("stream: %+v", acc)
	}

	s.Enqueue(Status(529))
	_, err = client.Messages.New(ctx, anthropicParams())
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 {
		t.Errorf("529: %v", err)
	}

	wrong := anthropic.NewClient(anthropicoption.WithBaseURL(base), anthropicoption.WithAPIKey("sk-ant-wrong"), anthropicoption.WithMaxRetries(0))
	if _, err := wrong.Messages.New(ctx, anthropicParams()); !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Errorf("wrong key: %v", err)
	}
}

func TestBedrockWithAnthropicSDK(t *testing.T) {
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "") // SigV4, whatever the machine has
	s, base := start(t, Options{Tokens: 3, AWSSecretAccessKey: "right-secret"})
	ctx := sdkContext(t)
	newClient := func(secret string) anthropic.Client {
		cfg := aws.Config{
			Region: "us-east-1",
			Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: secret}, nil
			}),
		}
		return anthropic.NewClient(bedrock.WithConfig(cfg), anthropicoption.WithBaseURL(base), anthropicoption.WithMaxRetries(0))
	}
	client := newClient("right-secret")
	params := anthropicParams()
	params.Model = "anthropic.claude-3-5-sonnet-20240620-v1:0"

	msg, err := client.Messages.New(ctx, params)
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	if msg.Content[0].Text != "Hello from the" || msg.Usage.OutputTokens != 3 || msg.Model != params.Model {
		t.Errorf("invoke: %+v", msg)
	}
	last, _ := s.LastRequest()
	if last.Path != "/model/anthropic.claude-3-5-sonnet-20240620-v1:0/invoke" || !strings.HasPrefix(last.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") {
		t.Errorf("request %s %v", last.Path, last.Header)
	}

	stream := client.Messages.NewStreaming(ctx, params)
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if acc.Content[0].Text != "Hello from the" || acc.Usage.OutputTokens != 3 {
		t.Errorf("stream: %+v", acc)
	}

	var apiErr *anthropic.Error
	wrong := newClient("wrong-secret")
	if _, err := wrong.Messages.New(ctx, params); !errors.As(err, &apiErr) || apiErr.StatusCode != 403 {
		t.Errorf("wrong secret: %v", err)
	}
	s.Enqueue(Status(429))
	if _, err := client.Messages.New(ctx, params); !errors.As(err, &apiErr) || apiErr.StatusCode != 429 {
		t.Errorf("throttled: %v", err)
	}
}
