-- name: InsertAudit :one
INSERT INTO audit_log (admin_id, actor, tenant_id, action, object_kind, object_name, details)
VALUES (sqlc.narg(admin_id)::uuid, @actor, sqlc.narg(tenant_id)::uuid, @action, @object_kind, @object_name, @details)
RETURNING *;

-- name: ListAudit :many
-- ListAudit pages backwards through a tenant's audit entries (tenant_id NULL:
-- cluster entries): entries with id < before_id, newest first.
SELECT * FROM audit_log
WHERE tenant_id IS NOT DISTINCT FROM sqlc.narg(tenant_id)::uuid AND id < @before_id
ORDER BY id DESC
LIMIT @max_rows;

-- name: ListAuditEvents :many
-- ListAuditEvents pages backwards (id < before_id, newest first) through the
-- audit log: one tenant's entries, or every entry when all_tenants is true.
SELECT a.*, COALESCE(t.name, '')::text AS tenant_name
FROM audit_log a
LEFT JOIN tenants t ON t.id = a.tenant_id
WHERE (@all_tenants::bool OR a.tenant_id = sqlc.narg(tenant_id)::uuid)
  AND (sqlc.narg(start_time)::timestamptz IS NULL OR a.at >= sqlc.narg(start_time)::timestamptz)
  AND (sqlc.narg(end_time)::timestamptz IS NULL OR a.at < sqlc.narg(end_time)::timestamptz)
  AND (@actor::text = '' OR a.actor = @actor::text)
  AND (@target_prefix::text = '' OR starts_with(a.object_kind || '/' || a.object_name, @target_prefix::text))
  AND a.id < @before_id
ORDER BY a.id DESC
LIMIT @max_rows;

-- name: ListAuditForObjects :many
-- ListAuditForObjects returns, for each object id given (as recorded in the
-- "id" field of the details), the actor and the "prefix" detail of the latest
-- audit entry of that object kind and action (e.g. who created each key and
-- the key's plaintext prefix). Callers pass only ids they may see.
SELECT DISTINCT ON (a.details->>'id') (a.details->>'id')::text AS object_id, a.actor,
       COALESCE(a.details->>'prefix', '')::text AS prefix
FROM audit_log a
WHERE a.object_kind = @object_kind AND a.action = @action
  AND (a.details->>'id') = ANY(@ids::text[])
ORDER BY a.details->>'id', a.id DESC;

-- name: ListAuditLastActors :many
-- ListAuditLastActors returns, per object name of the owner's audit entries of
-- that kind and action, the actor of the latest one (e.g. who last set each
-- secret).
SELECT DISTINCT ON (a.object_name) a.object_name, a.actor
FROM audit_log a
WHERE a.tenant_id IS NOT DISTINCT FROM sqlc.narg(tenant_id)::uuid
  AND a.object_kind = @object_kind AND a.action = @action
ORDER BY a.object_name, a.id DESC;
