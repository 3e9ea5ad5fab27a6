// Package pgserver finds or starts the PostgreSQL server that tests and
// `make run` use, so both get a database the same way.
//
// Ensure looks, in order, for:
//  1. DATABASE_URL, used as given;
//  2. a server on 127.0.0.1:5432 accepting user postgres without a password
//     (checked by connecting);
//  3. a private cluster under <repo>/var/pg, created with the machine's initdb
//     and started with pg_ctl on a free port the first time, reused after.
//
// The private cluster outlives the process that started it; Stop ends it.
// As root it runs as the system user "postgres" (initdb refuses root), which
// must be able to reach the cluster directory.
package pgserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// SharedDSN is the server a developer machine or CI usually has running.
const SharedDSN = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable&connect_timeout=3"

// Options configure Ensure and Stop. The zero value is ready to use.
type Options struct {
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Dir holds the private cluster (data/, run/, postgres.log, port); ""
	// means var/pg under the repository root, the nearest directory above the
	// working directory that holds go.work.
	Dir string
	// Private skips DATABASE_URL and the shared server and always uses the
	// private cluster.
	Private bool
	// Log receives progress and the output of initdb and pg_ctl; nil
	// discards it. It is never the place a DSN is printed.
	Log io.Writer
}

func (o Options) getenv(key string) string {
	if o.Getenv == nil {
		return os.Getenv(key)
	}
	return o.Getenv(key)
}

func (o Options) log() io.Writer {
	if o.Log == nil {
		return io.Discard
	}
	return o.Log
}

func (o Options) dir() (string, error) {
	if o.Dir != "" {
		return filepath.Abs(o.Dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return filepath.Join(d, "var", "pg"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.work in %s or above it: set Options.Dir for the private cluster", wd)
		}
	}
}

// Ensure returns the DSN (a postgres:// URL) of a superuser connection to the
// maintenance database "postgres" of a running server, starting a private
// cluster when no other server is available (see the package doc). When no
// PostgreSQL binaries are installed the error says what to install.
func Ensure(ctx context.Context, opts Options) (string, error) {
	if !opts.Private {
		if dsn := opts.getenv("DATABASE_URL"); dsn != "" {
			return dsn, nil
		}
		err := ping(ctx, SharedDSN)
		if err == nil {
			return SharedDSN, nil
		}
		fmt.Fprintf(opts.log(), "pgserver: no server on 127.0.0.1:5432 (%v); using a private cluster\n", err)
	}
	dir, err := opts.dir()
	if err != nil {
		return "", fmt.Errorf("pgserver: %w", err)
	}
	dsn, err := ensurePrivate(ctx, dir, opts.log())
	if err != nil {
		return "", fmt.Errorf("pgserver: private cluster in %s: %w", dir, err)
	}
	return dsn, nil
}

// Stop stops the private cluster in opts' directory if it is running. It
// never touches a server it did not start.
func Stop(ctx context.Context, opts Options) error {
	dir, err := opts.dir()
	if err != nil {
		return fmt.Errorf("pgserver: %w", err)
	}
	if err := stopPrivate(ctx, dir, opts.log()); err != nil {
		return fmt.Errorf("pgserver: stop private cluster in %s: %w", dir, err)
	}
	return nil
}

// EnsureDatabase creates database name on the server of adminDSN unless it
// exists, and returns adminDSN pointed at it. Concurrent calls are safe.
func EnsureDatabase(ctx context.Context, adminDSN, name string) (string, error) {
	dsn, err := WithDatabase(adminDSN, name)
	if err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		return "", fmt.Errorf("pgserver: connect: %w", err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", fmt.Errorf("pgserver: look up database %q: %w", name, err)
	}
	if exists {
		return dsn, nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database
		err = nil
	}
	if err != nil {
		return "", fmt.Errorf("pgserver: create database %q: %w", name, err)
	}
	return dsn, nil
}

// WithDatabase returns dsn (a postgres:// URL or a keyword/value string)
// with its database set to name.
func WithDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("pgserver: parse dsn: %w", err)
		}
		u.Path = "/" + name
		u.RawPath = ""
		return u.String(), nil
	}
	// Keyword/value: a later keyword wins.
	return strings.TrimSpace(dsn + " dbname='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(name) + "'"), nil
}

// ping connects to dsn and runs a query, within at most 5 seconds.
func ping(ctx context.Context, dsn string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var one int
	return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
}
