package distrib

// Usage ingest's SQL. It is written here rather than in db/queries because
// its arguments are column arrays built by callColumns, which sqlc would
// type field by field.

// ingestStaged writes one batch in one statement and one round trip. $1 is
// the batch's distinct tenants; $2-$30 are the calls' columns and $31-$42
// the attempts' columns, one array each (callColumns.args), which it
// unnests rather than staging them in a table first. It inserts the calls
// of tenants that exist (a key that is not the tenant's becomes NULL),
// skipping call ids already stored, and the attempts of the calls it
// inserted (a call inserted now has no attempts yet, and toRow keeps one
// attempt per index, so they need no ON CONFLICT). It returns, for each
// tenant of $1 that exists, one row per key (NULL: none) of the cost and
// count of the calls it inserted, or one row with count NULL when it
// inserted none of the tenant's calls: the rows with a count are exactly
// what ingestSettle must add to budgets, and the tenants missing from the
// answer are those whose records are dropped. Replaying a call therefore
// changes nothing and settles nothing. Which tenants exist is read once,
// in the statement's snapshot, for both uses.
const ingestStaged = `
WITH ins AS (
    INSERT INTO calls (
        call_id, tenant_id, key_id, edge_id, endpoint, model, stream, record_id,
        record_name, member_name, status, outcome, error_code,
        input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
        reserved_nanos, cost_nanos, cost_flagged, job_hash,
        cache_job_hash, cache_previous_member, cache_member, cache_miss,
        cache_previous_cached_input_tokens, cache_estimated_miss_cost_nanos,
        started_at, duration_ms)
    SELECT c.call_id, c.tenant_id, k.id, c.edge_id, c.endpoint, c.model, c.stream, c.record_id,
        c.record_name, c.member_name, c.status, c.outcome, c.error_code,
        c.input_tokens, c.output_tokens, c.cache_read_tokens, c.cache_write_tokens,
        c.reserved_nanos, c.cost_nanos, c.cost_flagged, c.job_hash,
        c.cache_job_hash, c.cache_previous_member, c.cache_member, c.cache_miss,
        c.cache_previous_cached_input_tokens, c.cache_estimated_miss_cost_nanos,
        c.started_at, c.duration_ms
    FROM unnest($2::text[], $3::uuid[], $4::uuid[], $5::text[], $6::text[], $7::text[], $8::bool[], $9::uuid[],
                $10::text[], $11::text[], $12::int4[], $13::text[], $14::text[],
                $15::int8[], $16::int8[], $17::int8[], $18::int8[],
                $19::int8[], $20::int8[], $21::bool[], $22::text[],
                $23::text[], $24::text[], $25::text[], $26::text[],
                $27::int8[], $28::int8[], $29::timestamptz[], $30::int8[])
        AS c(call_id, tenant_id, key_id, edge_id, endpoint, model, stream, record_id,
             record_name, member_name, status, outcome, error_code,
             input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
             reserved_nanos, cost_nanos, cost_flagged, job_hash,
             cache_job_hash, cache_previous_member, cache_member, cache_miss,
             cache_previous_cached_input_tokens, cache_estimated_miss_cost_nanos,
             started_at, duration_ms)
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
    FROM unnest($31::text[], $32::int4[], $33::text[], $34::text[], $35::int4[], $36::text[], $37::text[],
                $38::text[], $39::int8[], $40::int8[], $41::bool[], $42::timestamptz[])
        AS a(call_id, attempt_index, record_name, member_name, status, outcome, kind,
             reason, latency_ms, cost_nanos, cost_estimated, started_at)
    JOIN ins ON ins.call_id = a.call_id
), spend AS (
    SELECT tenant_id, key_id, sum(cost_nanos)::bigint AS amount, count(*) AS n
    FROM ins GROUP BY tenant_id, key_id
)
SELECT t.id, s.key_id, s.amount, s.n
FROM tenants t
LEFT JOIN spend s ON s.tenant_id = t.id
WHERE t.id = ANY($1::uuid[])
`

// ingestKeyTenants returns the tenant of each key of $1 that exists.
const ingestKeyTenants = `SELECT id, tenant_id FROM api_keys WHERE id = ANY($1::uuid[])`

// ingestLockBudgets locks, in id order, every budget that the spend of
// ($1 tenant, $2 key, $3 amount) applies to: the tenant's budgets without a
// key, and the key's. Locking in one order keeps two ingest transactions
// (workers, or control planes) from deadlocking on budgets they share.
const ingestLockBudgets = `
SELECT b.id FROM budgets b
WHERE b.id IN (
    SELECT bb.id FROM budgets bb
    JOIN unnest($1::uuid[], $2::uuid[], $3::bigint[]) AS s(tenant_id, key_id, amount)
      ON bb.tenant_id = s.tenant_id AND (bb.key_id IS NULL OR bb.key_id = s.key_id))
ORDER BY b.id
FOR NO KEY UPDATE
`

// ingestSettle adds the spend of ($1 tenant, $2 key, $3 amount) to every
// budget it applies to, first starting a new UTC day or month period when
// the stored one has ended at $4 (the rule of snapshot.currentPeriod). It
// returns how many budgets it changed.
const ingestSettle = `
WITH spend AS (
    SELECT b.id, sum(s.amount)::bigint AS amount
    FROM unnest($1::uuid[], $2::uuid[], $3::bigint[]) AS s(tenant_id, key_id, amount)
    JOIN budgets b ON b.tenant_id = s.tenant_id AND (b.key_id IS NULL OR b.key_id = s.key_id)
    GROUP BY b.id
)
UPDATE budgets b
SET spent_nanos = CASE WHEN b.period <> 'total' AND b.period_start < date_trunc(b.period, $4::timestamptz, 'UTC')
                       THEN 0 ELSE b.spent_nanos END + s.amount,
    period_start = CASE WHEN b.period <> 'total' AND b.period_start < date_trunc(b.period, $4::timestamptz, 'UTC')
                        THEN date_trunc(b.period, $4::timestamptz, 'UTC') ELSE b.period_start END,
    updated_at = now()
FROM spend s
WHERE b.id = s.id
`
