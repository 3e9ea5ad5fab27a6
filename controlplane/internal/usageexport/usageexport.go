// Package usageexport writes usage rows (adminv1.UsageRow, as
// UsageService.ExportUsage streams them) as the usage export file of `weir
// usage export` and of the console's usage download: the two are the same
// file, byte for byte.
//
// CSV is a header ([Columns]) and then one line per row ([Record]): times
// in RFC 3339 UTC, counts as integers, money as exact decimal dollars
// (package money). JSON is one array with one protojson UsageRow (proto
// field names, unset fields included) per element, each on its own line.
//
// Rows are written batch by batch as they arrive, so that an export of any
// size streams. An export that fails midway is never mistaken for a whole
// one: the JSON array is closed only by [Writer.Close], so a truncated file
// is not valid JSON.
package usageexport

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

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

// Columns returns the CSV header, the columns of [Record] in order.
func Columns() []string {
	return []string{"bucket_start", "call_id", "tenant", "key", "record", "member", "managed", "model",
		"calls", "failed_calls", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
		"cost_usd", "estimated_cost_usd"}
}

// Record returns one row as the fields of a CSV line.
func Record(r *adminv1.UsageRow) []string {
	bucket := ""
	if r.GetBucketStart() != nil {
		bucket = r.GetBucketStart().AsTime().UTC().Format(time.RFC3339)
	}
	return []string{bucket, r.GetCallId(), r.GetTenant(), r.GetKey(), r.GetRecord(),
		r.GetMember(), strconv.FormatBool(r.GetManaged()), r.GetModel(), count(r.GetCalls()), count(r.GetFailedCalls()),
		count(r.GetInputTokens()), count(r.GetOutputTokens()), count(r.GetCacheReadTokens()), count(r.GetCacheWriteTokens()),
		money.FormatNanos(r.GetCostNanos()), money.FormatNanos(r.GetEstimatedCostNanos())}
}

func count(n int64) string { return strconv.FormatInt(n, 10) }

// Writer streams usage rows in one format. Call Rows for each batch, then
// Close once at the end; after an error, stop.
type Writer struct {
	w       io.Writer
	csv     *csv.Writer // nil for JSON
	started bool
	n       int // JSON elements written
}

// NewWriter returns a writer of format f to w; a Format other than CSV is
// written as JSON.
func NewWriter(w io.Writer, f Format) *Writer {
	u := &Writer{w: w}
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
	opts := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}
	for _, r := range rows {
		if u.csv != nil {
			if err := u.csv.Write(Record(r)); err != nil {
				return fmt.Errorf("write csv: %w", err)
			}
			continue
		}
		// protojson's own whitespace is deliberately unstable: compact it.
		b, err := opts.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode json: %w", err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, b); err != nil {
			return fmt.Errorf("encode json: %w", err)
		}
		sep := ",\n  "
		if u.n == 0 {
			sep = "\n  "
		}
		if _, err := io.WriteString(u.w, sep+compact.String()); err != nil {
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
