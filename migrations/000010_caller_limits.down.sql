ALTER TABLE api_keys
    DROP CONSTRAINT api_keys_max_in_flight_range,
    DROP CONSTRAINT api_keys_rpm_range,
    DROP COLUMN max_in_flight,
    DROP COLUMN rpm;

ALTER TABLE tenants
    DROP CONSTRAINT tenants_max_in_flight_range,
    DROP CONSTRAINT tenants_rpm_range,
    DROP COLUMN max_in_flight,
    DROP COLUMN rpm;
