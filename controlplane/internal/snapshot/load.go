package snapshot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/db/sqlc"
)

// TxBeginner starts transactions: *pgxpool.Pool and *pgx.Conn are ones.
type TxBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// LoadTenant reads every row of one tenant's snapshot in one read-only
// REPEATABLE READ transaction that it begins on db and ends before
// returning. It returns an error wrapping ErrTenantNotFound when the tenant
// does not exist.
func LoadTenant(ctx context.Context, db TxBeginner, tenantID pgtype.UUID) (TenantRows, error) {
	var rows TenantRows
	err := inReadTx(ctx, db, func(q *sqlc.Queries) error {
		var err error
		rows, err = ReadTenant(ctx, q, tenantID)
		return err
	})
	return rows, err
}

// LoadCluster reads every row of the cluster snapshot in one read-only
// REPEATABLE READ transaction that it begins on db and ends before returning.
func LoadCluster(ctx context.Context, db TxBeginner) (ClusterRows, error) {
	var rows ClusterRows
	err := inReadTx(ctx, db, func(q *sqlc.Queries) error {
		var err error
		rows, err = ReadCluster(ctx, q)
		return err
	})
	return rows, err
}

// inReadTx runs fn in a read-only REPEATABLE READ transaction on db, so that
// every read of one snapshot sees one state of the store.
func inReadTx(ctx context.Context, db TxBeginner, fn func(*sqlc.Queries) error) error {
	tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("snapshot: begin read transaction: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit
	if err := fn(sqlc.New(tx)); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("snapshot: end read transaction: %w", err)
	}
	return nil
}

// ReadTenant reads every row of one tenant's snapshot through q. The caller
// must run q in a REPEATABLE READ (or SERIALIZABLE) transaction, or the rows
// may mix states of the store; LoadTenant does that. Version is the tenant's
// desired config revision (0 when the tenant has none yet) and Now the
// transaction's start time. It returns an error wrapping ErrTenantNotFound
// when the tenant does not exist.
func ReadTenant(ctx context.Context, q *sqlc.Queries, tenantID pgtype.UUID) (TenantRows, error) {
	var in TenantRows
	if !tenantID.Valid {
		return in, fmt.Errorf("snapshot: read tenant: NULL tenant id: %w", ErrTenantNotFound)
	}
	wrap := func(what string, err error) error {
		return fmt.Errorf("snapshot: read tenant %s: %s: %w", tenantID.String(), what, err)
	}
	var err error
	if in.Tenant, err = q.GetTenant(ctx, tenantID); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return TenantRows{}, wrap("tenant", fmt.Errorf("%w: %w", ErrTenantNotFound, err))
		}
		return TenantRows{}, wrap("tenant", err)
	}
	if in.Now, in.Version, err = timeAndVersion(ctx, q, tenantID); err != nil {
		return TenantRows{}, wrap("revision", err)
	}
	switch d, err := q.GetDataRules(ctx, tenantID); {
	case err == nil:
		in.DataRules = &d
	case !errors.Is(err, pgx.ErrNoRows):
		return TenantRows{}, wrap("data rules", err)
	}
	if in.APIKeys, err = q.ListAPIKeys(ctx, tenantID); err != nil {
		return TenantRows{}, wrap("api keys", err)
	}
	if in.Budgets, err = q.ListBudgets(ctx, tenantID); err != nil {
		return TenantRows{}, wrap("budgets", err)
	}
	if err = readRecords(ctx, q, tenantID, &in.Records, &in.Models, &in.Members, &in.RecordPrices, &in.MemberPrices); err != nil {
		return TenantRows{}, wrap("records", err)
	}
	if in.Secrets, err = q.ListSecrets(ctx, tenantID); err != nil {
		return TenantRows{}, wrap("secrets", err)
	}
	return in, nil
}

// ReadCluster reads every row of the cluster snapshot through q, which the
// caller must run in a REPEATABLE READ (or SERIALIZABLE) transaction;
// LoadCluster does that. Version is the cluster's desired config revision (0
// when it has none yet) and Now the transaction's start time.
func ReadCluster(ctx context.Context, q *sqlc.Queries) (ClusterRows, error) {
	var in ClusterRows
	var cluster pgtype.UUID // NULL: the cluster
	wrap := func(what string, err error) error {
		return fmt.Errorf("snapshot: read cluster: %s: %w", what, err)
	}
	var err error
	if in.Now, in.Version, err = timeAndVersion(ctx, q, cluster); err != nil {
		return ClusterRows{}, wrap("revision", err)
	}
	if err = readRecords(ctx, q, cluster, &in.Records, &in.Models, &in.Members, &in.RecordPrices, &in.MemberPrices); err != nil {
		return ClusterRows{}, wrap("records", err)
	}
	if in.Shares, err = q.ListRecordShares(ctx); err != nil {
		return ClusterRows{}, wrap("shares", err)
	}
	if in.Secrets, err = q.ListSecrets(ctx, cluster); err != nil {
		return ClusterRows{}, wrap("secrets", err)
	}
	return in, nil
}

// timeAndVersion reads the transaction's start time and the owner's desired
// config revision (0 when it has no config_revisions row).
func timeAndVersion(ctx context.Context, q *sqlc.Queries, owner pgtype.UUID) (now time.Time, version uint64, err error) {
	ts, err := q.SnapshotTime(ctx)
	if err != nil {
		return time.Time{}, 0, err
	}
	if !ts.Valid || ts.InfinityModifier != pgtype.Finite {
		return time.Time{}, 0, errors.New("the transaction time is not a finite time")
	}
	rev, err := q.GetConfigRevision(ctx, owner)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ts.Time, 0, nil
	case err != nil:
		return time.Time{}, 0, err
	case rev.DesiredRevision < 0:
		return time.Time{}, 0, fmt.Errorf("desired revision %d is negative", rev.DesiredRevision)
	}
	return ts.Time, uint64(rev.DesiredRevision), nil
}

// readRecords reads the owner's records with their models, members and
// prices.
func readRecords(ctx context.Context, q *sqlc.Queries, owner pgtype.UUID,
	records *[]sqlc.ProviderRecord, models *[]sqlc.RecordModel, members *[]sqlc.PoolMember,
	recordPrices *[]sqlc.RecordPrice, memberPrices *[]sqlc.MemberPrice,
) error {
	var err error
	if *records, err = q.ListProviderRecords(ctx, owner); err != nil {
		return err
	}
	if *models, err = q.ListOwnerRecordModels(ctx, owner); err != nil {
		return err
	}
	if *members, err = q.ListOwnerPoolMembers(ctx, owner); err != nil {
		return err
	}
	if *recordPrices, err = q.ListOwnerRecordPrices(ctx, owner); err != nil {
		return err
	}
	if *memberPrices, err = q.ListOwnerMemberPrices(ctx, owner); err != nil {
		return err
	}
	return nil
}
