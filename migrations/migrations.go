// Package migrations holds Weir's PostgreSQL schema as golang-migrate files
// (NNNNNN_name.up.sql / .down.sql, applied in version order) and applies them.
//
// Each file is run as one simple-protocol query, which PostgreSQL executes as a
// single implicit transaction, so a failing file leaves no partial change (the
// database is then marked dirty at that version by golang-migrate; force it
// back one version after fixing the file). The schema needs PostgreSQL 15 or
// later (UNIQUE NULLS NOT DISTINCT). The same files are the schema sqlc reads.
package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	pgxmigrate "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// FS holds every migration file at its root.
//
//go:embed *.sql
var FS embed.FS

// Up applies every migration not yet applied to the database at dsn (a
// PostgreSQL URL or keyword/value string). An up-to-date database is not an
// error. Cancelling ctx stops after the migration that is running.
func Up(ctx context.Context, dsn string) error {
	return run(ctx, dsn, "up", (*migrate.Migrate).Up)
}

// Down reverts every applied migration, leaving only golang-migrate's own
// schema_migrations table. An empty database is not an error.
func Down(ctx context.Context, dsn string) error {
	return run(ctx, dsn, "down", (*migrate.Migrate).Down)
}

// To migrates up or down to version (0 reverts everything).
func To(ctx context.Context, dsn string, version uint) error {
	return run(ctx, dsn, fmt.Sprintf("to version %d", version), func(m *migrate.Migrate) error {
		if version == 0 {
			return m.Down()
		}
		return m.Migrate(version)
	})
}

// Latest returns the highest version among the files in FS.
func Latest() (uint, error) {
	entries, err := fs.ReadDir(FS, ".")
	if err != nil {
		return 0, fmt.Errorf("migrations: read files: %w", err)
	}
	var latest uint
	for _, e := range entries {
		prefix, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			continue
		}
		v, err := strconv.ParseUint(prefix, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("migrations: file %s: version: %w", e.Name(), err)
		}
		latest = max(latest, uint(v))
	}
	return latest, nil
}

func run(ctx context.Context, dsn, what string, step func(*migrate.Migrate) error) (err error) {
	m, err := open(ctx, dsn)
	if err != nil {
		return fmt.Errorf("migrations %s: %w", what, err)
	}
	defer func() {
		srcErr, dbErr := m.Close()
		if cerr := errors.Join(srcErr, dbErr); cerr != nil {
			err = errors.Join(err, fmt.Errorf("migrations %s: close: %w", what, cerr))
		}
	}()
	// GracefulStop is buffered; golang-migrate checks it between migrations.
	stop := context.AfterFunc(ctx, func() { m.GracefulStop <- true })
	defer stop()
	if err := step(m); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrations %s: %w", what, err)
	}
	return ctx.Err()
}

func open(ctx context.Context, dsn string) (*migrate.Migrate, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse dsn: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect: %w", err)
	}
	drv, err := pgxmigrate.WithInstance(db, &pgxmigrate.Config{})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("database driver: %w", err)
	}
	src, err := iofs.New(FS, ".")
	if err != nil {
		drv.Close()
		return nil, fmt.Errorf("source: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", drv)
	if err != nil {
		src.Close()
		drv.Close()
		return nil, fmt.Errorf("init: %w", err)
	}
	return m, nil
}
