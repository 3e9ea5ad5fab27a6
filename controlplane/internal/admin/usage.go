package admin

import (
	"cmp"
	"container/heap"
	"context"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/controlplane/internal/admin/apierr"
	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

// Limits of ExportUsage.
const (
	maxUsageRange   = 400 * 24 * time.Hour
	usageRowsPerMsg = 1000
	// usagePageSize is the most rows one query of ExportUsage reads with
	// USAGE_GRANULARITY_CALL: a page of one tenant's calls, or the
	// abandoned-attempt sums of a page of calls.
	usagePageSize = 1000
	// usageMinFetch is the least a tenant's page of calls holds when every
	// tenant is exported (pages shrink to usagePageSize/tenants, down to
	// this), unless usagePageSize is smaller.
	usageMinFetch = 100
)

// usageQueries are the reads UsageService makes.
type usageQueries interface {
	tenantGetter
	ListTenants(ctx context.Context) ([]sqlc.Tenant, error)
	ListProviderRecords(ctx context.Context, tenantID pgtype.UUID) ([]sqlc.ProviderRecord, error)
	ListUsageCallsPage(ctx context.Context, arg sqlc.ListUsageCallsPageParams) ([]sqlc.ListUsageCallsPageRow, error)
	SumAbandonedAttemptCosts(ctx context.Context, callIds []string) ([]sqlc.SumAbandonedAttemptCostsRow, error)
	AggregateUsage(ctx context.Context, arg sqlc.AggregateUsageParams) ([]sqlc.AggregateUsageRow, error)
}

// UsageService implements weir.admin.v1.UsageService.
//
// Charging rule: a call's cost_nanos (the settled cost, or for an unknown
// outcome its flagged estimate) is charged to the call's record and member,
// where the call is counted. Estimated costs of abandoned attempts
// (cost_estimated, R-COST-3) are charged to the attempt's member, except the
// last attempt of a flagged call, whose estimate already is the call's
// cost. With USAGE_GRANULARITY_CALL every cost of a call is on its one row.
//
// The export runs in bounded memory: calls are read a keyset page at a time
// (USAGE_GRANULARITY_CALL), or aggregated by Postgres a UTC day at a time
// (the days of a month summed by group), and rows are sent as they are made.
type UsageService struct {
	base
	q usageQueries
	// pageSize overrides usagePageSize when > 0 (tests).
	pageSize int
}

// ExportUsage streams usage rows of calls started in [start_time, end_time),
// ordered by bucket start, call id (USAGE_GRANULARITY_CALL), then tenant,
// key, record, member and model (strings compared by bytes), then managed.
func (s *UsageService) ExportUsage(ctx context.Context, req *connect.Request[adminv1.ExportUsageRequest], stream *connect.ServerStream[adminv1.ExportUsageResponse]) error {
	m := req.Msg
	_, t, err := scope(ctx, s.q, m.GetTenant(), auth.TenantRoles()...)
	if err != nil {
		return err
	}
	var ps apierr.Problems
	var from, to time.Time
	if m.StartTime == nil {
		ps.Add("start_time", apierr.CodeRequired, "start_time is required")
	} else if err := m.GetStartTime().CheckValid(); err != nil {
		ps.Add("start_time", apierr.CodeInvalidValue, "start_time is not a valid time")
	} else {
		from = m.GetStartTime().AsTime()
	}
	if m.EndTime == nil {
		ps.Add("end_time", apierr.CodeRequired, "end_time is required")
	} else if err := m.GetEndTime().CheckValid(); err != nil {
		ps.Add("end_time", apierr.CodeInvalidValue, "end_time is not a valid time")
	} else {
		to = m.GetEndTime().AsTime()
	}
	if !from.IsZero() && !to.IsZero() {
		if !from.Before(to) {
			ps.Add("end_time", apierr.CodeOutOfRange, "end_time must be after start_time")
		} else if to.Sub(from) > maxUsageRange {
			ps.Add("end_time", apierr.CodeOutOfRange, "the range is at most 400 days")
		}
	}
	gran := m.GetGranularity()
	if gran == adminv1.UsageGranularity_USAGE_GRANULARITY_UNSPECIFIED {
		gran = adminv1.UsageGranularity_USAGE_GRANULARITY_DAY
	}
	if _, ok := adminv1.UsageGranularity_name[int32(gran)]; !ok {
		ps.Add("granularity", apierr.CodeInvalidValue, "unknown granularity")
	}
	if err := ps.Err(); err != nil {
		return err
	}
	tenants := []sqlc.Tenant{t}
	if m.GetTenant() == "" {
		if tenants, err = s.q.ListTenants(ctx); err != nil {
			return apierr.FromStore(err)
		}
	}
	return s.export(ctx, tenants, from, to, gran, stream.Send)
}

// export sends, through send, the usage rows of the tenants' calls started
// in [from, to), usageRowsPerMsg rows a message. Store errors are API
// errors; send's are returned as they are.
func (s *UsageService) export(ctx context.Context, tenants []sqlc.Tenant, from, to time.Time, gran adminv1.UsageGranularity,
	send func(*adminv1.ExportUsageResponse) error) error {
	managed, err := s.q.ListProviderRecords(ctx, store.Cluster)
	if err != nil {
		return apierr.FromStore(err)
	}
	out := &usageSender{ctx: ctx, send: send}
	if len(tenants) == 0 {
		return nil
	}
	if gran == adminv1.UsageGranularity_USAGE_GRANULARITY_CALL {
		managedIDs := map[pgtype.UUID]bool{}
		for _, r := range managed {
			managedIDs[r.ID] = true
		}
		err = s.exportCalls(ctx, tenants, from, to, managedIDs, out)
	} else {
		err = s.exportBuckets(ctx, tenants, from, to, gran, managed, out)
	}
	if err != nil {
		return err
	}
	return out.flush()
}

// usageSender batches rows into messages of usageRowsPerMsg rows, and
// stops once the client has gone away (ctx is done).
type usageSender struct {
	ctx  context.Context
	send func(*adminv1.ExportUsageResponse) error
	msg  *adminv1.ExportUsageResponse
}

func (o *usageSender) add(r *adminv1.UsageRow) error {
	if o.msg == nil {
		o.msg = &adminv1.ExportUsageResponse{}
	}
	o.msg.Rows = append(o.msg.Rows, r)
	if len(o.msg.Rows) == usageRowsPerMsg {
		return o.flush()
	}
	return nil
}

func (o *usageSender) flush() error {
	if o.msg == nil {
		return nil
	}
	if err := o.ctx.Err(); err != nil {
		return apierr.FromStore(err)
	}
	m := o.msg
	o.msg = nil
	return o.send(m)
}

func (s *UsageService) limit() int {
	if s.pageSize > 0 {
		return s.pageSize
	}
	return usagePageSize
}

// usageCursor reads one tenant's calls of the range, a keyset page at a time,
// in export order (started_at, then call id bytes).
type usageCursor struct {
	tenant    string
	params    sqlc.ListUsageCallsPageParams
	rows      []sqlc.ListUsageCallsPageRow // the unread rows of the page
	exhausted bool                         // the last page was short: no more rows
}

// next reads the next page when the current one is used up.
func (c *usageCursor) next(ctx context.Context, q usageQueries) error {
	if len(c.rows) > 0 || c.exhausted {
		return nil
	}
	rows, err := q.ListUsageCallsPage(ctx, c.params)
	if err != nil {
		return err
	}
	c.rows = rows
	c.exhausted = len(rows) < int(c.params.PageSize)
	if n := len(rows); n > 0 {
		c.params.AfterTime, c.params.AfterCallID = rows[n-1].StartedAt, rows[n-1].CallID
	}
	return nil
}

// usageCursors is a min-heap of cursors with unread rows, by their first row.
type usageCursors []*usageCursor

func (h usageCursors) Len() int { return len(h) }
func (h usageCursors) Less(i, j int) bool {
	a, b := h[i].rows[0], h[j].rows[0]
	return cmp.Or(a.StartedAt.Time.Compare(b.StartedAt.Time), strings.Compare(a.CallID, b.CallID)) < 0
}
func (h usageCursors) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *usageCursors) Push(x any)   { *h = append(*h, x.(*usageCursor)) }
func (h *usageCursors) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// usageCall is a call of the export and its tenant.
type usageCall struct {
	tenant string
	sqlc.ListUsageCallsPageRow
}

// exportCalls sends one row per call, in the order of (started_at, call
// id): every tenant's calls are read by keyset pages and merged, and the
// abandoned attempts are read for each page of merged calls. It holds at
// most a page per tenant (usagePageSize/tenants calls, at least
// usageMinFetch) and one page of merged calls.
func (s *UsageService) exportCalls(ctx context.Context, tenants []sqlc.Tenant, from, to time.Time,
	managedIDs map[pgtype.UUID]bool, out *usageSender) error {
	limit := s.limit()
	fetch := max(limit/len(tenants), min(limit, usageMinFetch))
	h := make(usageCursors, 0, len(tenants))
	for _, tn := range tenants {
		c := &usageCursor{tenant: tn.Name, params: sqlc.ListUsageCallsPageParams{
			TenantID: tn.ID, AfterTime: pgts(from), ToTime: pgts(to), PageSize: int32(fetch)}}
		if err := c.next(ctx, s.q); err != nil {
			return apierr.FromStore(err)
		}
		if len(c.rows) > 0 {
			h = append(h, c)
		}
	}
	heap.Init(&h)
	page := make([]usageCall, 0, limit)
	for h.Len() > 0 {
		c := h[0]
		page = append(page, usageCall{tenant: c.tenant, ListUsageCallsPageRow: c.rows[0]})
		c.rows = c.rows[1:]
		if err := c.next(ctx, s.q); err != nil {
			return apierr.FromStore(err)
		}
		if len(c.rows) == 0 {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
		if len(page) == limit {
			if err := s.sendCalls(ctx, page, managedIDs, out); err != nil {
				return err
			}
			page = page[:0]
		}
	}
	return s.sendCalls(ctx, page, managedIDs, out)
}

// sendCalls makes the rows of a page of calls, with their abandoned
// attempts' estimates, and sends them.
func (s *UsageService) sendCalls(ctx context.Context, page []usageCall, managedIDs map[pgtype.UUID]bool, out *usageSender) error {
	if len(page) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return apierr.FromStore(err)
	}
	ids := make([]string, len(page))
	for i, c := range page {
		ids[i] = c.CallID
	}
	sums, err := s.q.SumAbandonedAttemptCosts(ctx, ids)
	if err != nil {
		return apierr.FromStore(err)
	}
	abandoned := make(map[string]int64, len(sums))
	for _, a := range sums {
		abandoned[a.CallID] = a.CostNanos
	}
	for _, c := range page {
		r := &adminv1.UsageRow{
			BucketStart: ts(c.StartedAt), CallId: c.CallID, Tenant: c.tenant, Key: c.KeyName,
			Record: c.RecordName, Member: c.MemberName, Managed: managedIDs[c.RecordID], Model: c.Model,
			Calls: 1, InputTokens: c.InputTokens, OutputTokens: c.OutputTokens,
			CacheReadTokens: c.CacheReadTokens, CacheWriteTokens: c.CacheWriteTokens,
			CostNanos: c.CostNanos + abandoned[c.CallID], EstimatedCostNanos: abandoned[c.CallID],
		}
		if c.Outcome != "answered" {
			r.FailedCalls = 1
		}
		if c.CostFlagged {
			r.EstimatedCostNanos += c.CostNanos
		}
		if err := out.add(r); err != nil {
			return err
		}
	}
	return nil
}

// exportBuckets sends the rows of an hour, day or month granularity, which
// Postgres aggregates (AggregateUsage) one UTC day at a time, so that each
// query reads a day of calls and probes their attempts by call id. Days
// start on hour and day boundaries: a day's rows, in export order, are sent
// as they are. The days of a month are summed here, by group, and the
// month's rows sorted and sent when it ends. It holds one day's rows, or one
// month's.
func (s *UsageService) exportBuckets(ctx context.Context, tenants []sqlc.Tenant, from, to time.Time, gran adminv1.UsageGranularity,
	managed []sqlc.ProviderRecord, out *usageSender) error {
	arg := sqlc.AggregateUsageParams{Unit: "day", TenantIds: make([]pgtype.UUID, len(tenants)),
		ManagedIds: make([]pgtype.UUID, len(managed)), ManagedNames: make([]string, len(managed))}
	switch gran {
	case adminv1.UsageGranularity_USAGE_GRANULARITY_HOUR:
		arg.Unit = "hour"
	case adminv1.UsageGranularity_USAGE_GRANULARITY_MONTH:
		arg.Unit = "month"
	}
	for i, tn := range tenants {
		arg.TenantIds[i] = tn.ID
	}
	for i, r := range managed {
		arg.ManagedIds[i], arg.ManagedNames[i] = r.ID, r.Name
	}
	monthly := gran == adminv1.UsageGranularity_USAGE_GRANULARITY_MONTH
	month := map[usageGroup]*adminv1.UsageRow{}
	for w := from; w.Before(to); {
		end := bucketStart(w, adminv1.UsageGranularity_USAGE_GRANULARITY_DAY).AddDate(0, 0, 1)
		if end.After(to) {
			end = to
		}
		if err := ctx.Err(); err != nil {
			return apierr.FromStore(err)
		}
		arg.FromTime, arg.ToTime = pgts(w), pgts(end)
		rows, err := s.q.AggregateUsage(ctx, arg)
		if err != nil {
			return apierr.FromStore(err)
		}
		for _, r := range rows {
			if !monthly {
				if err := out.add(usageRow(r)); err != nil {
					return err
				}
				continue
			}
			g := usageGroup{r.Tenant, r.KeyName, r.Record, r.Member, r.Model, r.Managed}
			if m, ok := month[g]; ok {
				m.Calls += r.Calls
				m.FailedCalls += r.FailedCalls
				m.InputTokens += r.InputTokens
				m.OutputTokens += r.OutputTokens
				m.CacheReadTokens += r.CacheReadTokens
				m.CacheWriteTokens += r.CacheWriteTokens
				m.CostNanos += r.CostNanos
				m.EstimatedCostNanos += r.EstimatedCostNanos
			} else {
				month[g] = usageRow(r)
			}
		}
		w = end
		if monthly && (!w.Before(to) || w.Equal(bucketStart(w, gran))) {
			if err := sendMonth(month, out); err != nil {
				return err
			}
			clear(month)
		}
	}
	return nil
}

// usageGroup is a row's group within its bucket.
type usageGroup struct {
	tenant, key, record, member, model string
	managed                            bool
}

func usageRow(r sqlc.AggregateUsageRow) *adminv1.UsageRow {
	return &adminv1.UsageRow{
		BucketStart: ts(r.BucketStart), Tenant: r.Tenant, Key: r.KeyName, Record: r.Record, Member: r.Member,
		Managed: r.Managed, Model: r.Model, Calls: r.Calls, FailedCalls: r.FailedCalls,
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
		CacheReadTokens: r.CacheReadTokens, CacheWriteTokens: r.CacheWriteTokens,
		CostNanos: r.CostNanos, EstimatedCostNanos: r.EstimatedCostNanos,
	}
}

// sendMonth sends the rows of one month in export order.
func sendMonth(month map[usageGroup]*adminv1.UsageRow, out *usageSender) error {
	groups := make([]usageGroup, 0, len(month))
	for g := range month {
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b usageGroup) int {
		return cmp.Or(strings.Compare(a.tenant, b.tenant), strings.Compare(a.key, b.key), strings.Compare(a.record, b.record),
			strings.Compare(a.member, b.member), strings.Compare(a.model, b.model), boolCompare(a.managed, b.managed))
	})
	for _, g := range groups {
		if err := out.add(month[g]); err != nil {
			return err
		}
	}
	return nil
}

func boolCompare(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// bucketStart is the UTC start of t's bucket (t itself per call).
func bucketStart(t time.Time, g adminv1.UsageGranularity) time.Time {
	t = t.UTC()
	switch g {
	case adminv1.UsageGranularity_USAGE_GRANULARITY_HOUR:
		return t.Truncate(time.Hour)
	case adminv1.UsageGranularity_USAGE_GRANULARITY_MONTH:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	case adminv1.UsageGranularity_USAGE_GRANULARITY_CALL:
		return t
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}
