// Package schema holds no code: its tests prove, against a real PostgreSQL,
// that the migrations in weir.dev/migrations go up and down cleanly, that the
// database enforces Weir's invariants, and that the sqlc queries in
// weir.dev/db/sqlc round-trip. (Tests cannot live in db/sqlc, which is
// regenerated whole.)
package schema
