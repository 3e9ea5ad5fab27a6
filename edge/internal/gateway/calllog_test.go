package gateway_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"weir.dev/edge/internal/fakeprovider"
	"weir.dev/edge/internal/usage"
	"weir.dev/listen/logflags/logtest"
)

// logLines decodes a JSON log, one object a line.
func logLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for l := range strings.Lines(s) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// Every log line about a call carries its call id and tenant (name and
// id); none carries the caller's key, the member's key or the body.
func TestCallLogLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		level slog.Level
		sink  func(*usage.Memory) usage.Sink
		// want are the messages logged for the call, in order, each with
		// its own attributes to check.
		want []map[string]any
	}{
		{
			name:  "failover at debug level",
			level: slog.LevelDebug,
			want: []map[string]any{
				{"msg": "attempt", "level": "DEBUG", "attempt": 0.0, "record": "pool", "member": "a", "event": "server_error", "status": 503.0},
				{"msg": "attempt", "level": "DEBUG", "attempt": 1.0, "record": "pool", "member": "b", "event": "answered"},
			},
		},
		{
			name:  "failover at info level logs nothing",
			level: slog.LevelInfo,
		},
		{
			name:  "lost record",
			level: slog.LevelInfo,
			sink:  func(*usage.Memory) usage.Sink { return failSink{} },
			want:  []map[string]any{{"msg": "call record lost", "level": "ERROR", "err": "journal: no space left on device"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			logs := &logtest.Buffer{}
			h := newHarnessOpts(t, harnessOpts{sink: tc.sink, log: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: tc.level}))}, pool(t, "a", "b"))
			h.fakes["a"].Enqueue(fakeprovider.Status(503))
			res := h.post("/v1/chat/completions", `{"model":"gpt-x","messages":[{"role":"user","content":"hello secret body"}]}`)
			if res.status != 200 {
				t.Fatalf("%d %s", res.status, res.body)
			}
			id := res.header.Get("X-Weir-Call-Id")
			text := logs.String()
			for _, s := range []string{callerKey, providerKey, "secret body"} {
				if strings.Contains(text, s) {
					t.Fatalf("%q in the log:\n%s", s, text)
				}
			}
			lines := logLines(t, text)
			if len(lines) != len(tc.want) {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), len(tc.want), text)
			}
			for i, want := range tc.want {
				got := lines[i]
				want["call_id"], want["tenant"], want["tenant_id"] = id, "acme", "tenant-1"
				for k, v := range want {
					if got[k] != v {
						t.Errorf("line %d: %s = %v, want %v\n%s", i, k, got[k], v, text)
					}
				}
			}
		})
	}
}
