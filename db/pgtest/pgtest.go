// Package pgtest gives each test a fresh PostgreSQL database.
//
// The server comes from pgserver.Ensure (DATABASE_URL, else 127.0.0.1:5432,
// else a private cluster under <repo>/var/pg). When no server can be had the
// test is skipped, except with CI=true, where it fails: CI never skips
// database tests.
//
// New does not run the migrations for every test: the first call in a
// process makes sure a template database holding the whole schema exists on
// the server, and every test database is a copy of it (CREATE DATABASE …
// TEMPLATE). The template's name carries a hash of the migration files, so a
// changed, added or removed migration gets a template of its own; building
// one is serialised across processes (several `go test` binaries, several
// checkouts sharing a server) by a PostgreSQL advisory lock. Templates that
// no process has used for a day are dropped. NewDatabase still gives an
// empty database, for tests of the migrations themselves.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"weir.dev/db/pgserver"
	"weir.dev/migrations"
)

// New returns a pool on a new database holding the whole schema (every
// migration applied). The pool is closed and the database dropped when the
// test ends.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := newDatabase(t, ctx, true)
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatalf("pgtest: open pool: %v", err)
	}
	t.Cleanup(pool.Close) // runs before the database's drop (cleanups run last-in first-out)
	return pool
}

// NewDatabase creates an empty, uniquely named database and returns its DSN.
// The database is dropped (connections and all) when the test ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return newDatabase(t, ctx, false)
}

// newDatabase creates a uniquely named database, a copy of the migrated
// template when migrated is set, registers its drop and returns its DSN.
func newDatabase(t testing.TB, ctx context.Context, migrated bool) string {
	t.Helper()
	admin, err := pgserver.Ensure(ctx, pgserver.Options{})
	if err != nil {
		unavailable(t, err)
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		unavailable(t, err)
	}
	defer conn.Close(context.Background())

	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "weir_test_" + hex.EncodeToString(b[:])
	create := "CREATE DATABASE " + name
	if migrated {
		// A template dropped under us (by another process, as stale) is
		// rebuilt once.
		for attempt := 0; ; attempt++ {
			tmpl, err := templates.get(ctx, admin)
			if err != nil {
				t.Fatalf("pgtest: %v", err)
			}
			_, err = conn.Exec(ctx, create+" TEMPLATE "+tmpl)
			if pgErr := (*pgconn.PgError)(nil); attempt == 0 && errors.As(err, &pgErr) && pgErr.Code == "3D000" { // invalid_catalog_name
				templates.forget(tmpl)
				continue
			}
			if err != nil {
				t.Fatalf("pgtest: create database from template %s: %v", tmpl, err)
			}
			break
		}
	} else if _, err := conn.Exec(ctx, create); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	dsn, err := pgserver.WithDatabase(admin, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dsn
}

// templatePrefix starts the name of every template database pgtest makes.
const templatePrefix = "weir_tmpl_"

// templateLock is the advisory lock key held while a template is checked,
// built or dropped.
const templateLock int64 = 0x7765_6972_746d_706c // "weirtmpl"

// staleAfter is how long a template of other migrations may go unused
// before it is dropped.
const staleAfter = 24 * time.Hour

// templates remembers, per server, the template this process uses.
var templates = templateCache{names: map[string]string{}}

type templateCache struct {
	mu    sync.Mutex
	names map[string]string // admin DSN → template name
}

func (c *templateCache) get(ctx context.Context, admin string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if name, ok := c.names[admin]; ok {
		return name, nil
	}
	name, err := templateName(migrations.FS)
	if err != nil {
		return "", err
	}
	if err := ensureTemplate(ctx, admin, name); err != nil {
		return "", err
	}
	c.names[admin] = name
	return name, nil
}

func (c *templateCache) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.names {
		if v == name {
			delete(c.names, k)
		}
	}
}

// templateName names the template for the migration files in fsys: the
// prefix and a hash of every file's name and contents.
func templateName(fsys fs.FS) (string, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return "", fmt.Errorf("read migrations: %w", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		body, err := fs.ReadFile(fsys, n)
		if err != nil {
			return "", fmt.Errorf("read migrations: %w", err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(body))
		h.Write(body)
	}
	return templatePrefix + hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// ensureTemplate makes sure the server of admin has template name, complete
// (every migration applied, then marked a template), building it when
// missing. It notes the template as used now and drops other templates
// unused for staleAfter, all under the advisory lock.
func ensureTemplate(ctx context.Context, admin, name string) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return fmt.Errorf("template: connect: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLock); err != nil {
		return fmt.Errorf("template: lock: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", templateLock) }()

	var exists, complete bool
	err = conn.QueryRow(ctx, "SELECT true, datistemplate FROM pg_database WHERE datname = $1", name).Scan(&exists, &complete)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("template: look up %s: %w", name, err)
	}
	if exists && !complete { // a build that did not finish
		if _, err := conn.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("template: drop unfinished %s: %w", name, err)
		}
	}
	if !complete {
		if err := buildTemplate(ctx, conn, admin, name); err != nil {
			return err
		}
	}
	now := strconv.FormatInt(time.Now().Unix(), 10)
	if _, err := conn.Exec(ctx, "COMMENT ON DATABASE "+name+" IS 'weir pgtest template, last used "+now+"'"); err != nil {
		return fmt.Errorf("template: note use of %s: %w", name, err)
	}
	dropStale(ctx, conn, name)
	return nil
}

// buildTemplate creates database name, migrates it and marks it a template
// no one may connect to.
func buildTemplate(ctx context.Context, conn *pgx.Conn, admin, name string) error {
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return fmt.Errorf("template: create %s: %w", name, err)
	}
	dsn, err := pgserver.WithDatabase(admin, name)
	if err != nil {
		return fmt.Errorf("template: %w", err)
	}
	if err := migrations.Up(ctx, dsn); err != nil {
		return fmt.Errorf("template %s: %w", name, err)
	}
	// FORCE-free: the migrations' connections are closed; CREATE DATABASE …
	// TEMPLATE waits briefly for any still going away.
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+name+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"); err != nil {
		return fmt.Errorf("template: mark %s: %w", name, err)
	}
	return nil
}

// dropStale drops the templates other than keep whose last use is older than
// staleAfter and that no connection uses. Failures are left for a later run.
func dropStale(ctx context.Context, conn *pgx.Conn, keep string) {
	rows, err := conn.Query(ctx, `SELECT d.datname, coalesce(shobj_description(d.oid, 'pg_database'), '')
		FROM pg_database d
		WHERE d.datname LIKE 'weir\_tmpl\_%' AND d.datname <> $1
		  AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.datname = d.datname)`, keep)
	if err != nil {
		return
	}
	type tmpl struct{ name, comment string }
	var stale []string
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (tmpl, error) {
		var t tmpl
		return t, r.Scan(&t.name, &t.comment)
	})
	if err != nil {
		return
	}
	for _, t := range all {
		_, used, _ := strings.Cut(t.comment, "last used ")
		if sec, err := strconv.ParseInt(used, 10, 64); err == nil && time.Since(time.Unix(sec, 0)) < staleAfter {
			continue
		}
		stale = append(stale, t.name)
	}
	for _, name := range stale {
		if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH IS_TEMPLATE false"); err != nil {
			continue
		}
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize())
	}
}

// unavailable skips the test, or fails it when CI=true.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("pgtest: no PostgreSQL, and CI=true never skips: %v", err)
	}
	t.Skipf("pgtest: no PostgreSQL (set DATABASE_URL, run one on 127.0.0.1:5432, or install its binaries): %v", err)
}
