package server

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
)

// pgSessions are the console's sessions in Postgres (console_sessions), so
// a sign-out holds on every control plane of the database.
type pgSessions struct{ st *store.Store }

// Start records the session and deletes the sessions that have expired.
func (s pgSessions) Start(ctx context.Context, id []byte, expires time.Time) error {
	if _, err := s.st.Q.DeleteExpiredConsoleSessions(ctx, ts(time.Now())); err != nil {
		return err
	}
	return s.st.Q.StartConsoleSession(ctx, sqlc.StartConsoleSessionParams{ID: id, ExpiresAt: ts(expires)})
}

// Active reports whether the session is recorded and unexpired at now.
func (s pgSessions) Active(ctx context.Context, id []byte, now time.Time) (bool, error) {
	return s.st.Q.ConsoleSessionActive(ctx, sqlc.ConsoleSessionActiveParams{ID: id, Now: ts(now)})
}

// End deletes the session.
func (s pgSessions) End(ctx context.Context, id []byte) error {
	_, err := s.st.Q.EndConsoleSession(ctx, id)
	return err
}

func ts(t time.Time) pgtype.Timestamptz { return pgtype.Timestamptz{Time: t, Valid: true} }
