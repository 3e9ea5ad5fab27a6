-- Calls and their attempts: what edges report (usage ingest, see
-- ingest.sql) and what the admin API and console list.

-- name: InsertCall :execrows
-- InsertCall stores a call once: a replay of the same call_id changes nothing
-- and returns 0, so the caller settles budgets only when it returns 1. A call
-- of a tenant that no longer exists fails with a foreign key violation.
INSERT INTO calls (
    call_id, tenant_id, key_id, edge_id, endpoint, model, stream, record_id,
    record_name, member_name, status, outcome, error_code,
    input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
    reserved_nanos, cost_nanos, cost_flagged, job_hash,
    cache_job_hash, cache_previous_member, cache_member, cache_miss,
    cache_previous_cached_input_tokens, cache_estimated_miss_cost_nanos,
    started_at, duration_ms, member_format, translated
) VALUES (
    @call_id, @tenant_id, sqlc.narg(key_id)::uuid, @edge_id, @endpoint, @model, @stream, sqlc.narg(record_id)::uuid,
    @record_name, @member_name, @status, @outcome, @error_code,
    @input_tokens, @output_tokens, @cache_read_tokens, @cache_write_tokens,
    @reserved_nanos, @cost_nanos, @cost_flagged, @job_hash,
    @cache_job_hash, @cache_previous_member, @cache_member, @cache_miss,
    @cache_previous_cached_input_tokens, @cache_estimated_miss_cost_nanos,
    @started_at, @duration_ms, @member_format, @translated
)
ON CONFLICT (call_id) DO NOTHING;

-- name: InsertCallAttempt :execrows
INSERT INTO call_attempts (
    call_id, attempt_index, record_name, member_name, status, outcome, kind,
    reason, latency_ms, cost_nanos, cost_estimated, started_at
) VALUES (
    @call_id, @attempt_index, @record_name, @member_name, @status, @outcome, @kind,
    @reason, @latency_ms, @cost_nanos, @cost_estimated, sqlc.narg(started_at)
)
ON CONFLICT (call_id, attempt_index) DO NOTHING;

-- name: GetCall :one
SELECT * FROM calls WHERE tenant_id = @tenant_id AND call_id = @call_id;

-- name: GetCallWithKey :one
SELECT sqlc.embed(c), COALESCE(k.name, '')::text AS key_name
FROM calls c
LEFT JOIN api_keys k ON k.id = c.key_id
WHERE c.tenant_id = @tenant_id AND c.call_id = @call_id;

-- name: ListCallsBetween :many
-- ListCallsBetween lists a tenant's calls started in [from, to), oldest first
-- (usage export).
SELECT * FROM calls
WHERE tenant_id = @tenant_id AND started_at >= @from_time AND started_at < @to_time
ORDER BY started_at, call_id;

-- name: ListCallsFiltered :many
-- ListCallsFiltered lists a tenant's calls newest first (started_at, then
-- call_id, both descending), narrowed by every filter that is set (empty
-- text and NULL mean "any"), after the cursor when has_cursor. record_name
-- and member_name match the call's own record and member or any attempt's.
SELECT sqlc.embed(c), COALESCE(k.name, '')::text AS key_name
FROM calls c
LEFT JOIN api_keys k ON k.id = c.key_id
WHERE c.tenant_id = @tenant_id
  AND (sqlc.narg(start_time)::timestamptz IS NULL OR c.started_at >= sqlc.narg(start_time)::timestamptz)
  AND (sqlc.narg(end_time)::timestamptz IS NULL OR c.started_at < sqlc.narg(end_time)::timestamptz)
  AND (@key_name::text = '' OR k.name = @key_name::text)
  AND (@model::text = '' OR c.model = @model::text)
  AND (@outcome::text = '' OR c.outcome = @outcome::text)
  AND (@error_code::text = '' OR c.error_code = @error_code::text)
  AND ((@record_name::text = '' AND @member_name::text = '')
       OR ((@record_name::text = '' OR c.record_name = @record_name::text)
           AND (@member_name::text = '' OR c.member_name = @member_name::text))
       OR EXISTS (SELECT 1 FROM call_attempts a
                  WHERE a.call_id = c.call_id
                    AND (@record_name::text = '' OR a.record_name = @record_name::text)
                    AND (@member_name::text = '' OR a.member_name = @member_name::text)))
  AND (NOT @has_cursor::bool OR (c.started_at, c.call_id) < (@cursor_started_at::timestamptz, @cursor_call_id::text))
ORDER BY c.started_at DESC, c.call_id DESC
LIMIT @max_rows;

-- name: ListKeysLastUsed :many
-- ListKeysLastUsed returns the start of each key's latest recorded call.
SELECT key_id, max(started_at)::timestamptz AS last_used
FROM calls
WHERE tenant_id = @tenant_id AND key_id IS NOT NULL
GROUP BY key_id;

-- name: ListCallAttempts :many
SELECT a.* FROM call_attempts a
JOIN calls c ON c.call_id = a.call_id
WHERE c.tenant_id = @tenant_id AND a.call_id = @call_id
ORDER BY a.attempt_index;

-- name: ListCallAttemptsForCalls :many
-- ListCallAttemptsForCalls lists the attempts of the tenant's calls with the
-- given ids.
SELECT a.* FROM call_attempts a
JOIN calls c ON c.call_id = a.call_id
WHERE c.tenant_id = @tenant_id AND a.call_id = ANY(@call_ids::text[])
ORDER BY a.call_id, a.attempt_index;

-- name: ListCallAttemptsBetween :many
-- ListCallAttemptsBetween lists the attempts of the tenant's calls started in
-- [from_time, to_time) (usage export).
SELECT a.* FROM call_attempts a
JOIN calls c ON c.call_id = a.call_id
WHERE c.tenant_id = @tenant_id AND c.started_at >= @from_time AND c.started_at < @to_time
ORDER BY a.call_id, a.attempt_index;
