package server_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"

	"weir.dev/controlplane/internal/store"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// TestOutboxAndAudit checks that every committed change writes exactly one
// audit row and, when it changes a snapshot, exactly one outbox row for
// that snapshot's tenant (the cluster's for managed secrets); refused
// requests and no-op updates write neither.
func TestOutboxAndAudit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	c := e.as[cluster]
	yes := true
	tests := []struct {
		name   string
		call   func() error
		outbox string // "a", "b", "c", "cluster", or "" for none
		audit  int
	}{
		{"CreateTenant", func() error {
			_, err := c.tenants.CreateTenant(ctx, connect.NewRequest(&adminv1.CreateTenantRequest{Name: "c"}))
			return err
		}, "c", 1},
		{"UpdateTenant", func() error {
			_, err := c.tenants.UpdateTenant(ctx, connect.NewRequest(&adminv1.UpdateTenantRequest{Tenant: "c", Disabled: &yes}))
			return err
		}, "c", 1},
		{"UpdateTenant no change", func() error {
			_, err := c.tenants.UpdateTenant(ctx, connect.NewRequest(&adminv1.UpdateTenantRequest{Tenant: "c", Disabled: &yes}))
			return err
		}, "", 0},
		{"SetDataRules", func() error {
			_, err := e.as[tadmA].tenants.SetDataRules(ctx, connect.NewRequest(&adminv1.SetDataRulesRequest{Tenant: "a", Rules: &configv1.DataRules{AllowedRegions: []string{"eu-*"}}}))
			return err
		}, "a", 1},
		{"SetTenantLimits", func() error { // R-CAP-2: edges get the limits with a new snapshot
			_, err := e.as[tadmA].tenants.SetTenantLimits(ctx, connect.NewRequest(&adminv1.SetTenantLimitsRequest{Tenant: "a", Limits: &configv1.CallerLimits{Rpm: 600}}))
			return err
		}, "a", 1},
		{"CreateApiKey", func() error {
			_, err := e.as[tadmA].keys.CreateApiKey(ctx, connect.NewRequest(&adminv1.CreateApiKeyRequest{Tenant: "a", Name: "ci"}))
			return err
		}, "a", 1},
		{"RevokeApiKey", func() error {
			_, err := e.as[tadmA].keys.RevokeApiKey(ctx, connect.NewRequest(&adminv1.RevokeApiKeyRequest{Tenant: "a", Name: "ci"}))
			return err
		}, "a", 1},
		{"RevokeApiKey again", func() error {
			_, err := e.as[tadmA].keys.RevokeApiKey(ctx, connect.NewRequest(&adminv1.RevokeApiKeyRequest{Tenant: "a", Name: "ci"}))
			if connect.CodeOf(err) != connect.CodeNotFound {
				t.Errorf("revoking a revoked key = %v, want NotFound", err)
			}
			return nil
		}, "", 0},
		{"SetSecret", func() error {
			_, err := e.as[padmA].secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{Tenant: "a", Name: "k", Value: "v", Hosts: []string{"h.example"}}))
			return err
		}, "a", 1},
		{"SetSecret managed", func() error {
			_, err := c.secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{Name: "k", Value: "v", Hosts: []string{"h.example"}}))
			return err
		}, "cluster", 1},
		{"DeleteSecret", func() error {
			_, err := e.as[padmA].secrets.DeleteSecret(ctx, connect.NewRequest(&adminv1.DeleteSecretRequest{Tenant: "a", Name: "k"}))
			return err
		}, "a", 1},
		{"SetBudget", func() error {
			_, err := e.as[costA].budgets.SetBudget(ctx, connect.NewRequest(&adminv1.SetBudgetRequest{Tenant: "a", Name: "m", LimitNanos: 10, Period: configv1.BudgetPeriod_BUDGET_PERIOD_MONTH}))
			return err
		}, "a", 1},
		{"DeleteBudget", func() error {
			_, err := e.as[costA].budgets.DeleteBudget(ctx, connect.NewRequest(&adminv1.DeleteBudgetRequest{Tenant: "a", Name: "m"}))
			return err
		}, "a", 1},
		{"CreateAdmin (no config)", func() error {
			_, err := e.as[tadmA].admins.CreateAdmin(ctx, connect.NewRequest(&adminv1.CreateAdminRequest{Name: "ops",
				Roles: []*adminv1.RoleBinding{{Role: adminv1.Role_ROLE_COST_OWNER, Tenant: "a"}}}))
			return err
		}, "", 1},
		{"GrantRole (no config)", func() error {
			_, err := e.as[tadmA].admins.GrantRole(ctx, connect.NewRequest(&adminv1.GrantRoleRequest{Admin: "ops", Role: adminv1.Role_ROLE_PROVIDER_ADMIN, Tenant: "a"}))
			return err
		}, "", 1},
		{"CreateAdminToken (no config)", func() error {
			_, err := e.as[tadmA].admins.CreateAdminToken(ctx, connect.NewRequest(&adminv1.CreateAdminTokenRequest{Admin: "ops"}))
			return err
		}, "", 1},
		{"refused: permission", func() error {
			_, err := e.as[costA].secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{Tenant: "a", Name: "k", Value: "v", Hosts: []string{"h.example"}}))
			if connect.CodeOf(err) != connect.CodePermissionDenied {
				t.Errorf("err = %v", err)
			}
			return nil
		}, "", 0},
		{"refused: conflict", func() error {
			_, err := c.tenants.CreateTenant(ctx, connect.NewRequest(&adminv1.CreateTenantRequest{Name: "a"}))
			if connect.CodeOf(err) != connect.CodeAlreadyExists {
				t.Errorf("err = %v", err)
			}
			return nil
		}, "", 0},
		{"refused: validation", func() error {
			_, err := c.budgets.SetBudget(ctx, connect.NewRequest(&adminv1.SetBudgetRequest{Tenant: "a", Name: "m", LimitNanos: -5}))
			if connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Errorf("err = %v", err)
			}
			return nil
		}, "", 0},
	}
	last := int64(0)
	if rows, err := e.st.Q.ListOutboxSince(ctx, 0); err == nil && len(rows) > 0 {
		last = rows[len(rows)-1].ID
	}
	for _, tc := range tests {
		audit := e.count("audit_log")
		if err := tc.call(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		rows, err := e.st.Q.ListOutboxSince(ctx, last)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			last = r.ID
			name := "cluster"
			for n, id := range e.ids {
				if id == r.TenantID {
					name = n
				}
			}
			if r.TenantID.Valid && name == "cluster" {
				tn, err := e.st.Q.GetTenant(ctx, r.TenantID)
				if err != nil {
					t.Fatal(err)
				}
				name = tn.Name
			}
			got = append(got, name+"/"+r.Kind)
		}
		var want []string
		if tc.outbox != "" {
			want = []string{tc.outbox + "/" + store.OutboxKindConfig}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: outbox rows (-want +got):\n%s", tc.name, diff)
		}
		if n := e.count("audit_log") - audit; n != tc.audit {
			t.Errorf("%s: %d audit rows, want %d", tc.name, n, tc.audit)
		}
	}
	// The audit log names who did what to which object, through the API.
	ev, err := c.audit.ListAuditEvents(ctx, connect.NewRequest(&adminv1.ListAuditEventsRequest{Tenant: "a", TargetPrefix: "secrets/"}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range ev.Msg.GetEvents() {
		got = append(got, x.GetActor()+" "+x.GetProcedure()+" "+x.GetTarget()+" "+x.GetSummary())
		if x.GetTokenId() == "" || x.GetTime() == nil {
			t.Errorf("event without token or time: %v", x)
		}
	}
	want := []string{
		"padm-a /weir.admin.v1.SecretService/DeleteSecret secrets/k padm-a deleted secrets/k.",
		"padm-a /weir.admin.v1.SecretService/SetSecret secrets/k padm-a set secrets/k.",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit events (-want +got):\n%s", diff)
	}
}
