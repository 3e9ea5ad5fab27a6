-- Fails while a record or member uses gemini or google_service_account: move
-- them off first.
ALTER TABLE calls
    DROP CONSTRAINT calls_member_format_length,
    DROP COLUMN translated,
    DROP COLUMN member_format;

ALTER TABLE pool_members
    DROP CONSTRAINT pool_members_max_in_flight_range,
    DROP CONSTRAINT pool_members_rpd_range,
    DROP CONSTRAINT pool_members_wire_format_check,
    DROP COLUMN max_in_flight,
    DROP COLUMN rpd,
    DROP COLUMN wire_format,
    DROP CONSTRAINT pool_members_auth_kind_check,
    ADD CONSTRAINT pool_members_auth_kind_check CHECK (auth_kind IN ('api_key', 'sigv4', 'oauth2', 'none'));

ALTER TABLE provider_records
    DROP CONSTRAINT provider_records_day_zone_length,
    DROP CONSTRAINT provider_records_max_in_flight_range,
    DROP CONSTRAINT provider_records_rpd_range,
    DROP COLUMN day_zone,
    DROP COLUMN max_in_flight,
    DROP COLUMN rpd,
    DROP CONSTRAINT provider_records_auth_kind_check,
    ADD CONSTRAINT provider_records_auth_kind_check CHECK (auth_kind IN ('api_key', 'sigv4', 'oauth2', 'none')),
    DROP CONSTRAINT provider_records_wire_format_check,
    ADD CONSTRAINT provider_records_wire_format_check CHECK (wire_format IN ('openai', 'anthropic', 'bedrock'));
