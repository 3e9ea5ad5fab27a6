-- 000001_init: tenants, administrators and their grants, API keys, data rules,
-- secrets, config publication state, outbox and audit log.
--
-- Each file is sent to the server as one simple-protocol query, which PostgreSQL
-- runs as one implicit transaction: a file applies whole or not at all. (So no
-- BEGIN/COMMIT here: an explicit one would leave the session aborted on error.)
--
-- Conventions of every migration:
--   * ids are uuid (gen_random_uuid(), PostgreSQL 13+ core) except where the id
--     comes from outside (calls, edges: text) or is a sequence (outbox, audit);
--   * money is integer: prices in micro-dollars per million tokens, amounts in
--     nano-dollars (bigint), never float or numeric;
--   * names of tenants, records, members, keys, secrets and budgets are 1-64 of
--     [a-z0-9_-];
--   * tenant_id NULL means "owned by the cluster" (managed records and their
--     secrets). Such tables carry a generated column `scope` =
--     owner_scope(tenant_id) (the nil uuid for the cluster) so that names are
--     unique per owner and foreign keys can require "same owner".

-- owner_scope maps a tenant id to its naming scope: the tenant id itself, or the
-- nil uuid for cluster-owned (managed) objects. Queries filter on
-- `scope = owner_scope($tenant_id)` so one indexable predicate covers both.
CREATE FUNCTION owner_scope(tenant_id uuid) RETURNS uuid
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN COALESCE(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid);

CREATE TABLE tenants (
    id         uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    name       text        NOT NULL,
    disabled   boolean     NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT tenants_name_format CHECK (name ~ '^[a-z0-9_-]{1,64}$'),
    CONSTRAINT tenants_name_key UNIQUE (name)
);

-- Administrators authenticate with admin tokens and act through role grants.
CREATE TABLE admins (
    id         uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    -- name is a login such as an e-mail address; free text, 1-256 characters.
    name       text        NOT NULL,
    disabled   boolean     NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT admins_name_length CHECK (char_length(name) BETWEEN 1 AND 256),
    CONSTRAINT admins_name_key UNIQUE (name)
);

-- admin_roles grants a role to an administrator: cluster_admin is cluster-wide
-- (tenant_id NULL); every other role is for exactly one tenant.
CREATE TABLE admin_roles (
    id         uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    admin_id   uuid        NOT NULL REFERENCES admins (id) ON DELETE CASCADE,
    role       text        NOT NULL,
    tenant_id  uuid        REFERENCES tenants (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT admin_roles_role_check
        CHECK (role IN ('cluster_admin', 'tenant_admin', 'provider_admin', 'cost_owner')),
    CONSTRAINT admin_roles_scope_check
        CHECK ((role = 'cluster_admin') = (tenant_id IS NULL)),
    CONSTRAINT admin_roles_grant_key UNIQUE NULLS NOT DISTINCT (admin_id, role, tenant_id)
);
CREATE INDEX admin_roles_tenant_idx ON admin_roles (tenant_id);

-- admin_tokens stores only the SHA-256 of each bearer token.
CREATE TABLE admin_tokens (
    id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    admin_id     uuid        NOT NULL REFERENCES admins (id) ON DELETE CASCADE,
    -- label says what the token is for; informational.
    label        text        NOT NULL DEFAULT '',
    sha256       bytea       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    last_used_at timestamptz,
    revoked_at   timestamptz,
    CONSTRAINT admin_tokens_sha256_length CHECK (octet_length(sha256) = 32),
    CONSTRAINT admin_tokens_sha256_key UNIQUE (sha256)
);
CREATE INDEX admin_tokens_admin_idx ON admin_tokens (admin_id);

-- api_keys stores only the SHA-256 of each caller key. A name is unique among a
-- tenant's keys that are not revoked, so a revoked name can be used again.
CREATE TABLE api_keys (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id       uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name            text        NOT NULL,
    sha256          bytea       NOT NULL,
    -- Restrictions; an empty array means "no restriction".
    allowed_models  text[]      NOT NULL DEFAULT '{}',
    allowed_records text[]      NOT NULL DEFAULT '{}',
    regions         text[]      NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL DEFAULT now(),
    revoked_at      timestamptz,
    CONSTRAINT api_keys_name_format CHECK (name ~ '^[a-z0-9_-]{1,64}$'),
    CONSTRAINT api_keys_sha256_length CHECK (octet_length(sha256) = 32),
    CONSTRAINT api_keys_sha256_key UNIQUE (sha256),
    -- Target of budgets' (key_id, tenant_id) foreign key: same-tenant keys only.
    CONSTRAINT api_keys_id_tenant_key UNIQUE (id, tenant_id)
);
CREATE UNIQUE INDEX api_keys_active_name_key ON api_keys (tenant_id, name) WHERE revoked_at IS NULL;

-- data_rules holds a tenant's hard limits on where its data may go (R-ELIG-2).
-- No row means no rules.
CREATE TABLE data_rules (
    tenant_id        uuid        PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    -- allowed_regions are exact names or globs such as 'eu-*'; empty = any.
    allowed_regions  text[]      NOT NULL DEFAULT '{}',
    no_retained_data boolean     NOT NULL DEFAULT false,
    -- required_tags is a JSON object of string values.
    required_tags    jsonb       NOT NULL DEFAULT '{}',
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT data_rules_required_tags_object CHECK (
        jsonb_typeof(required_tags) = 'object'
        AND NOT jsonb_path_exists(required_tags, '$.* ? (@.type() != "string")'))
);

-- secrets holds key material encrypted with AES-256-GCM under the master key
-- (which is never in the database). tenant_id NULL = cluster-managed secret.
CREATE TABLE secrets (
    id          uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id   uuid        REFERENCES tenants (id) ON DELETE CASCADE,
    scope       uuid        NOT NULL GENERATED ALWAYS AS (COALESCE(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid)) STORED,
    name        text        NOT NULL,
    ciphertext  bytea       NOT NULL,
    nonce       bytea       NOT NULL,
    -- key_version names the master key the ciphertext was sealed with, so the
    -- master key can be rotated.
    key_version integer     NOT NULL DEFAULT 1,
    -- hosts are the only hosts (name or name:port) the secret may be sent to (R-SEC-1).
    hosts       text[]      NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT secrets_name_format CHECK (name ~ '^[a-z0-9_-]{1,64}$'),
    CONSTRAINT secrets_nonce_length CHECK (octet_length(nonce) = 12),
    CONSTRAINT secrets_hosts_not_empty CHECK (cardinality(hosts) >= 1),
    CONSTRAINT secrets_key_version_positive CHECK (key_version >= 1),
    CONSTRAINT secrets_scope_name_key UNIQUE (scope, name)
);

-- config_revisions is the publication state of each config snapshot: one row per
-- tenant and one (tenant_id NULL) for the cluster snapshot. A change bumps
-- desired_revision in the same transaction as its outbox row; the publisher
-- records published_revision after the snapshot is in WEIR_CONFIG. A resync
-- re-publishes every row where published_revision < desired_revision.
CREATE TABLE config_revisions (
    scope              uuid        PRIMARY KEY GENERATED ALWAYS AS (COALESCE(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid)) STORED,
    tenant_id          uuid        REFERENCES tenants (id) ON DELETE CASCADE,
    desired_revision   bigint      NOT NULL DEFAULT 1,
    published_revision bigint      NOT NULL DEFAULT 0,
    updated_at         timestamptz NOT NULL DEFAULT now(),
    published_at       timestamptz,
    CONSTRAINT config_revisions_tenant_key UNIQUE NULLS NOT DISTINCT (tenant_id),
    CONSTRAINT config_revisions_positive CHECK (desired_revision >= 1 AND published_revision >= 0),
    CONSTRAINT config_revisions_published_not_ahead CHECK (published_revision <= desired_revision)
);

-- outbox rows are written in the same transaction as the change they announce
-- and turned into published snapshots afterwards (DESIGN.md section 1).
-- tenant_id NULL = the cluster snapshot. No foreign key: the deletion of a
-- tenant must itself be published.
CREATE TABLE outbox (
    id           bigserial   PRIMARY KEY,
    tenant_id    uuid,
    kind         text        NOT NULL,
    payload      jsonb       NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz,
    CONSTRAINT outbox_kind_not_empty CHECK (kind <> '')
);
CREATE INDEX outbox_unpublished_idx ON outbox (id) WHERE published_at IS NULL;

-- audit_log records every admin change: who, what, on which object, when. No
-- foreign keys: the log outlives the admins and tenants it names.
CREATE TABLE audit_log (
    id          bigserial   PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    admin_id    uuid,
    actor       text        NOT NULL,
    tenant_id   uuid,
    action      text        NOT NULL,
    object_kind text        NOT NULL DEFAULT '',
    object_name text        NOT NULL DEFAULT '',
    details     jsonb       NOT NULL DEFAULT '{}',
    CONSTRAINT audit_log_action_not_empty CHECK (action <> '')
);
CREATE INDEX audit_log_tenant_at_idx ON audit_log (tenant_id, at DESC);

