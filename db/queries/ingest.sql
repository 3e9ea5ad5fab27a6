-- Usage ingest (controlplane/internal/distrib/ingest.go): the edges' call
-- records, read from WEIR_USAGE, stored exactly once and settled into
-- budgets. A batch arrives as one array per column, which the queries
-- unnest: one round trip carries a whole batch.

-- name: ListKeyTenants :many
-- ListKeyTenants returns the tenant of each key of @ids that exists.
SELECT id, tenant_id FROM api_keys WHERE id = ANY(@ids::uuid[]);

-- name: IngestCalls :many
-- IngestCalls writes one batch in one statement. @tenants is the batch's
-- distinct tenants; the other arrays are the calls' columns and (attempt_*)
-- the attempts' columns, one array each. It inserts the calls of tenants
-- that exist (a key that is not the tenant's becomes NULL), skipping call
-- ids already stored, and the attempts of the calls it inserted (a call
-- inserted now has no attempts yet, and the caller keeps one attempt per
-- index, so they need no ON CONFLICT). It returns, for each tenant of
-- @tenants that exists, one row per key (NULL: none) of the cost and count
-- of the calls it inserted, or one row with inserted 0 when it inserted
-- none of the tenant's calls: the rows with inserted > 0 are exactly what
-- SettleSpend must add to budgets, and the tenants missing from the answer
-- are those whose records are dropped. Replaying a call therefore changes
-- nothing and settles nothing. Which tenants exist is read once, in the
-- statement's snapshot, for both uses.
WITH ins AS (
    INSERT INTO calls (
        call_id, tenant_id, key_id, edge_id, endpoint, model, stream, record_id,
        record_name, member_name, status, outcome, error_code,
        input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
        reserved_nanos, cost_nanos, cost_flagged, job_hash,
        cache_job_hash, cache_previous_member, cache_member, cache_miss,
        cache_previous_cached_input_tokens, cache_estimated_miss_cost_nanos,
        started_at, duration_ms, member_format, translated)
    SELECT c.call_id, c.tenant_id, k.id, c.edge_id, c.endpoint, c.model, c.stream, c.record_id,
        c.record_name, c.member_name, c.status, c.outcome, c.error_code,
        c.input_tokens, c.output_tokens, c.cache_read_tokens, c.cache_write_tokens,
        c.reserved_nanos, c.cost_nanos, c.cost_flagged, c.job_hash,
        c.cache_job_hash, c.cache_previous_member, c.cache_member, c.cache_miss,
        c.cache_previous_cached_input_tokens, c.cache_estimated_miss_cost_nanos,
        c.started_at, c.duration_ms, c.member_format, c.translated
    FROM (SELECT unnest(@call_id::text[]) AS call_id,
                 unnest(@tenant_id::uuid[]) AS tenant_id,
                 unnest(@key_id::uuid[]) AS key_id,
                 unnest(@edge_id::text[]) AS edge_id,
                 unnest(@endpoint::text[]) AS endpoint,
                 unnest(@model::text[]) AS model,
                 unnest(@stream::bool[]) AS stream,
                 unnest(@record_id::uuid[]) AS record_id,
                 unnest(@record_name::text[]) AS record_name,
                 unnest(@member_name::text[]) AS member_name,
                 unnest(@status::int4[]) AS status,
                 unnest(@outcome::text[]) AS outcome,
                 unnest(@error_code::text[]) AS error_code,
                 unnest(@input_tokens::int8[]) AS input_tokens,
                 unnest(@output_tokens::int8[]) AS output_tokens,
                 unnest(@cache_read_tokens::int8[]) AS cache_read_tokens,
                 unnest(@cache_write_tokens::int8[]) AS cache_write_tokens,
                 unnest(@reserved_nanos::int8[]) AS reserved_nanos,
                 unnest(@cost_nanos::int8[]) AS cost_nanos,
                 unnest(@cost_flagged::bool[]) AS cost_flagged,
                 unnest(@job_hash::text[]) AS job_hash,
                 unnest(@cache_job_hash::text[]) AS cache_job_hash,
                 unnest(@cache_previous_member::text[]) AS cache_previous_member,
                 unnest(@cache_member::text[]) AS cache_member,
                 unnest(@cache_miss::text[]) AS cache_miss,
                 unnest(@cache_previous_cached_input_tokens::int8[]) AS cache_previous_cached_input_tokens,
                 unnest(@cache_estimated_miss_cost_nanos::int8[]) AS cache_estimated_miss_cost_nanos,
                 unnest(@started_at::timestamptz[]) AS started_at,
                 unnest(@duration_ms::int8[]) AS duration_ms,
                 unnest(@member_format::text[]) AS member_format,
                 unnest(@translated::bool[]) AS translated) AS c
    JOIN tenants t ON t.id = c.tenant_id
    LEFT JOIN api_keys k ON k.id = c.key_id AND k.tenant_id = c.tenant_id
    ON CONFLICT (call_id) DO NOTHING
    RETURNING call_id, tenant_id, key_id, cost_nanos
), att AS (
    INSERT INTO call_attempts (
        call_id, attempt_index, record_name, member_name, status, outcome, kind,
        reason, latency_ms, cost_nanos, cost_estimated, started_at)
    SELECT a.call_id, a.attempt_index, a.record_name, a.member_name, a.status, a.outcome, a.kind,
        a.reason, a.latency_ms, a.cost_nanos, a.cost_estimated, a.started_at
    FROM (SELECT unnest(@attempt_call_id::text[]) AS call_id,
                 unnest(@attempt_index::int4[]) AS attempt_index,
                 unnest(@attempt_record_name::text[]) AS record_name,
                 unnest(@attempt_member_name::text[]) AS member_name,
                 unnest(@attempt_status::int4[]) AS status,
                 unnest(@attempt_outcome::text[]) AS outcome,
                 unnest(@attempt_kind::text[]) AS kind,
                 unnest(@attempt_reason::text[]) AS reason,
                 unnest(@attempt_latency_ms::int8[]) AS latency_ms,
                 unnest(@attempt_cost_nanos::int8[]) AS cost_nanos,
                 unnest(@attempt_cost_estimated::bool[]) AS cost_estimated,
                 unnest(@attempt_started_at::timestamptz[]) AS started_at) AS a
    JOIN ins ON ins.call_id = a.call_id
), spend AS (
    SELECT ins.tenant_id, ins.key_id, sum(ins.cost_nanos)::bigint AS amount, count(*) AS n
    FROM ins GROUP BY ins.tenant_id, ins.key_id
)
SELECT t.id AS tenant_id, s.key_id, COALESCE(s.amount, 0)::bigint AS amount_nanos,
       COALESCE(s.n, 0)::bigint AS inserted
FROM tenants t
LEFT JOIN spend s ON s.tenant_id = t.id
WHERE t.id = ANY(@tenants::uuid[]);

-- name: LockSpendBudgets :exec
-- LockSpendBudgets locks, in id order, every budget that the spend of
-- (@tenant_id, @key_id) pairs applies to: the tenant's budgets without a
-- key, and the key's. Locking in one order keeps two ingest transactions
-- (workers, or control planes) from deadlocking on budgets they share.
SELECT b.id FROM budgets b
WHERE b.id IN (
    SELECT bb.id FROM budgets bb
    JOIN (SELECT unnest(@tenant_id::uuid[]) AS tenant_id,
                 unnest(@key_id::uuid[]) AS key_id) AS s
      ON bb.tenant_id = s.tenant_id AND (bb.key_id IS NULL OR bb.key_id = s.key_id))
ORDER BY b.id
FOR NO KEY UPDATE;

-- name: SettleSpend :exec
-- SettleSpend adds the spend of (@tenant_id, @key_id, @amount_nanos) to
-- every budget it applies to, first starting a new UTC day or month period
-- when the stored one has ended at @now (the rule of
-- snapshot.currentPeriod). Run LockSpendBudgets first.
WITH spend AS (
    SELECT b.id, sum(s.amount)::bigint AS amount
    FROM (SELECT unnest(@tenant_id::uuid[]) AS tenant_id,
                 unnest(@key_id::uuid[]) AS key_id,
                 unnest(@amount_nanos::bigint[]) AS amount) AS s
    JOIN budgets b ON b.tenant_id = s.tenant_id AND (b.key_id IS NULL OR b.key_id = s.key_id)
    GROUP BY b.id
)
UPDATE budgets b
SET spent_nanos = CASE WHEN b.period <> 'total' AND b.period_start < date_trunc(b.period, @now::timestamptz, 'UTC')
                       THEN 0 ELSE b.spent_nanos END + s.amount,
    period_start = CASE WHEN b.period <> 'total' AND b.period_start < date_trunc(b.period, @now::timestamptz, 'UTC')
                        THEN date_trunc(b.period, @now::timestamptz, 'UTC') ELSE b.period_start END,
    updated_at = now()
FROM spend s
WHERE b.id = s.id;
