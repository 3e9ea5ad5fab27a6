package cli

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/words"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

// diffProto fails the test when got differs from want.
func diffProto(t *testing.T, what string, want, got proto.Message) {
	t.Helper()
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

func TestTenantCommands(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	e := newEnv(t, url, "tok")
	f.reply("CreateTenant", func(req proto.Message) (proto.Message, error) {
		return &adminv1.CreateTenantResponse{Tenant: &adminv1.Tenant{Id: "t1", Name: req.(*adminv1.CreateTenantRequest).GetName()}}, nil
	})
	r := e.must(t, "tenant", "create", "acme")
	if r.stdout != "created tenant acme (id t1)\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	if got := f.requests()[0].auth; got != "Bearer tok" {
		t.Errorf("Authorization %q", got)
	}
	r = e.must(t, "tenant", "create", "acme", "--output", "json")
	var out struct {
		Tenant struct {
			ID       string `json:"id"`
			Name     string `json:"name"`
			Disabled *bool  `json:"disabled"`
		} `json:"tenant"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("json: %v\n%s", err, r.stdout)
	}
	if out.Tenant.ID != "t1" || out.Tenant.Name != "acme" || out.Tenant.Disabled == nil {
		t.Errorf("json %s", r.stdout)
	}

	// Lists fetch every page.
	f.reply("ListTenants", func(req proto.Message) (proto.Message, error) {
		if req.(*adminv1.ListTenantsRequest).GetPageToken() == "" {
			return &adminv1.ListTenantsResponse{Tenants: []*adminv1.Tenant{{Name: "acme"}}, NextPageToken: "p2"}, nil
		}
		return &adminv1.ListTenantsResponse{Tenants: []*adminv1.Tenant{{Name: "beta", Disabled: true}}}, nil
	})
	r = e.must(t, "tenant", "list")
	if !strings.Contains(r.stdout, "acme") || !strings.Contains(r.stdout, "beta") || !strings.HasPrefix(r.stdout, "NAME") {
		t.Errorf("tenant list:\n%s", r.stdout)
	}
	r = e.must(t, "--output", "json", "tenant", "list")
	var list adminv1.ListTenantsResponse
	if err := jsonUnmarshal(r.stdout, &list); err != nil || len(list.GetTenants()) != 2 {
		t.Errorf("tenant list json: %v\n%s", err, r.stdout)
	}

	e.must(t, "tenant", "rules", "set", "--tenant", "acme", "--allow-region", "eu-*", "--allow-region", "us-east",
		"--no-retained-data", "--require-tag", "team=ml", "--require-tag", "tier=gold")
	diffProto(t, "SetDataRules", &adminv1.SetDataRulesRequest{Tenant: "acme", Rules: &configv1.DataRules{
		AllowedRegions: []string{"eu-*", "us-east"}, NoRetainedData: true, RequiredTags: map[string]string{"team": "ml", "tier": "gold"}}},
		f.last(t, "SetDataRules"))
}

// squash collapses runs of spaces, so tests need not know column widths.
func squash(s string) string {
	for strings.Contains(s, "  ") {
		s = strings.ReplaceAll(s, "  ", " ")
	}
	return s
}

// jsonUnmarshal reads JSON printed by the CLI (enums as words) into m.
func jsonUnmarshal(s string, m proto.Message) error {
	return words.Unmarshal([]byte(s), m)
}

// noEnumNames fails the test when out holds a protobuf enum name: the CLI
// prints words (ROUTING R-SEE-2).
func noEnumNames(t *testing.T, what, out string) {
	t.Helper()
	for _, prefix := range []string{"ATTEMPT_OUTCOME_", "CALL_OUTCOME_", "FAILURE_KIND_", "WIRE_FORMAT_", "AUTH_KIND_", "PRESET_",
		"RECORD_KIND_", "MODEL_KIND_", "BUDGET_PERIOD_", "ROLE_", "SEVERITY_", "DIMENSION_", "HEADROOM_SOURCE_", "UNSPECIFIED"} {
		if strings.Contains(out, prefix) {
			t.Errorf("%s holds the protobuf enum name %s…:\n%s", what, prefix, out)
		}
	}
}

func TestKeyCreatePrintsTheKeyAlone(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	e := newEnv(t, url, "tok")
	f.reply("CreateApiKey", func(req proto.Message) (proto.Message, error) {
		return &adminv1.CreateApiKeyResponse{ApiKey: &adminv1.ApiKey{Id: "k1", Name: "ci", KeyPrefix: "weir_abc"}, Key: "weir_abcdef0123456789"}, nil
	})
	r := e.must(t, "key", "create", "ci", "--tenant", "acme", "--allow-model", "gpt-x", "--allow-model", "azure-eu/gpt-y",
		"--allow-provider", "azure-eu", "--region", "eu-*")
	if r.stdout != "weir_abcdef0123456789\n" {
		t.Errorf("stdout %q, want the key alone on one line", r.stdout)
	}
	diffProto(t, "CreateApiKey", &adminv1.CreateApiKeyRequest{Tenant: "acme", Name: "ci", AllowedModels: []string{"gpt-x", "azure-eu/gpt-y"},
		AllowedRecords: []string{"azure-eu"}, Regions: []string{"eu-*"}}, f.last(t, "CreateApiKey"))

	// R-CAP-2: the key's caller limits.
	e.must(t, "key", "create", "ci", "--tenant", "acme", "--rpm", "60", "--max-in-flight", "3")
	diffProto(t, "CreateApiKey with limits", &adminv1.CreateApiKeyRequest{Tenant: "acme", Name: "ci",
		Limits: &configv1.CallerLimits{Rpm: 60, MaxInFlight: 3}}, f.last(t, "CreateApiKey"))

	r = e.must(t, "key", "create", "ci", "--tenant", "acme", "--output", "json")
	var got map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"id": "k1", "name": "ci", "key": "weir_abcdef0123456789"}, got); diff != "" {
		t.Errorf("key create json (-want +got):\n%s", diff)
	}
	if strings.Index(r.stdout, `"id"`) > strings.Index(r.stdout, `"name"`) || strings.Index(r.stdout, `"name"`) > strings.Index(r.stdout, `"key"`) {
		t.Errorf("json fields not in the order id, name, key: %s", r.stdout)
	}

	e.must(t, "key", "revoke", "ci", "--tenant", "acme")
	diffProto(t, "RevokeApiKey", &adminv1.RevokeApiKeyRequest{Tenant: "acme", Name: "ci"}, f.last(t, "RevokeApiKey"))
}

func TestProviderCreateAndSet(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	e := newEnv(t, url, "tok")
	f.reply("CreateProvider", func(req proto.Message) (proto.Message, error) {
		return &adminv1.CreateProviderResponse{Record: &adminv1.ProviderRecord{Name: "oai", Kind: adminv1.RecordKind_RECORD_KIND_PLAIN,
			Spec: &adminv1.ProviderSpec{WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI}}}, nil
	})
	r := e.must(t, "provider", "create", "oai", "--tenant", "acme", "--preset", "openai", "--base-url", "https://api.openai.com/v1",
		"--models", "gpt-x,text-embed-3", "--models", "gpt-y", "--key-secret", "oai-key", "--region", "us-east",
		"--retains-data", "--tag", "team=ml", "--tag", "env=prod",
		"--price", "gpt-x=2.75,11,0.275", "--price", "gpt-y=0.15,0.6",
		"--rpm", "500", "--input-tpm", "200000", "--output-tpm", "50000", "--allow-region", "us-*",
		"--max-attempts", "4", "--max-wait", "10s", "--attempt-deadline", "0s",
		"--rate-limit-header", "tokens-remaining=x-rl-tokens", "--default-max-output", "8192", "--priority", "-2", "--internal")
	if r.stdout != "created provider record oai (plain, openai)\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	diffProto(t, "CreateProvider", &adminv1.CreateProviderRequest{
		Tenant: "acme", Name: "oai", Preset: adminv1.Preset_PRESET_OPENAI,
		Spec: &adminv1.ProviderSpec{
			BaseUrl:     "https://api.openai.com/v1",
			Models:      []*configv1.Model{{Name: "gpt-x"}, {Name: "text-embed-3"}, {Name: "gpt-y"}},
			KeySecret:   "oai-key",
			Region:      "us-east",
			RetainsData: true,
			Tags:        map[string]string{"team": "ml", "env": "prod"},
			Prices: []*configv1.Price{
				{Model: "gpt-x", InputMicros: proto.Int64(2_750_000), OutputMicros: proto.Int64(11_000_000), CacheReadMicros: proto.Int64(275_000)},
				{Model: "gpt-y", InputMicros: proto.Int64(150_000), OutputMicros: proto.Int64(600_000)},
			},
			Limits:           &configv1.Limits{Rpm: 500, InputTpm: 200000, OutputTpm: 50000},
			AllowedRegions:   []string{"us-*"},
			Recovery:         &configv1.Recovery{MaxAttempts: 4, MaxWait: durationpb.New(10 * time.Second), AttemptDeadline: durationpb.New(0)},
			RateLimitHeaders: map[string]string{"tokens-remaining": "x-rl-tokens"},
			DefaultMaxOutput: 8192,
			Priority:         -2,
			Internal:         true,
		},
	}, f.last(t, "CreateProvider"))

	// set sends exactly the fields given, as an update mask; an empty value
	// clears.
	f.reply("UpdateProvider", func(req proto.Message) (proto.Message, error) {
		return &adminv1.UpdateProviderResponse{Record: &adminv1.ProviderRecord{Name: "oai", Revision: 7},
			Warnings: []*adminv1.Warning{{Code: "shared_key_secret", Message: "Members a and b use the same key secret.", Record: "oai", Members: []string{"a", "b"}}}}, nil
	})
	r = e.must(t, "provider", "set", "oai", "--region", "eu-west", "--tenant", "acme", "--retains-data=false", "--max-wait=", "--price=", "--rpm", "10")
	if r.stdout != "updated provider record oai (revision 7)\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	if r.stderr != "warning: Members a and b use the same key secret. [shared_key_secret; record oai, members a, b]\n" {
		t.Errorf("stderr %q", r.stderr)
	}
	diffProto(t, "UpdateProvider", &adminv1.UpdateProviderRequest{
		Tenant: "acme", Name: "oai",
		Spec:       &adminv1.ProviderSpec{Region: "eu-west", Limits: &configv1.Limits{Rpm: 10}, Recovery: &configv1.Recovery{}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"region", "retains_data", "prices", "limits.rpm", "recovery.max_wait"}},
	}, f.last(t, "UpdateProvider"))

	e.must(t, "provider", "set", "oai", "--tenant", "acme", "--preset", "azure-openai")
	diffProto(t, "UpdateProvider preset", &adminv1.UpdateProviderRequest{Tenant: "acme", Name: "oai", Preset: adminv1.Preset_PRESET_AZURE_OPENAI,
		Spec: &adminv1.ProviderSpec{}, UpdateMask: &fieldmaskpb.FieldMask{}}, f.last(t, "UpdateProvider"))
}

func TestPoolAdd(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	e := newEnv(t, url, "tok")
	exists := false
	f.reply("GetProvider", func(proto.Message) (proto.Message, error) {
		if !exists {
			return nil, connect.NewError(connect.CodeNotFound, errors.New("no provider record azure-eu"))
		}
		return &adminv1.GetProviderResponse{}, nil
	})
	f.reply("AddPoolMember", func(req proto.Message) (proto.Message, error) {
		r := req.(*adminv1.AddPoolMemberRequest)
		return &adminv1.AddPoolMemberResponse{RecordCreated: !exists, Record: &adminv1.ProviderRecord{Name: r.GetRecord(), MemberNames: []string{r.GetMember()}}}, nil
	})

	// The record does not exist: --models and record-only flags go to the
	// new record, the rest to the member.
	r := e.must(t, "provider", "pool", "add", "azure-eu", "sweden", "--tenant", "acme", "--preset", "azure-openai",
		"--base-url", "https://acme-sweden.openai.azure.com/openai", "--key-secret", "azure-sweden-key", "--region", "eu-north",
		"--models", "gpt-x", "--model", "gpt-x=gpt-x-deploy", "--max-wait", "5s", "--allow-region", "eu-*")
	if r.stdout != "added member sweden to azure-eu (record created as a pool); members: sweden\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	diffProto(t, "AddPoolMember creating", &adminv1.AddPoolMemberRequest{
		Tenant: "acme", Record: "azure-eu", Member: "sweden", Preset: adminv1.Preset_PRESET_AZURE_OPENAI,
		Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://acme-sweden.openai.azure.com/openai", KeySecret: proto.String("azure-sweden-key"),
			Region: proto.String("eu-north"), ModelMap: map[string]string{"gpt-x": "gpt-x-deploy"}},
		RecordSpec: &adminv1.ProviderSpec{Models: []*configv1.Model{{Name: "gpt-x"}}, AllowedRegions: []string{"eu-*"},
			Recovery: &configv1.Recovery{MaxWait: durationpb.New(5 * time.Second)}},
	}, f.last(t, "AddPoolMember"))

	// The record exists: --models is the member's subset, and no lookup is
	// needed without --models or record-only flags.
	exists = true
	e.must(t, "provider", "pool", "add", "azure-eu", "france", "--tenant", "acme", "--base-url", "https://acme-france.openai.azure.com/openai",
		"--key-secret", "azure-france-key", "--region", "eu-west", "--weight", "2", "--order", "3", "--price", "gpt-x=2.75,11,0.275",
		"--models", "gpt-x", "--retains-data=false", "--account", "sub-2", "--rpm", "100", "--tag", "dc=fr")
	diffProto(t, "AddPoolMember existing", &adminv1.AddPoolMemberRequest{
		Tenant: "acme", Record: "azure-eu", Member: "france",
		Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://acme-france.openai.azure.com/openai", KeySecret: proto.String("azure-france-key"),
			Region: proto.String("eu-west"), Weight: 2, Order: 3, RetainsData: proto.Bool(false), Account: proto.String("sub-2"),
			Models: []string{"gpt-x"}, Limits: &configv1.Limits{Rpm: 100}, Tags: map[string]string{"dc": "fr"},
			Prices: []*configv1.Price{{Model: "gpt-x", InputMicros: proto.Int64(2_750_000), OutputMicros: proto.Int64(11_000_000), CacheReadMicros: proto.Int64(275_000)}}},
	}, f.last(t, "AddPoolMember"))

	n := len(f.requests())
	e.must(t, "provider", "pool", "add", "bedrock-eu", "ireland", "--tenant", "acme", "--base-url", "https://bedrock-runtime.eu-west-1.amazonaws.com",
		"--region", "eu-west", "--auth-kind", "sigv4", "--aws-service", "bedrock", "--aws-region", "eu-west-1", "--access-key-secret", "aws-key",
		"--record-member", "main")
	if reqs := f.requests()[n:]; len(reqs) != 1 {
		t.Errorf("pool add without record flags sent %v, want AddPoolMember alone", procedures(reqs))
	}
	diffProto(t, "AddPoolMember sigv4", &adminv1.AddPoolMemberRequest{
		Tenant: "acme", Record: "bedrock-eu", Member: "ireland", RecordMember: "main",
		Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://bedrock-runtime.eu-west-1.amazonaws.com", Region: proto.String("eu-west"),
			Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_SIGV4, AwsService: "bedrock", AwsRegion: "eu-west-1", AccessKeySecret: "aws-key"}},
	}, f.last(t, "AddPoolMember"))

	// Record-only flags on an existing record are bad usage.
	r = e.run(t, nil, "provider", "pool", "add", "azure-eu", "x", "--tenant", "acme", "--base-url", "https://x.example.com", "--priority", "3")
	if r.code != exitBadArgs || !strings.Contains(r.stderr, "--priority change the record, which exists: use weir provider set azure-eu") {
		t.Errorf("exit %d stderr %q", r.code, r.stderr)
	}

	// A refused lookup is a failed request.
	f.reply("GetProvider", func(proto.Message) (proto.Message, error) {
		return nil, connect.NewError(connect.CodePermissionDenied, errors.New("no role on tenant acme"))
	})
	r = e.run(t, nil, "provider", "pool", "add", "azure-eu", "x", "--tenant", "acme", "--base-url", "https://x.example.com", "--models", "m")
	if r.code != exitFailed || r.stderr != "error: look up provider azure-eu: permission denied: no role on tenant acme\n" {
		t.Errorf("exit %d stderr %q", r.code, r.stderr)
	}
}

// R-HEAD-6, R-CAP-1, R-FMT-4: --rpd, --day-zone and --max-in-flight on
// provider create, and a member's own --preset and limits on pool set.
func TestDayLimitsAndMemberPresetFlags(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	e := newEnv(t, url, "tok")
	f.reply("CreateProvider", func(req proto.Message) (proto.Message, error) {
		return &adminv1.CreateProviderResponse{Record: &adminv1.ProviderRecord{Name: "g", Kind: adminv1.RecordKind_RECORD_KIND_PLAIN,
			Spec: &adminv1.ProviderSpec{WireFormat: configv1.WireFormat_WIRE_FORMAT_GEMINI}}}, nil
	})
	r := e.must(t, "provider", "create", "g", "--tenant", "acme", "--preset", "gemini", "--models", "gemini-x", "--key-secret", "gk",
		"--rpd", "1000", "--day-zone", "America/Los_Angeles", "--max-in-flight", "5")
	if r.stdout != "created provider record g (plain, gemini)\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	diffProto(t, "CreateProvider", &adminv1.CreateProviderRequest{
		Tenant: "acme", Name: "g", Preset: adminv1.Preset_PRESET_GEMINI,
		Spec: &adminv1.ProviderSpec{Models: []*configv1.Model{{Name: "gemini-x"}}, KeySecret: "gk",
			Limits: &configv1.Limits{Rpd: 1000, MaxInFlight: 5}, DayZone: "America/Los_Angeles"},
	}, f.last(t, "CreateProvider"))

	f.reply("UpdatePoolMember", func(req proto.Message) (proto.Message, error) {
		return &adminv1.UpdatePoolMemberResponse{Member: &adminv1.MemberDetail{Effective: &adminv1.EffectiveMember{}}}, nil
	})
	e.must(t, "provider", "pool", "set", "claude", "vertex", "--tenant", "acme", "--preset", "vertex", "--rpd", "50", "--max-in-flight", "2")
	diffProto(t, "UpdatePoolMember", &adminv1.UpdatePoolMemberRequest{Tenant: "acme", Record: "claude", Member: "vertex",
		Preset: adminv1.Preset_PRESET_VERTEX, Spec: &adminv1.PoolMemberSpec{Limits: &configv1.Limits{Rpd: 50, MaxInFlight: 2}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"limits.rpd", "limits.max_in_flight"}}}, f.last(t, "UpdatePoolMember"))
}

// R-CAP-1, R-HEAD-6, R-FMT-6: provider show prints each member's format
// and, per edge, calls in flight against the cap and calls today against
// the rpd share; calls show prints the format and whether it was
// translated.
func TestShowFormatsAndDayCounts(t *testing.T) {
	t.Parallel()
	v := &telemetryv1.MemberView{EdgeId: "edge-1", InFlight: 3, MaxInFlight: 5, RequestsToday: 120, RpdShare: 1000, Headroom: 1}
	if got := viewText(&adminv1.EdgeView{View: v}); !strings.Contains(got, "in flight 3/5, today 120/1000") {
		t.Errorf("view %q", got)
	}
	if got := viewText(&adminv1.EdgeView{View: &telemetryv1.MemberView{InFlight: 2}}); !strings.Contains(got, "in flight 2") || strings.Contains(got, "today") || strings.Contains(got, "/") {
		t.Errorf("view without caps %q", got)
	}
	var b strings.Builder
	err := printMember(&b, &adminv1.MemberDetail{Member: &adminv1.PoolMember{Name: "vertex"},
		Effective: &adminv1.EffectiveMember{WireFormat: configv1.WireFormat_WIRE_FORMAT_GEMINI, Limits: &configv1.Limits{Rpd: 1000, MaxInFlight: 5}},
		EdgeViews: []*adminv1.EdgeView{{View: v}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"format gemini\n", "limits rpd 1000, max in flight 5\n", "in flight 3/5, today 120/1000"} {
		if !strings.Contains(squash(b.String()), want) {
			t.Errorf("member lacks %q:\n%s", want, b.String())
		}
	}
	if got := formatText(&telemetryv1.CallRecord{MemberFormat: "gemini", Translated: true}); got != "gemini, translated" {
		t.Errorf("format %q", got)
	}
	if got := formatText(&telemetryv1.CallRecord{MemberFormat: "openai"}); got != "openai, as sent" {
		t.Errorf("format %q", got)
	}
}

func TestPoolSetMask(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	e := newEnv(t, url, "tok")
	f.reply("UpdatePoolMember", func(req proto.Message) (proto.Message, error) {
		return &adminv1.UpdatePoolMemberResponse{Member: &adminv1.MemberDetail{Effective: &adminv1.EffectiveMember{Off: req.(*adminv1.UpdatePoolMemberRequest).GetSpec().GetOff()}}}, nil
	})
	tests := []struct {
		args     []string
		spec     *adminv1.PoolMemberSpec
		paths    []string
		preset   adminv1.Preset
		wantText string
	}{
		{args: []string{"--off"}, spec: &adminv1.PoolMemberSpec{Off: true}, paths: []string{"off"}, wantText: "updated member sweden of azure-eu (off)\n"},
		{args: []string{"--on"}, spec: &adminv1.PoolMemberSpec{}, paths: []string{"off"}, wantText: "updated member sweden of azure-eu (on)\n"},
		{args: []string{"--region=", "--key-secret", "k2", "--weight", "5"},
			spec: &adminv1.PoolMemberSpec{KeySecret: proto.String("k2"), Weight: 5}, paths: []string{"key_secret", "region", "weight"}},
		{args: []string{"--aws-region", "eu-west-1", "--model=", "--tag=", "--input-tpm", "9"},
			spec:  &adminv1.PoolMemberSpec{Auth: &configv1.Auth{AwsRegion: "eu-west-1"}, Limits: &configv1.Limits{InputTpm: 9}},
			paths: []string{"tags", "limits.input_tpm", "model_map", "auth.aws_region"}},
		{args: []string{"--preset", "bedrock"}, spec: &adminv1.PoolMemberSpec{}, preset: adminv1.Preset_PRESET_BEDROCK},
	}
	for _, tt := range tests {
		args := append([]string{"provider", "pool", "set", "azure-eu", "sweden", "--tenant", "acme"}, tt.args...)
		r := e.must(t, args...)
		if tt.wantText != "" && r.stdout != tt.wantText {
			t.Errorf("%v: stdout %q", tt.args, r.stdout)
		}
		diffProto(t, strings.Join(tt.args, " "), &adminv1.UpdatePoolMemberRequest{Tenant: "acme", Record: "azure-eu", Member: "sweden",
			Preset: tt.preset, Spec: tt.spec, UpdateMask: &fieldmaskpb.FieldMask{Paths: tt.paths}}, f.last(t, "UpdatePoolMember"))
	}
}

func TestValidationErrorListsEveryProblem(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	e := newEnv(t, url, "tok")
	f.reply("AddPoolMember", func(proto.Message) (proto.Message, error) {
		ce := connect.NewError(connect.CodeInvalidArgument, errors.New("2 problems: spec.base_url: not https; spec.prices[0]: not whole"))
		d, err := connect.NewErrorDetail(&adminv1.ValidationError{Problems: []*adminv1.Problem{
			{Field: "spec.base_url", Code: "not_https", Message: "base_url must be https."},
			{Field: "spec.prices[1].cache_read_micros", Code: "price_not_whole", Message: "the record has no price for gpt-x, so the member's must be whole."},
			{Code: "conflict", Message: "the record changed."},
		}})
		if err != nil {
			return nil, err
		}
		ce.AddDetail(d)
		return nil, ce
	})
	r := e.run(t, nil, "provider", "pool", "add", "azure-eu", "x", "--tenant", "acme", "--base-url", "http://x.example.com",
		"--price", "gpt-w=1,2,3", "--price", "gpt-x=3,15")
	// Each problem once (the server's message, which lists them too, is not
	// printed), its field named by the flag that set it.
	want := "error: add member x to azure-eu: invalid argument: 3 problems\n" +
		"  --base-url: base_url must be https. [not_https]\n" +
		"  --price gpt-x=3,15: the record has no price for gpt-x, so the member's must be whole. [price_not_whole]\n" +
		"  request: the record changed. [conflict]\n"
	if r.code != exitFailed || r.stderr != want || r.stdout != "" {
		t.Errorf("exit %d\nstderr %q\nwant   %q\nstdout %q", r.code, r.stderr, want, r.stdout)
	}
}

func TestProviderShowMarksInheritedFields(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	e := newEnv(t, url, "tok")
	ended := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	running := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	detail := &adminv1.ProviderDetail{
		Record: &adminv1.ProviderRecord{Name: "azure-eu", Tenant: "acme", Kind: adminv1.RecordKind_RECORD_KIND_POOL, Preset: adminv1.Preset_PRESET_AZURE_OPENAI,
			MemberNames: []string{"sweden", "france"}, Revision: 2,
			Spec: &adminv1.ProviderSpec{WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI, Models: []*configv1.Model{{Name: "gpt-x", Kind: configv1.ModelKind_MODEL_KIND_CHAT}},
				Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "api-key"}, ApiVersion: "2024-10-21", Tags: map[string]string{"team": "ml"}}},
		Members: []*adminv1.MemberDetail{
			{Member: &adminv1.PoolMember{Name: "sweden"}, Effective: &adminv1.EffectiveMember{
				BaseUrl: "https://acme-sweden.openai.azure.com/openai", Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "api-key"},
				KeySecret: "azure-sweden-key", Region: "eu-north", Weight: 1, Order: 1, Models: []string{"gpt-x"}, ApiVersion: "2024-10-21",
				Account: "secret:azure-sweden-key", Tags: map[string]string{"team": "ml"},
				InheritedFields: []string{"auth", "models", "api_version", "retains_data"}, InheritedTagKeys: []string{"team"}},
				// edge-1's last view names a cooldown that has ended since;
				// edge-2's is still running.
				EdgeViews: []*adminv1.EdgeView{{View: &telemetryv1.MemberView{EdgeId: "edge-1", Headroom: 0.42, LastStatus: 429,
					Cooldown: &telemetryv1.Cooldown{Until: timestamppb.New(ended), Kind: telemetryv1.FailureKind_FAILURE_KIND_RATE_LIMITED, Reason: "retry-after 30s"}}},
					{View: &telemetryv1.MemberView{EdgeId: "edge-2", Headroom: 0.1, LastStatus: 503,
						Cooldown: &telemetryv1.Cooldown{Until: timestamppb.New(running), Kind: telemetryv1.FailureKind_FAILURE_KIND_SERVER_ERROR, Reason: "http_503"}}}}},
			{Member: &adminv1.PoolMember{Name: "france"}, Effective: &adminv1.EffectiveMember{
				BaseUrl: "https://acme-france.openai.azure.com/openai", Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "api-key"},
				KeySecret: "azure-france-key", Region: "eu-west", Weight: 2, Order: 1, Models: []string{"gpt-x"},
				Prices:          []*adminv1.ResolvedPrice{{Price: &configv1.Price{Model: "gpt-x", InputMicros: proto.Int64(2_750_000), OutputMicros: proto.Int64(11_000_000), CacheReadMicros: proto.Int64(275_000)}, Whole: true}},
				InheritedFields: []string{"auth", "models"}}},
		},
		Warnings: []*adminv1.Warning{{Code: "model_unpriced", Message: "gpt-x has no price on sweden."}},
	}
	f.reply("GetProvider", func(proto.Message) (proto.Message, error) { return &adminv1.GetProviderResponse{Detail: detail}, nil })
	r := e.must(t, "provider", "show", "azure-eu", "--tenant", "acme")
	for _, want := range []string{
		"record azure-eu\n",
		"kind pool\n",
		"preset azure-openai\n",
		"auth api-key (header api-key)\n",
		"MEMBER FORMAT ORDER WEIGHT STATE REGION BASE URL\n",
		"sweden - 1 1 on eu-north https://acme-sweden.openai.azure.com/openai\n",
		"france - 1 2 on eu-west https://acme-france.openai.azure.com/openai\n",
		"member sweden:\n",
		" auth api-key (header api-key) (inherited)\n",
		" key secret azure-sweden-key\n",
		" region eu-north\n",
		" retains data no (inherited)\n",
		" api version 2024-10-21 (inherited)\n",
		" tags team=ml (inherited)\n",
		" edge edge-1 headroom 42%, last status 429, in flight 0\n",
		" edge edge-2 headroom 10%, cooling until " + running.Format(time.RFC3339) + " (server_error: http_503), last status 503, in flight 0\n",
		"member france:\n",
		" price gpt-x input 2.75, output 11, cache read 0.275 USD/Mtok\n",
	} {
		if !strings.Contains(squash(r.stdout), want) {
			t.Errorf("provider show lacks %q:\n%s", want, r.stdout)
		}
	}
	if r.stderr != "warning: gpt-x has no price on sweden. [model_unpriced]\n" {
		t.Errorf("stderr %q", r.stderr)
	}

	r = e.must(t, "provider", "show", "azure-eu", "--tenant", "acme", "--output", "json")
	var got adminv1.GetProviderResponse
	if err := jsonUnmarshal(r.stdout, &got); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.stdout, ended.Format(time.RFC3339)) {
		t.Errorf("provider show --output json shows a cooldown that has ended:\n%s", r.stdout)
	}
	noEnumNames(t, "provider show --output json", r.stdout)
	want := proto.Clone(detail).(*adminv1.ProviderDetail)
	want.Members[0].EdgeViews[0].View.Cooldown = nil
	diffProto(t, "provider show json", &adminv1.GetProviderResponse{Detail: want}, &got)
	if !strings.Contains(r.stdout, `"inherited_fields": [`) {
		t.Errorf("json does not use proto field names:\n%s", r.stdout)
	}

	// pool list shows only the running cooldown too.
	f.reply("ListPoolMembers", func(proto.Message) (proto.Message, error) {
		return &adminv1.ListPoolMembersResponse{Members: proto.Clone(detail).(*adminv1.ProviderDetail).GetMembers()}, nil
	})
	r = e.must(t, "provider", "pool", "list", "azure-eu", "--tenant", "acme")
	if out := squash(r.stdout); strings.Count(out, "cooling until") != 1 || !strings.Contains(out, "cooling until "+running.Format(time.RFC3339)) {
		t.Errorf("pool list shows other cooldowns than the running one:\n%s", r.stdout)
	}
	r = e.must(t, "provider", "pool", "list", "azure-eu", "--tenant", "acme", "--output", "json")
	if strings.Contains(r.stdout, ended.Format(time.RFC3339)) || !strings.Contains(r.stdout, running.Format(time.RFC3339)) {
		t.Errorf("pool list --output json cooldowns:\n%s", r.stdout)
	}
}

// provider show prints the routing summary right after the record's name,
// and nothing when the server sends none.
func TestProviderShowRoutingSummary(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	e := newEnv(t, url, "tok")
	detail := &adminv1.ProviderDetail{
		Record: &adminv1.ProviderRecord{Name: "oai", Tenant: "acme", Kind: adminv1.RecordKind_RECORD_KIND_PLAIN,
			Spec: &adminv1.ProviderSpec{WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI, Region: "eu-west"}},
		Members: []*adminv1.MemberDetail{{Member: &adminv1.PoolMember{Name: "primary"},
			Effective: &adminv1.EffectiveMember{Region: "eu-west", Weight: 1, Order: 1}}},
		RoutingSummary: "One endpoint in eu-west; default recovery",
	}
	f.reply("GetProvider", func(proto.Message) (proto.Message, error) { return &adminv1.GetProviderResponse{Detail: detail}, nil })
	r := e.must(t, "provider", "show", "oai", "--tenant", "acme")
	lines := strings.Split(squash(r.stdout), "\n")
	if len(lines) < 3 || lines[0] != "record oai" || lines[1] != "routing One endpoint in eu-west; default recovery" || lines[2] != "tenant acme" {
		t.Errorf("provider show:\n%s", r.stdout)
	}
	detail.RoutingSummary = ""
	r = e.must(t, "provider", "show", "oai", "--tenant", "acme")
	if strings.Contains(r.stdout, "routing") {
		t.Errorf("provider show without a summary:\n%s", r.stdout)
	}
}

func TestUsageExportStreams(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	e := newEnv(t, url, "tok")
	day := timestamppb.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f.usage = [][]*adminv1.UsageRow{
		{{BucketStart: day, Tenant: "acme", Key: "ci", Record: "azure-eu", Member: "france", Model: "gpt-x", Calls: 3, InputTokens: 1000, CostNanos: 2_750_000_001}},
		{{BucketStart: day, Tenant: "acme", Key: "ci", Record: "azure-eu", Member: "sweden", Model: "gpt-x", Calls: 1, FailedCalls: 1, EstimatedCostNanos: 5, CostNanos: 5}},
	}
	r := e.must(t, "usage", "export", "--tenant", "acme", "--from", "2026-01-01", "--to", "2026-01-31")
	want := "bucket_start,call_id,tenant,key,record,member,managed,model,calls,failed_calls,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,cost_usd,estimated_cost_usd\n" +
		"2026-01-01T00:00:00Z,,acme,ci,azure-eu,france,false,gpt-x,3,0,1000,0,0,0,2.750000001,0\n" +
		"2026-01-01T00:00:00Z,,acme,ci,azure-eu,sweden,false,gpt-x,1,1,0,0,0,0,0.000000005,0.000000005\n"
	if r.stdout != want {
		t.Errorf("csv:\n%s\nwant:\n%s", r.stdout, want)
	}
	diffProto(t, "ExportUsage", &adminv1.ExportUsageRequest{Tenant: "acme",
		StartTime: timestamppb.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		EndTime:   timestamppb.New(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))}, f.last(t, "ExportUsage"))

	r = e.must(t, "usage", "export", "--tenant", "acme", "--from", "2026-01-01T12:00:00+02:00", "--to", "2026-01-02T00:00:00Z", "--format", "json")
	// The JSON has the CSV's field names, numbers as JSON numbers and the
	// cost as exact decimal dollars.
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.UseNumber()
	var rows []map[string]any
	if err := dec.Decode(&rows); err != nil {
		t.Fatalf("json: %v\n%s", err, r.stdout)
	}
	if len(rows) != 2 || rows[0]["member"] != "france" || rows[0]["cost_usd"] != json.Number("2.750000001") ||
		rows[0]["calls"] != json.Number("3") || rows[0]["input_tokens"] != json.Number("1000") || rows[0]["managed"] != false {
		t.Errorf("json rows %v", rows)
	}
	if _, ok := rows[0]["cost_nanos"]; ok {
		t.Errorf("json rows name the cost cost_nanos: %v", rows[0])
	}
	diffProto(t, "ExportUsage RFC 3339", &adminv1.ExportUsageRequest{Tenant: "acme",
		StartTime: timestamppb.New(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)),
		EndTime:   timestamppb.New(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))}, f.last(t, "ExportUsage"))

	// With no flags: this month so far.
	before := time.Now().UTC()
	e.must(t, "usage", "export", "--tenant", "acme")
	after := time.Now().UTC()
	got := f.last(t, "ExportUsage").(*adminv1.ExportUsageRequest)
	if first := time.Date(before.Year(), before.Month(), 1, 0, 0, 0, 0, time.UTC); !got.GetStartTime().AsTime().Equal(first) &&
		!got.GetStartTime().AsTime().Equal(time.Date(after.Year(), after.Month(), 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("default start %v, want %v (the first day of this month)", got.GetStartTime().AsTime(), first)
	}
	if end := got.GetEndTime().AsTime(); end.Before(before.Truncate(time.Second)) || end.After(after) {
		t.Errorf("default end %v, want now (between %v and %v)", end, before, after)
	}
	// --from alone ends now; --to alone starts on the first of this month.
	e.must(t, "usage", "export", "--tenant", "acme", "--from", "2026-01-01")
	if got := f.last(t, "ExportUsage").(*adminv1.ExportUsageRequest); !got.GetStartTime().AsTime().Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) ||
		got.GetEndTime().AsTime().Before(before.Truncate(time.Second)) {
		t.Errorf("--from alone: %v", got)
	}
	if r := e.run(t, nil, "usage", "export", "--to", "2000-01-01"); r.code != exitBadArgs || !strings.Contains(r.stderr, "give --from too") {
		t.Errorf("--to before this month alone: exit %d, stderr %q", r.code, r.stderr)
	}

	// --output json alone picks the json format; no rows is an empty array.
	f.usage = nil
	if r := e.must(t, "usage", "export", "--from", "2026-01-01", "--to", "2026-01-01", "--output", "json"); r.stdout != "[]\n" {
		t.Errorf("empty json export %q", r.stdout)
	}

	// A stream that fails midway exits 1 and leaves the JSON unterminated.
	f.usage = [][]*adminv1.UsageRow{{{Tenant: "acme"}}}
	f.usageErr = connect.NewError(connect.CodeInternal, errors.New("database went away"))
	r = e.run(t, nil, "usage", "export", "--from", "2026-01-01", "--to", "2026-01-01", "--format", "json")
	if r.code != exitFailed || !strings.Contains(r.stderr, "error: export usage: internal: database went away") {
		t.Errorf("exit %d stderr %q", r.code, r.stderr)
	}
	if json.Valid([]byte(r.stdout)) {
		t.Errorf("a failed export printed valid JSON: %q", r.stdout)
	}
}

func TestBudgetCommands(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	e := newEnv(t, url, "tok")
	f.reply("SetBudget", func(req proto.Message) (proto.Message, error) {
		r := req.(*adminv1.SetBudgetRequest)
		return &adminv1.SetBudgetResponse{Created: true, Budget: &adminv1.Budget{Name: r.GetName(), LimitNanos: r.GetLimitNanos(), Period: r.GetPeriod(), Key: r.GetKey()}}, nil
	})
	r := e.must(t, "budget", "set", "ci-monthly", "--tenant", "acme", "--limit", "12.5", "--period", "month", "--key", "ci")
	if r.stdout != "created budget ci-monthly: 12.5 USD per month for key ci\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	diffProto(t, "SetBudget", &adminv1.SetBudgetRequest{Tenant: "acme", Name: "ci-monthly", LimitNanos: 12_500_000_000,
		Period: configv1.BudgetPeriod_BUDGET_PERIOD_MONTH, Key: "ci"}, f.last(t, "SetBudget"))

	f.reply("ListBudgets", func(proto.Message) (proto.Message, error) {
		return &adminv1.ListBudgetsResponse{Budgets: []*adminv1.Budget{{Name: "all", LimitNanos: 250_000_000_000, SpentNanos: 1_234_567_891,
			Period: configv1.BudgetPeriod_BUDGET_PERIOD_TOTAL}}}, nil
	})
	r = e.must(t, "budget", "list", "--tenant", "acme")
	if !strings.Contains(squash(r.stdout), "all - total 250 1.234567891 0") {
		t.Errorf("budget list:\n%s", r.stdout)
	}
	r = e.must(t, "budget", "list", "--tenant", "acme", "--output", "json")
	noEnumNames(t, "budget list --output json", r.stdout)
	if !strings.Contains(r.stdout, `"period": "total"`) {
		t.Errorf("budget list json:\n%s", r.stdout)
	}
}

func TestCallsEdgesDoctor(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	e := newEnv(t, url, "tok")
	f.reply("ListCalls", func(proto.Message) (proto.Message, error) {
		return &adminv1.ListCallsResponse{Calls: []*adminv1.Call{{Key: "ci", Record: &telemetryv1.CallRecord{CallId: "c1", Model: "gpt-x",
			RecordName: "azure-eu", MemberName: "france", Status: 200, Outcome: telemetryv1.CallOutcome_CALL_OUTCOME_ANSWERED, CostNanos: 1_500_000,
			Attempts: []*telemetryv1.Attempt{{}, {}}}}}}, nil
	})
	r := e.must(t, "calls", "list", "--tenant", "acme", "--since", "15m", "--member", "france")
	if !strings.Contains(r.stdout, "c1") || !strings.Contains(r.stdout, "answered") || !strings.Contains(r.stdout, "0.0015") {
		t.Errorf("calls list:\n%s", r.stdout)
	}
	diffProto(t, "ListCalls", &adminv1.ListCallsRequest{Tenant: "acme", Since: durationpb.New(15 * time.Minute), Member: "france", PageSize: 100},
		f.last(t, "ListCalls"))

	f.reply("GetCall", func(proto.Message) (proto.Message, error) {
		return &adminv1.GetCallResponse{Call: &adminv1.Call{Tenant: "acme", Key: "ci", Record: &telemetryv1.CallRecord{CallId: "c1",
			Outcome: telemetryv1.CallOutcome_CALL_OUTCOME_ANSWERED,
			Attempts: []*telemetryv1.Attempt{{Index: 0, MemberName: "sweden", Status: 429, Outcome: telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_FAILED_OVER,
				Kind: telemetryv1.FailureKind_FAILURE_KIND_RATE_LIMITED},
				{Index: 1, MemberName: "france", Status: 200, Outcome: telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_ANSWERED}}}}}, nil
	})
	r = e.must(t, "calls", "show", "c1", "--tenant", "acme")
	// The words of ROUTING R-SEE-2, in text and in JSON.
	if out := squash(r.stdout); !strings.Contains(out, "0 - sweden 429 failed_over rate_limited") ||
		!strings.Contains(out, "1 - france 200 answered") || !strings.Contains(out, "outcome answered\n") {
		t.Errorf("calls show:\n%s", r.stdout)
	}
	r = e.must(t, "calls", "show", "c1", "--tenant", "acme", "--output", "json")
	noEnumNames(t, "calls show --output json", r.stdout)
	var shown struct {
		Call struct {
			Record struct {
				Outcome  string `json:"outcome"`
				Attempts []struct {
					Outcome string `json:"outcome"`
					Kind    string `json:"kind"`
				} `json:"attempts"`
			} `json:"record"`
		} `json:"call"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil {
		t.Fatalf("calls show json: %v\n%s", err, r.stdout)
	}
	if at := shown.Call.Record.Attempts; shown.Call.Record.Outcome != "answered" || len(at) != 2 ||
		at[0].Outcome != "failed_over" || at[0].Kind != "rate_limited" || at[1].Outcome != "answered" || at[1].Kind != "" {
		t.Errorf("calls show json words: %+v\n%s", shown, r.stdout)
	}
	r = e.must(t, "calls", "list", "--tenant", "acme", "--output", "json")
	noEnumNames(t, "calls list --output json", r.stdout)
	if !strings.Contains(r.stdout, `"outcome": "answered"`) {
		t.Errorf("calls list json:\n%s", r.stdout)
	}
	diffProto(t, "GetCall", &adminv1.GetCallRequest{Tenant: "acme", CallId: "c1"}, f.last(t, "GetCall"))

	f.reply("ListEdges", func(proto.Message) (proto.Message, error) {
		return &adminv1.ListEdgesResponse{Edges: []*adminv1.Edge{{Id: "edge-1", Silent: true, MemberViews: 4}}}, nil
	})
	r = e.must(t, "edges", "list")
	if !strings.Contains(r.stdout, "edge-1") || !strings.Contains(r.stdout, "yes") {
		t.Errorf("edges list:\n%s", r.stdout)
	}

	f.reply("Diagnose", func(proto.Message) (proto.Message, error) {
		return &adminv1.DiagnoseResponse{Findings: []*adminv1.Finding{{Code: "pool_cooling", Severity: adminv1.Severity_SEVERITY_ERROR,
			Message: "Every member of azure-eu is cooling.", Hint: "Add capacity.", Tenant: "acme", Record: "azure-eu", Model: "gpt-x"}}}, nil
	})
	r = e.must(t, "doctor")
	if !strings.Contains(r.stdout, "error   pool_cooling: Every member of azure-eu is cooling. (tenant acme; record azure-eu; model gpt-x)\n        hint: Add capacity.\n") {
		t.Errorf("doctor:\n%s", r.stdout)
	}
	diffProto(t, "Diagnose", &adminv1.DiagnoseRequest{}, f.last(t, "Diagnose"))
	r = e.must(t, "doctor", "--output", "json")
	noEnumNames(t, "doctor --output json", r.stdout)
	if !strings.Contains(r.stdout, `"severity": "error"`) {
		t.Errorf("doctor json:\n%s", r.stdout)
	}
}

func TestPoolRemoveListResetShare(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	e := newEnv(t, url, "tok")
	f.reply("RemovePoolMember", func(proto.Message) (proto.Message, error) {
		return &adminv1.RemovePoolMemberResponse{RecordPlain: true}, nil
	})
	r := e.must(t, "provider", "pool", "remove", "azure-eu", "france", "--tenant", "acme")
	if r.stdout != "removed member france from azure-eu\nazure-eu is a plain record again, with the endpoint and settings of france\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	e.must(t, "provider", "pool", "reset", "azure-eu", "sweden", "--tenant", "acme")
	diffProto(t, "ResetPoolMember", &adminv1.ResetPoolMemberRequest{Tenant: "acme", Record: "azure-eu", Member: "sweden"}, f.last(t, "ResetPoolMember"))
	e.must(t, "provider", "pool", "list", "azure-eu", "--tenant", "acme")
	diffProto(t, "ListPoolMembers", &adminv1.ListPoolMembersRequest{Tenant: "acme", Record: "azure-eu"}, f.last(t, "ListPoolMembers"))
	e.must(t, "provider", "share", "gpt-managed", "--tenant", "acme")
	diffProto(t, "ShareProvider", &adminv1.ShareProviderRequest{Name: "gpt-managed", Tenant: "acme"}, f.last(t, "ShareProvider"))
	e.must(t, "provider", "unshare", "gpt-managed", "--tenant", "acme")
	diffProto(t, "UnshareProvider", &adminv1.UnshareProviderRequest{Name: "gpt-managed", Tenant: "acme"}, f.last(t, "UnshareProvider"))
	e.must(t, "provider", "delete", "azure-eu", "--tenant", "acme")
	diffProto(t, "DeleteProvider", &adminv1.DeleteProviderRequest{Tenant: "acme", Name: "azure-eu"}, f.last(t, "DeleteProvider"))
	e.must(t, "secret", "delete", "azure-key", "--tenant", "")
	diffProto(t, "DeleteSecret", &adminv1.DeleteSecretRequest{Name: "azure-key"}, f.last(t, "DeleteSecret"))
	r = e.must(t, "secret", "list", "--tenant", "acme", "--output", "json")
	if strings.TrimSpace(r.stdout) != "{\n  \"secrets\": [],\n  \"next_page_token\": \"\"\n}" {
		t.Errorf("secret list json %q", r.stdout)
	}
}
