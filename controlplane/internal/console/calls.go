package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/words"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/web"
)

// callsPage is the tenant's calls (/console/calls) and one call's drawer
// (/console/calls/{id}).
type callsPage struct{ *base }

// callsPageSize is the number of calls per page.
const callsPageSize = 50

// callOutcomeChoices are the outcome filter's values: the words of every
// call outcome (answered, failed, unknown, refused, cancelled).
var callOutcomeChoices = words.All[telemetryv1.CallOutcome]()

// callSinceChoices are the "within" filter's values.
var callSinceChoices = []struct {
	value, label string
	d            time.Duration
}{
	{"15m", "15 minutes", 15 * time.Minute},
	{"1h", "1 hour", time.Hour},
	{"24h", "24 hours", 24 * time.Hour},
	{"7d", "7 days", 7 * 24 * time.Hour},
	{"30d", "30 days", 30 * 24 * time.Hour},
}

// callFilterParams are the query parameters of the filter, in the form's
// order.
var callFilterParams = []string{"model", "outcome", "record", "member", "key", "error_code", "since", "from", "to"}

// show lists the tenant's calls newest first, filtered by the GET
// form (every filter ListCalls has), a page at a time.
func (c callsPage) show(w http.ResponseWriter, r *http.Request, s *session) {
	if c.needTenant(w, r, s, "Calls", "calls") {
		return
	}
	q := r.URL.Query()
	v, req, p := callsQuery(q, s.tenant)
	if p.Any() {
		v.Problems = p
		c.page(w, r, s, http.StatusUnprocessableEntity, "Calls", "calls", web.CallsPage(v))
		return
	}
	resp, err := s.api.Calls.ListCalls(r.Context(), connect.NewRequest(req))
	if err != nil {
		if connect.CodeOf(err) == connect.CodeInvalidArgument {
			ap, status := problemsOf(err)
			v.Problems = movedProblems(ap, map[string]string{"start_time": "from", "end_time": "to"})
			c.page(w, r, s, status, "Calls", "calls", web.CallsPage(v))
			return
		}
		c.fail(w, r, s, err)
		return
	}
	v.Shown = true
	v.NextURL, v.FirstURL = callsPageLinks(q, s.tenant, resp.Msg.GetNextPageToken(), req.PageToken != "")
	v.Calls = callRows(resp.Msg.GetCalls(), s.tenant, r.URL.RequestURI())
	c.page(w, r, s, http.StatusOK, "Calls", "calls", web.CallsPage(v))
}

// callsQuery reads the calls page's query q: the view with the filter and
// its choices, the ListCalls request of tenant it asks for, and the
// problems of the filter's values (outcome, since, from, to, in that
// order). The request is only to be sent when there are none.
func callsQuery(q url.Values, tenant string) (web.CallsView, *adminv1.ListCallsRequest, web.Problems) {
	f := web.CallFilter{
		Model: strings.TrimSpace(q.Get("model")), Outcome: q.Get("outcome"), Record: strings.TrimSpace(q.Get("record")),
		Member: strings.TrimSpace(q.Get("member")), Key: strings.TrimSpace(q.Get("key")),
		ErrorCode: strings.TrimSpace(q.Get("error_code")), Since: q.Get("since"), From: q.Get("from"), To: q.Get("to"),
	}
	v := web.CallsView{Tenant: tenant, Filter: f}
	req := &adminv1.ListCallsRequest{
		Tenant: tenant, Model: f.Model, Record: f.Record, Member: f.Member, Key: f.Key, ErrorCode: f.ErrorCode,
		PageSize: callsPageSize, PageToken: q.Get("page_token"),
	}
	var p web.Problems
	v.Outcomes = callsOutcome(f, req, &p)
	v.Since = callsWindow(f, req, &p)
	return v, req, p
}

// callsOutcome sets req's outcome from the filter's and returns the
// outcome choices with the filter's selected; an outcome that is not a
// call outcome's word is a problem added to p.
func callsOutcome(f web.CallFilter, req *adminv1.ListCallsRequest, p *web.Problems) []web.Option {
	opts := []web.Option{{Value: "", Label: "any", Selected: f.Outcome == ""}}
	known := f.Outcome == ""
	for _, o := range callOutcomeChoices {
		opts = append(opts, web.Option{Value: o, Label: o, Selected: o == f.Outcome})
	}
	if o, ok := words.Parse[telemetryv1.CallOutcome](f.Outcome); ok {
		req.Outcome, known = o, true
	}
	if !known {
		addProblem(p, "outcome", "unknown outcome")
	}
	return opts
}

// callsWindow sets req's time window from the filter — since, one of
// callSinceChoices; from, the start of a day; to, the end of one — and
// returns the "within" choices with the filter's selected. Values it
// cannot read are problems added to p, in that order.
func callsWindow(f web.CallFilter, req *adminv1.ListCallsRequest, p *web.Problems) []web.Option {
	opts := []web.Option{{Value: "", Label: "any time", Selected: f.Since == ""}}
	known := f.Since == ""
	for _, o := range callSinceChoices {
		opts = append(opts, web.Option{Value: o.value, Label: o.label, Selected: o.value == f.Since})
		if o.value == f.Since {
			req.Since, known = durationpb.New(o.d), true
		}
	}
	if !known {
		addProblem(p, "since", "unknown duration")
	}
	if f.From != "" {
		if t, err := time.Parse(time.DateOnly, f.From); err != nil {
			addProblem(p, "from", "give a day as YYYY-MM-DD")
		} else {
			req.StartTime = timestamppb.New(t)
		}
	}
	if f.To != "" {
		if t, err := time.Parse(time.DateOnly, f.To); err != nil {
			addProblem(p, "to", "give a day as YYYY-MM-DD")
		} else {
			req.EndTime = timestamppb.New(t.AddDate(0, 0, 1))
		}
	}
	return opts
}

// callsPageLinks returns the links of the calls page with the filter of
// query q: the next page's, when nextToken is not "", and the first
// page's, when this page is a later one.
func callsPageLinks(q url.Values, tenant, nextToken string, later bool) (nextURL, firstURL string) {
	filter := url.Values{}
	for _, name := range callFilterParams {
		filter.Set(name, q.Get(name))
	}
	if nextToken != "" {
		next := url.Values{"page_token": {nextToken}}
		for k, vs := range filter {
			next[k] = vs
		}
		nextURL = acctURL("/console/calls", tenant, next)
	}
	if later {
		firstURL = acctURL("/console/calls", tenant, filter)
	}
	return nextURL, firstURL
}

// callRows are the table rows of calls, each linking to its call's page,
// which leads back to back.
func callRows(calls []*adminv1.Call, tenant, back string) []web.CallRow {
	var rows []web.CallRow
	for _, call := range calls {
		rec := call.GetRecord()
		row := web.CallRow{
			ID: rec.GetCallId(), Model: rec.GetModel(), Key: call.GetKey(),
			ServedBy: servedBy(rec), LastTried: lastTried(rec), Status: callStatusText(rec.GetStatus()),
			Outcome: callOutcomeName(rec.GetOutcome()), OutcomeClass: outcomeClass(rec.GetOutcome()),
			ErrorCode: rec.GetErrorCode(), Attempts: strconv.Itoa(len(rec.GetAttempts())),
			Duration: callDuration(rec.GetDuration()), Cost: fmtUSD(rec.GetCostNanos()),
			Href: acctURL("/console/calls/"+url.PathEscape(rec.GetCallId()), tenant, url.Values{"back": {back}}),
		}
		if rec.GetStartedAt() != nil {
			row.Started = rec.GetStartedAt().AsTime()
		}
		rows = append(rows, row)
	}
	return rows
}

// call is a call's drawer: served-by, every attempt, the cache report.
// A call of another tenant is NotFound, like a call that does not exist.
func (c callsPage) call(w http.ResponseWriter, r *http.Request, s *session) {
	if c.needTenant(w, r, s, "Call", "calls") {
		return
	}
	id := r.PathValue("id")
	resp, err := s.api.Calls.GetCall(r.Context(), connect.NewRequest(&adminv1.GetCallRequest{Tenant: s.tenant, CallId: id}))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	call := resp.Msg.GetCall()
	rec := call.GetRecord()
	back := acctURL("/console/calls", s.tenant, nil)
	if b := r.URL.Query().Get("back"); b != "" {
		if sn := safeNext(b); sn != "/console/" {
			back = sn
		}
	}
	v := web.CallView{
		ID: rec.GetCallId(), Back: back,
		Duration: callDuration(rec.GetDuration()), Model: rec.GetModel(), Endpoint: rec.GetEndpoint(), Stream: rec.GetStream(),
		Key: call.GetKey(), Edge: rec.GetEdgeId(), Record: rec.GetRecordName(), Member: rec.GetMemberName(),
		Answered: answered(rec), Result: callResult(rec),
		Status: callStatusText(rec.GetStatus()), Outcome: callOutcomeName(rec.GetOutcome()), OutcomeClass: outcomeClass(rec.GetOutcome()),
		ErrorCode: rec.GetErrorCode(), Cost: fmtUSD(rec.GetCostNanos()), Reserved: fmtUSD(rec.GetReservedNanos()), CostFlagged: rec.GetCostFlagged(),
		Input: fmtCount(rec.GetUsage().GetInputTokens()), Output: fmtCount(rec.GetUsage().GetOutputTokens()),
		CacheRead: fmtCount(rec.GetUsage().GetCacheReadTokens()), CacheWrite: fmtCount(rec.GetUsage().GetCacheWriteTokens()),
	}
	if rec.GetStartedAt() != nil {
		v.Started = rec.GetStartedAt().AsTime()
	}
	for _, a := range rec.GetAttempts() {
		row := web.AttemptRow{
			Index: strconv.Itoa(int(a.GetIndex())), Record: a.GetRecordName(), Member: a.GetMemberName(),
			Status: callStatusText(a.GetStatus()), Outcome: attemptOutcomeName(a.GetOutcome()), OutcomeClass: attemptClass(a.GetOutcome()),
			Kind: callKindName(a.GetKind()), Reason: a.GetReason(), Latency: callDuration(a.GetLatency()),
			Cost: fmtUSD(a.GetCostNanos()), Estimated: a.GetCostEstimated(),
		}
		if a.GetStartedAt() != nil {
			row.Started = a.GetStartedAt().AsTime()
		}
		v.Attempts = append(v.Attempts, row)
	}
	if cr := rec.GetCache(); cr != nil && (cr.GetJobHash() != "" || cr.GetMiss() != "" || cr.GetMember() != "") {
		v.Cache = &web.CacheView{
			JobHash: cr.GetJobHash(), PreviousMember: callOrDash(cr.GetPreviousMember()), Member: callOrDash(cr.GetMember()),
			Miss: cr.GetMiss(), PreviousCached: fmtCount(cr.GetPreviousCachedInputTokens()), MissCost: fmtUSD(cr.GetEstimatedMissCostNanos()),
		}
	}
	c.page(w, r, s, http.StatusOK, "Call", "calls", web.CallPage(v))
}

// answered reports whether a member answered the call (only then did the
// record's member serve it; a call no member answered names the member
// tried last).
func answered(rec *telemetryv1.CallRecord) bool {
	return rec.GetOutcome() == telemetryv1.CallOutcome_CALL_OUTCOME_ANSWERED
}

// servedBy names the member that served a call ("—" when none answered).
func servedBy(rec *telemetryv1.CallRecord) string {
	if !answered(rec) || rec.GetRecordName() == "" && rec.GetMemberName() == "" {
		return "—"
	}
	return rec.GetRecordName() + "/" + rec.GetMemberName()
}

// lastTried names the member a call no member answered was tried on last
// ("" for an answered call, or when no member was tried).
func lastTried(rec *telemetryv1.CallRecord) string {
	if answered(rec) || rec.GetRecordName() == "" && rec.GetMemberName() == "" {
		return ""
	}
	return rec.GetRecordName() + "/" + rec.GetMemberName()
}

// callResult says what became of a call no member answered, for its page:
// "Failed: weir_pool_cooling after 2 attempts", "Refused:
// weir_budget_exceeded", "Cancelled by the caller after 1 attempt"… ("" for
// an answered call).
func callResult(rec *telemetryv1.CallRecord) string {
	why := rec.GetErrorCode()
	if why == "" && rec.GetStatus() != 0 {
		why = "status " + strconv.FormatUint(uint64(rec.GetStatus()), 10)
	}
	if why != "" {
		why = ": " + why
	}
	sent := 0
	for _, a := range rec.GetAttempts() {
		if a.GetOutcome() != telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_SKIPPED {
			sent++
		}
	}
	after := " before any member was tried"
	switch {
	case sent == 1:
		after = " after 1 attempt"
	case sent > 1:
		after = " after " + strconv.Itoa(sent) + " attempts"
	}
	switch rec.GetOutcome() {
	case telemetryv1.CallOutcome_CALL_OUTCOME_ANSWERED:
		return ""
	case telemetryv1.CallOutcome_CALL_OUTCOME_REFUSED:
		return "Refused" + why
	case telemetryv1.CallOutcome_CALL_OUTCOME_CANCELLED:
		return "Cancelled by the caller" + after
	case telemetryv1.CallOutcome_CALL_OUTCOME_UNKNOWN:
		return "Outcome unknown" + why + after + " (the model may have run)"
	}
	return "Failed" + why + after
}

func callStatusText(s uint32) string {
	if s == 0 {
		return "—"
	}
	return strconv.FormatUint(uint64(s), 10)
}

func callDuration(d *durationpb.Duration) string {
	if d == nil {
		return "—"
	}
	return d.AsDuration().Round(time.Millisecond).String()
}

func callOrDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// callOutcomeName is a call outcome's word (words.CallOutcome): answered,
// failed, unknown, refused or cancelled ("—" for none).
func callOutcomeName(o telemetryv1.CallOutcome) string {
	if n := words.CallOutcome(o); n != "" {
		return n
	}
	return "—"
}

// attemptOutcomeName is an attempt outcome's word (R-SEE-2): answered,
// failed_over, failed or skipped.
func attemptOutcomeName(o telemetryv1.AttemptOutcome) string {
	return words.AttemptOutcome(o)
}

// callKindName is an attempt's failure kind (rate_limited, server_error…),
// "" for none.
func callKindName(k telemetryv1.FailureKind) string {
	if k == telemetryv1.FailureKind_FAILURE_KIND_NONE {
		return ""
	}
	return words.FailureKind(k)
}

func outcomeClass(o telemetryv1.CallOutcome) string {
	switch o {
	case telemetryv1.CallOutcome_CALL_OUTCOME_ANSWERED:
		return "badge-ok"
	case telemetryv1.CallOutcome_CALL_OUTCOME_REFUSED, telemetryv1.CallOutcome_CALL_OUTCOME_CANCELLED:
		return "badge-warn"
	}
	return "badge-bad"
}

func attemptClass(o telemetryv1.AttemptOutcome) string {
	switch o {
	case telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_ANSWERED:
		return "badge-ok"
	case telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_FAILED_OVER, telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_SKIPPED:
		return "badge-warn"
	}
	return "badge-bad"
}
