package admin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/controlplane/internal/admin/apierr"
	"weir.dev/controlplane/internal/auth"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

// auditQueries are the reads AuditService makes.
type auditQueries interface {
	tenantGetter
	ListAuditEvents(ctx context.Context, arg sqlc.ListAuditEventsParams) ([]sqlc.ListAuditEventsRow, error)
}

// AuditService implements weir.admin.v1.AuditService.
type AuditService struct {
	base
	q auditQueries
}

// ListAuditEvents lists audit entries newest first. A tenant's entries need
// any role on it; every entry (empty tenant) needs cluster admin.
func (s *AuditService) ListAuditEvents(ctx context.Context, req *connect.Request[adminv1.ListAuditEventsRequest]) (*connect.Response[adminv1.ListAuditEventsResponse], error) {
	m := req.Msg
	_, t, err := scope(ctx, s.q, m.GetTenant(), auth.TenantRoles()...)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	size := pageSize(&ps, m.GetPageSize())
	before := int64(math.MaxInt64)
	if tok := m.GetPageToken(); tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		n, perr := strconv.ParseInt(string(b), 10, 64)
		if err != nil || perr != nil || n <= 0 {
			ps.Add("page_token", apierr.CodeInvalidValue, "page_token is not a token this server returned")
		} else {
			before = n
		}
	}
	var start, end pgtype.Timestamptz
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
				ps.Add("end_time", apierr.CodeOutOfRange, "end_time must be after start_time")
			}
		}
	}
	if err := ps.Err(); err != nil {
		return nil, err
	}
	rows, err := s.q.ListAuditEvents(ctx, sqlc.ListAuditEventsParams{
		AllTenants: m.GetTenant() == "", TenantID: t.ID, StartTime: start, EndTime: end,
		Actor: m.GetActor(), TargetPrefix: m.GetTargetPrefix(), BeforeID: before, MaxRows: int32(size + 1),
	})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	resp := &adminv1.ListAuditEventsResponse{}
	if len(rows) > size {
		rows = rows[:size]
		resp.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(rows[size-1].ID, 10)))
	}
	for _, r := range rows {
		var d struct {
			Procedure string `json:"procedure"`
			TokenID   string `json:"token_id"`
		}
		_ = json.Unmarshal(r.Details, &d)
		target := r.ObjectKind + "/" + r.ObjectName
		resp.Events = append(resp.Events, &adminv1.AuditEvent{
			Id: strconv.FormatInt(r.ID, 10), Time: ts(r.At), Actor: r.Actor, TokenId: d.TokenID,
			Tenant: r.TenantName, Procedure: d.Procedure, Target: target,
			Summary: r.Actor + " " + pastTense(r.Action) + " " + target + ".",
		})
	}
	return connect.NewResponse(resp), nil
}

func pastTense(action string) string {
	switch action {
	case "set":
		return "set"
	case "create", "update", "delete", "revoke", "share", "unshare", "remove", "reset":
		return action + "d"
	case "add":
		return "added"
	case "grant":
		return "granted"
	}
	return "did " + action + " on"
}
