// Package pgtest gives each test a fresh PostgreSQL database.
//
// The server comes from pgserver.Ensure (DATABASE_URL, else 127.0.0.1:5432,
// else a private cluster under <repo>/var/pg). When no server can be had the
// test is skipped, except with CI=true, where it fails: CI never skips
// database tests.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"weir.dev/db/pgserver"
	"weir.dev/migrations"
)

// New returns a pool on a new database holding the whole schema (every
// migration applied). The pool is closed and the database dropped when the
// test ends.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	dsn := NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := migrations.Up(ctx, dsn); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatalf("pgtest: open pool: %v", err)
	}
	t.Cleanup(pool.Close) // runs before NewDatabase's drop (cleanups run last-in first-out)
	return pool
}

// NewDatabase creates an empty, uniquely named database and returns its DSN.
// The database is dropped (connections and all) when the test ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
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
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
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

// unavailable skips the test, or fails it when CI=true.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("pgtest: no PostgreSQL, and CI=true never skips: %v", err)
	}
	t.Skipf("pgtest: no PostgreSQL (set DATABASE_URL, run one on 127.0.0.1:5432, or install its binaries): %v", err)
}
