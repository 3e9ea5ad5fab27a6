package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/money"
	"weir.dev/controlplane/internal/usageexport"
	"weir.dev/controlplane/internal/words"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

// setupBudgetSet registers the flags of `weir budget set`.
func setupBudgetSet(fs *flagSet) runFunc {
	limit := fs.String("limit", "", "limit per period in dollars (`USD`), e.g. 250 or 12.5 (at most 9 decimal places)")
	period := fs.String("period", "", "`day|month|total`: the budget's period (day and month are calendar periods in UTC)")
	key := fs.String("key", "", "limit only the calls of the API key named `KEYNAME` (default: the whole tenant)")
	return func(ctx context.Context, c *call) error {
		if *limit == "" || *period == "" {
			return c.badArgsf("--limit and --period are required")
		}
		nanos, err := money.ParseNanos(*limit)
		if err != nil {
			return c.badArgsf("--limit: %v", err)
		}
		if nanos <= 0 {
			return c.badArgsf("--limit must be more than 0")
		}
		var p configv1.BudgetPeriod
		switch *period {
		case "day":
			p = configv1.BudgetPeriod_BUDGET_PERIOD_DAY
		case "month":
			p = configv1.BudgetPeriod_BUDGET_PERIOD_MONTH
		case "total":
			p = configv1.BudgetPeriod_BUDGET_PERIOD_TOTAL
		default:
			return c.badArgsf("--period: want day, month or total, got %q", *period)
		}
		if *key != "" {
			if err := checkName("key", *key); err != nil {
				return c.badArgsf("--key: %v", err)
			}
		}
		api, err := c.api()
		if err != nil {
			return err
		}
		resp, err := api.budgets.SetBudget(ctx, connect.NewRequest(&adminv1.SetBudgetRequest{
			Tenant: c.tenant, Name: c.args[0], LimitNanos: nanos, Period: p, Key: *key,
		}))
		if err != nil {
			return fmt.Errorf("set budget %s: %w", c.args[0], err)
		}
		return c.emit(resp.Msg, func(w io.Writer) error {
			b := resp.Msg.GetBudget()
			verb := "updated"
			if resp.Msg.GetCreated() {
				verb = "created"
			}
			scope := "tenant " + c.tenant
			if b.GetKey() != "" {
				scope = "key " + b.GetKey()
			}
			_, err := fmt.Fprintf(w, "%s budget %s: %s USD per %s for %s\n", verb, b.GetName(),
				money.FormatNanos(b.GetLimitNanos()), periodName(b.GetPeriod()), scope)
			return err
		})
	}
}

// periodName prints a budget period as the CLI spells it.
func periodName(p configv1.BudgetPeriod) string {
	return words.BudgetPeriod(p)
}

// budgetList runs `weir budget list` (BudgetService.ListBudgets, every page).
func (c *call) budgetList(ctx context.Context) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	budgets, err := allPages(ctx, func(ctx context.Context, tok string) ([]*adminv1.Budget, string, error) {
		r, err := api.budgets.ListBudgets(ctx, connect.NewRequest(&adminv1.ListBudgetsRequest{Tenant: c.tenant, PageToken: tok}))
		if err != nil {
			return nil, "", fmt.Errorf("list budgets: %w", err)
		}
		return r.Msg.GetBudgets(), r.Msg.GetNextPageToken(), nil
	})
	if err != nil {
		return err
	}
	return c.emit(&adminv1.ListBudgetsResponse{Budgets: budgets}, func(w io.Writer) error {
		t := newTable(w, "NAME", "KEY", "PERIOD", "LIMIT USD", "SPENT USD", "LEASED USD", "PERIOD START", "PERIOD END")
		for _, b := range budgets {
			t.row(b.GetName(), b.GetKey(), periodName(b.GetPeriod()), money.FormatNanos(b.GetLimitNanos()),
				money.FormatNanos(b.GetSpentNanos()), money.FormatNanos(b.GetLeasedNanos()), ts(b.GetPeriodStart()), ts(b.GetPeriodEnd()))
		}
		return t.flush()
	})
}

// budgetDelete runs `weir budget delete NAME` (BudgetService.DeleteBudget).
func (c *call) budgetDelete(ctx context.Context) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	resp, err := api.budgets.DeleteBudget(ctx, connect.NewRequest(&adminv1.DeleteBudgetRequest{Tenant: c.tenant, Name: c.args[0]}))
	if err != nil {
		return fmt.Errorf("delete budget %s: %w", c.args[0], err)
	}
	return c.emit(resp.Msg, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "deleted budget %s\n", c.args[0])
		return err
	})
}

// parseDate reads a --from or --to value: YYYY-MM-DD (a UTC day) or an RFC
// 3339 instant. A day given to --to means the end of that day (00:00 UTC of
// the next), so that both named days are included.
func parseDate(s string, end bool) (time.Time, error) {
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		if end {
			d = d.AddDate(0, 0, 1)
		}
		return d.UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want YYYY-MM-DD or an RFC 3339 time, got %q", s)
	}
	return t.UTC(), nil
}

// setupUsageExport registers the flags of `weir usage export`.
func setupUsageExport(fs *flagSet) runFunc {
	from := fs.String("from", "", "first day (`DATE` as YYYY-MM-DD, UTC) or instant (RFC 3339), inclusive (default: the first day of this month, UTC)")
	to := fs.String("to", "", "last day (`DATE` as YYYY-MM-DD, included) or instant (RFC 3339, exclusive) (default: now)")
	format := fs.String("format", "", "`csv|json`: the file format (default csv, or json with --output json)")
	return func(ctx context.Context, c *call) error {
		// With neither flag, the export is this month so far (DESIGN §3).
		now := time.Now().UTC()
		start := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
		end := now
		var err error
		if *from != "" {
			if start, err = parseDate(*from, false); err != nil {
				return c.badArgsf("--from: %v", err)
			}
		}
		if *to != "" {
			if end, err = parseDate(*to, true); err != nil {
				return c.badArgsf("--to: %v", err)
			}
		}
		if !start.Before(end) && *from == "" {
			return c.badArgsf("--to is not after the first day of this month, the default of --from: give --from too")
		}
		if !start.Before(end) {
			return c.badArgsf("--from must be before --to")
		}
		f := *format
		if f == "" {
			f = "csv"
			if c.json() {
				f = "json"
			}
		}
		if f != "csv" && f != "json" {
			return c.badArgsf("--format: want csv or json, got %q", f)
		}
		api, err := c.api()
		if err != nil {
			return err
		}
		stream, err := api.usage.ExportUsage(ctx, connect.NewRequest(&adminv1.ExportUsageRequest{
			Tenant: c.tenant, StartTime: timestamppb.New(start), EndTime: timestamppb.New(end),
		}))
		if err != nil {
			return fmt.Errorf("export usage: %w", err)
		}
		defer stream.Close()
		out := usageexport.NewWriter(c.Stdout, usageexport.Format(f))
		for stream.Receive() {
			if err := out.Rows(stream.Msg().GetRows()); err != nil {
				return err
			}
		}
		if err := stream.Err(); err != nil {
			return fmt.Errorf("export usage: %w", err)
		}
		return out.Close()
	}
}

// setupCallsList registers the flags of `weir calls list`.
func setupCallsList(fs *flagSet) runFunc {
	since := &durFlag{}
	fs.Var(since, "since", "only calls that started within this long (`DUR`), e.g. 15m or 24h")
	member := fs.String("member", "", "only calls with an attempt on the member named `M` (\"primary\" for plain records)")
	record := fs.String("record", "", "only calls with an attempt on the provider `RECORD`")
	limit := &intFlag[int64]{v: 100, min: 0, max: 1 << 30}
	fs.Var(limit, "limit", "list at most `N` calls, newest first (0: all)")
	return func(ctx context.Context, c *call) error {
		req := &adminv1.ListCallsRequest{Tenant: c.tenant, Member: *member, Record: *record}
		if c.given["since"] && !since.empty {
			req.Since = durationpb.New(since.d)
		}
		if *member != "" {
			if err := checkName("member", *member); err != nil {
				return c.badArgsf("--member: %v", err)
			}
		}
		if *record != "" {
			if err := checkName("record", *record); err != nil {
				return c.badArgsf("--record: %v", err)
			}
		}
		api, err := c.api()
		if err != nil {
			return err
		}
		var calls []*adminv1.Call
		tok := ""
		for {
			req.PageToken = tok
			req.PageSize = 1000
			if want := limit.v - int64(len(calls)); limit.v > 0 && want < 1000 {
				req.PageSize = int32(want)
			}
			r, err := api.calls.ListCalls(ctx, connect.NewRequest(req))
			if err != nil {
				return fmt.Errorf("list calls: %w", err)
			}
			calls = append(calls, r.Msg.GetCalls()...)
			tok = r.Msg.GetNextPageToken()
			if tok == "" || limit.v > 0 && int64(len(calls)) >= limit.v {
				break
			}
		}
		if limit.v > 0 && int64(len(calls)) > limit.v {
			calls = calls[:limit.v]
		}
		return c.emit(&adminv1.ListCallsResponse{Calls: calls}, func(w io.Writer) error {
			t := newTable(w, "CALL ID", "STARTED", "KEY", "MODEL", "RECORD", "MEMBER", "STATUS", "OUTCOME", "ATTEMPTS", "COST USD", "DURATION")
			for _, x := range calls {
				r := x.GetRecord()
				t.row(r.GetCallId(), ts(r.GetStartedAt()), x.GetKey(), r.GetModel(), r.GetRecordName(), r.GetMemberName(),
					statusText(r.GetStatus()), words.CallOutcome(r.GetOutcome()),
					strconv.Itoa(len(r.GetAttempts())), money.FormatNanos(r.GetCostNanos()), dur(r.GetDuration()))
			}
			return t.flush()
		})
	}
}

// statusText prints an HTTP status, "" for none.
func statusText(s uint32) string {
	if s == 0 {
		return ""
	}
	return strconv.FormatUint(uint64(s), 10)
}

// callShow runs `weir calls show CALL_ID` (CallService.GetCall).
func (c *call) callShow(ctx context.Context) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	resp, err := api.calls.GetCall(ctx, connect.NewRequest(&adminv1.GetCallRequest{Tenant: c.tenant, CallId: c.args[0]}))
	if err != nil {
		return fmt.Errorf("show call %s: %w", c.args[0], err)
	}
	return c.emit(resp.Msg, func(w io.Writer) error {
		x := resp.Msg.GetCall()
		r := x.GetRecord()
		u := r.GetUsage()
		err := kv(w,
			"call", r.GetCallId(),
			"tenant", x.GetTenant(),
			"key", x.GetKey(),
			"edge", r.GetEdgeId(),
			"endpoint", r.GetEndpoint(),
			"model", r.GetModel(),
			"stream", yesNo(r.GetStream()),
			"record", r.GetRecordName(),
			"member", r.GetMemberName(),
			"format", formatText(r),
			"status", statusText(r.GetStatus()),
			"outcome", words.CallOutcome(r.GetOutcome()),
			"error code", r.GetErrorCode(),
			"started", ts(r.GetStartedAt()),
			"duration", dur(r.GetDuration()),
			"tokens", fmt.Sprintf("input %d, output %d, cache read %d, cache write %d",
				u.GetInputTokens(), u.GetOutputTokens(), u.GetCacheReadTokens(), u.GetCacheWriteTokens()),
			"reserved USD", money.FormatNanos(r.GetReservedNanos()),
			"cost USD", money.FormatNanos(r.GetCostNanos())+flagged(r.GetCostFlagged()),
			"job", r.GetJobHash(),
		)
		if err != nil {
			return err
		}
		fmt.Fprintln(w)
		t := newTable(w, "#", "RECORD", "MEMBER", "STATUS", "OUTCOME", "KIND", "REASON", "LATENCY", "COST USD", "STARTED")
		for _, at := range r.GetAttempts() {
			t.row(strconv.FormatUint(uint64(at.GetIndex()), 10), at.GetRecordName(), at.GetMemberName(), statusText(at.GetStatus()),
				words.AttemptOutcome(at.GetOutcome()), words.FailureKind(at.GetKind()),
				at.GetReason(), dur(at.GetLatency()), money.FormatNanos(at.GetCostNanos())+flagged(at.GetCostEstimated()), ts(at.GetStartedAt()))
		}
		if err := t.flush(); err != nil {
			return err
		}
		if cr := r.GetCache(); cr != nil && cr.GetMiss() != "" {
			fmt.Fprintf(w, "\ncache miss %s: member %s after %s (%d cached input tokens, about %s USD)\n", cr.GetMiss(),
				cr.GetMember(), cr.GetPreviousMember(), cr.GetPreviousCachedInputTokens(), money.FormatNanos(cr.GetEstimatedMissCostNanos()))
		}
		return nil
	})
}

// flagged marks an estimated cost (R-COST-3).
func flagged(b bool) string {
	if b {
		return " (estimated)"
	}
	return ""
}

// edgesList runs `weir edges list` (EdgeService.ListEdges, every page).
func (c *call) edgesList(ctx context.Context) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	edges, err := allPages(ctx, func(ctx context.Context, tok string) ([]*adminv1.Edge, string, error) {
		r, err := api.edges.ListEdges(ctx, connect.NewRequest(&adminv1.ListEdgesRequest{Tenant: c.tenant, PageToken: tok}))
		if err != nil {
			return nil, "", fmt.Errorf("list edges: %w", err)
		}
		return r.Msg.GetEdges(), r.Msg.GetNextPageToken(), nil
	})
	if err != nil {
		return err
	}
	return c.emit(&adminv1.ListEdgesResponse{Edges: edges}, func(w io.Writer) error {
		t := newTable(w, "EDGE", "FIRST SEEN", "LAST SEEN", "SILENT", "MEMBER VIEWS")
		for _, e := range edges {
			t.row(e.GetId(), ts(e.GetFirstSeenAt()), ts(e.GetLastSeenAt()), yes(e.GetSilent()),
				strconv.FormatUint(uint64(e.GetMemberViews()), 10))
		}
		return t.flush()
	})
}

// doctor runs `weir doctor` (DoctorService.Diagnose). Findings are the
// answer, not a failure: the exit code is 0 whatever they are.
func (c *call) doctor(ctx context.Context) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	resp, err := api.doctor.Diagnose(ctx, connect.NewRequest(&adminv1.DiagnoseRequest{Tenant: c.tenant}))
	if err != nil {
		return fmt.Errorf("diagnose: %w", err)
	}
	return c.emit(resp.Msg, func(w io.Writer) error {
		scope := "the whole cluster"
		if c.tenant != "" {
			scope = "tenant " + c.tenant
		}
		if len(resp.Msg.GetFindings()) == 0 {
			_, err := fmt.Fprintf(w, "no problems found in %s (checked %s)\n", scope, ts(resp.Msg.GetCheckedAt()))
			return err
		}
		for _, f := range resp.Msg.GetFindings() {
			var about []string
			for _, p := range [][2]string{{"tenant", f.GetTenant()}, {"record", f.GetRecord()},
				{"members", strings.Join(f.GetMembers(), ",")}, {"edges", strings.Join(f.GetEdges(), ",")},
				{"model", f.GetModel()}, {"since", ts(f.GetSince())}} {
				if p[1] != "" {
					about = append(about, p[0]+" "+p[1])
				}
			}
			fmt.Fprintf(w, "%-7s %s: %s", words.Severity(f.GetSeverity()), f.GetCode(), f.GetMessage())
			if len(about) > 0 {
				fmt.Fprintf(w, " (%s)", strings.Join(about, "; "))
			}
			fmt.Fprintln(w)
			if f.GetHint() != "" {
				fmt.Fprintf(w, "        hint: %s\n", f.GetHint())
			}
		}
		_, err := fmt.Fprintf(w, "%d finding(s) in %s (checked %s)\n", len(resp.Msg.GetFindings()), scope, ts(resp.Msg.GetCheckedAt()))
		return err
	})
}

// formatText prints the serving member's wire format and whether the call
// was translated from the caller's format (R-FMT-6): "gemini, translated",
// "openai, as sent", or "" when no member served the call.
func formatText(r *telemetryv1.CallRecord) string {
	if r.GetMemberFormat() == "" {
		return ""
	}
	if r.GetTranslated() {
		return r.GetMemberFormat() + ", translated"
	}
	return r.GetMemberFormat() + ", as sent"
}
