package compile

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// validPool is a pool CheckRecord accepts: two members, one with its own
// SigV4 auth.
func validPool() *configv1.ProviderRecord {
	return &configv1.ProviderRecord{
		Name: "pool", WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI,
		Auth:      &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "api-key"},
		KeySecret: "key",
		Models:    []*configv1.Model{{Name: "gpt-x"}},
		Prices:    []*configv1.Price{{Model: "gpt-x", InputMicros: proto.Int64(1), OutputMicros: proto.Int64(2), CacheReadMicros: proto.Int64(0)}},
		Members: []*configv1.Member{
			{Name: "a", BaseUrl: "https://a.example.com", Weight: 2},
			{Name: "b", BaseUrl: "https://b.example.com", Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_SIGV4,
				AwsService: "bedrock", AwsRegion: "eu-west-1", AccessKeySecret: "aws"}},
		},
	}
}

// CheckRecord locates every problem by member index and field path, with a
// stable code, in the order of the record.
func TestCheckRecordLocatesProblems(t *testing.T) {
	if got := CheckRecord(validPool(), RecordRules{}); len(got) != 0 {
		t.Fatalf("valid pool: %v", got)
	}
	r := validPool()
	r.Limits = &configv1.Limits{Rpm: 5}
	r.Tags = map[string]string{"team": " padded"}
	r.Members[0].Weight = 20000
	r.Members[1].Auth.AwsRegion = ""
	r.Members[1].Prices = []*configv1.Price{{Model: "gpt-y", InputMicros: proto.Int64(-1)}}
	r.Recovery = &configv1.Recovery{}
	type pc struct {
		Member      int
		Field, Code string
	}
	var got []pc
	for _, p := range CheckRecord(r, RecordRules{}) {
		got = append(got, pc{p.Member, p.Field, p.Code})
	}
	want := []pc{
		{-1, "limits", CodeNotAllowed},
		{-1, "tags[team]", CodeInvalidValue},
		{0, "weight", CodeOutOfRange},
		{1, "auth.aws_region", CodeRequired},
		{1, "prices[0].model", CodeNotAModel},
		{1, "prices[0].input_micros", CodeNegative},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// The options the admin API sets only add rules: a named auth kind, a pool
// without members, secrets that exist.
func TestCheckRecordRules(t *testing.T) {
	r := validPool()
	r.Auth.Kind = configv1.AuthKind_AUTH_KIND_UNSPECIFIED
	if got := CheckRecord(r, RecordRules{}); len(got) != 0 {
		t.Fatalf("an unnamed kind with a header is API-key auth to an edge: %v", got)
	}
	got := CheckRecord(r, RecordRules{NamedAuthKind: true})
	if len(got) != 1 || got[0].Field != "auth.kind" || got[0].Code != CodeRequired {
		t.Errorf("NamedAuthKind: %v", got)
	}

	empty := validPool()
	empty.Members = nil
	got = CheckRecord(empty, RecordRules{Pool: true})
	if len(got) != 1 || got[0].Field != "members" || got[0].Code != CodeRequired {
		t.Errorf("Pool without members: %v", got)
	}

	known := map[string]bool{"key": true}
	got = CheckRecord(validPool(), RecordRules{SecretKnown: func(n string) bool { return known[n] }, SecretScope: "the tenant's secrets"})
	if len(got) != 1 || got[0].Member != 1 || got[0].Field != "auth.access_key_secret" || got[0].Code != CodeUnknownSecret {
		t.Errorf("SecretKnown: %v", got)
	}
}

// Compile refuses a snapshot for exactly the problems CheckRecord finds in
// its records, each named by record and member.
func TestCompileUsesCheckRecord(t *testing.T) {
	r := validPool()
	r.Id = "r1"
	r.Members[0].BaseUrl = "http://a.example.com"
	ts := &configv1.TenantSnapshot{Tenant: &configv1.Tenant{Id: "t", Name: "t"}, Records: []*configv1.ProviderRecord{r}}
	_, err := Compile(ts, nil)
	ps := Problems(err)
	if len(ps) != 1 || ps[0].Where != `record "pool" member "a"` || ps[0].Field != "base_url" || ps[0].Code != CodeNotHTTPS {
		t.Fatalf("problems %v", ps)
	}
	if _, err := Record(r, false); err == nil {
		t.Error("Record accepted what Compile refused")
	}
	r.Internal = true // cluster-owned: plain http allowed (R-SEC-2)
	if _, err := Record(r, false); err != nil {
		t.Errorf("internal record: %v", err)
	}
}

// problemCodes lists CheckRecord's problems as member, field and code.
func problemCodes(r *configv1.ProviderRecord) []string {
	var out []string
	for _, p := range CheckRecord(r, RecordRules{}) {
		out = append(out, sprintf("%d %s %s", p.Member, p.Field, p.Code))
	}
	return out
}

// geminiMember is a Vertex AI member of its own format in an openai pool.
func geminiMember() *configv1.Member {
	return &configv1.Member{Name: "vertex", BaseUrl: "https://europe-west4-aiplatform.googleapis.com/v1/projects/p/locations/europe-west4/publishers/google",
		WireFormat: configv1.WireFormat_WIRE_FORMAT_GEMINI, KeySecret: proto.String("sa"),
		Auth:   &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_GOOGLE_SERVICE_ACCOUNT},
		Prices: []*configv1.Price{{Model: "gpt-x", CacheReadMicros: proto.Int64(0)}}}
}

// R-FMT-4: a member may speak its own format, gemini among them, and sign
// with a Google service account; that auth needs a key secret and a gemini
// endpoint. Every problem is reported at once.
func TestCheckRecordMemberFormatAndGoogleAuth(t *testing.T) {
	r := validPool()
	r.Members = append(r.Members, geminiMember())
	if got := problemCodes(r); len(got) != 0 {
		t.Fatalf("a gemini member with a service account in an openai pool (R-FMT-4): %v", got)
	}

	r.Members[2].KeySecret = nil
	r.KeySecret = ""
	r.Auth = &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_GOOGLE_SERVICE_ACCOUNT}
	r.Members[1].Auth = nil // member b inherits the record's google auth, but speaks openai
	r.Members = append(r.Members, &configv1.Member{Name: "bad", BaseUrl: "https://x.example.com", WireFormat: 99})
	got := problemCodes(r)
	want := []string{
		"0 key_secret required",       // a: inherits google auth without a key secret
		"0 wire_format wire_mismatch", // a: openai
		"1 key_secret required",       // b likewise
		"1 wire_format wire_mismatch", //
		"2 key_secret required",       // vertex: its own google auth, no key secret
		"3 wire_format invalid_value", // unknown format
		"3 key_secret required",       // bad: inherits google auth
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}

	plain := &configv1.ProviderRecord{Name: "p", WireFormat: configv1.WireFormat_WIRE_FORMAT_ANTHROPIC, BaseUrl: "https://a.example.com",
		KeySecret: "sa", Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_GOOGLE_SERVICE_ACCOUNT, Header: "x-api-key"},
		Models: []*configv1.Model{{Name: "m"}},
		Prices: []*configv1.Price{{Model: "m", InputMicros: proto.Int64(1), OutputMicros: proto.Int64(1), CacheReadMicros: proto.Int64(0), CacheWriteMicros: proto.Int64(0)}}}
	want = []string{"-1 auth.kind wire_mismatch", "-1 auth.header not_allowed"}
	if diff := cmp.Diff(want, problemCodes(plain)); diff != "" {
		t.Errorf("google auth on an anthropic record (-want +got):\n%s", diff)
	}
}

// R-HEAD-6, R-CAP-1: rpd and max_in_flight are bounded, day_zone is an
// IANA zone, and a pool declares neither: its members do.
func TestCheckRecordDayLimits(t *testing.T) {
	r := validPool()
	r.DayZone = "America/Los_Angeles"
	r.Members[0].Limits = &configv1.Limits{Rpd: 1_000_000_000, MaxInFlight: 1_000_000}
	if got := problemCodes(r); len(got) != 0 {
		t.Fatalf("limits at their bounds: %v", got)
	}
	r.DayZone = "Mars/Olympus_Mons"
	r.Limits = &configv1.Limits{MaxInFlight: 4}
	r.Members[0].Limits = &configv1.Limits{Rpd: 1_000_000_001, MaxInFlight: -1}
	r.Members[1].Limits = &configv1.Limits{MaxInFlight: 1_000_001, Rpd: -5}
	want := []string{
		"-1 limits not_allowed",
		"-1 day_zone invalid_value",
		"0 limits.rpd out_of_range",
		"0 limits.max_in_flight negative",
		"1 limits.rpd negative",
		"1 limits.max_in_flight out_of_range",
	}
	if diff := cmp.Diff(want, problemCodes(r)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	for _, z := range []string{"Local", "../../etc/passwd", "/etc/localtime", string(make([]byte, 300))} {
		r := validPool()
		r.DayZone = z
		if got := problemCodes(r); len(got) != 1 || got[0] != "-1 day_zone invalid_value" {
			t.Errorf("day_zone %q: %v", z, got)
		}
	}
	plain := &configv1.ProviderRecord{Name: "p", WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI, BaseUrl: "https://a.example.com",
		Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_NONE}, Models: []*configv1.Model{{Name: "m"}}, DayZone: "UTC",
		Limits: &configv1.Limits{Rpd: 1000, MaxInFlight: 5},
		Prices: []*configv1.Price{{Model: "m", InputMicros: proto.Int64(1), OutputMicros: proto.Int64(1), CacheReadMicros: proto.Int64(0)}}}
	if got := problemCodes(plain); len(got) != 0 {
		t.Errorf("a plain record declares rpd and max_in_flight (R-HEAD-6, R-CAP-1): %v", got)
	}
}

// R-FMT-7: an embeddings model needs an openai or gemini endpoint.
func TestCheckRecordEmbeddingsNeedOpenAIOrGemini(t *testing.T) {
	r := validPool()
	r.WireFormat = configv1.WireFormat_WIRE_FORMAT_ANTHROPIC
	r.Auth = &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY}
	r.Members[1].Auth = nil
	r.Models = append(r.Models, &configv1.Model{Name: "embed-x", Kind: configv1.ModelKind_MODEL_KIND_EMBEDDINGS})
	r.Prices[0].CacheWriteMicros = proto.Int64(0)
	r.Prices = append(r.Prices, &configv1.Price{Model: "embed-x", InputMicros: proto.Int64(1), OutputMicros: proto.Int64(0), CacheReadMicros: proto.Int64(0), CacheWriteMicros: proto.Int64(0)})
	if diff := cmp.Diff([]string{"-1 models[1].kind wire_mismatch"}, problemCodes(r)); diff != "" {
		t.Errorf("anthropic pool with an embeddings model (-want +got):\n%s", diff)
	}
	g := geminiMember()
	g.Prices = nil
	g.Models = []string{"embed-x"}
	r.Members = append(r.Members, g)
	if got := problemCodes(r); len(got) != 0 {
		t.Errorf("a gemini member serves the embeddings (R-FMT-7): %v", got)
	}
}

// R-COST-4 with R-FMT-4: whether a price must give cache writes is judged
// by each member's own format.
func TestCheckRecordCacheWritesByMemberFormat(t *testing.T) {
	r := validPool() // openai: the record's price has no cache write part
	r.Members[0].WireFormat = configv1.WireFormat_WIRE_FORMAT_ANTHROPIC
	r.Members[0].Auth = &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "x-api-key"}
	if diff := cmp.Diff([]string{"0 prices price_not_whole"}, problemCodes(r)); diff != "" {
		t.Errorf("anthropic member without a cache write price (-want +got):\n%s", diff)
	}
	r.Members[0].Prices = []*configv1.Price{{Model: "gpt-x", CacheWriteMicros: proto.Int64(3)}}
	if got := problemCodes(r); len(got) != 0 {
		t.Errorf("the member prices its cache writes: %v", got)
	}
}
