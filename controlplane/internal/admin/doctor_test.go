package admin

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/db/sqlc"
)

// TestSharedAccountsDeclaredAccounts checks that members declaring
// different accounts are not reported as one (R-SEC-4 after the operator's
// word), that members declaring none or the same one still are, and that
// each case gets its own hint.
func TestSharedAccountsDeclaredAccounts(t *testing.T) {
	t.Parallel()
	member := func(name, host string, account pgtype.Text) sqlc.PoolMember {
		return sqlc.PoolMember{Name: name, BaseURL: "https://" + host + "/v1", Account: account, Tags: []byte(`{}`)}
	}
	none := pgtype.Text{}
	pool := func(recAccount string, ms ...sqlc.PoolMember) record {
		return record{rec: sqlc.ProviderRecord{Name: "p", Pool: true, KeySecret: text("k"), Tags: []byte(`{}`), Account: recAccount}, members: ms}
	}
	tests := []struct {
		name string
		rec  record
		want []string // "what members", what: secret or host
	}{
		{"no accounts: shared secret and host", pool("", member("a", "h", none), member("b", "h", none)),
			[]string{"secret [a b]", "host [a b]"}},
		{"different accounts on one host with one secret", pool("", member("a", "h", text("x")), member("b", "h", text("y"))), nil},
		{"the same account", pool("", member("a", "h", text("x")), member("b", "h", text("x"))),
			[]string{"secret [a b]", "host [a b]"}},
		{"the record's account inherited by both", pool("x", member("a", "h", none), member("b", "h", none)),
			[]string{"secret [a b]", "host [a b]"}},
		{"the record's account against a member's own", pool("x", member("a", "h", none), member("b", "h", text("y"))), nil},
		{"an empty member account declares none", pool("x", member("a", "h", text("")), member("b", "h", text("y"))),
			[]string{"secret [a b]", "host [a b]"}},
		{"one member without an account among declared ones",
			pool("", member("a", "h", text("x")), member("b", "h", text("y")), member("c", "h", none)),
			[]string{"secret [a b c]", "host [a b c]"}},
		{"two of three share a declared account",
			pool("", member("a", "h", text("x")), member("b", "h", text("y")), member("c", "h", text("x"))),
			[]string{"secret [a c]", "host [a c]"}},
		{"separate hosts, different accounts, one secret", pool("", member("a", "h1", text("x")), member("b", "h2", text("y"))), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, f := range sharedAccounts("t", []record{tc.rec}) {
				what := "host"
				if strings.Contains(f.GetMessage(), "key secret") {
					what = "secret"
				}
				got = append(got, fmt.Sprintf("%s %v", what, f.GetMembers()))
				if f.GetCode() != "shared_account" || f.GetRecord() != "p" || f.GetTenant() != "t" {
					t.Errorf("finding %v", f)
				}
				// The hint answers the case reported: another key for a shared
				// secret, a distinct account for one host.
				if hint := f.GetHint(); what == "secret" && !strings.Contains(hint, "key of its own account") ||
					what == "host" && (!strings.Contains(hint, "separate accounts on one host") || strings.Contains(hint, "key")) ||
					strings.Contains(hint, "same account") {
					t.Errorf("%s finding's hint %q does not fit the case", what, hint)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}
