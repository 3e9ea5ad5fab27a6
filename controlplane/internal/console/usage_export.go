package console

import (
	"net/http"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/usageexport"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/web"
)

// exportGranularities are the export's granularity values.
var exportGranularities = map[string]adminv1.UsageGranularity{
	"call":  adminv1.UsageGranularity_USAGE_GRANULARITY_CALL,
	"hour":  adminv1.UsageGranularity_USAGE_GRANULARITY_HOUR,
	"day":   adminv1.UsageGranularity_USAGE_GRANULARITY_DAY,
	"month": adminv1.UsageGranularity_USAGE_GRANULARITY_MONTH,
}

func (c usagePage) exportUsageCSV(w http.ResponseWriter, r *http.Request, s *session) {
	c.exportUsage(w, r, s, "csv")
}

func (c usagePage) exportUsageJSON(w http.ResponseWriter, r *http.Request, s *session) {
	c.exportUsage(w, r, s, "json")
}

// exportUsage streams ExportUsage as a download: the range as the usage
// page reads it, granularity=call|hour|day|month (default day, as the
// CLI). Each batch is written as it arrives, so the export has no cap. An
// error before the first batch is an error page; one after it aborts the
// response, so that a truncated download is never mistaken for a whole
// one.
func (c usagePage) exportUsage(w http.ResponseWriter, r *http.Request, s *session, format string) {
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
	out := usageexport.NewWriter(w, usageexport.Format(format))
	rc := http.NewResponseController(w)
	for ok := first; ok; ok = stream.Receive() {
		if err := out.Rows(stream.Msg().GetRows()); err != nil {
			c.abortExport(r, err)
		}
		_ = rc.Flush()
	}
	if err := stream.Err(); err != nil {
		c.abortExport(r, err)
	}
	if err := out.Close(); err != nil {
		c.abortExport(r, err)
	}
}

// abortExport ends a download midway: the connection is cut, so the client
// sees a failed download rather than a short file.
func (c usagePage) abortExport(r *http.Request, err error) {
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
