-- 000004_budgets: budgets and the leases that edges reserve against
-- (DESIGN.md section 1 step 5, R-COST-1, R-COST-2). Amounts are nano-dollars.

-- budgets limit the spend of a tenant, or of one of its keys when key_id is
-- set. spent_nanos is the settled spend since period_start (reset by the
-- control plane when a day or month period rolls over; never for 'total').
CREATE TABLE budgets (
    id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id    uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name         text        NOT NULL,
    limit_nanos  bigint      NOT NULL,
    period       text        NOT NULL,
    key_id       uuid,
    spent_nanos  bigint      NOT NULL DEFAULT 0,
    period_start timestamptz NOT NULL DEFAULT now(),
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT budgets_name_format CHECK (name ~ '^[a-z0-9_-]{1,64}$'),
    CONSTRAINT budgets_tenant_name_key UNIQUE (tenant_id, name),
    CONSTRAINT budgets_limit_nonnegative CHECK (limit_nanos >= 0),
    CONSTRAINT budgets_spent_nonnegative CHECK (spent_nanos >= 0),
    CONSTRAINT budgets_period_check CHECK (period IN ('day', 'month', 'total')),
    -- A key budget names a key of the same tenant.
    CONSTRAINT budgets_key_fkey
        FOREIGN KEY (key_id, tenant_id) REFERENCES api_keys (id, tenant_id) ON DELETE CASCADE
);
CREATE INDEX budgets_key_idx ON budgets (key_id) WHERE key_id IS NOT NULL;

-- budget_leases: a slice of a budget's remaining amount granted to one edge
-- until expires_at. The edge reports what it used and returns the rest;
-- closed_at is set when the lease is settled. Outstanding (unclosed) leases
-- bound the overspend.
CREATE TABLE budget_leases (
    id             uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    budget_id      uuid        NOT NULL REFERENCES budgets (id) ON DELETE CASCADE,
    edge_id        text        NOT NULL,
    granted_nanos  bigint      NOT NULL,
    used_nanos     bigint      NOT NULL DEFAULT 0,
    returned_nanos bigint      NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,
    closed_at      timestamptz,
    CONSTRAINT budget_leases_edge_not_empty CHECK (edge_id <> ''),
    CONSTRAINT budget_leases_amounts_nonnegative CHECK (
        granted_nanos >= 0 AND used_nanos >= 0 AND returned_nanos >= 0),
    CONSTRAINT budget_leases_within_grant CHECK (used_nanos + returned_nanos <= granted_nanos),
    CONSTRAINT budget_leases_expiry_after_creation CHECK (expires_at > created_at)
);
CREATE INDEX budget_leases_open_idx ON budget_leases (budget_id) WHERE closed_at IS NULL;
CREATE INDEX budget_leases_edge_idx ON budget_leases (edge_id);

