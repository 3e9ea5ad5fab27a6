package pgtest_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"weir.dev/db/pgserver"
	"weir.dev/db/pgtest"
)

// TestNewDatabaseIsDroppedAfterTheTest checks New gives a migrated database of
// its own, which is gone once the (sub)test that asked for it ends.
func TestNewDatabaseIsDroppedAfterTheTest(t *testing.T) {
	ctx := context.Background()
	var name string
	t.Run("uses", func(t *testing.T) {
		pool := pgtest.New(t)
		if err := pool.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(name, "weir_test_") {
			t.Errorf("database %q lacks the weir_test_ prefix", name)
		}
		var tenants int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM tenants").Scan(&tenants); err != nil {
			t.Fatalf("schema not applied: %v", err)
		}
	})
	if name == "" {
		t.Skip("no database was made")
	}
	admin, err := pgserver.Ensure(ctx, pgserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Errorf("database %s still exists after its test ended", name)
	}
}

func TestNewDatabaseDSNNamesIt(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Skipf("not a URL DSN: %v", err)
	}
	if !strings.HasPrefix(strings.TrimPrefix(u.Path, "/"), "weir_test_") {
		t.Errorf("DSN %q does not name a test database", dsn)
	}
}
