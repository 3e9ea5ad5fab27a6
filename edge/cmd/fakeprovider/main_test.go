package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the writer goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func noEnv(string) string { return "" }

func TestRunRejectsBadFlags(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"-flavor", "palm", "-rpm", "-1", "-fault", "teapot"}, noEnv, io.Discard, &stderr)
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	for _, want := range []string{"unknown flavor", "-rpm must not be negative", "unknown fault"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

func TestRunServesUntilCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	env := func(k string) string {
		if k == "FAKEPROVIDER_API_KEY" {
			return "sk-env"
		}
		return ""
	}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-flavor", "openai", "-rpm", "5", "-fault", "503"}, env, &stdout, &stderr)
	}()
	urlRE := regexp.MustCompile(`http://127\.0\.0\.1:\d+`)
	deadline := time.Now().Add(5 * time.Second)
	for urlRE.FindString(stdout.String()) == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no URL printed; stdout %q stderr %q", stdout.String(), stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	base := urlRE.FindString(stdout.String())

	post := func(key string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	// The sticky fault answers first, before the key is checked.
	if resp := post("sk-env"); resp.StatusCode != 503 || resp.Header.Get("x-ratelimit-limit-requests") != "5" {
		t.Errorf("status %d, headers %v", resp.StatusCode, resp.Header)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d; stderr %q", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after cancellation")
	}
	if !strings.Contains(stdout.String(), "stopped after 1 requests") {
		t.Errorf("stdout %q", stdout.String())
	}
}
