package server_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

const ok connect.Code = 0

// Expected outcomes per tenant-a role (cluster, tadmA, padmA, costA); the
// callers without a usable token always get Unauthenticated.
func expect(clusterAdm, tenantAdm, providerAdm, costOwner connect.Code) map[string]connect.Code {
	return map[string]connect.Code{cluster: clusterAdm, tadmA: tenantAdm, padmA: providerAdm, costA: costOwner}
}

var (
	anyRole      = expect(ok, ok, ok, ok)
	clusterOnly  = expect(ok, connect.CodePermissionDenied, connect.CodePermissionDenied, connect.CodePermissionDenied)
	tenantAdmin  = expect(ok, ok, connect.CodePermissionDenied, connect.CodePermissionDenied)
	providerW    = expect(ok, ok, ok, connect.CodePermissionDenied)
	budgetW      = expect(ok, ok, connect.CodePermissionDenied, ok)
	manageHidden = expect(ok, ok, connect.CodeNotFound, connect.CodeNotFound)
)

// rpcCase is one RPC called by one role; role makes names unique so that
// every role's call can succeed on its own.
type rpcCase struct {
	name string
	call func(ctx context.Context, c *clients, role string) error
	want map[string]connect.Code
}

func drain[T any](s *connect.ServerStreamForClient[T], err error) error {
	if err != nil {
		return err
	}
	for s.Receive() {
	}
	return s.Err()
}

// matrixCases are every RPC of the services in package admin, on tenant a
// (or the cluster scope where the RPC has one).
func matrixCases(tokenIDs map[string]string) []rpcCase {
	day := time.Now().Add(-24 * time.Hour)
	return []rpcCase{
		// TenantService
		{"CreateTenant", func(ctx context.Context, c *clients, r string) error {
			_, err := c.tenants.CreateTenant(ctx, connect.NewRequest(&adminv1.CreateTenantRequest{Name: "t-" + r}))
			return err
		}, clusterOnly},
		{"ListTenants", func(ctx context.Context, c *clients, r string) error {
			_, err := c.tenants.ListTenants(ctx, connect.NewRequest(&adminv1.ListTenantsRequest{}))
			return err
		}, anyRole},
		{"GetTenant", func(ctx context.Context, c *clients, r string) error {
			_, err := c.tenants.GetTenant(ctx, connect.NewRequest(&adminv1.GetTenantRequest{Tenant: "a"}))
			return err
		}, anyRole},
		{"UpdateTenant", func(ctx context.Context, c *clients, r string) error {
			f := false
			_, err := c.tenants.UpdateTenant(ctx, connect.NewRequest(&adminv1.UpdateTenantRequest{Tenant: "a", Disabled: &f}))
			return err
		}, clusterOnly},
		{"GetDataRules", func(ctx context.Context, c *clients, r string) error {
			_, err := c.tenants.GetDataRules(ctx, connect.NewRequest(&adminv1.GetDataRulesRequest{Tenant: "a"}))
			return err
		}, anyRole},
		{"SetDataRules", func(ctx context.Context, c *clients, r string) error {
			_, err := c.tenants.SetDataRules(ctx, connect.NewRequest(&adminv1.SetDataRulesRequest{Tenant: "a", Rules: &configv1.DataRules{AllowedRegions: []string{"eu-*"}}}))
			return err
		}, tenantAdmin},
		{"SetTenantLimits", func(ctx context.Context, c *clients, r string) error { // R-CAP-2
			_, err := c.tenants.SetTenantLimits(ctx, connect.NewRequest(&adminv1.SetTenantLimitsRequest{Tenant: "a", Limits: &configv1.CallerLimits{Rpm: 60, MaxInFlight: 16}}))
			return err
		}, tenantAdmin},
		// ApiKeyService
		{"CreateApiKey", func(ctx context.Context, c *clients, r string) error {
			_, err := c.keys.CreateApiKey(ctx, connect.NewRequest(&adminv1.CreateApiKeyRequest{Tenant: "a", Name: "k-" + r}))
			return err
		}, tenantAdmin},
		{"ListApiKeys", func(ctx context.Context, c *clients, r string) error {
			_, err := c.keys.ListApiKeys(ctx, connect.NewRequest(&adminv1.ListApiKeysRequest{Tenant: "a", IncludeRevoked: true}))
			return err
		}, anyRole},
		{"RevokeApiKey", func(ctx context.Context, c *clients, r string) error {
			_, err := c.keys.RevokeApiKey(ctx, connect.NewRequest(&adminv1.RevokeApiKeyRequest{Tenant: "a", Name: "rk-" + r}))
			return err
		}, tenantAdmin},
		// AdminService
		{"WhoAmI", func(ctx context.Context, c *clients, r string) error {
			_, err := c.admins.WhoAmI(ctx, connect.NewRequest(&adminv1.WhoAmIRequest{}))
			return err
		}, anyRole},
		{"CreateAdmin", func(ctx context.Context, c *clients, r string) error {
			_, err := c.admins.CreateAdmin(ctx, connect.NewRequest(&adminv1.CreateAdminRequest{Name: "ca-" + r,
				Roles: []*adminv1.RoleBinding{{Role: adminv1.Role_ROLE_COST_OWNER, Tenant: "a"}}}))
			return err
		}, tenantAdmin},
		{"ListAdmins", func(ctx context.Context, c *clients, r string) error {
			_, err := c.admins.ListAdmins(ctx, connect.NewRequest(&adminv1.ListAdminsRequest{Tenant: "a"}))
			return err
		}, anyRole},
		{"ListAdmins cluster", func(ctx context.Context, c *clients, r string) error {
			_, err := c.admins.ListAdmins(ctx, connect.NewRequest(&adminv1.ListAdminsRequest{}))
			return err
		}, clusterOnly},
		{"GetAdmin", func(ctx context.Context, c *clients, r string) error {
			_, err := c.admins.GetAdmin(ctx, connect.NewRequest(&adminv1.GetAdminRequest{Name: "tk"}))
			return err
		}, manageHidden},
		{"GetAdmin self", func(ctx context.Context, c *clients, r string) error {
			_, err := c.admins.GetAdmin(ctx, connect.NewRequest(&adminv1.GetAdminRequest{}))
			return err
		}, anyRole},
		{"DeleteAdmin", func(ctx context.Context, c *clients, r string) error {
			_, err := c.admins.DeleteAdmin(ctx, connect.NewRequest(&adminv1.DeleteAdminRequest{Name: "da-" + r}))
			return err
		}, manageHidden},
		{"GrantRole", func(ctx context.Context, c *clients, r string) error {
			_, err := c.admins.GrantRole(ctx, connect.NewRequest(&adminv1.GrantRoleRequest{Admin: "ga-" + r, Role: adminv1.Role_ROLE_PROVIDER_ADMIN, Tenant: "a"}))
			return err
		}, tenantAdmin},
		{"GrantRole cluster", func(ctx context.Context, c *clients, r string) error {
			_, err := c.admins.GrantRole(ctx, connect.NewRequest(&adminv1.GrantRoleRequest{Admin: "ga-" + r, Role: adminv1.Role_ROLE_CLUSTER_ADMIN}))
			return err
		}, clusterOnly},
		{"RevokeRole", func(ctx context.Context, c *clients, r string) error {
			_, err := c.admins.RevokeRole(ctx, connect.NewRequest(&adminv1.RevokeRoleRequest{Admin: "rr-" + r, Role: adminv1.Role_ROLE_PROVIDER_ADMIN, Tenant: "a"}))
			return err
		}, tenantAdmin},
		{"CreateAdminToken", func(ctx context.Context, c *clients, r string) error {
			_, err := c.admins.CreateAdminToken(ctx, connect.NewRequest(&adminv1.CreateAdminTokenRequest{Admin: "tk", Description: r}))
			return err
		}, manageHidden},
		{"CreateAdminToken self", func(ctx context.Context, c *clients, r string) error {
			_, err := c.admins.CreateAdminToken(ctx, connect.NewRequest(&adminv1.CreateAdminTokenRequest{Description: "self"}))
			return err
		}, anyRole},
		{"ListAdminTokens", func(ctx context.Context, c *clients, r string) error {
			_, err := c.admins.ListAdminTokens(ctx, connect.NewRequest(&adminv1.ListAdminTokensRequest{Admin: "tk"}))
			return err
		}, manageHidden},
		{"RevokeAdminToken", func(ctx context.Context, c *clients, r string) error {
			_, err := c.admins.RevokeAdminToken(ctx, connect.NewRequest(&adminv1.RevokeAdminTokenRequest{Id: tokenIDs[r]}))
			return err
		}, manageHidden},
		// SecretService
		{"SetSecret", func(ctx context.Context, c *clients, r string) error {
			_, err := c.secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{Tenant: "a", Name: "s-" + r, Value: "v", Hosts: []string{"api.example.com"}}))
			return err
		}, providerW},
		{"SetSecret cluster", func(ctx context.Context, c *clients, r string) error {
			_, err := c.secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{Name: "s-" + r, Value: "v", Hosts: []string{"api.example.com"}}))
			return err
		}, clusterOnly},
		{"ListSecrets", func(ctx context.Context, c *clients, r string) error {
			_, err := c.secrets.ListSecrets(ctx, connect.NewRequest(&adminv1.ListSecretsRequest{Tenant: "a"}))
			return err
		}, anyRole},
		{"ListSecrets cluster", func(ctx context.Context, c *clients, r string) error {
			_, err := c.secrets.ListSecrets(ctx, connect.NewRequest(&adminv1.ListSecretsRequest{}))
			return err
		}, clusterOnly},
		{"DeleteSecret", func(ctx context.Context, c *clients, r string) error {
			_, err := c.secrets.DeleteSecret(ctx, connect.NewRequest(&adminv1.DeleteSecretRequest{Tenant: "a", Name: "ds-" + r}))
			return err
		}, providerW},
		// BudgetService
		{"SetBudget", func(ctx context.Context, c *clients, r string) error {
			_, err := c.budgets.SetBudget(ctx, connect.NewRequest(&adminv1.SetBudgetRequest{Tenant: "a", Name: "b-" + r, LimitNanos: 5e9, Period: configv1.BudgetPeriod_BUDGET_PERIOD_MONTH}))
			return err
		}, budgetW},
		{"ListBudgets", func(ctx context.Context, c *clients, r string) error {
			_, err := c.budgets.ListBudgets(ctx, connect.NewRequest(&adminv1.ListBudgetsRequest{Tenant: "a"}))
			return err
		}, anyRole},
		{"DeleteBudget", func(ctx context.Context, c *clients, r string) error {
			_, err := c.budgets.DeleteBudget(ctx, connect.NewRequest(&adminv1.DeleteBudgetRequest{Tenant: "a", Name: "db-" + r}))
			return err
		}, budgetW},
		// UsageService
		{"ExportUsage", func(ctx context.Context, c *clients, r string) error {
			return drain(c.usage.ExportUsage(ctx, connect.NewRequest(&adminv1.ExportUsageRequest{Tenant: "a",
				StartTime: timestamppb.New(day), EndTime: timestamppb.New(day.Add(48 * time.Hour))})))
		}, anyRole},
		{"ExportUsage cluster", func(ctx context.Context, c *clients, r string) error {
			return drain(c.usage.ExportUsage(ctx, connect.NewRequest(&adminv1.ExportUsageRequest{
				StartTime: timestamppb.New(day), EndTime: timestamppb.New(day.Add(48 * time.Hour))})))
		}, clusterOnly},
		// CallService
		{"ListCalls", func(ctx context.Context, c *clients, r string) error {
			_, err := c.calls.ListCalls(ctx, connect.NewRequest(&adminv1.ListCallsRequest{Tenant: "a"}))
			return err
		}, anyRole},
		{"GetCall", func(ctx context.Context, c *clients, r string) error {
			_, err := c.calls.GetCall(ctx, connect.NewRequest(&adminv1.GetCallRequest{Tenant: "a", CallId: "call-a1"}))
			return err
		}, anyRole},
		// EdgeService
		{"ListEdges", func(ctx context.Context, c *clients, r string) error {
			_, err := c.edges.ListEdges(ctx, connect.NewRequest(&adminv1.ListEdgesRequest{}))
			return err
		}, anyRole},
		{"ListEdges tenant", func(ctx context.Context, c *clients, r string) error {
			_, err := c.edges.ListEdges(ctx, connect.NewRequest(&adminv1.ListEdgesRequest{Tenant: "a"}))
			return err
		}, anyRole},
		{"ListMemberViews", func(ctx context.Context, c *clients, r string) error {
			_, err := c.edges.ListMemberViews(ctx, connect.NewRequest(&adminv1.ListMemberViewsRequest{Tenant: "a"}))
			return err
		}, anyRole},
		{"ListMemberViews cluster", func(ctx context.Context, c *clients, r string) error {
			_, err := c.edges.ListMemberViews(ctx, connect.NewRequest(&adminv1.ListMemberViewsRequest{}))
			return err
		}, clusterOnly},
		// DoctorService
		{"Diagnose", func(ctx context.Context, c *clients, r string) error {
			_, err := c.doctor.Diagnose(ctx, connect.NewRequest(&adminv1.DiagnoseRequest{Tenant: "a"}))
			return err
		}, anyRole},
		{"Diagnose cluster", func(ctx context.Context, c *clients, r string) error {
			_, err := c.doctor.Diagnose(ctx, connect.NewRequest(&adminv1.DiagnoseRequest{}))
			return err
		}, clusterOnly},
		// AuditService
		{"ListAuditEvents", func(ctx context.Context, c *clients, r string) error {
			_, err := c.audit.ListAuditEvents(ctx, connect.NewRequest(&adminv1.ListAuditEventsRequest{Tenant: "a"}))
			return err
		}, anyRole},
		{"ListAuditEvents cluster", func(ctx context.Context, c *clients, r string) error {
			_, err := c.audit.ListAuditEvents(ctx, connect.NewRequest(&adminv1.ListAuditEventsRequest{}))
			return err
		}, clusterOnly},
	}
}

// TestAuthorizationMatrix calls every RPC as every role and checks it is
// allowed or refused as designed: with no or a bad token Unauthenticated;
// a role on the tenant without the right to act PermissionDenied; a hidden
// admin NotFound.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	c := e.as[cluster]
	costRole := &adminv1.RoleBinding{Role: adminv1.Role_ROLE_COST_OWNER, Tenant: "a"}
	e.newAdmin("tk", costRole)
	tokenIDs := map[string]string{}
	e.insertCall("a", "call-a1", time.Now(), 1000)
	// Objects each role's change acts on, so every allowed call can succeed.
	for _, r := range callers {
		must(t)(c.keys.CreateApiKey(ctx, connect.NewRequest(&adminv1.CreateApiKeyRequest{Tenant: "a", Name: "rk-" + r})))
		must(t)(c.budgets.SetBudget(ctx, connect.NewRequest(&adminv1.SetBudgetRequest{Tenant: "a", Name: "db-" + r, LimitNanos: 1, Period: configv1.BudgetPeriod_BUDGET_PERIOD_DAY})))
		must(t)(c.secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{Tenant: "a", Name: "ds-" + r, Value: "x", Hosts: []string{"h.example"}})))
		must(t)(c.admins.CreateAdmin(ctx, connect.NewRequest(&adminv1.CreateAdminRequest{Name: "da-" + r, Roles: []*adminv1.RoleBinding{costRole}})))
		must(t)(c.admins.CreateAdmin(ctx, connect.NewRequest(&adminv1.CreateAdminRequest{Name: "ga-" + r, Roles: []*adminv1.RoleBinding{costRole}})))
		must(t)(c.admins.CreateAdmin(ctx, connect.NewRequest(&adminv1.CreateAdminRequest{Name: "rr-" + r,
			Roles: []*adminv1.RoleBinding{costRole, {Role: adminv1.Role_ROLE_PROVIDER_ADMIN, Tenant: "a"}}})))
		tok, err := c.admins.CreateAdminToken(ctx, connect.NewRequest(&adminv1.CreateAdminTokenRequest{Admin: "tk", Description: r}))
		if err != nil {
			t.Fatal(err)
		}
		tokenIDs[r] = tok.Msg.GetToken().GetId()
	}
	for _, tc := range matrixCases(tokenIDs) {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]connect.Code{}
			want := map[string]connect.Code{}
			for _, r := range callers {
				got[r] = connect.CodeOf(tc.call(ctx, e.as[r], r))
				if w, ok := tc.want[r]; ok {
					want[r] = w
				} else {
					want[r] = connect.CodeUnauthenticated
				}
			}
			for r, code := range got {
				if code == connect.CodeUnknown {
					got[r] = ok // CodeOf(nil) is Unknown
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("codes by role (-want +got):\n%s", diff)
			}
		})
	}
}

func must(t *testing.T) func(any, error) any {
	return func(v any, err error) any {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
