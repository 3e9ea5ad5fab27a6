package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing/rules"
)

func mask(paths ...string) *fieldmaskpb.FieldMask { return &fieldmaskpb.FieldMask{Paths: paths} }

func models(names ...string) []*configv1.Model {
	var out []*configv1.Model
	for _, n := range names {
		out = append(out, &configv1.Model{Name: n})
	}
	return out
}

// seed runs the seed's example flow as the CLI sends it and returns the
// warnings of each step.
func seed(t *testing.T, h *harness, admin string) [][]*adminv1.Warning {
	t.Helper()
	ctx := context.Background()
	h.secret("acme", "azure-se", "acme-sweden.openai.azure.com")
	h.secret("acme", "azure-fr", "acme-france.openai.azure.com")
	h.secret("acme", "aws", "bedrock-runtime.eu-north-1.amazonaws.com", "bedrock-runtime.eu-west-1.amazonaws.com")
	c := h.as(admin)
	var warnings [][]*adminv1.Warning
	add := func(m *adminv1.AddPoolMemberRequest) *adminv1.AddPoolMemberResponse {
		t.Helper()
		out := mustOK(c.pools.AddPoolMember(ctx, req(m)))(t)
		warnings = append(warnings, out.GetWarnings())
		return out
	}

	// `weir provider pool add azure-eu sweden --preset azure-openai --models gpt-x ...`
	out := add(&adminv1.AddPoolMemberRequest{
		Tenant: "acme", Record: "azure-eu", Member: "sweden", Preset: adminv1.Preset_PRESET_AZURE_OPENAI,
		RecordSpec: &adminv1.ProviderSpec{Models: models("gpt-x")},
		Spec: &adminv1.PoolMemberSpec{
			BaseUrl: "https://acme-sweden.openai.azure.com/openai", KeySecret: proto.String("azure-se"),
			Region: proto.String("eu-north"), Weight: 1, ModelMap: map[string]string{"gpt-x": "gpt-x-sweden"},
		},
	})
	if !out.GetRecordCreated() || out.GetRecordConverted() || out.GetRecord().GetKind() != adminv1.RecordKind_RECORD_KIND_POOL {
		t.Fatalf("first add: created %v converted %v kind %v", out.GetRecordCreated(), out.GetRecordConverted(), out.GetRecord().GetKind())
	}
	// `weir provider pool add azure-eu france --weight 2 --price gpt-x=2.75,11,0.275 ...`
	add(&adminv1.AddPoolMemberRequest{
		Tenant: "acme", Record: "azure-eu", Member: "france",
		Spec: &adminv1.PoolMemberSpec{
			BaseUrl: "https://acme-france.openai.azure.com/openai", KeySecret: proto.String("azure-fr"),
			Region: proto.String("eu-west"), Weight: 2,
			Prices: []*configv1.Price{price("gpt-x", 2_750_000, 11_000_000, 275_000)},
		},
	})
	// `weir provider pool add bedrock-eu stockholm --preset bedrock --aws-region eu-north-1 --access-key-secret aws ...`
	add(&adminv1.AddPoolMemberRequest{
		Tenant: "acme", Record: "bedrock-eu", Member: "stockholm", Preset: adminv1.Preset_PRESET_BEDROCK,
		RecordSpec: &adminv1.ProviderSpec{Models: models("claude-x")},
		Spec: &adminv1.PoolMemberSpec{
			BaseUrl: "https://bedrock-runtime.eu-north-1.amazonaws.com", Region: proto.String("eu-north-1"),
			Auth:     &configv1.Auth{AwsRegion: "eu-north-1", AccessKeySecret: "aws"},
			ModelMap: map[string]string{"claude-x": "eu.anthropic.claude-x"},
			Prices:   []*configv1.Price{price("claude-x", 3_000_000, 15_000_000, 300_000, 3_750_000)},
		},
	})
	// `weir provider pool add bedrock-eu ireland --preset bedrock --region eu-west-1 --access-key-secret aws ...`
	add(&adminv1.AddPoolMemberRequest{
		Tenant: "acme", Record: "bedrock-eu", Member: "ireland", Preset: adminv1.Preset_PRESET_BEDROCK,
		Spec: &adminv1.PoolMemberSpec{
			BaseUrl: "https://bedrock-runtime.eu-west-1.amazonaws.com", Region: proto.String("eu-west-1"),
			Auth:   &configv1.Auth{AccessKeySecret: "aws"},
			Prices: []*configv1.Price{price("claude-x", 3_000_000, 15_000_000, 300_000, 3_750_000)},
		},
	})
	return warnings
}

func TestSeedFlow(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	warnings := seed(t, h, "paul")

	// R-SEC-4: the Bedrock members share one access key secret.
	last := warnings[3]
	i := slices.IndexFunc(last, func(w *adminv1.Warning) bool { return w.GetCode() == WarnSharedKeySecret })
	if i < 0 {
		t.Fatalf("no shared_key_secret warning after the second Bedrock member: %v", last)
	}
	if diff := cmp.Diff([]string{"ireland", "stockholm"}, last[i].GetMembers()); diff != "" {
		t.Errorf("warned members (-want +got):\n%s", diff)
	}
	if !strings.Contains(last[i].GetMessage(), `"aws"`) || last[i].GetRecord() != "bedrock-eu" {
		t.Errorf("warning = %v", last[i])
	}
	for _, w := range warnings[:3] {
		if slices.ContainsFunc(w, func(w *adminv1.Warning) bool {
			return w.GetCode() == WarnSharedKeySecret || w.GetCode() == WarnSharedHost
		}) {
			t.Errorf("unexpected R-SEC-4 warning: %v", w)
		}
	}

	// `weir provider show azure-eu`: members with inherited fields resolved.
	c := h.as("cora") // a cost owner may read
	d := mustOK(c.providers.GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "acme", Name: "azure-eu"})))(t).GetDetail()
	if d.GetRecord().GetPreset() != adminv1.Preset_PRESET_AZURE_OPENAI || d.GetRecord().GetTenant() != "acme" {
		t.Errorf("record = %v", d.GetRecord())
	}
	wantRecordSpec := &adminv1.ProviderSpec{
		WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI,
		Auth:       &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "api-key"},
		Models:     []*configv1.Model{{Name: "gpt-x", Kind: configv1.ModelKind_MODEL_KIND_CHAT}},
		ApiVersion: AzureAPIVersion,
	}
	if diff := cmp.Diff(wantRecordSpec, d.GetRecord().GetSpec(), protocmp.Transform()); diff != "" {
		t.Errorf("record spec (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"france", "sweden"}, d.GetRecord().GetMemberNames()); diff != "" {
		t.Errorf("member names (-want +got):\n%s", diff)
	}
	byName := map[string]*adminv1.MemberDetail{}
	for _, m := range d.GetMembers() {
		byName[m.GetMember().GetName()] = m
	}
	sweden, france := byName["sweden"].GetEffective(), byName["france"].GetEffective()
	wantSweden := &adminv1.EffectiveMember{
		BaseUrl:          "https://acme-sweden.openai.azure.com/openai",
		Auth:             &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "api-key"},
		KeySecret:        "azure-se",
		Region:           "eu-north",
		Weight:           1,
		Order:            1,
		Models:           []string{"gpt-x"},
		ModelMap:         map[string]string{"gpt-x": "gpt-x-sweden"},
		Account:          "secret:azure-se",
		ApiVersion:       AzureAPIVersion,
		InheritedFields:  []string{"auth", "retains_data", "models", "api_version", "wire_format"},
		WireFormat:       configv1.WireFormat_WIRE_FORMAT_OPENAI,
		InheritedTagKeys: nil,
	}
	if diff := cmp.Diff(wantSweden, sweden, protocmp.Transform()); diff != "" {
		t.Errorf("sweden (-want +got):\n%s", diff)
	}
	if france.GetWeight() != 2 || france.GetRegion() != "eu-west" || len(france.GetPrices()) != 1 {
		t.Fatalf("france = %v", france)
	}
	wantPrice := &adminv1.ResolvedPrice{Price: price("gpt-x", 2_750_000, 11_000_000, 275_000), Whole: true}
	if diff := cmp.Diff(wantPrice, france.GetPrices()[0], protocmp.Transform()); diff != "" {
		t.Errorf("france price (-want +got):\n%s", diff)
	}
	if byName["sweden"].GetMember().GetId() == "" || byName["sweden"].GetMember().GetCreatedAt() == nil {
		t.Errorf("member as stored lacks id or time: %v", byName["sweden"].GetMember())
	}

	// `weir provider show bedrock-eu`: SigV4 resolved per member.
	d = mustOK(c.providers.GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "acme", Name: "bedrock-eu"})))(t).GetDetail()
	for _, m := range d.GetMembers() {
		e := m.GetEffective()
		region := strings.TrimPrefix(m.GetMember().GetName(), "")
		wantRegion := map[string]string{"stockholm": "eu-north-1", "ireland": "eu-west-1"}[region]
		wantAuth := &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_SIGV4, AwsService: "bedrock", AwsRegion: wantRegion, AccessKeySecret: "aws"}
		if diff := cmp.Diff(wantAuth, e.GetAuth(), protocmp.Transform()); diff != "" {
			t.Errorf("%s auth (-want +got):\n%s", m.GetMember().GetName(), diff)
		}
		if e.GetAccount() != "secret:aws" || slices.Contains(e.GetInheritedFields(), "auth") {
			t.Errorf("%s: account %q, inherited %v", m.GetMember().GetName(), e.GetAccount(), e.GetInheritedFields())
		}
	}
	if !slices.ContainsFunc(d.GetWarnings(), func(w *adminv1.Warning) bool { return w.GetCode() == WarnSharedKeySecret }) {
		t.Errorf("GetProvider does not repeat the R-SEC-4 warning: %v", d.GetWarnings())
	}

	// Four changes: four audit rows and four outbox rows.
	got := h.counts()
	if got.Audit != 4 || got.Outbox != 4 || got.Members != 4 || got.Records != 2 || got.MemberPrices != 3 {
		t.Errorf("rows = %+v", got)
	}
	rows, err := h.st.Q.ListAudit(ctx, sqlc.ListAuditParams{TenantID: h.tenants["acme"].ID, BeforeID: 1 << 62, MaxRows: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Action != "add" || r.Actor != "paul" || !strings.HasPrefix(r.ObjectKind, "providers/") {
			t.Errorf("audit row = %+v", r)
		}
	}

	// ListProviders and ListPrices see both records.
	list := mustOK(c.providers.ListProviders(ctx, req(&adminv1.ListProvidersRequest{Tenant: "acme"})))(t)
	if len(list.GetRecords()) != 2 || list.GetRecords()[0].GetName() != "azure-eu" {
		t.Errorf("list = %v", list.GetRecords())
	}
	prices := mustOK(c.prices.ListPrices(ctx, req(&adminv1.ListPricesRequest{Tenant: "acme", Record: "azure-eu"})))(t)
	if len(prices.GetPrices()) != 2 || prices.GetPrices()[1].GetMember() != "sweden" || prices.GetPrices()[1].GetPrice().GetWhole() {
		t.Errorf("prices = %v", prices.GetPrices())
	}
}

func TestGetProviderShowsEachEdgesLastView(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	seed(t, h, "alice")
	c := h.as("alice")
	d := mustOK(c.providers.GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "acme", Name: "azure-eu"})))(t).GetDetail()
	for _, m := range d.GetMembers() {
		if len(m.GetEdgeViews()) != 0 {
			t.Fatalf("views before any edge reported: %v", m.GetEdgeViews())
		}
	}
	recordID := pgtype.UUID{}
	if err := recordID.Scan(d.GetRecord().GetId()); err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		edge string
		age  time.Duration
	}{{"edge-1", 10 * time.Second}, {"edge-2", 5 * time.Minute}} {
		at := h.now.Add(-v.age)
		view, err := proto.Marshal(&telemetryv1.MemberView{EdgeId: v.edge, RecordName: "azure-eu", MemberName: "sweden", Headroom: 0.5, ObservedAt: timestamppb.New(at)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.st.Q.UpsertMemberView(ctx, sqlc.UpsertMemberViewParams{
			EdgeID: v.edge, MemberName: "sweden", View: view, ObservedAt: pgtype.Timestamptz{Time: at, Valid: true}, RecordID: recordID,
		}); err != nil {
			t.Fatal(err)
		}
	}
	d = mustOK(c.providers.GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "acme", Name: "azure-eu"})))(t).GetDetail()
	for _, m := range d.GetMembers() {
		views := m.GetEdgeViews()
		if m.GetMember().GetName() != "sweden" {
			if len(views) != 0 {
				t.Errorf("%s has views %v", m.GetMember().GetName(), views)
			}
			continue
		}
		if len(views) != 2 || views[0].GetView().GetEdgeId() != "edge-1" || views[0].GetExpired() ||
			views[1].GetView().GetEdgeId() != "edge-2" || !views[1].GetExpired() || views[0].GetView().GetHeadroom() != 0.5 {
			t.Errorf("sweden views = %v", views)
		}
	}
	ms := mustOK(c.pools.ListPoolMembers(ctx, req(&adminv1.ListPoolMembersRequest{Tenant: "acme", Record: "azure-eu", PageSize: 1})))(t)
	if len(ms.GetMembers()) != 1 || ms.GetNextPageToken() == "" {
		t.Fatalf("page 1 = %v", ms)
	}
	ms2 := mustOK(c.pools.ListPoolMembers(ctx, req(&adminv1.ListPoolMembersRequest{Tenant: "acme", Record: "azure-eu", PageSize: 1, PageToken: ms.GetNextPageToken()})))(t)
	if len(ms2.GetMembers()) != 1 || ms2.GetNextPageToken() != "" || ms2.GetMembers()[0].GetMember().GetName() != "sweden" || len(ms2.GetMembers()[0].GetEdgeViews()) != 2 {
		t.Errorf("page 2 = %v", ms2)
	}
}

func TestPlainToPoolAndBack(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	h.secret("acme", "oai", "api.openai.com", "eu.api.openai.com")
	c := h.as("alice")
	created := mustOK(c.providers.CreateProvider(ctx, req(&adminv1.CreateProviderRequest{
		Tenant: "acme", Name: "oai", Preset: adminv1.Preset_PRESET_OPENAI,
		Spec: &adminv1.ProviderSpec{
			KeySecret: "oai", Region: "us", Models: models("gpt-x", "text-embed-3"),
			Limits: &configv1.Limits{Rpm: 500},
			Prices: []*configv1.Price{price("gpt-x", 2_500_000, 10_000_000, 250_000)},
		},
	})))(t)
	rec := created.GetRecord()
	if rec.GetKind() != adminv1.RecordKind_RECORD_KIND_PLAIN || rec.GetSpec().GetBaseUrl() != OpenAIBaseURL {
		t.Fatalf("created = %v", rec)
	}
	if k := rec.GetSpec().GetModels()[1].GetKind(); k != configv1.ModelKind_MODEL_KIND_EMBEDDINGS {
		t.Errorf("text-embed-3 kind = %v, want embeddings", k)
	}
	d := mustOK(c.providers.GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "acme", Name: "oai"})))(t).GetDetail()
	if len(d.GetMembers()) != 1 || d.GetMembers()[0].GetMember().GetName() != rules.PrimaryMember || d.GetMembers()[0].GetEffective().GetLimits().GetRpm() != 500 {
		t.Fatalf("plain record's primary = %v", d.GetMembers())
	}

	// Adding a member turns the plain record's endpoint into member "main".
	added := mustOK(c.pools.AddPoolMember(ctx, req(&adminv1.AddPoolMemberRequest{
		Tenant: "acme", Record: "oai", Member: "eu", RecordMember: "main", ExpectedRevision: rec.GetRevision(),
		Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://eu.api.openai.com/v1", Region: proto.String("eu"), Weight: 3},
	})))(t)
	if !added.GetRecordConverted() || added.GetRecordCreated() {
		t.Errorf("converted %v created %v", added.GetRecordConverted(), added.GetRecordCreated())
	}
	pool := added.GetRecord()
	if pool.GetKind() != adminv1.RecordKind_RECORD_KIND_POOL || pool.GetSpec().GetBaseUrl() != "" || pool.GetSpec().GetLimits() != nil ||
		!slices.Equal(pool.GetMemberNames(), []string{"eu", "main"}) || pool.GetRevision() <= rec.GetRevision() {
		t.Fatalf("pool = %v", pool)
	}
	d = mustOK(c.providers.GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "acme", Name: "oai"})))(t).GetDetail()
	mainEff := d.GetMembers()[1].GetEffective()
	if d.GetMembers()[1].GetMember().GetName() != "main" || mainEff.GetBaseUrl() != OpenAIBaseURL || mainEff.GetLimits().GetRpm() != 500 ||
		mainEff.GetKeySecret() != "oai" || mainEff.GetRegion() != "us" {
		t.Errorf("main = %v", d.GetMembers()[1])
	}
	// Both members sign with the record's key: R-SEC-4.
	if !slices.ContainsFunc(added.GetWarnings(), func(w *adminv1.Warning) bool { return w.GetCode() == WarnSharedKeySecret }) {
		t.Errorf("warnings = %v", added.GetWarnings())
	}

	// A stale revision is Aborted and changes nothing.
	_, err := c.pools.RemovePoolMember(ctx, req(&adminv1.RemovePoolMemberRequest{Tenant: "acme", Record: "oai", Member: "eu", ExpectedRevision: rec.GetRevision()}))
	wantCode(t, err, connect.CodeAborted)

	// Give main a region of its own, then remove both members: the record is
	// plain again with what main set of its own.
	mustOK(c.pools.UpdatePoolMember(ctx, req(&adminv1.UpdatePoolMemberRequest{
		Tenant: "acme", Record: "oai", Member: "main", Spec: &adminv1.PoolMemberSpec{Region: proto.String("us-east"), Tags: map[string]string{"tier": "gold"}},
		UpdateMask: mask("region", "tags"),
	})))(t)
	removed := mustOK(c.pools.RemovePoolMember(ctx, req(&adminv1.RemovePoolMemberRequest{Tenant: "acme", Record: "oai", Member: "eu"})))(t)
	if removed.GetRecordPlain() {
		t.Fatalf("removing one of two members made the record plain")
	}
	removed = mustOK(c.pools.RemovePoolMember(ctx, req(&adminv1.RemovePoolMemberRequest{Tenant: "acme", Record: "oai", Member: "main"})))(t)
	plain := removed.GetRecord()
	if !removed.GetRecordPlain() || plain.GetKind() != adminv1.RecordKind_RECORD_KIND_PLAIN || plain.GetSpec().GetBaseUrl() != OpenAIBaseURL ||
		plain.GetSpec().GetLimits().GetRpm() != 500 || plain.GetSpec().GetRegion() != "us-east" || plain.GetSpec().GetTags()["tier"] != "gold" ||
		len(plain.GetMemberNames()) != 0 {
		t.Errorf("plain again = %v", plain)
	}
	if n := h.counts().Members; n != 0 {
		t.Errorf("%d members left", n)
	}
}

func TestRemoveLastMemberWithModelMapOrOff(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	seed(t, h, "alice")
	c := h.as("alice")
	mustOK(c.pools.RemovePoolMember(ctx, req(&adminv1.RemovePoolMemberRequest{Tenant: "acme", Record: "bedrock-eu", Member: "ireland"})))(t)
	before := h.counts()
	_, err := c.pools.RemovePoolMember(ctx, req(&adminv1.RemovePoolMemberRequest{Tenant: "acme", Record: "bedrock-eu", Member: "stockholm"}))
	wantCode(t, err, connect.CodeFailedPrecondition)
	mustOK(c.pools.UpdatePoolMember(ctx, req(&adminv1.UpdatePoolMemberRequest{
		Tenant: "acme", Record: "bedrock-eu", Member: "stockholm", Spec: &adminv1.PoolMemberSpec{Off: true}, UpdateMask: mask("model_map", "off"),
	})))(t)
	_, err = c.pools.RemovePoolMember(ctx, req(&adminv1.RemovePoolMemberRequest{Tenant: "acme", Record: "bedrock-eu", Member: "stockholm"}))
	wantCode(t, err, connect.CodeFailedPrecondition)
	if after := h.counts(); after.Members != before.Members {
		t.Errorf("members %d -> %d", before.Members, after.Members)
	}
	// On again, it can go: the record becomes plain with the member's SigV4 auth.
	mustOK(c.pools.UpdatePoolMember(ctx, req(&adminv1.UpdatePoolMemberRequest{
		Tenant: "acme", Record: "bedrock-eu", Member: "stockholm", Spec: &adminv1.PoolMemberSpec{}, UpdateMask: mask("off"),
	})))(t)
	out := mustOK(c.pools.RemovePoolMember(ctx, req(&adminv1.RemovePoolMemberRequest{Tenant: "acme", Record: "bedrock-eu", Member: "stockholm"})))(t)
	a := out.GetRecord().GetSpec().GetAuth()
	if !out.GetRecordPlain() || a.GetAccessKeySecret() != "aws" || a.GetAwsRegion() != "eu-north-1" || out.GetRecord().GetSpec().GetRegion() != "eu-north-1" {
		t.Errorf("plain = %v", out.GetRecord())
	}
	if p := out.GetRecord().GetSpec().GetPrices(); len(p) != 1 || p[0].GetCacheWriteMicros() != 3_750_000 {
		t.Errorf("prices = %v", p)
	}
}

func TestPoolSetOffOnAndAudit(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	seed(t, h, "alice")
	c := h.as("paul")
	out := mustOK(c.pools.UpdatePoolMember(ctx, req(&adminv1.UpdatePoolMemberRequest{
		Tenant: "acme", Record: "azure-eu", Member: "france", Spec: &adminv1.PoolMemberSpec{Off: true}, UpdateMask: mask("off"),
	})))(t)
	if !out.GetMember().GetEffective().GetOff() || out.GetMember().GetEffective().GetWeight() != 2 {
		t.Errorf("member = %v", out.GetMember())
	}
	rows, err := h.st.Q.ListAudit(ctx, sqlc.ListAuditParams{TenantID: h.tenants["acme"].ID, BeforeID: 1 << 62, MaxRows: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Action != "off" || rows[0].ObjectName != "france" || rows[0].ObjectKind != "providers/azure-eu/members" {
		t.Errorf("audit = %+v", rows)
	}
	_, err = c.pools.UpdatePoolMember(ctx, req(&adminv1.UpdatePoolMemberRequest{Tenant: "acme", Record: "azure-eu", Member: "nope", UpdateMask: mask("off")}))
	wantCode(t, err, connect.CodeNotFound)
}

func TestResetPoolMember(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	seed(t, h, "alice")
	c := h.as("paul")
	before := h.counts()
	out := mustOK(c.pools.ResetPoolMember(ctx, req(&adminv1.ResetPoolMemberRequest{Tenant: "acme", Record: "azure-eu", Member: "sweden"})))(t)
	if out.GetCommandId() == "" || !out.GetIssuedAt().AsTime().Equal(h.now) {
		t.Errorf("response = %v", out)
	}
	if len(h.resets.cmds) != 1 {
		t.Fatalf("commands = %v", h.resets.cmds)
	}
	rm := h.resets.cmds[0].GetResetMember()
	if h.resets.cmds[0].GetId() != out.GetCommandId() || rm.GetMemberName() != "sweden" || rm.GetTenantId() == "" || rm.GetRecordId() == "" {
		t.Errorf("command = %v", h.resets.cmds[0])
	}
	after := h.counts()
	if after.Audit != before.Audit+1 || after.Outbox != before.Outbox {
		t.Errorf("a reset writes one audit row and no outbox row: %+v -> %+v", before, after)
	}
	_, err := c.pools.ResetPoolMember(ctx, req(&adminv1.ResetPoolMemberRequest{Tenant: "acme", Record: "azure-eu", Member: "nope"}))
	wantCode(t, err, connect.CodeNotFound)
	_, err = h.as("cora").pools.ResetPoolMember(ctx, req(&adminv1.ResetPoolMemberRequest{Tenant: "acme", Record: "azure-eu", Member: "sweden"}))
	wantCode(t, err, connect.CodePermissionDenied)

	h.resets.fail = true
	_, err = c.pools.ResetPoolMember(ctx, req(&adminv1.ResetPoolMemberRequest{Tenant: "acme", Record: "azure-eu", Member: "sweden"}))
	wantCode(t, err, connect.CodeUnavailable)
	if got := h.counts(); got.Audit != after.Audit {
		t.Errorf("a reset that was not sent left an audit row")
	}
}

func TestUpdateProvider(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	seed(t, h, "alice")
	c := h.as("alice")
	// The record price makes gpt-x priced on every member.
	out := mustOK(c.providers.UpdateProvider(ctx, req(&adminv1.UpdateProviderRequest{
		Tenant: "acme", Name: "azure-eu",
		Spec:       &adminv1.ProviderSpec{Prices: []*configv1.Price{price("gpt-x", 2_500_000, 10_000_000, 250_000)}, Tags: map[string]string{"team": "ml"}},
		UpdateMask: mask("prices", "tags"),
	})))(t)
	if slices.ContainsFunc(out.GetWarnings(), func(w *adminv1.Warning) bool { return w.GetCode() == WarnModelUnpriced }) {
		t.Errorf("still unpriced: %v", out.GetWarnings())
	}
	if out.GetRecord().GetSpec().GetApiVersion() != AzureAPIVersion {
		t.Errorf("fields outside the mask changed: %v", out.GetRecord().GetSpec())
	}
	// Clearing the auth's header through the mask leaves API-key auth with
	// the wire format's usual header.
	out = mustOK(c.providers.UpdateProvider(ctx, req(&adminv1.UpdateProviderRequest{
		Tenant: "acme", Name: "azure-eu", Spec: &adminv1.ProviderSpec{}, UpdateMask: mask("auth.header"),
	})))(t)
	if h := out.GetRecord().GetSpec().GetAuth().GetHeader(); h != "authorization" {
		t.Errorf("header = %q", h)
	}
	// Re-applying the preset sets it back.
	out = mustOK(c.providers.UpdateProvider(ctx, req(&adminv1.UpdateProviderRequest{
		Tenant: "acme", Name: "azure-eu", Preset: adminv1.Preset_PRESET_AZURE_OPENAI,
	})))(t)
	if h := out.GetRecord().GetSpec().GetAuth().GetHeader(); h != "api-key" {
		t.Errorf("header after preset = %q", h)
	}
	// A plain base_url cannot be given to a pool.
	_, err := c.providers.UpdateProvider(ctx, req(&adminv1.UpdateProviderRequest{
		Tenant: "acme", Name: "azure-eu", Spec: &adminv1.ProviderSpec{BaseUrl: "https://x.example.com"}, UpdateMask: mask("base_url"),
	}))
	wantCode(t, err, connect.CodeInvalidArgument)
	// internal is for cluster admins.
	_, err = c.providers.UpdateProvider(ctx, req(&adminv1.UpdateProviderRequest{
		Tenant: "acme", Name: "azure-eu", Spec: &adminv1.ProviderSpec{Internal: true}, UpdateMask: mask("internal"),
	}))
	wantCode(t, err, connect.CodePermissionDenied)
	_, err = c.providers.UpdateProvider(ctx, req(&adminv1.UpdateProviderRequest{Tenant: "acme", Name: "nope", UpdateMask: mask("region")}))
	wantCode(t, err, connect.CodeNotFound)
}

func TestUpdatePrices(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	seed(t, h, "alice")
	c := h.as("paul")
	out := mustOK(c.prices.UpdatePrices(ctx, req(&adminv1.UpdatePricesRequest{
		Tenant: "acme", Record: "azure-eu", Member: "sweden", Set: []*configv1.Price{price("gpt-x", 2_000_000, 8_000_000, 200_000)},
	})))(t)
	for _, e := range out.GetPrices() {
		if !e.GetRecordPriced() || !e.GetPrice().GetWhole() {
			t.Errorf("entry = %v", e)
		}
	}
	before := h.counts()
	// Removing france's price leaves the record unpriced for gpt-x, which is
	// allowed; giving sweden a price that is not whole is not (R-COST-4).
	_, err := c.prices.UpdatePrices(ctx, req(&adminv1.UpdatePricesRequest{
		Tenant: "acme", Record: "azure-eu", Member: "sweden",
		Set:          []*configv1.Price{price("gpt-x", 2_000_000, -1), price("gpt-q", 1, 1, 1)},
		RemoveModels: []string{"gpt-x"},
	}))
	wantCode(t, err, connect.CodeInvalidArgument)
	want := []fc{
		{"set[1].model", CodeNotAModel},
		{"remove_models[0]", CodeDuplicate},
		{"set[0].output_micros", CodeNegative},
		{"set[1].model", CodeNotAModel},
		{"set[0]", CodePriceNotWhole},
	}
	if diff := cmp.Diff(want, problemsOf(err)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if after := h.counts(); after != before {
		t.Errorf("refused change wrote: %+v -> %+v", before, after)
	}
	out = mustOK(c.prices.UpdatePrices(ctx, req(&adminv1.UpdatePricesRequest{Tenant: "acme", Record: "azure-eu", Member: "france", RemoveModels: []string{"gpt-x"}})))(t)
	for _, e := range out.GetPrices() {
		if e.GetRecordPriced() {
			t.Errorf("gpt-x still priced: %v", e)
		}
	}
	ps := mustOK(h.as("cora").prices.ListPrices(ctx, req(&adminv1.ListPricesRequest{Tenant: "acme", Model: "claude-x"})))(t)
	if len(ps.GetPrices()) != 2 || ps.GetPrices()[0].GetRecord() != "bedrock-eu" {
		t.Errorf("claude-x prices = %v", ps.GetPrices())
	}
}

func TestSeventeenthMemberIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	h.secret("acme", "k", "h.example.com")
	c := h.as("alice")
	var members []*adminv1.NewPoolMember
	for i := range 16 {
		members = append(members, &adminv1.NewPoolMember{Name: fmt.Sprintf("m%02d", i), Spec: &adminv1.PoolMemberSpec{BaseUrl: fmt.Sprintf("https://m%02d.example.com/v1", i)}})
	}
	mustOK(c.providers.CreateProvider(ctx, req(&adminv1.CreateProviderRequest{
		Tenant: "acme", Name: "big", Preset: adminv1.Preset_PRESET_OPENAI,
		Spec: &adminv1.ProviderSpec{KeySecret: "k", Models: models("m")}, Members: members,
	})))(t)
	before := h.counts()
	_, err := c.pools.AddPoolMember(ctx, req(&adminv1.AddPoolMemberRequest{
		Tenant: "acme", Record: "big", Member: "m16", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://m16.example.com/v1"},
	}))
	wantCode(t, err, connect.CodeInvalidArgument)
	if diff := cmp.Diff([]fc{{"member", CodeTooMany}}, problemsOf(err)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if after := h.counts(); after != before || after.Members != 16 {
		t.Errorf("refused change wrote: %+v -> %+v", before, after)
	}
	// Seventeen at creation are refused too.
	members = append(members, &adminv1.NewPoolMember{Name: "m16", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://m16.example.com/v1"}})
	_, err = c.providers.CreateProvider(ctx, req(&adminv1.CreateProviderRequest{
		Tenant: "acme", Name: "bigger", Preset: adminv1.Preset_PRESET_OPENAI,
		Spec: &adminv1.ProviderSpec{KeySecret: "k", Models: models("m")}, Members: members,
	}))
	wantCode(t, err, connect.CodeInvalidArgument)
	if diff := cmp.Diff([]fc{{"members", CodeTooMany}}, problemsOf(err)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// TestValidationOverTheAPI sends requests that break rules through each
// changing RPC: every problem comes back in the ValidationError, and
// nothing is written.
func TestValidationOverTheAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	seed(t, h, "alice")
	c := h.as("alice")
	tests := []struct {
		name string
		call func() error
		want []fc
	}{
		{
			name: "CreateProvider: names, R-SEC-2, R-SEC-3, R-COST-4, weights, regions, durations, secrets, all at once",
			call: func() error {
				_, err := c.providers.CreateProvider(ctx, req(&adminv1.CreateProviderRequest{
					Tenant: "acme", Name: "Bad_Name!",
					Spec: &adminv1.ProviderSpec{
						WireFormat: configv1.WireFormat_WIRE_FORMAT_ANTHROPIC,
						Auth:       &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_OAUTH2, TokenUrl: "http://idp.example.com/t"},
						Models:     models("claude-x"),
						Region:     "eu west",
						Recovery:   &configv1.Recovery{MaxWait: durationpbNeg()},
					},
					Members: []*adminv1.NewPoolMember{
						{Name: "a", Spec: &adminv1.PoolMemberSpec{BaseUrl: "http://a.example.com", Weight: 20000,
							Prices: []*configv1.Price{price("claude-x", 1, 2, 3)}}},
						{Name: "a", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://10.1.2.3", KeySecret: proto.String("missing"), Order: 0,
							Models: []string{"nope"}}},
						{Name: "c", Preset: adminv1.Preset_PRESET_OPENAI, Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://c.example.com"}},
					},
				}))
				return err
			},
			want: []fc{
				{"name", CodeInvalidName},
				{"spec.region", CodeInvalidValue},
				{"spec.recovery.max_wait", CodeNegative},
				{"members[0].spec.base_url", CodeNotHTTPS},
				{"members[0].spec.weight", CodeOutOfRange},
				{"members[0].spec.prices[0]", CodePriceNotWhole},
				{"members[1].name", CodeDuplicate},
				{"members[1].spec.base_url", CodePrivateAddress},
				{"members[1].spec.key_secret", CodeUnknownSecret},
				{"members[1].spec.models[0]", CodeNotAModel},
				{"members[2].spec.key_secret", CodeRequired},
				{"spec.auth.client_id", CodeRequired},
				{"spec.auth.client_secret_secret", CodeRequired},
				{"spec.auth.token_url", CodeNotHTTPS},
			},
		},
		{
			name: "CreateProvider: a plain record without models or base_url",
			call: func() error {
				_, err := c.providers.CreateProvider(ctx, req(&adminv1.CreateProviderRequest{
					Tenant: "acme", Name: "azure-eu", Preset: adminv1.Preset_PRESET_AZURE_OPENAI,
					Spec: &adminv1.ProviderSpec{KeySecret: "azure-se"},
				}))
				return err
			},
			want: []fc{{"spec.models", CodeRequired}, {"spec.base_url", CodeRequired}},
		},
		{
			name: "AddPoolMember: R-SEC-3 SigV4 without region, a record_spec for an existing record",
			call: func() error {
				_, err := c.pools.AddPoolMember(ctx, req(&adminv1.AddPoolMemberRequest{
					Tenant: "acme", Record: "bedrock-eu", Member: "frankfurt",
					RecordSpec: &adminv1.ProviderSpec{Region: "x"},
					Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://bedrock-runtime.eu-central-1.amazonaws.com",
						Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_SIGV4, AccessKeySecret: "aws"}},
				}))
				return err
			},
			want: []fc{{"record_spec", CodeNotAllowed}, {"spec.auth.aws_region", CodeRequired}, {"spec.auth.aws_service", CodeRequired}},
		},
		{
			name: "AddPoolMember: creating a record with a base_url and a bad member",
			call: func() error {
				_, err := c.pools.AddPoolMember(ctx, req(&adminv1.AddPoolMemberRequest{
					Tenant: "acme", Record: "new-pool", Member: "First", Preset: adminv1.Preset_PRESET_ANTHROPIC,
					RecordSpec: &adminv1.ProviderSpec{BaseUrl: "https://api.anthropic.com", Models: models("claude-x")},
					Spec:       &adminv1.PoolMemberSpec{BaseUrl: "https://api.anthropic.com", Prices: []*configv1.Price{price("claude-x", 1, 2, 3)}},
				}))
				return err
			},
			want: []fc{
				{"record_spec.base_url", CodeNotAllowed},
				{"member", CodeInvalidName},
				{"spec.key_secret", CodeRequired},
				{"spec.prices[0]", CodePriceNotWhole},
			},
		},
		{
			name: "UpdatePoolMember: unknown mask path, member models and model map outside the record",
			call: func() error {
				_, err := c.pools.UpdatePoolMember(ctx, req(&adminv1.UpdatePoolMemberRequest{
					Tenant: "acme", Record: "azure-eu", Member: "sweden",
					Spec:       &adminv1.PoolMemberSpec{Models: []string{"gpt-y"}, ModelMap: map[string]string{"gpt-z": "d"}, Weight: 10001},
					UpdateMask: mask("models", "model_map", "weight", "colour"),
				}))
				return err
			},
			want: []fc{
				{"update_mask.paths[3]", CodeUnknownPath},
				{"spec.weight", CodeOutOfRange},
				{"spec.models[0]", CodeNotAModel},
				{"spec.model_map[gpt-z]", CodeNotAModel},
			},
		},
		{
			name: "UpdateProvider: an empty mask",
			call: func() error {
				_, err := c.providers.UpdateProvider(ctx, req(&adminv1.UpdateProviderRequest{Tenant: "acme", Name: "azure-eu"}))
				return err
			},
			want: []fc{{"update_mask", CodeRequired}},
		},
		{
			name: "UpdateProvider: changing the models leaves member prices and maps dangling",
			call: func() error {
				_, err := c.providers.UpdateProvider(ctx, req(&adminv1.UpdateProviderRequest{
					Tenant: "acme", Name: "azure-eu", Spec: &adminv1.ProviderSpec{Models: models("gpt-y")}, UpdateMask: mask("models"),
				}))
				return err
			},
			want: []fc{
				{"members[france].spec.prices[0].model", CodeNotAModel},
				{"members[sweden].spec.model_map[gpt-x]", CodeNotAModel},
			},
		},
	}
	for _, tt := range tests {
		before := h.counts()
		err := tt.call()
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Errorf("%s: error = %v, want InvalidArgument", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, problemsOf(err)); diff != "" {
			t.Errorf("%s: problems (-want +got):\n%s", tt.name, diff)
		}
		if after := h.counts(); after != before {
			t.Errorf("%s: a refused change wrote: %+v -> %+v", tt.name, before, after)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("%d problem", len(tt.want))) {
			t.Errorf("%s: message does not count the problems: %v", tt.name, err)
		}
	}
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	seed(t, h, "alice")
	bob := h.as("bob") // tenant admin of beta
	before := h.counts()

	// Naming tenant acme: NotFound, as if it did not exist.
	checks := map[string]error{}
	_, checks["get"] = bob.providers.GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "acme", Name: "azure-eu"}))
	_, checks["list"] = bob.providers.ListProviders(ctx, req(&adminv1.ListProvidersRequest{Tenant: "acme"}))
	_, checks["update"] = bob.providers.UpdateProvider(ctx, req(&adminv1.UpdateProviderRequest{Tenant: "acme", Name: "azure-eu", UpdateMask: mask("region")}))
	_, checks["delete"] = bob.providers.DeleteProvider(ctx, req(&adminv1.DeleteProviderRequest{Tenant: "acme", Name: "azure-eu"}))
	_, checks["add"] = bob.pools.AddPoolMember(ctx, req(&adminv1.AddPoolMemberRequest{Tenant: "acme", Record: "azure-eu", Member: "x", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://x.example.com"}}))
	_, checks["set"] = bob.pools.UpdatePoolMember(ctx, req(&adminv1.UpdatePoolMemberRequest{Tenant: "acme", Record: "azure-eu", Member: "sweden", UpdateMask: mask("off"), Spec: &adminv1.PoolMemberSpec{Off: true}}))
	_, checks["remove"] = bob.pools.RemovePoolMember(ctx, req(&adminv1.RemovePoolMemberRequest{Tenant: "acme", Record: "azure-eu", Member: "sweden"}))
	_, checks["members"] = bob.pools.ListPoolMembers(ctx, req(&adminv1.ListPoolMembersRequest{Tenant: "acme", Record: "azure-eu"}))
	_, checks["reset"] = bob.pools.ResetPoolMember(ctx, req(&adminv1.ResetPoolMemberRequest{Tenant: "acme", Record: "azure-eu", Member: "sweden"}))
	_, checks["prices"] = bob.prices.ListPrices(ctx, req(&adminv1.ListPricesRequest{Tenant: "acme"}))
	_, checks["set prices"] = bob.prices.UpdatePrices(ctx, req(&adminv1.UpdatePricesRequest{Tenant: "acme", Record: "azure-eu", RemoveModels: []string{"gpt-x"}}))
	_, checks["no such tenant"] = bob.providers.GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "gamma", Name: "azure-eu"}))
	// Naming their own tenant and acme's record names: NotFound too.
	_, checks["own tenant get"] = bob.providers.GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "beta", Name: "azure-eu"}))
	_, checks["own tenant add to guessed pool"] = bob.pools.UpdatePoolMember(ctx, req(&adminv1.UpdatePoolMemberRequest{Tenant: "beta", Record: "azure-eu", Member: "sweden", UpdateMask: mask("off")}))
	_, checks["own tenant delete"] = bob.providers.DeleteProvider(ctx, req(&adminv1.DeleteProviderRequest{Tenant: "beta", Name: "bedrock-eu"}))
	_, checks["own tenant prices"] = bob.prices.ListPrices(ctx, req(&adminv1.ListPricesRequest{Tenant: "beta", Record: "azure-eu"}))
	_, checks["managed scope"] = bob.providers.ListProviders(ctx, req(&adminv1.ListProvidersRequest{}))
	for name, err := range checks {
		want := connect.CodeNotFound
		if name == "managed scope" {
			want = connect.CodePermissionDenied
		}
		if connect.CodeOf(err) != want {
			t.Errorf("%s: error = %v, want %v", name, err, want)
		}
	}
	if after := h.counts(); after != before {
		t.Errorf("another tenant's admin wrote: %+v -> %+v", before, after)
	}
	// beta's own list is empty; acme's secrets are not beta's.
	list := mustOK(bob.providers.ListProviders(ctx, req(&adminv1.ListProvidersRequest{Tenant: "beta", IncludeShared: true})))(t)
	if len(list.GetRecords()) != 0 {
		t.Errorf("beta sees %v", list.GetRecords())
	}
	_, err := bob.pools.AddPoolMember(ctx, req(&adminv1.AddPoolMemberRequest{
		Tenant: "beta", Record: "steal", Member: "a", Preset: adminv1.Preset_PRESET_AZURE_OPENAI,
		RecordSpec: &adminv1.ProviderSpec{Models: models("gpt-x")},
		Spec:       &adminv1.PoolMemberSpec{BaseUrl: "https://acme-sweden.openai.azure.com/openai", KeySecret: proto.String("azure-se")},
	}))
	wantCode(t, err, connect.CodeInvalidArgument)
	if diff := cmp.Diff([]fc{{"spec.key_secret", CodeUnknownSecret}}, problemsOf(err)); diff != "" {
		t.Errorf("using another tenant's secret (-want +got):\n%s", diff)
	}
	// Roles: a cost owner reads but does not change.
	cora := h.as("cora")
	mustOK(cora.providers.GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "acme", Name: "azure-eu"})))(t)
	_, err = cora.providers.DeleteProvider(ctx, req(&adminv1.DeleteProviderRequest{Tenant: "acme", Name: "azure-eu"}))
	wantCode(t, err, connect.CodePermissionDenied)
	// No token at all.
	_, err = adminv1connectNoAuth(h).GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "acme", Name: "azure-eu"}))
	wantCode(t, err, connect.CodeUnauthenticated)
}

func TestManagedRecordsAndShares(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	h.secret("", "oai-managed", "api.openai.com")
	root, alice, bob := h.as("root"), h.as("alice"), h.as("bob")

	// Tenant admins cannot create managed records.
	spec := &adminv1.ProviderSpec{KeySecret: "oai-managed", Models: models("gpt-x"), Prices: []*configv1.Price{price("gpt-x", 1, 2, 3)}}
	_, err := alice.providers.CreateProvider(ctx, req(&adminv1.CreateProviderRequest{Name: "house", Preset: adminv1.Preset_PRESET_OPENAI, Spec: spec}))
	wantCode(t, err, connect.CodePermissionDenied)
	created := mustOK(root.providers.CreateProvider(ctx, req(&adminv1.CreateProviderRequest{Name: "house", Preset: adminv1.Preset_PRESET_OPENAI, Spec: spec})))(t)
	if !created.GetRecord().GetManaged() || created.GetRecord().GetTenant() != "" {
		t.Fatalf("record = %v", created.GetRecord())
	}
	// acme has a record of its own named like it: sharing is refused.
	h.secret("acme", "k", "api.openai.com")
	mustOK(alice.providers.CreateProvider(ctx, req(&adminv1.CreateProviderRequest{Tenant: "acme", Name: "taken", Preset: adminv1.Preset_PRESET_OPENAI,
		Spec: &adminv1.ProviderSpec{KeySecret: "k", Models: models("gpt-x")}})))(t)
	mustOK(root.providers.CreateProvider(ctx, req(&adminv1.CreateProviderRequest{Name: "taken", Preset: adminv1.Preset_PRESET_OPENAI, Spec: spec})))(t)
	_, err = root.providers.ShareProvider(ctx, req(&adminv1.ShareProviderRequest{Name: "taken", Tenant: "acme"}))
	wantCode(t, err, connect.CodeFailedPrecondition)

	// Only cluster admins share.
	_, err = alice.providers.ShareProvider(ctx, req(&adminv1.ShareProviderRequest{Name: "house", Tenant: "acme"}))
	wantCode(t, err, connect.CodePermissionDenied)
	before := h.counts()
	shared := mustOK(root.providers.ShareProvider(ctx, req(&adminv1.ShareProviderRequest{Name: "house", Tenant: "acme"})))(t)
	if diff := cmp.Diff([]string{"acme"}, shared.GetRecord().GetSharedWith()); diff != "" {
		t.Errorf("shared_with (-want +got):\n%s", diff)
	}
	after := h.counts()
	if after.Shares != before.Shares+1 || after.Audit != before.Audit+1 || after.Outbox != before.Outbox+2 {
		t.Errorf("share wrote %+v -> %+v", before, after)
	}
	// Sharing twice changes nothing.
	mustOK(root.providers.ShareProvider(ctx, req(&adminv1.ShareProviderRequest{Name: "house", Tenant: "acme"})))(t)
	if again := h.counts(); again != after {
		t.Errorf("sharing twice wrote %+v -> %+v", after, again)
	}

	// acme reads it, redacted; beta does not see it.
	list := mustOK(alice.providers.ListProviders(ctx, req(&adminv1.ListProvidersRequest{Tenant: "acme", IncludeShared: true})))(t)
	if len(list.GetRecords()) != 2 || list.GetRecords()[1].GetName() != "house" || !list.GetRecords()[1].GetManaged() ||
		list.GetRecords()[1].GetSpec().GetBaseUrl() != "" || list.GetRecords()[1].GetSharedWith() != nil {
		t.Errorf("acme's list = %v", list.GetRecords())
	}
	d := mustOK(alice.providers.GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "acme", Name: "house"})))(t).GetDetail()
	if d.GetRecord().GetSpec().GetKeySecret() != "" || d.GetRecord().GetSpec().GetAuth() != nil || d.GetMembers()[0].GetEffective().GetBaseUrl() != "" ||
		d.GetMembers()[0].GetEffective().GetKeySecret() != "" || len(d.GetMembers()[0].GetEffective().GetPrices()) != 1 {
		t.Errorf("acme's view of a managed record = %v", d)
	}
	_, err = bob.providers.GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "beta", Name: "house"}))
	wantCode(t, err, connect.CodeNotFound)
	// A tenant cannot change a shared record, nor take its name.
	_, err = alice.providers.UpdateProvider(ctx, req(&adminv1.UpdateProviderRequest{Tenant: "acme", Name: "house", UpdateMask: mask("region")}))
	wantCode(t, err, connect.CodeNotFound)
	_, err = alice.providers.CreateProvider(ctx, req(&adminv1.CreateProviderRequest{Tenant: "acme", Name: "house", Preset: adminv1.Preset_PRESET_OPENAI,
		Spec: &adminv1.ProviderSpec{KeySecret: "k", Models: models("gpt-x")}}))
	wantCode(t, err, connect.CodeAlreadyExists)
	// Managed records may use plain http to private addresses (R-SEC-2).
	mustOK(root.pools.AddPoolMember(ctx, req(&adminv1.AddPoolMemberRequest{
		Record: "house", Member: "onprem", Spec: &adminv1.PoolMemberSpec{BaseUrl: "http://10.0.0.7:8000/v1"},
	})))(t)

	// Unshare; unsharing again changes nothing.
	un := mustOK(root.providers.UnshareProvider(ctx, req(&adminv1.UnshareProviderRequest{Name: "house", Tenant: "acme"})))(t)
	if len(un.GetRecord().GetSharedWith()) != 0 {
		t.Errorf("still shared: %v", un.GetRecord())
	}
	mustOK(root.providers.UnshareProvider(ctx, req(&adminv1.UnshareProviderRequest{Name: "house", Tenant: "acme"})))(t)
	_, err = alice.providers.GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "acme", Name: "house"}))
	wantCode(t, err, connect.CodeNotFound)

	// Deleting a shared managed record unshares it.
	mustOK(root.providers.ShareProvider(ctx, req(&adminv1.ShareProviderRequest{Name: "house", Tenant: "beta"})))(t)
	mustOK(root.providers.DeleteProvider(ctx, req(&adminv1.DeleteProviderRequest{Name: "house"})))(t)
	if n := h.counts().Shares; n != 0 {
		t.Errorf("%d shares left", n)
	}
}

func TestCreateProviderConflicts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	seed(t, h, "alice")
	c := h.as("alice")
	_, err := c.providers.CreateProvider(ctx, req(&adminv1.CreateProviderRequest{
		Tenant: "acme", Name: "azure-eu", Preset: adminv1.Preset_PRESET_AZURE_OPENAI,
		Spec: &adminv1.ProviderSpec{BaseUrl: "https://x.openai.azure.com/openai", KeySecret: "azure-se", Models: models("gpt-x")},
	}))
	wantCode(t, err, connect.CodeAlreadyExists)
	_, err = c.pools.AddPoolMember(ctx, req(&adminv1.AddPoolMemberRequest{
		Tenant: "acme", Record: "azure-eu", Member: "sweden", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://y.example.com"},
	}))
	wantCode(t, err, connect.CodeAlreadyExists)
	// Delete with a stale revision is Aborted; with none it deletes.
	_, err = c.providers.DeleteProvider(ctx, req(&adminv1.DeleteProviderRequest{Tenant: "acme", Name: "azure-eu", ExpectedRevision: 1}))
	wantCode(t, err, connect.CodeAborted)
	mustOK(c.providers.DeleteProvider(ctx, req(&adminv1.DeleteProviderRequest{Tenant: "acme", Name: "azure-eu"})))(t)
	_, err = c.providers.GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "acme", Name: "azure-eu"}))
	wantCode(t, err, connect.CodeNotFound)
}
