-- name: CreateAPIKey :one
INSERT INTO api_keys (tenant_id, name, sha256, allowed_models, allowed_records, regions, rpm, max_in_flight)
VALUES (@tenant_id, @name, @sha256, @allowed_models, @allowed_records, @regions, @rpm, @max_in_flight)
RETURNING *;

-- name: ListAPIKeys :many
-- ListAPIKeys lists a tenant's keys, revoked ones included.
SELECT * FROM api_keys WHERE tenant_id = @tenant_id ORDER BY name, created_at;

-- name: GetAPIKeyByName :one
-- GetAPIKeyByName returns the tenant's key of that name that is not revoked.
SELECT * FROM api_keys
WHERE tenant_id = @tenant_id AND name = @name AND revoked_at IS NULL;

-- name: GetAPIKeyByHash :one
-- GetAPIKeyByHash finds a key (revoked or not) by its hash, with the state of
-- its tenant; callers refuse revoked keys and disabled tenants.
SELECT sqlc.embed(api_keys), t.name AS tenant_name, t.disabled AS tenant_disabled
FROM api_keys
JOIN tenants t ON t.id = api_keys.tenant_id
WHERE api_keys.sha256 = @sha256;

-- name: RevokeAPIKey :one
-- RevokeAPIKey revokes the tenant's active key of that name and returns it;
-- pgx.ErrNoRows when there is none.
UPDATE api_keys SET revoked_at = now()
WHERE tenant_id = @tenant_id AND name = @name AND revoked_at IS NULL
RETURNING *;
