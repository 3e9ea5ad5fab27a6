package usageexport

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

// header is the CSV header of `weir usage export` and of the console's
// download: a contract, so spelled out here rather than built.
const header = "bucket_start,call_id,tenant,key,record,member,managed,model,calls,failed_calls,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,cost_usd,estimated_cost_usd\n"

func testRows() []*adminv1.UsageRow {
	return []*adminv1.UsageRow{
		{BucketStart: timestamppb.New(time.Date(2026, 1, 2, 4, 0, 0, 0, time.FixedZone("CET", 3600))), CallId: "c1", Tenant: "acme",
			Key: "app", Record: "gpt", Member: "eu1", Managed: true, Model: "gpt-x", Calls: 3, FailedCalls: 1,
			InputTokens: 100, OutputTokens: 20, CacheReadTokens: 5, CacheWriteTokens: 2, CostNanos: 2_750_000_001, EstimatedCostNanos: 100_000_000},
		{Tenant: "acme", Key: `a,"b"`, Model: "m", CostNanos: 0},
	}
}

func TestCSV(t *testing.T) {
	t.Parallel()
	rows := testRows()
	var b bytes.Buffer
	w := NewWriter(&b, CSV)
	if err := w.Rows(rows[:1]); err != nil {
		t.Fatal(err)
	}
	// Each batch is out before the next arrives.
	if want := header + "2026-01-02T03:00:00Z,c1,acme,app,gpt,eu1,true,gpt-x,3,1,100,20,5,2,2.750000001,0.1\n"; b.String() != want {
		t.Fatalf("after one batch:\n%s\nwant\n%s", b.String(), want)
	}
	if err := w.Rows(nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Rows(rows[1:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := header +
		"2026-01-02T03:00:00Z,c1,acme,app,gpt,eu1,true,gpt-x,3,1,100,20,5,2,2.750000001,0.1\n" +
		`,,acme,"a,""b""",,,false,m,0,0,0,0,0,0,0,0` + "\n"
	if b.String() != want {
		t.Errorf("CSV:\n%s\nwant\n%s", b.String(), want)
	}
	if got := len(Record(rows[0])); got != len(Columns()) {
		t.Errorf("a record has %d fields, the header %d", got, len(Columns()))
	}
}

func TestEmpty(t *testing.T) {
	t.Parallel()
	for f, want := range map[Format]string{CSV: header, JSON: "[]\n"} {
		var b bytes.Buffer
		w := NewWriter(&b, f)
		if err := w.Rows(nil); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Errorf("%s with no rows: %q, want %q", f, b.String(), want)
		}
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	rows := testRows()
	var b bytes.Buffer
	w := NewWriter(&b, JSON)
	for _, batch := range [][]*adminv1.UsageRow{rows[:1], rows[1:]} {
		if err := w.Rows(batch); err != nil {
			t.Fatal(err)
		}
		// Until Close, the export is not valid JSON: a download or a
		// command cut short is never mistaken for a whole export.
		if json.Valid(b.Bytes()) {
			t.Fatalf("unclosed export is valid JSON: %s", b.String())
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	if len(lines) != 5 || lines[0] != "[" || lines[3] != "]" || lines[4] != "" ||
		!strings.HasPrefix(lines[1], `  {"bucket_start":"2026-01-02T03:00:00Z","call_id":"c1",`) || !strings.HasSuffix(lines[1], "},") ||
		!strings.HasPrefix(lines[2], `  {"bucket_start":null,`) {
		t.Errorf("JSON layout:\n%s", out)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &elems); err != nil {
		t.Fatal(err)
	}
	if len(elems) != len(rows) {
		t.Fatalf("%d elements, want %d", len(elems), len(rows))
	}
	for i, e := range elems {
		got := &adminv1.UsageRow{}
		if err := protojson.Unmarshal(e, got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(rows[i], got, protocmp.Transform()); diff != "" {
			t.Errorf("row %d (-want +got):\n%s", i, diff)
		}
	}
	// Proto field names, unset fields included.
	if !strings.Contains(lines[2], `"call_id":"","tenant":"acme"`) || !strings.Contains(lines[2], `"managed":false`) {
		t.Errorf("row 2: %s", lines[2])
	}
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

func TestWriteError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for _, f := range []Format{CSV, JSON} {
		w := NewWriter(failWriter{boom}, f)
		if err := w.Rows(testRows()); !errors.Is(err, boom) {
			t.Errorf("%s: Rows error %v, want %v", f, err, boom)
		}
	}
}
