package distrib_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/controlplane/internal/distrib"
	"weir.dev/controlplane/internal/secretbox"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

// setSecret sets a secret through the admin API over loopback (tenant ""
// = a managed secret) and returns its row as stored.
func (e *env) setSecret(tenant string, owner pgtype.UUID, name, value string, hosts ...string) sqlc.Secret {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.api.secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{
		Tenant: tenant, Name: name, Value: value, Hosts: hosts,
	})); err != nil {
		e.t.Fatal(err)
	}
	return e.row(owner, name)
}

func (e *env) row(owner pgtype.UUID, name string) sqlc.Secret {
	e.t.Helper()
	r, err := e.st.Q.GetSecret(context.Background(), sqlc.GetSecretParams{TenantID: owner, Name: name})
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// TestSecretMovedToAnotherRowDoesNotOpen sets secrets through the API,
// then moves ciphertexts between rows (and changes a row's tenant, name and
// hosts) with SQL: none of the moved ciphertexts opens, the others do
// (DESIGN §5).
func TestSecretMovedToAnotherRowDoesNotOpen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	pool := e.st.Pool()
	open := distrib.OpenWith(e.box)
	acme, other := e.tenant("acme"), e.tenant("other")
	var managed pgtype.UUID

	a := e.setSecret("acme", acme, "a", "sk-acme-a", "api.openai.com")
	e.setSecret("acme", acme, "b", "sk-acme-b", "api.openai.com")
	e.setSecret("other", other, "a", "sk-other-a", "api.openai.com")
	e.setSecret("", managed, "m", "sk-managed", "api.anthropic.com", "api.openai.com")
	e.setSecret("acme", acme, "hosts", "sk-acme-hosts", "api.openai.com")
	e.setSecret("acme", acme, "renamed", "sk-acme-renamed", "api.openai.com")
	e.setSecret("other", other, "to-managed", "sk-other-tm", "api.openai.com")
	for _, r := range []sqlc.Secret{a, e.row(managed, "m")} {
		if r.SealVersion != secretbox.SealVersion {
			t.Fatalf("secret %q stored with seal version %d", r.Name, r.SealVersion)
		}
		if p, err := open(r); err != nil || !strings.HasPrefix(string(p), "sk-") {
			t.Fatalf("secret %q does not open in place: %v", r.Name, err)
		}
	}

	exec := func(sql string, args ...any) {
		t.Helper()
		if tag, err := pool.Exec(ctx, sql, args...); err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("%s: %v, %d rows", sql, err, tag.RowsAffected())
		}
	}
	move := `UPDATE secrets SET ciphertext = $1, nonce = $2 WHERE scope = owner_scope($3) AND name = $4`
	// acme's "a" copied over acme's "b" (same tenant, other name), over
	// other's "a" (same name, other tenant) and over managed "m".
	exec(move, a.Ciphertext, a.Nonce, acme, "b")
	exec(move, a.Ciphertext, a.Nonce, other, "a")
	exec(move, a.Ciphertext, a.Nonce, managed, "m")
	// Rows changed in place: hosts widened, renamed, moved to the cluster.
	exec(`UPDATE secrets SET hosts = hosts || '{evil.example}' WHERE tenant_id = $1 AND name = 'hosts'`, acme)
	exec(`UPDATE secrets SET name = 'renamed2' WHERE tenant_id = $1 AND name = 'renamed'`, acme)
	exec(`UPDATE secrets SET tenant_id = NULL WHERE tenant_id = $1 AND name = 'to-managed'`, other)

	for _, c := range []struct {
		owner pgtype.UUID
		name  string
	}{{acme, "b"}, {other, "a"}, {managed, "m"}, {acme, "hosts"}, {acme, "renamed2"}, {managed, "to-managed"}} {
		r := e.row(c.owner, c.name)
		p, err := open(r)
		if !errors.Is(err, secretbox.ErrDecrypt) {
			t.Errorf("moved secret %q opened: %q, %v; want ErrDecrypt", c.name, p, err)
		}
		if err != nil && strings.Contains(err.Error(), "sk-") {
			t.Errorf("error quotes a value: %v", err)
		}
	}
	if p, err := open(e.row(acme, "a")); err != nil || string(p) != "sk-acme-a" {
		t.Errorf("the source row no longer opens: %q, %v", p, err)
	}
	// Setting the value again (as `weir secret set` does on a change of
	// hosts) seals it for the new row.
	e.setSecret("acme", acme, "hosts", "sk-acme-hosts", "api.openai.com", "evil.example")
	if p, err := open(e.row(acme, "hosts")); err != nil || string(p) != "sk-acme-hosts" {
		t.Errorf("re-set secret = %q, %v", p, err)
	}
}

// TestResealAllUpgradesVersion0 stores secrets the way the control plane
// did before seal versions (no additional data, seal_version 0), runs the
// re-seal step and checks that they then open with their additional data
// only, that a second run changes nothing, and that a row under another
// master key fails the step without changing any row.
func TestResealAllUpgradesVersion0(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	pool := e.st.Pool()
	acme := e.tenant("acme")
	var managed pgtype.UUID
	insertV0 := func(box *secretbox.Box, owner pgtype.UUID, name, value string) {
		t.Helper()
		ct, nonce, err := box.Seal([]byte(value), nil) // the old code path
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO secrets (tenant_id, name, ciphertext, nonce, key_version, hosts)
			VALUES ($1, $2, $3, $4, 1, '{api.openai.com}')`, owner, name, ct, nonce); err != nil {
			t.Fatal(err)
		}
	}
	insertV0(e.box, acme, "k", "sk-acme-k")
	insertV0(e.box, managed, "k", "sk-managed-k")
	e.setSecret("acme", acme, "new", "sk-acme-new", "api.openai.com")
	open := distrib.OpenWith(e.box)
	if _, err := open(e.row(acme, "k")); err == nil {
		t.Fatal("a version 0 row opened before it was re-sealed")
	}

	n, err := secretbox.ResealAll(ctx, pool, e.box)
	if err != nil || n != 2 {
		t.Fatalf("ResealAll = %d, %v; want 2", n, err)
	}
	for _, c := range []struct {
		owner       pgtype.UUID
		name, value string
	}{{acme, "k", "sk-acme-k"}, {managed, "k", "sk-managed-k"}, {acme, "new", "sk-acme-new"}} {
		r := e.row(c.owner, c.name)
		if r.SealVersion != secretbox.SealVersion {
			t.Errorf("%q: seal version %d", c.name, r.SealVersion)
		}
		if p, err := open(r); err != nil || string(p) != c.value {
			t.Errorf("%q after re-seal = %q, %v", c.name, p, err)
		}
		if _, err := e.box.Open(r.Ciphertext, r.Nonce, nil); !errors.Is(err, secretbox.ErrDecrypt) {
			t.Errorf("%q still opens without additional data: %v", c.name, err)
		}
	}
	if n, err := secretbox.ResealAll(ctx, pool, e.box); err != nil || n != 0 {
		t.Errorf("second ResealAll = %d, %v; want 0", n, err)
	}

	stranger, err := secretbox.NewBox(bytes.Repeat([]byte{3}, secretbox.KeySize), nil)
	if err != nil {
		t.Fatal(err)
	}
	insertV0(e.box, acme, "v0", "sk-acme-v0")
	insertV0(stranger, acme, "foreign", "sk-foreign")
	if n, err := secretbox.ResealAll(ctx, pool, e.box); err == nil || !strings.Contains(err.Error(), `"foreign"`) || strings.Contains(err.Error(), "sk-") {
		t.Errorf("ResealAll with a foreign row = %d, %v; want an error naming it", n, err)
	}
	if r := e.row(acme, "v0"); r.SealVersion != 0 {
		t.Errorf("a failed step re-sealed %q", r.Name)
	}
}
