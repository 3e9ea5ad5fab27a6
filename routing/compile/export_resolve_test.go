package compile

import (
	"testing"

	"google.golang.org/protobuf/proto"

	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// Resolve gives what Record gives for a record without problems, and for one
// with problems the record compiled as far as it goes with every problem.
func TestResolve(t *testing.T) {
	r := &configv1.ProviderRecord{
		Id: "r1", Name: "pool", WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI,
		Auth:    &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "api-key"},
		Region:  "eu",
		Account: "org",
		Models:  []*configv1.Model{{Name: "m"}},
		Members: []*configv1.Member{
			{Name: "a", BaseUrl: "https://a.example.com", KeySecret: proto.String("ka")},
			{Name: "b", BaseUrl: "https://b.example.com", KeySecret: proto.String("kb"), Account: proto.String("")},
		},
	}
	want, err := Record(r, false)
	if err != nil {
		t.Fatal(err)
	}
	got, problems := Resolve(r, false)
	if problems != nil || len(got.Members) != 2 || got.Members[0].Region != want.Members[0].Region ||
		got.Members[1].Account != "secret:kb" || got.Members[0].Account != "org" {
		t.Fatalf("Resolve = %+v, %v", got, problems)
	}
	if a, b := DeclaredAccount(r, r.Members[0]), DeclaredAccount(r, r.Members[1]); a != "org" || b != "" {
		t.Errorf("declared accounts = %q, %q", a, b)
	}
	if DeclaredAccount(r, nil) != "org" {
		t.Error("a plain record's member declares the record's account")
	}

	r.Members[1].Weight = 20_000
	got, problems = Resolve(r, false)
	if len(problems) != 1 || problems[0].Field != "weight" {
		t.Fatalf("problems = %v", problems)
	}
	if got.Members[1].Weight != 20_000 || got.Members[1].KeySecret != "kb" || got.Members[1].Region != "eu" {
		t.Errorf("member b = %+v", got.Members[1])
	}
	if _, err := Record(r, false); len(Problems(err)) != 1 {
		t.Errorf("Record = %v, want the same problem", err)
	}
}
