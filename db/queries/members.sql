-- name: AddPoolMember :one
-- AddPoolMember adds a member to the owner's pool record of that name;
-- pgx.ErrNoRows when there is no such record. The database refuses a 17th
-- member and members of plain records (check_violation).
INSERT INTO pool_members (
    record_id, scope, name, preset, base_url,
    auth_kind, auth_header, aws_service, aws_region, access_key_secret,
    token_url, client_id, client_secret_secret, oauth_scopes, key_secret,
    region, retains_data, tags, rpm, input_tpm, output_tpm,
    weight, "order", model_map, models, off, account, api_version,
    wire_format, rpd, max_in_flight
)
SELECT
    r.id, r.scope, @name, @preset, @base_url,
    sqlc.narg(auth_kind), sqlc.narg(auth_header), @aws_service, @aws_region, sqlc.narg(access_key_secret),
    @token_url, @client_id, sqlc.narg(client_secret_secret), @oauth_scopes, sqlc.narg(key_secret),
    sqlc.narg(region), sqlc.narg(retains_data), @tags, sqlc.narg(rpm), sqlc.narg(input_tpm), sqlc.narg(output_tpm),
    @weight, sqlc.arg('order'), @model_map, @models, @off, sqlc.narg(account), sqlc.narg(api_version),
    sqlc.narg(wire_format), sqlc.narg(rpd), sqlc.narg(max_in_flight)
FROM provider_records r
WHERE r.scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND r.name = @record_name
RETURNING *;

-- name: UpdatePoolMember :one
-- UpdatePoolMember replaces every setting of a member (its name stays).
UPDATE pool_members SET
    preset = @preset, base_url = @base_url,
    auth_kind = sqlc.narg(auth_kind), auth_header = sqlc.narg(auth_header),
    aws_service = @aws_service, aws_region = @aws_region,
    access_key_secret = sqlc.narg(access_key_secret), token_url = @token_url,
    client_id = @client_id, client_secret_secret = sqlc.narg(client_secret_secret),
    oauth_scopes = @oauth_scopes, key_secret = sqlc.narg(key_secret),
    region = sqlc.narg(region), retains_data = sqlc.narg(retains_data), tags = @tags,
    rpm = sqlc.narg(rpm), input_tpm = sqlc.narg(input_tpm), output_tpm = sqlc.narg(output_tpm),
    weight = @weight, "order" = sqlc.arg('order'), model_map = @model_map, models = @models, off = @off,
    account = sqlc.narg(account), api_version = sqlc.narg(api_version),
    wire_format = sqlc.narg(wire_format), rpd = sqlc.narg(rpd), max_in_flight = sqlc.narg(max_in_flight),
    updated_at = now()
WHERE record_id = (
    SELECT r.id FROM provider_records r
    WHERE r.scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND r.name = @record_name
) AND pool_members.name = @name
RETURNING *;

-- name: SetPoolMemberOff :one
UPDATE pool_members SET off = @off, updated_at = now()
WHERE record_id = (
    SELECT r.id FROM provider_records r
    WHERE r.scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND r.name = @record_name
) AND pool_members.name = @name
RETURNING *;

-- name: RemovePoolMember :execrows
DELETE FROM pool_members
WHERE record_id = (
    SELECT r.id FROM provider_records r
    WHERE r.scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND r.name = @record_name
) AND pool_members.name = @name;

-- name: GetPoolMember :one
SELECT m.* FROM pool_members m
JOIN provider_records r ON r.id = m.record_id
WHERE r.scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND r.name = @record_name AND m.name = @name;

-- name: ListPoolMembers :many
-- ListPoolMembers lists one record's members by order, then name.
SELECT m.* FROM pool_members m
JOIN provider_records r ON r.id = m.record_id
WHERE r.scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND r.name = @record_name
ORDER BY m."order", m.name;

-- name: ListOwnerPoolMembers :many
-- ListOwnerPoolMembers lists the members of all the owner's records (snapshots).
SELECT * FROM pool_members
WHERE scope = owner_scope(sqlc.narg(tenant_id)::uuid)
ORDER BY record_id, "order", name;

-- name: CountPoolMembers :one
SELECT count(*) FROM pool_members m
JOIN provider_records r ON r.id = m.record_id
WHERE r.scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND r.name = @record_name;
