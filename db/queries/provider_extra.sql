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
