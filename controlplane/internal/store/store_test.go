package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/controlplane/internal/store"
	"weir.dev/db/pgtest"
	"weir.dev/db/sqlc"
)

func newStore(t *testing.T) *store.Store {
	t.Helper()
	return store.New(pgtest.New(t))
}

var actor = store.Actor{AdminID: "00000000-0000-0000-0000-0000000000aa", Name: "alice", TokenID: "tok", Procedure: "/test/Do"}

func count(t *testing.T, st *store.Store, table string) int {
	t.Helper()
	var n int
	if err := st.Pool().QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func mkTenant(t *testing.T, st *store.Store, name string) sqlc.Tenant {
	t.Helper()
	var tn sqlc.Tenant
	err := st.Tx(context.Background(), actor, func(tx *store.Tx) error {
		var err error
		tn, err = tx.Q.CreateTenant(context.Background(), sqlc.CreateTenantParams{Name: name})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

func TestTxCommitWritesAuditAndOneOutboxRowPerTenant(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := context.Background()
	a := mkTenant(t, st, "a")
	b := mkTenant(t, st, "b")
	err := st.Tx(ctx, actor, func(tx *store.Tx) error {
		for range 3 { // deduplicated: one row per tenant
			if err := tx.Changed(ctx, a.ID); err != nil {
				return err
			}
		}
		if err := tx.Changed(ctx, b.ID); err != nil {
			return err
		}
		if err := tx.Changed(ctx, store.Cluster); err != nil {
			return err
		}
		return tx.Audit(ctx, "create", "keys", "ci", map[string]any{"id": "k1"})
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := st.Q.ListOutboxSince(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, store.UUIDString(r.TenantID)+"/"+r.Kind)
	}
	want := []string{store.UUIDString(a.ID) + "/config", store.UUIDString(b.ID) + "/config", "/config"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outbox (-want +got):\n%s", diff)
	}
	rev, err := st.Q.GetConfigRevision(ctx, a.ID)
	if err != nil || rev.DesiredRevision != 1 {
		t.Errorf("revision of a = %d, %v; want 1", rev.DesiredRevision, err)
	}
	audit, err := st.Q.ListAuditEvents(ctx, sqlc.ListAuditEventsParams{AllTenants: true, BeforeID: 1 << 62, MaxRows: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 1 {
		t.Fatalf("audit rows = %d, want 1", len(audit))
	}
	e := audit[0]
	if e.Actor != "alice" || e.TenantID != a.ID || e.Action != "create" || e.ObjectKind != "keys" || e.ObjectName != "ci" {
		t.Errorf("audit row = %+v", e)
	}
	if want := `{"id": "k1", "token_id": "tok", "procedure": "/test/Do"}`; string(e.Details) != want {
		t.Errorf("details = %s, want %s", e.Details, want)
	}
	// A second transaction bumps the revision again.
	if err := st.Tx(ctx, actor, func(tx *store.Tx) error { return tx.Changed(ctx, a.ID) }); err != nil {
		t.Fatal(err)
	}
	if rev, _ := st.Q.GetConfigRevision(ctx, a.ID); rev.DesiredRevision != 2 {
		t.Errorf("revision after second change = %d, want 2", rev.DesiredRevision)
	}
}

func TestTxRollbackLeavesNothing(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := context.Background()
	a := mkTenant(t, st, "a")
	outbox, audit, keys := count(t, st, "outbox"), count(t, st, "audit_log"), count(t, st, "api_keys")
	boom := errors.New("boom")
	err := st.Tx(ctx, actor, func(tx *store.Tx) error {
		if _, err := tx.Q.CreateAPIKey(ctx, sqlc.CreateAPIKeyParams{TenantID: a.ID, Name: "k", SHA256: make([]byte, 32),
			AllowedModels: []string{}, AllowedRecords: []string{}, Regions: []string{}}); err != nil {
			return err
		}
		if err := tx.Changed(ctx, a.ID); err != nil {
			return err
		}
		if err := tx.Audit(ctx, "create", "keys", "k", nil); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Tx = %v, want boom", err)
	}
	if got := []int{count(t, st, "outbox"), count(t, st, "audit_log"), count(t, st, "api_keys")}; !cmp.Equal(got, []int{outbox, audit, keys}) {
		t.Errorf("after rollback outbox, audit, keys = %v; want %v", got, []int{outbox, audit, keys})
	}
}

func TestMapError(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := context.Background()
	a := mkTenant(t, st, "a")
	secret := func(tx *store.Tx, tenant pgtype.UUID, name string) error {
		_, err := tx.Q.SetSecret(ctx, sqlc.SetSecretParams{TenantID: tenant, Name: name, Ciphertext: []byte{1}, Nonce: make([]byte, 12), KeyVersion: 1, Hosts: []string{"h"}})
		return err
	}
	pool := func(tx *store.Tx) error {
		_, err := tx.Q.CreateProviderRecord(ctx, sqlc.CreateProviderRecordParams{
			TenantID: a.ID, Name: "p", Pool: true, WireFormat: "openai", AuthKind: "api_key",
			OauthScopes: []string{}, Tags: []byte("{}"), AllowedRegions: []string{}, RateLimitHeaders: []byte("{}"),
		})
		return err
	}
	member := func(tx *store.Tx, name string) error {
		_, err := tx.Q.AddPoolMember(ctx, sqlc.AddPoolMemberParams{
			TenantID: a.ID, RecordName: "p", Name: name, BaseURL: "https://x", OauthScopes: []string{},
			Tags: []byte("{}"), Weight: 1, Order: 1, ModelMap: []byte("{}"), Models: []string{},
		})
		return err
	}
	// Setup: a pool of 16 members, one using secret "used".
	err := st.Tx(ctx, actor, func(tx *store.Tx) error {
		if err := secret(tx, a.ID, "used"); err != nil {
			return err
		}
		if err := pool(tx); err != nil {
			return err
		}
		for i := range 16 {
			if err := member(tx, fmt.Sprintf("m%d", i)); err != nil {
				return err
			}
		}
		_, err := tx.Q.UpdatePoolMember(ctx, sqlc.UpdatePoolMemberParams{
			TenantID: a.ID, RecordName: "p", Name: "m0", BaseURL: "https://x", KeySecret: pgtype.Text{String: "used", Valid: true},
			OauthScopes: []string{}, Tags: []byte("{}"), Weight: 1, Order: 1, ModelMap: []byte("{}"), Models: []string{},
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		fn         func(*store.Tx) error
		kind       error
		constraint string
		field      string
	}{
		{"unique tenant name", func(tx *store.Tx) error {
			_, err := tx.Q.CreateTenant(ctx, sqlc.CreateTenantParams{Name: "a"})
			return err
		}, store.ErrConflict, "tenants_name_key", "name"},
		{"check name format", func(tx *store.Tx) error {
			_, err := tx.Q.CreateTenant(ctx, sqlc.CreateTenantParams{Name: "Not Valid"})
			return err
		}, store.ErrInvalid, "tenants_name_format", "name"},
		{"16-member trigger", func(tx *store.Tx) error { return member(tx, "m16") }, store.ErrInvalid, "pool_members_max_16", "member"},
		{"foreign key on write", func(tx *store.Tx) error {
			_, err := tx.Q.UpdatePoolMember(ctx, sqlc.UpdatePoolMemberParams{
				TenantID: a.ID, RecordName: "p", Name: "m1", BaseURL: "https://x", KeySecret: pgtype.Text{String: "nope", Valid: true},
				OauthScopes: []string{}, Tags: []byte("{}"), Weight: 1, Order: 1, ModelMap: []byte("{}"), Models: []string{},
			})
			return err
		}, store.ErrInvalid, "pool_members_key_secret_fkey", "key_secret"},
		{"foreign key on delete", func(tx *store.Tx) error {
			_, err := tx.Q.DeleteSecret(ctx, sqlc.DeleteSecretParams{TenantID: a.ID, Name: "used"})
			return err
		}, store.ErrPrecondition, "pool_members_key_secret_fkey", ""},
		{"no rows", func(tx *store.Tx) error {
			_, err := tx.Q.GetTenantByName(ctx, "nope")
			return err
		}, store.ErrNotFound, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := st.Tx(ctx, actor, tc.fn)
			if !errors.Is(err, tc.kind) {
				t.Fatalf("err = %v, want %v", err, tc.kind)
			}
			var se *store.Error
			if !errors.As(err, &se) {
				t.Fatalf("err %T is not *store.Error", err)
			}
			if se.Constraint != tc.constraint || se.Field != tc.field || se.Msg == "" {
				t.Errorf("got constraint %q field %q msg %q; want %q %q", se.Constraint, se.Field, se.Msg, tc.constraint, tc.field)
			}
		})
	}
}

func TestUUID(t *testing.T) {
	t.Parallel()
	u, err := store.ParseUUID("0190a4f1-2b3c-7d4e-8f90-0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	if got := store.UUIDString(u); got != "0190a4f1-2b3c-7d4e-8f90-0123456789ab" {
		t.Errorf("round trip = %q", got)
	}
	if _, err := store.ParseUUID("nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ParseUUID(nope) = %v, want ErrNotFound", err)
	}
	if store.UUIDString(store.Cluster) != "" {
		t.Error("Cluster formats as non-empty")
	}
}
