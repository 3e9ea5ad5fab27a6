-- name: CreateProviderRecord :one
INSERT INTO provider_records (
    tenant_id, name, internal, pool, wire_format, preset, base_url,
    auth_kind, auth_header, aws_service, aws_region, access_key_secret,
    token_url, client_id, client_secret_secret, oauth_scopes, key_secret,
    rpm, input_tpm, output_tpm, region, retains_data, tags, allowed_regions,
    rate_limit_headers, max_attempts, call_deadline_ms, attempt_deadline_ms,
    cooldown_base_ms, cooldown_max_ms, max_wait_ms, default_max_output,
    priority, account, api_version, rpd, max_in_flight, day_zone
) VALUES (
    sqlc.narg(tenant_id)::uuid, @name, @internal, @pool, @wire_format, @preset, sqlc.narg(base_url),
    @auth_kind, @auth_header, @aws_service, @aws_region, sqlc.narg(access_key_secret),
    @token_url, @client_id, sqlc.narg(client_secret_secret), @oauth_scopes, sqlc.narg(key_secret),
    @rpm, @input_tpm, @output_tpm, @region, @retains_data, @tags, @allowed_regions,
    @rate_limit_headers, @max_attempts, sqlc.narg(call_deadline_ms), sqlc.narg(attempt_deadline_ms),
    sqlc.narg(cooldown_base_ms), sqlc.narg(cooldown_max_ms), sqlc.narg(max_wait_ms), @default_max_output,
    @priority, @account, @api_version, @rpd, @max_in_flight, @day_zone
)
RETURNING *;

-- name: UpdateProviderRecord :one
-- UpdateProviderRecord replaces every setting of the owner's record of that
-- name (the name and owner stay). pgx.ErrNoRows when there is none.
UPDATE provider_records SET
    internal = @internal, pool = @pool, wire_format = @wire_format, preset = @preset,
    base_url = sqlc.narg(base_url),
    auth_kind = @auth_kind, auth_header = @auth_header, aws_service = @aws_service,
    aws_region = @aws_region, access_key_secret = sqlc.narg(access_key_secret),
    token_url = @token_url, client_id = @client_id,
    client_secret_secret = sqlc.narg(client_secret_secret), oauth_scopes = @oauth_scopes,
    key_secret = sqlc.narg(key_secret),
    rpm = @rpm, input_tpm = @input_tpm, output_tpm = @output_tpm, region = @region,
    retains_data = @retains_data, tags = @tags, allowed_regions = @allowed_regions,
    rate_limit_headers = @rate_limit_headers, max_attempts = @max_attempts,
    call_deadline_ms = sqlc.narg(call_deadline_ms), attempt_deadline_ms = sqlc.narg(attempt_deadline_ms),
    cooldown_base_ms = sqlc.narg(cooldown_base_ms), cooldown_max_ms = sqlc.narg(cooldown_max_ms),
    max_wait_ms = sqlc.narg(max_wait_ms), default_max_output = @default_max_output,
    priority = @priority, account = @account, api_version = @api_version,
    rpd = @rpd, max_in_flight = @max_in_flight, day_zone = @day_zone,
    updated_at = now()
WHERE scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND name = @name
RETURNING *;

-- name: GetProviderRecord :one
SELECT * FROM provider_records
WHERE scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND name = @name;

-- name: GetProviderRecordForUpdate :one
-- GetProviderRecordForUpdate locks the record row for the rest of the
-- transaction (read-modify-write of a record and its members).
SELECT * FROM provider_records
WHERE scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND name = @name
FOR UPDATE;

-- name: ListProviderRecords :many
-- ListProviderRecords lists the owner's records, oldest first (R-MODEL-4).
SELECT * FROM provider_records
WHERE scope = owner_scope(sqlc.narg(tenant_id)::uuid)
ORDER BY created_at, name;

-- name: DeleteProviderRecord :execrows
-- DeleteProviderRecord deletes the record with its models, members, prices,
-- shares and member views.
DELETE FROM provider_records
WHERE scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND name = @name;

-- name: DeleteRecordModels :execrows
-- DeleteRecordModels and then AddRecordModels, in one transaction, replace the
-- models of a record.
DELETE FROM record_models m
USING provider_records r
WHERE r.id = m.record_id AND r.scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND r.name = @record_name;

-- name: AddRecordModels :execrows
-- AddRecordModels adds models to the owner's record (or changes their kind):
-- models[i] has kinds[i] ('chat' or 'embeddings'); both arrays have the same
-- length. It returns the number of models written, 0 when there is no record.
INSERT INTO record_models (record_id, model, kind)
SELECT r.id, unnest(@models::text[]), unnest(@kinds::text[])
FROM provider_records r
WHERE r.scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND r.name = @record_name
ON CONFLICT (record_id, model) DO UPDATE SET kind = EXCLUDED.kind;

-- name: ListRecordModels :many
SELECT record_models.* FROM record_models
JOIN provider_records r ON r.id = record_models.record_id
WHERE r.scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND r.name = @record_name
ORDER BY record_models.model;

-- name: ListOwnerRecordModels :many
-- ListOwnerRecordModels lists the models of all the owner's records (snapshots).
SELECT record_models.* FROM record_models
JOIN provider_records r ON r.id = record_models.record_id
WHERE r.scope = owner_scope(sqlc.narg(tenant_id)::uuid)
ORDER BY record_models.record_id, record_models.model;

-- name: ShareRecord :exec
-- ShareRecord enables a managed record for a tenant; sharing twice is a no-op.
INSERT INTO record_shares (record_id, tenant_id)
SELECT r.id, @tenant_id::uuid FROM provider_records r
WHERE r.tenant_id IS NULL AND r.name = @record_name
ON CONFLICT (record_id, tenant_id) DO NOTHING;

-- name: UnshareRecord :execrows
DELETE FROM record_shares s
USING provider_records r
WHERE r.id = s.record_id AND r.tenant_id IS NULL AND r.name = @record_name
  AND s.tenant_id = @tenant_id;

-- name: ListRecordShares :many
-- ListRecordShares lists every share of every managed record (the cluster
-- snapshot's ManagedRecord.tenant_ids).
SELECT s.record_id, s.tenant_id, r.name AS record_name, t.name AS tenant_name
FROM record_shares s
JOIN provider_records r ON r.id = s.record_id
JOIN tenants t ON t.id = s.tenant_id
ORDER BY r.name, t.name;

-- name: ListSharedRecords :many
-- ListSharedRecords lists the managed records enabled for a tenant.
SELECT r.* FROM provider_records r
JOIN record_shares s ON s.record_id = r.id
WHERE s.tenant_id = @tenant_id
ORDER BY r.created_at, r.name;

-- name: TouchProviderRecord :one
-- TouchProviderRecord marks a change of a record or of one of its members:
-- updated_at moves to now(), and always at least a microsecond past
-- previous (the value the caller read under FOR UPDATE), so that updated_at
-- serves as the record's revision (admin ProviderRecord.revision) and never
-- repeats or goes back, even for two changes within one microsecond. (A
-- query of the provider, pool and price services, controlplane/internal/provider.)
UPDATE provider_records
SET updated_at = GREATEST(now(), sqlc.arg(previous)::timestamptz + make_interval(secs => 0.000001))
WHERE id = @id
RETURNING updated_at;
