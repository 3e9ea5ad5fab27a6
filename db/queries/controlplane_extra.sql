-- Queries the control plane's admin API needs beyond the foundation's:
-- authentication, admin management, filtered listings, doctor checks.
-- Every tenant-scoped query takes the tenant (or owner scope) as a parameter.

-- name: CountClusterAdmins :one
-- CountClusterAdmins counts the enabled admins holding cluster_admin.
SELECT count(DISTINCT r.admin_id) FROM admin_roles r
JOIN admins a ON a.id = r.admin_id
WHERE r.role = 'cluster_admin' AND NOT a.disabled;

-- name: ListAdminGrants :many
-- ListAdminGrants lists an admin's role grants with the tenants' names
-- (tenant_name is NULL for cluster_admin).
SELECT r.role, r.tenant_id, t.name AS tenant_name
FROM admin_roles r
LEFT JOIN tenants t ON t.id = r.tenant_id
WHERE r.admin_id = @admin_id
ORDER BY r.role, t.name;

-- name: ListAdminsWithTenantRole :many
-- ListAdminsWithTenantRole lists the admins holding any role on the tenant.
SELECT a.* FROM admins a
WHERE EXISTS (SELECT 1 FROM admin_roles r WHERE r.admin_id = a.id AND r.tenant_id = @tenant_id)
ORDER BY a.name;

-- name: AdminLastSeen :one
-- AdminLastSeen is the latest use of any of the admin's tokens (NULL if none).
SELECT max(last_used_at)::timestamptz AS last_seen FROM admin_tokens WHERE admin_id = @admin_id;

-- name: GetAdminToken :one
SELECT * FROM admin_tokens WHERE id = @id;

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

-- name: ListKeysLastUsed :many
-- ListKeysLastUsed returns the start of each key's latest recorded call.
SELECT key_id, max(started_at)::timestamptz AS last_used
FROM calls
WHERE tenant_id = @tenant_id AND key_id IS NOT NULL
GROUP BY key_id;

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

-- name: GetCallWithKey :one
SELECT sqlc.embed(c), COALESCE(k.name, '')::text AS key_name
FROM calls c
LEFT JOIN api_keys k ON k.id = c.key_id
WHERE c.tenant_id = @tenant_id AND c.call_id = @call_id;

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

-- name: CountMemberViewsByEdge :many
-- CountMemberViewsByEdge counts each edge's member views observed at or after
-- since: of one owner's records, or of every record when all_owners.
SELECT v.edge_id, count(*) AS views
FROM member_views v
JOIN provider_records r ON r.id = v.record_id
WHERE (@all_owners::bool OR r.scope = owner_scope(sqlc.narg(tenant_id)::uuid))
  AND v.observed_at >= @since
GROUP BY v.edge_id;

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

-- name: LockAdminRoles :exec
-- LockAdminRoles serialises changes that must keep at least one cluster admin
-- (a transaction-scoped advisory lock).
SELECT pg_advisory_xact_lock(7070001);
