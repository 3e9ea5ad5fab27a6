package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/controlplane/internal/admin/apierr"
	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

// adminQueries are the reads AdminService makes.
type adminQueries interface {
	tenantGetter
	GetAdmin(ctx context.Context, id pgtype.UUID) (sqlc.Admin, error)
	GetAdminByName(ctx context.Context, name string) (sqlc.Admin, error)
	ListAdmins(ctx context.Context) ([]sqlc.Admin, error)
	ListAdminsWithTenantRole(ctx context.Context, tenantID pgtype.UUID) ([]sqlc.Admin, error)
	ListAdminGrants(ctx context.Context, adminID pgtype.UUID) ([]sqlc.ListAdminGrantsRow, error)
	AdminLastSeen(ctx context.Context, adminID pgtype.UUID) (pgtype.Timestamptz, error)
	GetAdminToken(ctx context.Context, id pgtype.UUID) (sqlc.AdminToken, error)
	ListAdminTokens(ctx context.Context, adminID pgtype.UUID) ([]sqlc.AdminToken, error)
	ListAuditForObjects(ctx context.Context, arg sqlc.ListAuditForObjectsParams) ([]sqlc.ListAuditForObjectsRow, error)
}

// AdminService implements weir.admin.v1.AdminService.
//
// Who may manage whom: a cluster admin manages every admin. Anyone else
// manages the admins that hold at least one role and only roles on tenants
// where the caller is tenant admin. An admin the caller may not manage (and
// is not) is NotFound, like one that does not exist. Roles on other tenants
// are never shown to a non-cluster caller.
type AdminService struct {
	base
	q adminQueries
}

// target is an admin with its grants.
type target struct {
	admin  sqlc.Admin
	grants []auth.Grant
}

func (s *AdminService) load(ctx context.Context, q adminQueries, a sqlc.Admin) (target, error) {
	rows, err := q.ListAdminGrants(ctx, a.ID)
	if err != nil {
		return target{}, err
	}
	t := target{admin: a}
	for _, r := range rows {
		t.grants = append(t.grants, auth.Grant{Role: auth.Role(r.Role), TenantID: r.TenantID, Tenant: r.TenantName.String})
	}
	return t, nil
}

// manages reports whether p may manage t.
func manages(p auth.Principal, t target) bool {
	if p.IsClusterAdmin() {
		return true
	}
	if len(t.grants) == 0 {
		return false
	}
	for _, g := range t.grants {
		if g.Role == auth.RoleClusterAdmin || !slices.Contains(p.RolesOn(g.Tenant), auth.RoleTenantAdmin) {
			return false
		}
	}
	return true
}

// find loads the admin of that name ("" means the caller) when p may see it:
// itself, or one it manages; otherwise NotFound.
func (s *AdminService) find(ctx context.Context, q adminQueries, p auth.Principal, name string) (target, error) {
	var a sqlc.Admin
	var err error
	if name == "" {
		id, perr := store.ParseUUID(p.AdminID)
		if perr != nil {
			return target{}, apierr.Internal(perr)
		}
		a, err = q.GetAdmin(ctx, id)
	} else {
		a, err = q.GetAdminByName(ctx, name)
	}
	if err != nil {
		if store.IsNotFound(err) {
			return target{}, apierr.NotFound("admin", name)
		}
		return target{}, err
	}
	t, err := s.load(ctx, q, a)
	if err != nil {
		return target{}, err
	}
	if store.UUIDString(a.ID) != p.AdminID && !manages(p, t) {
		return target{}, apierr.NotFound("admin", name)
	}
	return t, nil
}

// adminProto shows t to p: roles on tenants p holds no role on are left out
// unless p is a cluster admin.
func (s *AdminService) adminProto(ctx context.Context, p auth.Principal, t target) (*adminv1.Admin, error) {
	out := &adminv1.Admin{Id: store.UUIDString(t.admin.ID), Name: t.admin.Name, DisplayName: t.admin.DisplayName, CreatedAt: ts(t.admin.CreatedAt)}
	self := out.Id == p.AdminID
	for _, g := range t.grants {
		if p.IsClusterAdmin() || self || (g.Role != auth.RoleClusterAdmin && len(p.RolesOn(g.Tenant)) > 0) {
			out.Roles = append(out.Roles, &adminv1.RoleBinding{Role: g.Role.Proto(), Tenant: g.Tenant})
		}
	}
	seen, err := s.q.AdminLastSeen(ctx, t.admin.ID)
	if err != nil {
		return nil, err
	}
	out.LastSeenAt = ts(seen)
	return out, nil
}

// WhoAmI returns the caller, its roles and its token.
func (s *AdminService) WhoAmI(ctx context.Context, req *connect.Request[adminv1.WhoAmIRequest]) (*connect.Response[adminv1.WhoAmIResponse], error) {
	p, err := auth.Authenticated(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.find(ctx, s.q, p, "")
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	a, err := s.adminProto(ctx, p, t)
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	resp := &adminv1.WhoAmIResponse{Admin: a}
	if id, err := store.ParseUUID(p.TokenID); err == nil {
		tok, err := s.q.GetAdminToken(ctx, id)
		if err != nil {
			return nil, apierr.FromStore(err)
		}
		resp.Token = s.tokenProtos(ctx, t.admin.Name, tok)[0]
	}
	return connect.NewResponse(resp), nil
}

// validateBindings checks role bindings' shape.
func validateBindings(ps *apierr.Problems, field string, roles []*adminv1.RoleBinding) {
	for i, b := range roles {
		f := fmt.Sprintf("%s[%d]", field, i)
		validateBinding(ps, f+".role", f+".tenant", b.GetRole(), b.GetTenant())
		for _, o := range roles[:i] {
			if o.GetRole() == b.GetRole() && o.GetTenant() == b.GetTenant() {
				ps.Add(f, apierr.CodeDuplicate, "role listed twice")
				break
			}
		}
	}
}

func validateBinding(ps *apierr.Problems, roleField, tenantField string, role adminv1.Role, tenant string) {
	r, ok := auth.RoleFromProto(role)
	if !ok {
		ps.Add(roleField, apierr.CodeRequired, "a role is required")
		return
	}
	if r == auth.RoleClusterAdmin {
		if tenant != "" {
			ps.Add(tenantField, apierr.CodeInvalidValue, "the cluster admin role is held without a tenant")
		}
		return
	}
	if tenant == "" {
		ps.Add(tenantField, apierr.CodeRequired, "this role is held on a tenant; a tenant is required")
		return
	}
	apierr.Name(ps, tenantField, tenant)
}

// mayGrant checks that p may grant or revoke role on tenant: cluster admins
// anything; others tenant roles on tenants they are tenant admin of. A tenant
// p holds no role on is NotFound.
func mayGrant(p auth.Principal, role auth.Role, tenant string) error {
	if p.IsClusterAdmin() {
		return nil
	}
	if role == auth.RoleClusterAdmin {
		return connect.NewError(connect.CodePermissionDenied, errors.New("only cluster admins may grant or revoke the cluster admin role"))
	}
	held := p.RolesOn(tenant)
	if len(held) == 0 {
		return auth.TenantNotFound(tenant)
	}
	if !slices.Contains(held, auth.RoleTenantAdmin) {
		return connect.NewError(connect.CodePermissionDenied, errors.New("only tenant admins may manage the admins of a tenant"))
	}
	return nil
}

var errManage = errors.New("only cluster admins and tenant admins may manage admins")

// CreateAdmin creates an admin with roles and no token.
func (s *AdminService) CreateAdmin(ctx context.Context, req *connect.Request[adminv1.CreateAdminRequest]) (*connect.Response[adminv1.CreateAdminResponse], error) {
	m := req.Msg
	p, err := auth.Authenticated(ctx)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	apierr.Name(&ps, "name", m.GetName())
	if n := utf8.RuneCountInString(m.GetDisplayName()); n > 256 || !utf8.ValidString(m.GetDisplayName()) {
		ps.Add("display_name", apierr.CodeTooLong, "display_name is at most 256 characters of UTF-8")
	}
	if !p.IsClusterAdmin() && len(m.GetRoles()) == 0 {
		ps.Add("roles", apierr.CodeRequired, "a tenant admin must give the new admin at least one role on their tenant")
	}
	validateBindings(&ps, "roles", m.GetRoles())
	if err := ps.Err(); err != nil {
		return nil, err
	}
	for _, b := range m.GetRoles() {
		r, _ := auth.RoleFromProto(b.GetRole())
		if err := mayGrant(p, r, b.GetTenant()); err != nil {
			return nil, err
		}
	}
	var t target
	err = s.tx.Tx(ctx, p.Actor(), func(tx *store.Tx) error {
		a, err := tx.Q.CreateAdmin(ctx, sqlc.CreateAdminParams{Name: m.GetName(), DisplayName: m.GetDisplayName()})
		if err != nil {
			return err
		}
		var ps apierr.Problems
		var tenants []string
		for i, b := range m.GetRoles() {
			r, _ := auth.RoleFromProto(b.GetRole())
			var tid pgtype.UUID
			if b.GetTenant() != "" {
				tn, err := tx.Q.GetTenantByName(ctx, b.GetTenant())
				if err != nil {
					if store.IsNotFound(err) {
						ps.Addf(fmt.Sprintf("roles[%d].tenant", i), apierr.CodeNotFound, "tenant %q not found", b.GetTenant())
						continue
					}
					return err
				}
				tid = tn.ID
				if len(tenants) == 0 {
					tx.SetAuditTenant(tid)
				}
				tenants = append(tenants, b.GetTenant())
			}
			if _, err := tx.Q.GrantRole(ctx, sqlc.GrantRoleParams{AdminID: a.ID, Role: string(r), TenantID: tid}); err != nil {
				return err
			}
		}
		if err := ps.Err(); err != nil {
			return err
		}
		if t, err = s.load(ctx, tx.Q, a); err != nil {
			return err
		}
		return tx.Audit(ctx, "create", "admins", a.Name, map[string]any{"id": store.UUIDString(a.ID), "roles": bindingsText(m.GetRoles())})
	})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	out, err := s.adminProto(ctx, p, t)
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	return connect.NewResponse(&adminv1.CreateAdminResponse{Admin: out}), nil
}

// ListAdmins lists admins with a role on the tenant, or all (cluster admins).
func (s *AdminService) ListAdmins(ctx context.Context, req *connect.Request[adminv1.ListAdminsRequest]) (*connect.Response[adminv1.ListAdminsResponse], error) {
	m := req.Msg
	p, tn, err := scope(ctx, s.q, m.GetTenant(), auth.TenantRoles()...)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	size := pageSize(&ps, m.GetPageSize())
	off := offsetToken(&ps, m.GetPageToken())
	if err := ps.Err(); err != nil {
		return nil, err
	}
	var list []sqlc.Admin
	if m.GetTenant() == "" {
		list, err = s.q.ListAdmins(ctx)
	} else {
		list, err = s.q.ListAdminsWithTenantRole(ctx, tn.ID)
	}
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	items, next := page(list, off, size)
	resp := &adminv1.ListAdminsResponse{NextPageToken: next}
	for _, a := range items {
		t, err := s.load(ctx, s.q, a)
		if err != nil {
			return nil, apierr.FromStore(err)
		}
		out, err := s.adminProto(ctx, p, t)
		if err != nil {
			return nil, apierr.FromStore(err)
		}
		resp.Admins = append(resp.Admins, out)
	}
	return connect.NewResponse(resp), nil
}

// GetAdmin returns one admin the caller may manage, or the caller.
func (s *AdminService) GetAdmin(ctx context.Context, req *connect.Request[adminv1.GetAdminRequest]) (*connect.Response[adminv1.GetAdminResponse], error) {
	p, err := auth.Authenticated(ctx)
	if err != nil {
		return nil, err
	}
	if n := req.Msg.GetName(); n != "" {
		var ps apierr.Problems
		apierr.Name(&ps, "name", n)
		if err := ps.Err(); err != nil {
			return nil, err
		}
	}
	t, err := s.find(ctx, s.q, p, req.Msg.GetName())
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	out, err := s.adminProto(ctx, p, t)
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	return connect.NewResponse(&adminv1.GetAdminResponse{Admin: out}), nil
}

// DeleteAdmin deletes an admin, its roles and tokens. The last cluster admin
// cannot be deleted.
func (s *AdminService) DeleteAdmin(ctx context.Context, req *connect.Request[adminv1.DeleteAdminRequest]) (*connect.Response[adminv1.DeleteAdminResponse], error) {
	p, err := auth.Authenticated(ctx)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	apierr.Name(&ps, "name", req.Msg.GetName())
	if err := ps.Err(); err != nil {
		return nil, err
	}
	err = s.tx.Tx(ctx, p.Actor(), func(tx *store.Tx) error {
		if err := tx.Q.LockAdminRoles(ctx); err != nil {
			return err
		}
		t, err := s.find(ctx, tx.Q, p, req.Msg.GetName())
		if err != nil {
			return err
		}
		if store.UUIDString(t.admin.ID) == p.AdminID && !manages(p, t) {
			return connect.NewError(connect.CodePermissionDenied, errManage)
		}
		if err := s.keepClusterAdmin(ctx, tx, t, auth.RoleClusterAdmin); err != nil {
			return err
		}
		if n, err := tx.Q.DeleteAdmin(ctx, t.admin.ID); err != nil {
			return err
		} else if n == 0 {
			return apierr.NotFound("admin", req.Msg.GetName())
		}
		s.auditTenantOf(tx, t)
		return tx.Audit(ctx, "delete", "admins", t.admin.Name, map[string]any{"id": store.UUIDString(t.admin.ID)})
	})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	return connect.NewResponse(&adminv1.DeleteAdminResponse{}), nil
}

// keepClusterAdmin refuses a change that takes role from t when t is the last
// cluster admin.
func (s *AdminService) keepClusterAdmin(ctx context.Context, tx *store.Tx, t target, role auth.Role) error {
	if role != auth.RoleClusterAdmin || !slices.ContainsFunc(t.grants, func(g auth.Grant) bool { return g.Role == auth.RoleClusterAdmin }) {
		return nil
	}
	n, err := tx.Q.CountClusterAdmins(ctx)
	if err != nil {
		return err
	}
	if n <= 1 {
		return store.Preconditionf("this is the last cluster admin; grant the role to another admin first")
	}
	return nil
}

// auditTenantOf attributes an admin change to the first tenant the target
// holds a role on (none for cluster-only admins).
func (s *AdminService) auditTenantOf(tx *store.Tx, t target) {
	for _, g := range t.grants {
		if g.TenantID.Valid {
			tx.SetAuditTenant(g.TenantID)
			return
		}
	}
}

// GrantRole gives an admin a role; granting a held role changes nothing.
func (s *AdminService) GrantRole(ctx context.Context, req *connect.Request[adminv1.GrantRoleRequest]) (*connect.Response[adminv1.GrantRoleResponse], error) {
	return s.changeRole(ctx, req.Msg.GetAdmin(), req.Msg.GetRole(), req.Msg.GetTenant(), true)
}

// RevokeRole takes a role from an admin.
func (s *AdminService) RevokeRole(ctx context.Context, req *connect.Request[adminv1.RevokeRoleRequest]) (*connect.Response[adminv1.RevokeRoleResponse], error) {
	resp, err := s.changeRole(ctx, req.Msg.GetAdmin(), req.Msg.GetRole(), req.Msg.GetTenant(), false)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&adminv1.RevokeRoleResponse{Admin: resp.Msg.GetAdmin()}), nil
}

func (s *AdminService) changeRole(ctx context.Context, name string, role adminv1.Role, tenant string, grant bool) (*connect.Response[adminv1.GrantRoleResponse], error) {
	p, err := auth.Authenticated(ctx)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	apierr.Name(&ps, "admin", name)
	validateBinding(&ps, "role", "tenant", role, tenant)
	if err := ps.Err(); err != nil {
		return nil, err
	}
	r, _ := auth.RoleFromProto(role)
	if err := mayGrant(p, r, tenant); err != nil {
		return nil, err
	}
	var t target
	err = s.tx.Tx(ctx, p.Actor(), func(tx *store.Tx) error {
		if err := tx.Q.LockAdminRoles(ctx); err != nil {
			return err
		}
		var err error
		if t, err = s.find(ctx, tx.Q, p, name); err != nil {
			return err
		}
		var tid pgtype.UUID
		if tenant != "" {
			tn, err := tx.Q.GetTenantByName(ctx, tenant)
			if err != nil {
				if store.IsNotFound(err) {
					return auth.TenantNotFound(tenant)
				}
				return err
			}
			tid = tn.ID
			tx.SetAuditTenant(tid)
		}
		action := "grant"
		if grant {
			if _, err := tx.Q.GrantRole(ctx, sqlc.GrantRoleParams{AdminID: t.admin.ID, Role: string(r), TenantID: tid}); err != nil {
				return err
			}
		} else {
			action = "revoke"
			if err := s.keepClusterAdmin(ctx, tx, t, r); err != nil {
				return err
			}
			n, err := tx.Q.RevokeRole(ctx, sqlc.RevokeRoleParams{AdminID: t.admin.ID, Role: string(r), TenantID: tid})
			if err != nil {
				return err
			}
			if n == 0 {
				return connect.NewError(connect.CodeNotFound, fmt.Errorf("admin %q does not hold that role", name))
			}
		}
		if t, err = s.load(ctx, tx.Q, t.admin); err != nil {
			return err
		}
		return tx.Audit(ctx, action, "admins", t.admin.Name, map[string]any{
			"id": store.UUIDString(t.admin.ID), "role": string(r), "tenant": tenant,
		})
	})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	out, err := s.adminProto(ctx, p, t)
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	return connect.NewResponse(&adminv1.GrantRoleResponse{Admin: out}), nil
}

// CreateAdminToken creates a token and returns its plaintext once.
func (s *AdminService) CreateAdminToken(ctx context.Context, req *connect.Request[adminv1.CreateAdminTokenRequest]) (*connect.Response[adminv1.CreateAdminTokenResponse], error) {
	m := req.Msg
	p, err := auth.Authenticated(ctx)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	if m.GetAdmin() != "" {
		apierr.Name(&ps, "admin", m.GetAdmin())
	}
	if n := utf8.RuneCountInString(m.GetDescription()); n > 256 || !utf8.ValidString(m.GetDescription()) {
		ps.Add("description", apierr.CodeTooLong, "description is at most 256 characters of UTF-8")
	}
	var expires pgtype.Timestamptz
	if m.Ttl != nil {
		d := m.GetTtl().AsDuration()
		if err := m.GetTtl().CheckValid(); err != nil || d < time.Minute {
			ps.Add("ttl", apierr.CodeOutOfRange, "ttl must be at least 1m")
		} else {
			expires = pgts(s.now().Add(d))
		}
	}
	if err := ps.Err(); err != nil {
		return nil, err
	}
	token, sum, err := auth.NewToken(s.rand)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	var t target
	var tok sqlc.AdminToken
	err = s.tx.Tx(ctx, p.Actor(), func(tx *store.Tx) error {
		var err error
		if t, err = s.find(ctx, tx.Q, p, m.GetAdmin()); err != nil {
			return err
		}
		if tok, err = tx.Q.CreateAdminToken(ctx, sqlc.CreateAdminTokenParams{
			AdminID: t.admin.ID, Label: m.GetDescription(), SHA256: sum, ExpiresAt: expires,
		}); err != nil {
			return err
		}
		s.auditTenantOf(tx, t)
		return tx.Audit(ctx, "create", "admin_tokens", t.admin.Name, map[string]any{
			"id": store.UUIDString(tok.ID), "prefix": keyPrefix(token), "description": m.GetDescription(),
		})
	})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	out := tokenProto(t.admin.Name, tok)
	out.TokenPrefix = keyPrefix(token)
	return connect.NewResponse(&adminv1.CreateAdminTokenResponse{Token: out, Secret: token}), nil
}

// ListAdminTokens lists an admin's tokens without token material.
func (s *AdminService) ListAdminTokens(ctx context.Context, req *connect.Request[adminv1.ListAdminTokensRequest]) (*connect.Response[adminv1.ListAdminTokensResponse], error) {
	m := req.Msg
	p, err := auth.Authenticated(ctx)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	if m.GetAdmin() != "" {
		apierr.Name(&ps, "admin", m.GetAdmin())
	}
	size := pageSize(&ps, m.GetPageSize())
	off := offsetToken(&ps, m.GetPageToken())
	if err := ps.Err(); err != nil {
		return nil, err
	}
	t, err := s.find(ctx, s.q, p, m.GetAdmin())
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	all, err := s.q.ListAdminTokens(ctx, t.admin.ID)
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	var list []sqlc.AdminToken
	for _, k := range all {
		if !k.RevokedAt.Valid || m.GetIncludeRevoked() {
			list = append(list, k)
		}
	}
	items, next := page(list, off, size)
	return connect.NewResponse(&adminv1.ListAdminTokensResponse{Tokens: s.tokenProtos(ctx, t.admin.Name, items...), NextPageToken: next}), nil
}

// RevokeAdminToken revokes a token of the caller or of an admin it manages.
func (s *AdminService) RevokeAdminToken(ctx context.Context, req *connect.Request[adminv1.RevokeAdminTokenRequest]) (*connect.Response[adminv1.RevokeAdminTokenResponse], error) {
	p, err := auth.Authenticated(ctx)
	if err != nil {
		return nil, err
	}
	if req.Msg.GetId() == "" {
		return nil, apierr.Invalid(apierr.NewProblem("id", apierr.CodeRequired, "a token id is required"))
	}
	notFound := connect.NewError(connect.CodeNotFound, errors.New("admin token not found"))
	id, err := store.ParseUUID(req.Msg.GetId())
	if err != nil {
		return nil, notFound
	}
	var t target
	var tok sqlc.AdminToken
	err = s.tx.Tx(ctx, p.Actor(), func(tx *store.Tx) error {
		var err error
		if tok, err = tx.Q.GetAdminToken(ctx, id); err != nil {
			if store.IsNotFound(err) {
				return notFound
			}
			return err
		}
		a, err := tx.Q.GetAdmin(ctx, tok.AdminID)
		if err != nil {
			return err
		}
		if t, err = s.load(ctx, tx.Q, a); err != nil {
			return err
		}
		if store.UUIDString(a.ID) != p.AdminID && !manages(p, t) {
			return notFound
		}
		if tok.RevokedAt.Valid {
			return nil // already revoked: nothing changes
		}
		if _, err := tx.Q.RevokeAdminToken(ctx, sqlc.RevokeAdminTokenParams{ID: tok.ID, AdminID: tok.AdminID}); err != nil {
			return err
		}
		if tok, err = tx.Q.GetAdminToken(ctx, id); err != nil {
			return err
		}
		s.auditTenantOf(tx, t)
		return tx.Audit(ctx, "revoke", "admin_tokens", a.Name, map[string]any{"id": store.UUIDString(tok.ID)})
	})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	return connect.NewResponse(&adminv1.RevokeAdminTokenResponse{Token: s.tokenProtos(ctx, t.admin.Name, tok)[0]}), nil
}

// tokenProtos converts tokens, with the prefixes kept in the audit log.
func (s *AdminService) tokenProtos(ctx context.Context, admin string, toks ...sqlc.AdminToken) []*adminv1.AdminToken {
	out := make([]*adminv1.AdminToken, len(toks))
	ids := make([]string, len(toks))
	for i, k := range toks {
		out[i] = tokenProto(admin, k)
		ids[i] = out[i].Id
	}
	if len(ids) == 0 {
		return out
	}
	rows, err := s.q.ListAuditForObjects(ctx, sqlc.ListAuditForObjectsParams{ObjectKind: "admin_tokens", Action: "create", Ids: ids})
	if err != nil {
		s.log.WarnContext(ctx, "token prefixes unavailable", "err", err)
		return out
	}
	for _, t := range out {
		for _, r := range rows {
			if r.ObjectID == t.Id {
				t.TokenPrefix = r.Prefix
			}
		}
	}
	return out
}

func tokenProto(admin string, k sqlc.AdminToken) *adminv1.AdminToken {
	return &adminv1.AdminToken{
		Id: store.UUIDString(k.ID), Admin: admin, Description: k.Label,
		CreatedAt: ts(k.CreatedAt), ExpiresAt: ts(k.ExpiresAt), LastUsedAt: ts(k.LastUsedAt), RevokedAt: ts(k.RevokedAt),
	}
}

func bindingsText(bs []*adminv1.RoleBinding) []string {
	out := make([]string, 0, len(bs))
	for _, b := range bs {
		r, _ := auth.RoleFromProto(b.GetRole())
		if b.GetTenant() == "" {
			out = append(out, string(r))
		} else {
			out = append(out, string(r)+"@"+b.GetTenant())
		}
	}
	return out
}
