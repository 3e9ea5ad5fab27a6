package gateway

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"weir.dev/routing"
)

// BenchmarkReadInbound reads and checks a 1 KB chat body, as every call
// does before routing.
func BenchmarkReadInbound(b *testing.B) {
	body := []byte(`{"model":"gpt-x","stream":false,"max_tokens":256,"messages":[{"role":"user","content":"` + strings.Repeat("x", 900) + `"}]}`)
	r, _ := http.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	rd := bytes.NewReader(body)
	br := newBodyReader(32<<20, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		rd.Reset(body)
		r.Body, r.ContentLength = io.NopCloser(rd), int64(len(body))
		if _, e := readInbound(r, nil, routing.EndpointChatCompletions, br, new(Inbound)); e != nil {
			b.Fatal(e)
		}
	}
}
