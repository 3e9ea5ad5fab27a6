package gateway

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"weir.dev/edge/internal/routing"
)

func FuzzReadInbound(f *testing.F) {
	for _, s := range []string{
		`{"model":"gpt-x","messages":[]}`, `{"model":"m","stream":true,"max_tokens":5,"metadata":{"user_id":"u"}}`,
		`{"model":5}`, `[]`, `{`, `{"model":"m","stream_options":{"include_usage":true},"prompt_cache_key":"k"}`,
		`{"model":"m","max_tokens":-1}`, "\x00\xff", `{"model":"m","metadata":"x"}`,
	} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, body string, epn uint8) {
		ep := routing.Endpoint(epn%4 + 1)
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		in, err := readInbound(r, nil, ep, newBodyReader(1<<20, 0))
		if err != nil {
			if in != nil || err.Status < 400 || err.Status > 499 || err.Code != routing.CodeInvalidRequest {
				t.Fatalf("bad refusal %+v", err)
			}
			return
		}
		if in.Model == "" || !bytes.Equal(in.Body, []byte(body)) || in.MaxOutput < 0 {
			t.Fatalf("accepted %q as %+v", body, in)
		}
	})
}

func FuzzAPIKey(f *testing.F) {
	f.Add("Bearer abc", "")
	f.Add("", "key")
	f.Add("bearer", "x")
	f.Fuzz(func(t *testing.T, auth, xkey string) {
		h := http.Header{}
		if auth != "" {
			h.Set("Authorization", auth)
		}
		if xkey != "" {
			h.Set("X-Api-Key", xkey)
		}
		k := apiKey(h)
		if auth != "" && k != "" && !strings.Contains(auth, k) {
			t.Fatalf("key %q not from %q", k, auth)
		}
	})
}
