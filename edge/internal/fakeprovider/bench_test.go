package fakeprovider

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// benchmarkPost measures whole requests over loopback with a keep-alive
// client, which is the fake's own share of any benchmark that uses it.
func benchmarkPost(b *testing.B, path string, header map[string]string, body string) {
	s := New(Options{History: -1})
	base, err := s.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
			for k, v := range header {
				req.Header.Set(k, v)
			}
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
}

func BenchmarkChat(b *testing.B) {
	benchmarkPost(b, "/v1/chat/completions", openAIHeaders(), chatBody("gpt-4o", ""))
}

func BenchmarkChatStream(b *testing.B) {
	benchmarkPost(b, "/v1/chat/completions", openAIHeaders(), chatBody("gpt-4o", `"stream":true,"stream_options":{"include_usage":true}`))
}

func BenchmarkMessagesStream(b *testing.B) {
	benchmarkPost(b, "/v1/messages", anthropicHeaders(), messagesBody("claude", `"stream":true`))
}

func BenchmarkBedrockStream(b *testing.B) {
	benchmarkPost(b, "/model/m/invoke-with-response-stream", bedrockHeaders(), bedrockBody)
}
