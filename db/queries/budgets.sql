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
