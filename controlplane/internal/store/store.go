// Package store is the control plane's access to PostgreSQL: a pgx pool, the
// sqlc queries (weir.dev/db/sqlc), transactions that write the audit log and
// the config outbox together with the change, and domain errors.
//
// Tenant scoping: every sqlc query of a tenant's objects takes the tenant id
// (or owner scope) as a parameter; nothing in this package reads across
// tenants except the cluster-wide listings a cluster admin asks for. The
// authorization itself is the RPC layer's (package auth).
package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"weir.dev/db/sqlc"
	"weir.dev/migrations"
)

// Store is the control plane's database. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	// Q runs queries on the pool, each in its own implicit transaction. Use
	// it for reads; changes go through Tx so that they are audited and
	// announced in the outbox.
	Q *sqlc.Queries
}

// Open applies every pending migration to the database at dsn and opens a
// connection pool on it. Close the Store when done.
func Open(ctx context.Context, dsn string) (*Store, error) {
	if err := migrations.Up(ctx, dsn); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	return New(pool), nil
}

// New wraps a pool on a migrated database. The Store takes the pool over:
// Close closes it.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, Q: sqlc.New(pool)}
}

// Pool returns the underlying pool (for health checks and tests).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool. It waits for connections in use to be returned.
func (s *Store) Close() { s.pool.Close() }

// Actor is who makes a change, as written to the audit log.
type Actor struct {
	// AdminID is the admin's id (a UUID string); "" for the control plane
	// itself (bootstrap, migrations).
	AdminID string
	// Name is the admin's name, written to the audit log as is, so that the
	// log still names an admin after it is deleted.
	Name string
	// TokenID is the id of the admin token the request used, if any.
	TokenID string
	// Procedure is the RPC, e.g. "/weir.admin.v1.SecretService/SetSecret".
	Procedure string
}

// Tx runs fn in one transaction and commits when fn returns nil; any error
// (or panic) rolls everything back, audit rows and outbox rows included, so
// a refused change leaves no trace. The error fn returns is passed through
// MapError, so a unique or check violation surfaces as ErrConflict or
// ErrInvalid. fn must not keep tx after it returns, and must not run
// queries on it concurrently.
func (s *Store) Tx(ctx context.Context, actor Actor, fn func(*Tx) error) (err error) {
	pgtx, err := s.pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = pgtx.Rollback(context.WithoutCancel(ctx))
			panic(p)
		}
		if err != nil {
			_ = pgtx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	tx := &Tx{Q: sqlc.New(pgtx), actor: actor, changed: map[pgtype.UUID]bool{}}
	if err := fn(tx); err != nil {
		return MapError(err)
	}
	if err := tx.flushAudit(ctx); err != nil {
		return MapError(err)
	}
	if err := pgtx.Commit(ctx); err != nil {
		return fmt.Errorf("store: commit: %w", MapError(err))
	}
	return nil
}

// Cluster is the zero UUID: passed where a tenant id is expected it names the
// cluster-owned scope (managed records and their secrets, the cluster
// snapshot). sqlc's nullable tenant parameters read it as NULL.
var Cluster = pgtype.UUID{}

// ParseUUID parses a UUID in its text form. It returns an error wrapping
// ErrNotFound for anything else: an id that cannot exist names nothing.
func ParseUUID(s string) (pgtype.UUID, error) {
	var u pgtype.UUID
	if err := u.Scan(s); err != nil || !u.Valid {
		return pgtype.UUID{}, &Error{Kind: ErrNotFound, Msg: "no such id"}
	}
	return u, nil
}

// UUIDString formats a UUID in its text form, or "" for an invalid (NULL)
// one.
func UUIDString(u pgtype.UUID) string {
	if !u.Valid {
		return ""
	}
	b := u.Bytes
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// IsNotFound reports whether err is (or wraps) ErrNotFound or pgx.ErrNoRows.
func IsNotFound(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, pgx.ErrNoRows)
}
