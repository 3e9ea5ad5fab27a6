package console

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/web"
)

// usagePage is the tenant's usage page (/console/usage) and its downloads
// (usage_export.go).
type usagePage struct{ *base }

// usagePresets are the range links of the usage page, in order; the first
// is the default.
var usagePresets = []struct {
	key, label string
	span       time.Duration
}{
	{"7d", "7 days", 7 * 24 * time.Hour},
	{"24h", "24 hours", 24 * time.Hour},
	{"30d", "30 days", 30 * 24 * time.Hour},
	{"90d", "90 days", 90 * 24 * time.Hour},
}

// maxUsageSpan is the longest range the admin API exports.
const maxUsageSpan = 400 * 24 * time.Hour

// usageRange is the time range a usage page or export covers: [start, end)
// with buckets of gran.
type usageRange struct {
	// preset is the preset's key ("" for a custom range); from and to the
	// custom range's dates as given.
	preset, from, to string
	start, end       time.Time
	gran             bucketSize
}

// parseUsageRange reads a range from a query: start and end as RFC 3339
// instants (the export links, pinned to what the page showed), else from
// and to as UTC days (both included), else a preset (range=24h…; default
// 7d). Presets end at the end of the current hour (24h) or day. Buckets
// are hours up to 2 days, days up to 92 days, months beyond. Problems are
// keyed "from" and "to".
func parseUsageRange(q url.Values, now time.Time) (usageRange, web.Problems) {
	var rng usageRange
	var p web.Problems
	now = now.UTC()
	switch {
	case q.Get("start") != "" || q.Get("end") != "":
		var err error
		if rng.start, err = time.Parse(time.RFC3339, q.Get("start")); err != nil {
			addProblem(&p, "from", "start is not an RFC 3339 time")
		}
		if rng.end, err = time.Parse(time.RFC3339, q.Get("end")); err != nil {
			addProblem(&p, "to", "end is not an RFC 3339 time")
		}
		rng.from, rng.to = rng.start.UTC().Format(time.DateOnly), rng.end.UTC().Add(-time.Nanosecond).Format(time.DateOnly)
	case q.Get("from") != "" || q.Get("to") != "":
		rng.from, rng.to = q.Get("from"), q.Get("to")
		from, err := time.Parse(time.DateOnly, rng.from)
		if err != nil {
			addProblem(&p, "from", "give a day as YYYY-MM-DD")
		}
		to, err2 := time.Parse(time.DateOnly, rng.to)
		if err2 != nil {
			addProblem(&p, "to", "give a day as YYYY-MM-DD")
		}
		if err == nil && err2 == nil && to.Before(from) {
			addProblem(&p, "to", "the last day must not be before the first")
		}
		rng.start, rng.end = from, to.AddDate(0, 0, 1)
	default:
		rng.preset = q.Get("range")
		span := time.Duration(0)
		for _, pr := range usagePresets {
			if pr.key == rng.preset {
				span = pr.span
			}
		}
		if span == 0 {
			rng.preset, span = usagePresets[0].key, usagePresets[0].span
		}
		if span <= 48*time.Hour {
			rng.end = now.Truncate(time.Hour).Add(time.Hour)
		} else {
			rng.end = bucketDay.floor(now).AddDate(0, 0, 1)
		}
		rng.start = rng.end.Add(-span)
		rng.from, rng.to = rng.start.Format(time.DateOnly), rng.end.Add(-time.Nanosecond).Format(time.DateOnly)
	}
	if !p.Any() {
		if !rng.start.Before(rng.end) {
			addProblem(&p, "to", "the range is empty")
		} else if rng.end.Sub(rng.start) > maxUsageSpan {
			addProblem(&p, "to", "the range is at most 400 days")
		}
	}
	switch span := rng.end.Sub(rng.start); {
	case span <= 48*time.Hour:
		rng.gran = bucketHour
	case span <= 92*24*time.Hour:
		rng.gran = bucketDay
	default:
		rng.gran = bucketMonth
	}
	return rng, p
}

// granularity is the API's granularity of a bucket size.
func (b bucketSize) granularity() adminv1.UsageGranularity {
	switch b {
	case bucketHour:
		return adminv1.UsageGranularity_USAGE_GRANULARITY_HOUR
	case bucketDay:
		return adminv1.UsageGranularity_USAGE_GRANULARITY_DAY
	}
	return adminv1.UsageGranularity_USAGE_GRANULARITY_MONTH
}

// exportURL links an export of the range, pinned to its instants.
func (rng usageRange) exportURL(tenant, ext, granularity string) string {
	return acctURL("/console/usage/export."+ext, tenant, url.Values{
		"start": {rng.start.UTC().Format(time.RFC3339)}, "end": {rng.end.UTC().Format(time.RFC3339)},
		"granularity": {granularity},
	})
}

// show draws the tenant's cost and calls over time by member, from
// ExportUsage rows summed here (at most maxUsageRows of them).
func (c usagePage) show(w http.ResponseWriter, r *http.Request, s *session) {
	if c.needTenant(w, r, s, "Usage", "usage") {
		return
	}
	rng, p := parseUsageRange(r.URL.Query(), c.now())
	v := web.UsageView{Tenant: s.tenant, Custom: rng.preset == "", From: rng.from, To: rng.to, Problems: p, Cap: maxUsageRows}
	for _, pr := range usagePresets {
		v.Presets = append(v.Presets, web.UsagePreset{
			Key: pr.key, Label: pr.label, Current: pr.key == rng.preset,
			Href: acctURL("/console/usage", s.tenant, url.Values{"range": {pr.key}}),
		})
	}
	if p.Any() {
		c.page(w, r, s, http.StatusUnprocessableEntity, "Usage", "usage", web.UsagePage(v))
		return
	}
	agg := newUsageAgg(rng.start, rng.end, rng.gran, maxUsageRows)
	err := c.readUsage(r, s, rng, rng.gran.granularity(), agg.add)
	if err != nil {
		if code := connect.CodeOf(err); code == connect.CodeInvalidArgument {
			ap, status := problemsOf(err)
			v.Problems = movedProblems(ap, map[string]string{"start_time": "from", "end_time": "to"})
			c.page(w, r, s, status, "Usage", "usage", web.UsagePage(v))
			return
		}
		c.fail(w, r, s, err)
		return
	}
	v.Shown = true
	v.Start, v.End, v.Granularity = rng.start, rng.end, rng.gran.String()
	v.Rows, v.Capped = agg.rows, agg.capped
	v.ExportCSV = rng.exportURL(s.tenant, "csv", rng.gran.String())
	v.ExportJSON = rng.exportURL(s.tenant, "json", rng.gran.String())
	v.ExportCallsCSV = rng.exportURL(s.tenant, "csv", "call")
	members := agg.members()
	costIn := chartInput{id: "usage-cost", title: "Cost by member", buckets: agg.buckets, gran: rng.gran,
		format: fmtUSD, tick: fmtUSD, empty: "No cost in this range."}
	callsIn := chartInput{id: "usage-calls", title: "Calls by member", buckets: agg.buckets, gran: rng.gran,
		format: callsText, tick: fmtCount, empty: "No calls in this range."}
	var total memberUsage
	for i, m := range members {
		costIn.series = append(costIn.series, chartSeriesInput{key: m.key(), label: m.label(), colour: i, values: m.cost})
		callsIn.series = append(callsIn.series, chartSeriesInput{key: m.key(), label: m.label(), colour: i, values: m.calls})
		v.Members = append(v.Members, usageRowOf(m, "s"+strconv.Itoa(i%chartColours)))
		total.totalCalls += m.totalCalls
		total.failed += m.failed
		total.totalCost += m.totalCost
		total.estimated += m.estimated
		total.input += m.input
		total.output += m.output
	}
	v.Total = usageRowOf(&total, "")
	v.Cost, v.Calls = buildChart(costIn), buildChart(callsIn)
	c.page(w, r, s, http.StatusOK, "Usage", "usage", web.UsagePage(v))
}

func usageRowOf(m *memberUsage, class string) web.UsageMemberRow {
	return web.UsageMemberRow{
		Key: m.key(), Label: m.label(), Class: class,
		Calls: fmtCount(m.totalCalls), Failed: fmtCount(m.failed), Input: fmtCount(m.input), Output: fmtCount(m.output),
		Cost: fmtUSD(m.totalCost), Estimated: fmtUSD(m.estimated),
	}
}

func fmtCount(n int64) string { return strconv.FormatInt(n, 10) }

func callsText(n int64) string {
	if n == 1 {
		return "1 call"
	}
	return fmtCount(n) + " calls"
}

// readUsage streams the tenant's usage rows of rng to each, until each
// returns false or the stream ends.
func (c usagePage) readUsage(r *http.Request, s *session, rng usageRange, g adminv1.UsageGranularity, each func([]*adminv1.UsageRow) bool) error {
	stream, err := s.api.Usage.ExportUsage(r.Context(), connect.NewRequest(&adminv1.ExportUsageRequest{
		Tenant: s.tenant, StartTime: timestamppb.New(rng.start), EndTime: timestamppb.New(rng.end), Granularity: g,
	}))
	if err != nil {
		return err
	}
	defer stream.Close()
	for stream.Receive() {
		if !each(stream.Msg().GetRows()) {
			return nil
		}
	}
	return stream.Err()
}

// movedProblems moves problems of API field paths to the form's fields.
func movedProblems(p web.Problems, names map[string]string) web.Problems {
	out := web.Problems{Message: p.Message}
	for _, fp := range p.List {
		if n, ok := names[fp.Field]; ok {
			fp.Field = n
		}
		out.List = append(out.List, fp)
		if fp.Field != "" {
			if out.Fields == nil {
				out.Fields = map[string]string{}
			}
			if old, ok := out.Fields[fp.Field]; ok {
				out.Fields[fp.Field] = old + "; " + fp.Message
			} else {
				out.Fields[fp.Field] = fp.Message
			}
		}
	}
	return out
}
