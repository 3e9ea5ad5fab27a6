package gateway_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"weir.dev/edge/internal/fakeprovider"
	"weir.dev/edge/internal/gateway"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// rawRequest opens a connection to the harness's gateway and writes a POST
// of path with the caller's key and the given extra header lines, and no
// body. The connection is closed when the test ends.
func (h *harness) rawRequest(path string, headers ...string) net.Conn {
	h.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = conn.Close() })
	head := "POST " + path + " HTTP/1.1\r\nHost: weir\r\nAuthorization: Bearer " + callerKey + "\r\nContent-Type: application/json\r\n"
	for _, l := range headers {
		head += l + "\r\n"
	}
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		h.t.Fatal(err)
	}
	return conn
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestBodyMemoryFollowsBytesReceived is DESIGN.md §5's "memory for a body
// allocated as it arrives (never from a declared length)": connections that
// declare bodies of nearly --max-body and send nothing must not grow the
// edge's heap by what they declared. It is not parallel: it measures the
// process's heap.
func TestBodyMemoryFollowsBytesReceived(t *testing.T) {
	const (
		conns    = 25
		declared = 8 << 20 // each: 200 MiB in all, were it allocated
		maxGrow  = 4 << 20
	)
	h := newHarnessOpts(t, harnessOpts{cfg: func(c *gateway.Config) {
		c.MaxBodyBytes, c.BodyTimeout = declared, time.Minute
	}}, pool(t, "a"))
	// Warm up: the gateway, the fake and the client have their buffers.
	if res := h.post("/v1/chat/completions", chatBody); res.status != 200 {
		t.Fatalf("warm-up %d %s", res.status, res.body)
	}
	before := heapInUse()
	for range conns {
		c := h.rawRequest("/v1/chat/completions", fmt.Sprintf("Content-Length: %d", declared))
		// A few bytes, so that every handler is reading the body.
		if _, err := io.WriteString(c, `{"model":`); err != nil {
			t.Fatal(err)
		}
	}
	// The handlers reach their body reads within a moment; the heap is
	// measured until then, failing as soon as it grew too much.
	var grew int64
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		grew = int64(heapInUse()) - int64(before)
		if grew > maxGrow {
			break
		}
	}
	t.Logf("heap grew by %d bytes for %d connections declaring %d bytes each", grew, conns, declared)
	if grew > maxGrow {
		t.Fatalf("heap grew by %d MiB for %d idle bodies, want < %d MiB", grew>>20, conns, maxGrow>>20)
	}
}

// readAnswer reads one HTTP answer from conn.
func readAnswer(t *testing.T, conn net.Conn) (*http.Response, []byte) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// anthropicErr is the gateway's Anthropic-format error body.
type anthropicErr struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func TestBodyLimits(t *testing.T) {
	t.Parallel()
	claude := func(t *testing.T) recordSpec {
		return recordSpec{name: "claude", wire: configv1.WireFormat_WIRE_FORMAT_ANTHROPIC, models: []*configv1.Model{chatModel("claude-x")},
			members: []fakeMember{{name: "a", fake: newFake(t, fakeprovider.Options{})}}}
	}
	t.Run("a trickled body is cut at the body deadline: 408 invalid_request (OpenAI)", func(t *testing.T) {
		t.Parallel()
		h := newHarnessOpts(t, harnessOpts{cfg: func(c *gateway.Config) { c.BodyTimeout = 300 * time.Millisecond }}, pool(t, "a"))
		conn := h.rawRequest("/v1/chat/completions", "Content-Length: 1000")
		start := time.Now()
		stop := make(chan struct{})
		defer close(stop)
		go func() { // one byte every 20 ms: 20 s for the whole body
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
					if _, err := conn.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
		resp, body := readAnswer(t, conn)
		took := time.Since(start)
		e := decodeErr(t, body)
		if resp.StatusCode != http.StatusRequestTimeout || resp.Header.Get("X-Weir-Error") != "invalid_request" || e.Error.Code != "invalid_request" {
			t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
		}
		if took < 250*time.Millisecond || took > 5*time.Second {
			t.Fatalf("answered after %v, want about the 300ms body deadline", took)
		}
		if h.fakes["a"].Total() != 0 {
			t.Fatal("a member was called")
		}
	})
	t.Run("a body that never comes gets 408 in the Anthropic format", func(t *testing.T) {
		t.Parallel()
		h := newHarnessOpts(t, harnessOpts{cfg: func(c *gateway.Config) { c.BodyTimeout = 200 * time.Millisecond }}, claude(t))
		conn := h.rawRequest("/v1/messages", "Content-Length: 50")
		resp, body := readAnswer(t, conn)
		var e anthropicErr
		if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != 408 || e.Type != "error" ||
			e.Error.Type != "invalid_request_error" || !strings.HasPrefix(e.Error.Message, "invalid_request: ") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("the body deadline is cleared once the body is in: a stream may outlast it", func(t *testing.T) {
		t.Parallel()
		sp := pool(t, "a")
		sp.members[0].fake = newFake(t, fakeprovider.Options{Tokens: 8, TokenDelay: 60 * time.Millisecond})
		h := newHarnessOpts(t, harnessOpts{cfg: func(c *gateway.Config) { c.BodyTimeout = 100 * time.Millisecond }}, sp)
		res := h.post("/v1/chat/completions", `{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		if res.status != 200 || !strings.Contains(string(res.body), "data: [DONE]") {
			t.Fatalf("%d %s", res.status, res.body)
		}
	})
	t.Run("the body deadline holds over HTTP/2", func(t *testing.T) {
		t.Parallel()
		h := newHarnessOpts(t, harnessOpts{cfg: func(c *gateway.Config) { c.BodyTimeout = 200 * time.Millisecond }}, pool(t, "a"))
		srv := httptest.NewUnstartedServer(h.gw)
		srv.EnableHTTP2 = true
		srv.StartTLS()
		t.Cleanup(srv.Close)
		pr, pw := io.Pipe()
		t.Cleanup(func() { _ = pw.Close() })
		go func() { _, _ = io.WriteString(pw, `{"model":"gpt-x",`) }() // and no more
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", pr)
		req.Header.Set("Authorization", "Bearer "+callerKey)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.ProtoMajor != 2 || resp.StatusCode != 408 || decodeErr(t, b).Error.Code != "invalid_request" {
			t.Fatalf("%s %d %s", resp.Proto, resp.StatusCode, b)
		}
	})
	t.Run("a refusal before the body is read answers at once and closes the connection", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, pool(t, "a"))
		conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// An unknown key and a body that never comes: the answer must not
		// wait for the body (net/http would read what is left of it first).
		_, _ = io.WriteString(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: weir\r\nAuthorization: Bearer nope\r\nContent-Length: 1000\r\n\r\n")
		resp, body := readAnswer(t, conn)
		if resp.StatusCode != 401 || !resp.Close {
			t.Fatalf("%d close=%v %s", resp.StatusCode, resp.Close, body)
		}
	})
	t.Run("a declared length above max-body is refused before the body is read: 413", func(t *testing.T) {
		t.Parallel()
		h := newHarnessOpts(t, harnessOpts{cfg: func(c *gateway.Config) { c.MaxBodyBytes = 1000 }}, pool(t, "a"))
		conn := h.rawRequest("/v1/chat/completions", "Content-Length: 1001") // and no body
		resp, body := readAnswer(t, conn)
		if resp.StatusCode != 413 || decodeErr(t, body).Error.Code != "invalid_request" {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("a chunked body that grows past max-body: 413 in the Anthropic format", func(t *testing.T) {
		t.Parallel()
		h := newHarnessOpts(t, harnessOpts{cfg: func(c *gateway.Config) { c.MaxBodyBytes = 1000 }}, claude(t))
		big := `{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":"` + strings.Repeat("x", 2000) + `"}]}`
		req, _ := http.NewRequest(http.MethodPost, h.url+"/v1/messages", io.MultiReader(strings.NewReader(big))) // no length: chunked
		req.Header.Set("X-Api-Key", callerKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var e anthropicErr
		if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != 413 || e.Error.Type != "request_too_large" || h.fakes["a"].Total() != 0 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	})
	t.Run("a body of exactly max-body is served", func(t *testing.T) {
		t.Parallel()
		body := `{"model":"gpt-x","messages":[{"role":"user","content":"` + strings.Repeat("x", 3000) + `"}]}`
		h := newHarnessOpts(t, harnessOpts{cfg: func(c *gateway.Config) { c.MaxBodyBytes = int64(len(body)) }}, pool(t, "a"))
		if res := h.post("/v1/chat/completions", body); res.status != 200 {
			t.Fatalf("%d %s", res.status, res.body)
		}
		if got, _ := h.fakes["a"].LastRequest(); string(got.Body) != body {
			t.Fatalf("the member got %d bytes, want the %d sent", len(got.Body), len(body))
		}
	})
}
