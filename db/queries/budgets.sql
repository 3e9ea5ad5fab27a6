-- name: UpsertBudget :one
-- UpsertBudget creates the tenant's budget of that name or changes its limit,
-- period and key (keeping what was spent).
INSERT INTO budgets (tenant_id, name, limit_nanos, period, key_id)
VALUES (@tenant_id, @name, @limit_nanos, @period, sqlc.narg(key_id)::uuid)
ON CONFLICT (tenant_id, name) DO UPDATE
SET limit_nanos = EXCLUDED.limit_nanos,
    period = EXCLUDED.period,
    key_id = EXCLUDED.key_id,
    updated_at = now()
RETURNING *;

-- name: GetBudget :one
SELECT * FROM budgets WHERE tenant_id = @tenant_id AND name = @name;

-- name: GetBudgetByID :one
SELECT * FROM budgets WHERE tenant_id = @tenant_id AND id = @id;

-- name: ListBudgets :many
SELECT * FROM budgets WHERE tenant_id = @tenant_id ORDER BY name;

-- name: DeleteBudget :execrows
DELETE FROM budgets WHERE tenant_id = @tenant_id AND name = @name;

-- name: AddBudgetSpend :one
-- AddBudgetSpend settles spend into a budget (usage ingest).
UPDATE budgets SET spent_nanos = spent_nanos + @amount_nanos::bigint, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id
RETURNING *;

-- name: StartBudgetPeriod :one
-- StartBudgetPeriod begins a new day or month period: nothing spent yet.
UPDATE budgets SET spent_nanos = 0, period_start = @period_start, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id
RETURNING *;

-- name: CreateBudgetLease :one
INSERT INTO budget_leases (budget_id, edge_id, granted_nanos, expires_at)
VALUES (@budget_id, @edge_id, @granted_nanos, @expires_at)
RETURNING *;

-- name: GetBudgetLease :one
SELECT * FROM budget_leases WHERE id = @id;

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
