package provider

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

type warn struct {
	Code    string
	Members []string
}

func warnings(ws []*adminv1.Warning) []warn {
	var out []warn
	for _, w := range ws {
		out = append(out, warn{w.GetCode(), w.GetMembers()})
	}
	return out
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		build func() *Record
		edit  func(r *Record)
		env   Env
		want  []warn
	}{
		{
			name:  "R-SEC-4 members sharing one SigV4 access key secret",
			build: bedrockPool,
			want:  []warn{{WarnSharedKeySecret, []string{"stockholm", "ireland"}}},
		},
		{
			name: "R-SEC-4 members sharing a key secret, one of them by inheritance",
			edit: func(r *Record) { r.member("france").Spec.KeySecret = proto.String("azure-key") },
			want: []warn{{WarnSharedKeySecret, []string{"france", "sweden"}}, {WarnModelUnpriced, nil}},
		},
		{
			name: "R-SEC-4 members reaching one host name, ports aside",
			edit: func(r *Record) {
				r.member("sweden").Spec.BaseUrl = "https://Gateway.example.com:8443/a"
				r.member("france").Spec.BaseUrl = "https://gateway.example.com/b"
			},
			want: []warn{{WarnSharedHost, []string{"france", "sweden"}}, {WarnModelUnpriced, nil}},
		},
		{
			name: "R-SEC-4 no warning for members declaring different accounts on one host with one secret",
			edit: func(r *Record) {
				r.member("sweden").Spec.BaseUrl = "https://gateway.example.com/a"
				r.member("france").Spec.BaseUrl = "https://gateway.example.com/b"
				r.member("france").Spec.KeySecret = proto.String("azure-key")
				r.member("sweden").Spec.Account = proto.String("org-1")
				r.member("france").Spec.Account = proto.String("org-2")
			},
			want: []warn{{WarnModelUnpriced, nil}},
		},
		{
			name: "R-SEC-4 a member's own account apart from the record's one its peer inherits",
			edit: func(r *Record) {
				r.member("france").Spec.KeySecret = proto.String("azure-key")
				r.Spec.Account = "org-1"
				r.member("france").Spec.Account = proto.String("org-2")
			},
			want: []warn{{WarnModelUnpriced, nil}},
		},
		{
			name: "R-SEC-4 still warns when a member declares no account (an empty one) and its peer the record's",
			edit: func(r *Record) {
				r.member("sweden").Spec.BaseUrl = "https://gateway.example.com/a"
				r.member("france").Spec.BaseUrl = "https://gateway.example.com/b"
				r.member("france").Spec.KeySecret = proto.String("azure-key")
				r.Spec.Account = "org-1"
				r.member("sweden").Spec.Account = proto.String("")
			},
			want: []warn{{WarnSharedKeySecret, []string{"france", "sweden"}}, {WarnSharedHost, []string{"france", "sweden"}}, {WarnModelUnpriced, nil}},
		},
		{
			name: "R-SEC-4 still warns for members declaring the same account",
			edit: func(r *Record) {
				r.member("france").Spec.KeySecret = proto.String("azure-key")
				r.member("sweden").Spec.Account = proto.String("org-1")
				r.member("france").Spec.Account = proto.String("org-1")
			},
			want: []warn{{WarnSharedKeySecret, []string{"france", "sweden"}}, {WarnModelUnpriced, nil}},
		},
		{
			name:  "no warning for distinct secrets and hosts on a priced record",
			build: plainOpenAI,
			edit: func(r *Record) {
				r.Spec.Prices = append(r.Spec.Prices, price("text-embed", 1, 0, 0))
			},
		},
		{
			name: "model_unpriced when a member has no whole price and the record none",
			want: []warn{{WarnModelUnpriced, nil}},
		},
		{
			name:  "R-FMT-4 R-COST-4 a gemini member's own price is whole without cache write, though the record bills cache writes",
			build: bedrockPool,
			edit: func(r *Record) {
				r.Spec.Prices = nil
				for _, m := range r.Members {
					m.Spec.Prices = []*configv1.Price{price("claude-x", 3_000_000, 15_000_000, 300_000, 3_750_000)}
				}
				addVertexMember(r)
				r.member("vertex").Spec.Prices = []*configv1.Price{price("claude-x", 300_000, 2_500_000, 75_000)}
			},
			env: Env{Secrets: map[string][]string{"aws": {"bedrock-runtime.eu-north-1.amazonaws.com", "bedrock-runtime.eu-west-1.amazonaws.com"},
				"sa": {"europe-west4-aiplatform.googleapis.com", "oauth2.googleapis.com"}}},
			want: []warn{{WarnSharedKeySecret, []string{"stockholm", "ireland"}}},
		},
		{
			name:  "secret_host_mismatch when a secret is not bound to a member's host (R-SEC-1)",
			build: bedrockPool,
			env:   Env{Secrets: map[string][]string{"aws": {"bedrock-runtime.eu-north-1.amazonaws.com:443"}}},
			want: []warn{
				{WarnSharedKeySecret, []string{"stockholm", "ireland"}},
				{WarnSecretHostMissing, []string{"ireland"}},
			},
		},
		{
			name:  "R-SEC-1 secret_host_mismatch when a vertex member's key is not bound to Google's token host",
			build: bedrockPool,
			edit:  addVertexMember,
			env: Env{Secrets: map[string][]string{"aws": {"bedrock-runtime.eu-north-1.amazonaws.com", "bedrock-runtime.eu-west-1.amazonaws.com"},
				"sa": {"europe-west4-aiplatform.googleapis.com"}}},
			want: []warn{
				{WarnSharedKeySecret, []string{"stockholm", "ireland"}},
				{WarnSecretHostMissing, []string{"vertex"}},
			},
		},
		{
			name:  "R-SEC-1 a vertex member's key bound to oauth2.googleapis.com",
			build: bedrockPool,
			edit:  addVertexMember,
			env: Env{Secrets: map[string][]string{"aws": {"bedrock-runtime.eu-north-1.amazonaws.com", "bedrock-runtime.eu-west-1.amazonaws.com"},
				"sa": {"europe-west4-aiplatform.googleapis.com", "oauth2.googleapis.com"}}},
			want: []warn{{WarnSharedKeySecret, []string{"stockholm", "ireland"}}},
		},
		{
			name:  "rules_refuse_all when data rules refuse every member (R-ELIG-2)",
			build: bedrockPool,
			env:   Env{Rules: &configv1.DataRules{AllowedRegions: []string{"us-*"}}},
			want: []warn{
				{WarnSharedKeySecret, []string{"stockholm", "ireland"}},
				{WarnRulesRefuseAll, nil},
			},
		},
		{
			name:  "rules that admit one member are fine",
			build: bedrockPool,
			env:   Env{Rules: &configv1.DataRules{AllowedRegions: []string{"eu-west-*"}}},
			want:  []warn{{WarnSharedKeySecret, []string{"stockholm", "ireland"}}},
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
			if tt.edit != nil {
				tt.edit(r)
			}
			got := Warnings(r, tt.env)
			if diff := cmp.Diff(tt.want, warnings(got)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			for _, w := range got {
				if w.GetRecord() != r.Name || w.GetMessage() == "" {
					t.Errorf("warning %v lacks record or message", w)
				}
			}
		})
	}
}

// addVertexMember adds a Vertex AI member of its own (gemini) format that
// signs with a Google service account key in secret "sa" (R-FMT-4).
func addVertexMember(r *Record) {
	r.Members = append(r.Members, &Member{Name: "vertex", Spec: &adminv1.PoolMemberSpec{
		BaseUrl: VertexBaseURL("europe-west4", "acme"), WireFormat: configv1.WireFormat_WIRE_FORMAT_GEMINI,
		KeySecret: proto.String("sa"), Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_GOOGLE_SERVICE_ACCOUNT},
		Weight: 1, Order: 3}})
}
