package schema_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/db/pgtest"
	"weir.dev/db/sqlc"
)

func text(s string) pgtype.Text { return pgtype.Text{String: s, Valid: true} }
func int8v(n int64) pgtype.Int8 { return pgtype.Int8{Int64: n, Valid: true} }
func ts(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: true}
}

var cluster = pgtype.UUID{} // NULL tenant: the cluster's managed objects

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func hash(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }

// TestPooledRecordRoundTrip writes a tenant with a pooled record, its models,
// members and prices through the sqlc queries and reads them back; another
// tenant sees none of it.
func TestPooledRecordRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := sqlc.New(pgtest.New(t))

	acme := must[sqlc.Tenant](t)(q.CreateTenant(ctx, sqlc.CreateTenantParams{Name: "acme"}))
	other := must[sqlc.Tenant](t)(q.CreateTenant(ctx, sqlc.CreateTenantParams{Name: "other"}))
	if diff := cmp.Diff([]sqlc.Tenant{acme, other}, must[[]sqlc.Tenant](t)(q.ListTenants(ctx))); diff != "" {
		t.Errorf("ListTenants (-want +got):\n%s", diff)
	}
	for _, name := range []string{"azure-eu", "azure-us"} {
		must[sqlc.Secret](t)(q.SetSecret(ctx, sqlc.SetSecretParams{
			TenantID: acme.ID, Name: name, Ciphertext: []byte("sealed"), Nonce: make([]byte, 12),
			KeyVersion: 1, Hosts: []string{name + ".openai.azure.com"},
		}))
	}

	rec := must[sqlc.ProviderRecord](t)(q.CreateProviderRecord(ctx, sqlc.CreateProviderRecordParams{
		TenantID: acme.ID, Name: "gpt", Pool: true, WireFormat: "openai", Preset: "azure-openai",
		AuthKind: "api_key", AuthHeader: "api-key", OauthScopes: []string{}, KeySecret: text("azure-eu"),
		RPM: 600, InputTPM: 100000, OutputTPM: 20000, Region: "eu-west", Tags: []byte(`{"tier": "gold"}`),
		AllowedRegions: []string{"eu-*"}, RateLimitHeaders: []byte(`{"requests-remaining": "x-ratelimit-remaining-requests"}`),
		MaxAttempts: 4, AttemptDeadlineMs: int8v(0), MaxWaitMs: int8v(2000), DefaultMaxOutput: 4096,
		Priority: 2, Account: "sub-1", APIVersion: "2024-10-21",
	}))
	if rec.BaseURL.Valid || !rec.Pool || rec.TenantID != acme.ID || rec.Scope != acme.ID {
		t.Errorf("created record: base_url %v pool %v tenant %v scope %v", rec.BaseURL, rec.Pool, rec.TenantID, rec.Scope)
	}
	if rec.CallDeadlineMs.Valid || !rec.AttemptDeadlineMs.Valid {
		t.Errorf("recovery: unset call deadline must stay NULL, a set zero attempt deadline must not: %v %v", rec.CallDeadlineMs, rec.AttemptDeadlineMs)
	}
	must[int64](t)(q.AddRecordModels(ctx, sqlc.AddRecordModelsParams{
		TenantID: acme.ID, RecordName: "gpt",
		Models: []string{"gpt-4o", "text-embedding-3-small"}, Kinds: []string{"chat", "embeddings"},
	}))
	recPrice := must[sqlc.RecordPrice](t)(q.UpsertRecordPrice(ctx, sqlc.UpsertRecordPriceParams{
		TenantID: acme.ID, RecordName: "gpt", Model: "gpt-4o",
		InputMicros: 2_500_000, OutputMicros: 10_000_000, CacheReadMicros: int8v(1_250_000),
	}))

	// m-eu inherits everything it can; m-us overrides auth, secret, region,
	// retains_data, limits, account and api version.
	eu := must[sqlc.PoolMember](t)(q.AddPoolMember(ctx, sqlc.AddPoolMemberParams{
		TenantID: acme.ID, RecordName: "gpt", Name: "m-eu", BaseURL: "https://azure-eu.openai.azure.com",
		OauthScopes: []string{}, Tags: []byte(`{}`), Weight: 3, Order: 1, ModelMap: []byte(`{"gpt-4o": "gpt4o-eu"}`),
		Models: []string{},
	}))
	us := must[sqlc.PoolMember](t)(q.AddPoolMember(ctx, sqlc.AddPoolMemberParams{
		TenantID: acme.ID, RecordName: "gpt", Name: "m-us", Preset: "azure-openai",
		BaseURL: "https://azure-us.openai.azure.com", AuthKind: text("api_key"), AuthHeader: text("api-key"),
		OauthScopes: []string{}, KeySecret: text("azure-us"), Region: text("us-east"),
		RetainsData: pgtype.Bool{Bool: true, Valid: true}, Tags: []byte(`{"zone": "b"}`),
		RPM: int8v(60), InputTPM: int8v(0), OutputTPM: int8v(1000), Weight: 1, Order: 2, ModelMap: []byte(`{}`),
		Models: []string{"gpt-4o"}, Off: true, Account: text("sub-2"), APIVersion: text("2025-01-01"),
	}))
	if eu.Scope != acme.ID || eu.RecordID != rec.ID {
		t.Errorf("member scope/record = %v/%v, want %v/%v", eu.Scope, eu.RecordID, acme.ID, rec.ID)
	}
	if eu.KeySecret.Valid || eu.Region.Valid || eu.RetainsData.Valid || eu.AuthKind.Valid || eu.RPM.Valid || eu.Account.Valid {
		t.Errorf("m-eu should inherit (NULL columns): %+v", eu)
	}
	euPrice := must[sqlc.MemberPrice](t)(q.UpsertMemberPrice(ctx, sqlc.UpsertMemberPriceParams{
		TenantID: acme.ID, RecordName: "gpt", MemberName: "m-eu", Model: "gpt-4o", InputMicros: int8v(2_000_000),
	}))

	// Read everything back.
	if diff := cmp.Diff(rec, must[sqlc.ProviderRecord](t)(q.GetProviderRecord(ctx, sqlc.GetProviderRecordParams{TenantID: acme.ID, Name: "gpt"}))); diff != "" {
		t.Errorf("GetProviderRecord (-created +got):\n%s", diff)
	}
	if diff := cmp.Diff([]sqlc.PoolMember{eu, us}, must[[]sqlc.PoolMember](t)(q.ListPoolMembers(ctx, sqlc.ListPoolMembersParams{TenantID: acme.ID, RecordName: "gpt"}))); diff != "" {
		t.Errorf("ListPoolMembers (-created +got):\n%s", diff)
	}
	wantModels := []sqlc.RecordModel{{RecordID: rec.ID, Model: "gpt-4o", Kind: "chat"}, {RecordID: rec.ID, Model: "text-embedding-3-small", Kind: "embeddings"}}
	if diff := cmp.Diff(wantModels, must[[]sqlc.RecordModel](t)(q.ListRecordModels(ctx, sqlc.ListRecordModelsParams{TenantID: acme.ID, RecordName: "gpt"}))); diff != "" {
		t.Errorf("ListRecordModels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]sqlc.RecordPrice{recPrice}, must[[]sqlc.RecordPrice](t)(q.ListRecordPrices(ctx, sqlc.ListRecordPricesParams{TenantID: acme.ID, RecordName: "gpt"}))); diff != "" {
		t.Errorf("ListRecordPrices (-created +got):\n%s", diff)
	}
	wantMemberPrices := []sqlc.ListMemberPricesRow{{MemberID: eu.ID, Model: "gpt-4o", InputMicros: int8v(2_000_000), MemberName: "m-eu"}}
	if diff := cmp.Diff(wantMemberPrices, must[[]sqlc.ListMemberPricesRow](t)(q.ListMemberPrices(ctx, sqlc.ListMemberPricesParams{TenantID: acme.ID, RecordName: "gpt"}))); diff != "" {
		t.Errorf("ListMemberPrices (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]sqlc.MemberPrice{euPrice}, must[[]sqlc.MemberPrice](t)(q.ListOwnerMemberPrices(ctx, acme.ID))); diff != "" {
		t.Errorf("ListOwnerMemberPrices (-created +got):\n%s", diff)
	}
	if diff := cmp.Diff([]sqlc.PoolMember{eu, us}, must[[]sqlc.PoolMember](t)(q.ListOwnerPoolMembers(ctx, acme.ID))); diff != "" {
		t.Errorf("ListOwnerPoolMembers (-created +got):\n%s", diff)
	}

	// Another tenant sees nothing of acme's, even by the same names.
	if _, err := q.GetProviderRecord(ctx, sqlc.GetProviderRecordParams{TenantID: other.ID, Name: "gpt"}); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("other tenant GetProviderRecord: err %v, want pgx.ErrNoRows", err)
	}
	if _, err := q.AddPoolMember(ctx, sqlc.AddPoolMemberParams{TenantID: other.ID, RecordName: "gpt", Name: "x", BaseURL: "https://h",
		OauthScopes: []string{}, Tags: []byte(`{}`), Weight: 1, Order: 1, ModelMap: []byte(`{}`), Models: []string{}}); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("other tenant AddPoolMember: err %v, want pgx.ErrNoRows", err)
	}
	for name, n := range map[string]int{
		"records": len(must[[]sqlc.ProviderRecord](t)(q.ListProviderRecords(ctx, other.ID))),
		"members": len(must[[]sqlc.PoolMember](t)(q.ListPoolMembers(ctx, sqlc.ListPoolMembersParams{TenantID: other.ID, RecordName: "gpt"}))),
		"secrets": len(must[[]sqlc.Secret](t)(q.ListSecrets(ctx, other.ID))),
		"managed": len(must[[]sqlc.ProviderRecord](t)(q.ListProviderRecords(ctx, cluster))),
		"removed": int(must[int64](t)(q.RemovePoolMember(ctx, sqlc.RemovePoolMemberParams{TenantID: other.ID, RecordName: "gpt", Name: "m-eu"}))),
	} {
		if n != 0 {
			t.Errorf("other tenant / cluster sees %d %s of acme", n, name)
		}
	}

	// Updates, then removal.
	eu2 := must[sqlc.PoolMember](t)(q.UpdatePoolMember(ctx, sqlc.UpdatePoolMemberParams{
		TenantID: acme.ID, RecordName: "gpt", Name: "m-eu", BaseURL: eu.BaseURL, OauthScopes: []string{},
		Tags: []byte(`{}`), Weight: 7, Order: 3, ModelMap: []byte(`{}`), Models: []string{}, Region: text("eu-north"),
	}))
	if eu2.Weight != 7 || eu2.Order != 3 || eu2.Region != text("eu-north") || eu2.ID != eu.ID {
		t.Errorf("UpdatePoolMember = %+v", eu2)
	}
	if _, err := q.UpdatePoolMember(ctx, sqlc.UpdatePoolMemberParams{
		TenantID: acme.ID, RecordName: "gpt", Name: "m-eu", BaseURL: eu.BaseURL, OauthScopes: []string{},
		Tags: []byte(`{}`), Weight: 0, Order: 1, ModelMap: []byte(`{}`), Models: []string{},
	}); constraintOf(err) != "pool_members_weight_range" {
		t.Errorf("weight 0 update: %v", err)
	}
	if n := must[int64](t)(q.RemovePoolMember(ctx, sqlc.RemovePoolMemberParams{TenantID: acme.ID, RecordName: "gpt", Name: "m-us"})); n != 1 {
		t.Errorf("RemovePoolMember = %d, want 1", n)
	}
	if n := must[int64](t)(q.CountPoolMembers(ctx, sqlc.CountPoolMembersParams{TenantID: acme.ID, RecordName: "gpt"})); n != 1 {
		t.Errorf("CountPoolMembers = %d, want 1", n)
	}
	if _, err := q.DeleteSecret(ctx, sqlc.DeleteSecretParams{TenantID: acme.ID, Name: "azure-eu"}); constraintOf(err) != "provider_records_key_secret_fkey" {
		t.Errorf("deleting a secret in use: %v", err)
	}
	if n := must[int64](t)(q.DeleteSecret(ctx, sqlc.DeleteSecretParams{TenantID: acme.ID, Name: "azure-us"})); n != 1 {
		t.Errorf("DeleteSecret of an unused secret = %d, want 1", n)
	}
	if n := must[int64](t)(q.DeleteProviderRecord(ctx, sqlc.DeleteProviderRecordParams{TenantID: acme.ID, Name: "gpt"})); n != 1 {
		t.Errorf("DeleteProviderRecord = %d, want 1", n)
	}
	if n := len(must[[]sqlc.MemberPrice](t)(q.ListOwnerMemberPrices(ctx, acme.ID))); n != 0 {
		t.Errorf("member prices left after the record was deleted: %d", n)
	}
}

func constraintOf(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.ConstraintName
	}
	return ""
}

// TestManagedRecords covers cluster-owned records and secrets (tenant_id
// NULL) and sharing them with tenants.
func TestManagedRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := sqlc.New(pgtest.New(t))
	acme := must[sqlc.Tenant](t)(q.CreateTenant(ctx, sqlc.CreateTenantParams{Name: "acme"}))
	must[sqlc.Secret](t)(q.SetSecret(ctx, sqlc.SetSecretParams{TenantID: cluster, Name: "anthropic", Ciphertext: []byte("a"), Nonce: make([]byte, 12), KeyVersion: 1, Hosts: []string{"api.anthropic.com"}}))
	again := must[sqlc.Secret](t)(q.SetSecret(ctx, sqlc.SetSecretParams{TenantID: cluster, Name: "anthropic", Ciphertext: []byte("b"), Nonce: make([]byte, 12), KeyVersion: 2, Hosts: []string{"api.anthropic.com"}}))
	if again.TenantID.Valid || string(again.Ciphertext) != "b" || again.KeyVersion != 2 {
		t.Errorf("SetSecret twice: %+v", again)
	}
	rec := must[sqlc.ProviderRecord](t)(q.CreateProviderRecord(ctx, sqlc.CreateProviderRecordParams{
		TenantID: cluster, Name: "claude", WireFormat: "anthropic", BaseURL: text("https://api.anthropic.com"),
		AuthKind: "api_key", AuthHeader: "x-api-key", KeySecret: text("anthropic"), OauthScopes: []string{},
		Tags: []byte(`{}`), AllowedRegions: []string{}, RateLimitHeaders: []byte(`{}`),
	}))
	if rec.TenantID.Valid || rec.Pool {
		t.Errorf("managed record: %+v", rec)
	}
	if err := q.ShareRecord(ctx, sqlc.ShareRecordParams{RecordName: "claude", TenantID: acme.ID}); err != nil {
		t.Fatal(err)
	}
	if err := q.ShareRecord(ctx, sqlc.ShareRecordParams{RecordName: "claude", TenantID: acme.ID}); err != nil {
		t.Fatalf("sharing twice: %v", err)
	}
	if diff := cmp.Diff([]sqlc.ProviderRecord{rec}, must[[]sqlc.ProviderRecord](t)(q.ListSharedRecords(ctx, acme.ID))); diff != "" {
		t.Errorf("ListSharedRecords (-want +got):\n%s", diff)
	}
	want := []sqlc.ListRecordSharesRow{{RecordID: rec.ID, TenantID: acme.ID, RecordName: "claude", TenantName: "acme"}}
	if diff := cmp.Diff(want, must[[]sqlc.ListRecordSharesRow](t)(q.ListRecordShares(ctx))); diff != "" {
		t.Errorf("ListRecordShares (-want +got):\n%s", diff)
	}
	if len(must[[]sqlc.ProviderRecord](t)(q.ListProviderRecords(ctx, acme.ID))) != 0 {
		t.Error("a tenant lists a managed record as its own")
	}
	if n := must[int64](t)(q.UnshareRecord(ctx, sqlc.UnshareRecordParams{RecordName: "claude", TenantID: acme.ID})); n != 1 {
		t.Errorf("UnshareRecord = %d, want 1", n)
	}
}

// TestKeysAdminsBudgets covers API keys, admins with roles and tokens, data
// rules and budgets with leases.
func TestKeysAdminsBudgets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := sqlc.New(pgtest.New(t))
	acme := must[sqlc.Tenant](t)(q.CreateTenant(ctx, sqlc.CreateTenantParams{Name: "acme"}))

	key := must[sqlc.APIKey](t)(q.CreateAPIKey(ctx, sqlc.CreateAPIKeyParams{TenantID: acme.ID, Name: "ci", SHA256: hash("secret-1"),
		AllowedModels: []string{"gpt-4o"}, AllowedRecords: []string{}, Regions: []string{"eu-*"}}))
	got := must[sqlc.GetAPIKeyByHashRow](t)(q.GetAPIKeyByHash(ctx, hash("secret-1")))
	if diff := cmp.Diff(sqlc.GetAPIKeyByHashRow{APIKey: key, TenantName: "acme"}, got); diff != "" {
		t.Errorf("GetAPIKeyByHash (-want +got):\n%s", diff)
	}
	revoked := must[sqlc.APIKey](t)(q.RevokeAPIKey(ctx, sqlc.RevokeAPIKeyParams{TenantID: acme.ID, Name: "ci"}))
	if !revoked.RevokedAt.Valid {
		t.Error("RevokeAPIKey left revoked_at NULL")
	}
	if _, err := q.RevokeAPIKey(ctx, sqlc.RevokeAPIKeyParams{TenantID: acme.ID, Name: "ci"}); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("revoking twice: %v, want pgx.ErrNoRows", err)
	}
	key2 := must[sqlc.APIKey](t)(q.CreateAPIKey(ctx, sqlc.CreateAPIKeyParams{TenantID: acme.ID, Name: "ci", SHA256: hash("secret-2"),
		AllowedModels: []string{}, AllowedRecords: []string{}, Regions: []string{}}))
	if n := len(must[[]sqlc.APIKey](t)(q.ListAPIKeys(ctx, acme.ID))); n != 2 {
		t.Errorf("ListAPIKeys: %d keys, want 2 (one revoked)", n)
	}

	rules := must[sqlc.DataRule](t)(q.UpsertDataRules(ctx, sqlc.UpsertDataRulesParams{TenantID: acme.ID,
		AllowedRegions: []string{"eu-*"}, NoRetainedData: true, RequiredTags: []byte(`{"gdpr": "yes"}`)}))
	if diff := cmp.Diff(rules, must[sqlc.DataRule](t)(q.GetDataRules(ctx, acme.ID))); diff != "" {
		t.Errorf("GetDataRules (-upserted +got):\n%s", diff)
	}

	root := must[sqlc.Admin](t)(q.CreateAdmin(ctx, sqlc.CreateAdminParams{Name: "root@example.com", DisplayName: "Root"}))
	must[sqlc.AdminRole](t)(q.GrantRole(ctx, sqlc.GrantRoleParams{AdminID: root.ID, Role: "cluster_admin"}))
	g1 := must[sqlc.AdminRole](t)(q.GrantRole(ctx, sqlc.GrantRoleParams{AdminID: root.ID, Role: "cost_owner", TenantID: acme.ID}))
	g2 := must[sqlc.AdminRole](t)(q.GrantRole(ctx, sqlc.GrantRoleParams{AdminID: root.ID, Role: "cost_owner", TenantID: acme.ID}))
	if g1.ID != g2.ID {
		t.Error("GrantRole twice made two grants")
	}
	if n := len(must[[]sqlc.AdminRole](t)(q.ListAdminRoles(ctx, root.ID))); n != 2 {
		t.Errorf("ListAdminRoles: %d, want 2", n)
	}
	if n := must[int64](t)(q.RevokeRole(ctx, sqlc.RevokeRoleParams{AdminID: root.ID, Role: "cluster_admin"})); n != 1 {
		t.Errorf("RevokeRole cluster_admin = %d, want 1", n)
	}
	tok := must[sqlc.AdminToken](t)(q.CreateAdminToken(ctx, sqlc.CreateAdminTokenParams{AdminID: root.ID, Label: "cli", SHA256: hash("tok")}))
	row := must[sqlc.GetAdminTokenByHashRow](t)(q.GetAdminTokenByHash(ctx, hash("tok")))
	if diff := cmp.Diff(sqlc.GetAdminTokenByHashRow{AdminToken: tok, Admin: root}, row); diff != "" {
		t.Errorf("GetAdminTokenByHash (-want +got):\n%s", diff)
	}
	must[sqlc.Admin](t)(q.SetAdminDisabled(ctx, sqlc.SetAdminDisabledParams{ID: root.ID, Disabled: true}))
	if _, err := q.GetAdminTokenByHash(ctx, hash("tok")); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("token of a disabled admin: %v, want pgx.ErrNoRows", err)
	}

	b := must[sqlc.Budget](t)(q.UpsertBudget(ctx, sqlc.UpsertBudgetParams{TenantID: acme.ID, Name: "monthly", LimitNanos: 100_000_000_000, Period: "month", KeyID: key2.ID}))
	b = must[sqlc.Budget](t)(q.AddBudgetSpend(ctx, sqlc.AddBudgetSpendParams{TenantID: acme.ID, ID: b.ID, AmountNanos: 1_500}))
	b2 := must[sqlc.Budget](t)(q.UpsertBudget(ctx, sqlc.UpsertBudgetParams{TenantID: acme.ID, Name: "monthly", LimitNanos: 5, Period: "total"}))
	if b2.ID != b.ID || b2.SpentNanos != 1_500 || b2.LimitNanos != 5 || b2.KeyID.Valid {
		t.Errorf("UpsertBudget over an existing budget = %+v", b2)
	}
	lease := must[sqlc.BudgetLease](t)(q.CreateBudgetLease(ctx, sqlc.CreateBudgetLeaseParams{BudgetID: b.ID, EdgeID: "edge-1", GrantedNanos: 1000, ExpiresAt: ts(time.Now().Add(time.Minute))}))
	if n := must[int64](t)(q.OutstandingLeaseNanos(ctx, b.ID)); n != 1000 {
		t.Errorf("OutstandingLeaseNanos = %d, want 1000", n)
	}
	must[sqlc.BudgetLease](t)(q.SettleBudgetLease(ctx, sqlc.SettleBudgetLeaseParams{ID: lease.ID, UsedNanos: 300, ReturnedNanos: 700}))
	if n := must[int64](t)(q.OutstandingLeaseNanos(ctx, b.ID)); n != 0 {
		t.Errorf("OutstandingLeaseNanos after settling = %d, want 0", n)
	}
	if _, err := q.SettleBudgetLease(ctx, sqlc.SettleBudgetLeaseParams{ID: lease.ID}); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("settling twice: %v, want pgx.ErrNoRows", err)
	}
}

// TestPublicationAndTelemetry covers the outbox, config revisions, audit log,
// edges, member views and idempotent call ingest.
func TestPublicationAndTelemetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	q := sqlc.New(db)
	acme := must[sqlc.Tenant](t)(q.CreateTenant(ctx, sqlc.CreateTenantParams{Name: "acme"}))

	// Outbox and revisions.
	for range 3 {
		must[sqlc.ConfigRevision](t)(q.BumpConfigRevision(ctx, acme.ID))
	}
	rev := must[sqlc.ConfigRevision](t)(q.BumpConfigRevision(ctx, cluster))
	o1 := must[sqlc.Outbox](t)(q.InsertOutbox(ctx, sqlc.InsertOutboxParams{TenantID: acme.ID, Kind: "tenant.changed", Payload: []byte(`{"revision": 3}`)}))
	o2 := must[sqlc.Outbox](t)(q.InsertOutbox(ctx, sqlc.InsertOutboxParams{TenantID: cluster, Kind: "cluster.changed", Payload: []byte(`{}`)}))
	pending := must[[]sqlc.Outbox](t)(q.ListUnpublishedOutbox(ctx, 10))
	if diff := cmp.Diff([]sqlc.Outbox{o1, o2}, pending, cmpopts.IgnoreFields(sqlc.Outbox{}, "Payload")); diff != "" {
		t.Errorf("ListUnpublishedOutbox (-want +got):\n%s", diff)
	}
	if n := must[int64](t)(q.MarkOutboxPublished(ctx, []int64{o1.ID, o2.ID})); n != 2 {
		t.Errorf("MarkOutboxPublished = %d, want 2", n)
	}
	if n := len(must[[]sqlc.Outbox](t)(q.ListUnpublishedOutbox(ctx, 10))); n != 0 {
		t.Errorf("%d outbox rows still unpublished", n)
	}
	if n := len(must[[]sqlc.ConfigRevision](t)(q.ListConfigRevisionsBehind(ctx))); n != 2 {
		t.Errorf("ListConfigRevisionsBehind: %d, want 2", n)
	}
	pub := must[sqlc.ConfigRevision](t)(q.MarkConfigPublished(ctx, sqlc.MarkConfigPublishedParams{TenantID: acme.ID, Revision: 3}))
	pub = must[sqlc.ConfigRevision](t)(q.MarkConfigPublished(ctx, sqlc.MarkConfigPublishedParams{TenantID: acme.ID, Revision: 2}))
	if pub.DesiredRevision != 3 || pub.PublishedRevision != 3 {
		t.Errorf("acme revisions desired %d published %d, want 3 and 3", pub.DesiredRevision, pub.PublishedRevision)
	}
	if rev.TenantID.Valid || rev.DesiredRevision != 1 {
		t.Errorf("cluster revision = %+v", rev)
	}
	if _, err := q.MarkConfigPublished(ctx, sqlc.MarkConfigPublishedParams{TenantID: cluster, Revision: 9}); constraintOf(err) != "config_revisions_published_not_ahead" {
		t.Errorf("publishing past the desired revision: %v", err)
	}

	// Audit.
	a := must[sqlc.AuditLog](t)(q.InsertAudit(ctx, sqlc.InsertAuditParams{Actor: "root@example.com", TenantID: acme.ID, Action: "provider.create", ObjectKind: "record", ObjectName: "gpt", Details: []byte(`{}`)}))
	if diff := cmp.Diff([]sqlc.AuditLog{a}, must[[]sqlc.AuditLog](t)(q.ListAudit(ctx, sqlc.ListAuditParams{TenantID: acme.ID, BeforeID: 1 << 62, MaxRows: 10}))); diff != "" {
		t.Errorf("ListAudit (-want +got):\n%s", diff)
	}

	// Edges and member views.
	now := time.Now().UTC().Truncate(time.Microsecond)
	must[sqlc.Edge](t)(q.UpsertEdge(ctx, sqlc.UpsertEdgeParams{ID: "edge-1", Version: "v1", LastSeen: ts(now)}))
	e := must[sqlc.Edge](t)(q.UpsertEdge(ctx, sqlc.UpsertEdgeParams{ID: "edge-1", Version: "v2", LastSeen: ts(now.Add(-time.Hour))}))
	if e.Version != "v2" || !e.LastSeen.Time.Equal(now) {
		t.Errorf("UpsertEdge kept %q %v, want v2 and the later last_seen %v", e.Version, e.LastSeen.Time, now)
	}
	rec := must[sqlc.ProviderRecord](t)(q.CreateProviderRecord(ctx, sqlc.CreateProviderRecordParams{
		TenantID: acme.ID, Name: "gpt", Pool: true, WireFormat: "openai", AuthKind: "none", OauthScopes: []string{},
		Tags: []byte(`{}`), AllowedRegions: []string{}, RateLimitHeaders: []byte(`{}`),
	}))
	view := func(payload string, at time.Time) int64 {
		return must[int64](t)(q.UpsertMemberView(ctx, sqlc.UpsertMemberViewParams{EdgeID: "edge-1", RecordID: rec.ID, MemberName: "m1", View: []byte(payload), ObservedAt: ts(at)}))
	}
	if view("new", now) != 1 || view("old", now.Add(-time.Second)) != 0 || view("newer", now.Add(time.Second)) != 1 {
		t.Error("UpsertMemberView did not keep only the latest view")
	}
	views := must[[]sqlc.MemberView](t)(q.ListMemberViews(ctx, sqlc.ListMemberViewsParams{TenantID: acme.ID, RecordName: "gpt"}))
	if len(views) != 1 || string(views[0].View) != "newer" {
		t.Errorf("ListMemberViews = %+v", views)
	}
	var unknown pgtype.UUID
	_ = unknown.Scan("11111111-1111-1111-1111-111111111111")
	if n := must[int64](t)(q.UpsertMemberView(ctx, sqlc.UpsertMemberViewParams{EdgeID: "edge-1", RecordID: unknown, MemberName: "m1", View: []byte("x"), ObservedAt: ts(now)})); n != 0 {
		t.Errorf("view of an unknown record stored: %d", n)
	}

	// Calls: a replay of the same call changes nothing.
	call := sqlc.InsertCallParams{CallID: "call-1", TenantID: acme.ID, EdgeID: "edge-1", Endpoint: "/v1/chat/completions",
		Model: "gpt-4o", RecordID: rec.ID, RecordName: "gpt", MemberName: "m1", Status: 200, Outcome: "answered",
		InputTokens: 100, OutputTokens: 20, ReservedNanos: 50_000, CostNanos: 450, StartedAt: ts(now), DurationMs: 1234,
		CacheMiss: "member_changed", CachePreviousMember: "m0", CacheMember: "m1", CacheEstimatedMissCostNanos: 10}
	if n := must[int64](t)(q.InsertCall(ctx, call)); n != 1 {
		t.Errorf("InsertCall = %d, want 1", n)
	}
	replay := call
	replay.CostNanos = 999
	if n := must[int64](t)(q.InsertCall(ctx, replay)); n != 0 {
		t.Errorf("InsertCall replay = %d, want 0", n)
	}
	attempts := []sqlc.InsertCallAttemptParams{
		{CallID: "call-1", AttemptIndex: 0, RecordName: "gpt", MemberName: "m0", Status: 429, Outcome: "failed_over", Kind: "rate_limited", LatencyMs: 12},
		{CallID: "call-1", AttemptIndex: 1, RecordName: "gpt", MemberName: "m1", Status: 200, Outcome: "answered", Kind: "none", CostNanos: 450, StartedAt: ts(now)},
	}
	for _, a := range append(attempts, attempts...) {
		must[int64](t)(q.InsertCallAttempt(ctx, a))
	}
	got := must[sqlc.Call](t)(q.GetCall(ctx, sqlc.GetCallParams{TenantID: acme.ID, CallID: "call-1"}))
	if got.CostNanos != 450 || got.CacheMiss != "member_changed" || !got.StartedAt.Time.Equal(now) {
		t.Errorf("GetCall = %+v", got)
	}
	gotAttempts := must[[]sqlc.CallAttempt](t)(q.ListCallAttempts(ctx, sqlc.ListCallAttemptsParams{TenantID: acme.ID, CallID: "call-1"}))
	if len(gotAttempts) != 2 || gotAttempts[0].Kind != "rate_limited" || gotAttempts[1].CostNanos != 450 {
		t.Errorf("ListCallAttempts = %+v", gotAttempts)
	}
	if n := len(must[[]sqlc.Call](t)(q.ListCallsBetween(ctx, sqlc.ListCallsBetweenParams{TenantID: acme.ID, FromTime: ts(now), ToTime: ts(now.Add(time.Second))}))); n != 1 {
		t.Errorf("ListCallsBetween: %d, want 1", n)
	}
}
