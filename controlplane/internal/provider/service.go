package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/admin/apierr"
	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing/rules"
)

// DefaultViewMaxAge is how long an edge's view of a member counts as
// current when Deps.ViewMaxAge is 0: the max age of the WEIR_VIEWS bucket
// (DESIGN §4).
const DefaultViewMaxAge = 60 * time.Second

// Resetter delivers an operator's reset of a pool member (R-OBS-4) to every
// edge, as a weir.telemetry.v1.Command on weir.cmd.>. The distribution
// layer implements it; ResetMember returns once the command is published
// (edges apply it as they receive it) and must not keep cmd.
type Resetter interface {
	ResetMember(ctx context.Context, cmd *telemetryv1.Command) error
}

// Deps are what the provider, pool and price services need.
type Deps struct {
	// Store is the control plane's database. Required.
	Store *store.Store
	// Resetter sends member resets to the edges. When nil, ResetPoolMember
	// still authorizes, checks and audits the request and answers with the
	// command's id, but nothing reaches the edges (the audit entry says
	// "delivered": false); a control plane without distribution has no
	// edges to reach.
	Resetter Resetter
	// Log receives internal errors (never secret values); nil discards.
	Log *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// ViewMaxAge is how long an edge's member view counts as current;
	// older views are returned with expired set. 0 means DefaultViewMaxAge.
	ViewMaxAge time.Duration
}

// Service implements adminv1connect.ProviderServiceHandler,
// PoolServiceHandler and PriceServiceHandler. Create it with New; it is
// safe for concurrent use.
type Service struct {
	store      *store.Store
	resetter   Resetter
	log        *slog.Logger
	now        func() time.Time
	viewMaxAge time.Duration
}

var (
	_ adminv1connect.ProviderServiceHandler = (*Service)(nil)
	_ adminv1connect.PoolServiceHandler     = (*Service)(nil)
	_ adminv1connect.PriceServiceHandler    = (*Service)(nil)
)

// New returns the services over deps. It panics when deps.Store is nil, a
// programming error.
func New(deps Deps) *Service {
	if deps.Store == nil {
		panic("provider.New: Deps.Store is nil")
	}
	s := &Service{store: deps.Store, resetter: deps.Resetter, log: deps.Log, now: deps.Now, viewMaxAge: deps.ViewMaxAge}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.viewMaxAge <= 0 {
		s.viewMaxAge = DefaultViewMaxAge
	}
	return s
}

// Register mounts ProviderService, PoolService and PriceService on mux.
// opts are passed to every handler; they must include the auth
// interceptor (auth.NewInterceptor), since every method authorizes the
// Principal it puts in the context and refuses a request without one
// (Unauthenticated).
func Register(mux *http.ServeMux, deps Deps, opts ...connect.HandlerOption) {
	s := New(deps)
	mux.Handle(adminv1connect.NewProviderServiceHandler(s, opts...))
	mux.Handle(adminv1connect.NewPoolServiceHandler(s, opts...))
	mux.Handle(adminv1connect.NewPriceServiceHandler(s, opts...))
}

// writeRoles may change records, members and prices of a tenant.
var writeRoles = []auth.Role{auth.RoleTenantAdmin, auth.RoleProviderAdmin}

// scope is the owner a request addresses: a tenant, or the cluster's
// managed records.
type scope struct {
	tenant    string      // the tenant's name; "" for the cluster
	owner     pgtype.UUID // the tenant's id; the zero UUID (store.Cluster) for the cluster
	principal auth.Principal
}

func (sc scope) managed() bool { return !sc.owner.Valid }

// authorize checks that the caller may read (write false) or change the
// objects of tenant ("" = the cluster's managed records). It returns the
// caller; the tenant itself is looked up by resolve.
func authorize(ctx context.Context, tenant string, write bool) (auth.Principal, error) {
	if write {
		return auth.Require(ctx, tenant, writeRoles...)
	}
	return auth.RequireRead(ctx, tenant)
}

// resolve completes a scope with the tenant's id. A tenant that does not
// exist is NotFound with the same message auth gives for a tenant the
// caller may not see.
func resolve(ctx context.Context, q *sqlc.Queries, p auth.Principal, tenant string) (scope, error) {
	sc := scope{tenant: tenant, principal: p}
	if tenant == "" {
		return sc, nil
	}
	if !ValidName(tenant) {
		return sc, auth.TenantNotFound(tenant)
	}
	t, err := q.GetTenantByName(ctx, tenant)
	if store.IsNotFound(err) {
		return sc, auth.TenantNotFound(tenant)
	}
	if err != nil {
		return sc, err
	}
	sc.owner = t.ID
	return sc, nil
}

// read authorizes a read of tenant and runs fn with the resolved scope in
// one read-only REPEATABLE READ transaction, so that a record, its members,
// prices and views are read as of one moment even while they change.
func (s *Service) read(ctx context.Context, tenant string, fn func(q *sqlc.Queries, sc scope) error) error {
	p, err := authorize(ctx, tenant, false)
	if err != nil {
		return err
	}
	tx, err := s.store.Pool().BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("begin read: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := sqlc.New(tx)
	sc, err := resolve(ctx, q, p, tenant)
	if err != nil {
		return err
	}
	return fn(q, sc)
}

// change authorizes a change of tenant's objects and runs fn in one
// transaction with the resolved scope: everything fn writes, its audit row
// and its outbox row commit together or not at all.
func (s *Service) change(ctx context.Context, tenant string, fn func(tx *store.Tx, sc scope) error) error {
	p, err := authorize(ctx, tenant, true)
	if err != nil {
		return err
	}
	return s.store.Tx(ctx, p.Actor(), func(tx *store.Tx) error {
		sc, err := resolve(ctx, tx.Q, p, tenant)
		if err != nil {
			return err
		}
		return fn(tx, sc)
	})
}

// rpcError maps an error of a handler to the admin API's Connect error:
// validation problems to InvalidArgument with every problem listed, store
// errors and Connect errors as package apierr does. Internal errors are
// logged here with their cause; the client learns nothing of it.
func (s *Service) rpcError(ctx context.Context, procedure string, err error) error {
	if err == nil {
		return nil
	}
	if ps := problemProtos(err); len(ps) > 0 {
		return apierr.Invalid(ps...)
	}
	mapped := apierr.FromStore(err)
	var ce *connect.Error
	if errors.As(mapped, &ce) && ce.Code() == connect.CodeInternal {
		s.log.ErrorContext(ctx, "provider service: internal error", "procedure", procedure, "err", apierr.Cause(mapped))
	}
	return mapped
}

// problemProtos returns every *Problem err wraps as the API's Problem, in
// order; nil when it wraps none.
func problemProtos(err error) []*adminv1.Problem {
	var out []*adminv1.Problem
	for _, p := range Problems(err) {
		out = append(out, &adminv1.Problem{Field: p.Field, Code: p.Code, Message: p.Message})
	}
	return out
}

// errAborted is the answer to an expected_revision that no longer matches.
func errAborted(name string, want, have uint64) error {
	return connect.NewError(connect.CodeAborted, errors.New("provider record "+quote(name)+" changed since revision "+u64(want)+" (now "+u64(have)+"); read it again"))
}

// checkRevision compares an expected_revision (0: none) with the record's.
func checkRevision(st *stored, want uint64) error {
	if want != 0 && want != revisionOf(st.row) {
		return errAborted(st.rec.Name, want, revisionOf(st.row))
	}
	return nil
}

// recordProto is the API's view of a stored record. sharedWith is given for
// cluster admins only.
func recordProto(st *stored, tenant string, sharedWith []string) *adminv1.ProviderRecord {
	out := &adminv1.ProviderRecord{
		Id:         store.UUIDString(st.row.ID),
		Name:       st.rec.Name,
		Tenant:     tenant,
		Managed:    st.rec.Managed,
		Kind:       adminv1.RecordKind_RECORD_KIND_PLAIN,
		Preset:     ParsePreset(st.row.Preset),
		Spec:       cloneSpec(st.rec.Spec),
		SharedWith: sharedWith,
		Revision:   revisionOf(st.row),
		CreatedAt:  ts(st.row.CreatedAt),
		UpdatedAt:  ts(st.row.UpdatedAt),
	}
	if st.rec.Managed {
		out.Tenant = ""
	}
	if st.rec.Pool {
		out.Kind = adminv1.RecordKind_RECORD_KIND_POOL
		for _, m := range sortedMembers(st.rec) {
			out.MemberNames = append(out.MemberNames, m.Name)
		}
	}
	return out
}

// memberDetails returns the record's members (one "primary" member for a
// plain record) as stored, resolved and seen by edges, by order then name.
func memberDetails(st *stored, views map[string][]*adminv1.EdgeView) []*adminv1.MemberDetail {
	if !st.rec.Pool {
		return []*adminv1.MemberDetail{{
			Member:    &adminv1.PoolMember{Name: rules.PrimaryMember, Spec: &adminv1.PoolMemberSpec{}},
			Effective: Effective(st.rec, nil),
			EdgeViews: views[rules.PrimaryMember],
		}}
	}
	var out []*adminv1.MemberDetail
	for _, m := range sortedMembers(st.rec) {
		out = append(out, memberDetail(st, m, views))
	}
	return out
}

func memberDetail(st *stored, m *Member, views map[string][]*adminv1.EdgeView) *adminv1.MemberDetail {
	row := st.members[m.Name]
	return &adminv1.MemberDetail{
		Member: &adminv1.PoolMember{
			Id:        store.UUIDString(row.ID),
			Name:      m.Name,
			Spec:      cloneMemberSpec(m.Spec),
			CreatedAt: ts(row.CreatedAt),
			UpdatedAt: ts(row.UpdatedAt),
		},
		Effective: Effective(st.rec, m),
		EdgeViews: views[m.Name],
	}
}

// edgeViews reads each edge's last view of each member of the record, by
// member name. A view older than the max age is returned with expired set;
// a view that does not decode is logged and left out.
func (s *Service) edgeViews(ctx context.Context, q *sqlc.Queries, owner pgtype.UUID, record string) (map[string][]*adminv1.EdgeView, error) {
	rows, err := q.ListMemberViews(ctx, sqlc.ListMemberViewsParams{TenantID: owner, RecordName: record})
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := map[string][]*adminv1.EdgeView{}
	for _, r := range rows {
		v := &telemetryv1.MemberView{}
		if err := proto.Unmarshal(r.View, v); err != nil {
			s.log.WarnContext(ctx, "provider service: undecodable member view", "record", record, "member", r.MemberName, "edge", r.EdgeID, "err", err)
			continue
		}
		expired := r.ObservedAt.Valid && now.Sub(r.ObservedAt.Time) > s.viewMaxAge
		out[r.MemberName] = append(out[r.MemberName], &adminv1.EdgeView{View: v, Expired: expired})
	}
	return out, nil
}

// redactShared removes from a managed record what the tenants it is shared
// with may not read: base_url, auth, key_secret and account of the record
// and its members, and the edges' views (ProviderService comment).
func redactShared(rec *adminv1.ProviderRecord, members []*adminv1.MemberDetail) {
	if sp := rec.GetSpec(); sp != nil {
		sp.BaseUrl, sp.Auth, sp.KeySecret, sp.Account = "", nil, "", ""
	}
	for _, d := range members {
		if sp := d.GetMember().GetSpec(); sp != nil {
			sp.BaseUrl, sp.Auth, sp.KeySecret, sp.Account = "", nil, nil, nil
		}
		if e := d.GetEffective(); e != nil {
			e.BaseUrl, e.Auth, e.KeySecret, e.Account = "", nil, "", ""
		}
		d.EdgeViews = nil
	}
}

// sharesOf returns the names of the tenants each managed record is shared
// with, by record name.
func sharesOf(ctx context.Context, q *sqlc.Queries) (map[string][]string, error) {
	rows, err := q.ListRecordShares(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, r := range rows {
		out[r.RecordName] = append(out[r.RecordName], r.TenantName)
	}
	return out, nil
}

// sharedRecordNamed returns the managed record of that name shared with the
// tenant, found false when there is none.
func sharedRecordNamed(ctx context.Context, q *sqlc.Queries, tenant pgtype.UUID, name string, lock bool) (*stored, bool, error) {
	rows, err := q.ListSharedRecords(ctx, tenant)
	if err != nil {
		return nil, false, err
	}
	if !slices.ContainsFunc(rows, func(r sqlc.ProviderRecord) bool { return r.Name == name }) {
		return nil, false, nil
	}
	return loadRecord(ctx, q, store.Cluster, name, lock)
}

func ts(t pgtype.Timestamptz) *timestamppb.Timestamp {
	if !t.Valid {
		return nil
	}
	return timestamppb.New(t.Time)
}
