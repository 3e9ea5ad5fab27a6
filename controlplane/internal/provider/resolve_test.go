package provider

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

func TestEffectiveInheritance(t *testing.T) {
	t.Parallel()
	r := azurePool()
	r.Spec.Account = ""
	sweden, france := r.member("sweden"), r.member("france")

	got := Effective(r, sweden)
	want := &adminv1.EffectiveMember{
		BaseUrl:          "https://acme-sweden.openai.azure.com/openai",
		Auth:             &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "api-key"},
		KeySecret:        "azure-key",
		Region:           "eu-north",
		Tags:             map[string]string{"team": "ml", "env": "prod"},
		Weight:           1,
		Order:            1,
		Models:           []string{"gpt-x"},
		ModelMap:         map[string]string{"gpt-x": "gpt-x-sweden"},
		Account:          "secret:azure-key",
		ApiVersion:       AzureAPIVersion,
		Prices:           nil, // sweden serves gpt-x without any price
		InheritedFields:  []string{"auth", "key_secret", "retains_data", "models", "api_version", "wire_format"},
		WireFormat:       configv1.WireFormat_WIRE_FORMAT_OPENAI,
		InheritedTagKeys: []string{"env", "team"},
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("sweden (-want +got):\n%s", diff)
	}

	got = Effective(r, france)
	want = &adminv1.EffectiveMember{
		BaseUrl:    "https://acme-france.openai.azure.com/openai",
		Auth:       &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "api-key"},
		KeySecret:  "azure-fr",
		Region:     "eu-west",
		Tags:       map[string]string{"team": "ml", "env": "staging"},
		Weight:     2,
		Order:      1,
		Models:     []string{"gpt-x"},
		Account:    "secret:azure-fr",
		ApiVersion: AzureAPIVersion,
		Prices: []*adminv1.ResolvedPrice{{
			Price: price("gpt-x", 2_750_000, 11_000_000, 275_000),
			Whole: true,
		}},
		InheritedFields:  []string{"auth", "retains_data", "models", "api_version", "wire_format"},
		WireFormat:       configv1.WireFormat_WIRE_FORMAT_OPENAI,
		InheritedTagKeys: []string{"team"},
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("france (-want +got):\n%s", diff)
	}
}

func TestEffectivePricesMergePerPart(t *testing.T) {
	t.Parallel()
	r := bedrockPool()
	r.member("stockholm").Spec.Prices = []*configv1.Price{price("claude-x", 4_000_000)}
	got := Effective(r, r.member("stockholm")).GetPrices()
	want := []*adminv1.ResolvedPrice{{
		Price:          price("claude-x", 4_000_000, 15_000_000, 300_000, 3_750_000),
		InheritedParts: []string{"output", "cache_read", "cache_write"},
		Whole:          true,
	}}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("prices (-want +got):\n%s", diff)
	}
	// The access key secret is the account of a SigV4 member (R-ORDER-4).
	if a := Effective(r, r.member("ireland")).GetAccount(); a != "secret:aws" {
		t.Errorf("account = %q, want secret:aws", a)
	}
}

func TestEffectivePrimaryOfPlainRecord(t *testing.T) {
	t.Parallel()
	r := plainOpenAI()
	r.Spec.Limits = &configv1.Limits{Rpm: 100}
	got := Effective(r, nil)
	if got.GetBaseUrl() != OpenAIBaseURL || got.GetLimits().GetRpm() != 100 || got.GetKeySecret() != "oai" {
		t.Errorf("primary = %v", got)
	}
	wantInherited := []string{"base_url", "auth", "key_secret", "region", "retains_data", "limits", "models", "api_version", "wire_format"}
	if diff := cmp.Diff(wantInherited, got.GetInheritedFields()); diff != "" {
		t.Errorf("inherited (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"gpt-x", "text-embed"}, got.GetModels()); diff != "" {
		t.Errorf("models (-want +got):\n%s", diff)
	}
}

func TestEffectiveOwnAuthReplacesTheRecordsWhole(t *testing.T) {
	t.Parallel()
	r := azurePool()
	m := r.member("sweden")
	m.Spec.Auth = &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_NONE}
	m.Spec.RetainsData = new(bool)
	*m.Spec.RetainsData = true
	m.Spec.Account = new(string)
	*m.Spec.Account = "sub-1"
	got := Effective(r, m)
	if got.GetAuth().GetKind() != configv1.AuthKind_AUTH_KIND_NONE || got.GetAuth().GetHeader() != "" {
		t.Errorf("auth = %v, want the member's own", got.GetAuth())
	}
	if !got.GetRetainsData() || got.GetAccount() != "sub-1" {
		t.Errorf("retains_data, account = %v, %q", got.GetRetainsData(), got.GetAccount())
	}
	for _, f := range got.GetInheritedFields() {
		if f == "auth" || f == "retains_data" || f == "account" {
			t.Errorf("%s marked inherited", f)
		}
	}
}

func TestPriceEntries(t *testing.T) {
	t.Parallel()
	r := azurePool()
	got := PriceEntries(r, "")
	if len(got) != 2 {
		t.Fatalf("entries = %v", got)
	}
	// By member name: france, then sweden, which has no price (visible, not whole).
	if got[0].GetMember() != "france" || !got[0].GetPrice().GetWhole() || got[0].GetRecordPriced() {
		t.Errorf("france entry = %v", got[0])
	}
	if got[1].GetMember() != "sweden" || got[1].GetPrice().GetWhole() || got[1].GetPrice().GetPrice().InputMicros != nil {
		t.Errorf("sweden entry = %v", got[1])
	}
	r.member("sweden").Spec.Prices = []*configv1.Price{price("gpt-x", 1, 2, 3)}
	for _, e := range PriceEntries(r, "gpt-x") {
		if !e.GetRecordPriced() {
			t.Errorf("every member has a whole price: %v not record_priced", e)
		}
	}
}

// A record the edges' compiler refuses is still shown: each member as the
// compiler resolves it, and one record_refused warning per problem.
func TestEffectiveOfARefusedRecord(t *testing.T) {
	t.Parallel()
	r := azurePool()
	r.member("france").Spec.Weight = 20_000 // above the compiler's 10000
	r.member("france").Spec.Region = proto.String("EU WEST")

	got := Effective(r, r.member("france"))
	if got.GetKeySecret() != "azure-fr" || got.GetAuth().GetHeader() != "api-key" || got.GetTags()["team"] != "ml" ||
		len(got.GetPrices()) != 1 || !got.GetPrices()[0].GetWhole() {
		t.Errorf("france's resolved fields = %v", got)
	}
	// What a problem is about is left as the compiler converts it, which
	// is as given: the compiler's conversion checks nothing
	// (compile.CheckRecord does).
	if got.GetWeight() != 20_000 || got.GetRegion() != "EU WEST" {
		t.Errorf("weight, region = %d, %q", got.GetWeight(), got.GetRegion())
	}
	if s := Effective(r, r.member("sweden")); s.GetKeySecret() != "azure-key" || s.GetRegion() != "eu-north" {
		t.Errorf("sweden = %v", s)
	}

	var refused []string
	for _, w := range Warnings(r, Env{}) {
		if w.GetCode() == WarnRecordRefused {
			refused = append(refused, w.GetMessage())
		}
	}
	if len(refused) != 2 || !strings.Contains(refused[0], `member "france": region:`) ||
		!strings.Contains(refused[1], `member "france": weight: must be 1-10000, got 20000`) {
		t.Errorf("record_refused warnings = %q", refused)
	}
	if ws := Warnings(azurePool(), Env{}); slices.ContainsFunc(ws, func(w *adminv1.Warning) bool { return w.GetCode() == WarnRecordRefused }) {
		t.Errorf("a valid record is refused: %v", ws)
	}
}

// The account keeps the API's contract: a member that declares none and
// signs with no secret has none, where the compiler groups it alone under
// its own id.
func TestEffectiveAccountWithoutSecret(t *testing.T) {
	t.Parallel()
	r := azurePool()
	r.Spec.Account = ""
	m := r.member("sweden")
	m.Spec.Auth = &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_NONE}
	if a := Effective(r, m).GetAccount(); a != "" {
		t.Errorf("account = %q, want empty", a)
	}
	m.Spec.Account = proto.String("sub-1")
	if a := Effective(r, m).GetAccount(); a != "sub-1" {
		t.Errorf("account = %q, want sub-1", a)
	}
}

// Auth is shown as the compiler resolves it: API-key auth naming no header
// uses the wire format's usual one.
func TestEffectiveAuthAsCompiled(t *testing.T) {
	t.Parallel()
	r := azurePool()
	r.Spec.WireFormat = configv1.WireFormat_WIRE_FORMAT_ANTHROPIC
	r.Spec.Auth = &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY}
	got := Effective(r, r.member("sweden")).GetAuth()
	want := &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "x-api-key"}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("auth (-want +got):\n%s", diff)
	}
}
