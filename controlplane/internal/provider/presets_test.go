package provider

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

func TestResolveRecordPreset(t *testing.T) {
	t.Parallel()
	const (
		openai    = configv1.WireFormat_WIRE_FORMAT_OPENAI
		anthropic = configv1.WireFormat_WIRE_FORMAT_ANTHROPIC
		bedrock   = configv1.WireFormat_WIRE_FORMAT_BEDROCK
		apiKey    = configv1.AuthKind_AUTH_KIND_API_KEY
		sigv4     = configv1.AuthKind_AUTH_KIND_SIGV4
		none      = configv1.AuthKind_AUTH_KIND_NONE
		oauth2    = configv1.AuthKind_AUTH_KIND_OAUTH2
	)
	tests := []struct {
		name   string
		preset adminv1.Preset
		pool   bool
		in     *adminv1.ProviderSpec
		want   *adminv1.ProviderSpec
	}{
		{
			name:   "openai fills wire, bearer auth and the default base_url",
			preset: adminv1.Preset_PRESET_OPENAI,
			in:     &adminv1.ProviderSpec{KeySecret: "oai"},
			want: &adminv1.ProviderSpec{WireFormat: openai, BaseUrl: OpenAIBaseURL, KeySecret: "oai",
				Auth: &configv1.Auth{Kind: apiKey, Header: "authorization"}},
		},
		{
			name:   "a given base_url wins over the preset's",
			preset: adminv1.Preset_PRESET_OPENAI,
			in:     &adminv1.ProviderSpec{BaseUrl: "https://proxy.example.com/v1", KeySecret: "oai"},
			want: &adminv1.ProviderSpec{WireFormat: openai, BaseUrl: "https://proxy.example.com/v1", KeySecret: "oai",
				Auth: &configv1.Auth{Kind: apiKey, Header: "authorization"}},
		},
		{
			name:   "no base_url on a pool",
			preset: adminv1.Preset_PRESET_ANTHROPIC,
			pool:   true,
			in:     &adminv1.ProviderSpec{KeySecret: "ant"},
			want: &adminv1.ProviderSpec{WireFormat: anthropic, KeySecret: "ant",
				Auth: &configv1.Auth{Kind: apiKey, Header: "x-api-key"}},
		},
		{
			name:   "anthropic",
			preset: adminv1.Preset_PRESET_ANTHROPIC,
			in:     &adminv1.ProviderSpec{KeySecret: "ant"},
			want: &adminv1.ProviderSpec{WireFormat: anthropic, BaseUrl: AnthropicBaseURL, KeySecret: "ant",
				Auth: &configv1.Auth{Kind: apiKey, Header: "x-api-key"}},
		},
		{
			name:   "azure-openai pins api_version and uses the api-key header",
			preset: adminv1.Preset_PRESET_AZURE_OPENAI,
			in:     &adminv1.ProviderSpec{BaseUrl: "https://acme.openai.azure.com/openai", KeySecret: "az"},
			want: &adminv1.ProviderSpec{WireFormat: openai, BaseUrl: "https://acme.openai.azure.com/openai", KeySecret: "az",
				ApiVersion: AzureAPIVersion, Auth: &configv1.Auth{Kind: apiKey, Header: "api-key"}},
		},
		{
			name:   "azure-openai keeps a given api_version and header",
			preset: adminv1.Preset_PRESET_AZURE_OPENAI,
			in: &adminv1.ProviderSpec{BaseUrl: "https://a.example.com/openai", KeySecret: "az", ApiVersion: "2025-01-01",
				Auth: &configv1.Auth{Header: "x-custom"}},
			want: &adminv1.ProviderSpec{WireFormat: openai, BaseUrl: "https://a.example.com/openai", KeySecret: "az",
				ApiVersion: "2025-01-01", Auth: &configv1.Auth{Kind: apiKey, Header: "x-custom"}},
		},
		{
			name:   "bedrock signs in the record's region with the key secret as access key",
			preset: adminv1.Preset_PRESET_BEDROCK,
			in:     &adminv1.ProviderSpec{BaseUrl: "https://bedrock-runtime.eu-north-1.amazonaws.com", Region: "eu-north-1", KeySecret: "aws"},
			want: &adminv1.ProviderSpec{WireFormat: bedrock, BaseUrl: "https://bedrock-runtime.eu-north-1.amazonaws.com", Region: "eu-north-1",
				Auth: &configv1.Auth{Kind: sigv4, AwsService: "bedrock", AwsRegion: "eu-north-1", AccessKeySecret: "aws"}},
		},
		{
			name:   "bedrock keeps a given aws_region",
			preset: adminv1.Preset_PRESET_BEDROCK,
			pool:   true,
			in:     &adminv1.ProviderSpec{Region: "eu", Auth: &configv1.Auth{AwsRegion: "eu-west-1", AccessKeySecret: "aws"}},
			want: &adminv1.ProviderSpec{WireFormat: bedrock, Region: "eu",
				Auth: &configv1.Auth{Kind: sigv4, AwsService: "bedrock", AwsRegion: "eu-west-1", AccessKeySecret: "aws"}},
		},
		{
			name:   "vllm without a key secret has no auth",
			preset: adminv1.Preset_PRESET_VLLM,
			in:     &adminv1.ProviderSpec{BaseUrl: "http://127.0.0.1:8000/v1"},
			want: &adminv1.ProviderSpec{WireFormat: openai, BaseUrl: "http://127.0.0.1:8000/v1",
				Auth: &configv1.Auth{Kind: none}},
		},
		{
			name:   "vllm with a key secret sends it as a bearer token",
			preset: adminv1.Preset_PRESET_VLLM,
			in:     &adminv1.ProviderSpec{BaseUrl: "https://vllm.example.com/v1", KeySecret: "v"},
			want: &adminv1.ProviderSpec{WireFormat: openai, BaseUrl: "https://vllm.example.com/v1", KeySecret: "v",
				Auth: &configv1.Auth{Kind: apiKey, Header: "authorization"}},
		},
		{
			name:   "a request naming another auth kind keeps its auth whole",
			preset: adminv1.Preset_PRESET_VLLM,
			in: &adminv1.ProviderSpec{BaseUrl: "https://gw.example.com/v1",
				Auth: &configv1.Auth{Kind: oauth2, TokenUrl: "https://idp.example.com/token", ClientId: "c", ClientSecretSecret: "cs"}},
			want: &adminv1.ProviderSpec{WireFormat: openai, BaseUrl: "https://gw.example.com/v1",
				Auth: &configv1.Auth{Kind: oauth2, TokenUrl: "https://idp.example.com/token", ClientId: "c", ClientSecretSecret: "cs"}},
		},
		{
			name:   "unspecified preset changes nothing",
			preset: adminv1.Preset_PRESET_UNSPECIFIED,
			in:     &adminv1.ProviderSpec{Region: "x"},
			want:   &adminv1.ProviderSpec{Region: "x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := proto.Clone(tt.in).(*adminv1.ProviderSpec)
			got, err := ResolveRecordPreset(tt.preset, tt.in, tt.pool, GivenBySpec(tt.in), "preset")
			if err != nil {
				t.Fatalf("ResolveRecordPreset: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if !proto.Equal(in, tt.in) {
				t.Errorf("ResolveRecordPreset changed its argument")
			}
		})
	}
}

func TestResolveRecordPresetWireMismatch(t *testing.T) {
	t.Parallel()
	in := &adminv1.ProviderSpec{WireFormat: configv1.WireFormat_WIRE_FORMAT_ANTHROPIC}
	_, err := ResolveRecordPreset(adminv1.Preset_PRESET_OPENAI, in, false, GivenBySpec(in), "preset")
	assertProblems(t, err, []fc{{"preset", CodeWireMismatch}})
}

func TestResolveMemberPreset(t *testing.T) {
	t.Parallel()
	bedrockRec := &adminv1.ProviderSpec{WireFormat: configv1.WireFormat_WIRE_FORMAT_BEDROCK, Region: "eu"}
	azureRec := &adminv1.ProviderSpec{WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI, KeySecret: "shared"}
	tests := []struct {
		name   string
		preset adminv1.Preset
		rec    *adminv1.ProviderSpec
		in     *adminv1.PoolMemberSpec
		want   *adminv1.PoolMemberSpec
	}{
		{
			name:   "bedrock member signs in its own region",
			preset: adminv1.Preset_PRESET_BEDROCK,
			rec:    bedrockRec,
			in:     &adminv1.PoolMemberSpec{BaseUrl: "https://b.example.com", Region: proto.String("eu-north-1"), Auth: &configv1.Auth{AccessKeySecret: "aws"}},
			want: &adminv1.PoolMemberSpec{BaseUrl: "https://b.example.com", Region: proto.String("eu-north-1"),
				Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_SIGV4, AwsService: "bedrock", AwsRegion: "eu-north-1", AccessKeySecret: "aws"}},
		},
		{
			name:   "bedrock member without a region takes the record's",
			preset: adminv1.Preset_PRESET_BEDROCK,
			rec:    bedrockRec,
			in:     &adminv1.PoolMemberSpec{BaseUrl: "https://b.example.com", KeySecret: proto.String("aws")},
			want: &adminv1.PoolMemberSpec{BaseUrl: "https://b.example.com",
				Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_SIGV4, AwsService: "bedrock", AwsRegion: "eu", AccessKeySecret: "aws"}},
		},
		{
			name:   "azure member pins api_version when the record has none",
			preset: adminv1.Preset_PRESET_AZURE_OPENAI,
			rec:    azureRec,
			in:     &adminv1.PoolMemberSpec{BaseUrl: "https://a.example.com/openai"},
			want: &adminv1.PoolMemberSpec{BaseUrl: "https://a.example.com/openai", ApiVersion: proto.String(AzureAPIVersion),
				Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "api-key"}},
		},
		{
			name:   "vllm member uses the record's key secret",
			preset: adminv1.Preset_PRESET_VLLM,
			rec:    azureRec,
			in:     &adminv1.PoolMemberSpec{BaseUrl: "http://localhost:8000/v1"},
			want: &adminv1.PoolMemberSpec{BaseUrl: "http://localhost:8000/v1",
				Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "authorization"}},
		},
		{
			name:   "openai member gets the default base_url",
			preset: adminv1.Preset_PRESET_OPENAI,
			rec:    azureRec,
			in:     &adminv1.PoolMemberSpec{},
			want: &adminv1.PoolMemberSpec{BaseUrl: OpenAIBaseURL,
				Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "authorization"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ResolveMemberPreset(tt.preset, tt.rec, tt.in, GivenBySpec(tt.in), "preset")
			if err != nil {
				t.Fatalf("ResolveMemberPreset: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
	// R-FMT-4: a member's preset of another format than the record's gives
	// the member its own format and auth; one of the record's format leaves
	// the member on the record's; a wire format the request gives must be
	// the preset's.
	t.Run("R-FMT-4 a member preset sets the member's own format", func(t *testing.T) {
		t.Parallel()
		got, err := ResolveMemberPreset(adminv1.Preset_PRESET_ANTHROPIC, azureRec, &adminv1.PoolMemberSpec{}, GivenBySpec(&adminv1.PoolMemberSpec{}), "members[0].preset")
		if err != nil {
			t.Fatal(err)
		}
		want := &adminv1.PoolMemberSpec{WireFormat: configv1.WireFormat_WIRE_FORMAT_ANTHROPIC, BaseUrl: AnthropicBaseURL,
			Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "x-api-key"}}
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		got, err = ResolveMemberPreset(adminv1.Preset_PRESET_OPENAI, azureRec, &adminv1.PoolMemberSpec{}, GivenBySpec(&adminv1.PoolMemberSpec{}), "members[0].preset")
		if err != nil || got.GetWireFormat() != configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED {
			t.Errorf("a preset of the record's format: wire %v, err %v", got.GetWireFormat(), err)
		}
		spec := &adminv1.PoolMemberSpec{WireFormat: configv1.WireFormat_WIRE_FORMAT_BEDROCK}
		_, err = ResolveMemberPreset(adminv1.Preset_PRESET_ANTHROPIC, azureRec, spec, GivenBySpec(spec), "members[0].preset")
		assertProblems(t, err, []fc{{"members[0].preset", CodeWireMismatch}})
	})
	t.Run("gemini and vertex members", func(t *testing.T) {
		t.Parallel()
		got, err := ResolveMemberPreset(adminv1.Preset_PRESET_GEMINI, azureRec, &adminv1.PoolMemberSpec{}, GivenBySpec(&adminv1.PoolMemberSpec{}), "preset")
		if err != nil {
			t.Fatal(err)
		}
		want := &adminv1.PoolMemberSpec{WireFormat: configv1.WireFormat_WIRE_FORMAT_GEMINI, BaseUrl: GeminiBaseURL,
			Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "x-goog-api-key"}}
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Errorf("gemini (-want +got):\n%s", diff)
		}
		in := &adminv1.PoolMemberSpec{BaseUrl: VertexBaseURL("europe-west4", "acme"), KeySecret: proto.String("sa")}
		got, err = ResolveMemberPreset(adminv1.Preset_PRESET_VERTEX, azureRec, in, GivenBySpec(in), "preset")
		if err != nil {
			t.Fatal(err)
		}
		want = &adminv1.PoolMemberSpec{WireFormat: configv1.WireFormat_WIRE_FORMAT_GEMINI,
			BaseUrl:   "https://europe-west4-aiplatform.googleapis.com/v1/projects/acme/locations/europe-west4/publishers/google",
			KeySecret: proto.String("sa"), Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_GOOGLE_SERVICE_ACCOUNT}}
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Errorf("vertex (-want +got):\n%s", diff)
		}
	})
}

// The gemini and vertex record presets (DESIGN §3).
func TestGeminiAndVertexRecordPresets(t *testing.T) {
	t.Parallel()
	spec := &adminv1.ProviderSpec{KeySecret: "k"}
	got, err := ResolveRecordPreset(adminv1.Preset_PRESET_GEMINI, spec, false, GivenBySpec(spec), "preset")
	if err != nil {
		t.Fatal(err)
	}
	want := &adminv1.ProviderSpec{WireFormat: configv1.WireFormat_WIRE_FORMAT_GEMINI, BaseUrl: "https://generativelanguage.googleapis.com/v1beta",
		KeySecret: "k", Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "x-goog-api-key"}}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("gemini (-want +got):\n%s", diff)
	}
	spec = &adminv1.ProviderSpec{KeySecret: "sa", BaseUrl: VertexBaseURL("us-central1", "p")}
	got, err = ResolveRecordPreset(adminv1.Preset_PRESET_VERTEX, spec, false, GivenBySpec(spec), "preset")
	if err != nil {
		t.Fatal(err)
	}
	want = &adminv1.ProviderSpec{WireFormat: configv1.WireFormat_WIRE_FORMAT_GEMINI, BaseUrl: spec.GetBaseUrl(),
		KeySecret: "sa", Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_GOOGLE_SERVICE_ACCOUNT}}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("vertex (-want +got):\n%s", diff)
	}
}

func TestPresetNames(t *testing.T) {
	t.Parallel()
	for p := range adminv1.Preset_name {
		preset := adminv1.Preset(p)
		if preset == adminv1.Preset_PRESET_UNSPECIFIED {
			continue
		}
		name := PresetName(preset)
		if name == "" || ParsePreset(name) != preset {
			t.Errorf("preset %v: name %q does not round-trip", preset, name)
		}
	}
}

func TestNormalizeMemberResolvesPartialAuth(t *testing.T) {
	t.Parallel()
	rec := &adminv1.ProviderSpec{
		WireFormat: configv1.WireFormat_WIRE_FORMAT_BEDROCK,
		Auth:       &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_SIGV4, AwsService: "bedrock", AwsRegion: "us-east-1", AccessKeySecret: "aws"},
	}
	m := &adminv1.PoolMemberSpec{Auth: &configv1.Auth{AwsRegion: "eu-west-1"}}
	normalizeMember(rec, m)
	want := &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_SIGV4, AwsService: "bedrock", AwsRegion: "eu-west-1", AccessKeySecret: "aws"}
	if diff := cmp.Diff(want, m.GetAuth(), protocmp.Transform()); diff != "" {
		t.Errorf("auth (-want +got):\n%s", diff)
	}
	if m.GetWeight() != 1 || m.GetOrder() != 1 {
		t.Errorf("weight, order = %d, %d; want defaults 1, 1", m.GetWeight(), m.GetOrder())
	}
}

func TestApplyMask(t *testing.T) {
	t.Parallel()
	stored := &adminv1.ProviderSpec{
		Region: "eu", KeySecret: "k", Tags: map[string]string{"a": "1"},
		Auth:     &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "api-key"},
		Recovery: &configv1.Recovery{MaxAttempts: 3},
	}
	req := &adminv1.ProviderSpec{Region: "us", Tags: map[string]string{"b": "2"}, Auth: &configv1.Auth{Header: "x-key"}}
	got := proto.Clone(stored).(*adminv1.ProviderSpec)
	err := applyMask(got, req, []string{"region", "tags", "key_secret", "auth.header", "recovery.max_attempts", "nope", "auth.nope", "tags.x"}, recordNested, "update_mask")
	assertProblems(t, err, []fc{{"update_mask.paths[5]", CodeUnknownPath}, {"update_mask.paths[6]", CodeUnknownPath}, {"update_mask.paths[7]", CodeUnknownPath}})
	want := &adminv1.ProviderSpec{
		Region: "us", Tags: map[string]string{"b": "2"},
		Auth:     &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "x-key"},
		Recovery: &configv1.Recovery{},
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	req.Tags["b"] = "changed"
	if got.GetTags()["b"] != "2" {
		t.Errorf("the result shares memory with the request")
	}

	all := proto.Clone(stored).(*adminv1.ProviderSpec)
	if err := applyMask(all, req, []string{"*"}, recordNested, "update_mask"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(req, all, protocmp.Transform()); diff != "" {
		t.Errorf(`"*" (-want +got):\n%s`, diff)
	}

	m := &adminv1.PoolMemberSpec{Region: proto.String("eu"), Weight: 5}
	if err := applyMask(m, &adminv1.PoolMemberSpec{}, []string{"region", "weight"}, memberNested, "update_mask"); err != nil {
		t.Fatal(err)
	}
	if m.Region != nil || m.Weight != 0 {
		t.Errorf("clearing optional region and weight: got %v", m)
	}
}
