package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/admin/apierr"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// TestValidationListsEveryProblem sends requests with several problems each
// and checks that the answer is InvalidArgument listing every one (the
// ValidationError detail and the message), and that nothing was written.
func TestValidationListsEveryProblem(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	c := e.as[cluster]
	tables := []string{"tenants", "admins", "admin_roles", "admin_tokens", "api_keys", "secrets", "budgets", "data_rules", "outbox", "audit_log", "config_revisions"}
	now := time.Now()
	tests := []struct {
		name string
		call func() error
		want []string // problem fields, in order
	}{
		{"SetSecret", func() error {
			_, err := c.secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{Tenant: "a", Name: "Bad Name", Value: "",
				Hosts: []string{"https://x/y", "ok.example", "OK.example.", ""}}))
			return err
		}, []string{"name", "value", "hosts[0]", "hosts[2]", "hosts[3]"}},
		{"SetSecret too many hosts", func() error {
			hosts := make([]string, 33)
			for i := range hosts {
				hosts[i] = fmt.Sprintf("h%d.example", i)
			}
			_, err := c.secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{Tenant: "a", Name: "s", Value: strings.Repeat("x", 64<<10+1), Hosts: hosts}))
			return err
		}, []string{"value", "hosts"}},
		{"CreateApiKey", func() error {
			_, err := c.keys.CreateApiKey(ctx, connect.NewRequest(&adminv1.CreateApiKeyRequest{Tenant: "a", Name: "",
				AllowedModels: []string{"", "gpt-x", "gpt-x"}, AllowedRecords: []string{"UPPER"}, Regions: []string{"eu west"}}))
			return err
		}, []string{"name", "allowed_models[0]", "allowed_models[2]", "allowed_records[0]", "regions[0]"}},
		{"CreateApiKey limits out of range (R-CAP-2)", func() error {
			_, err := c.keys.CreateApiKey(ctx, connect.NewRequest(&adminv1.CreateApiKeyRequest{Tenant: "a", Name: "BAD",
				Limits: &configv1.CallerLimits{Rpm: 100_000_001, MaxInFlight: -1}}))
			return err
		}, []string{"name", "limits.rpm", "limits.max_in_flight"}},
		{"SetTenantLimits out of range (R-CAP-2)", func() error {
			_, err := c.tenants.SetTenantLimits(ctx, connect.NewRequest(&adminv1.SetTenantLimitsRequest{Tenant: "a",
				Limits: &configv1.CallerLimits{Rpm: -5, MaxInFlight: 1_000_001}}))
			return err
		}, []string{"limits.rpm", "limits.max_in_flight"}},
		{"CreateApiKey unknown records", func() error {
			_, err := c.keys.CreateApiKey(ctx, connect.NewRequest(&adminv1.CreateApiKeyRequest{Tenant: "a", Name: "k", AllowedRecords: []string{"nope", "nada"}}))
			return err
		}, []string{"allowed_records[0]", "allowed_records[1]"}},
		{"SetBudget", func() error {
			_, err := c.budgets.SetBudget(ctx, connect.NewRequest(&adminv1.SetBudgetRequest{Tenant: "a", Name: "X", LimitNanos: -1, Key: "Bad Key"}))
			return err
		}, []string{"name", "limit_nanos", "period", "key"}},
		{"SetBudget unknown key", func() error {
			_, err := c.budgets.SetBudget(ctx, connect.NewRequest(&adminv1.SetBudgetRequest{Tenant: "a", Name: "b", LimitNanos: 1, Period: configv1.BudgetPeriod_BUDGET_PERIOD_DAY, Key: "ghost"}))
			return err
		}, []string{"key"}},
		{"SetDataRules", func() error {
			_, err := c.tenants.SetDataRules(ctx, connect.NewRequest(&adminv1.SetDataRulesRequest{Tenant: "a", Rules: &configv1.DataRules{
				AllowedRegions: []string{"eu west", "eu-*", "eu-*"}, RequiredTags: map[string]string{"": "x", "team": ""}}}))
			return err
		}, []string{"rules.allowed_regions[0]", "rules.allowed_regions[2]", "rules.required_tags[]", "rules.required_tags[team]"}},
		{"CreateTenant", func() error {
			_, err := c.tenants.CreateTenant(ctx, connect.NewRequest(&adminv1.CreateTenantRequest{Name: strings.Repeat("a", 65)}))
			return err
		}, []string{"name"}},
		{"CreateAdmin", func() error {
			_, err := c.admins.CreateAdmin(ctx, connect.NewRequest(&adminv1.CreateAdminRequest{Name: "Bad", DisplayName: strings.Repeat("d", 257),
				Roles: []*adminv1.RoleBinding{{Role: adminv1.Role_ROLE_CLUSTER_ADMIN, Tenant: "a"}, {Role: adminv1.Role_ROLE_TENANT_ADMIN}, {}}}))
			return err
		}, []string{"name", "display_name", "roles[0].tenant", "roles[1].tenant", "roles[2].role"}},
		{"CreateAdmin unknown tenants", func() error {
			_, err := c.admins.CreateAdmin(ctx, connect.NewRequest(&adminv1.CreateAdminRequest{Name: "new",
				Roles: []*adminv1.RoleBinding{{Role: adminv1.Role_ROLE_COST_OWNER, Tenant: "a"}, {Role: adminv1.Role_ROLE_TENANT_ADMIN, Tenant: "ghost"}, {Role: adminv1.Role_ROLE_COST_OWNER, Tenant: "ghost2"}}}))
			return err
		}, []string{"roles[1].tenant", "roles[2].tenant"}},
		{"CreateAdminToken", func() error {
			_, err := c.admins.CreateAdminToken(ctx, connect.NewRequest(&adminv1.CreateAdminTokenRequest{Description: strings.Repeat("d", 257), Ttl: durationpb.New(time.Second)}))
			return err
		}, []string{"description", "ttl"}},
		{"ListCalls", func() error {
			_, err := c.calls.ListCalls(ctx, connect.NewRequest(&adminv1.ListCallsRequest{Tenant: "a", Since: durationpb.New(time.Hour),
				StartTime: timestamppb.New(now), PageSize: -1, PageToken: "garbage"}))
			return err
		}, []string{"page_size", "page_token", "since"}},
		{"ExportUsage missing times", func() error {
			return drain(c.usage.ExportUsage(ctx, connect.NewRequest(&adminv1.ExportUsageRequest{Tenant: "a", Granularity: 99})))
		}, []string{"start_time", "end_time", "granularity"}},
		{"ExportUsage range", func() error {
			return drain(c.usage.ExportUsage(ctx, connect.NewRequest(&adminv1.ExportUsageRequest{Tenant: "a",
				StartTime: timestamppb.New(now), EndTime: timestamppb.New(now.Add(-time.Hour))})))
		}, []string{"end_time"}},
		{"ListAuditEvents", func() error {
			_, err := c.audit.ListAuditEvents(ctx, connect.NewRequest(&adminv1.ListAuditEventsRequest{Tenant: "a", PageSize: 5000, PageToken: "x",
				StartTime: timestamppb.New(now), EndTime: timestamppb.New(now)}))
			return err
		}, []string{"page_size", "page_token", "end_time"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := e.counts(tables...)
			err := tc.call()
			if connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Fatalf("err = %v, want InvalidArgument", err)
			}
			var fields []string
			for _, p := range apierr.ProblemsOf(err) {
				fields = append(fields, p.GetField())
				if p.GetCode() == "" || p.GetMessage() == "" {
					t.Errorf("problem without code or message: %v", p)
				}
			}
			if diff := cmp.Diff(tc.want, fields); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			noun := "problems"
			if len(tc.want) == 1 {
				noun = "problem"
			}
			if msg := err.(*connect.Error).Message(); !strings.Contains(msg, fmt.Sprintf("%d %s:", len(tc.want), noun)) {
				t.Errorf("message %q does not count %d problems", msg, len(tc.want))
			}
			if diff := cmp.Diff(before, e.counts(tables...)); diff != "" {
				t.Errorf("a refused request wrote rows (-before +after):\n%s", diff)
			}
		})
	}
}
