package admin

import (
	"context"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/admin/apierr"
	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

// ViewMaxAge is how long a member view counts as current (WEIR_VIEWS' max
// age, DESIGN §4); an edge silent for longer is reported silent.
const ViewMaxAge = 60 * time.Second

// edgeQueries are the reads EdgeService makes.
type edgeQueries interface {
	tenantGetter
	ListEdges(ctx context.Context) ([]sqlc.Edge, error)
	CountMemberViewsByEdge(ctx context.Context, arg sqlc.CountMemberViewsByEdgeParams) ([]sqlc.CountMemberViewsByEdgeRow, error)
	ListOwnerMemberViews(ctx context.Context, tenantID pgtype.UUID) ([]sqlc.ListOwnerMemberViewsRow, error)
}

// EdgeService implements weir.admin.v1.EdgeService over the edges and
// member_views tables (empty until edges report through the distribution
// pipeline).
type EdgeService struct {
	base
	q edgeQueries
}

// ListEdges lists every edge; any admin may call it. With a tenant, views are
// counted for that tenant only (and the caller needs a role on it); without,
// a cluster admin counts every view and anyone else the views of the tenants
// they hold roles on.
func (s *EdgeService) ListEdges(ctx context.Context, req *connect.Request[adminv1.ListEdgesRequest]) (*connect.Response[adminv1.ListEdgesResponse], error) {
	m := req.Msg
	p, err := auth.Authenticated(ctx)
	if err != nil {
		return nil, err
	}
	var owners []pgtype.UUID
	all := false
	switch {
	case m.GetTenant() != "":
		_, t, err := scope(ctx, s.q, m.GetTenant(), auth.TenantRoles()...)
		if err != nil {
			return nil, err
		}
		owners = append(owners, t.ID)
	case p.IsClusterAdmin():
		all = true
	default:
		for _, g := range p.Grants {
			if g.TenantID.Valid && !containsUUID(owners, g.TenantID) {
				owners = append(owners, g.TenantID)
			}
		}
	}
	var ps apierr.Problems
	size := pageSize(&ps, m.GetPageSize())
	off := offsetToken(&ps, m.GetPageToken())
	if err := ps.Err(); err != nil {
		return nil, err
	}
	edges, err := s.q.ListEdges(ctx)
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	now := s.now()
	counts := map[string]uint32{}
	count := func(arg sqlc.CountMemberViewsByEdgeParams) error {
		arg.Since = pgts(now.Add(-ViewMaxAge))
		rows, err := s.q.CountMemberViewsByEdge(ctx, arg)
		for _, r := range rows {
			counts[r.EdgeID] += uint32(r.Views)
		}
		return err
	}
	if all {
		err = count(sqlc.CountMemberViewsByEdgeParams{AllOwners: true})
	}
	for _, o := range owners {
		if err == nil {
			err = count(sqlc.CountMemberViewsByEdgeParams{TenantID: o})
		}
	}
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	items, next := page(edges, off, size)
	resp := &adminv1.ListEdgesResponse{NextPageToken: next}
	for _, e := range items {
		resp.Edges = append(resp.Edges, &adminv1.Edge{
			Id: e.ID, FirstSeenAt: ts(e.FirstSeen), LastSeenAt: ts(e.LastSeen),
			Silent: e.LastSeen.Time.Before(now.Add(-ViewMaxAge)), MemberViews: counts[e.ID],
		})
	}
	return connect.NewResponse(resp), nil
}

// ListMemberViews returns each edge's last view of each member of the
// tenant's (or the cluster's) records.
func (s *EdgeService) ListMemberViews(ctx context.Context, req *connect.Request[adminv1.ListMemberViewsRequest]) (*connect.Response[adminv1.ListMemberViewsResponse], error) {
	m := req.Msg
	_, t, err := scope(ctx, s.q, m.GetTenant(), auth.TenantRoles()...)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	if m.GetRecord() != "" {
		apierr.Name(&ps, "record", m.GetRecord())
	}
	if m.GetMember() != "" {
		apierr.Name(&ps, "member", m.GetMember())
	}
	size := pageSize(&ps, m.GetPageSize())
	off := offsetToken(&ps, m.GetPageToken())
	if err := ps.Err(); err != nil {
		return nil, err
	}
	views, err := loadViews(ctx, s.q, t.ID, s.now())
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	var out []*adminv1.EdgeView
	for _, v := range views {
		mv := v.GetView()
		if (m.GetRecord() != "" && mv.GetRecordName() != m.GetRecord()) ||
			(m.GetMember() != "" && mv.GetMemberName() != m.GetMember()) ||
			(m.GetEdge() != "" && mv.GetEdgeId() != m.GetEdge()) ||
			(v.GetExpired() && !m.GetIncludeExpired()) {
			continue
		}
		out = append(out, v)
	}
	items, next := page(out, off, size)
	return connect.NewResponse(&adminv1.ListMemberViewsResponse{Views: items, NextPageToken: next}), nil
}

// viewQueries read member views.
type viewQueries interface {
	ListOwnerMemberViews(ctx context.Context, tenantID pgtype.UUID) ([]sqlc.ListOwnerMemberViewsRow, error)
}

// loadViews reads the owner's member views, ordered by record, member and
// edge. A view that does not decode is shown with its names only.
func loadViews(ctx context.Context, q viewQueries, owner pgtype.UUID, now time.Time) ([]*adminv1.EdgeView, error) {
	rows, err := q.ListOwnerMemberViews(ctx, owner)
	if err != nil {
		return nil, err
	}
	out := make([]*adminv1.EdgeView, 0, len(rows))
	for _, r := range rows {
		mv := &telemetryv1.MemberView{}
		if err := proto.Unmarshal(r.View, mv); err != nil {
			mv = &telemetryv1.MemberView{}
		}
		// The row's columns are authoritative for names and ownership.
		mv.EdgeId, mv.RecordName, mv.MemberName = r.EdgeID, r.RecordName, r.MemberName
		mv.RecordId, mv.TenantId = store.UUIDString(r.RecordID), store.UUIDString(owner)
		if mv.ObservedAt == nil {
			mv.ObservedAt = timestamppb.New(r.ObservedAt.Time)
		}
		out = append(out, &adminv1.EdgeView{View: mv, Expired: r.ObservedAt.Time.Before(now.Add(-ViewMaxAge))})
	}
	return out, nil
}

func containsUUID(list []pgtype.UUID, u pgtype.UUID) bool {
	for _, x := range list {
		if x == u {
			return true
		}
	}
	return false
}
