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

-- name: StalledOutbox :one
-- StalledOutbox counts unpublished outbox rows created before `before`, of one
-- tenant (tenant_id NULL: the cluster snapshot) or of all when all_tenants.
SELECT count(*) AS stalled, min(created_at)::timestamptz AS oldest
FROM outbox
WHERE published_at IS NULL AND created_at < @before
  AND (@all_tenants::bool OR tenant_id IS NOT DISTINCT FROM sqlc.narg(tenant_id)::uuid);

-- name: ListOutboxSince :many
-- ListOutboxSince lists outbox rows with id > after_id in id order (tests and
-- the publisher's diagnostics).
SELECT * FROM outbox WHERE id > @after_id ORDER BY id;

-- name: ListConfigRevisions :many
-- ListConfigRevisions lists the publication state of every snapshot, the
-- cluster's (tenant_id NULL) included (the publisher's reconcile at start).
SELECT * FROM config_revisions ORDER BY updated_at;
