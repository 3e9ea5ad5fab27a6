package schema_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"weir.dev/db/pgtest"
	"weir.dev/migrations"
)

// wantTables is every table of the schema at the latest version.
var wantTables = []string{
	"admin_roles", "admin_tokens", "admins", "api_keys", "audit_log",
	"budget_leases", "budgets", "call_attempts", "calls", "config_revisions", "console_sessions",
	"data_rules", "edges", "member_prices", "member_views", "outbox",
	"pool_members", "provider_records", "record_models", "record_prices",
	"record_shares", "secrets", "tenants",
}

// catalog lists the schema objects of the public schema (tables, functions,
// triggers, constraints, indexes, sequences), skipping golang-migrate's own
// table, so that two states of a database can be compared.
func catalog(t *testing.T, ctx context.Context, dsn string) []string {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
		SELECT 'table ' || c.relname || ' ' || c.relkind::text FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relname NOT LIKE 'schema_migrations%'
		UNION ALL
		SELECT 'function ' || p.proname FROM pg_proc p
		JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'
		UNION ALL
		SELECT 'constraint ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid)
		FROM pg_constraint WHERE connamespace = 'public'::regnamespace
		  AND conrelid::regclass::text NOT LIKE 'schema_migrations%'
		UNION ALL
		SELECT 'trigger ' || tgname FROM pg_trigger WHERE NOT tgisinternal
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func tables(t *testing.T, ctx context.Context, dsn string) []string {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name::text FROM information_schema.tables
		WHERE table_schema = 'public' AND table_name <> 'schema_migrations' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestUpDownUp applies every migration, reverts them all, and applies them
// again: the schema exists, then is gone entirely, then is back the same.
func TestUpDownUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)

	if err := migrations.Up(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantTables, tables(t, ctx, dsn)); diff != "" {
		t.Fatalf("tables after up (-want +got):\n%s", diff)
	}
	first := catalog(t, ctx, dsn)

	if err := migrations.Down(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	if got := catalog(t, ctx, dsn); len(got) != 0 {
		t.Fatalf("objects left after down to zero: %q", got)
	}

	if err := migrations.Up(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, catalog(t, ctx, dsn)); diff != "" {
		t.Errorf("schema after down and up differs from the first up (-first +again):\n%s", diff)
	}
	if err := migrations.Up(ctx, dsn); err != nil {
		t.Errorf("Up on an up-to-date database: %v", err)
	}
}

// TestEachStepReverts checks every down file undoes exactly its up file.
func TestEachStepReverts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	latest, err := migrations.Latest()
	if err != nil {
		t.Fatal(err)
	}
	if latest < 1 {
		t.Fatal("no migrations")
	}
	before := catalog(t, ctx, dsn)
	for v := uint(1); v <= latest; v++ {
		if err := migrations.To(ctx, dsn, v); err != nil {
			t.Fatalf("up to %d: %v", v, err)
		}
		after := catalog(t, ctx, dsn)
		if err := migrations.To(ctx, dsn, v-1); err != nil {
			t.Fatalf("down to %d: %v", v-1, err)
		}
		if diff := cmp.Diff(before, catalog(t, ctx, dsn)); diff != "" {
			t.Fatalf("down from %d did not restore version %d (-before +got):\n%s", v, v-1, diff)
		}
		if err := migrations.To(ctx, dsn, v); err != nil {
			t.Fatalf("up to %d again: %v", v, err)
		}
		if diff := cmp.Diff(after, catalog(t, ctx, dsn)); diff != "" {
			t.Fatalf("second up to %d differs (-first +second):\n%s", v, diff)
		}
		before = after
	}
}
