package usage

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

func TestMemoryKeepsCopies(t *testing.T) {
	t.Parallel()
	m := NewMemory()
	rec := &telemetryv1.CallRecord{CallId: "c1"}
	if err := m.Record(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	rec.CallId = "changed" // the sink must not keep the caller's message
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	got := m.Wait(ctx, 1)
	if len(got) != 1 || got[0].CallId != "c1" {
		t.Fatalf("records %v", got)
	}
}

func TestJSONLines(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	j := NewJSONLines(&buf)
	for _, id := range []string{"a", "b"} {
		if err := j.Record(context.Background(), &telemetryv1.CallRecord{CallId: id, CostNanos: 7}); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"call_id":"a"`) || !strings.Contains(lines[1], `"cost_nanos":"7"`) {
		t.Fatalf("lines %q", lines)
	}
}
