package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"weir.dev/controlplane/internal/secretbox"
	"weir.dev/db/pgtest"
	"weir.dev/db/sqlc"
)

// TestMigrateResealsSecrets: `controlplane migrate` re-seals a secret
// written by the old code path (no additional data), and refuses to finish
// without the master key while one waits.
func TestMigrateResealsSecrets(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"migrate"}, env(map[string]string{"DATABASE_URL": dsn}), &out, &errb); code != exitOK {
		t.Fatalf("migrate = %d: %s", code, errb.String())
	}
	key := bytes.Repeat([]byte{5}, secretbox.KeySize)
	box, err := secretbox.NewBox(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	ct, nonce, err := box.Seal([]byte("sk-managed"), nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO secrets (name, ciphertext, nonce, hosts) VALUES ('m', $1, $2, '{api.openai.com}')`, ct, nonce); err != nil {
		t.Fatal(err)
	}

	errb.Reset()
	if code := run(ctx, []string{"migrate"}, env(map[string]string{"DATABASE_URL": dsn}), &out, &errb); code != exitFail ||
		!strings.Contains(errb.String(), "1 secrets must be re-sealed") {
		t.Fatalf("migrate without a master key = %d, %q; want a refusal", code, errb.String())
	}
	errb.Reset()
	withKey := env(map[string]string{"DATABASE_URL": dsn, secretbox.EnvMasterKey: hex.EncodeToString(key)})
	if code := run(ctx, []string{"migrate"}, withKey, &out, &errb); code != exitOK {
		t.Fatalf("migrate = %d: %s", code, errb.String())
	}
	row, err := sqlc.New(conn).GetSecret(ctx, sqlc.GetSecretParams{Name: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if row.SealVersion != secretbox.SealVersion {
		t.Fatalf("seal version %d after migrate", row.SealVersion)
	}
	if p, err := box.Open(row.Ciphertext, row.Nonce, secretbox.RowAD(row)); err != nil || string(p) != "sk-managed" {
		t.Errorf("re-sealed row = %q, %v", p, err)
	}
	if _, err := box.Open(row.Ciphertext, row.Nonce, nil); err == nil {
		t.Error("the re-sealed row still opens without additional data")
	}
	if strings.Contains(errb.String(), "sk-managed") {
		t.Error("a value reached stderr")
	}
}
