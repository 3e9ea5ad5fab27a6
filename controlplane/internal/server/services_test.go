package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

func TestCallsAndUsage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	a := e.as[costA]
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for i := range 5 {
		e.insertCall("a", fmt.Sprintf("c%d", i), base.Add(time.Duration(i)*time.Hour), int64(100*(i+1)))
	}
	e.insertCall("b", "cb", base, 1)
	// c4 failed over from eu1 after a timeout with an estimated cost.
	if _, err := e.st.Q.InsertCallAttempt(ctx, sqlc.InsertCallAttemptParams{CallID: "c4", AttemptIndex: 1, RecordName: "gpt", MemberName: "us1",
		Status: 0, Outcome: "failed_over", Kind: "timeout", CostNanos: 7, CostEstimated: true}); err != nil {
		t.Fatal(err)
	}

	var ids []string
	tok := ""
	for {
		resp, err := a.calls.ListCalls(ctx, connect.NewRequest(&adminv1.ListCallsRequest{Tenant: "a", PageSize: 2, PageToken: tok}))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range resp.Msg.GetCalls() {
			ids = append(ids, c.GetRecord().GetCallId())
		}
		if tok = resp.Msg.GetNextPageToken(); tok == "" {
			break
		}
	}
	if diff := cmp.Diff([]string{"c4", "c3", "c2", "c1", "c0"}, ids); diff != "" {
		t.Errorf("ListCalls pages (-want +got):\n%s", diff)
	}
	resp, err := a.calls.ListCalls(ctx, connect.NewRequest(&adminv1.ListCallsRequest{Tenant: "a", Member: "us1"}))
	if err != nil || len(resp.Msg.GetCalls()) != 1 || resp.Msg.GetCalls()[0].GetRecord().GetCallId() != "c4" {
		t.Errorf("ListCalls member us1 = %v, %v", resp.Msg.GetCalls(), err)
	}
	resp, err = a.calls.ListCalls(ctx, connect.NewRequest(&adminv1.ListCallsRequest{Tenant: "a", StartTime: timestamppb.New(base.Add(3 * time.Hour))}))
	if err != nil || len(resp.Msg.GetCalls()) != 2 {
		t.Errorf("ListCalls since 13:00 = %d calls, %v", len(resp.Msg.GetCalls()), err)
	}
	got, err := a.calls.GetCall(ctx, connect.NewRequest(&adminv1.GetCallRequest{Tenant: "a", CallId: "c4"}))
	if err != nil {
		t.Fatal(err)
	}
	rec := got.Msg.GetCall().GetRecord()
	if len(rec.GetAttempts()) != 2 || rec.GetAttempts()[1].GetKind() != telemetryv1.FailureKind_FAILURE_KIND_TIMEOUT ||
		rec.GetOutcome() != telemetryv1.CallOutcome_CALL_OUTCOME_ANSWERED || got.Msg.GetCall().GetTenant() != "a" {
		t.Errorf("GetCall = %v", got.Msg.GetCall())
	}

	s, err := a.usage.ExportUsage(ctx, connect.NewRequest(&adminv1.ExportUsageRequest{Tenant: "a",
		StartTime: timestamppb.New(base), EndTime: timestamppb.New(base.Add(24 * time.Hour))}))
	if err != nil {
		t.Fatal(err)
	}
	var rows []*adminv1.UsageRow
	for s.Receive() {
		rows = append(rows, s.Msg().GetRows()...)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	day := timestamppb.New(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	want := []*adminv1.UsageRow{
		{BucketStart: day, Tenant: "a", Record: "gpt", Member: "eu1", Model: "gpt-x", Calls: 5, InputTokens: 50, OutputTokens: 100, CostNanos: 1500},
		{BucketStart: day, Tenant: "a", Record: "gpt", Member: "us1", Model: "gpt-x", CostNanos: 7, EstimatedCostNanos: 7},
	}
	if diff := cmp.Diff(want, rows, protocmp.Transform()); diff != "" {
		t.Errorf("usage rows (-want +got):\n%s", diff)
	}
}

func TestBudgets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	a := e.as[costA]
	if _, err := e.as[tadmA].keys.CreateApiKey(ctx, connect.NewRequest(&adminv1.CreateApiKeyRequest{Tenant: "a", Name: "ci"})); err != nil {
		t.Fatal(err)
	}
	set := func(limit int64, p configv1.BudgetPeriod, key string) *adminv1.SetBudgetResponse {
		t.Helper()
		r, err := a.budgets.SetBudget(ctx, connect.NewRequest(&adminv1.SetBudgetRequest{Tenant: "a", Name: "monthly", LimitNanos: limit, Period: p, Key: key}))
		if err != nil {
			t.Fatal(err)
		}
		return r.Msg
	}
	r := set(0, configv1.BudgetPeriod_BUDGET_PERIOD_MONTH, "")
	start := r.GetBudget().GetPeriodStart().AsTime()
	if !r.GetCreated() || start.Day() != 1 || start.Hour() != 0 || !r.GetBudget().GetPeriodEnd().AsTime().Equal(start.AddDate(0, 1, 0)) {
		t.Errorf("new monthly budget = %v", r)
	}
	if _, err := e.st.Pool().Exec(ctx, "UPDATE budgets SET spent_nanos = 42"); err != nil {
		t.Fatal(err)
	}
	if r := set(100, configv1.BudgetPeriod_BUDGET_PERIOD_MONTH, ""); r.GetCreated() || r.GetBudget().GetSpentNanos() != 42 {
		t.Errorf("limit change lost the spend: %v", r)
	}
	if r := set(100, configv1.BudgetPeriod_BUDGET_PERIOD_DAY, "ci"); r.GetBudget().GetSpentNanos() != 0 || r.GetBudget().GetKey() != "ci" {
		t.Errorf("period and key change kept the spend: %v", r)
	}
	l, err := a.budgets.ListBudgets(ctx, connect.NewRequest(&adminv1.ListBudgetsRequest{Tenant: "a"}))
	if err != nil || len(l.Msg.GetBudgets()) != 1 || l.Msg.GetBudgets()[0].GetKey() != "ci" || l.Msg.GetBudgets()[0].GetPeriod() != configv1.BudgetPeriod_BUDGET_PERIOD_DAY {
		t.Errorf("ListBudgets = %v, %v", l, err)
	}
	if _, err := a.budgets.DeleteBudget(ctx, connect.NewRequest(&adminv1.DeleteBudgetRequest{Tenant: "a", Name: "nope"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("DeleteBudget(nope) = %v", err)
	}
}

func TestAdminsAndTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	c, a := e.as[cluster], e.as[tadmA]

	// The last cluster admin stays.
	if _, err := c.admins.DeleteAdmin(ctx, connect.NewRequest(&adminv1.DeleteAdminRequest{Name: cluster})); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Errorf("deleting the last cluster admin = %v", err)
	}
	if _, err := c.admins.RevokeRole(ctx, connect.NewRequest(&adminv1.RevokeRoleRequest{Admin: cluster, Role: adminv1.Role_ROLE_CLUSTER_ADMIN})); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Errorf("revoking the last cluster admin role = %v", err)
	}
	// A tenant admin cannot make a cluster admin or touch a tenant it lacks.
	if _, err := a.admins.GrantRole(ctx, connect.NewRequest(&adminv1.GrantRoleRequest{Admin: costA, Role: adminv1.Role_ROLE_CLUSTER_ADMIN})); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("tenant admin granting cluster admin = %v", err)
	}
	// A tenant admin manages an admin of its tenant end to end.
	if _, err := a.admins.CreateAdmin(ctx, connect.NewRequest(&adminv1.CreateAdminRequest{Name: "bot",
		Roles: []*adminv1.RoleBinding{{Role: adminv1.Role_ROLE_PROVIDER_ADMIN, Tenant: "a"}}})); err != nil {
		t.Fatal(err)
	}
	tok, err := a.admins.CreateAdminToken(ctx, connect.NewRequest(&adminv1.CreateAdminTokenRequest{Admin: "bot", Description: "ci", Ttl: durationpb.New(time.Hour)}))
	if err != nil {
		t.Fatal(err)
	}
	if p := tok.Msg.GetToken().GetTokenPrefix(); len(p) != 12 || tok.Msg.GetSecret()[:12] != p || tok.Msg.GetToken().GetExpiresAt() == nil {
		t.Errorf("token = %v", tok.Msg.GetToken())
	}
	bot := e.clients(tok.Msg.GetSecret())
	who, err := bot.admins.WhoAmI(ctx, connect.NewRequest(&adminv1.WhoAmIRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	wantWho := &adminv1.Admin{Name: "bot", Roles: []*adminv1.RoleBinding{{Role: adminv1.Role_ROLE_PROVIDER_ADMIN, Tenant: "a"}}}
	if diff := cmp.Diff(wantWho, who.Msg.GetAdmin(), protocmp.Transform(), protocmp.IgnoreFields(&adminv1.Admin{}, "id", "created_at", "last_seen_at")); diff != "" {
		t.Errorf("WhoAmI (-want +got):\n%s", diff)
	}
	if who.Msg.GetToken().GetId() != tok.Msg.GetToken().GetId() || who.Msg.GetToken().GetLastUsedAt() == nil {
		t.Errorf("WhoAmI token = %v", who.Msg.GetToken())
	}
	list, err := a.admins.ListAdminTokens(ctx, connect.NewRequest(&adminv1.ListAdminTokensRequest{Admin: "bot"}))
	if err != nil || len(list.Msg.GetTokens()) != 1 || list.Msg.GetTokens()[0].GetTokenPrefix() != tok.Msg.GetToken().GetTokenPrefix() {
		t.Errorf("ListAdminTokens = %v, %v", list, err)
	}
	if _, err := a.admins.RevokeAdminToken(ctx, connect.NewRequest(&adminv1.RevokeAdminTokenRequest{Id: tok.Msg.GetToken().GetId()})); err != nil {
		t.Fatal(err)
	}
	if _, err := bot.admins.WhoAmI(ctx, connect.NewRequest(&adminv1.WhoAmIRequest{})); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("revoked token = %v, want Unauthenticated", err)
	}
	// Revoking the role it holds, then deleting it.
	if r, err := a.admins.RevokeRole(ctx, connect.NewRequest(&adminv1.RevokeRoleRequest{Admin: "bot", Role: adminv1.Role_ROLE_COST_OWNER, Tenant: "a"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("revoking an unheld role = %v, %v", r, err)
	}
	if _, err := a.admins.DeleteAdmin(ctx, connect.NewRequest(&adminv1.DeleteAdminRequest{Name: "bot"})); err != nil {
		t.Fatal(err)
	}
	if _, err := a.admins.GetAdmin(ctx, connect.NewRequest(&adminv1.GetAdminRequest{Name: "bot"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("deleted admin = %v", err)
	}
	// A second cluster admin makes the first deletable.
	if _, err := c.admins.CreateAdmin(ctx, connect.NewRequest(&adminv1.CreateAdminRequest{Name: "root2",
		Roles: []*adminv1.RoleBinding{{Role: adminv1.Role_ROLE_CLUSTER_ADMIN}}})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.admins.DeleteAdmin(ctx, connect.NewRequest(&adminv1.DeleteAdminRequest{Name: cluster})); err != nil {
		t.Errorf("deleting one of two cluster admins = %v", err)
	}
	if _, err := c.admins.WhoAmI(ctx, connect.NewRequest(&adminv1.WhoAmIRequest{})); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("a deleted admin's token = %v", err)
	}
}

func TestSecretsAndKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	a := e.as[tadmA]
	r, err := a.secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{Tenant: "a", Name: "k", Value: "v", Hosts: []string{"API.Example.com.", "[::1]:8443"}}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"api.example.com", "[::1]:8443"}, r.Msg.GetSecret().GetHosts()); diff != "" || !r.Msg.GetCreated() {
		t.Errorf("hosts normalised (-want +got):\n%s; created %v", diff, r.Msg.GetCreated())
	}
	r, err = a.secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{Tenant: "a", Name: "k", Value: "v2", Hosts: []string{"api.example.com"}}))
	if err != nil || r.Msg.GetCreated() || r.Msg.GetSecret().GetUpdatedBy() != tadmA {
		t.Errorf("replace = %v, %v", r, err)
	}
	l, err := e.as[costA].secrets.ListSecrets(ctx, connect.NewRequest(&adminv1.ListSecretsRequest{Tenant: "a"}))
	if err != nil || len(l.Msg.GetSecrets()) != 1 || l.Msg.GetSecrets()[0].GetUpdatedBy() != tadmA {
		t.Errorf("ListSecrets = %v, %v", l, err)
	}
	row, err := e.st.Q.GetSecret(ctx, sqlc.GetSecretParams{TenantID: e.ids["a"], Name: "k"})
	if err != nil || len(row.Nonce) != 12 || string(row.Ciphertext) == "v2" || row.KeyVersion != 1 {
		t.Errorf("stored secret = %+v, %v", row, err)
	}
	if _, err := a.secrets.DeleteSecret(ctx, connect.NewRequest(&adminv1.DeleteSecretRequest{Tenant: "a", Name: "nope"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("DeleteSecret(nope) = %v", err)
	}

	k, err := a.keys.CreateApiKey(ctx, connect.NewRequest(&adminv1.CreateApiKeyRequest{Tenant: "a", Name: "ci", AllowedModels: []string{"gpt-x"}, Regions: []string{"eu-*"}}))
	if err != nil {
		t.Fatal(err)
	}
	key := k.Msg.GetKey()
	if len(key) != len("weir_")+43 || key[:5] != "weir_" || k.Msg.GetApiKey().GetKeyPrefix() != key[:12] {
		t.Errorf("key %q, prefix %q", key, k.Msg.GetApiKey().GetKeyPrefix())
	}
	if _, err := e.st.Q.GetAPIKeyByHash(ctx, sha(key)); err != nil {
		t.Errorf("key not stored by SHA-256: %v", err)
	}
	if _, err := a.keys.CreateApiKey(ctx, connect.NewRequest(&adminv1.CreateApiKeyRequest{Tenant: "a", Name: "ci"})); connect.CodeOf(err) != connect.CodeAlreadyExists {
		t.Errorf("second active key of one name = %v", err)
	}
	e.insertCall("a", "c1", time.Now(), 1)
	if _, err := e.st.Pool().Exec(ctx, "UPDATE calls SET key_id = $1", k.Msg.GetApiKey().GetId()); err != nil {
		t.Fatal(err)
	}
	l2, err := e.as[padmA].keys.ListApiKeys(ctx, connect.NewRequest(&adminv1.ListApiKeysRequest{Tenant: "a"}))
	if err != nil || len(l2.Msg.GetApiKeys()) != 1 {
		t.Fatalf("ListApiKeys = %v, %v", l2, err)
	}
	got := l2.Msg.GetApiKeys()[0]
	if got.GetCreatedBy() != tadmA || got.GetKeyPrefix() != key[:12] || got.GetLastUsedAt() == nil {
		t.Errorf("listed key = %v", got)
	}
}

func TestDataRulesWarnings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	providers := adminv1connect.NewProviderServiceClient(&http.Client{Transport: bearer{e.tokens[tadmA], http.DefaultTransport}}, e.url)
	if _, err := e.as[tadmA].secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{Tenant: "a", Name: "key", Value: "v", Hosts: []string{"api.example.com"}})); err != nil {
		t.Fatal(err)
	}
	if _, err := providers.CreateProvider(ctx, connect.NewRequest(&adminv1.CreateProviderRequest{
		Tenant: "a", Name: "gpt", Preset: adminv1.Preset_PRESET_OPENAI,
		Spec: &adminv1.ProviderSpec{BaseUrl: "https://api.example.com/v1", Region: "us-east", KeySecret: "key", Models: []*configv1.Model{{Name: "gpt-x"}}},
	})); err != nil {
		t.Fatal(err)
	}
	r, err := e.as[tadmA].tenants.SetDataRules(ctx, connect.NewRequest(&adminv1.SetDataRulesRequest{Tenant: "a",
		Rules: &configv1.DataRules{AllowedRegions: []string{"eu-*"}, RequiredTags: map[string]string{"team": "x"}}}))
	if err != nil {
		t.Fatal(err)
	}
	if w := r.Msg.GetWarnings(); len(w) != 1 || w[0].GetCode() != "rules_refuse_all" || w[0].GetRecord() != "gpt" {
		t.Errorf("warnings = %v", w)
	}
	g, err := e.as[costA].tenants.GetTenant(ctx, connect.NewRequest(&adminv1.GetTenantRequest{Tenant: "a"}))
	if err != nil {
		t.Fatal(err)
	}
	want := &configv1.DataRules{AllowedRegions: []string{"eu-*"}, RequiredTags: map[string]string{"team": "x"}}
	if !proto.Equal(want, g.Msg.GetDataRules()) || g.Msg.GetConfigVersion() < 2 || g.Msg.GetPublishedVersion() != 0 {
		t.Errorf("GetTenant = %v", g.Msg)
	}
}

func TestDoctorAndEdges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	providers := adminv1connect.NewProviderServiceClient(&http.Client{Transport: bearer{e.tokens[tadmA], http.DefaultTransport}}, e.url)
	if _, err := e.as[tadmA].secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{Tenant: "a", Name: "key", Value: "v", Hosts: []string{"eu.example.com", "us.example.com"}})); err != nil {
		t.Fatal(err)
	}
	if _, err := providers.CreateProvider(ctx, connect.NewRequest(&adminv1.CreateProviderRequest{
		Tenant: "a", Name: "gpt", Preset: adminv1.Preset_PRESET_OPENAI,
		Spec: &adminv1.ProviderSpec{KeySecret: "key", Models: []*configv1.Model{{Name: "gpt-x"}}},
		Members: []*adminv1.NewPoolMember{
			{Name: "eu1", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://eu.example.com/v1"}},
			{Name: "eu2", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://eu.example.com:8443/v1"}},
		},
	})); err != nil {
		t.Fatal(err)
	}
	rec, err := e.st.Q.GetProviderRecord(ctx, sqlc.GetProviderRecordParams{TenantID: e.ids["a"], Name: "gpt"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := e.st.Q.UpsertEdge(ctx, sqlc.UpsertEdgeParams{ID: "edge-1", LastSeen: pgts(now)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Q.UpsertEdge(ctx, sqlc.UpsertEdgeParams{ID: "edge-old", LastSeen: pgts(now.Add(-time.Hour))}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"eu1", "eu2"} {
		v, _ := proto.Marshal(&telemetryv1.MemberView{Headroom: 0.5, Cooldown: &telemetryv1.Cooldown{Until: timestamppb.New(now.Add(time.Minute)), Kind: telemetryv1.FailureKind_FAILURE_KIND_RATE_LIMITED}})
		if _, err := e.st.Q.UpsertMemberView(ctx, sqlc.UpsertMemberViewParams{EdgeID: "edge-1", RecordID: rec.ID, MemberName: m, View: v, ObservedAt: pgts(now)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.st.Q.UpsertMemberView(ctx, sqlc.UpsertMemberViewParams{EdgeID: "edge-old", RecordID: rec.ID, MemberName: "eu1", View: []byte{}, ObservedAt: pgts(now.Add(-time.Hour))}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Pool().Exec(ctx, "UPDATE outbox SET created_at = now() - interval '5 minutes'"); err != nil {
		t.Fatal(err)
	}

	d, err := e.as[costA].doctor.Diagnose(ctx, connect.NewRequest(&adminv1.DiagnoseRequest{Tenant: "a"}))
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, f := range d.Msg.GetFindings() {
		codes = append(codes, f.GetSeverity().String()+" "+f.GetCode()+" "+f.GetRecord()+fmt.Sprint(f.GetMembers()))
	}
	wantCodes := []string{
		"SEVERITY_ERROR outbox_stalled []",
		"SEVERITY_ERROR pool_cooling gpt[eu1 eu2]",
		"SEVERITY_WARNING shared_account gpt[eu1 eu2]",
		"SEVERITY_WARNING shared_account gpt[eu1 eu2]",
	}
	if diff := cmp.Diff(wantCodes, codes); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if d, err := e.as[tadmB].doctor.Diagnose(ctx, connect.NewRequest(&adminv1.DiagnoseRequest{Tenant: "b"})); err != nil || len(d.Msg.GetFindings()) != 1 {
		t.Errorf("b's doctor = %v, %v (only its own stalled outbox row)", d, err)
	}

	edges, err := e.as[padmA].edges.ListEdges(ctx, connect.NewRequest(&adminv1.ListEdgesRequest{Tenant: "a"}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range edges.Msg.GetEdges() {
		got = append(got, fmt.Sprintf("%s silent=%v views=%d", x.GetId(), x.GetSilent(), x.GetMemberViews()))
	}
	if diff := cmp.Diff([]string{"edge-1 silent=false views=2", "edge-old silent=true views=0"}, got); diff != "" {
		t.Errorf("edges (-want +got):\n%s", diff)
	}
	if b, err := e.as[tadmB].edges.ListEdges(ctx, connect.NewRequest(&adminv1.ListEdgesRequest{})); err != nil || b.Msg.GetEdges()[0].GetMemberViews() != 0 {
		t.Errorf("b counts a's views: %v, %v", b, err)
	}
	views, err := e.as[costA].edges.ListMemberViews(ctx, connect.NewRequest(&adminv1.ListMemberViewsRequest{Tenant: "a"}))
	if err != nil || len(views.Msg.GetViews()) != 2 {
		t.Fatalf("current views = %v, %v", views, err)
	}
	if v := views.Msg.GetViews()[0].GetView(); v.GetRecordName() != "gpt" || v.GetMemberName() != "eu1" || v.GetHeadroom() != 0.5 || v.GetTenantId() != store.UUIDString(e.ids["a"]) {
		t.Errorf("view = %v", v)
	}
	all, err := e.as[costA].edges.ListMemberViews(ctx, connect.NewRequest(&adminv1.ListMemberViewsRequest{Tenant: "a", IncludeExpired: true, Member: "eu1"}))
	if err != nil || len(all.Msg.GetViews()) != 2 || !all.Msg.GetViews()[1].GetExpired() {
		t.Errorf("views with expired = %v, %v", all, err)
	}
}

func TestAuditPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	for i := range 5 {
		if _, err := e.as[costA].budgets.SetBudget(ctx, connect.NewRequest(&adminv1.SetBudgetRequest{Tenant: "a", Name: fmt.Sprintf("b%d", i), LimitNanos: 1, Period: configv1.BudgetPeriod_BUDGET_PERIOD_TOTAL})); err != nil {
			t.Fatal(err)
		}
	}
	var targets []string
	tok := ""
	for {
		r, err := e.as[tadmA].audit.ListAuditEvents(ctx, connect.NewRequest(&adminv1.ListAuditEventsRequest{Tenant: "a", Actor: costA, PageSize: 2, PageToken: tok}))
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range r.Msg.GetEvents() {
			targets = append(targets, ev.GetTarget())
		}
		if tok = r.Msg.GetNextPageToken(); tok == "" {
			break
		}
	}
	if diff := cmp.Diff([]string{"budgets/b4", "budgets/b3", "budgets/b2", "budgets/b1", "budgets/b0"}, targets); diff != "" {
		t.Errorf("audit pages (-want +got):\n%s", diff)
	}
	// The cluster-wide log holds the tenant-less changes too.
	r, err := e.as[cluster].audit.ListAuditEvents(ctx, connect.NewRequest(&adminv1.ListAuditEventsRequest{TargetPrefix: "tenants/"}))
	if err != nil || len(r.Msg.GetEvents()) != 2 {
		t.Errorf("cluster audit of tenants = %v, %v", r, err)
	}
}

// TestAdminDisplayName: an admin's display name is stored and shown back by
// CreateAdmin, GetAdmin, ListAdmins and WhoAmI; one over 256 characters is
// refused with nothing written.
func TestAdminDisplayName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	c := e.as[cluster]
	created, err := c.admins.CreateAdmin(ctx, connect.NewRequest(&adminv1.CreateAdminRequest{Name: "ana-lima", DisplayName: "Ana Lima – on call",
		Roles: []*adminv1.RoleBinding{{Role: adminv1.Role_ROLE_COST_OWNER, Tenant: "a"}}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := created.Msg.GetAdmin().GetDisplayName(); got != "Ana Lima – on call" {
		t.Errorf("CreateAdmin display_name = %q", got)
	}
	got, err := c.admins.GetAdmin(ctx, connect.NewRequest(&adminv1.GetAdminRequest{Name: "ana-lima"}))
	if err != nil {
		t.Fatal(err)
	}
	if d := got.Msg.GetAdmin().GetDisplayName(); d != "Ana Lima – on call" {
		t.Errorf("GetAdmin display_name = %q", d)
	}
	list, err := c.admins.ListAdmins(ctx, connect.NewRequest(&adminv1.ListAdminsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range list.Msg.GetAdmins() {
		if a.GetName() == "ana-lima" {
			found = a.GetDisplayName() == "Ana Lima – on call"
		}
	}
	if !found {
		t.Error("ListAdmins does not show the display name")
	}
	tok, err := c.admins.CreateAdminToken(ctx, connect.NewRequest(&adminv1.CreateAdminTokenRequest{Admin: "ana-lima"}))
	if err != nil {
		t.Fatal(err)
	}
	me, err := e.clients(tok.Msg.GetSecret()).admins.WhoAmI(ctx, connect.NewRequest(&adminv1.WhoAmIRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if d := me.Msg.GetAdmin().GetDisplayName(); d != "Ana Lima – on call" {
		t.Errorf("WhoAmI display_name = %q", d)
	}
	long := make([]rune, 257)
	for i := range long {
		long[i] = 'x'
	}
	_, err = c.admins.CreateAdmin(ctx, connect.NewRequest(&adminv1.CreateAdminRequest{Name: "long-name", DisplayName: string(long)}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("a 257-character display name: %v, want InvalidArgument", err)
	}
	if _, err := c.admins.GetAdmin(ctx, connect.NewRequest(&adminv1.GetAdminRequest{Name: "long-name"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("the refused admin exists: %v", err)
	}
}
