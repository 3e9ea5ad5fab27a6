-- name: UpsertEdge :one
INSERT INTO edges (id, version, region, last_seen)
VALUES (@id, @version, @region, @last_seen)
ON CONFLICT (id) DO UPDATE
SET version = EXCLUDED.version, region = EXCLUDED.region,
    last_seen = GREATEST(edges.last_seen, EXCLUDED.last_seen)
RETURNING *;

-- name: ListEdges :many
SELECT * FROM edges ORDER BY id;

-- name: DeleteEdgesNotSeenSince :execrows
DELETE FROM edges WHERE last_seen < @since;

-- name: UpsertMemberView :execrows
-- UpsertMemberView keeps an edge's latest view of a member; an older view than
-- the one stored and a view of a record that no longer exists change nothing
-- (0 rows).
INSERT INTO member_views (edge_id, record_id, member_name, view, observed_at)
SELECT @edge_id, r.id, @member_name, @view, @observed_at
FROM provider_records r WHERE r.id = @record_id
ON CONFLICT (edge_id, record_id, member_name) DO UPDATE
SET view = EXCLUDED.view, observed_at = EXCLUDED.observed_at, updated_at = now()
WHERE member_views.observed_at <= EXCLUDED.observed_at;

-- name: ListMemberViews :many
-- ListMemberViews lists every edge's view of the members of one record.
SELECT v.* FROM member_views v
JOIN provider_records r ON r.id = v.record_id
WHERE r.scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND r.name = @record_name
ORDER BY v.member_name, v.edge_id;

-- name: ListOwnerMemberViews :many
SELECT v.*, r.name AS record_name FROM member_views v
JOIN provider_records r ON r.id = v.record_id
WHERE r.scope = owner_scope(sqlc.narg(tenant_id)::uuid)
ORDER BY r.name, v.member_name, v.edge_id;

-- name: DeleteMemberViewsBefore :execrows
DELETE FROM member_views WHERE observed_at < @before;

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
    started_at, duration_ms
) VALUES (
    @call_id, @tenant_id, sqlc.narg(key_id)::uuid, @edge_id, @endpoint, @model, @stream, sqlc.narg(record_id)::uuid,
    @record_name, @member_name, @status, @outcome, @error_code,
    @input_tokens, @output_tokens, @cache_read_tokens, @cache_write_tokens,
    @reserved_nanos, @cost_nanos, @cost_flagged, @job_hash,
    @cache_job_hash, @cache_previous_member, @cache_member, @cache_miss,
    @cache_previous_cached_input_tokens, @cache_estimated_miss_cost_nanos,
    @started_at, @duration_ms
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

-- name: ListCallsBetween :many
-- ListCallsBetween lists a tenant's calls started in [from, to), oldest first
-- (usage export).
SELECT * FROM calls
WHERE tenant_id = @tenant_id AND started_at >= @from_time AND started_at < @to_time
ORDER BY started_at, call_id;

-- name: ListCallAttempts :many
SELECT a.* FROM call_attempts a
JOIN calls c ON c.call_id = a.call_id
WHERE c.tenant_id = @tenant_id AND a.call_id = @call_id
ORDER BY a.attempt_index;
