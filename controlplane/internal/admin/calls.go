package admin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/admin/apierr"
	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

// callQueries are the reads CallService makes.
type callQueries interface {
	tenantGetter
	ListCallsFiltered(ctx context.Context, arg sqlc.ListCallsFilteredParams) ([]sqlc.ListCallsFilteredRow, error)
	GetCallWithKey(ctx context.Context, arg sqlc.GetCallWithKeyParams) (sqlc.GetCallWithKeyRow, error)
	ListCallAttemptsForCalls(ctx context.Context, arg sqlc.ListCallAttemptsForCallsParams) ([]sqlc.CallAttempt, error)
}

// CallService implements weir.admin.v1.CallService over the calls and
// call_attempts tables. Any role on the tenant may read.
type CallService struct {
	base
	q callQueries
}

var callOutcomes = map[telemetryv1.CallOutcome]string{
	telemetryv1.CallOutcome_CALL_OUTCOME_ANSWERED:  "answered",
	telemetryv1.CallOutcome_CALL_OUTCOME_FAILED:    "failed",
	telemetryv1.CallOutcome_CALL_OUTCOME_UNKNOWN:   "unknown",
	telemetryv1.CallOutcome_CALL_OUTCOME_REFUSED:   "refused",
	telemetryv1.CallOutcome_CALL_OUTCOME_CANCELLED: "cancelled",
}

var attemptOutcomes = map[string]telemetryv1.AttemptOutcome{
	"answered":    telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_ANSWERED,
	"failed_over": telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_FAILED_OVER,
	"failed":      telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_FAILED,
	"skipped":     telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_SKIPPED,
}

// callCursor is the page token of ListCalls.
type callCursor struct {
	StartedAt int64  `json:"t"`
	CallID    string `json:"id"`
	// Since is the instant `since` was measured from on the first page.
	Since int64 `json:"s,omitempty"`
}

// ListCalls lists the tenant's calls newest first.
func (s *CallService) ListCalls(ctx context.Context, req *connect.Request[adminv1.ListCallsRequest]) (*connect.Response[adminv1.ListCallsResponse], error) {
	m := req.Msg
	_, t, err := scope(ctx, s.q, m.GetTenant(), auth.TenantRoles()...)
	if err != nil {
		return nil, err
	}
	f, err := s.checkListCalls(m)
	if err != nil {
		return nil, err
	}
	rows, err := s.q.ListCallsFiltered(ctx, sqlc.ListCallsFilteredParams{
		TenantID: t.ID, StartTime: f.start, EndTime: f.end, KeyName: m.GetKey(), Model: m.GetModel(),
		Outcome: f.outcome, ErrorCode: m.GetErrorCode(), RecordName: m.GetRecord(), MemberName: m.GetMember(),
		HasCursor: f.cur.CallID != "", CursorStartedAt: pgts(time.Unix(0, f.cur.StartedAt)), CursorCallID: f.cur.CallID,
		MaxRows: int32(f.size + 1),
	})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	resp := &adminv1.ListCallsResponse{}
	if len(rows) > f.size {
		rows = rows[:f.size]
		last := rows[f.size-1].Call
		b, _ := json.Marshal(callCursor{StartedAt: last.StartedAt.Time.UnixNano(), CallID: last.CallID, Since: f.cur.Since})
		resp.NextPageToken = base64.RawURLEncoding.EncodeToString(b)
	}
	if resp.Calls, err = s.withAttempts(ctx, t, rows); err != nil {
		return nil, err
	}
	return connect.NewResponse(resp), nil
}

// callsFilter is a checked ListCallsRequest's page and filters, as
// ListCallsFiltered takes them.
type callsFilter struct {
	size       int        // the page size
	cur        callCursor // where the page starts; zero on the first
	start, end pgtype.Timestamptz
	outcome    string // the outcome's stored word; "" for any
}

// checkListCalls checks a ListCallsRequest — tenant, page size and token, time
// window (callsWindow), outcome, and record, member and key names, in
// that order — and returns its filter, or an error with every problem.
func (s *CallService) checkListCalls(m *adminv1.ListCallsRequest) (callsFilter, error) {
	var ps apierr.Problems
	if m.GetTenant() == "" {
		ps.Add("tenant", apierr.CodeRequired, "a tenant is required")
	}
	f := callsFilter{size: pageSize(&ps, m.GetPageSize())}
	if tok := m.GetPageToken(); tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil || json.Unmarshal(b, &f.cur) != nil || f.cur.CallID == "" {
			ps.Add("page_token", apierr.CodeInvalidValue, "page_token is not a token this server returned")
		}
	}
	f.start, f.end = s.callsWindow(&ps, m, &f.cur)
	if m.GetOutcome() != telemetryv1.CallOutcome_CALL_OUTCOME_UNSPECIFIED {
		var ok bool
		if f.outcome, ok = callOutcomes[m.GetOutcome()]; !ok {
			ps.Add("outcome", apierr.CodeInvalidValue, "unknown outcome")
		}
	}
	if m.GetRecord() != "" {
		apierr.Name(&ps, "record", m.GetRecord())
	}
	if m.GetMember() != "" {
		apierr.Name(&ps, "member", m.GetMember())
	}
	if m.GetKey() != "" {
		apierr.Name(&ps, "key", m.GetKey())
	}
	if err := ps.Err(); err != nil {
		return f, err
	}
	return f, nil
}

// callsWindow checks the request's time window and returns its bounds
// (each invalid when open): since, measured from the instant cur holds
// (now on a first page, which it then records in cur), or start_time; and
// end_time, after the start. Problems go to ps.
func (s *CallService) callsWindow(ps *apierr.Problems, m *adminv1.ListCallsRequest, cur *callCursor) (start, end pgtype.Timestamptz) {
	if m.Since != nil {
		if m.StartTime != nil {
			ps.Add("since", apierr.CodeInvalidValue, "give since or start_time, not both")
		}
		if err := m.GetSince().CheckValid(); err != nil || m.GetSince().AsDuration() <= 0 {
			ps.Add("since", apierr.CodeOutOfRange, "since must be a positive duration")
		} else {
			if cur.Since == 0 {
				cur.Since = s.now().UnixNano()
			}
			start = pgts(time.Unix(0, cur.Since).Add(-m.GetSince().AsDuration()))
		}
	}
	if m.StartTime != nil {
		if err := m.GetStartTime().CheckValid(); err != nil {
			ps.Add("start_time", apierr.CodeInvalidValue, "start_time is not a valid time")
		} else {
			start = pgts(m.GetStartTime().AsTime())
		}
	}
	if m.EndTime != nil {
		if err := m.GetEndTime().CheckValid(); err != nil {
			ps.Add("end_time", apierr.CodeInvalidValue, "end_time is not a valid time")
		} else {
			end = pgts(m.GetEndTime().AsTime())
			if start.Valid && !start.Time.Before(end.Time) {
				ps.Add("end_time", apierr.CodeOutOfRange, "end_time must be after the start")
			}
		}
	}
	return start, end
}

// withAttempts returns rows, calls of tenant t, as Call messages with
// their attempts (nil for no rows); a store error comes back as
// apierr.FromStore's.
func (s *CallService) withAttempts(ctx context.Context, t sqlc.Tenant, rows []sqlc.ListCallsFilteredRow) ([]*adminv1.Call, error) {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.Call.CallID
	}
	attempts, err := s.q.ListCallAttemptsForCalls(ctx, sqlc.ListCallAttemptsForCallsParams{TenantID: t.ID, CallIds: ids})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	byCall := map[string][]sqlc.CallAttempt{}
	for _, a := range attempts {
		byCall[a.CallID] = append(byCall[a.CallID], a)
	}
	var out []*adminv1.Call
	for _, r := range rows {
		out = append(out, callProto(r.Call, t.Name, r.KeyName, byCall[r.Call.CallID]))
	}
	return out, nil
}

// GetCall returns one call of the tenant with its attempts.
func (s *CallService) GetCall(ctx context.Context, req *connect.Request[adminv1.GetCallRequest]) (*connect.Response[adminv1.GetCallResponse], error) {
	m := req.Msg
	_, t, err := scope(ctx, s.q, m.GetTenant(), auth.TenantRoles()...)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	if m.GetTenant() == "" {
		ps.Add("tenant", apierr.CodeRequired, "a tenant is required")
	}
	if m.GetCallId() == "" {
		ps.Add("call_id", apierr.CodeRequired, "a call id is required")
	} else if len(m.GetCallId()) > 128 {
		ps.Add("call_id", apierr.CodeTooLong, "a call id is at most 128 characters")
	}
	if err := ps.Err(); err != nil {
		return nil, err
	}
	row, err := s.q.GetCallWithKey(ctx, sqlc.GetCallWithKeyParams{TenantID: t.ID, CallID: m.GetCallId()})
	if err != nil {
		if store.IsNotFound(err) {
			return nil, apierr.NotFound("call", m.GetCallId())
		}
		return nil, apierr.FromStore(err)
	}
	attempts, err := s.q.ListCallAttemptsForCalls(ctx, sqlc.ListCallAttemptsForCallsParams{TenantID: t.ID, CallIds: []string{row.Call.CallID}})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	return connect.NewResponse(&adminv1.GetCallResponse{Call: callProto(row.Call, t.Name, row.KeyName, attempts)}), nil
}

func callProto(c sqlc.Call, tenant, key string, attempts []sqlc.CallAttempt) *adminv1.Call {
	rec := &telemetryv1.CallRecord{
		CallId: c.CallID, TenantId: store.UUIDString(c.TenantID), KeyId: store.UUIDString(c.KeyID),
		EdgeId: c.EdgeID, Endpoint: c.Endpoint, Model: c.Model, Stream: c.Stream,
		RecordName: c.RecordName, MemberName: c.MemberName, RecordId: store.UUIDString(c.RecordID),
		Status: uint32(c.Status), ErrorCode: c.ErrorCode,
		Usage: &telemetryv1.Usage{
			InputTokens: c.InputTokens, OutputTokens: c.OutputTokens,
			CacheReadTokens: c.CacheReadTokens, CacheWriteTokens: c.CacheWriteTokens,
		},
		ReservedNanos: c.ReservedNanos, CostNanos: c.CostNanos, CostFlagged: c.CostFlagged,
		StartedAt: ts(c.StartedAt), Duration: durationpb.New(time.Duration(c.DurationMs) * time.Millisecond),
		JobHash: c.JobHash, MemberFormat: c.MemberFormat, Translated: c.Translated,
	}
	for k, v := range callOutcomes {
		if v == c.Outcome {
			rec.Outcome = k
		}
	}
	if c.CacheJobHash != "" || c.CacheMiss != "" {
		rec.Cache = &telemetryv1.CacheReport{
			JobHash: c.CacheJobHash, PreviousMember: c.CachePreviousMember, Member: c.CacheMember, Miss: c.CacheMiss,
			PreviousCachedInputTokens: c.CachePreviousCachedInputTokens, EstimatedMissCostNanos: c.CacheEstimatedMissCostNanos,
		}
	}
	for _, a := range attempts {
		at := &telemetryv1.Attempt{
			Index: uint32(a.AttemptIndex), RecordName: a.RecordName, MemberName: a.MemberName,
			Status: uint32(a.Status), Outcome: attemptOutcomes[a.Outcome], Kind: failureKind(a.Kind),
			Reason: a.Reason, Latency: durationpb.New(time.Duration(a.LatencyMs) * time.Millisecond),
			CostNanos: a.CostNanos, CostEstimated: a.CostEstimated,
		}
		if a.StartedAt.Valid {
			at.StartedAt = timestamppb.New(a.StartedAt.Time)
		}
		rec.Attempts = append(rec.Attempts, at)
	}
	return &adminv1.Call{Record: rec, Tenant: tenant, Key: key}
}

// failureKind maps call_attempts.kind to the enum (FAILURE_KIND_<KIND>).
func failureKind(k string) telemetryv1.FailureKind {
	if k == "" {
		return telemetryv1.FailureKind_FAILURE_KIND_UNSPECIFIED
	}
	v, ok := telemetryv1.FailureKind_value["FAILURE_KIND_"+upper(k)]
	if !ok {
		return telemetryv1.FailureKind_FAILURE_KIND_UNSPECIFIED
	}
	return telemetryv1.FailureKind(v)
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
