-- name: SetSecret :one
-- SetSecret creates the secret or replaces its value and hosts; the
-- ciphertext is sealed with the new row's tenant, name and hosts
-- (seal_version).
INSERT INTO secrets (tenant_id, name, ciphertext, nonce, key_version, seal_version, hosts)
VALUES (sqlc.narg(tenant_id)::uuid, @name, @ciphertext, @nonce, @key_version, @seal_version, @hosts)
ON CONFLICT (scope, name) DO UPDATE
SET ciphertext = EXCLUDED.ciphertext,
    nonce = EXCLUDED.nonce,
    key_version = EXCLUDED.key_version,
    seal_version = EXCLUDED.seal_version,
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

-- name: LockSecretsBelowSealVersion :many
-- LockSecretsBelowSealVersion returns (and locks until the transaction ends)
-- every secret, of any owner, sealed under an older seal version than
-- @seal_version: the rows the control plane re-seals.
SELECT * FROM secrets
WHERE seal_version < @seal_version
ORDER BY id
FOR UPDATE;

-- name: ResealSecret :execrows
-- ResealSecret replaces a secret's ciphertext with the same value sealed
-- under a newer seal version; the value and updated_at are unchanged.
UPDATE secrets
SET ciphertext = @ciphertext, nonce = @nonce, key_version = @key_version, seal_version = @seal_version
WHERE id = @id AND seal_version < @seal_version;

-- name: CountSecretsBelowSealVersion :one
-- CountSecretsBelowSealVersion counts the secrets ResealAll would re-seal.
SELECT count(*) FROM secrets WHERE seal_version < @seal_version;
