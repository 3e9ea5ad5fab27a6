package snapshot

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"

	"weir.dev/db/pgtest"
	"weir.dev/db/sqlc"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// recordingBeginner remembers the options of the transactions it begins.
type recordingBeginner struct {
	TxBeginner
	opts []pgx.TxOptions
}

func (r *recordingBeginner) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	r.opts = append(r.opts, opts)
	return r.TxBeginner.BeginTx(ctx, opts)
}

// TestLoadAndBuildAgainstPostgres writes a tenant with a pooled record,
// members, prices, keys, budgets, data rules and secrets through the sqlc
// queries (next to another tenant and a managed record shared with both),
// then loads and builds the snapshots and checks that every field
// round-trips.
func TestLoadAndBuildAgainstPostgres(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.New(t)
	q := sqlc.New(pool)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var cluster pgtype.UUID

	acmeT, err := q.CreateTenant(ctx, sqlc.CreateTenantParams{Name: "acme"})
	must(err)
	otherT, err := q.CreateTenant(ctx, sqlc.CreateTenantParams{Name: "other"})
	must(err)
	// R-CAP-2: the tenant's caller limits are read with it.
	acmeT, err = q.SetTenantLimits(ctx, sqlc.SetTenantLimitsParams{ID: acmeT.ID, RPM: 900, MaxInFlight: 30})
	must(err)
	setSecret := func(owner pgtype.UUID, name, value string, hosts ...string) {
		t.Helper()
		ct, nonce := masterSeal(value, name)
		_, err := q.SetSecret(ctx, sqlc.SetSecretParams{TenantID: owner, Name: name, Ciphertext: ct, Nonce: nonce, KeyVersion: 1, Hosts: hosts})
		must(err)
	}
	setSecret(acmeT.ID, "azure-sweden", "azure-key-sweden-0001", "acme-sweden.openai.azure.com")
	setSecret(acmeT.ID, "azure-france", "azure-key-france-0002", "acme-france.openai.azure.com")
	setSecret(acmeT.ID, "unused", "never-sent-0003", "example.com")
	setSecret(otherT.ID, "other-key", "sk-other-0004", "api.openai.com")
	setSecret(cluster, "cluster-anthropic", "sk-ant-cluster-0011", "api.anthropic.com")

	_, err = q.UpsertDataRules(ctx, sqlc.UpsertDataRulesParams{
		TenantID: acmeT.ID, AllowedRegions: []string{"eu-*"}, NoRetainedData: true,
		RequiredTags: jsonb(map[string]string{"cloud": "azure"}),
	})
	must(err)

	rec, err := q.CreateProviderRecord(ctx, sqlc.CreateProviderRecordParams{
		TenantID: acmeT.ID, Name: "azure-gpt", Pool: true, WireFormat: "openai", Preset: "azure-openai",
		AuthKind: "api_key", AuthHeader: "api-key", OauthScopes: []string{},
		Tags: jsonb(map[string]string{"cloud": "azure"}), AllowedRegions: []string{"eu-north", "eu-west"},
		RateLimitHeaders: jsonb(map[string]string{"tokens-remaining": "x-ratelimit-remaining-tokens"}),
		MaxAttempts:      5, AttemptDeadlineMs: i8(0), CooldownMaxMs: i8(900000),
		DefaultMaxOutput: 2048, Priority: 3, Account: "azure-sub-1", APIVersion: "2024-10-21",
	})
	must(err)
	_, err = q.AddRecordModels(ctx, sqlc.AddRecordModelsParams{
		Models: []string{"text-embed", "gpt-x"}, Kinds: []string{"embeddings", "chat"},
		TenantID: acmeT.ID, RecordName: "azure-gpt",
	})
	must(err)
	for _, p := range []sqlc.UpsertRecordPriceParams{
		{Model: "gpt-x", InputMicros: 2500000, OutputMicros: 10000000, CacheReadMicros: i8(250000)},
		{Model: "text-embed", InputMicros: 20000, OutputMicros: 0, CacheReadMicros: i8(0)},
	} {
		p.TenantID, p.RecordName = acmeT.ID, "azure-gpt"
		_, err = q.UpsertRecordPrice(ctx, p)
		must(err)
	}
	sweden, err := q.AddPoolMember(ctx, sqlc.AddPoolMemberParams{
		Name: "sweden", BaseURL: "https://acme-sweden.openai.azure.com/openai",
		KeySecret: text("azure-sweden"), Region: text("eu-north"), OauthScopes: []string{},
		Tags: jsonb(nil), RPM: i8(300), InputTPM: i8(300000), Weight: 1, Order: 1,
		ModelMap: jsonb(map[string]string{"gpt-x": "gpt-x-sweden"}), Models: []string{},
		TenantID: acmeT.ID, RecordName: "azure-gpt",
	})
	must(err)
	france, err := q.AddPoolMember(ctx, sqlc.AddPoolMemberParams{
		Name: "france", BaseURL: "https://acme-france.openai.azure.com/openai",
		AuthKind: text("api_key"), AuthHeader: text("api-key"), OauthScopes: []string{},
		KeySecret: text("azure-france"), Region: text("eu-west"), RetainsData: boolean(false),
		Tags: jsonb(map[string]string{"dc": "paris"}), Weight: 2, Order: 2,
		ModelMap: jsonb(map[string]string{"gpt-x": "gpt-x-france"}), Models: []string{"gpt-x"},
		Off: true, Account: text("azure-sub-2"), APIVersion: text("2025-01-01"),
		TenantID: acmeT.ID, RecordName: "azure-gpt",
	})
	must(err)
	_, err = q.UpsertMemberPrice(ctx, sqlc.UpsertMemberPriceParams{
		Model: "gpt-x", InputMicros: i8(2750000), TenantID: acmeT.ID, RecordName: "azure-gpt", MemberName: "france",
	})
	must(err)

	app := newKey(1, acmeT.ID, "app")
	appRow, err := q.CreateAPIKey(ctx, sqlc.CreateAPIKeyParams{
		TenantID: acmeT.ID, Name: "app", SHA256: app.SHA256,
		AllowedModels: []string{"gpt-x"}, AllowedRecords: []string{"azure-gpt"}, Regions: []string{"eu-west"},
		RPM: 60, MaxInFlight: 4,
	})
	must(err)
	old := newKey(2, acmeT.ID, "old")
	_, err = q.CreateAPIKey(ctx, sqlc.CreateAPIKeyParams{TenantID: acmeT.ID, Name: "old", SHA256: old.SHA256, AllowedModels: []string{}, AllowedRecords: []string{}, Regions: []string{}})
	must(err)
	_, err = q.RevokeAPIKey(ctx, sqlc.RevokeAPIKeyParams{TenantID: acmeT.ID, Name: "old"})
	must(err)
	budget, err := q.UpsertBudget(ctx, sqlc.UpsertBudgetParams{TenantID: acmeT.ID, Name: "app-total", LimitNanos: 7_000_000_000, Period: "total", KeyID: appRow.ID})
	must(err)
	for range 2 {
		_, err = q.BumpConfigRevision(ctx, acmeT.ID)
		must(err)
	}

	// Another tenant's record, and a managed record shared with both.
	_, err = q.CreateProviderRecord(ctx, sqlc.CreateProviderRecordParams{
		TenantID: otherT.ID, Name: "other-openai", WireFormat: "openai", BaseURL: text("https://api.openai.com/v1"),
		AuthKind: "api_key", KeySecret: text("other-key"), OauthScopes: []string{}, Tags: jsonb(nil),
		AllowedRegions: []string{}, RateLimitHeaders: jsonb(nil),
	})
	must(err)
	shared, err := q.CreateProviderRecord(ctx, sqlc.CreateProviderRecordParams{
		TenantID: cluster, Name: "shared-anthropic", WireFormat: "anthropic", BaseURL: text("https://api.anthropic.com"),
		AuthKind: "api_key", AuthHeader: "x-api-key", KeySecret: text("cluster-anthropic"), OauthScopes: []string{},
		Tags: jsonb(nil), AllowedRegions: []string{}, RateLimitHeaders: jsonb(nil), Account: "weir-org",
	})
	must(err)
	_, err = q.AddRecordModels(ctx, sqlc.AddRecordModelsParams{Models: []string{"claude-x"}, Kinds: []string{"chat"}, TenantID: cluster, RecordName: "shared-anthropic"})
	must(err)
	_, err = q.UpsertRecordPrice(ctx, sqlc.UpsertRecordPriceParams{
		Model: "claude-x", InputMicros: 3000000, OutputMicros: 15000000, CacheReadMicros: i8(300000), CacheWriteMicros: i8(3750000),
		TenantID: cluster, RecordName: "shared-anthropic",
	})
	must(err)
	for _, tn := range []sqlc.Tenant{otherT, acmeT} {
		must(q.ShareRecord(ctx, sqlc.ShareRecordParams{TenantID: tn.ID, RecordName: "shared-anthropic"}))
	}
	_, err = q.BumpConfigRevision(ctx, cluster)
	must(err)

	// The tenant snapshot.
	rb := &recordingBeginner{TxBeginner: pool}
	rows, err := LoadTenant(ctx, rb, acmeT.ID)
	must(err)
	if want := []pgx.TxOptions{{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}}; !cmp.Equal(rb.opts, want) {
		t.Errorf("LoadTenant began transactions %+v, want %+v", rb.opts, want)
	}
	if rows.Now.IsZero() || time.Since(rows.Now) > time.Hour {
		t.Errorf("rows.Now = %v, want the transaction's time", rows.Now)
	}
	ts, err := BuildTenant(rows, testOpen, testEdgeKey(), testRand())
	must(err)

	if ts.GetVersion() != 2 {
		t.Errorf("version %d, want 2 (two bumps)", ts.GetVersion())
	}
	wantTenant := &configv1.Tenant{Id: acmeT.ID.String(), Name: "acme", Limits: &configv1.CallerLimits{Rpm: 900, MaxInFlight: 30}}
	wantRules := &configv1.DataRules{AllowedRegions: []string{"eu-*"}, NoRetainedData: true, RequiredTags: map[string]string{"cloud": "azure"}}
	wantKeys := []*configv1.ApiKey{
		{Id: appRow.ID.String(), Name: "app", Sha256: app.SHA256, AllowedModels: []string{"gpt-x"}, AllowedRecords: []string{"azure-gpt"}, Regions: []string{"eu-west"}, Limits: &configv1.CallerLimits{Rpm: 60, MaxInFlight: 4}},
		{Name: "old", Sha256: old.SHA256, Revoked: true},
	}
	wantRecord := &configv1.ProviderRecord{
		Id: rec.ID.String(), Name: "azure-gpt", TenantId: acmeT.ID.String(),
		WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI, Preset: "azure-openai",
		Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "api-key"},
		Models: []*configv1.Model{
			{Name: "gpt-x", Kind: configv1.ModelKind_MODEL_KIND_CHAT},
			{Name: "text-embed", Kind: configv1.ModelKind_MODEL_KIND_EMBEDDINGS},
		},
		Prices: []*configv1.Price{
			{Model: "gpt-x", InputMicros: ptr[int64](2500000), OutputMicros: ptr[int64](10000000), CacheReadMicros: ptr[int64](250000)},
			{Model: "text-embed", InputMicros: ptr[int64](20000), OutputMicros: ptr[int64](0), CacheReadMicros: ptr[int64](0)},
		},
		Tags:             map[string]string{"cloud": "azure"},
		AllowedRegions:   []string{"eu-north", "eu-west"},
		RateLimitHeaders: map[string]string{"tokens-remaining": "x-ratelimit-remaining-tokens"},
		Recovery: &configv1.Recovery{
			MaxAttempts:     5,
			AttemptDeadline: durationpb.New(0), // set: disabled
			CooldownMax:     durationpb.New(15 * time.Minute),
		},
		DefaultMaxOutput: 2048,
		Priority:         3,
		Account:          "azure-sub-1",
		ApiVersion:       "2024-10-21",
		Members: []*configv1.Member{
			{
				// Inherits auth, retains_data, account and api_version.
				Id: sweden.ID.String(), Name: "sweden", BaseUrl: "https://acme-sweden.openai.azure.com/openai",
				KeySecret: ptr("azure-sweden"), Region: ptr("eu-north"),
				Limits: &configv1.Limits{Rpm: 300, InputTpm: 300000},
				Weight: 1, Order: 1, ModelMap: map[string]string{"gpt-x": "gpt-x-sweden"},
			},
			{
				Id: france.ID.String(), Name: "france", BaseUrl: "https://acme-france.openai.azure.com/openai",
				Auth:      &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "api-key"},
				KeySecret: ptr("azure-france"), Region: ptr("eu-west"), RetainsData: ptr(false),
				Tags:   map[string]string{"dc": "paris"},
				Prices: []*configv1.Price{{Model: "gpt-x", InputMicros: ptr[int64](2750000)}},
				Weight: 2, Order: 2, ModelMap: map[string]string{"gpt-x": "gpt-x-france"},
				Models: []string{"gpt-x"}, Off: true, Account: ptr("azure-sub-2"), ApiVersion: ptr("2025-01-01"),
			},
		},
	}
	wantBudgets := []*configv1.Budget{{
		Id: budget.ID.String(), Name: "app-total", LimitNanos: 7_000_000_000,
		Period: configv1.BudgetPeriod_BUDGET_PERIOD_TOTAL, KeyId: appRow.ID.String(),
	}}
	opts := []cmp.Option{
		protocmp.Transform(),
		protocmp.IgnoreFields(&configv1.ProviderRecord{}, "created_at"),
		protocmp.IgnoreFields(&configv1.ApiKey{}, "id"),
		protocmp.IgnoreFields(&configv1.Budget{}, "period_start"),
	}
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"tenant", ts.GetTenant(), wantTenant},
		{"data rules", ts.GetDataRules(), wantRules},
		{"keys", ts.GetApiKeys(), wantKeys},
		{"records", ts.GetRecords(), []*configv1.ProviderRecord{wantRecord}},
		{"budgets", ts.GetBudgets(), wantBudgets},
	} {
		if diff := cmp.Diff(c.want, c.got, opts...); diff != "" {
			t.Errorf("%s differ (-want +got):\n%s", c.what, diff)
		}
	}
	if !ts.GetRecords()[0].GetCreatedAt().AsTime().Equal(rec.CreatedAt.Time) {
		t.Errorf("created_at %v, want %v", ts.GetRecords()[0].GetCreatedAt().AsTime(), rec.CreatedAt.Time)
	}
	if !ts.GetBudgets()[0].GetPeriodStart().AsTime().Equal(budget.PeriodStart.Time) {
		t.Errorf("period_start %v, want %v", ts.GetBudgets()[0].GetPeriodStart().AsTime(), budget.PeriodStart.Time)
	}
	var secretNames []string
	for _, s := range ts.GetSecrets() {
		secretNames = append(secretNames, s.GetName())
		plain, err := edgeOpen(testEdgeKey(), s.GetCiphertext())
		if err != nil || string(plain) != secretValues()[s.GetName()] {
			t.Errorf("secret %q does not open to its value with the edge key (%v)", s.GetName(), err)
		}
	}
	if want := []string{"azure-france", "azure-sweden"}; !cmp.Equal(secretNames, want) {
		t.Errorf("secrets %v, want %v (only the named ones, only the tenant's)", secretNames, want)
	}
	for _, p := range checkTenant(ts, testEdgeKey()) {
		t.Error(p)
	}
	roundTrip(t, ts)

	// The cluster snapshot.
	crows, err := LoadCluster(ctx, pool)
	must(err)
	cs, err := BuildCluster(crows, testOpen, testEdgeKey(), testRand())
	must(err)
	if cs.GetVersion() != 1 {
		t.Errorf("cluster version %d, want 1", cs.GetVersion())
	}
	if len(cs.GetManagedRecords()) != 1 {
		t.Fatalf("%d managed records, want 1 (no tenant's own record)", len(cs.GetManagedRecords()))
	}
	mr := cs.GetManagedRecords()[0]
	if got, want := mr.GetTenantIds(), []string{acmeT.ID.String(), otherT.ID.String()}; !cmp.Equal(got, want) {
		t.Errorf("tenant ids %v, want %v (by tenant name)", got, want)
	}
	if r := mr.GetRecord(); r.GetId() != shared.ID.String() || !r.GetManaged() || r.GetTenantId() != "" ||
		r.GetKeySecret() != "cluster-anthropic" || r.GetAccount() != "weir-org" || len(r.GetPrices()) != 1 ||
		r.GetPrices()[0].CacheWriteMicros == nil || r.GetWireFormat() != configv1.WireFormat_WIRE_FORMAT_ANTHROPIC {
		t.Errorf("managed record does not round-trip: %v", r)
	}
	if len(cs.GetSecrets()) != 1 || cs.GetSecrets()[0].GetName() != "cluster-anthropic" || cs.GetSecrets()[0].GetTenantId() != "" {
		t.Errorf("cluster secrets %v, want cluster-anthropic only", cs.GetSecrets())
	}
	for _, p := range checkCluster(cs, testEdgeKey()) {
		t.Error(p)
	}
	roundTrip(t, cs)

	// A tenant that does not exist.
	var missing pgtype.UUID
	missing.Bytes[0], missing.Valid = 0xEE, true
	if _, err := LoadTenant(ctx, pool, missing); !errors.Is(err, ErrTenantNotFound) || !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("LoadTenant of a missing tenant: %v, want ErrTenantNotFound", err)
	}
}

// roundTrip checks that a snapshot survives protojson (the golden and
// standalone format) unchanged.
func roundTrip(t *testing.T, m proto.Message) {
	t.Helper()
	b, err := protojson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	back := m.ProtoReflect().New().Interface()
	if err := protojson.Unmarshal(b, back); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(back, m) {
		t.Error("the snapshot does not round-trip through protojson")
	}
}
