-- 000003_telemetry: what edges report back (telemetry.proto): the edges
-- themselves, each edge's last view of each member (R-OBS-1), and calls with
-- their attempts (R-SEE-2). Edge ids and call ids come from the edges (text).
-- Telemetry rows name records and members by value, not by foreign key, so that
-- the history outlives the config it describes; durations are milliseconds.

CREATE TABLE edges (
    id         text        PRIMARY KEY,
    version    text        NOT NULL DEFAULT '',
    region     text        NOT NULL DEFAULT '',
    first_seen timestamptz NOT NULL DEFAULT now(),
    last_seen  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT edges_id_not_empty CHECK (id <> '')
);

-- member_views keeps each edge's last view of each member. view is the
-- protobuf weir.telemetry.v1.MemberView as the edge sent it; the other columns
-- are copies for filtering and sorting. A view goes with its record.
CREATE TABLE member_views (
    edge_id     text        NOT NULL,
    record_id   uuid        NOT NULL REFERENCES provider_records (id) ON DELETE CASCADE,
    member_name text        NOT NULL,
    view        bytea       NOT NULL,
    observed_at timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (edge_id, record_id, member_name)
);
CREATE INDEX member_views_record_idx ON member_views (record_id, member_name);
CREATE INDEX member_views_observed_idx ON member_views (observed_at);

-- calls: one row per call (CallRecord). Ingest is idempotent on call_id.
CREATE TABLE calls (
    call_id                           text        PRIMARY KEY,
    tenant_id                         uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    key_id                            uuid        REFERENCES api_keys (id) ON DELETE SET NULL,
    edge_id                           text        NOT NULL,
    endpoint                          text        NOT NULL DEFAULT '',
    model                             text        NOT NULL DEFAULT '',
    stream                            boolean     NOT NULL DEFAULT false,
    record_id                         uuid,
    record_name                       text        NOT NULL DEFAULT '',
    member_name                       text        NOT NULL DEFAULT '',
    status                            integer     NOT NULL DEFAULT 0,
    outcome                           text        NOT NULL,
    error_code                        text        NOT NULL DEFAULT '',
    input_tokens                      bigint      NOT NULL DEFAULT 0,
    output_tokens                     bigint      NOT NULL DEFAULT 0,
    cache_read_tokens                 bigint      NOT NULL DEFAULT 0,
    cache_write_tokens                bigint      NOT NULL DEFAULT 0,
    reserved_nanos                    bigint      NOT NULL DEFAULT 0,
    cost_nanos                        bigint      NOT NULL DEFAULT 0,
    -- cost_flagged: charged at an estimate (unknown outcome, R-COST-3).
    cost_flagged                      boolean     NOT NULL DEFAULT false,
    job_hash                          text        NOT NULL DEFAULT '',
    -- Cache report (R-SEE-3); all empty when the call has none.
    cache_job_hash                    text        NOT NULL DEFAULT '',
    cache_previous_member             text        NOT NULL DEFAULT '',
    cache_member                      text        NOT NULL DEFAULT '',
    cache_miss                        text        NOT NULL DEFAULT '',
    cache_previous_cached_input_tokens bigint     NOT NULL DEFAULT 0,
    cache_estimated_miss_cost_nanos   bigint      NOT NULL DEFAULT 0,
    started_at                        timestamptz NOT NULL,
    duration_ms                       bigint      NOT NULL DEFAULT 0,
    received_at                       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT calls_call_id_not_empty CHECK (call_id <> ''),
    CONSTRAINT calls_status_range CHECK (status BETWEEN 0 AND 999),
    CONSTRAINT calls_outcome_check CHECK (outcome IN ('answered', 'failed', 'unknown', 'refused', 'cancelled')),
    CONSTRAINT calls_cache_miss_check CHECK (cache_miss IN ('', 'member_changed')),
    CONSTRAINT calls_counts_nonnegative CHECK (
        input_tokens >= 0 AND output_tokens >= 0 AND cache_read_tokens >= 0 AND cache_write_tokens >= 0
        AND reserved_nanos >= 0 AND cost_nanos >= 0 AND duration_ms >= 0
        AND cache_previous_cached_input_tokens >= 0 AND cache_estimated_miss_cost_nanos >= 0)
);
CREATE INDEX calls_tenant_started_idx ON calls (tenant_id, started_at DESC);
CREATE INDEX calls_tenant_member_started_idx ON calls (tenant_id, member_name, started_at DESC);
CREATE INDEX calls_key_idx ON calls (key_id);

-- call_attempts: each try of one member inside a call, or a recorded skip.
CREATE TABLE call_attempts (
    call_id        text        NOT NULL REFERENCES calls (call_id) ON DELETE CASCADE,
    attempt_index  integer     NOT NULL,
    record_name    text        NOT NULL DEFAULT '',
    member_name    text        NOT NULL DEFAULT '',
    status         integer     NOT NULL DEFAULT 0,
    outcome        text        NOT NULL,
    -- kind is the failure classification (telemetry.proto FailureKind); '' = unspecified.
    kind           text        NOT NULL DEFAULT '',
    reason         text        NOT NULL DEFAULT '',
    latency_ms     bigint      NOT NULL DEFAULT 0,
    cost_nanos     bigint      NOT NULL DEFAULT 0,
    cost_estimated boolean     NOT NULL DEFAULT false,
    started_at     timestamptz,
    PRIMARY KEY (call_id, attempt_index),
    CONSTRAINT call_attempts_index_nonnegative CHECK (attempt_index >= 0),
    CONSTRAINT call_attempts_status_range CHECK (status BETWEEN 0 AND 999),
    CONSTRAINT call_attempts_outcome_check CHECK (outcome IN ('answered', 'failed_over', 'failed', 'skipped')),
    CONSTRAINT call_attempts_kind_check CHECK (kind IN (
        '', 'none', 'rate_limited', 'quota_spent', 'server_error', 'transport', 'key_refused',
        'unknown_outcome', 'client_error', 'timeout', 'cancelled', 'mid_stream', 'key_unavailable', 'disabled')),
    CONSTRAINT call_attempts_counts_nonnegative CHECK (latency_ms >= 0 AND cost_nanos >= 0)
);

