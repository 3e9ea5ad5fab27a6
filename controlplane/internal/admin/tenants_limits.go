package admin

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	"weir.dev/controlplane/internal/admin/apierr"
	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// Caller limits (ROUTING.md R-CAP-2). 0 means no limit of a tenant's or a
// key's own.
const (
	// DefaultTenantMaxInFlight is the cluster default of a tenant's
	// max_in_flight when the operator sets none.
	DefaultTenantMaxInFlight = 512
	// MaxRPM and MaxInFlight bound a caller limit (the store checks them
	// too: migration 000010).
	MaxRPM      = 100_000_000
	MaxInFlight = 1_000_000
)

// SetTenantLimits replaces the tenant's caller limits (R-CAP-2). Tenant
// admins may set any rpm and a max_in_flight up to the cluster default, or
// keep (or lower) one a cluster admin set above it; only cluster admins may
// raise a tenant's max_in_flight beyond both. The change bumps the tenant's
// config revision, so edges get it with the next snapshot.
func (s *TenantService) SetTenantLimits(ctx context.Context, req *connect.Request[adminv1.SetTenantLimitsRequest]) (*connect.Response[adminv1.SetTenantLimitsResponse], error) {
	p, t, err := scope(ctx, s.q, req.Msg.GetTenant(), auth.RoleTenantAdmin)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	if req.Msg.GetTenant() == "" {
		ps.Add("tenant", apierr.CodeRequired, "a tenant is required")
	}
	l := req.Msg.GetLimits()
	if l == nil {
		l = &configv1.CallerLimits{}
	}
	ValidateLimits(&ps, "limits", l)
	if err := ps.Err(); err != nil {
		return nil, err
	}
	def := s.defaultMaxInFlight()
	if !p.IsClusterAdmin() && l.GetMaxInFlight() > def && l.GetMaxInFlight() > t.MaxInFlight {
		return nil, connect.NewError(connect.CodePermissionDenied, fmt.Errorf(
			"max_in_flight %d is above the cluster default of %d; only cluster admins may raise a tenant's max_in_flight above it (R-CAP-2)",
			l.GetMaxInFlight(), def))
	}
	err = s.tx.Tx(ctx, p.Actor(), func(tx *store.Tx) error {
		var err error
		if t, err = tx.Q.SetTenantLimits(ctx, sqlc.SetTenantLimitsParams{ID: t.ID, RPM: l.GetRpm(), MaxInFlight: l.GetMaxInFlight()}); err != nil {
			return err
		}
		if err := tx.Changed(ctx, t.ID); err != nil {
			return err
		}
		return tx.Audit(ctx, "set", "tenant_limits", t.Name, map[string]any{
			"id": store.UUIDString(t.ID), "rpm": t.RPM, "max_in_flight": t.MaxInFlight,
		})
	})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	return connect.NewResponse(&adminv1.SetTenantLimitsResponse{Tenant: s.tenantProto(t)}), nil
}

// ValidateLimits adds a problem for each caller limit out of its range
// (rpm 0-MaxRPM, max_in_flight 0-MaxInFlight) under field.
func ValidateLimits(ps *apierr.Problems, field string, l *configv1.CallerLimits) {
	if v := l.GetRpm(); v < 0 || v > MaxRPM {
		ps.Addf(field+".rpm", apierr.CodeOutOfRange, "rpm %d is out of range: 0-%d (0: no limit)", v, MaxRPM)
	}
	if v := l.GetMaxInFlight(); v < 0 || v > MaxInFlight {
		ps.Addf(field+".max_in_flight", apierr.CodeOutOfRange, "max_in_flight %d is out of range: 0-%d (0: no limit of its own)", v, MaxInFlight)
	}
}

// defaultMaxInFlight is the cluster default of a tenant's max_in_flight.
func (b base) defaultMaxInFlight() int64 {
	if b.defaultInFlight > 0 {
		return b.defaultInFlight
	}
	return DefaultTenantMaxInFlight
}

// tenantProto is t as the API shows it, with its limits and the
// max_in_flight edges enforce for it.
func (b base) tenantProto(t sqlc.Tenant) *adminv1.Tenant {
	eff := t.MaxInFlight
	if eff == 0 {
		eff = b.defaultMaxInFlight()
	}
	return &adminv1.Tenant{
		Id: store.UUIDString(t.ID), Name: t.Name, Disabled: t.Disabled,
		CreatedAt: ts(t.CreatedAt), UpdatedAt: ts(t.UpdatedAt),
		Limits:               &configv1.CallerLimits{Rpm: t.RPM, MaxInFlight: t.MaxInFlight},
		EffectiveMaxInFlight: eff,
	}
}
