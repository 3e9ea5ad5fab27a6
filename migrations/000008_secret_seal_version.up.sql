-- seal_version says how a secret's ciphertext is sealed under the master key:
-- 0 = no additional data (every row written before this migration); 1 = with
-- the row's tenant, name and hosts as additional authenticated data (DESIGN
-- §5), so a ciphertext moved to another row does not open. The database cannot
-- re-seal (the master key is never here): the control plane re-seals every
-- version 0 row to version 1 at start and on `controlplane migrate`.
ALTER TABLE secrets
    ADD COLUMN seal_version integer NOT NULL DEFAULT 0,
    ADD CONSTRAINT secrets_seal_version_known CHECK (seal_version IN (0, 1));
