package usageexport

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
	// The contract: the CSV's field names, numbers as JSON numbers, dollars
	// as exact decimals, text as strings.
	want := "[\n" +
		`  {"bucket_start":"2026-01-02T03:00:00Z","call_id":"c1","tenant":"acme","key":"app","record":"gpt","member":"eu1","managed":true,"model":"gpt-x",` +
		`"calls":3,"failed_calls":1,"input_tokens":100,"output_tokens":20,"cache_read_tokens":5,"cache_write_tokens":2,"cost_usd":2.750000001,"estimated_cost_usd":0.1},` + "\n" +
		`  {"bucket_start":"","call_id":"","tenant":"acme","key":"a,\"b\"","record":"","member":"","managed":false,"model":"m",` +
		`"calls":0,"failed_calls":0,"input_tokens":0,"output_tokens":0,"cache_read_tokens":0,"cache_write_tokens":0,"cost_usd":0,"estimated_cost_usd":0}` + "\n" +
		"]\n"
	if b.String() != want {
		t.Errorf("JSON:\n%s\nwant\n%s", b.String(), want)
	}
}

// TestFormatsAgree checks that the CSV and the JSON of the same rows have
// the same field names in the same order and the same values: each JSON
// value, read as a JSON number, string or boolean, spells exactly the CSV
// cell (text that needs no neutralising), and a cost is exact in both.
func TestFormatsAgree(t *testing.T) {
	t.Parallel()
	rows := append(testRows(), &adminv1.UsageRow{Tenant: "t", Model: "m", CostNanos: 9_007_199_254_740_993, InputTokens: 9_007_199_254_740_993})
	var c, j bytes.Buffer
	for f, buf := range map[Format]*bytes.Buffer{CSV: &c, JSON: &j} {
		w := NewWriter(buf, f)
		if err := w.Rows(rows); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	records, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	jsonText := j.String()
	dec := json.NewDecoder(&j)
	dec.UseNumber()
	var objs []map[string]any
	if err := dec.Decode(&objs); err != nil {
		t.Fatal(err)
	}
	if len(records) != len(rows)+1 || len(objs) != len(rows) {
		t.Fatalf("%d CSV lines and %d JSON objects for %d rows", len(records), len(objs), len(rows))
	}
	header := records[0]
	for i, obj := range objs {
		keys := keysInOrder(t, strings.TrimSuffix(strings.TrimSpace(strings.Split(jsonText, "\n")[i+1]), ","))
		if diff := cmp.Diff(header, keys); diff != "" {
			t.Errorf("row %d: JSON keys differ from the CSV header (-csv +json):\n%s", i, diff)
		}
		for col, name := range header {
			var got string
			switch v := obj[name].(type) {
			case json.Number:
				got = v.String()
			case string:
				got = v
			case bool:
				got = strconv.FormatBool(v)
			default:
				t.Errorf("row %d %s: JSON type %T", i, name, v)
			}
			if got != records[i+1][col] {
				t.Errorf("row %d %s: JSON %q, CSV %q", i, name, got, records[i+1][col])
			}
		}
	}
	if got := objs[2]["cost_usd"].(json.Number).String(); got != "9007199.254740993" {
		t.Errorf("large cost %s, want the exact 9007199.254740993 (2^53+1 nanos, which a float64 cannot hold)", got)
	}
}

// keysInOrder returns the keys of the JSON object obj in order.
func keysInOrder(t *testing.T, obj string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", obj)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestCSVNeutralisesFormulas checks DESIGN §5: a text cell a spreadsheet
// would run as a formula is written with a leading quote; JSON keeps the
// text as it is.
func TestCSVNeutralisesFormulas(t *testing.T) {
	t.Parallel()
	row := &adminv1.UsageRow{Tenant: "acme", Key: "-key", Record: "@rec", Member: "+m", Model: "=HYPERLINK(\"http://x\")", CallId: "\tc", CostNanos: 1}
	var c bytes.Buffer
	w := NewWriter(&c, CSV)
	if err := w.Rows([]*adminv1.UsageRow{row, {Model: "\rm"}}); err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(strings.NewReader(c.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := records[1]
	for col, want := range map[int]string{1: "'\tc", 2: "acme", 3: "'-key", 4: "'@rec", 5: "'+m", 7: `'=HYPERLINK("http://x")`, 14: "0.000000001"} {
		if got[col] != want {
			t.Errorf("CSV %s = %q, want %q", Columns()[col], got[col], want)
		}
	}
	if m := records[2][7]; m != "'\rm" {
		t.Errorf("model starting with CR: %q", m)
	}
	var j bytes.Buffer
	jw := NewWriter(&j, JSON)
	if err := jw.Rows([]*adminv1.UsageRow{row}); err != nil {
		t.Fatal(err)
	}
	if err := jw.Close(); err != nil {
		t.Fatal(err)
	}
	var objs []map[string]any
	if err := json.Unmarshal(j.Bytes(), &objs); err != nil {
		t.Fatal(err)
	}
	if objs[0]["model"] != row.GetModel() || objs[0]["key"] != "-key" {
		t.Errorf("JSON altered text: %v", objs[0])
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
