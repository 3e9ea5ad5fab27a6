-- 000012_formats_day_limits: issue 14 (ROUTING §11, R-HEAD-6, R-CAP-1).
--   * the gemini wire format (Gemini API, Vertex AI) and the
--     google_service_account auth kind;
--   * a pool member may speak its own wire format (R-FMT-4): NULL means the
--     record's;
--   * declared limits rpd (requests per calendar day in the record's
--     day_zone, an IANA zone, '' = UTC) and max_in_flight (calls held at
--     once); 0 = none, NULL on a member = none of its own;
--   * a call notes the serving member's wire format and whether it was
--     translated (R-FMT-6).

ALTER TABLE provider_records
    DROP CONSTRAINT provider_records_wire_format_check,
    ADD CONSTRAINT provider_records_wire_format_check CHECK (wire_format IN ('openai', 'anthropic', 'bedrock', 'gemini')),
    DROP CONSTRAINT provider_records_auth_kind_check,
    ADD CONSTRAINT provider_records_auth_kind_check CHECK (auth_kind IN ('api_key', 'sigv4', 'oauth2', 'none', 'google_service_account')),
    ADD COLUMN rpd           bigint NOT NULL DEFAULT 0,
    ADD COLUMN max_in_flight bigint NOT NULL DEFAULT 0,
    ADD COLUMN day_zone      text   NOT NULL DEFAULT '',
    ADD CONSTRAINT provider_records_rpd_range CHECK (rpd BETWEEN 0 AND 1000000000),
    ADD CONSTRAINT provider_records_max_in_flight_range CHECK (max_in_flight BETWEEN 0 AND 1000000),
    ADD CONSTRAINT provider_records_day_zone_length CHECK (length(day_zone) <= 64);

ALTER TABLE pool_members
    DROP CONSTRAINT pool_members_auth_kind_check,
    ADD CONSTRAINT pool_members_auth_kind_check CHECK (auth_kind IN ('api_key', 'sigv4', 'oauth2', 'none', 'google_service_account')),
    ADD COLUMN wire_format   text,
    ADD COLUMN rpd           bigint,
    ADD COLUMN max_in_flight bigint,
    ADD CONSTRAINT pool_members_wire_format_check CHECK (wire_format IN ('openai', 'anthropic', 'bedrock', 'gemini')),
    ADD CONSTRAINT pool_members_rpd_range CHECK (rpd BETWEEN 0 AND 1000000000),
    ADD CONSTRAINT pool_members_max_in_flight_range CHECK (max_in_flight BETWEEN 0 AND 1000000);

ALTER TABLE calls
    ADD COLUMN member_format text    NOT NULL DEFAULT '',
    ADD COLUMN translated    boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT calls_member_format_length CHECK (length(member_format) <= 32);
