package pgserver_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"weir.dev/db/pgserver"
)

func TestWithDatabase(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, dsn, db, want string
	}{
		{"url", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "weir",
			"postgres://postgres@127.0.0.1:5432/weir?sslmode=disable"},
		{"url without database", "postgresql://u:p@h:1", "w_1", "postgresql://u:p@h:1/w_1"},
		{"keyword/value", "host=127.0.0.1 user=postgres", "weir", "host=127.0.0.1 user=postgres dbname='weir'"},
		{"keyword/value quoting", "host=h", `a'b`, `host=h dbname='a\'b'`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := pgserver.WithDatabase(tc.dsn, tc.db)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("WithDatabase(%q, %q) mismatch (-want +got):\n%s", tc.dsn, tc.db, diff)
			}
		})
	}
}

func TestEnsurePrefersDatabaseURL(t *testing.T) {
	t.Parallel()
	const want = "postgres://someone@db.invalid/x"
	got, err := pgserver.Ensure(context.Background(), pgserver.Options{
		Getenv: func(k string) string {
			if k == "DATABASE_URL" {
				return want
			}
			return ""
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Ensure = %q, want DATABASE_URL %q", got, want)
	}
}

// TestPrivateCluster initialises, starts, reuses and stops a private cluster
// with the machine's PostgreSQL binaries (a few seconds).
func TestPrivateCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	// As root the cluster runs as user postgres, which must reach the directory.
	for d := tmp; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	opts := pgserver.Options{Dir: filepath.Join(tmp, "pg"), Private: true, Log: tlog{t}}
	dsn, err := pgserver.Ensure(ctx, opts)
	if errors.Is(err, pgserver.ErrNoBinaries) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pgserver.Stop(context.Background(), opts); err != nil {
			t.Error(err)
		}
	})
	again, err := pgserver.Ensure(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if again != dsn {
		t.Errorf("second Ensure = %q, want the running cluster %q", again, dsn)
	}
	// Stopped and started again, the cluster keeps its port, so DSNs
	// handed out before stay good.
	if err := pgserver.Stop(ctx, opts); err != nil {
		t.Fatal(err)
	}
	restarted, err := pgserver.Ensure(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if restarted != dsn {
		t.Errorf("after a restart Ensure = %q, want the same DSN %q", restarted, dsn)
	}
	weir, err := pgserver.EnsureDatabase(ctx, dsn, "weir")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pgserver.EnsureDatabase(ctx, dsn, "weir"); err != nil {
		t.Fatalf("EnsureDatabase of an existing database: %v", err)
	}
	conn, err := pgx.Connect(ctx, weir)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if db != "weir" {
		t.Errorf("connected to %q, want weir", db)
	}
}

type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Logf("%s", p)
	return len(p), nil
}
