-- name: CreateTenant :one
INSERT INTO tenants (name, disabled)
VALUES (@name, @disabled)
RETURNING *;

-- name: GetTenant :one
SELECT * FROM tenants WHERE id = @id;

-- name: GetTenantByName :one
SELECT * FROM tenants WHERE name = @name;

-- name: ListTenants :many
SELECT * FROM tenants ORDER BY name;

-- name: UpdateTenant :one
UPDATE tenants
SET name = @name, disabled = @disabled, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: SetTenantLimits :one
-- SetTenantLimits replaces the tenant's caller limits (ROUTING.md R-CAP-2);
-- 0 means no limit of the tenant's own.
UPDATE tenants
SET rpm = @rpm, max_in_flight = @max_in_flight, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: DeleteTenant :execrows
DELETE FROM tenants WHERE id = @id;

-- name: GetDataRules :one
-- GetDataRules returns pgx.ErrNoRows when the tenant has set no rules.
SELECT * FROM data_rules WHERE tenant_id = @tenant_id;

-- name: UpsertDataRules :one
INSERT INTO data_rules (tenant_id, allowed_regions, no_retained_data, required_tags)
VALUES (@tenant_id, @allowed_regions, @no_retained_data, @required_tags)
ON CONFLICT (tenant_id) DO UPDATE
SET allowed_regions = EXCLUDED.allowed_regions,
    no_retained_data = EXCLUDED.no_retained_data,
    required_tags = EXCLUDED.required_tags,
    updated_at = now()
RETURNING *;

-- name: ListKnownTenants :many
-- ListKnownTenants returns which of the given ids are tenants (usage
-- ingest drops the records of tenants that no longer exist).
SELECT id FROM tenants WHERE id = ANY(@ids::uuid[]);
