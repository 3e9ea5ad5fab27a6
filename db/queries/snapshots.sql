-- name: SnapshotTime :one
-- SnapshotTime is the start time of the current transaction: the moment that a
-- snapshot read in one REPEATABLE READ transaction describes (the snapshot
-- builder, controlplane/internal/snapshot).
SELECT now()::timestamptz AS snapshot_time;
