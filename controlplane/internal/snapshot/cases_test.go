package snapshot

import (
	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/db/sqlc"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// goldenCase is one golden-file test: the rows of a tenant snapshot
// (testdata/NAME.golden), of a cluster snapshot (testdata/NAME.cluster.golden),
// or both. Together the two files are what the edge compiler takes for one
// tenant.
type goldenCase struct {
	name    string
	tenant  func() TenantRows
	cluster func() ClusterRows
}

func goldenCases() []goldenCase {
	return []goldenCase{
		{name: "plain_openai", tenant: plainOpenAIRows},
		{name: "azure_pool", tenant: azurePoolRows},
		{name: "bedrock_pool", tenant: bedrockPoolRows},
		{name: "managed_shared", tenant: managedTenantRows, cluster: managedClusterRows},
		{name: "key_restrictions", tenant: keyRestrictionRows},
		{name: "budgets", tenant: budgetRows},
		{name: "secrets", tenant: secretRows},
	}
}

// acme is the tenant most cases belong to.
func acme() sqlc.Tenant { return newTenant(1, "acme") }

// plainOpenAIRows: a plain OpenAI record with a chat and an embeddings
// model, declared limits and rate-limit headers; a plain record signing with
// OAuth2 client credentials; one key; and a secret no record names (left
// out).
func plainOpenAIRows() TenantRows {
	t := acme()
	openai := newRecord(1, t.ID, "openai", "openai", "https://api.openai.com/v1")
	openai.Preset = "openai"
	openai.AuthHeader = "authorization"
	openai.KeySecret = text("openai-key")
	openai.RPM, openai.InputTPM, openai.OutputTPM = 500, 200000, 0
	openai.Region = "us-east"
	openai.RetainsData = true
	openai.Tags = jsonb(map[string]string{"vendor": "openai", "tier": "paid"})
	openai.RateLimitHeaders = jsonb(map[string]string{"requests-limit": "x-ratelimit-limit-requests", "requests-remaining": "x-ratelimit-remaining-requests"})
	openai.Priority = 5

	corp := newRecord(2, t.ID, "corp-gateway", "openai", "https://llm.corp.example.com/v1")
	corp.AuthKind = "oauth2"
	corp.TokenURL = "https://login.corp.example.com/oauth2/token"
	corp.ClientID = "weir-edge"
	corp.ClientSecretSecret = text("corp-client")
	corp.OauthScopes = []string{"llm.invoke", "llm.read"}
	corp.CreatedAt = ts("2025-04-01T09:30:00Z")

	return TenantRows{
		Version: 7,
		Now:     testNow(),
		Tenant:  t,
		APIKeys: []sqlc.APIKey{newKey(1, t.ID, "default")},
		Records: []sqlc.ProviderRecord{openai, corp},
		Models: []sqlc.RecordModel{
			{RecordID: openai.ID, Model: "gpt-x", Kind: "chat"},
			{RecordID: openai.ID, Model: "text-embed-x", Kind: "embeddings"},
			{RecordID: corp.ID, Model: "corp-chat", Kind: "chat"},
		},
		RecordPrices: []sqlc.RecordPrice{
			priceRow(openai, "gpt-x", 2500000, 10000000, 1250000),
			priceRow(openai, "text-embed-x", 20000, 0, 0),
		},
		Secrets: []sqlc.Secret{
			newSecret(1, t.ID, "openai-key", "sk-test-openai-0001", "api.openai.com"),
			newSecret(2, t.ID, "corp-client", "corp-client-secret-0002", "login.corp.example.com"),
			newSecret(3, t.ID, "unused", "never-sent-0003", "example.com"),
		},
	}
}

// azurePoolRows: the seed's example, an Azure OpenAI pool of two members in
// two regions with different weights, one with a member price override and a
// subset of the models; data rules; a key narrowed to one region.
func azurePoolRows() TenantRows {
	t := acme()
	rec := newRecord(1, t.ID, "azure-gpt", "openai", "")
	rec.Preset = "azure-openai"
	rec.AuthHeader = "api-key"
	rec.APIVersion = "2024-10-21"
	rec.AllowedRegions = []string{"eu-north", "eu-west"}
	rec.Tags = jsonb(map[string]string{"cloud": "azure"})
	rec.AttemptDeadlineMs = i8(0) // disabled
	rec.MaxWaitMs = i8(2000)

	sweden := newMember(1, rec, "sweden", "https://acme-sweden.openai.azure.com/openai")
	sweden.Preset = "azure-openai"
	sweden.KeySecret = text("azure-sweden")
	sweden.Region = text("eu-north")
	sweden.RPM, sweden.InputTPM, sweden.OutputTPM = i8(300), i8(300000), i8(30000)
	sweden.ModelMap = jsonb(map[string]string{"gpt-x": "gpt-x-sweden", "gpt-x-mini": "gpt-x-mini-sweden"})

	france := newMember(2, rec, "france", "https://acme-france.openai.azure.com/openai")
	france.Preset = "azure-openai"
	france.KeySecret = text("azure-france")
	france.Region = text("eu-west")
	france.Weight = 2
	france.RPM = i8(600)
	france.ModelMap = jsonb(map[string]string{"gpt-x": "gpt-x-france"})
	france.Models = []string{"gpt-x"}
	france.Tags = jsonb(map[string]string{"dc": "paris"})

	key := newKey(1, t.ID, "eu-app")
	key.Regions = []string{"eu-west"}

	return TenantRows{
		Version: 12,
		Now:     testNow(),
		Tenant:  t,
		DataRules: &sqlc.DataRule{
			TenantID:       t.ID,
			AllowedRegions: []string{"eu-*"},
			NoRetainedData: true,
			RequiredTags:   jsonb(map[string]string{"cloud": "azure"}),
		},
		APIKeys: []sqlc.APIKey{key},
		Records: []sqlc.ProviderRecord{rec},
		Models: []sqlc.RecordModel{
			{RecordID: rec.ID, Model: "gpt-x-mini", Kind: "chat"},
			{RecordID: rec.ID, Model: "gpt-x", Kind: "chat"},
		},
		Members: []sqlc.PoolMember{sweden, france},
		RecordPrices: []sqlc.RecordPrice{
			priceRow(rec, "gpt-x", 2500000, 10000000, 250000),
			priceRow(rec, "gpt-x-mini", 150000, 600000, 75000),
		},
		MemberPrices: []sqlc.MemberPrice{
			// Only input and output: cache read comes from the record.
			{MemberID: france.ID, Model: "gpt-x", InputMicros: i8(2750000), OutputMicros: i8(11000000)},
		},
		Secrets: []sqlc.Secret{
			newSecret(1, t.ID, "azure-sweden", "azure-key-sweden-0001", "acme-sweden.openai.azure.com"),
			newSecret(2, t.ID, "azure-france", "azure-key-france-0002", "acme-france.openai.azure.com"),
		},
	}
}

// bedrockPoolRows: a Bedrock pool signed with SigV4: one member inheriting
// the record's auth, one in a second tier with an explicit account and
// retains_data, one with its own SigV4 key and partial price overrides;
// recovery settings from the *_ms columns.
func bedrockPoolRows() TenantRows {
	t := acme()
	rec := newRecord(1, t.ID, "bedrock-claude", "bedrock", "")
	rec.Preset = "bedrock"
	rec.AuthKind = "sigv4"
	rec.AWSService = "bedrock"
	rec.AWSRegion = "eu-central-1"
	rec.AccessKeySecret = text("aws-main")
	rec.Region = "eu-central"
	rec.MaxAttempts = 4
	rec.CallDeadlineMs = i8(300000)
	rec.CooldownBaseMs = i8(2500)
	rec.CooldownMaxMs = i8(600000)
	rec.DefaultMaxOutput = 8192

	frankfurt := newMember(1, rec, "frankfurt", "https://bedrock-runtime.eu-central-1.amazonaws.com")
	frankfurt.Models = []string{"claude-x"}
	frankfurt.ModelMap = jsonb(map[string]string{"claude-x": "eu.anthropic.claude-x-v1:0"})
	frankfurt.RPM, frankfurt.InputTPM, frankfurt.OutputTPM = i8(50), i8(400000), i8(80000)

	paris := newMember(2, rec, "paris", "https://bedrock-runtime.eu-west-3.amazonaws.com")
	paris.Region = text("eu-west")
	paris.RetainsData = boolean(false)
	paris.Account = text("aws-org-1")
	paris.Order = 2
	paris.Models = []string{"claude-x"}
	paris.ModelMap = jsonb(map[string]string{"claude-x": "eu.anthropic.claude-x-v1:0"})

	ireland := newMember(3, rec, "ireland", "https://bedrock-runtime.eu-west-1.amazonaws.com")
	ireland.AuthKind = text("sigv4")
	ireland.AWSService = "bedrock"
	ireland.AWSRegion = "eu-west-1"
	ireland.AccessKeySecret = text("aws-ireland")
	ireland.Region = text("eu-west")
	ireland.Weight = 3
	ireland.ModelMap = jsonb(map[string]string{"claude-x": "eu.anthropic.claude-x-v1:0", "claude-y": "anthropic.claude-y-v2:0"})

	return TenantRows{
		Version: 3,
		Now:     testNow(),
		Tenant:  acme(),
		Records: []sqlc.ProviderRecord{rec},
		Models: []sqlc.RecordModel{
			{RecordID: rec.ID, Model: "claude-x", Kind: "chat"},
			{RecordID: rec.ID, Model: "claude-y", Kind: "chat"},
		},
		Members: []sqlc.PoolMember{paris, ireland, frankfurt},
		RecordPrices: []sqlc.RecordPrice{
			{RecordID: rec.ID, Model: "claude-x", InputMicros: 3000000, OutputMicros: 15000000, CacheReadMicros: i8(300000), CacheWriteMicros: i8(3750000)},
		},
		MemberPrices: []sqlc.MemberPrice{
			{MemberID: ireland.ID, Model: "claude-y", InputMicros: i8(800000), OutputMicros: i8(4000000), CacheReadMicros: i8(80000), CacheWriteMicros: i8(1000000)},
			{MemberID: ireland.ID, Model: "claude-x", InputMicros: i8(3300000)},
		},
		Secrets: []sqlc.Secret{
			newSecret(1, t.ID, "aws-main", "AKIAMAIN0001:main-secret-access-key", "bedrock-runtime.eu-central-1.amazonaws.com", "bedrock-runtime.eu-west-3.amazonaws.com"),
			newSecret(2, t.ID, "aws-ireland", `{"access_key_id":"AKIAIRL0002","secret_access_key":"irl-secret"}`, "bedrock-runtime.eu-west-1.amazonaws.com"),
		},
	}
}

// other is the second tenant of the managed case.
func other() sqlc.Tenant { return newTenant(2, "other") }

// managedTenantRows: acme's own records next to the managed ones: a BYOK
// Anthropic record sharing the managed record's name, and a local vLLM on
// loopback over plain http with no auth.
func managedTenantRows() TenantRows {
	t := acme()
	own := newRecord(1, t.ID, "anthropic", "anthropic", "https://api.anthropic.com")
	own.Preset = "anthropic"
	own.AuthHeader = "x-api-key"
	own.KeySecret = text("anthropic-key")
	own.CreatedAt = ts("2025-05-01T00:00:00Z")

	vllm := newRecord(2, t.ID, "local-vllm", "openai", "http://127.0.0.1:8000/v1")
	vllm.Preset = "vllm"
	vllm.AuthKind = "none"

	return TenantRows{
		Version: 40,
		Now:     testNow(),
		Tenant:  t,
		APIKeys: []sqlc.APIKey{newKey(1, t.ID, "batch")},
		Records: []sqlc.ProviderRecord{vllm, own},
		Models: []sqlc.RecordModel{
			{RecordID: own.ID, Model: "claude-x", Kind: "chat"},
			{RecordID: vllm.ID, Model: "meta-llama/Llama-3-8B", Kind: "chat"},
		},
		RecordPrices: []sqlc.RecordPrice{
			{RecordID: own.ID, Model: "claude-x", InputMicros: 3000000, OutputMicros: 15000000, CacheReadMicros: i8(300000), CacheWriteMicros: i8(3750000)},
		},
		Secrets: []sqlc.Secret{newSecret(1, t.ID, "anthropic-key", "sk-ant-own-0001", "api.anthropic.com")},
	}
}

// managedClusterRows: a managed Anthropic record shared with two tenants,
// and an internal GPU pool on private addresses over plain http shared with
// one; one cluster secret.
func managedClusterRows() ClusterRows {
	var cluster pgtype.UUID
	shared := newRecord(11, cluster, "anthropic", "anthropic", "https://api.anthropic.com")
	shared.Preset = "anthropic"
	shared.AuthHeader = "x-api-key"
	shared.KeySecret = text("cluster-anthropic")
	shared.Account = "weir-anthropic-org"
	shared.CreatedAt = ts("2024-11-01T00:00:00Z")

	gpu := newRecord(12, cluster, "gpu-farm", "openai", "")
	gpu.Internal = true
	gpu.Preset = "vllm"
	gpu.AuthKind = "none"
	gpu.Priority = -1
	rackA := newMember(11, gpu, "rack-a", "http://10.1.0.10:8000/v1")
	rackA.Region = text("dc1")
	rackB := newMember(12, gpu, "rack-b", "http://10.1.0.11:8000/v1")
	rackB.Region = text("dc1")
	rackB.Weight = 3

	acmeT, otherT := acme(), other()
	return ClusterRows{
		Version: 9,
		Now:     testNow(),
		// R-SEC-2: controlplane serve --tenant-loopback-ports 8000,11434.
		TenantLoopback: &configv1.TenantLoopback{Ports: []uint32{8000, 11434}},
		// R-CAP-2: controlplane serve --default-tenant-max-in-flight 64.
		DefaultTenantMaxInFlight: 64,
		Records:                  []sqlc.ProviderRecord{gpu, shared},
		Models: []sqlc.RecordModel{
			{RecordID: shared.ID, Model: "claude-z", Kind: "chat"},
			{RecordID: shared.ID, Model: "claude-x", Kind: "chat"},
			{RecordID: gpu.ID, Model: "qwen-coder", Kind: "chat"},
			{RecordID: gpu.ID, Model: "bge-m3", Kind: "embeddings"},
		},
		Members: []sqlc.PoolMember{rackB, rackA},
		RecordPrices: []sqlc.RecordPrice{
			{RecordID: shared.ID, Model: "claude-x", InputMicros: 3000000, OutputMicros: 15000000, CacheReadMicros: i8(300000), CacheWriteMicros: i8(3750000)},
			{RecordID: shared.ID, Model: "claude-z", InputMicros: 800000, OutputMicros: 4000000, CacheReadMicros: i8(80000), CacheWriteMicros: i8(1000000)},
		},
		Shares: []sqlc.ListRecordSharesRow{
			{RecordID: shared.ID, TenantID: otherT.ID, RecordName: shared.Name, TenantName: otherT.Name},
			{RecordID: gpu.ID, TenantID: acmeT.ID, RecordName: gpu.Name, TenantName: acmeT.Name},
			{RecordID: shared.ID, TenantID: acmeT.ID, RecordName: shared.Name, TenantName: acmeT.Name},
		},
		Secrets: []sqlc.Secret{newSecret(11, cluster, "cluster-anthropic", "sk-ant-cluster-0011", "api.anthropic.com")},
	}
}

// keyRestrictionRows: keys with every kind of restriction, a revoked key, a
// revoked key whose name an active key reuses (only the active one is sent),
// and two revoked keys of one name (only the later one is sent).
func keyRestrictionRows() TenantRows {
	t := acme()
	t.RPM = 1200 // R-CAP-2; max_in_flight 0: the cluster default
	rec := newRecord(1, t.ID, "openai", "openai", "https://api.openai.com/v1")
	rec.KeySecret = text("openai-key")

	batch := newKey(1, t.ID, "batch")
	batch.AllowedModels = []string{"gpt-x", "gpt-x-mini"}
	batch.AllowedRecords = []string{"openai"}
	batch.Regions = []string{"eu-*", "us-east"}
	// R-CAP-2: a key's caller limits (ci's are 0: none sent).
	batch.RPM, batch.MaxInFlight = 600, 8

	ci := newKey(2, t.ID, "ci")
	ci.RevokedAt = ts("2025-05-01T00:00:00Z")

	appOld := newKey(3, t.ID, "app")
	appOld.RevokedAt = ts("2025-04-01T00:00:00Z")
	appNew := newKey(4, t.ID, "app")
	appNew.CreatedAt = ts("2025-04-01T00:00:01Z")
	appNew.AllowedModels = []string{"gpt-x"}
	appNew.MaxInFlight = 2 // rpm 0: no rpm of its own

	old1 := newKey(5, t.ID, "legacy")
	old1.RevokedAt = ts("2025-03-01T00:00:00Z")
	old2 := newKey(6, t.ID, "legacy")
	old2.CreatedAt = ts("2025-03-02T00:00:00Z")
	old2.RevokedAt = ts("2025-03-05T00:00:00Z")

	return TenantRows{
		Version: 21,
		Now:     testNow(),
		Tenant:  t,
		APIKeys: []sqlc.APIKey{old2, appNew, ci, batch, appOld, old1},
		Records: []sqlc.ProviderRecord{rec},
		Models:  []sqlc.RecordModel{{RecordID: rec.ID, Model: "gpt-x", Kind: "chat"}, {RecordID: rec.ID, Model: "gpt-x-mini", Kind: "chat"}},
		Secrets: []sqlc.Secret{newSecret(1, t.ID, "openai-key", "sk-test-openai-0001", "api.openai.com")},
	}
}

// budgetRows: a tenant's budgets of every period: a month still current, a
// day that ended before the snapshot's time (rolled over), a total, and a
// key's day budget started mid-day (current).
func budgetRows() TenantRows {
	t := acme()
	key := newKey(1, t.ID, "batch")
	budget := func(n byte, name string, limit int64, period, start string, spent int64) sqlc.Budget {
		return sqlc.Budget{
			ID: id(kBudget, n), TenantID: t.ID, Name: name, LimitNanos: limit, Period: period,
			SpentNanos: spent, PeriodStart: ts(start),
			CreatedAt: ts("2025-01-01T00:00:00Z"), UpdatedAt: ts("2025-06-01T00:00:00Z"),
		}
	}
	batchDay := budget(4, "batch-daily", 5_000_000_000, "day", "2025-06-15T08:30:00Z", 42_000)
	batchDay.KeyID = key.ID
	return TenantRows{
		Version: 5,
		Now:     testNow(),
		Tenant:  t,
		APIKeys: []sqlc.APIKey{key},
		Budgets: []sqlc.Budget{
			budget(1, "monthly", 1_000_000_000_000, "month", "2025-06-01T00:00:00Z", 123_456_789),
			budget(2, "daily", 50_000_000_000, "day", "2025-06-14T00:00:00Z", 49_999_000_000),
			budget(3, "lifetime", 10_000_000_000_000, "total", "2025-01-01T00:00:00Z", 5_000_000_000_000),
			batchDay,
		},
	}
}

// secretRows: a pool whose members sign with every kind of secret: the
// record's key secret (inherited), a key secret of their own, an OAuth2
// client secret, and a member with a header but no kind (API-key auth
// with its own key secret). Every referenced secret is resealed for edges;
// the unreferenced one is left out.
func secretRows() TenantRows {
	t := acme()
	rec := newRecord(1, t.ID, "gateway", "openai", "")
	rec.KeySecret = text("shared-key")
	rec.AuthHeader = "authorization"

	inherit := newMember(1, rec, "inherit", "https://a.llm.example.com/v1")
	ownKey := newMember(2, rec, "own-key", "https://b.llm.example.com/v1")
	ownKey.KeySecret = text("b-key")
	ownKey.AuthHeader = text("x-api-key")
	oauth := newMember(3, rec, "oauth", "https://c.llm.example.com/v1")
	oauth.AuthKind = text("oauth2")
	oauth.TokenURL = "https://login.example.com/token"
	oauth.ClientID = "edge"
	oauth.ClientSecretSecret = text("c-client")
	oauth.OauthScopes = []string{"invoke"}
	off := newMember(4, rec, "spare", "https://d.llm.example.com/v1")
	off.Off = true
	off.Order = 2
	off.APIVersion = text("")

	return TenantRows{
		Version: 2,
		Now:     testNow(),
		Tenant:  t,
		Records: []sqlc.ProviderRecord{rec},
		Models:  []sqlc.RecordModel{{RecordID: rec.ID, Model: "chat-1", Kind: "chat"}},
		Members: []sqlc.PoolMember{off, oauth, ownKey, inherit},
		Secrets: []sqlc.Secret{
			newSecret(4, t.ID, "unreferenced", "not-for-edges-0004", "example.com"),
			newSecret(3, t.ID, "c-client", "c-client-secret-0003", "login.example.com"),
			newSecret(2, t.ID, "b-key", "b-api-key-0002", "b.llm.example.com"),
			newSecret(1, t.ID, "shared-key", "shared-api-key-0001", "a.llm.example.com", "d.llm.example.com"),
		},
	}
}

// secretValues maps every secret value a case holds, by name, for the tests
// that check resealing and that no value leaks into a golden file.
func secretValues() map[string]string {
	return map[string]string{
		"openai-key":        "sk-test-openai-0001",
		"corp-client":       "corp-client-secret-0002",
		"unused":            "never-sent-0003",
		"azure-sweden":      "azure-key-sweden-0001",
		"azure-france":      "azure-key-france-0002",
		"aws-main":          "AKIAMAIN0001:main-secret-access-key",
		"aws-ireland":       `{"access_key_id":"AKIAIRL0002","secret_access_key":"irl-secret"}`,
		"anthropic-key":     "sk-ant-own-0001",
		"cluster-anthropic": "sk-ant-cluster-0011",
		"unreferenced":      "not-for-edges-0004",
		"c-client":          "c-client-secret-0003",
		"b-key":             "b-api-key-0002",
		"shared-key":        "shared-api-key-0001",
	}
}
