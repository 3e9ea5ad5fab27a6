package openai

import (
	"testing"

	"weir.dev/edge/internal/routing"
)

func TestURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, base, model, version string
		ep                         routing.Endpoint
		want                       string
	}{
		{"openai", "https://api.openai.com/v1/", "gpt-4o", "", routing.EndpointChatCompletions, "https://api.openai.com/v1/chat/completions"},
		{"vllm embeddings", "http://127.0.0.1:8000/v1", "m", "", routing.EndpointEmbeddings, "http://127.0.0.1:8000/v1/embeddings"},
		{"azure deployment", "https://acme-sweden.openai.azure.com/openai", "my dep", "2024-10-21", routing.EndpointChatCompletions,
			"https://acme-sweden.openai.azure.com/openai/deployments/my%20dep/chat/completions?api-version=2024-10-21"},
		{"azure v1 path", "https://acme-sweden.openai.azure.com/openai/v1", "gpt-4o", "", routing.EndpointResponses,
			"https://acme-sweden.openai.azure.com/openai/v1/responses"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := URL(tc.base, tc.ep, tc.model, tc.version)
			if err != nil || got != tc.want {
				t.Fatalf("got %q %v, want %q", got, err, tc.want)
			}
		})
	}
	if _, err := URL("https://x", routing.EndpointMessages, "m", ""); err == nil {
		t.Fatal("messages endpoint accepted by the openai adapter")
	}
}
