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

-- name: CountMemberViewsByEdge :many
-- CountMemberViewsByEdge counts each edge's member views observed at or after
-- since: of one owner's records, or of every record when all_owners.
SELECT v.edge_id, count(*) AS views
FROM member_views v
JOIN provider_records r ON r.id = v.record_id
WHERE (@all_owners::bool OR r.scope = owner_scope(sqlc.narg(tenant_id)::uuid))
  AND v.observed_at >= @since
GROUP BY v.edge_id;

-- name: MirrorMemberView :batchexec
-- MirrorMemberView is UpsertMemberView for the view mirror's batches: it
-- keeps an edge's latest view of a member; an older view than the one
-- stored, and a view of a record that no longer exists, change nothing.
INSERT INTO member_views (edge_id, record_id, member_name, view, observed_at)
SELECT @edge_id, r.id, @member_name, @view, @observed_at
FROM provider_records r WHERE r.id = @record_id
ON CONFLICT (edge_id, record_id, member_name) DO UPDATE
SET view = EXCLUDED.view, observed_at = EXCLUDED.observed_at, updated_at = now()
WHERE member_views.observed_at <= EXCLUDED.observed_at;

-- name: MirrorEdge :batchexec
-- MirrorEdge records that an edge reported at last_seen (its latest member
-- view), keeping the version and region it may have reported otherwise.
INSERT INTO edges (id, last_seen, first_seen)
VALUES (@id, @last_seen, LEAST(now(), @last_seen))
ON CONFLICT (id) DO UPDATE
SET last_seen = GREATEST(edges.last_seen, EXCLUDED.last_seen);
