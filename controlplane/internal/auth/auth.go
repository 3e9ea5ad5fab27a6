// Package auth authenticates admin API requests and decides what the caller
// may touch.
//
// Rules (DESIGN §3, admin common.proto):
//
//   - A cluster admin may do everything, in every tenant, and alone acts on
//     the cluster scope (an empty tenant: managed records and their secrets,
//     tenants, every admin, the whole audit log).
//   - A tenant admin may do everything inside their tenant.
//   - A provider admin may change the provider records, pool members, prices
//     and secrets of their tenant and read the rest of it.
//   - A cost owner may change the budgets of their tenant and read the rest
//     of it (usage and calls included).
//   - Nobody but a cluster admin can reach another tenant. A request about a
//     tenant the caller holds no role on fails with NotFound, exactly as if
//     the tenant did not exist, whether or not it does: tenant names and the
//     names and ids of their objects cannot be probed. (common.proto's text
//     says PermissionDenied for this case; the observable property it wants
//     — no difference between "exists" and "does not" — is the same, and
//     NotFound is what a client also gets for a guessed object id.) A caller
//     that does hold a role on the tenant but not one that allows the RPC
//     gets PermissionDenied.
//
// The Principal in the context is authentication data for handlers to
// check; it never steers control flow by itself.
package auth

import (
	"context"
	"slices"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/controlplane/internal/store"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

// Role is an admin role, spelled as in admin_roles.role.
type Role string

// Roles.
const (
	RoleClusterAdmin  Role = "cluster_admin"
	RoleTenantAdmin   Role = "tenant_admin"
	RoleProviderAdmin Role = "provider_admin"
	RoleCostOwner     Role = "cost_owner"
)

// Proto returns the API enum of r (ROLE_UNSPECIFIED for an unknown role).
func (r Role) Proto() adminv1.Role {
	switch r {
	case RoleClusterAdmin:
		return adminv1.Role_ROLE_CLUSTER_ADMIN
	case RoleTenantAdmin:
		return adminv1.Role_ROLE_TENANT_ADMIN
	case RoleProviderAdmin:
		return adminv1.Role_ROLE_PROVIDER_ADMIN
	case RoleCostOwner:
		return adminv1.Role_ROLE_COST_OWNER
	}
	return adminv1.Role_ROLE_UNSPECIFIED
}

// RoleFromProto returns the Role of an API enum; ok is false for
// ROLE_UNSPECIFIED and unknown values.
func RoleFromProto(r adminv1.Role) (Role, bool) {
	switch r {
	case adminv1.Role_ROLE_CLUSTER_ADMIN:
		return RoleClusterAdmin, true
	case adminv1.Role_ROLE_TENANT_ADMIN:
		return RoleTenantAdmin, true
	case adminv1.Role_ROLE_PROVIDER_ADMIN:
		return RoleProviderAdmin, true
	case adminv1.Role_ROLE_COST_OWNER:
		return RoleCostOwner, true
	}
	return "", false
}

// Grant is one role of an admin.
type Grant struct {
	Role Role
	// TenantID and Tenant (its name) are zero for RoleClusterAdmin.
	TenantID pgtype.UUID
	Tenant   string
}

// Principal is the authenticated caller of one request.
type Principal struct {
	// AdminID is the admin's id (UUID text).
	AdminID string
	// Name is the admin's name.
	Name string
	// TokenID is the id of the token of this request.
	TokenID string
	// Procedure is the RPC being called.
	Procedure string
	// Grants are the admin's roles when the request began.
	Grants []Grant
}

// Actor returns who makes a change, for store.Tx.
func (p Principal) Actor() store.Actor {
	return store.Actor{AdminID: p.AdminID, Name: p.Name, TokenID: p.TokenID, Procedure: p.Procedure}
}

// IsClusterAdmin reports whether p holds the cluster admin role.
func (p Principal) IsClusterAdmin() bool {
	return slices.ContainsFunc(p.Grants, func(g Grant) bool { return g.Role == RoleClusterAdmin })
}

// RolesOn returns p's roles on the tenant of that name (not counting cluster
// admin, which covers every tenant).
func (p Principal) RolesOn(tenant string) []Role {
	var out []Role
	for _, g := range p.Grants {
		if g.Role != RoleClusterAdmin && g.Tenant == tenant && tenant != "" {
			out = append(out, g.Role)
		}
	}
	return out
}

// Tenants returns the names of the tenants p holds a role on, sorted, each
// once.
func (p Principal) Tenants() []string {
	var out []string
	for _, g := range p.Grants {
		if g.Tenant != "" && !slices.Contains(out, g.Tenant) {
			out = append(out, g.Tenant)
		}
	}
	slices.Sort(out)
	return out
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p (what the interceptor does; tests use
// it to call handlers directly).
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the Principal of the request, if it was authenticated.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// TenantRoles are every role held on a tenant: what reads need.
func TenantRoles() []Role {
	return []Role{RoleTenantAdmin, RoleProviderAdmin, RoleCostOwner}
}

// Require authorizes the request in ctx for the tenant of that name (""
// means the cluster scope) when the caller holds one of allowed on it. A
// cluster admin is always allowed. It returns the caller, or a Connect
// error:
//
//   - Unauthenticated when the request carries no principal;
//   - for the cluster scope, PermissionDenied unless cluster admin;
//   - NotFound when the caller holds no role on the tenant (whether or not
//     it exists: see the package comment);
//   - PermissionDenied when the caller holds roles on the tenant but none in
//     allowed.
//
// Require does not check that the tenant exists; the handler's lookup does
// (NotFound for a cluster admin, the same answer as for everyone else).
func Require(ctx context.Context, tenant string, allowed ...Role) (Principal, error) {
	p, ok := FromContext(ctx)
	if !ok {
		return Principal{}, connect.NewError(connect.CodeUnauthenticated, errUnauthenticated)
	}
	if p.IsClusterAdmin() {
		return p, nil
	}
	if tenant == "" {
		return Principal{}, connect.NewError(connect.CodePermissionDenied, errClusterOnly)
	}
	held := p.RolesOn(tenant)
	if len(held) == 0 {
		return Principal{}, TenantNotFound(tenant)
	}
	for _, r := range held {
		if slices.Contains(allowed, r) {
			return p, nil
		}
	}
	return Principal{}, connect.NewError(connect.CodePermissionDenied, errRole)
}

// RequireRead is Require with every tenant role allowed: reads of a tenant.
func RequireRead(ctx context.Context, tenant string) (Principal, error) {
	return Require(ctx, tenant, TenantRoles()...)
}

// RequireCluster allows cluster admins only.
func RequireCluster(ctx context.Context) (Principal, error) {
	return Require(ctx, "")
}

// Authenticated returns the caller or Unauthenticated; for RPCs any admin
// may call (WhoAmI, ListTenants).
func Authenticated(ctx context.Context) (Principal, error) {
	p, ok := FromContext(ctx)
	if !ok {
		return Principal{}, connect.NewError(connect.CodeUnauthenticated, errUnauthenticated)
	}
	return p, nil
}

// TenantNotFound is the NotFound error for a tenant the caller may not see or
// that does not exist: one message for both.
func TenantNotFound(tenant string) error {
	return connect.NewError(connect.CodeNotFound, &tenantNotFoundError{tenant})
}

type tenantNotFoundError struct{ name string }

func (e *tenantNotFoundError) Error() string { return "tenant " + quote(e.name) + " not found" }
