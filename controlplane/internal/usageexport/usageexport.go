// Package usageexport writes usage rows (adminv1.UsageRow, as
// UsageService.ExportUsage streams them) as the usage export file of `weir
// usage export` and of the console's usage download: the two are the same
// file, byte for byte.
//
// Both formats have one set of fields ([Columns]), with the same names and
// types:
//
//   - bucket_start: RFC 3339 UTC time ("" when the row has none);
//   - call_id, tenant, key, record, member, model: text;
//   - managed: true or false;
//   - calls, failed_calls, input_tokens, output_tokens, cache_read_tokens,
//     cache_write_tokens: integers;
//   - cost_usd, estimated_cost_usd: exact decimal dollars ("2.750000001"),
//     never rounded through a float (package money).
//
// CSV is a header ([Columns]) and then one line per row. A text cell that
// starts with '=', '+', '-', '@', a tab or a carriage return is written with
// a leading "'" so that a spreadsheet does not run it as a formula (DESIGN
// §5). JSON is one array with one object per row, each on its own line, its
// keys in [Columns] order: text as JSON strings (as stored, never altered),
// integers and dollar amounts as JSON numbers (the dollar amount written
// from its exact decimal digits, e.g. 2.750000001), managed as a boolean.
//
// Rows are written batch by batch as they arrive, so that an export of any
// size streams. An export that fails midway is never mistaken for a whole
// one: the JSON array is closed only by [Writer.Close], so a truncated file
// is not valid JSON.
package usageexport

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"weir.dev/controlplane/internal/money"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

// Format is the file format of an export.
type Format string

// The formats of an export.
const (
	CSV  Format = "csv"
	JSON Format = "json"
)

// Columns returns the field names of both formats, in order: the CSV
// header and the keys of each JSON object.
func Columns() []string {
	fs := fields()
	cols := make([]string, len(fs))
	for i, f := range fs {
		cols[i] = f.name
	}
	return cols
}

// kind is the type of a field, which says how each format writes it.
type kind int

const (
	text    kind = iota // a string; neutralised in CSV
	integer             // decimal digits
	boolean             // true or false
	dollars             // an exact decimal dollar amount
)

// field is one field of a row: its name, its type and how to read it.
type field struct {
	name  string
	kind  kind
	value func(r *adminv1.UsageRow) string
}

// fields returns the fields of a row in order. Every value is the field's
// exact text: integers and amounts in decimal, booleans as true or false.
func fields() []field {
	return []field{
		{"bucket_start", text, func(r *adminv1.UsageRow) string {
			if r.GetBucketStart() == nil {
				return ""
			}
			return r.GetBucketStart().AsTime().UTC().Format(time.RFC3339)
		}},
		{"call_id", text, (*adminv1.UsageRow).GetCallId},
		{"tenant", text, (*adminv1.UsageRow).GetTenant},
		{"key", text, (*adminv1.UsageRow).GetKey},
		{"record", text, (*adminv1.UsageRow).GetRecord},
		{"member", text, (*adminv1.UsageRow).GetMember},
		{"managed", boolean, func(r *adminv1.UsageRow) string { return strconv.FormatBool(r.GetManaged()) }},
		{"model", text, (*adminv1.UsageRow).GetModel},
		{"calls", integer, func(r *adminv1.UsageRow) string { return count(r.GetCalls()) }},
		{"failed_calls", integer, func(r *adminv1.UsageRow) string { return count(r.GetFailedCalls()) }},
		{"input_tokens", integer, func(r *adminv1.UsageRow) string { return count(r.GetInputTokens()) }},
		{"output_tokens", integer, func(r *adminv1.UsageRow) string { return count(r.GetOutputTokens()) }},
		{"cache_read_tokens", integer, func(r *adminv1.UsageRow) string { return count(r.GetCacheReadTokens()) }},
		{"cache_write_tokens", integer, func(r *adminv1.UsageRow) string { return count(r.GetCacheWriteTokens()) }},
		{"cost_usd", dollars, func(r *adminv1.UsageRow) string { return money.FormatNanos(r.GetCostNanos()) }},
		{"estimated_cost_usd", dollars, func(r *adminv1.UsageRow) string { return money.FormatNanos(r.GetEstimatedCostNanos()) }},
	}
}

// Record returns one row as the cells of a CSV line, text cells
// neutralised.
func Record(r *adminv1.UsageRow) []string { return record(fields(), r) }

// record is Record with the fields given.
func record(fs []field, r *adminv1.UsageRow) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		v := f.value(r)
		if f.kind == text {
			v = Neutralise(v)
		}
		out[i] = v
	}
	return out
}

// Neutralise returns a CSV text cell that a spreadsheet will not run as a
// formula: s with a leading "'" when it starts with '=', '+', '-', '@', a
// tab or a carriage return (DESIGN §5); else s.
func Neutralise(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// object returns one row as a compact JSON object with its keys in
// Columns order. Numbers are written from their exact decimal text; that
// text is checked to be a JSON number, so a malformed one is an error rather
// than a corrupt file.
func object(fs []field, r *adminv1.UsageRow) ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(f.name)
		b.Write(name)
		b.WriteByte(':')
		v := f.value(r)
		switch f.kind {
		case text:
			q, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("encode %s: %w", f.name, err)
			}
			b.Write(q)
		case boolean:
			b.WriteString(v)
		default:
			if !isDecimal(v) {
				return nil, fmt.Errorf("encode %s: %q is not a decimal number", f.name, v)
			}
			b.WriteString(v)
		}
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// isDecimal reports whether s is an optional '-', digits, and optionally
// '.' and digits: a JSON number literal written without exponent.
func isDecimal(s string) bool {
	s = strings.TrimPrefix(s, "-")
	whole, frac, dot := strings.Cut(s, ".")
	digits := func(d string) bool {
		for i := 0; i < len(d); i++ {
			if d[i] < '0' || d[i] > '9' {
				return false
			}
		}
		return d != ""
	}
	return digits(whole) && (whole == "0" || whole[0] != '0') && (!dot || digits(frac))
}

func count(n int64) string { return strconv.FormatInt(n, 10) }

// Writer streams usage rows in one format. Call Rows for each batch, then
// Close once at the end; after an error, stop.
type Writer struct {
	w       io.Writer
	csv     *csv.Writer // nil for JSON
	fields  []field
	started bool
	n       int // JSON elements written
}

// NewWriter returns a writer of format f to w; a Format other than CSV is
// written as JSON.
func NewWriter(w io.Writer, f Format) *Writer {
	u := &Writer{w: w, fields: fields()}
	if f == CSV {
		u.csv = csv.NewWriter(w)
	}
	return u
}

// start writes the CSV header or the opening bracket, once.
func (u *Writer) start() error {
	if u.started {
		return nil
	}
	u.started = true
	if u.csv != nil {
		return u.csv.Write(Columns())
	}
	_, err := io.WriteString(u.w, "[")
	return err
}

// Rows writes one batch, flushed to the underlying writer before it
// returns.
func (u *Writer) Rows(rows []*adminv1.UsageRow) error {
	if err := u.start(); err != nil {
		return err
	}
	for _, r := range rows {
		if u.csv != nil {
			if err := u.csv.Write(record(u.fields, r)); err != nil {
				return fmt.Errorf("write csv: %w", err)
			}
			continue
		}
		b, err := object(u.fields, r)
		if err != nil {
			return fmt.Errorf("encode json: %w", err)
		}
		sep := ",\n  "
		if u.n == 0 {
			sep = "\n  "
		}
		if _, err := io.WriteString(u.w, sep+string(b)); err != nil {
			return err
		}
		u.n++
	}
	if u.csv != nil {
		u.csv.Flush()
		return u.csv.Error()
	}
	return nil
}

// Close ends the export: for CSV, the header alone when there were no rows;
// for JSON, the closing bracket ("[]" when there were no rows).
func (u *Writer) Close() error {
	if err := u.start(); err != nil {
		return err
	}
	if u.csv != nil {
		u.csv.Flush()
		return u.csv.Error()
	}
	end := "\n]\n"
	if u.n == 0 {
		end = "]\n"
	}
	_, err := io.WriteString(u.w, end)
	return err
}
