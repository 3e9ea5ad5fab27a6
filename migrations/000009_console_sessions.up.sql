-- console_sessions are the web console's live sessions. The session cookie
-- carries the random id sealed with the admin token; a request is served only
-- while its id is here, and signing out deletes it, so a copied cookie stops
-- working at once (DESIGN §5). Rows past expires_at are deleted as new
-- sessions start.
CREATE TABLE console_sessions (
    id         bytea       PRIMARY KEY,
    expires_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT console_sessions_id_length CHECK (octet_length(id) = 16)
);

CREATE INDEX console_sessions_expires_at_idx ON console_sessions (expires_at);
