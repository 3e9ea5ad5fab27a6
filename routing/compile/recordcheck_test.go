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
