package fakeprovider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// start serves a new Server for the test and closes it at the end.
func start(t *testing.T, opts Options) (*Server, string) {
	t.Helper()
	s := New(opts)
	url, err := s.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, url
}

// reqSpec is one request a test sends.
type reqSpec struct {
	method string
	path   string
	header map[string]string
	body   string
}

// Headers each flavor's client sends.
func openAIHeaders() map[string]string {
	return map[string]string{"Authorization": "Bearer sk-test-key-1234"}
}
func azureHeaders() map[string]string { return map[string]string{"api-key": "azure-key"} }
func anthropicHeaders() map[string]string {
	return map[string]string{"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
}
func bedrockHeaders() map[string]string {
	return map[string]string{
		"Authorization": "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20250101/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc",
		"X-Amz-Date":    "20250101T000000Z",
	}
}

// send performs r against base with a fresh client (no keep-alive reuse
// across tests) and returns the response; the body is left open.
func send(t *testing.T, ctx context.Context, base string, r reqSpec) (*http.Response, error) {
	t.Helper()
	method := r.method
	if method == "" {
		method = http.MethodPost
	}
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	return client.Do(req)
}

// do sends r and reads the whole answer, failing the test on transport
// errors.
func do(t *testing.T, base string, r reqSpec) (*http.Response, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := send(t, ctx, base, r)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", r.method, r.path, err)
	}
	return resp, b
}

// decode unmarshals b into a generic JSON value.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("answer is not a JSON object: %v\n%s", err, b)
	}
	return v
}

// path walks a decoded JSON value by keys and indexes ("choices.0.message").
func path(v any, p string) any {
	for _, k := range strings.Split(p, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i := 0
			for _, c := range k {
				i = i*10 + int(c-'0')
			}
			if i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	event string
	data  string
}

// readSSE parses a server-sent event stream until EOF, returning the events
// read and the read error (nil at a clean EOF).
func readSSE(r io.Reader) ([]sseEvent, error) {
	var out []sseEvent
	var cur sseEvent
	var data []string
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return out, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if len(data) > 0 || cur.event != "" {
				cur.data = strings.Join(data, "\n")
				out = append(out, cur)
			}
			cur, data = sseEvent{}, nil
		case strings.HasPrefix(line, "event:"):
			cur.event = strings.TrimSpace(line[len("event:"):])
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(line[len("data:"):], " "))
		}
	}
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// chatBody is a small chat request for model.
func chatBody(model string, extra string) string {
	var b bytes.Buffer
	b.WriteString(`{"model":"` + model + `","messages":[{"role":"user","content":"Say hello."}]`)
	if extra != "" {
		b.WriteString("," + extra)
	}
	b.WriteString("}")
	return b.String()
}

// messagesBody is a small Anthropic Messages request.
func messagesBody(model string, extra string) string {
	s := `{"model":"` + model + `","max_tokens":64,"messages":[{"role":"user","content":"Say hello."}]`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// bedrockBody is a small InvokeModel body for an Anthropic model.
const bedrockBody = `{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":"Say hello."}]}`
