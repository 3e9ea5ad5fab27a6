-- Going down leaves version 1 ciphertexts that the older code cannot open
-- (it seals and opens without additional data): re-set those secrets after.
ALTER TABLE secrets DROP COLUMN seal_version;
