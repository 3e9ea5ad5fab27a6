package console

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/web"
)

// usageColumns are the CSV columns of a usage export, the same as `weir
// usage export`'s (controlplane/internal/cli/ops.go), in the same order.
func usageColumns() []string {
	return []string{"bucket_start", "call_id", "tenant", "key", "record", "member", "managed", "model",
		"calls", "failed_calls", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
		"cost_usd", "estimated_cost_usd"}
}

// usageCSVRecord is one row as `weir usage export` prints it.
func usageCSVRecord(r *adminv1.UsageRow) []string {
	bucket := ""
	if r.GetBucketStart() != nil {
		bucket = r.GetBucketStart().AsTime().UTC().Format(time.RFC3339)
	}
	return []string{bucket, r.GetCallId(), r.GetTenant(), r.GetKey(), r.GetRecord(),
		r.GetMember(), strconv.FormatBool(r.GetManaged()), r.GetModel(), fmtCount(r.GetCalls()), fmtCount(r.GetFailedCalls()),
		fmtCount(r.GetInputTokens()), fmtCount(r.GetOutputTokens()), fmtCount(r.GetCacheReadTokens()), fmtCount(r.GetCacheWriteTokens()),
		nanosText(r.GetCostNanos()), nanosText(r.GetEstimatedCostNanos())}
}

// exportGranularities are the export's granularity values.
var exportGranularities = map[string]adminv1.UsageGranularity{
	"call":  adminv1.UsageGranularity_USAGE_GRANULARITY_CALL,
	"hour":  adminv1.UsageGranularity_USAGE_GRANULARITY_HOUR,
	"day":   adminv1.UsageGranularity_USAGE_GRANULARITY_DAY,
	"month": adminv1.UsageGranularity_USAGE_GRANULARITY_MONTH,
}

func (c *Console) exportUsageCSV(w http.ResponseWriter, r *http.Request, s *session) {
	c.exportUsage(w, r, s, "csv")
}

func (c *Console) exportUsageJSON(w http.ResponseWriter, r *http.Request, s *session) {
	c.exportUsage(w, r, s, "json")
}

// exportUsage streams ExportUsage as a download: the range as the usage
// page reads it, granularity=call|hour|day|month (default day, as the
// CLI). Each batch is written as it arrives, so the export has no cap. An
// error before the first batch is an error page; one after it aborts the
// response, so that a truncated download is never mistaken for a whole
// one.
func (c *Console) exportUsage(w http.ResponseWriter, r *http.Request, s *session, format string) {
	if c.needTenant(w, r, s, "Usage", "usage") {
		return
	}
	q := r.URL.Query()
	rng, p := parseUsageRange(q, c.now())
	gname := q.Get("granularity")
	if gname == "" {
		gname = "day"
	}
	g, ok := exportGranularities[gname]
	if !ok {
		addProblem(&p, "granularity", "granularity must be call, hour, day or month")
	}
	if p.Any() {
		c.page(w, r, s, http.StatusUnprocessableEntity, "Usage", "usage", web.ErrorBody(http.StatusUnprocessableEntity, problemsSentence(p)))
		return
	}
	stream, err := s.api.Usage.ExportUsage(r.Context(), connect.NewRequest(&adminv1.ExportUsageRequest{
		Tenant: s.tenant, StartTime: timestamppb.New(rng.start), EndTime: timestamppb.New(rng.end), Granularity: g,
	}))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	defer stream.Close()
	first := stream.Receive()
	if !first {
		if err := stream.Err(); err != nil {
			c.fail(w, r, s, err)
			return
		}
	}
	name := "weir-usage-" + s.tenant + "-" + rng.start.UTC().Format("20060102T1504Z") + "-" +
		rng.end.UTC().Format("20060102T1504Z") + "-" + gname + "." + format
	h := w.Header()
	if format == "csv" {
		h.Set("Content-Type", "text/csv; charset=utf-8")
	} else {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	w.WriteHeader(http.StatusOK)
	out := newUsageWriter(w, format)
	rc := http.NewResponseController(w)
	for ok := first; ok; ok = stream.Receive() {
		if err := out.rows(stream.Msg().GetRows()); err != nil {
			c.abortExport(r, err)
		}
		_ = rc.Flush()
	}
	if err := stream.Err(); err != nil {
		c.abortExport(r, err)
	}
	if err := out.close(); err != nil {
		c.abortExport(r, err)
	}
}

// abortExport ends a download midway: the connection is cut, so the client
// sees a failed download rather than a short file.
func (c *Console) abortExport(r *http.Request, err error) {
	if r.Context().Err() == nil {
		c.d.Log.Error("console: usage export failed midway", "err", err)
	}
	panic(http.ErrAbortHandler)
}

// problemsSentence is the problems of p in one sentence.
func problemsSentence(p web.Problems) string {
	msg := p.Message
	for _, fp := range p.List {
		msg += " " + fp.Field + ": " + fp.Message + "."
	}
	return msg
}

// usageWriter writes usage rows as CSV (a header, then one line per row)
// or as one JSON array of protojson UsageRows, like the CLI.
type usageWriter struct {
	w       io.Writer
	csv     *csv.Writer
	started bool
	n       int
}

func newUsageWriter(w io.Writer, format string) *usageWriter {
	u := &usageWriter{w: w}
	if format == "csv" {
		u.csv = csv.NewWriter(w)
	}
	return u
}

func (u *usageWriter) start() error {
	if u.started {
		return nil
	}
	u.started = true
	if u.csv != nil {
		return u.csv.Write(usageColumns())
	}
	_, err := io.WriteString(u.w, "[")
	return err
}

func (u *usageWriter) rows(rows []*adminv1.UsageRow) error {
	if err := u.start(); err != nil {
		return err
	}
	opts := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}
	for _, r := range rows {
		if u.csv != nil {
			if err := u.csv.Write(usageCSVRecord(r)); err != nil {
				return err
			}
			continue
		}
		b, err := opts.Marshal(r)
		if err != nil {
			return err
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, b); err != nil {
			return err
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

func (u *usageWriter) close() error {
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
