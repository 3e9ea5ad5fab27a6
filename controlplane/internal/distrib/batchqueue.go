package distrib

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// batchQueue is a sqlc.DBTX that runs nothing: it queues the statements of
// the generated :exec queries called on it into one pgx.Batch, which the
// caller then sends (pgx.Tx.SendBatch) so that they run in order in one
// round trip; the queries' own errors come from the batch's results. Only
// :exec queries can be queued: the others fail with errBatchQueue.
type batchQueue struct {
	pgx.Batch
}

var errBatchQueue = errors.New("distrib: only :exec queries can be queued in a batch")

func (b *batchQueue) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	b.Queue(sql, args...)
	return pgconn.CommandTag{}, nil
}

func (b *batchQueue) Query(context.Context, string, ...any) (pgx.Rows, error) {
	return nil, errBatchQueue
}

func (b *batchQueue) QueryRow(context.Context, string, ...any) pgx.Row { return errRow{} }

func (b *batchQueue) SendBatch(context.Context, *pgx.Batch) pgx.BatchResults { return errResults{} }

// errRow is the pgx.Row of batchQueue.QueryRow.
type errRow struct{}

func (errRow) Scan(...any) error { return errBatchQueue }

// errResults is the pgx.BatchResults of batchQueue.SendBatch (it embeds the
// interface only for methods later pgx versions add).
type errResults struct{ pgx.BatchResults }

func (errResults) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, errBatchQueue }
func (errResults) Query() (pgx.Rows, error)         { return nil, errBatchQueue }
func (errResults) QueryRow() pgx.Row                { return errRow{} }
func (errResults) Close() error                     { return errBatchQueue }
