package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"unicode/utf8"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/controlplane/internal/admin/apierr"
	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// tenantQueries are the reads TenantService makes.
type tenantQueries interface {
	tenantGetter
	ListTenants(ctx context.Context) ([]sqlc.Tenant, error)
	GetDataRules(ctx context.Context, tenantID pgtype.UUID) (sqlc.DataRule, error)
	ListSharedRecords(ctx context.Context, tenantID pgtype.UUID) ([]sqlc.ProviderRecord, error)
	GetConfigRevision(ctx context.Context, tenantID pgtype.UUID) (sqlc.ConfigRevision, error)
}

// TenantService implements weir.admin.v1.TenantService.
type TenantService struct {
	base
	q tenantQueries
}

// CreateTenant creates a tenant. Cluster admins only.
func (s *TenantService) CreateTenant(ctx context.Context, req *connect.Request[adminv1.CreateTenantRequest]) (*connect.Response[adminv1.CreateTenantResponse], error) {
	p, err := auth.RequireCluster(ctx)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	apierr.Name(&ps, "name", req.Msg.GetName())
	if err := ps.Err(); err != nil {
		return nil, err
	}
	var t sqlc.Tenant
	err = s.tx.Tx(ctx, p.Actor(), func(tx *store.Tx) error {
		var err error
		if t, err = tx.Q.CreateTenant(ctx, sqlc.CreateTenantParams{Name: req.Msg.GetName()}); err != nil {
			return err
		}
		if err := tx.Changed(ctx, t.ID); err != nil {
			return err
		}
		return tx.Audit(ctx, "create", "tenants", t.Name, map[string]any{"id": store.UUIDString(t.ID)})
	})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	return connect.NewResponse(&adminv1.CreateTenantResponse{Tenant: s.tenantProto(t)}), nil
}

// ListTenants lists the tenants the caller holds a role on (all for cluster
// admins).
func (s *TenantService) ListTenants(ctx context.Context, req *connect.Request[adminv1.ListTenantsRequest]) (*connect.Response[adminv1.ListTenantsResponse], error) {
	p, err := auth.Authenticated(ctx)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	size := pageSize(&ps, req.Msg.GetPageSize())
	off := offsetToken(&ps, req.Msg.GetPageToken())
	if err := ps.Err(); err != nil {
		return nil, err
	}
	all, err := s.q.ListTenants(ctx)
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	var visible []*adminv1.Tenant
	mine := p.Tenants()
	for _, t := range all {
		if p.IsClusterAdmin() || slices.Contains(mine, t.Name) {
			visible = append(visible, s.tenantProto(t))
		}
	}
	items, next := page(visible, off, size)
	return connect.NewResponse(&adminv1.ListTenantsResponse{Tenants: items, NextPageToken: next}), nil
}

// GetTenant returns a tenant with its rules, shares and publication state.
func (s *TenantService) GetTenant(ctx context.Context, req *connect.Request[adminv1.GetTenantRequest]) (*connect.Response[adminv1.GetTenantResponse], error) {
	_, t, err := scope(ctx, s.q, req.Msg.GetTenant(), auth.TenantRoles()...)
	if err != nil {
		return nil, err
	}
	if req.Msg.GetTenant() == "" {
		return nil, apierr.Invalid(apierr.NewProblem("tenant", apierr.CodeRequired, "a tenant is required"))
	}
	rules, err := s.dataRules(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	shared, err := s.q.ListSharedRecords(ctx, t.ID)
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	resp := &adminv1.GetTenantResponse{Tenant: s.tenantProto(t), DataRules: rules}
	for _, r := range shared {
		resp.SharedRecords = append(resp.SharedRecords, r.Name)
	}
	rev, err := s.q.GetConfigRevision(ctx, t.ID)
	switch {
	case err == nil:
		resp.ConfigVersion = uint64(rev.DesiredRevision)
		resp.PublishedVersion = uint64(rev.PublishedRevision)
		resp.PublishedAt = ts(rev.PublishedAt)
	case !store.IsNotFound(err):
		return nil, apierr.FromStore(err)
	}
	return connect.NewResponse(resp), nil
}

// UpdateTenant disables or enables a tenant. Cluster admins only.
func (s *TenantService) UpdateTenant(ctx context.Context, req *connect.Request[adminv1.UpdateTenantRequest]) (*connect.Response[adminv1.UpdateTenantResponse], error) {
	p, t, err := scope(ctx, s.q, req.Msg.GetTenant())
	if err != nil {
		return nil, err
	}
	if req.Msg.GetTenant() == "" {
		return nil, apierr.Invalid(apierr.NewProblem("tenant", apierr.CodeRequired, "a tenant is required"))
	}
	if req.Msg.Disabled == nil || req.Msg.GetDisabled() == t.Disabled {
		return connect.NewResponse(&adminv1.UpdateTenantResponse{Tenant: s.tenantProto(t)}), nil
	}
	err = s.tx.Tx(ctx, p.Actor(), func(tx *store.Tx) error {
		var err error
		if t, err = tx.Q.UpdateTenant(ctx, sqlc.UpdateTenantParams{ID: t.ID, Name: t.Name, Disabled: req.Msg.GetDisabled()}); err != nil {
			return err
		}
		if err := tx.Changed(ctx, t.ID); err != nil {
			return err
		}
		return tx.Audit(ctx, "update", "tenants", t.Name, map[string]any{"id": store.UUIDString(t.ID), "disabled": t.Disabled})
	})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	return connect.NewResponse(&adminv1.UpdateTenantResponse{Tenant: s.tenantProto(t)}), nil
}

// GetDataRules returns the tenant's data rules (empty when none are set).
func (s *TenantService) GetDataRules(ctx context.Context, req *connect.Request[adminv1.GetDataRulesRequest]) (*connect.Response[adminv1.GetDataRulesResponse], error) {
	_, t, err := scope(ctx, s.q, req.Msg.GetTenant(), auth.TenantRoles()...)
	if err != nil {
		return nil, err
	}
	if req.Msg.GetTenant() == "" {
		return nil, apierr.Invalid(apierr.NewProblem("tenant", apierr.CodeRequired, "a tenant is required"))
	}
	rules, err := s.dataRules(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&adminv1.GetDataRulesResponse{Rules: rules}), nil
}

// SetDataRules replaces the tenant's data rules. Tenant admins.
func (s *TenantService) SetDataRules(ctx context.Context, req *connect.Request[adminv1.SetDataRulesRequest]) (*connect.Response[adminv1.SetDataRulesResponse], error) {
	p, t, err := scope(ctx, s.q, req.Msg.GetTenant(), auth.RoleTenantAdmin)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	if req.Msg.GetTenant() == "" {
		ps.Add("tenant", apierr.CodeRequired, "a tenant is required")
	}
	rules := req.Msg.GetRules()
	if rules == nil {
		rules = &configv1.DataRules{}
	}
	validateDataRules(&ps, rules)
	if err := ps.Err(); err != nil {
		return nil, err
	}
	tags, err := json.Marshal(orEmpty(rules.GetRequiredTags()))
	if err != nil {
		return nil, apierr.Internal(err)
	}
	var warnings []*adminv1.Warning
	err = s.tx.Tx(ctx, p.Actor(), func(tx *store.Tx) error {
		if _, err := tx.Q.UpsertDataRules(ctx, sqlc.UpsertDataRulesParams{
			TenantID: t.ID, AllowedRegions: orEmptySlice(rules.GetAllowedRegions()),
			NoRetainedData: rules.GetNoRetainedData(), RequiredTags: tags,
		}); err != nil {
			return err
		}
		var err error
		if warnings, err = rulesRefuseAll(ctx, tx.Q, t.ID, rules); err != nil {
			return err
		}
		if err := tx.Changed(ctx, t.ID); err != nil {
			return err
		}
		return tx.Audit(ctx, "set", "data_rules", t.Name, map[string]any{
			"allowed_regions": rules.GetAllowedRegions(), "no_retained_data": rules.GetNoRetainedData(),
			"required_tags": rules.GetRequiredTags(),
		})
	})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	return connect.NewResponse(&adminv1.SetDataRulesResponse{Rules: rules, Warnings: warnings}), nil
}

func validateDataRules(ps *apierr.Problems, r *configv1.DataRules) {
	if n := len(r.GetAllowedRegions()); n > 64 {
		ps.Addf("rules.allowed_regions", apierr.CodeTooMany, "%d region rules; at most 64", n)
	}
	seen := map[string]bool{}
	for i, g := range r.GetAllowedRegions() {
		f := fmt.Sprintf("rules.allowed_regions[%d]", i)
		if apierr.RegionGlob(ps, f, g) {
			if seen[g] {
				ps.Add(f, apierr.CodeDuplicate, "region rule listed twice")
			}
			seen[g] = true
		}
	}
	if n := len(r.GetRequiredTags()); n > 64 {
		ps.Addf("rules.required_tags", apierr.CodeTooMany, "%d required tags; at most 64", n)
	}
	keys := make([]string, 0, len(r.GetRequiredTags()))
	for k := range r.GetRequiredTags() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := r.GetRequiredTags()[k]
		f := "rules.required_tags[" + k + "]"
		if n := utf8.RuneCountInString(k); n < 1 || n > 64 || !utf8.ValidString(k) {
			ps.Add(f, apierr.CodeInvalidValue, "a tag key is 1-64 characters")
		}
		if n := utf8.RuneCountInString(v); n < 1 || n > 64 || !utf8.ValidString(v) {
			ps.Add(f, apierr.CodeInvalidValue, "a tag value is 1-64 characters")
		}
	}
}

// dataRules returns the tenant's rules; a tenant without rules has empty
// ones.
func (s *TenantService) dataRules(ctx context.Context, tenantID pgtype.UUID) (*configv1.DataRules, error) {
	r, err := s.q.GetDataRules(ctx, tenantID)
	if err != nil {
		if store.IsNotFound(err) {
			return &configv1.DataRules{}, nil
		}
		return nil, apierr.FromStore(err)
	}
	out := &configv1.DataRules{AllowedRegions: r.AllowedRegions, NoRetainedData: r.NoRetainedData}
	if err := json.Unmarshal(r.RequiredTags, &out.RequiredTags); err != nil {
		return nil, apierr.Internal(fmt.Errorf("data rules tags: %w", err))
	}
	if len(out.RequiredTags) == 0 {
		out.RequiredTags = nil
	}
	return out, nil
}

// recordQueries read a tenant's provider records and members.
type recordQueries interface {
	ListProviderRecords(ctx context.Context, tenantID pgtype.UUID) ([]sqlc.ProviderRecord, error)
	ListOwnerPoolMembers(ctx context.Context, tenantID pgtype.UUID) ([]sqlc.PoolMember, error)
}

// rulesRefuseAll warns about each record of the tenant whose every member
// the rules refuse (R-ELIG-2): calls could never reach it.
func rulesRefuseAll(ctx context.Context, q recordQueries, tenantID pgtype.UUID, rules *configv1.DataRules) ([]*adminv1.Warning, error) {
	recs, err := loadRecords(ctx, q, tenantID)
	if err != nil {
		return nil, err
	}
	var out []*adminv1.Warning
	for _, r := range recs {
		ends := r.endpoints()
		if len(ends) == 0 {
			continue
		}
		refused := 0
		for _, e := range ends {
			if !rulesAdmit(rules, e) {
				refused++
			}
		}
		if refused == len(ends) {
			out = append(out, &adminv1.Warning{
				Code:    "rules_refuse_all",
				Message: fmt.Sprintf("the data rules refuse every member of record %q, so calls can never reach it", r.rec.Name),
				Record:  r.rec.Name,
			})
		}
	}
	return out, nil
}

// rulesAdmit reports whether the rules admit an endpoint (R-ELIG-2): a
// region rule refuses a member without a region.
func rulesAdmit(rules *configv1.DataRules, e endpoint) bool {
	if len(rules.GetAllowedRegions()) > 0 {
		ok := false
		for _, g := range rules.GetAllowedRegions() {
			if m, _ := path.Match(g, e.region); m && e.region != "" {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if rules.GetNoRetainedData() && e.retainsData {
		return false
	}
	for k, v := range rules.GetRequiredTags() {
		if e.tags[k] != v {
			return false
		}
	}
	return true
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func orEmptySlice(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
