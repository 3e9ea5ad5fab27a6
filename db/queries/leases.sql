-- Budget leases (controlplane/internal/distrib): the share of a budget an
-- edge may spend before its call records are settled.

-- name: LockBudgetForLease :one
-- LockBudgetForLease reads a tenant's budget and locks its row until the end
-- of the transaction, so that the leases of one budget are granted one at a
-- time (and usage settlement waits for a grant in progress).
SELECT * FROM budgets WHERE tenant_id = @tenant_id AND id = @id FOR UPDATE;

-- name: LeaseCommitments :one
-- LeaseCommitments is what a budget's leases may still add to its settled
-- spend, read through the index of open leases (closed_at IS NULL):
--   * an active lease (nothing used or returned recorded yet) counts its
--     whole grant while it expires after reclaim_cutoff (now minus the
--     reclaim grace): its edge may still spend all of it;
--   * a returned lease (used_nanos + returned_nanos > 0; expires_at moved to
--     when it was returned) counts what it used while it was returned after
--     settle_cutoff (now minus the settle lag): the call records of that use
--     may not have reached spent_nanos yet.
-- other_edges counts the other edges holding an active, unexpired lease.
SELECT
    COALESCE(sum(granted_nanos - returned_nanos) FILTER (
        WHERE (used_nanos + returned_nanos = 0 AND expires_at > @reclaim_cutoff::timestamptz)
           OR (used_nanos + returned_nanos > 0 AND expires_at > @settle_cutoff::timestamptz)), 0)::bigint AS committed_nanos,
    count(DISTINCT edge_id) FILTER (
        WHERE used_nanos + returned_nanos = 0 AND expires_at > @now::timestamptz AND edge_id <> @edge_id::text) AS other_edges
FROM budget_leases
WHERE budget_id = @budget_id AND closed_at IS NULL;

-- name: GrantBudgetLease :one
-- GrantBudgetLease records a lease granted to an edge until expires_at.
INSERT INTO budget_leases (budget_id, edge_id, granted_nanos, expires_at)
VALUES (@budget_id, @edge_id, @granted_nanos, @expires_at)
RETURNING *;

-- name: CreateBudgetLease :one
INSERT INTO budget_leases (budget_id, edge_id, granted_nanos, expires_at)
VALUES (@budget_id, @edge_id, @granted_nanos, @expires_at)
RETURNING *;

-- name: GetBudgetLease :one
SELECT * FROM budget_leases WHERE id = @id;

-- name: ReturnBudgetLease :one
-- ReturnBudgetLease records that an edge gave a lease back: returned_nanos
-- (at most the grant) was never used, the rest was. The lease stays open,
-- counted at what it used, until the janitor closes it after the settle
-- lag, which runs from the return: expires_at becomes the time of the
-- return (even after the lease's expiry; never before its creation).
-- pgx.ErrNoRows when the lease is not this edge's open, unreturned lease of
-- this budget.
UPDATE budget_leases
SET returned_nanos = LEAST(GREATEST(@returned_nanos::bigint, 0), granted_nanos),
    used_nanos = granted_nanos - LEAST(GREATEST(@returned_nanos::bigint, 0), granted_nanos),
    expires_at = GREATEST(@now::timestamptz, created_at + interval '1 microsecond')
WHERE id = @id AND budget_id = @budget_id AND edge_id = @edge_id
  AND closed_at IS NULL AND used_nanos + returned_nanos = 0
RETURNING *;

-- name: SettleBudgetLease :one
-- SettleBudgetLease records what the edge used and returned and closes the
-- lease. pgx.ErrNoRows when the lease is already closed.
UPDATE budget_leases
SET used_nanos = @used_nanos, returned_nanos = @returned_nanos, closed_at = now()
WHERE id = @id AND closed_at IS NULL
RETURNING *;

-- name: ListOpenBudgetLeases :many
SELECT * FROM budget_leases WHERE budget_id = @budget_id AND closed_at IS NULL ORDER BY created_at;

-- name: OutstandingLeaseNanos :one
-- OutstandingLeaseNanos is what open leases of a budget may still spend.
SELECT COALESCE(sum(granted_nanos - used_nanos - returned_nanos), 0)::bigint AS outstanding_nanos
FROM budget_leases WHERE budget_id = @budget_id AND closed_at IS NULL;

-- name: ListExpiredBudgetLeases :many
SELECT * FROM budget_leases WHERE closed_at IS NULL AND expires_at <= @now ORDER BY expires_at;

-- name: CloseSettledLeases :execrows
-- CloseSettledLeases closes open leases that no longer count: returned ones
-- returned before settle_cutoff, and active ones that expired before
-- reclaim_cutoff (their edge never gave them back).
UPDATE budget_leases SET closed_at = @now::timestamptz
WHERE closed_at IS NULL
  AND ((used_nanos + returned_nanos > 0 AND expires_at <= @settle_cutoff::timestamptz)
    OR (used_nanos + returned_nanos = 0 AND expires_at <= @reclaim_cutoff::timestamptz));

-- name: DeleteClosedLeasesBefore :execrows
DELETE FROM budget_leases WHERE closed_at IS NOT NULL AND closed_at < @before;
