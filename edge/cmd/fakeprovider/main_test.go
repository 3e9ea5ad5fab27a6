package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2/google"

	"weir.dev/listen/logflags/logtest"
)

func noEnv(string) string { return "" }

func TestRunRejectsBadFlags(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"-flavor", "palm", "-rpm", "-1", "-fault", "teapot", "-gcp-token-lifetime", "-1s"}, noEnv, io.Discard, &stderr)
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	code = run(context.Background(), []string{"-flavor", "gemini", "-gcp-key-file", filepath.Join(t.TempDir(), "k.json")}, noEnv, io.Discard, &stderr)
	if code != 2 {
		t.Fatalf("-gcp-key-file with -flavor gemini: exit %d, want 2", code)
	}
	for _, want := range []string{"unknown flavor", "-rpm must not be negative", "unknown fault", "-gcp-key-file needs -flavor vertex or all", "-gcp-token-lifetime must not be negative"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

func TestRunServesUntilCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr logtest.Buffer
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

// startRun runs the command with args until the test ends and returns its
// base URL and stdout.
func startRun(t *testing.T, args []string, getenv func(string) string) (string, *logtest.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr logtest.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, getenv, &stdout, &stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("exit %d; stderr %q", code, stderr.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("run did not return after cancellation")
		}
	})
	urlRE := regexp.MustCompile(`serving \w+ on (http://127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(10 * time.Second)
	for urlRE.FindStringSubmatch(stdout.String()) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no URL printed; stdout %q stderr %q", stdout.String(), stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return urlRE.FindStringSubmatch(stdout.String())[1], &stdout
}

func TestRunWritesGCPKeyFile(t *testing.T) {
	t.Parallel()
	keyFile := filepath.Join(t.TempDir(), "vertex.json")
	base, stdout := startRun(t, []string{"-addr", "127.0.0.1:0", "-flavor", "vertex", "-gcp-key-file", keyFile, "-tokens", "3", "-gcp-token-lifetime", "2m"}, noEnv)
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(keyFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	if strings.Contains(stdout.String(), "PRIVATE KEY") {
		t.Errorf("the private key was printed: %q", stdout.String())
	}
	var kf map[string]string
	if err := json.Unmarshal(key, &kf); err != nil || kf["token_uri"] != base+"/token" || kf["type"] != "service_account" {
		t.Fatalf("key file %v (%v)", kf, err)
	}
	conf, err := google.JWTConfigFromJSON(key, "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := conf.TokenSource(context.Background()).Token()
	if err != nil {
		t.Fatal(err)
	}
	if left := time.Until(tok.Expiry); left < time.Minute || left > 3*time.Minute {
		t.Errorf("token expires in %v, want about 2m (-gcp-token-lifetime)", left)
	}
	client := conf.Client(context.Background())
	resp, err := client.Post(base+"/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent",
		"application/json", strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"text":"Hello from the"`) {
		t.Errorf("vertex call with the written key: %d %s", resp.StatusCode, b)
	}
}

func TestRunServesGemini(t *testing.T) {
	t.Parallel()
	env := func(k string) string {
		if k == "FAKEPROVIDER_API_KEY" {
			return "AIza-env"
		}
		return ""
	}
	base, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-flavor", "gemini", "-fault", "quota-day"}, env)
	req, _ := http.NewRequest(http.MethodPost, base+"/v1beta/models/gemini-2.5-flash:generateContent", strings.NewReader(`{"contents":[{"parts":[{"text":"hi"}]}]}`))
	req.Header.Set("x-goog-api-key", "AIza-env")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || !strings.Contains(string(b), "GenerateRequestsPerDayPerProjectPerModel-FreeTier") {
		t.Errorf("daily quota fault: %d %s", resp.StatusCode, b)
	}
}
