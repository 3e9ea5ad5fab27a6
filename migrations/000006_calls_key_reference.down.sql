-- Keys that no longer exist become NULL, as ON DELETE SET NULL would have made them.
UPDATE calls c SET key_id = NULL
WHERE c.key_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.id = c.key_id);
ALTER TABLE calls ADD CONSTRAINT calls_key_id_fkey FOREIGN KEY (key_id) REFERENCES api_keys (id) ON DELETE SET NULL;
CREATE INDEX IF NOT EXISTS calls_key_idx ON calls (key_id);
