-- Caller limits (ROUTING R-CAP-2): a tenant and an API key may each limit
-- calls per minute (rpm) and calls at once (max_in_flight). 0 means no limit
-- of their own; a tenant with max_in_flight 0 gets the cluster default
-- (`controlplane serve --default-tenant-max-in-flight`, 512). Limits are
-- cluster-wide: each edge enforces its share (R-HEAD-7).
ALTER TABLE tenants
    ADD COLUMN rpm           bigint NOT NULL DEFAULT 0,
    ADD COLUMN max_in_flight bigint NOT NULL DEFAULT 0,
    ADD CONSTRAINT tenants_rpm_range CHECK (rpm BETWEEN 0 AND 100000000),
    ADD CONSTRAINT tenants_max_in_flight_range CHECK (max_in_flight BETWEEN 0 AND 1000000);

ALTER TABLE api_keys
    ADD COLUMN rpm           bigint NOT NULL DEFAULT 0,
    ADD COLUMN max_in_flight bigint NOT NULL DEFAULT 0,
    ADD CONSTRAINT api_keys_rpm_range CHECK (rpm BETWEEN 0 AND 100000000),
    ADD CONSTRAINT api_keys_max_in_flight_range CHECK (max_in_flight BETWEEN 0 AND 1000000);
