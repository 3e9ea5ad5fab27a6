package provider

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// fc is a problem's field and code, what the tests compare.
type fc struct{ Field, Code string }

func assertProblems(t *testing.T, err error, want []fc) {
	t.Helper()
	var got []fc
	for _, p := range Problems(err) {
		got = append(got, fc{p.Field, p.Code})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s\nerror: %v", diff, err)
	}
}

func i64(v int64) *int64 { return &v }

func price(model string, parts ...int64) *configv1.Price {
	p := &configv1.Price{Model: model}
	for i, v := range parts {
		if v < -1000 { // skip marker
			continue
		}
		*priceParts[i].ptr(p) = i64(v)
	}
	return p
}

const skip = -1 << 40 // a price part left out by price()

var testSecrets = map[string][]string{
	"azure-key":   {"acme-sweden.openai.azure.com", "acme-france.openai.azure.com"},
	"azure-se":    {"acme-sweden.openai.azure.com"},
	"azure-fr":    {"acme-france.openai.azure.com"},
	"aws":         {"bedrock-runtime.eu-north-1.amazonaws.com", "bedrock-runtime.eu-west-1.amazonaws.com"},
	"oai":         {"api.openai.com"},
	"client-pass": {"idp.example.com"},
}

// azurePool is the seed's Azure pool, valid.
func azurePool() *Record {
	return &Record{
		Name: "azure-eu", Pool: true,
		Spec: &adminv1.ProviderSpec{
			WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI,
			Auth:       &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "api-key"},
			KeySecret:  "azure-key",
			ApiVersion: AzureAPIVersion,
			Models:     []*configv1.Model{{Name: "gpt-x", Kind: configv1.ModelKind_MODEL_KIND_CHAT}},
			Tags:       map[string]string{"team": "ml", "env": "prod"},
		},
		Members: []*Member{
			{Name: "sweden", Spec: &adminv1.PoolMemberSpec{
				BaseUrl: "https://acme-sweden.openai.azure.com/openai", Region: proto.String("eu-north"), Weight: 1, Order: 1,
				ModelMap: map[string]string{"gpt-x": "gpt-x-sweden"}}},
			{Name: "france", Spec: &adminv1.PoolMemberSpec{
				BaseUrl: "https://acme-france.openai.azure.com/openai", Region: proto.String("eu-west"), Weight: 2, Order: 1,
				KeySecret: proto.String("azure-fr"), Tags: map[string]string{"env": "staging"},
				Prices: []*configv1.Price{price("gpt-x", 2_750_000, 11_000_000, 275_000)}}},
		},
	}
}

// bedrockPool is the seed's Bedrock pool, valid: two SigV4 members sharing
// one access key secret.
func bedrockPool() *Record {
	auth := func(region string) *configv1.Auth {
		return &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_SIGV4, AwsService: "bedrock", AwsRegion: region, AccessKeySecret: "aws"}
	}
	return &Record{
		Name: "bedrock-eu", Pool: true,
		Spec: &adminv1.ProviderSpec{
			WireFormat: configv1.WireFormat_WIRE_FORMAT_BEDROCK,
			Auth:       &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_SIGV4, AwsService: "bedrock"},
			Models:     []*configv1.Model{{Name: "claude-x", Kind: configv1.ModelKind_MODEL_KIND_CHAT}},
			Prices:     []*configv1.Price{price("claude-x", 3_000_000, 15_000_000, 300_000, 3_750_000)},
		},
		Members: []*Member{
			{Name: "stockholm", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://bedrock-runtime.eu-north-1.amazonaws.com", Region: proto.String("eu-north-1"), Auth: auth("eu-north-1"), Weight: 1, Order: 1,
				ModelMap: map[string]string{"claude-x": "eu.anthropic.claude-x"}}},
			{Name: "ireland", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://bedrock-runtime.eu-west-1.amazonaws.com", Region: proto.String("eu-west-1"), Auth: auth("eu-west-1"), Weight: 1, Order: 2}},
		},
	}
}

// plainOpenAI is a valid plain record.
func plainOpenAI() *Record {
	return &Record{
		Name: "openai",
		Spec: &adminv1.ProviderSpec{
			WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI,
			BaseUrl:    OpenAIBaseURL,
			Auth:       &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "authorization"},
			KeySecret:  "oai",
			Models:     []*configv1.Model{{Name: "gpt-x"}, {Name: "text-embed", Kind: configv1.ModelKind_MODEL_KIND_EMBEDDINGS}},
			Prices:     []*configv1.Price{price("gpt-x", 2_500_000, 10_000_000, 250_000)},
		},
	}
}

func TestValidateAcceptsTheSeedRecords(t *testing.T) {
	t.Parallel()
	for _, r := range []*Record{azurePool(), bedrockPool(), plainOpenAI()} {
		if err := Validate(r, Env{Secrets: testSecrets}); err != nil {
			t.Errorf("%s: %v", r.Name, err)
		}
	}
}

// TestValidate has one case per rule; each case's name starts with the
// rule's id where ROUTING.md has one.
func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		build func() *Record
		edit  func(r *Record)
		want  []fc
	}{
		{
			name: "names: record and member names are 1-64 of [a-z0-9_-], member names unique",
			edit: func(r *Record) {
				r.Name = "Azure EU"
				r.Members[0].Name = "france"
				r.Members = append(r.Members, &Member{Name: strings.Repeat("a", 65), Spec: proto.Clone(r.Members[1].Spec).(*adminv1.PoolMemberSpec)})
			},
			want: []fc{
				{"name", CodeInvalidName},
				{"members[france].name", CodeDuplicate},
				{"members[" + strings.Repeat("a", 65) + "].name", CodeInvalidName},
			},
		},
		{
			name: "R-SEC-2 base_url must be https",
			edit: func(r *Record) { r.Members[0].Spec.BaseUrl = "http://acme-sweden.openai.azure.com/openai" },
			want: []fc{{"members[sweden].spec.base_url", CodeNotHTTPS}},
		},
		{
			name: "R-SEC-2 plain http to loopback is allowed",
			edit: func(r *Record) {
				r.Members[0].Spec.BaseUrl = "http://127.0.0.1:8000/v1"
				r.Members[1].Spec.BaseUrl = "http://localhost:8001/v1"
			},
		},
		{
			name: "R-SEC-2 IPv6 loopback is allowed",
			edit: func(r *Record) { r.Members[0].Spec.BaseUrl = "http://[::1]:8000/v1" },
		},
		{
			name: "R-SEC-2 private and link-local addresses are refused on tenant records",
			edit: func(r *Record) {
				r.Members[0].Spec.BaseUrl = "https://10.0.0.5/v1"
				r.Members[1].Spec.BaseUrl = "https://169.254.169.254/latest"
			},
			want: []fc{{"members[sweden].spec.base_url", CodePrivateAddress}, {"members[france].spec.base_url", CodePrivateAddress}},
		},
		{
			name: "R-SEC-2 managed records may use plain http and private addresses",
			edit: func(r *Record) {
				r.Managed = true
				r.Members[0].Spec.BaseUrl = "http://10.0.0.5/v1"
			},
		},
		{
			name: "R-SEC-2 internal records may use plain http and private addresses",
			edit: func(r *Record) {
				r.Spec.Internal = true
				r.Members[0].Spec.BaseUrl = "http://192.168.1.20/v1"
			},
		},
		{
			name: "R-SEC-2 malformed, credentialed and non-http URLs",
			edit: func(r *Record) {
				r.Members[0].Spec.BaseUrl = "ftp://files.example.com"
				r.Members[1].Spec.BaseUrl = "https://user:pw@acme-france.openai.azure.com/openai#x"
			},
			want: []fc{{"members[sweden].spec.base_url", CodeInvalidURL}, {"members[france].spec.base_url", CodeInvalidURL}, {"members[france].spec.base_url", CodeInvalidURL}},
		},
		{
			name:  "R-SEC-2 token_url follows the base_url rules",
			build: plainOpenAI,
			edit: func(r *Record) {
				r.Spec.Auth = &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_OAUTH2, TokenUrl: "http://idp.example.com/token", ClientId: "c", ClientSecretSecret: "client-pass"}
			},
			want: []fc{{"spec.auth.token_url", CodeNotHTTPS}},
		},
		{
			name:  "R-SEC-3 SigV4 needs an access key secret, a signing region and a service",
			build: bedrockPool,
			edit:  func(r *Record) { r.Members[0].Spec.Auth = &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_SIGV4} },
			want: []fc{
				{"members[stockholm].spec.auth.access_key_secret", CodeRequired},
				{"members[stockholm].spec.auth.aws_region", CodeRequired},
				{"members[stockholm].spec.auth.aws_service", CodeRequired},
			},
		},
		{
			name:  "R-SEC-3 the record's SigV4 auth is checked when a member inherits it",
			build: bedrockPool,
			edit:  func(r *Record) { r.Members[1].Spec.Auth = nil },
			want: []fc{
				{"spec.auth.access_key_secret", CodeRequired},
				{"spec.auth.aws_region", CodeRequired},
			},
		},
		{
			name:  "R-SEC-3 OAuth2 needs a token URL, a client id and a client secret secret",
			build: plainOpenAI,
			edit:  func(r *Record) { r.Spec.Auth = &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_OAUTH2} },
			want: []fc{
				{"spec.auth.token_url", CodeRequired},
				{"spec.auth.client_id", CodeRequired},
				{"spec.auth.client_secret_secret", CodeRequired},
			},
		},
		{
			name:  "R-SEC-3 API-key auth needs a key secret in effect",
			build: plainOpenAI,
			edit:  func(r *Record) { r.Spec.KeySecret = "" },
			want:  []fc{{"spec.key_secret", CodeRequired}},
		},
		{
			name:  "auth: fields of another kind, unknown headers, a member auth without kind",
			build: bedrockPool,
			edit: func(r *Record) {
				r.Members[0].Spec.Auth.Header = "x-api-key"
				r.Members[1].Spec.Auth = &configv1.Auth{AwsRegion: "eu-west-1"}
			},
			want: []fc{
				{"members[stockholm].spec.auth.header", CodeNotAllowed},
				{"members[ireland].spec.auth", CodeRequired},
				{"spec.auth.access_key_secret", CodeRequired},
				{"spec.auth.aws_region", CodeRequired},
			},
		},
		{
			name: "secrets named must exist in the owner's scope",
			edit: func(r *Record) {
				r.Spec.KeySecret = "nope"
				r.Members[1].Spec.KeySecret = proto.String("Bad Name")
			},
			want: []fc{{"spec.key_secret", CodeUnknownSecret}, {"members[france].spec.key_secret", CodeInvalidName}},
		},
		{
			name: "pool shape: at most 16 members",
			edit: func(r *Record) {
				for i := range 15 {
					r.Members = append(r.Members, &Member{Name: fmt.Sprintf("m%d", i), Spec: &adminv1.PoolMemberSpec{BaseUrl: fmt.Sprintf("https://m%d.example.com", i)}})
				}
			},
			want: []fc{{"members", CodeTooMany}},
		},
		{
			name: "pool shape: no base_url or limits of its own",
			edit: func(r *Record) {
				r.Spec.BaseUrl = "https://x.example.com"
				r.Spec.Limits = &configv1.Limits{Rpm: 5}
			},
			want: []fc{{"spec.base_url", CodeNotAllowed}, {"spec.limits", CodeNotAllowed}},
		},
		{
			name:  "plain shape: a base_url is required",
			build: plainOpenAI,
			edit:  func(r *Record) { r.Spec.BaseUrl = "" },
			want:  []fc{{"spec.base_url", CodeRequired}},
		},
		{
			name: "weights 1-10000 and orders 1-100",
			edit: func(r *Record) {
				r.Members[0].Spec.Weight = 10001
				r.Members[1].Spec.Order = 101
			},
			want: []fc{{"members[sweden].spec.weight", CodeOutOfRange}, {"members[france].spec.order", CodeOutOfRange}},
		},
		{
			name: "R-ELIG-3 regions are 1-64 of [A-Za-z0-9_-]; allowed regions names or globs",
			edit: func(r *Record) {
				r.Spec.Region = "eu north"
				r.Members[0].Spec.Region = proto.String("eu/north")
				r.Spec.AllowedRegions = []string{"eu-*", "eu[1]"}
			},
			want: []fc{{"spec.region", CodeInvalidValue}, {"spec.allowed_regions[1]", CodeInvalidValue}, {"members[sweden].spec.region", CodeInvalidValue}},
		},
		{
			name: "models: required, valid, unique; member models and model map keys are record models",
			edit: func(r *Record) {
				r.Spec.Models = append(r.Spec.Models, &configv1.Model{Name: "gpt-x"}, &configv1.Model{Name: "has space"})
				r.Members[0].Spec.Models = []string{"gpt-y"}
				r.Members[0].Spec.ModelMap = map[string]string{"gpt-z": "dep"}
			},
			want: []fc{
				{"spec.models[1].name", CodeDuplicate},
				{"spec.models[2].name", CodeInvalidValue},
				{"members[sweden].spec.models[0]", CodeNotAModel},
				{"members[sweden].spec.model_map[gpt-z]", CodeNotAModel},
			},
		},
		{
			name:  "models: a record serves at least one",
			build: plainOpenAI,
			edit:  func(r *Record) { r.Spec.Models, r.Spec.Prices = nil, nil },
			want:  []fc{{"spec.models", CodeRequired}},
		},
		{
			name: "R-COST-4 prices are not negative and name record models",
			edit: func(r *Record) {
				r.Members[1].Spec.Prices = []*configv1.Price{price("gpt-x", 1, -2, 3), price("gpt-q", 1, 1, 1)}
			},
			want: []fc{
				{"members[france].spec.prices[0].output_micros", CodeNegative},
				{"members[france].spec.prices[1].model", CodeNotAModel},
			},
		},
		{
			name: "R-COST-4 a member price where the record has none must be whole (openai: input, output, cache read)",
			edit: func(r *Record) { r.Members[1].Spec.Prices = []*configv1.Price{price("gpt-x", 2_750_000, 11_000_000)} },
			want: []fc{{"members[france].spec.prices[0]", CodePriceNotWhole}},
		},
		{
			name:  "R-COST-4 on bedrock a whole price includes cache write",
			build: bedrockPool,
			edit: func(r *Record) {
				r.Spec.Prices = nil
				r.Members[0].Spec.Prices = []*configv1.Price{price("claude-x", 1, 2, 3)}
			},
			want: []fc{{"members[stockholm].spec.prices[0]", CodePriceNotWhole}},
		},
		{
			name:  "R-COST-4 a member price merges over the record's: parts may be left out",
			build: bedrockPool,
			edit:  func(r *Record) { r.Members[0].Spec.Prices = []*configv1.Price{price("claude-x", 4_000_000)} },
		},
		{
			name:  "R-COST-4 a record price lacking parts must be completed by every member",
			build: bedrockPool,
			edit: func(r *Record) {
				r.Spec.Prices = []*configv1.Price{price("claude-x", 1, 2, 3)}
				r.Members[0].Spec.Prices = []*configv1.Price{price("claude-x", skip, skip, skip, 4)}
			},
			want: []fc{{"members[ireland].spec.prices", CodePriceNotWhole}},
		},
		{
			name:  "R-COST-4 a plain record's price must be whole; record prices give input and output",
			build: plainOpenAI,
			edit: func(r *Record) {
				r.Spec.Prices = []*configv1.Price{price("gpt-x", 1, 2), price("text-embed", skip, 1, 0)}
			},
			want: []fc{
				{"spec.prices[1].input_micros", CodeRequired},
				{"spec.prices[0]", CodePriceNotWhole},
				{"spec.prices[1]", CodePriceNotWhole},
			},
		},
		{
			name:  "R-COST-4 a model priced twice",
			build: plainOpenAI,
			edit:  func(r *Record) { r.Spec.Prices = append(r.Spec.Prices, price("gpt-x", 1, 1, 1)) },
			want:  []fc{{"spec.prices[1].model", CodeDuplicate}},
		},
		{
			name: "durations are not negative and whole milliseconds; limits not negative",
			edit: func(r *Record) {
				r.Spec.Recovery = &configv1.Recovery{MaxWait: durationpb.New(-1e9), AttemptDeadline: durationpb.New(1500)}
				r.Members[0].Spec.Limits = &configv1.Limits{Rpm: -1}
			},
			want: []fc{
				{"spec.recovery.attempt_deadline", CodeInvalidValue},
				{"spec.recovery.max_wait", CodeNegative},
				{"members[sweden].spec.limits.rpm", CodeNegative},
			},
		},
		{
			name: "tags: keys and values 1-64 characters",
			edit: func(r *Record) { r.Spec.Tags = map[string]string{"": "x", "ok": ""} },
			want: []fc{{"spec.tags[]", CodeInvalidValue}, {"spec.tags[ok]", CodeInvalidValue}},
		},
		{
			name: "rate limit headers: known keys and header names",
			edit: func(r *Record) {
				r.Spec.RateLimitHeaders = map[string]string{"requests-limit": "x-rl-limit", "bogus": "x", "tokens-reset": "bad header"}
			},
			want: []fc{{"spec.rate_limit_headers[bogus]", CodeInvalidValue}, {"spec.rate_limit_headers[tokens-reset]", CodeInvalidValue}},
		},
		{
			name: "wire format and auth kind are required",
			edit: func(r *Record) {
				r.Spec.WireFormat = configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED
				r.Spec.Auth = nil
			},
			want: []fc{{"spec.wire_format", CodeRequired}, {"spec.auth.kind", CodeRequired}},
		},
		{
			name: "every problem is listed, not just the first",
			edit: func(r *Record) {
				r.Name = "X"
				r.Members[0].Spec.BaseUrl = "http://example.com"
				r.Members[0].Spec.Weight = 0xffffff
				r.Members[1].Spec.Region = proto.String("!")
				r.Members[1].Spec.Prices = []*configv1.Price{price("gpt-x", 1)}
			},
			want: []fc{
				{"name", CodeInvalidName},
				{"members[sweden].spec.base_url", CodeNotHTTPS},
				{"members[sweden].spec.weight", CodeOutOfRange},
				{"members[france].spec.region", CodeInvalidValue},
				{"members[france].spec.prices[0]", CodePriceNotWhole},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			build := tt.build
			if build == nil {
				build = azurePool
			}
			r := build()
			tt.edit(r)
			before := r.clone()
			assertProblems(t, Validate(r, Env{Secrets: testSecrets}), tt.want)
			if !recordEqual(before, r) {
				t.Errorf("Validate changed the record")
			}
		})
	}
}

func recordEqual(a, b *Record) bool {
	if a.Name != b.Name || a.Pool != b.Pool || a.Managed != b.Managed || !proto.Equal(a.Spec, b.Spec) || len(a.Members) != len(b.Members) {
		return false
	}
	for i := range a.Members {
		if a.Members[i].Name != b.Members[i].Name || !proto.Equal(a.Members[i].Spec, b.Members[i].Spec) {
			return false
		}
	}
	return true
}

func TestValidateProblemsAreErrors(t *testing.T) {
	t.Parallel()
	r := azurePool()
	r.Name = ""
	err := Validate(r, Env{})
	if err == nil {
		t.Fatal("no error")
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("error does not wrap ErrInvalid: %v", err)
	}
}

// TestPriceMessagesSpeakWords checks that a price that is not whole is
// explained in the words people use for its parts (the CLI's --price
// IN,OUT,CR,CW, the console's columns), never in proto field names, and
// names the model and the way out.
func TestPriceMessagesSpeakWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		build func() *Record
		edit  func(r *Record)
		want  []string
	}{
		{"member price without a record price", bedrockPool, func(r *Record) {
			r.Spec.Prices = nil
			r.Members[0].Spec.Prices = []*configv1.Price{price("claude-x", 3_000_000, 15_000_000)}
		}, []string{`a member price must be whole when the record has no price for "claude-x": it lacks cache read and cache write`, "0 for a part the provider does not charge"}},
		{"plain record price", plainOpenAI, func(r *Record) {
			r.Spec.Prices = []*configv1.Price{price("gpt-x", 1, 2)}
		}, []string{`the price of "gpt-x" lacks cache read: a price must be whole`}},
	} {
		r := tc.build()
		tc.edit(r)
		problems := Problems(Validate(r, Env{}))
		var msgs []string
		for _, p := range problems {
			if p.Code == CodePriceNotWhole {
				msgs = append(msgs, p.Message)
			}
		}
		if len(msgs) != 1 {
			t.Errorf("%s: %d price_not_whole problems, want 1: %v", tc.name, len(msgs), problems)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(msgs[0], w) {
				t.Errorf("%s: message %q lacks %q", tc.name, msgs[0], w)
			}
		}
		if strings.Contains(msgs[0], "_micros") {
			t.Errorf("%s: message speaks proto field names: %q", tc.name, msgs[0])
		}
	}
}
