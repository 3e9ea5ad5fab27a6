-- name: SetSecret :one
-- SetSecret creates the secret or replaces its value and hosts.
INSERT INTO secrets (tenant_id, name, ciphertext, nonce, key_version, hosts)
VALUES (sqlc.narg(tenant_id)::uuid, @name, @ciphertext, @nonce, @key_version, @hosts)
ON CONFLICT (scope, name) DO UPDATE
SET ciphertext = EXCLUDED.ciphertext,
    nonce = EXCLUDED.nonce,
    key_version = EXCLUDED.key_version,
    hosts = EXCLUDED.hosts,
    updated_at = now()
RETURNING *;

-- name: GetSecret :one
SELECT * FROM secrets
WHERE scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND name = @name;

-- name: ListSecrets :many
-- ListSecrets returns the owner's secrets with their ciphertext (for snapshots);
-- the admin API must never return the ciphertext.
SELECT * FROM secrets
WHERE scope = owner_scope(sqlc.narg(tenant_id)::uuid)
ORDER BY name;

-- name: DeleteSecret :execrows
-- DeleteSecret fails with a foreign key violation while a record or member
-- refers to the secret.
DELETE FROM secrets
WHERE scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND name = @name;
