package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"
)

func TestRequire(t *testing.T) {
	t.Parallel()
	a := pgtype.UUID{Bytes: [16]byte{1}, Valid: true}
	principal := func(grants ...Grant) *Principal { return &Principal{Name: "x", Grants: grants} }
	cluster := principal(Grant{Role: RoleClusterAdmin})
	tadm := principal(Grant{Role: RoleTenantAdmin, TenantID: a, Tenant: "a"})
	padm := principal(Grant{Role: RoleProviderAdmin, TenantID: a, Tenant: "a"})
	cost := principal(Grant{Role: RoleCostOwner, TenantID: a, Tenant: "a"})
	var ok connect.Code // 0: allowed
	tests := []struct {
		name    string
		p       *Principal
		tenant  string
		allowed []Role
		want    connect.Code
	}{
		{"no principal", nil, "a", TenantRoles(), connect.CodeUnauthenticated},
		{"cluster admin, any tenant", cluster, "b", nil, ok},
		{"cluster admin, cluster scope", cluster, "", nil, ok},
		{"tenant admin, cluster scope", tadm, "", TenantRoles(), connect.CodePermissionDenied},
		{"tenant admin reads own tenant", tadm, "a", TenantRoles(), ok},
		{"tenant admin, other tenant", tadm, "b", TenantRoles(), connect.CodeNotFound},
		{"tenant admin, cluster-only RPC on own tenant", tadm, "a", nil, connect.CodePermissionDenied},
		{"provider admin writes secrets", padm, "a", []Role{RoleTenantAdmin, RoleProviderAdmin}, ok},
		{"provider admin writes budgets", padm, "a", []Role{RoleTenantAdmin, RoleCostOwner}, connect.CodePermissionDenied},
		{"cost owner writes budgets", cost, "a", []Role{RoleTenantAdmin, RoleCostOwner}, ok},
		{"cost owner writes secrets", cost, "a", []Role{RoleTenantAdmin, RoleProviderAdmin}, connect.CodePermissionDenied},
		{"cost owner, other tenant", cost, "b", []Role{RoleTenantAdmin, RoleCostOwner}, connect.CodeNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			if tc.p != nil {
				ctx = WithPrincipal(ctx, *tc.p)
			}
			_, err := Require(ctx, tc.tenant, tc.allowed...)
			if got := connect.CodeOf(err); err != nil && got != tc.want || err == nil && tc.want != ok {
				t.Errorf("Require = %v, want code %v", err, tc.want)
			}
		})
	}
	// Another tenant and a tenant that does not exist look the same.
	ctx := WithPrincipal(context.Background(), *tadm)
	_, e1 := Require(ctx, "b")
	if e2 := TenantNotFound("b"); e1.Error() != e2.Error() {
		t.Errorf("refusal %q differs from not-found %q", e1, e2)
	}
}

func TestNewToken(t *testing.T) {
	t.Parallel()
	tok, sum, err := NewToken(bytes.NewReader(bytes.Repeat([]byte{1}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, TokenPrefix) || len(tok) != len(TokenPrefix)+43 {
		t.Errorf("token %q", tok)
	}
	want := sha256.Sum256([]byte(tok))
	if !bytes.Equal(sum, want[:]) || !bytes.Equal(HashToken(tok), want[:]) {
		t.Error("hash is not SHA-256 of the token text")
	}
	for h, want := range map[string]string{"Bearer abc": "abc", "bearer  abc ": "abc", "Basic abc": "", "": "", "Bearer": ""} {
		if got := bearer(h); got != want {
			t.Errorf("bearer(%q) = %q, want %q", h, got, want)
		}
	}
}
