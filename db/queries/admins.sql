-- name: CreateAdmin :one
INSERT INTO admins (name, display_name) VALUES (@name, @display_name) RETURNING *;

-- name: GetAdmin :one
SELECT * FROM admins WHERE id = @id;

-- name: GetAdminByName :one
SELECT * FROM admins WHERE name = @name;

-- name: ListAdmins :many
SELECT * FROM admins ORDER BY name;

-- name: SetAdminDisabled :one
UPDATE admins SET disabled = @disabled WHERE id = @id RETURNING *;

-- name: DeleteAdmin :execrows
DELETE FROM admins WHERE id = @id;

-- name: GrantRole :one
-- GrantRole is idempotent: granting a role twice returns the existing grant.
-- tenant_id must be NULL for cluster_admin and set for every other role.
INSERT INTO admin_roles (admin_id, role, tenant_id)
VALUES (@admin_id, @role, sqlc.narg(tenant_id)::uuid)
ON CONFLICT ON CONSTRAINT admin_roles_grant_key DO UPDATE SET role = EXCLUDED.role
RETURNING *;

-- name: RevokeRole :execrows
DELETE FROM admin_roles
WHERE admin_id = @admin_id AND role = @role AND tenant_id IS NOT DISTINCT FROM sqlc.narg(tenant_id)::uuid;

-- name: ListAdminRoles :many
SELECT * FROM admin_roles WHERE admin_id = @admin_id ORDER BY role, tenant_id;

-- name: ListTenantRoles :many
-- ListTenantRoles lists the grants on one tenant with the admins' names.
SELECT sqlc.embed(admin_roles), a.name AS admin_name
FROM admin_roles
JOIN admins a ON a.id = admin_roles.admin_id
WHERE admin_roles.tenant_id = @tenant_id
ORDER BY a.name, admin_roles.role;

-- name: CreateAdminToken :one
INSERT INTO admin_tokens (admin_id, label, sha256, expires_at)
VALUES (@admin_id, @label, @sha256, sqlc.narg(expires_at))
RETURNING *;

-- name: GetAdminTokenByHash :one
-- GetAdminTokenByHash finds a usable token: not revoked, not expired, of an
-- admin who is not disabled. pgx.ErrNoRows otherwise.
SELECT sqlc.embed(admin_tokens), sqlc.embed(admins)
FROM admin_tokens
JOIN admins ON admins.id = admin_tokens.admin_id
WHERE admin_tokens.sha256 = @sha256
  AND admin_tokens.revoked_at IS NULL
  AND (admin_tokens.expires_at IS NULL OR admin_tokens.expires_at > now())
  AND NOT admins.disabled;

-- name: TouchAdminToken :exec
UPDATE admin_tokens SET last_used_at = now() WHERE id = @id;

-- name: ListAdminTokens :many
SELECT * FROM admin_tokens WHERE admin_id = @admin_id ORDER BY created_at;

-- name: RevokeAdminToken :execrows
UPDATE admin_tokens SET revoked_at = now()
WHERE id = @id AND admin_id = @admin_id AND revoked_at IS NULL;

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

-- name: LockAdminRoles :exec
-- LockAdminRoles serialises changes that must keep at least one cluster admin
-- (a transaction-scoped advisory lock).
SELECT pg_advisory_xact_lock(7070001);
