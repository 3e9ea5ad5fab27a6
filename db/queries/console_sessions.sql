-- name: StartConsoleSession :exec
-- StartConsoleSession records a new console session until @expires_at.
INSERT INTO console_sessions (id, expires_at) VALUES (@id, @expires_at);

-- name: ConsoleSessionActive :one
-- ConsoleSessionActive reports whether the session exists and has not
-- expired at @now.
SELECT EXISTS (SELECT 1 FROM console_sessions WHERE id = @id AND expires_at > @now)::boolean AS active;

-- name: EndConsoleSession :execrows
-- EndConsoleSession deletes a session (sign-out).
DELETE FROM console_sessions WHERE id = @id;

-- name: DeleteExpiredConsoleSessions :execrows
-- DeleteExpiredConsoleSessions deletes the sessions expired at @now.
DELETE FROM console_sessions WHERE expires_at <= @now;
