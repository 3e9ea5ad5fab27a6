-- 000002_providers: provider records, their models, managed-record shares, pool
-- members and prices (ROUTING.md "Words", section 8; config.proto
-- ProviderRecord, Member, Price).

-- provider_records: a named way to reach models with one wire format. A record
-- is plain (base_url set, no members) or a pool (base_url NULL; its members are
-- its endpoints). tenant_id NULL = a managed record owned by cluster admins.
-- Durations are milliseconds; NULL means the ROUTING.md default.
CREATE TABLE provider_records (
    id                   uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id            uuid        REFERENCES tenants (id) ON DELETE CASCADE,
    scope                uuid        NOT NULL GENERATED ALWAYS AS (COALESCE(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid)) STORED,
    name                 text        NOT NULL,
    -- internal records (cluster admins only) may use plain http (R-SEC-2).
    internal             boolean     NOT NULL DEFAULT false,
    pool                 boolean     NOT NULL DEFAULT false,
    wire_format          text        NOT NULL,
    -- preset is informational: presets are resolved into explicit columns.
    preset               text        NOT NULL DEFAULT '',
    base_url             text,
    -- Auth (config.proto Auth).
    auth_kind            text        NOT NULL DEFAULT 'api_key',
    auth_header          text        NOT NULL DEFAULT '',
    aws_service          text        NOT NULL DEFAULT '',
    aws_region           text        NOT NULL DEFAULT '',
    access_key_secret    text,
    token_url            text        NOT NULL DEFAULT '',
    client_id            text        NOT NULL DEFAULT '',
    client_secret_secret text,
    oauth_scopes         text[]      NOT NULL DEFAULT '{}',
    -- key_secret names the secret (same owner) holding the API key.
    key_secret           text,
    -- Declared per-minute limits (R-HEAD-2); 0 = not declared.
    rpm                  bigint      NOT NULL DEFAULT 0,
    input_tpm            bigint      NOT NULL DEFAULT 0,
    output_tpm           bigint      NOT NULL DEFAULT 0,
    region               text        NOT NULL DEFAULT '',
    retains_data         boolean     NOT NULL DEFAULT false,
    -- tags and rate_limit_headers are JSON objects of string values.
    tags                 jsonb       NOT NULL DEFAULT '{}',
    allowed_regions      text[]      NOT NULL DEFAULT '{}',
    rate_limit_headers   jsonb       NOT NULL DEFAULT '{}',
    -- Recovery (config.proto Recovery); max_attempts 0 = default.
    max_attempts         integer     NOT NULL DEFAULT 0,
    call_deadline_ms     bigint,
    attempt_deadline_ms  bigint,
    cooldown_base_ms     bigint,
    cooldown_max_ms      bigint,
    max_wait_ms          bigint,
    -- default_max_output: output cap for reservations (R-COST-1); 0 = 4096.
    default_max_output   bigint      NOT NULL DEFAULT 0,
    priority             integer     NOT NULL DEFAULT 0,
    account              text        NOT NULL DEFAULT '',
    api_version          text        NOT NULL DEFAULT '',
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT provider_records_name_format CHECK (name ~ '^[a-z0-9_-]{1,64}$'),
    CONSTRAINT provider_records_scope_name_key UNIQUE (scope, name),
    -- Target of composite foreign keys that require "same owner".
    CONSTRAINT provider_records_id_scope_key UNIQUE (id, scope),
    CONSTRAINT provider_records_wire_format_check CHECK (wire_format IN ('openai', 'anthropic', 'bedrock')),
    CONSTRAINT provider_records_auth_kind_check CHECK (auth_kind IN ('api_key', 'sigv4', 'oauth2', 'none')),
    CONSTRAINT provider_records_plain_or_pool CHECK (pool = (base_url IS NULL)),
    CONSTRAINT provider_records_base_url_not_empty CHECK (base_url <> ''),
    CONSTRAINT provider_records_limits_nonnegative CHECK (rpm >= 0 AND input_tpm >= 0 AND output_tpm >= 0),
    CONSTRAINT provider_records_tags_object CHECK (
        jsonb_typeof(tags) = 'object' AND NOT jsonb_path_exists(tags, '$.* ? (@.type() != "string")')),
    CONSTRAINT provider_records_rate_limit_headers_object CHECK (
        jsonb_typeof(rate_limit_headers) = 'object'
        AND NOT jsonb_path_exists(rate_limit_headers, '$.* ? (@.type() != "string")')),
    CONSTRAINT provider_records_recovery_nonnegative CHECK (
        max_attempts >= 0 AND call_deadline_ms >= 0 AND attempt_deadline_ms >= 0
        AND cooldown_base_ms >= 0 AND cooldown_max_ms >= 0 AND max_wait_ms >= 0),
    CONSTRAINT provider_records_default_max_output_nonnegative CHECK (default_max_output >= 0),
    -- Secrets are referenced by name within the record's owner; NO ACTION (not
    -- RESTRICT) so that deleting a tenant cascades through both tables at once.
    CONSTRAINT provider_records_key_secret_fkey
        FOREIGN KEY (scope, key_secret) REFERENCES secrets (scope, name),
    CONSTRAINT provider_records_access_key_secret_fkey
        FOREIGN KEY (scope, access_key_secret) REFERENCES secrets (scope, name),
    CONSTRAINT provider_records_client_secret_secret_fkey
        FOREIGN KEY (scope, client_secret_secret) REFERENCES secrets (scope, name)
);
CREATE INDEX provider_records_tenant_idx ON provider_records (tenant_id);

-- record_models: the models a record serves and their kind.
CREATE TABLE record_models (
    record_id uuid NOT NULL REFERENCES provider_records (id) ON DELETE CASCADE,
    model     text NOT NULL,
    kind      text NOT NULL DEFAULT 'chat',
    PRIMARY KEY (record_id, model),
    CONSTRAINT record_models_model_not_empty CHECK (model <> ''),
    CONSTRAINT record_models_kind_check CHECK (kind IN ('chat', 'embeddings'))
);

-- record_shares enables a managed record for a tenant (R-MODEL-3). The
-- composite foreign key admits managed records only.
CREATE TABLE record_shares (
    record_id    uuid        NOT NULL,
    record_scope uuid        NOT NULL DEFAULT '00000000-0000-0000-0000-000000000000',
    tenant_id    uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (record_id, tenant_id),
    CONSTRAINT record_shares_managed_only CHECK (record_scope = '00000000-0000-0000-0000-000000000000'),
    CONSTRAINT record_shares_record_fkey
        FOREIGN KEY (record_id, record_scope) REFERENCES provider_records (id, scope) ON DELETE CASCADE
);
CREATE INDEX record_shares_tenant_idx ON record_shares (tenant_id);

-- pool_members: one deployment of a pool (config.proto Member). A NULL column
-- means the member inherits the record's value: auth as a whole when both
-- auth_kind and auth_header are NULL; key_secret; region; retains_data; account;
-- api_version; limits. tier is Member.order (R-ORDER-1). scope copies the
-- record's owner so that secret references stay within that owner.
CREATE TABLE pool_members (
    id                   uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    record_id            uuid        NOT NULL,
    scope                uuid        NOT NULL,
    name                 text        NOT NULL,
    -- preset is informational, as on records.
    preset               text        NOT NULL DEFAULT '',
    base_url             text        NOT NULL,
    auth_kind            text,
    auth_header          text,
    aws_service          text        NOT NULL DEFAULT '',
    aws_region           text        NOT NULL DEFAULT '',
    access_key_secret    text,
    token_url            text        NOT NULL DEFAULT '',
    client_id            text        NOT NULL DEFAULT '',
    client_secret_secret text,
    oauth_scopes         text[]      NOT NULL DEFAULT '{}',
    key_secret           text,
    region               text,
    retains_data         boolean,
    -- tags are added to the record's (the member's win on conflict).
    tags                 jsonb       NOT NULL DEFAULT '{}',
    rpm                  bigint,
    input_tpm            bigint,
    output_tpm           bigint,
    weight               integer     NOT NULL DEFAULT 1,
    tier                 integer     NOT NULL DEFAULT 1,
    -- model_map maps the caller's model name to the name sent upstream.
    model_map            jsonb       NOT NULL DEFAULT '{}',
    -- models, when not empty, is the subset of the record's models served.
    models               text[]      NOT NULL DEFAULT '{}',
    off                  boolean     NOT NULL DEFAULT false,
    account              text,
    api_version          text,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT pool_members_record_fkey
        FOREIGN KEY (record_id, scope) REFERENCES provider_records (id, scope) ON DELETE CASCADE,
    CONSTRAINT pool_members_record_name_key UNIQUE (record_id, name),
    CONSTRAINT pool_members_name_format CHECK (name ~ '^[a-z0-9_-]{1,64}$'),
    CONSTRAINT pool_members_base_url_not_empty CHECK (base_url <> ''),
    CONSTRAINT pool_members_auth_kind_check CHECK (auth_kind IN ('api_key', 'sigv4', 'oauth2', 'none')),
    CONSTRAINT pool_members_weight_range CHECK (weight BETWEEN 1 AND 10000),
    CONSTRAINT pool_members_tier_positive CHECK (tier >= 1),
    CONSTRAINT pool_members_limits_nonnegative CHECK (rpm >= 0 AND input_tpm >= 0 AND output_tpm >= 0),
    CONSTRAINT pool_members_tags_object CHECK (
        jsonb_typeof(tags) = 'object' AND NOT jsonb_path_exists(tags, '$.* ? (@.type() != "string")')),
    CONSTRAINT pool_members_model_map_object CHECK (
        jsonb_typeof(model_map) = 'object' AND NOT jsonb_path_exists(model_map, '$.* ? (@.type() != "string")')),
    CONSTRAINT pool_members_key_secret_fkey
        FOREIGN KEY (scope, key_secret) REFERENCES secrets (scope, name),
    CONSTRAINT pool_members_access_key_secret_fkey
        FOREIGN KEY (scope, access_key_secret) REFERENCES secrets (scope, name),
    CONSTRAINT pool_members_client_secret_secret_fkey
        FOREIGN KEY (scope, client_secret_secret) REFERENCES secrets (scope, name)
);

-- pool_members_guard admits a member only into a pool record with fewer than 16
-- members. It locks the record row first, so concurrent inserts into one pool
-- are serialised and the count cannot be raced past 16.
CREATE FUNCTION pool_members_guard() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    is_pool boolean;
    rec_name text;
    members integer;
BEGIN
    SELECT r.pool, r.name INTO is_pool, rec_name
    FROM provider_records r WHERE r.id = NEW.record_id
    FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN NEW; -- the foreign key reports the missing record
    END IF;
    IF NOT is_pool THEN
        RAISE EXCEPTION 'record "%" is not a pool: it has its own base_url, so it cannot have members', rec_name
            USING ERRCODE = 'check_violation', CONSTRAINT = 'pool_members_pool_only';
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.record_id = NEW.record_id THEN
        RETURN NEW;
    END IF;
    SELECT count(*) INTO members FROM pool_members m WHERE m.record_id = NEW.record_id;
    IF members >= 16 THEN
        RAISE EXCEPTION 'pool "%" already has 16 members, the most a pool may have', rec_name
            USING ERRCODE = 'check_violation', CONSTRAINT = 'pool_members_max_16';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER pool_members_guard
    BEFORE INSERT OR UPDATE OF record_id ON pool_members
    FOR EACH ROW EXECUTE FUNCTION pool_members_guard();

-- provider_records_pool_guard refuses to turn a pool with members plain.
CREATE FUNCTION provider_records_pool_guard() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.pool AND NOT NEW.pool AND EXISTS (SELECT 1 FROM pool_members m WHERE m.record_id = NEW.id) THEN
        RAISE EXCEPTION 'record "%" still has members: remove them before giving it a base_url', NEW.name
            USING ERRCODE = 'check_violation', CONSTRAINT = 'provider_records_pool_has_members';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER provider_records_pool_guard
    BEFORE UPDATE OF pool ON provider_records
    FOR EACH ROW EXECUTE FUNCTION provider_records_pool_guard();

-- record_prices: a record's price per model, micro-dollars per million tokens
-- (R-COST-4). Input and output are always given; a NULL cache part is not
-- priced (distinct from a price of 0), which R-COST-4 needs to tell apart.
CREATE TABLE record_prices (
    record_id          uuid   NOT NULL REFERENCES provider_records (id) ON DELETE CASCADE,
    model              text   NOT NULL,
    input_micros       bigint NOT NULL,
    output_micros      bigint NOT NULL,
    cache_read_micros  bigint,
    cache_write_micros bigint,
    PRIMARY KEY (record_id, model),
    CONSTRAINT record_prices_model_not_empty CHECK (model <> ''),
    CONSTRAINT record_prices_nonnegative CHECK (
        input_micros >= 0 AND output_micros >= 0 AND cache_read_micros >= 0 AND cache_write_micros >= 0)
);

-- member_prices: a member's price per model; each NULL part is taken from the
-- record's price for the same model (R-COST-4). At least one part is given.
CREATE TABLE member_prices (
    member_id          uuid   NOT NULL REFERENCES pool_members (id) ON DELETE CASCADE,
    model              text   NOT NULL,
    input_micros       bigint,
    output_micros      bigint,
    cache_read_micros  bigint,
    cache_write_micros bigint,
    PRIMARY KEY (member_id, model),
    CONSTRAINT member_prices_model_not_empty CHECK (model <> ''),
    CONSTRAINT member_prices_nonnegative CHECK (
        input_micros >= 0 AND output_micros >= 0 AND cache_read_micros >= 0 AND cache_write_micros >= 0),
    CONSTRAINT member_prices_some_part CHECK (
        num_nonnulls(input_micros, output_micros, cache_read_micros, cache_write_micros) >= 1)
);

