-- name: UpsertRecordPrice :one
INSERT INTO record_prices (record_id, model, input_micros, output_micros, cache_read_micros, cache_write_micros)
SELECT r.id, @model, @input_micros, @output_micros, sqlc.narg(cache_read_micros), sqlc.narg(cache_write_micros)
FROM provider_records r
WHERE r.scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND r.name = @record_name
ON CONFLICT (record_id, model) DO UPDATE
SET input_micros = EXCLUDED.input_micros,
    output_micros = EXCLUDED.output_micros,
    cache_read_micros = EXCLUDED.cache_read_micros,
    cache_write_micros = EXCLUDED.cache_write_micros
RETURNING *;

-- name: ListRecordPrices :many
SELECT p.* FROM record_prices p
JOIN provider_records r ON r.id = p.record_id
WHERE r.scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND r.name = @record_name
ORDER BY p.model;

-- name: ListOwnerRecordPrices :many
-- ListOwnerRecordPrices lists the prices of all the owner's records (snapshots).
SELECT p.* FROM record_prices p
JOIN provider_records r ON r.id = p.record_id
WHERE r.scope = owner_scope(sqlc.narg(tenant_id)::uuid)
ORDER BY p.record_id, p.model;

-- name: DeleteRecordPrice :execrows
DELETE FROM record_prices p
USING provider_records r
WHERE r.id = p.record_id AND r.scope = owner_scope(sqlc.narg(tenant_id)::uuid)
  AND r.name = @record_name AND p.model = @model;

-- name: UpsertMemberPrice :one
INSERT INTO member_prices (member_id, model, input_micros, output_micros, cache_read_micros, cache_write_micros)
SELECT m.id, @model, sqlc.narg(input_micros), sqlc.narg(output_micros), sqlc.narg(cache_read_micros), sqlc.narg(cache_write_micros)
FROM pool_members m
JOIN provider_records r ON r.id = m.record_id
WHERE r.scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND r.name = @record_name AND m.name = @member_name
ON CONFLICT (member_id, model) DO UPDATE
SET input_micros = EXCLUDED.input_micros,
    output_micros = EXCLUDED.output_micros,
    cache_read_micros = EXCLUDED.cache_read_micros,
    cache_write_micros = EXCLUDED.cache_write_micros
RETURNING *;

-- name: ListMemberPrices :many
-- ListMemberPrices lists the member prices of one record, by member then model.
SELECT p.*, m.name AS member_name FROM member_prices p
JOIN pool_members m ON m.id = p.member_id
JOIN provider_records r ON r.id = m.record_id
WHERE r.scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND r.name = @record_name
ORDER BY m.name, p.model;

-- name: ListOwnerMemberPrices :many
-- ListOwnerMemberPrices lists the member prices of all the owner's records.
SELECT p.* FROM member_prices p
JOIN pool_members m ON m.id = p.member_id
WHERE m.scope = owner_scope(sqlc.narg(tenant_id)::uuid)
ORDER BY p.member_id, p.model;

-- name: DeleteMemberPrice :execrows
DELETE FROM member_prices p
USING pool_members m, provider_records r
WHERE m.id = p.member_id AND r.id = m.record_id
  AND r.scope = owner_scope(sqlc.narg(tenant_id)::uuid) AND r.name = @record_name
  AND m.name = @member_name AND p.model = @model;
