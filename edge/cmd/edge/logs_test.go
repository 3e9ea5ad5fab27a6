package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"weir.dev/edge/internal/fakeprovider"
	"weir.dev/listen/logflags/logtest"
)

func TestLogFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		args         []string
		env          map[string]string
		format, lvl  string
		wantErrorFor string
	}{
		{name: "defaults", format: "json", lvl: "info"},
		{name: "environment", env: map[string]string{"WEIR_LOG_FORMAT": "text", "WEIR_LOG_LEVEL": "debug"}, format: "text", lvl: "debug"},
		{name: "flags beat environment", args: []string{"--log-format", "json", "--log-level", "error"}, env: map[string]string{"WEIR_LOG_FORMAT": "text", "WEIR_LOG_LEVEL": "debug"}, format: "json", lvl: "error"},
		{name: "bad format", args: []string{"--log-format", "logfmt"}, wantErrorFor: "--log-format"},
		{name: "bad level", env: map[string]string{"WEIR_LOG_LEVEL": "trace"}, wantErrorFor: "--log-level"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := parse(append([]string{"--config", "x.json"}, tc.args...), func(k string) string { return tc.env[k] }, io.Discard)
			if tc.wantErrorFor != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrorFor) {
					t.Fatalf("parse = %v, want an error about %s", err, tc.wantErrorFor)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Log.Format != tc.format || c.Log.Level != tc.lvl {
				t.Errorf("log format %q level %q, want %q %q", c.Log.Format, c.Log.Level, tc.format, tc.lvl)
			}
		})
	}
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"--config", "x.json", "--log-level", "loud"}, func(string) string { return "" }, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), `--log-level "loud"`) {
		t.Errorf("run with a bad level = %d, %q", code, stderr.String())
	}
}

const (
	testCallerKey  = "k-test"
	limitedKey     = "k-limited"
	testMemberKey  = "sk-member-secret"
	testTenantName = "acme"
)

// failoverConfig writes a standalone config: tenant acme (id t-1) with
// keys k-test and k-limited (1 call a minute), and the record "pool" whose
// member a (order 1) is served at upA and b (order 2) at upB.
func failoverConfig(t *testing.T, upA, upB string) string {
	t.Helper()
	sum := func(k string) string { s := sha256.Sum256([]byte(k)); return base64.StdEncoding.EncodeToString(s[:]) }
	cfg := fmt.Sprintf(`{"tenants":[{"version":"1","tenant":{"id":"t-1","name":%q},
 "apiKeys":[{"id":"k","name":"k","sha256":%q},{"id":"k2","name":"limited","sha256":%q,"limits":{"rpm":"1"}}],
 "records":[{"id":"r","name":"pool","tenantId":"t-1","wireFormat":"WIRE_FORMAT_OPENAI",
  "models":[{"name":"gpt-x","kind":"MODEL_KIND_CHAT"}],"auth":{"kind":"AUTH_KIND_API_KEY","header":"authorization"},"keySecret":"s",
  "members":[{"name":"a","baseUrl":"%s/v1","order":1},{"name":"b","baseUrl":"%s/v1","order":2}]}]}],
 "secrets":[{"name":"s","tenantId":"t-1","hosts":["127.0.0.1"],"env":"TEST_KEY"}]}`, testTenantName, sum(testCallerKey), sum(limitedKey), upA, upB)
	p := filepath.Join(t.TempDir(), "weir.json")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startFailoverEdge runs an edge over failoverConfig with member a
// answering every call 503, until the test ends, logging to logs with
// the extra args. It returns the gateway and admin addresses.
func startFailoverEdge(t *testing.T, logs io.Writer, getenv func(string) string, args ...string) (gw, admin string) {
	t.Helper()
	a := fakeprovider.New(fakeprovider.Options{APIKey: testMemberKey})
	b := fakeprovider.New(fakeprovider.Options{APIKey: testMemberKey})
	for _, f := range []*fakeprovider.Server{a, b} {
		if _, err := f.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
	}
	a.SetSticky(fakeprovider.Status(503))
	env := func(k string) string {
		if k == "TEST_KEY" {
			return testMemberKey
		}
		return getenv(k)
	}
	gw, admin = freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"--config", failoverConfig(t, a.URL(), b.URL()), "--listen", gw, "--admin-listen", admin, "--shutdown-grace", "1s"}, args...),
			env, io.Discard, logs)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	var none bytes.Buffer
	waitReady(t, admin, &none)
	return gw, admin
}

// call posts a chat completion (streamed or not) with key to the edge at
// gw and returns its status and call id, reading the answer whole.
func call(t *testing.T, gw, key string, stream bool) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+gw+"/v1/chat/completions",
		strings.NewReader(fmt.Sprintf(`{"model":"gpt-x","stream":%v,"messages":[{"role":"user","content":"a private prompt"}]}`, stream)))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("X-Weir-Call-Id")
}

// The binary logs JSON by default; at debug level a call that fails over
// logs each attempt with its call id and tenant, and no secret or prompt.
func TestCallLogJSON(t *testing.T) {
	t.Parallel()
	logs := &logtest.Buffer{}
	gw, _ := startFailoverEdge(t, logs, func(k string) string { return map[string]string{"WEIR_LOG_LEVEL": "debug"}[k] })
	status, id := call(t, gw, testCallerKey, false)
	if status != 200 || id == "" {
		t.Fatalf("call = %d, id %q", status, id)
	}
	text := logs.String()
	for _, s := range []string{testCallerKey, testMemberKey, "private prompt"} {
		if strings.Contains(text, s) {
			t.Fatalf("%q in the log:\n%s", s, text)
		}
	}
	var attempts []string
	for l := range strings.Lines(text) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", l)
		}
		if m["call_id"] != id {
			continue
		}
		if m["tenant"] != testTenantName || m["tenant_id"] != "t-1" {
			t.Errorf("line about call %s without its tenant: %s", id, l)
		}
		if m["msg"] == "attempt" {
			attempts = append(attempts, fmt.Sprintf("%v:%v", m["member"], m["event"]))
		}
	}
	if got := strings.Join(attempts, " "); got != "a:server_error b:answered" {
		t.Errorf("attempts logged: %q, want a:server_error b:answered\n%s", got, text)
	}
}
