-- name: InsertOutbox :one
-- InsertOutbox announces a change of a tenant's config (tenant_id NULL: the
-- cluster snapshot); write it in the transaction of the change.
INSERT INTO outbox (tenant_id, kind, payload)
VALUES (sqlc.narg(tenant_id)::uuid, @kind, @payload)
RETURNING *;

-- name: ListUnpublishedOutbox :many
-- ListUnpublishedOutbox returns the oldest unpublished rows. Inside a
-- transaction it also claims them: rows another publisher holds are skipped.
SELECT * FROM outbox
WHERE published_at IS NULL
ORDER BY id
LIMIT @max_rows
FOR UPDATE SKIP LOCKED;

-- name: MarkOutboxPublished :execrows
UPDATE outbox SET published_at = now()
WHERE id = ANY(@ids::bigint[]) AND published_at IS NULL;

-- name: DeletePublishedOutbox :execrows
DELETE FROM outbox WHERE published_at IS NOT NULL AND published_at < @before;

-- name: BumpConfigRevision :one
-- BumpConfigRevision raises the desired revision of a tenant's snapshot
-- (tenant_id NULL: the cluster's), creating its row at revision 1.
INSERT INTO config_revisions (tenant_id)
VALUES (sqlc.narg(tenant_id)::uuid)
ON CONFLICT (scope) DO UPDATE
SET desired_revision = config_revisions.desired_revision + 1, updated_at = now()
RETURNING *;

-- name: GetConfigRevision :one
SELECT * FROM config_revisions WHERE scope = owner_scope(sqlc.narg(tenant_id)::uuid);

-- name: MarkConfigPublished :one
-- MarkConfigPublished records that revision was published; it never moves the
-- published revision backwards.
UPDATE config_revisions
SET published_revision = GREATEST(published_revision, @revision::bigint), published_at = now()
WHERE scope = owner_scope(sqlc.narg(tenant_id)::uuid)
RETURNING *;

-- name: ListConfigRevisionsBehind :many
-- ListConfigRevisionsBehind lists snapshots whose published revision is behind
-- (the periodic resync).
SELECT * FROM config_revisions WHERE published_revision < desired_revision ORDER BY updated_at;

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
