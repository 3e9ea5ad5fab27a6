package distrib

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"weir.dev/edge/internal/natstest"
	"weir.dev/listen/logflags/logtest"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing/natsnames"
)

func callRecord(i int) *telemetryv1.CallRecord {
	return &telemetryv1.CallRecord{CallId: fmt.Sprintf("call_%06d", i), TenantId: testTenant, Model: "gpt-x", CostNanos: int64(i)}
}

// streamCount is the number of messages in WEIR_USAGE (0 when missing).
func streamCount(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, natsnames.UsageStream)
	if err != nil {
		return 0
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// streamCallIDs reads every message of WEIR_USAGE in order and returns the
// call ids, checking each message's Nats-Msg-Id and subject.
func streamCallIDs(t *testing.T, js jetstream.JetStream) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, natsnames.UsageStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		var rec telemetryv1.CallRecord
		if err := proto.Unmarshal(m.Data, &rec); err != nil {
			t.Fatal(err)
		}
		if got := m.Header.Get(jetstream.MsgIDHeader); got != rec.GetCallId() {
			t.Fatalf("message %d: Nats-Msg-Id %q, call id %q", seq, got, rec.GetCallId())
		}
		if m.Subject != natsnames.UsageSubjectPrefix+testTenant {
			t.Fatalf("message %d on %q", seq, m.Subject)
		}
		ids = append(ids, rec.GetCallId())
	}
	return ids
}

func checkExactlyOnce(t *testing.T, ids []string, n int) {
	t.Helper()
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("call %s recorded twice", id)
		}
		seen[id] = true
	}
	for i := range n {
		if !seen[callRecord(i).GetCallId()] {
			t.Fatalf("call %d lost (%d of %d in the stream)", i, len(ids), n)
		}
	}
	if len(ids) != n {
		t.Fatalf("%d records in the stream, want %d", len(ids), n)
	}
}

func flush(t *testing.T, te *testEdge, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := te.Usage().Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// Records are published with Nats-Msg-Id = call id; the same record twice
// is stored once.
func TestUsagePublishedWithMsgIDAndDeduplicated(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	te := newTestEdge(t, ns.URL(), "edge-a", t.TempDir())
	te.start(t)
	ctx := context.Background()
	for i := range 10 {
		if err := te.Usage().Record(ctx, callRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := te.Usage().Record(ctx, callRecord(3)); err != nil { // a duplicate
		t.Fatal(err)
	}
	flush(t, te, 10*time.Second)
	js := mustJS(t, connect(t, ns.URL()))
	checkExactlyOnce(t, streamCallIDs(t, js), 10)
}

// NATS stops: records go on being taken (and wait in the journal); NATS
// returns: all are replayed in order, none lost, none twice.
func TestUsageSpooledWhileNATSDownAndReplayed(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	te := newTestEdge(t, ns.URL(), "edge-a", t.TempDir(), func(o *Options) { o.UsageSegment = 2048 })
	te.start(t)
	ctx := context.Background()
	const before, during, after = 50, 300, 50
	n := 0
	for ; n < before; n++ {
		if err := te.Usage().Record(ctx, callRecord(n)); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, te, 10*time.Second)
	ns.Stop()
	start := time.Now()
	for ; n < before+during; n++ {
		if err := te.Usage().Record(ctx, callRecord(n)); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("recording %d calls with NATS down took %v", during, d)
	}
	if !te.Usage().Pending() {
		t.Fatal("nothing pending with NATS down")
	}
	ns.Start()
	for ; n < before+during+after; n++ {
		if err := te.Usage().Record(ctx, callRecord(n)); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, te, 20*time.Second)
	ids := streamCallIDs(t, mustJS(t, connect(t, ns.URL())))
	checkExactlyOnce(t, ids, n)
	for i := 1; i < len(ids); i++ {
		if ids[i] < ids[i-1] {
			t.Fatalf("replayed out of order: %s after %s", ids[i], ids[i-1])
		}
	}
	// The journal's acked segments are gone.
	segs := countSegments(t, te.Usage().j)
	if segs > 2 {
		t.Fatalf("%d segments left after everything was acked", segs)
	}
}

// The journal survives a restart: records taken while NATS was down by an
// edge that then stopped are published by the next edge on the same disk.
func TestUsageJournalSurvivesRestart(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	dir := t.TempDir()
	ns.Stop()
	first := newTestEdge(t, ns.URL(), "edge-a", dir)
	first.start(t)
	for i := range 40 {
		if err := first.Usage().Record(context.Background(), callRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_ = first.Close(ctx) // NATS is down: the records stay in the journal

	ns.Start()
	second := newTestEdge(t, ns.URL(), "edge-a", dir)
	second.start(t)
	flush(t, second, 20*time.Second)
	checkExactlyOnce(t, streamCallIDs(t, mustJS(t, connect(t, ns.URL()))), 40)
}

func countSegments(t *testing.T, j *journal) int {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.segs)
}

// A record the server can never take (larger than its max payload) goes to
// the dead-letter file instead of blocking every record after it.
func TestUsageOversizedRecordDeadLettered(t *testing.T) {
	t.Parallel()
	ns := startNATS(t, func(o *natstest.Options) { o.MaxPayload = 4096 })
	dir := t.TempDir()
	logs := &logtest.Buffer{}
	te := newTestEdge(t, ns.URL(), "edge-a", dir, func(o *Options) { o.Log = slog.New(slog.NewJSONHandler(logs, nil)) })
	te.Usage().tenantName = func(id string) string { return map[string]string{testTenant: "acme"}[id] }
	te.start(t)
	ctx := context.Background()
	big := callRecord(1)
	big.Model = strings.Repeat("x", 8000)
	for _, rec := range []*telemetryv1.CallRecord{callRecord(0), big, callRecord(2)} {
		if err := te.Usage().Record(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, te, 10*time.Second)
	ids := streamCallIDs(t, mustJS(t, connect(t, ns.URL())))
	if len(ids) != 2 || ids[0] != callRecord(0).GetCallId() || ids[1] != callRecord(2).GetCallId() {
		t.Fatalf("stream holds %q", ids)
	}
	dead, err := os.ReadFile(filepath.Join(dir, "usage", deadFile))
	if err != nil || !strings.Contains(string(dead), big.GetCallId()) {
		t.Fatalf("dead-letter file: %v", err)
	}
	// The log line names the call and its tenant, as the gateway's do.
	want := `"msg":"call record cannot be published; kept in the dead-letter file","call_id":"` + big.GetCallId() + `","tenant":"acme","tenant_id":"` + testTenant + `"`
	if !strings.Contains(logs.String(), want) {
		t.Errorf("log does not hold %s:\n%s", want, logs.String())
	}
}
