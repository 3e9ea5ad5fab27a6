CREATE INDEX IF NOT EXISTS calls_tenant_member_started_idx ON calls (tenant_id, member_name, started_at DESC);
