package fakeprovider

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// errorShape reports which provider shape an error body has.
func errorShape(t *testing.T, resp *http.Response, body []byte) string {
	t.Helper()
	if resp.Header.Get("x-amzn-ErrorType") != "" {
		return "bedrock"
	}
	v := decode(t, body)
	switch {
	case v["type"] == "error" && path(v, "error.type") != nil && path(v, "error.message") != nil:
		return "anthropic"
	case path(v, "error.message") != nil && path(v, "error.type") != nil:
		return "openai"
	case path(v, "error.message") != nil && path(v, "error.code") != nil:
		return "azure"
	}
	return "unknown: " + string(body)
}

func TestHostileInput(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{MaxBodyBytes: 64 << 10})
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	huge := `{"model":"gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("a", 70000) + `"}]}`
	az := "/openai/deployments/gpt/chat/completions?api-version=2024-10-21"
	tests := []struct {
		name   string
		req    reqSpec
		status int
		shape  string
	}{
		{"openai bad json", reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: `{"model":`}, 400, "openai"},
		{"openai empty body", reqSpec{path: "/v1/chat/completions", header: openAIHeaders()}, 400, "openai"},
		{"openai top-level array", reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: `[1,2]`}, 400, "openai"},
		{"openai null", reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: `null`}, 400, "openai"},
		{"openai deep nesting", reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: deep}, 400, "openai"},
		{"openai model of wrong type", reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: `{"model":5,"messages":[]}`}, 400, "openai"},
		{"openai stream of wrong type", reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: chatBody("gpt-4o", `"stream":"yes"`)}, 400, "openai"},
		{"openai messages not a list", reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: `{"model":"gpt-4o","messages":"hi"}`}, 400, "openai"},
		{"openai no messages", reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: `{"model":"gpt-4o"}`}, 400, "openai"},
		{"openai no model", reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: `{"messages":[{"role":"user","content":"x"}]}`}, 400, "openai"},
		{"openai too large", reqSpec{path: "/v1/chat/completions", header: openAIHeaders(), body: huge}, 413, "openai"},
		{"openai unknown path", reqSpec{path: "/v1/nothing", header: openAIHeaders(), body: `{}`}, 404, "openai"},
		{"openai wrong method", reqSpec{method: http.MethodGet, path: "/v1/chat/completions", header: openAIHeaders()}, 405, "openai"},
		{"embeddings no input", reqSpec{path: "/v1/embeddings", header: openAIHeaders(), body: `{"model":"e"}`}, 400, "openai"},
		{"embeddings mixed input", reqSpec{path: "/v1/embeddings", header: openAIHeaders(), body: `{"model":"e","input":["a",{}]}`}, 400, "openai"},
		{"embeddings bad format", reqSpec{path: "/v1/embeddings", header: openAIHeaders(), body: `{"model":"e","input":"a","encoding_format":"hex"}`}, 400, "openai"},
		{"embeddings bad dimensions", reqSpec{path: "/v1/embeddings", header: openAIHeaders(), body: `{"model":"e","input":"a","dimensions":0}`}, 400, "openai"},
		{"responses no input", reqSpec{path: "/v1/responses", header: openAIHeaders(), body: `{"model":"gpt-4o"}`}, 400, "openai"},
		{"azure bad json", reqSpec{path: az, header: azureHeaders(), body: `{{`}, 400, "openai"},
		{"azure no api-version", reqSpec{path: "/openai/deployments/gpt/chat/completions", header: azureHeaders(), body: chatBody("", "")}, 404, "azure"},
		{"azure unknown operation", reqSpec{path: "/openai/deployments/gpt/images?api-version=1", header: azureHeaders(), body: `{}`}, 404, "azure"},
		{"anthropic bad json", reqSpec{path: "/v1/messages", header: anthropicHeaders(), body: "\x00\xff{"}, 400, "anthropic"},
		{"anthropic no max_tokens", reqSpec{path: "/v1/messages", header: anthropicHeaders(), body: `{"model":"c","messages":[]}`}, 400, "anthropic"},
		{"anthropic no model", reqSpec{path: "/v1/messages", header: anthropicHeaders(), body: `{"max_tokens":5,"messages":[]}`}, 400, "anthropic"},
		{"anthropic messages not a list", reqSpec{path: "/v1/messages", header: anthropicHeaders(), body: `{"model":"c","max_tokens":5,"messages":{}}`}, 400, "anthropic"},
		{"bedrock bad json", reqSpec{path: "/model/m/invoke", header: bedrockHeaders(), body: `nope`}, 400, "bedrock"},
		{"bedrock no anthropic_version", reqSpec{path: "/model/m/invoke", header: bedrockHeaders(), body: `{"max_tokens":5,"messages":[]}`}, 400, "bedrock"},
		{"bedrock empty anthropic_version", reqSpec{path: "/model/m/invoke", header: bedrockHeaders(), body: `{"anthropic_version":"","max_tokens":5,"messages":[]}`}, 400, "bedrock"},
		{"bedrock model in body", reqSpec{path: "/model/m/invoke", header: bedrockHeaders(), body: `{"anthropic_version":"bedrock-2023-05-31","model":"m","max_tokens":5,"messages":[]}`}, 400, "bedrock"},
		{"bedrock stream in body", reqSpec{path: "/model/m/invoke-with-response-stream", header: bedrockHeaders(), body: `{"anthropic_version":"bedrock-2023-05-31","stream":true,"max_tokens":5,"messages":[]}`}, 400, "bedrock"},
		{"bedrock unknown operation", reqSpec{path: "/model/m/converse", header: bedrockHeaders(), body: `{}`}, 404, "bedrock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := do(t, base, tt.req)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if got := errorShape(t, resp, body); got != tt.shape {
				t.Errorf("error shape %s, want %s: %s", got, tt.shape, body)
			}
		})
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{})
	reqs := flavorRequests()
	without := func(r reqSpec, drop ...string) reqSpec {
		h := map[string]string{}
		for k, v := range r.header {
			h[k] = v
		}
		for _, d := range drop {
			delete(h, d)
		}
		r.header = h
		return r
	}
	with := func(r reqSpec, k, v string) reqSpec {
		r = without(r)
		r.header[k] = v
		return r
	}
	type want struct {
		status int
		field  string // a JSON path, or header:NAME
		value  string
	}
	tests := []struct {
		name string
		key  string // the server's APIKey
		req  reqSpec
		want want
	}{
		{"openai no key", "", without(reqs[FlavorOpenAI], "Authorization"), want{401, "error.type", "invalid_request_error"}},
		{"openai wrong key", "sk-right", reqs[FlavorOpenAI], want{401, "error.code", "invalid_api_key"}},
		{"openai right key", "sk-test-key-1234", reqs[FlavorOpenAI], want{200, "object", "chat.completion"}},
		{"azure no key", "", without(reqs[FlavorAzure], "api-key"), want{401, "error.code", "401"}},
		{"azure wrong key", "right", reqs[FlavorAzure], want{401, "error.code", "401"}},
		{"azure bearer token", "", with(without(reqs[FlavorAzure], "api-key"), "Authorization", "Bearer entra"), want{200, "object", "chat.completion"}},
		{"anthropic no key", "", without(reqs[FlavorAnthropic], "x-api-key"), want{401, "error.message", "x-api-key header is required"}},
		{"anthropic wrong key", "right", reqs[FlavorAnthropic], want{401, "error.type", "authentication_error"}},
		{"anthropic no version", "", without(reqs[FlavorAnthropic], "anthropic-version"), want{400, "error.message", "anthropic-version: header is required"}},
		{"bedrock no auth", "", without(reqs[FlavorBedrock], "Authorization"), want{403, "header:x-amzn-ErrorType", "MissingAuthenticationTokenException:"}},
		{"bedrock malformed sigv4", "", with(reqs[FlavorBedrock], "Authorization", "AWS4-HMAC-SHA256 Signature=x"), want{403, "header:x-amzn-ErrorType", "IncompleteSignatureException:"}},
		{"bedrock wrong service", "", with(reqs[FlavorBedrock], "Authorization", "AWS4-HMAC-SHA256 Credential=A/20250101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=x"), want{403, "header:x-amzn-ErrorType", "InvalidSignatureException:"}},
		{"bedrock api key", "", with(reqs[FlavorBedrock], "Authorization", "Bearer ABSKexample"), want{200, "type", "message"}},
	}
	for _, tt := range tests {
		s.SetAPIKey(tt.key)
		resp, body := do(t, base, tt.req)
		if resp.StatusCode != tt.want.status {
			t.Errorf("%s: status %d, want %d: %s", tt.name, resp.StatusCode, tt.want.status, body)
			continue
		}
		var got string
		if name, ok := strings.CutPrefix(tt.want.field, "header:"); ok {
			got = resp.Header.Get(name)
			got = got[:min(len(got), len(tt.want.value))]
		} else {
			got, _ = path(decode(t, body), tt.want.field).(string)
		}
		if got != tt.want.value {
			t.Errorf("%s: %s = %q, want %q (%s)", tt.name, tt.want.field, got, tt.want.value, body)
		}
		if bytes.Contains(body, []byte("sk-test-key-1234")) {
			t.Errorf("%s: the answer repeats the whole key: %s", tt.name, body)
		}
	}
}

func TestFlavorRestriction(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{Flavor: FlavorAnthropic})
	resp, body := do(t, base, flavorRequests()[FlavorOpenAI])
	if resp.StatusCode != 404 || errorShape(t, resp, body) != "anthropic" {
		t.Errorf("OpenAI path on an Anthropic-only server: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, base, flavorRequests()[FlavorAnthropic]); resp.StatusCode != 200 {
		t.Errorf("Anthropic path: %d %s", resp.StatusCode, body)
	}
}

func TestInspection(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{History: 2})
	reqs := flavorRequests()
	do(t, base, reqs[FlavorOpenAI])
	do(t, base, reqs[FlavorOpenAI])
	do(t, base, reqs[FlavorAzure])
	s.Enqueue(Status(503))
	do(t, base, reqs[FlavorAnthropic])

	wantCounts := map[string]int{
		"/v1/chat/completions":                     2,
		"/openai/deployments/gpt/chat/completions": 1,
		"/v1/messages":                             1,
	}
	if diff := cmp.Diff(wantCounts, s.Counts()); diff != "" {
		t.Errorf("Counts (-want +got):\n%s", diff)
	}
	if s.Total() != 4 || s.Count("/v1/chat/completions") != 2 || s.InFlight() != 0 {
		t.Errorf("Total %d, Count %d, InFlight %d", s.Total(), s.Count("/v1/chat/completions"), s.InFlight())
	}
	last, ok := s.LastRequest()
	if !ok || last.Seq != 4 || last.Flavor != FlavorAnthropic || last.Model != "claude" ||
		last.Header.Get("x-api-key") != "sk-ant-test" || string(last.Body) != reqs[FlavorAnthropic].body {
		t.Errorf("LastRequest = %+v", last)
	}
	hist := s.Requests()
	if len(hist) != 2 || hist[0].Seq != 3 || hist[0].Model != "gpt" || hist[0].RawQuery != "api-version=2024-10-21" ||
		hist[0].Header.Get("api-key") != "azure-key" || hist[0].Header.Get("Authorization") != "" {
		t.Errorf("Requests = %+v", hist)
	}
	// What the caller gets is a copy.
	hist[0].Header.Set("api-key", "changed")
	if s.Requests()[0].Header.Get("api-key") != "azure-key" {
		t.Error("Requests shares its headers with the server")
	}
	s.ResetStats()
	if _, ok := s.LastRequest(); ok || s.Total() != 0 || len(s.Requests()) != 0 || len(s.Counts()) != 0 {
		t.Error("ResetStats left something")
	}
}

// FuzzServeHTTP feeds arbitrary bodies to every operation; the server must
// answer each with a status, never panic, and never answer 5xx when no fault
// is scripted.
func FuzzServeHTTP(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","input":["a","b"],"encoding_format":"base64","dimensions":3}`,
		`{"model":"m","max_tokens":3,"messages":[],"stream":true}`,
		bedrockBody,
		`{"model":null,"messages":null}`, `[]`, `"x"`, `{"input":[[1,2],[3]]}`, "",
	} {
		for op := range 7 {
			f.Add(uint8(op), seed)
		}
	}
	s := New(Options{Tokens: 2})
	defer s.Close()
	paths := []struct {
		path   string
		header map[string]string
	}{
		{"/v1/chat/completions", openAIHeaders()},
		{"/v1/embeddings", openAIHeaders()},
		{"/v1/responses", openAIHeaders()},
		{"/openai/deployments/d/embeddings?api-version=1", azureHeaders()},
		{"/v1/messages", anthropicHeaders()},
		{"/model/m/invoke", bedrockHeaders()},
		{"/model/m/invoke-with-response-stream", bedrockHeaders()},
	}
	f.Fuzz(func(t *testing.T, op uint8, body string) {
		p := paths[int(op)%len(paths)]
		req := httptest.NewRequest(http.MethodPost, p.path, strings.NewReader(body))
		for k, v := range p.header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code >= 500 || rec.Code < 200 {
			t.Fatalf("%s %q: status %d: %s", p.path, body, rec.Code, rec.Body)
		}
	})
}
