package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// tenantCases are every tenant-scoped RPC, pointed at tenant tn and at the
// names of tenant b's objects (a caller guessing them).
func tenantCases() []struct {
	name string
	call func(ctx context.Context, c *clients, tn string) error
} {
	day := time.Now().Add(-24 * time.Hour)
	f := false
	return []struct {
		name string
		call func(ctx context.Context, c *clients, tn string) error
	}{
		{"GetTenant", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.tenants.GetTenant(ctx, connect.NewRequest(&adminv1.GetTenantRequest{Tenant: tn}))
			return err
		}},
		{"UpdateTenant", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.tenants.UpdateTenant(ctx, connect.NewRequest(&adminv1.UpdateTenantRequest{Tenant: tn, Disabled: &f}))
			return err
		}},
		{"GetDataRules", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.tenants.GetDataRules(ctx, connect.NewRequest(&adminv1.GetDataRulesRequest{Tenant: tn}))
			return err
		}},
		{"SetDataRules", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.tenants.SetDataRules(ctx, connect.NewRequest(&adminv1.SetDataRulesRequest{Tenant: tn, Rules: &configv1.DataRules{NoRetainedData: true}}))
			return err
		}},
		{"CreateApiKey", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.keys.CreateApiKey(ctx, connect.NewRequest(&adminv1.CreateApiKeyRequest{Tenant: tn, Name: "intruder"}))
			return err
		}},
		{"ListApiKeys", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.keys.ListApiKeys(ctx, connect.NewRequest(&adminv1.ListApiKeysRequest{Tenant: tn}))
			return err
		}},
		{"RevokeApiKey", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.keys.RevokeApiKey(ctx, connect.NewRequest(&adminv1.RevokeApiKeyRequest{Tenant: tn, Name: "kb"}))
			return err
		}},
		{"ListAdmins", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.admins.ListAdmins(ctx, connect.NewRequest(&adminv1.ListAdminsRequest{Tenant: tn}))
			return err
		}},
		{"CreateAdmin", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.admins.CreateAdmin(ctx, connect.NewRequest(&adminv1.CreateAdminRequest{Name: "intruder",
				Roles: []*adminv1.RoleBinding{{Role: adminv1.Role_ROLE_TENANT_ADMIN, Tenant: tn}}}))
			return err
		}},
		{"GrantRole", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.admins.GrantRole(ctx, connect.NewRequest(&adminv1.GrantRoleRequest{Admin: "tadm-b", Role: adminv1.Role_ROLE_COST_OWNER, Tenant: tn}))
			return err
		}},
		{"RevokeRole", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.admins.RevokeRole(ctx, connect.NewRequest(&adminv1.RevokeRoleRequest{Admin: "tadm-b", Role: adminv1.Role_ROLE_TENANT_ADMIN, Tenant: tn}))
			return err
		}},
		{"SetSecret", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{Tenant: tn, Name: "sb", Value: "overwrite", Hosts: []string{"evil.example"}}))
			return err
		}},
		{"ListSecrets", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.secrets.ListSecrets(ctx, connect.NewRequest(&adminv1.ListSecretsRequest{Tenant: tn}))
			return err
		}},
		{"DeleteSecret", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.secrets.DeleteSecret(ctx, connect.NewRequest(&adminv1.DeleteSecretRequest{Tenant: tn, Name: "sb"}))
			return err
		}},
		{"SetBudget", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.budgets.SetBudget(ctx, connect.NewRequest(&adminv1.SetBudgetRequest{Tenant: tn, Name: "bb", LimitNanos: 0, Period: configv1.BudgetPeriod_BUDGET_PERIOD_DAY}))
			return err
		}},
		{"ListBudgets", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.budgets.ListBudgets(ctx, connect.NewRequest(&adminv1.ListBudgetsRequest{Tenant: tn}))
			return err
		}},
		{"DeleteBudget", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.budgets.DeleteBudget(ctx, connect.NewRequest(&adminv1.DeleteBudgetRequest{Tenant: tn, Name: "bb"}))
			return err
		}},
		{"ExportUsage", func(ctx context.Context, c *clients, tn string) error {
			return drain(c.usage.ExportUsage(ctx, connect.NewRequest(&adminv1.ExportUsageRequest{Tenant: tn,
				StartTime: timestamppb.New(day), EndTime: timestamppb.New(day.Add(48 * time.Hour))})))
		}},
		{"ListCalls", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.calls.ListCalls(ctx, connect.NewRequest(&adminv1.ListCallsRequest{Tenant: tn}))
			return err
		}},
		{"GetCall", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.calls.GetCall(ctx, connect.NewRequest(&adminv1.GetCallRequest{Tenant: tn, CallId: "call-b1"}))
			return err
		}},
		{"ListEdges", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.edges.ListEdges(ctx, connect.NewRequest(&adminv1.ListEdgesRequest{Tenant: tn}))
			return err
		}},
		{"ListMemberViews", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.edges.ListMemberViews(ctx, connect.NewRequest(&adminv1.ListMemberViewsRequest{Tenant: tn}))
			return err
		}},
		{"Diagnose", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.doctor.Diagnose(ctx, connect.NewRequest(&adminv1.DiagnoseRequest{Tenant: tn}))
			return err
		}},
		{"ListAuditEvents", func(ctx context.Context, c *clients, tn string) error {
			_, err := c.audit.ListAuditEvents(ctx, connect.NewRequest(&adminv1.ListAuditEventsRequest{Tenant: tn}))
			return err
		}},
	}
}

// TestTenantIsolation proves that callers holding roles on tenant a can
// neither read nor change anything of tenant b — list, get, update, delete,
// or by guessing names and ids — and that b answers exactly like a tenant
// that does not exist (NotFound, same message), so nothing can be probed.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	b := e.as[tadmB]
	must(t)(b.keys.CreateApiKey(ctx, connect.NewRequest(&adminv1.CreateApiKeyRequest{Tenant: "b", Name: "kb"})))
	must(t)(b.secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{Tenant: "b", Name: "sb", Value: "b-value", Hosts: []string{"b.example"}})))
	must(t)(b.budgets.SetBudget(ctx, connect.NewRequest(&adminv1.SetBudgetRequest{Tenant: "b", Name: "bb", LimitNanos: 7, Period: configv1.BudgetPeriod_BUDGET_PERIOD_TOTAL})))
	btok, err := b.admins.CreateAdminToken(ctx, connect.NewRequest(&adminv1.CreateAdminTokenRequest{Description: "b's own"}))
	if err != nil {
		t.Fatal(err)
	}
	e.insertCall("b", "call-b1", time.Now(), 5)
	tables := []string{"tenants", "admins", "admin_roles", "admin_tokens", "api_keys", "secrets", "budgets", "data_rules", "outbox", "audit_log"}
	before := e.counts(tables...)
	secretBefore, err := e.st.Q.ListSecrets(ctx, e.ids["b"])
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range tenantCases() {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []string{tadmA, padmA, costA} {
				errB := tc.call(ctx, e.as[r], "b")
				errNone := tc.call(ctx, e.as[r], "nope")
				if connect.CodeOf(errB) != connect.CodeNotFound || connect.CodeOf(errNone) != connect.CodeNotFound {
					t.Errorf("%s on b = %v, on a missing tenant = %v; want NotFound for both", r, errB, errNone)
					continue
				}
				if got, want := strings.ReplaceAll(errB.Error(), `"b"`, `"X"`), strings.ReplaceAll(errNone.Error(), `"nope"`, `"X"`); got != want {
					t.Errorf("%s: b and a missing tenant answer differently: %q vs %q", r, errB, errNone)
				}
			}
		})
	}

	t.Run("guessing b's objects from a", func(t *testing.T) {
		a := e.as[tadmA]
		if _, err := a.calls.GetCall(ctx, connect.NewRequest(&adminv1.GetCallRequest{Tenant: "a", CallId: "call-b1"})); connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("GetCall of b's call through a = %v", err)
		}
		if _, err := e.as[cluster].calls.GetCall(ctx, connect.NewRequest(&adminv1.GetCallRequest{Tenant: "a", CallId: "call-b1"})); connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("even a cluster admin finds b's call only in b: %v", err)
		}
		if _, err := a.admins.GetAdmin(ctx, connect.NewRequest(&adminv1.GetAdminRequest{Name: tadmB})); connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("GetAdmin(tadm-b) = %v", err)
		}
		if _, err := a.admins.ListAdminTokens(ctx, connect.NewRequest(&adminv1.ListAdminTokensRequest{Admin: tadmB})); connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("ListAdminTokens(tadm-b) = %v", err)
		}
		if _, err := a.admins.CreateAdminToken(ctx, connect.NewRequest(&adminv1.CreateAdminTokenRequest{Admin: tadmB})); connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("CreateAdminToken(tadm-b) = %v", err)
		}
		if _, err := a.admins.DeleteAdmin(ctx, connect.NewRequest(&adminv1.DeleteAdminRequest{Name: tadmB})); connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("DeleteAdmin(tadm-b) = %v", err)
		}
		if _, err := a.admins.GrantRole(ctx, connect.NewRequest(&adminv1.GrantRoleRequest{Admin: tadmB, Role: adminv1.Role_ROLE_COST_OWNER, Tenant: "a"})); connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("GrantRole to tadm-b = %v", err)
		}
		for _, id := range []string{btok.Msg.GetToken().GetId(), "00000000-0000-0000-0000-000000000001", "not-a-uuid"} {
			if _, err := a.admins.RevokeAdminToken(ctx, connect.NewRequest(&adminv1.RevokeAdminTokenRequest{Id: id})); connect.CodeOf(err) != connect.CodeNotFound {
				t.Errorf("RevokeAdminToken(%s) = %v", id, err)
			}
		}
		if _, err := e.as[tadmB].admins.WhoAmI(ctx, connect.NewRequest(&adminv1.WhoAmIRequest{})); err != nil {
			t.Errorf("b's token stopped working: %v", err)
		}
	})

	t.Run("lists from a show nothing of b", func(t *testing.T) {
		for _, r := range []string{tadmA, padmA, costA} {
			a := e.as[r]
			ts, err := a.tenants.ListTenants(ctx, connect.NewRequest(&adminv1.ListTenantsRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tn := range ts.Msg.GetTenants() {
				names = append(names, tn.GetName())
			}
			if diff := cmp.Diff([]string{"a"}, names); diff != "" {
				t.Errorf("%s ListTenants (-want +got):\n%s", r, diff)
			}
			as, err := a.admins.ListAdmins(ctx, connect.NewRequest(&adminv1.ListAdminsRequest{Tenant: "a"}))
			if err != nil {
				t.Fatal(err)
			}
			for _, adm := range as.Msg.GetAdmins() {
				for _, rb := range adm.GetRoles() {
					if rb.GetTenant() != "a" {
						t.Errorf("%s sees role %v of admin %s", r, rb, adm.GetName())
					}
				}
			}
			ev, err := a.audit.ListAuditEvents(ctx, connect.NewRequest(&adminv1.ListAuditEventsRequest{Tenant: "a"}))
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range ev.Msg.GetEvents() {
				if x.GetTenant() != "a" {
					t.Errorf("%s sees audit event %v", r, x)
				}
			}
		}
	})

	if diff := cmp.Diff(before, e.counts(tables...)); diff != "" {
		t.Errorf("refused requests changed rows (-before +after):\n%s", diff)
	}
	secretAfter, err := e.st.Q.ListSecrets(ctx, e.ids["b"])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(secretBefore, secretAfter); diff != "" {
		t.Errorf("b's secret changed (-before +after):\n%s", diff)
	}
	if k, err := e.as[tadmB].keys.ListApiKeys(ctx, connect.NewRequest(&adminv1.ListApiKeysRequest{Tenant: "b"})); err != nil || len(k.Msg.GetApiKeys()) != 1 {
		t.Errorf("b's key not active any more: %v", err)
	}
}
