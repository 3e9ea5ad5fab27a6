package recordrow

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"weir.dev/db/sqlc"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// A member's NULL columns leave its optional fields unset (it inherits), a
// set empty value is kept, and limits that are all 0 are no limits.
func TestMemberNullMeansInherit(t *testing.T) {
	t.Parallel()
	got, errs := Member("p", sqlc.PoolMember{
		Name: "eu", BaseURL: "https://eu.example.com", Weight: 2, Order: 1,
		Region:  pgtype.Text{String: "", Valid: true},
		RPM:     pgtype.Int8{Int64: 0, Valid: true},
		Tags:    []byte(`{}`),
		Account: pgtype.Text{String: "sub", Valid: true},
	})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	want := &configv1.Member{Name: "eu", BaseUrl: "https://eu.example.com", Weight: 2, Order: 1,
		Region: proto.String(""), Account: proto.String("sub")}
	if !proto.Equal(got, want) {
		t.Errorf("member =\n%v\nwant\n%v", got, want)
	}
}

// NULL durations stay unset, a zero one is kept; every problem of a row is
// reported, naming the record.
func TestRecordRecoveryAndProblems(t *testing.T) {
	t.Parallel()
	got, errs := Record(sqlc.ProviderRecord{
		Name: "r", Pool: true, WireFormat: "openai", AuthKind: "none",
		AttemptDeadlineMs: pgtype.Int8{Valid: true},
	})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	want := &configv1.Recovery{AttemptDeadline: durationpb.New(0)}
	if !proto.Equal(got.GetRecovery(), want) || !got.GetManaged() {
		t.Errorf("recovery %v managed %v", got.GetRecovery(), got.GetManaged())
	}
	_, errs = Record(sqlc.ProviderRecord{Name: "r", WireFormat: "grpc", AuthKind: "magic", Tags: []byte(`[]`)})
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	all := strings.Join(msgs, "\n")
	for _, w := range []string{`record "r": unknown wire_format "grpc"`, `record "r": unknown auth_kind "magic"`,
		`record "r": a plain record needs a base_url`, `record "r": tags: not a JSON object of strings`} {
		if !strings.Contains(all, w) {
			t.Errorf("problems lack %q:\n%s", w, all)
		}
	}
}
