package fakeprovider

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

const geminiKey = "AIza-fake-key"

func geminiHeaders() map[string]string { return map[string]string{"x-goog-api-key": geminiKey} }

// geminiBody is a small generateContent request; extra fields are appended.
func geminiBody(extra string) string {
	s := `{"contents":[{"role":"user","parts":[{"text":"Say hello."}]}]`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

const geminiPath = "/v1beta/models/gemini-2.5-flash:"

func TestGeminiGenerateContent(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{Tokens: 6, CachedTokens: 3, APIKey: geminiKey})
	resp, b := do(t, base, reqSpec{path: geminiPath + "generateContent", header: geminiHeaders(), body: geminiBody("")})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	v := decode(t, b)
	prompt, _ := path(v, "usageMetadata.promptTokenCount").(float64)
	for p, want := range map[string]any{
		"candidates.0.content.role":             "model",
		"candidates.0.content.parts.0.text":     "Hello from the Weir fake provider.",
		"candidates.0.finishReason":             "STOP",
		"usageMetadata.candidatesTokenCount":    6.0,
		"usageMetadata.totalTokenCount":         prompt + 6,
		"usageMetadata.cachedContentTokenCount": 3.0,
		"modelVersion":                          "gemini-2.5-flash",
	} {
		if got := path(v, p); got != want {
			t.Errorf("%s = %v, want %v", p, got, want)
		}
	}
	if prompt < 3 {
		t.Errorf("promptTokenCount %v must include the 3 cached tokens", prompt)
	}
	if id, _ := v["responseId"].(string); id == "" {
		t.Errorf("no responseId: %s", b)
	}
	if resp.Header.Get("retry-after") != "" || resp.Header.Get("x-ratelimit-limit-requests") != "" {
		t.Errorf("Gemini sends no rate-limit headers: %v", resp.Header)
	}

	// The key may come as ?key= too, and snake_case fields are read (R-FMT-2 output cap).
	resp, b = do(t, base, reqSpec{path: geminiPath + "generateContent?key=" + geminiKey, body: geminiBody(`"generation_config":{"max_output_tokens":2}`)})
	v = decode(t, b)
	if resp.StatusCode != 200 || path(v, "candidates.0.finishReason") != "MAX_TOKENS" ||
		path(v, "candidates.0.content.parts.0.text") != "Hello from" || path(v, "usageMetadata.candidatesTokenCount") != 2.0 {
		t.Errorf("capped answer %d: %s", resp.StatusCode, b)
	}
}

func TestGeminiStreamSSE(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{Tokens: 5, CachedTokens: 2})
	resp, b := do(t, base, reqSpec{path: geminiPath + "streamGenerateContent?alt=sse", header: geminiHeaders(), body: geminiBody(`"generationConfig":{"maxOutputTokens":4}`)})
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	events, err := readSSE(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 4 {
		t.Fatalf("%d chunks, want 4 (one per token):\n%s", len(events), b)
	}
	var text strings.Builder
	for i, e := range events {
		v := decode(t, []byte(e.data))
		text.WriteString(path(v, "candidates.0.content.parts.0.text").(string))
		fr := path(v, "candidates.0.finishReason")
		if i < len(events)-1 && fr != nil {
			t.Errorf("chunk %d has finishReason %v", i, fr)
		}
		if path(v, "responseId") == "" || path(v, "modelVersion") != "gemini-2.5-flash" {
			t.Errorf("chunk %d lacks responseId or modelVersion: %s", i, e.data)
		}
	}
	last := decode(t, []byte(events[len(events)-1].data))
	if path(last, "candidates.0.finishReason") != "MAX_TOKENS" || path(last, "usageMetadata.candidatesTokenCount") != 4.0 ||
		path(last, "usageMetadata.cachedContentTokenCount") != 2.0 {
		t.Errorf("last chunk: %s", events[len(events)-1].data)
	}
	if text.String() != "Hello from the Weir" {
		t.Errorf("streamed text %q", text.String())
	}
	if r, _ := s.LastRequest(); r.Flavor != FlavorGemini || r.Model != "gemini-2.5-flash" {
		t.Errorf("recorded %+v", r)
	}

	// Without alt=sse the chunks are one JSON array.
	resp, b = do(t, base, reqSpec{path: geminiPath + "streamGenerateContent", header: geminiHeaders(), body: geminiBody("")})
	var chunks []map[string]any
	if err := json.Unmarshal(b, &chunks); resp.StatusCode != 200 || err != nil || len(chunks) != 5 {
		t.Fatalf("array stream %d (%v): %s", resp.StatusCode, err, b)
	}
	if path(chunks[4], "candidates.0.finishReason") != "STOP" {
		t.Errorf("last array chunk: %v", chunks[4])
	}
}

func TestGeminiStreamCut(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{Tokens: 5})
	s.Enqueue(CutAfter(2))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := send(t, ctx, base, reqSpec{path: geminiPath + "streamGenerateContent?alt=sse", header: geminiHeaders(), body: geminiBody("")})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events, err := readSSE(resp.Body)
	if err == nil || len(events) != 2 {
		t.Errorf("cut stream: %d events, err %v", len(events), err)
	}
}

func TestGeminiBatchEmbedContents(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{EmbeddingDims: 8})
	body := `{"requests":[{"model":"models/text-embedding-004","content":{"parts":[{"text":"a"}]}},` +
		`{"model":"models/text-embedding-004","content":{"parts":[{"text":"b"}]},"outputDimensionality":3}]}`
	resp, b := do(t, base, reqSpec{path: "/v1beta/models/text-embedding-004:batchEmbedContents", header: geminiHeaders(), body: body})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var out struct {
		Embeddings []struct {
			Values []float32 `json:"values"`
		} `json:"embeddings"`
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out.Embeddings) != 2 {
		t.Fatalf("%v: %s", err, b)
	}
	if len(out.Embeddings[0].Values) != 8 || len(out.Embeddings[1].Values) != 3 {
		t.Errorf("dims %d, %d", len(out.Embeddings[0].Values), len(out.Embeddings[1].Values))
	}
	// Deterministic: the same text gives the OpenAI flavor's vector.
	want := vector("a", 8)
	for i := range want {
		if out.Embeddings[0].Values[i] != want[i] {
			t.Fatalf("vector of %q differs at %d", "a", i)
		}
	}
	// A request naming another model is refused in Google's shape.
	resp, b = do(t, base, reqSpec{path: "/v1beta/models/text-embedding-004:batchEmbedContents", header: geminiHeaders(),
		body: `{"requests":[{"model":"models/other","content":{"parts":[{"text":"a"}]}}]}`})
	if resp.StatusCode != 400 || path(decode(t, b), "error.status") != "INVALID_ARGUMENT" {
		t.Errorf("wrong model: %d %s", resp.StatusCode, b)
	}
}

// weatherTool declares get_weather with a required string and enum.
const weatherTool = `"tools":[{"functionDeclarations":[{"name":"get_weather","description":"Weather in a city",` +
	`"parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING"},"unit":{"type":"STRING","enum":["celsius","fahrenheit"]},"days":{"type":"INTEGER"}},"required":["city","unit"]}}]}]`

func TestGeminiToolCalls(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{})
	call := func(body string, stream bool) map[string]any {
		t.Helper()
		p := geminiPath + "generateContent"
		if stream {
			p = geminiPath + "streamGenerateContent?alt=sse"
		}
		resp, b := do(t, base, reqSpec{path: p, header: geminiHeaders(), body: body})
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		if !stream {
			return decode(t, b)
		}
		events, err := readSSE(strings.NewReader(string(b)))
		if err != nil || len(events) == 0 {
			t.Fatalf("stream: %v %s", err, b)
		}
		return decode(t, []byte(events[len(events)-1].data))
	}
	checkCall := func(name string, v map[string]any) {
		t.Helper()
		if path(v, "candidates.0.content.parts.0.functionCall.name") != "get_weather" ||
			path(v, "candidates.0.content.parts.0.functionCall.args.city") != "example city" ||
			path(v, "candidates.0.content.parts.0.functionCall.args.unit") != "celsius" ||
			path(v, "candidates.0.content.parts.0.functionCall.args.days") != nil ||
			path(v, "candidates.0.finishReason") != "STOP" {
			t.Errorf("%s: not the expected function call: %v", name, v)
		}
	}
	// Mode ANY forces a call.
	anyBody := geminiBody(weatherTool + `,"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}`)
	checkCall("mode ANY", call(anyBody, false))
	checkCall("mode ANY streamed", call(anyBody, true))
	// Naming the function in the last user text calls it.
	named := `{"contents":[{"role":"user","parts":[{"text":"Please use get_weather for Paris."}]}],` + weatherTool + `}`
	checkCall("named", call(named, false))
	// Tools declared but not named: plain text.
	if v := call(geminiBody(weatherTool), false); path(v, "candidates.0.content.parts.0.text") == nil {
		t.Errorf("unnamed tool answered %v", v)
	}
	// Mode NONE never calls.
	if v := call(`{"contents":[{"role":"user","parts":[{"text":"get_weather now"}]}],`+weatherTool+`,"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}}`, false); path(v, "candidates.0.content.parts.0.functionCall") != nil {
		t.Errorf("mode NONE called: %v", v)
	}
	// A function response is answered with text naming the result.
	resultBody := `{"contents":[{"role":"user","parts":[{"text":"Weather in Paris? use get_weather"}]},` +
		`{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]},` +
		`{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"temp_c":21}}}]}],` + weatherTool + `,"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}}`
	for _, stream := range []bool{false, true} {
		v := call(resultBody, stream)
		if stream {
			continue // the last chunk holds only the last word
		}
		text, _ := path(v, "candidates.0.content.parts.0.text").(string)
		if !strings.Contains(text, "get_weather") || !strings.Contains(text, `{"temp_c":21}`) || path(v, "candidates.0.finishReason") != "STOP" {
			t.Errorf("function response answered %v", v)
		}
	}
}

func TestGeminiRequestValidation(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{})
	for name, body := range map[string]string{
		"not json":        `{"contents":`,
		"no contents":     `{}`,
		"empty contents":  `{"contents":[]}`,
		"bad role":        `{"contents":[{"role":"assistant","parts":[{"text":"hi"}]}]}`,
		"no parts":        `{"contents":[{"role":"user","parts":[]}]}`,
		"empty part":      `{"contents":[{"role":"user","parts":[{}]}]}`,
		"unknown field":   geminiBody(`"messages":[]`),
		"negative cap":    geminiBody(`"generationConfig":{"maxOutputTokens":-1}`),
		"wrong type":      geminiBody(`"generationConfig":{"maxOutputTokens":"many"}`),
		"ANY without fns": geminiBody(`"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}`),
	} {
		resp, b := do(t, base, reqSpec{path: geminiPath + "generateContent", header: geminiHeaders(), body: body})
		v := decode(t, b)
		if resp.StatusCode != 400 || path(v, "error.code") != 400.0 || path(v, "error.status") != "INVALID_ARGUMENT" || path(v, "error.message") == "" {
			t.Errorf("%s: %d %s", name, resp.StatusCode, b)
		}
	}
	// Unknown methods and wrong HTTP methods are 404 NOT_FOUND.
	resp, b := do(t, base, reqSpec{path: geminiPath + "countTokens", header: geminiHeaders(), body: geminiBody("")})
	if resp.StatusCode != 404 || path(decode(t, b), "error.status") != "NOT_FOUND" {
		t.Errorf("unknown method: %d %s", resp.StatusCode, b)
	}
}

func TestGeminiAuth(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{APIKey: geminiKey})
	resp, b := do(t, base, reqSpec{path: geminiPath + "generateContent", header: map[string]string{"x-goog-api-key": "wrong"}, body: geminiBody("")})
	want := `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"},"reason":"API_KEY_INVALID"}]}}`
	if resp.StatusCode != 400 || string(b) != want {
		t.Errorf("wrong key: %d\n got %s\nwant %s", resp.StatusCode, b, want)
	}
	resp, b = do(t, base, reqSpec{path: geminiPath + "generateContent?key=wrong", body: geminiBody("")})
	if resp.StatusCode != 400 || !strings.Contains(string(b), "API_KEY_INVALID") {
		t.Errorf("wrong ?key=: %d %s", resp.StatusCode, b)
	}
	resp, b = do(t, base, reqSpec{path: geminiPath + "generateContent", body: geminiBody("")})
	if resp.StatusCode != 403 || path(decode(t, b), "error.status") != "PERMISSION_DENIED" {
		t.Errorf("no key: %d %s", resp.StatusCode, b)
	}
}

// googleErr decodes a Google error body.
type googleErr struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Details []struct {
			Type       string `json:"@type"`
			Reason     string `json:"reason"`
			RetryDelay string `json:"retryDelay"`
			Violations []struct {
				QuotaID    string `json:"quotaId"`
				QuotaValue string `json:"quotaValue"`
			} `json:"violations"`
		} `json:"details"`
	} `json:"error"`
}

// quotaIDs and retryDelay sum up a Google 429's details.
func (g googleErr) quotaIDs() (ids []string, retryDelay string) {
	for _, d := range g.Error.Details {
		switch d.Type {
		case typeQuotaFailure:
			for _, v := range d.Violations {
				ids = append(ids, v.QuotaID)
			}
		case typeRetryInfo:
			retryDelay = d.RetryDelay
		}
	}
	return ids, retryDelay
}

// R-FMT-8: the faults a gateway must tell apart arrive in Google's shapes.
func TestGeminiFaults(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{})
	tests := []struct {
		name       string
		fault      Fault
		status     int
		rpcStatus  string
		quotaIDs   string
		retryDelay string
		message    string
	}{
		{"per-minute", RateLimited(20 * time.Second), 429, "RESOURCE_EXHAUSTED", QuotaPerMinute, "20s", "Please retry in 20s."},
		{"per-minute ms", RateLimitedMillis(1500 * time.Millisecond), 429, "RESOURCE_EXHAUSTED", QuotaPerMinute, "1.5s", ""},
		{"per-day", DailyQuotaExceeded(), 429, "RESOURCE_EXHAUSTED", QuotaPerDay, "", "limit: 200"},
		{"bare", RateLimitedNoHint(), 429, "RESOURCE_EXHAUSTED", "", "", googleBareExhausted},
		{"status 429", Status(429), 429, "RESOURCE_EXHAUSTED", "", "", googleBareExhausted},
		{"overloaded 503", Status(503), 503, "UNAVAILABLE", "", "", googleOverloadedMsg},
		{"overloaded 529", Status(529), 503, "UNAVAILABLE", "", "", googleOverloadedMsg},
		{"500", Status(500), 500, "INTERNAL", "", "", ""},
		{"504", Status(504), 504, "DEADLINE_EXCEEDED", "", "", ""},
		{"prepayment", QuotaExceeded(), 429, "RESOURCE_EXHAUSTED", "", "", "prepayment credits are depleted"},
	}
	for _, tc := range tests {
		s.Enqueue(tc.fault)
		resp, b := do(t, base, reqSpec{path: geminiPath + "generateContent", header: geminiHeaders(), body: geminiBody("")})
		var g googleErr
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatalf("%s: %v %s", tc.name, err, b)
		}
		ids, delay := g.quotaIDs()
		if resp.StatusCode != tc.status || g.Error.Code != tc.status || g.Error.Status != tc.rpcStatus ||
			strings.Join(ids, ",") != tc.quotaIDs || delay != tc.retryDelay || !strings.Contains(g.Error.Message, tc.message) {
			t.Errorf("%s: %d %s (quota ids %v, retryDelay %q)", tc.name, resp.StatusCode, b, ids, delay)
		}
		if resp.Header.Get("retry-after") != "" || resp.Header.Get("retry-after-ms") != "" {
			t.Errorf("%s: Google sends no retry-after header: %v", tc.name, resp.Header)
		}
		if tc.name == "bare" && len(g.Error.Details) != 0 {
			t.Errorf("bare 429 has details: %s", b)
		}
	}
	// The exact 503 body.
	s.Enqueue(Status(503))
	_, b := do(t, base, reqSpec{path: geminiPath + "generateContent", header: geminiHeaders(), body: geminiBody("")})
	if want := `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`; string(b) != want {
		t.Errorf("503 body %s, want %s", b, want)
	}
}

// R-FMT-8: the request bucket refuses with a per-minute quota and the
// bucket's wait as RetryInfo.
func TestGeminiBucketRateLimit(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	_, base := start(t, Options{Limits: Limits{RPM: 2}, Now: clock.Now})
	req := reqSpec{path: geminiPath + "generateContent", header: geminiHeaders(), body: geminiBody("")}
	for range 2 {
		if resp, b := do(t, base, req); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	}
	resp, b := do(t, base, req)
	var g googleErr
	_ = json.Unmarshal(b, &g)
	ids, delay := g.quotaIDs()
	if resp.StatusCode != 429 || g.Error.Status != "RESOURCE_EXHAUSTED" || len(ids) != 1 || ids[0] != QuotaPerMinute || delay != "30s" ||
		g.Error.Details[0].Violations[0].QuotaValue != "2" {
		t.Errorf("bucket 429: %d %s", resp.StatusCode, b)
	}
}

// The other flavors answer the daily quota fault with their own 429.
func TestDailyQuotaOtherFlavors(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{})
	for flavor, req := range flavorRequests() {
		s.Enqueue(DailyQuotaExceeded())
		resp, b := do(t, base, req)
		if resp.StatusCode != 429 || !strings.Contains(strings.ToLower(string(b)), "day") {
			t.Errorf("%s: %d %s", flavor, resp.StatusCode, b)
		}
		if resp.Header.Get("retry-after") != "" {
			t.Errorf("%s: a daily quota names no wait: %v", flavor, resp.Header)
		}
	}
}

func TestGeminiFlavorRestriction(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{Flavor: FlavorGemini})
	if resp, b := do(t, base, flavorRequests()[FlavorOpenAI]); resp.StatusCode != 404 || path(decode(t, b), "error.status") != "NOT_FOUND" {
		t.Errorf("openai path on a gemini server: %d %s", resp.StatusCode, b)
	}
	if resp, _ := do(t, base, reqSpec{path: geminiPath + "generateContent", header: geminiHeaders(), body: geminiBody("")}); resp.StatusCode != http.StatusOK {
		t.Errorf("gemini path: %d", resp.StatusCode)
	}
	if resp, _ := do(t, base, reqSpec{path: "/token", body: "grant_type=x"}); resp.StatusCode != 404 {
		t.Errorf("token endpoint on a gemini server: %d", resp.StatusCode)
	}
}

func TestParseDailyQuotaFault(t *testing.T) {
	t.Parallel()
	f, err := ParseFault("quota-day")
	if err != nil || f.Kind != FaultDailyQuota || f.String() != "quota-day" || f.Kind.String() != "daily-quota" {
		t.Errorf("ParseFault(quota-day) = %v, %v", f, err)
	}
	if _, err := ParseFault("quota-day:1s"); err == nil {
		t.Error("quota-day takes no argument")
	}
	for _, name := range []string{"gemini", "vertex", "GEMINI"} {
		if _, err := ParseFlavor(name); err != nil {
			t.Errorf("ParseFlavor(%q): %v", name, err)
		}
	}
}

// Hostile Gemini bodies are refused with 400, never a panic or a hang.
func TestGeminiHostileInput(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{})
	deep := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
	many := `{"requests":[` + strings.TrimSuffix(strings.Repeat(`{"model":"models/e","content":{"parts":[{"text":"a"}]}},`, maxEmbedBatch+1), ",") + `]}`
	for name, r := range map[string]reqSpec{
		"array body":      {path: geminiPath + "generateContent", body: `[]`},
		"deep nesting":    {path: geminiPath + "generateContent", body: deep},
		"contents object": {path: geminiPath + "generateContent", body: `{"contents":{"role":"user"}}`},
		"parts string":    {path: geminiPath + "generateContent", body: `{"contents":[{"role":"user","parts":"hi"}]}`},
		"tools garbage":   {path: geminiPath + "generateContent", body: geminiBody(`"tools":[{"functionDeclarations":"x"}]`)},
		"too many embeds": {path: "/v1beta/models/e:batchEmbedContents", body: many},
		"no embed text":   {path: "/v1beta/models/e:batchEmbedContents", body: `{"requests":[{"model":"models/e","content":{"parts":[{"inlineData":{}}]}}]}`},
		"huge dims":       {path: "/v1beta/models/e:batchEmbedContents", body: `{"requests":[{"model":"models/e","content":{"parts":[{"text":"a"}]},"outputDimensionality":100000000}]}`},
	} {
		r.header = geminiHeaders()
		resp, b := do(t, base, r)
		if resp.StatusCode != 400 || path(decode(t, b), "error.status") != "INVALID_ARGUMENT" {
			t.Errorf("%s: %d %.300s", name, resp.StatusCode, b)
		}
	}
}
