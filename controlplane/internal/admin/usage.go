package admin

import (
	"cmp"
	"context"
	"slices"
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
)

// usageQueries are the reads UsageService makes.
type usageQueries interface {
	tenantGetter
	ListTenants(ctx context.Context) ([]sqlc.Tenant, error)
	ListAPIKeys(ctx context.Context, tenantID pgtype.UUID) ([]sqlc.APIKey, error)
	ListProviderRecords(ctx context.Context, tenantID pgtype.UUID) ([]sqlc.ProviderRecord, error)
	ListCallsBetween(ctx context.Context, arg sqlc.ListCallsBetweenParams) ([]sqlc.Call, error)
	ListCallAttemptsBetween(ctx context.Context, arg sqlc.ListCallAttemptsBetweenParams) ([]sqlc.CallAttempt, error)
}

// UsageService implements weir.admin.v1.UsageService.
//
// Charging rule: a call's cost_nanos (the settled cost, or for an unknown
// outcome its flagged estimate) is charged to the call's record and member,
// where the call is counted. Estimated costs of abandoned attempts
// (cost_estimated, R-COST-3) are charged to the attempt's member, except the
// last attempt of a flagged call, whose estimate already is the call's
// cost. With USAGE_GRANULARITY_CALL every cost of a call is on its one row.
type UsageService struct {
	base
	q usageQueries
}

type usageKey struct {
	bucket                time.Time
	callID                string
	tenant, key           string
	record, member, model string
	managed               bool
}

// ExportUsage streams usage rows of calls started in [start_time, end_time).
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
	managed, err := s.q.ListProviderRecords(ctx, store.Cluster)
	if err != nil {
		return apierr.FromStore(err)
	}
	managedIDs := map[pgtype.UUID]bool{}
	managedNames := map[string]bool{}
	for _, r := range managed {
		managedIDs[r.ID] = true
		managedNames[r.Name] = true
	}
	rows := map[usageKey]*adminv1.UsageRow{}
	for _, tn := range tenants {
		if err := s.collect(ctx, tn, from, to, gran, managedIDs, managedNames, rows); err != nil {
			return apierr.FromStore(err)
		}
	}
	keys := make([]usageKey, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b usageKey) int {
		return cmp.Or(a.bucket.Compare(b.bucket), cmp.Compare(a.callID, b.callID), cmp.Compare(a.tenant, b.tenant),
			cmp.Compare(a.key, b.key), cmp.Compare(a.record, b.record), cmp.Compare(a.member, b.member), cmp.Compare(a.model, b.model))
	})
	for len(keys) > 0 {
		n := min(len(keys), usageRowsPerMsg)
		msg := &adminv1.ExportUsageResponse{}
		for _, k := range keys[:n] {
			msg.Rows = append(msg.Rows, rows[k])
		}
		if err := stream.Send(msg); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

func (s *UsageService) collect(ctx context.Context, tn sqlc.Tenant, from, to time.Time, gran adminv1.UsageGranularity,
	managedIDs map[pgtype.UUID]bool, managedNames map[string]bool, rows map[usageKey]*adminv1.UsageRow) error {
	keys, err := s.q.ListAPIKeys(ctx, tn.ID)
	if err != nil {
		return err
	}
	keyNames := map[pgtype.UUID]string{}
	for _, k := range keys {
		keyNames[k.ID] = k.Name
	}
	calls, err := s.q.ListCallsBetween(ctx, sqlc.ListCallsBetweenParams{TenantID: tn.ID, FromTime: pgts(from), ToTime: pgts(to)})
	if err != nil {
		return err
	}
	attempts, err := s.q.ListCallAttemptsBetween(ctx, sqlc.ListCallAttemptsBetweenParams{TenantID: tn.ID, FromTime: pgts(from), ToTime: pgts(to)})
	if err != nil {
		return err
	}
	byCall := map[string][]sqlc.CallAttempt{}
	for _, a := range attempts {
		byCall[a.CallID] = append(byCall[a.CallID], a)
	}
	row := func(k usageKey) *adminv1.UsageRow {
		r, ok := rows[k]
		if !ok {
			r = &adminv1.UsageRow{
				BucketStart: ts(pgts(k.bucket)), CallId: k.callID, Tenant: k.tenant, Key: k.key,
				Record: k.record, Member: k.member, Managed: k.managed, Model: k.model,
			}
			rows[k] = r
		}
		return r
	}
	perCall := gran == adminv1.UsageGranularity_USAGE_GRANULARITY_CALL
	for _, c := range calls {
		k := usageKey{
			bucket: bucketStart(c.StartedAt.Time, gran), tenant: tn.Name, key: keyNames[c.KeyID],
			record: c.RecordName, member: c.MemberName, model: c.Model, managed: managedIDs[c.RecordID],
		}
		if perCall {
			k.callID = c.CallID
		}
		r := row(k)
		r.Calls++
		if c.Outcome != "answered" {
			r.FailedCalls++
		}
		r.InputTokens += c.InputTokens
		r.OutputTokens += c.OutputTokens
		r.CacheReadTokens += c.CacheReadTokens
		r.CacheWriteTokens += c.CacheWriteTokens
		r.CostNanos += c.CostNanos
		if c.CostFlagged {
			r.EstimatedCostNanos += c.CostNanos
		}
		as := byCall[c.CallID]
		for i, a := range as {
			if !a.CostEstimated || a.CostNanos == 0 || a.Outcome == "answered" {
				continue
			}
			if c.CostFlagged && i == len(as)-1 && a.RecordName == c.RecordName && a.MemberName == c.MemberName {
				continue // the call's own flagged estimate
			}
			ak := k
			if !perCall {
				ak.record, ak.member = a.RecordName, a.MemberName
				if a.RecordName != c.RecordName {
					ak.managed = managedNames[a.RecordName]
				}
			}
			ar := row(ak)
			ar.CostNanos += a.CostNanos
			ar.EstimatedCostNanos += a.CostNanos
		}
	}
	return nil
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
