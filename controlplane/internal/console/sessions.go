package console

import (
	"context"
	"sync"
	"time"
)

// Sessions records the console's live sessions, so that signing out ends a
// session on the server and not only in the browser: a copy of a signed-out
// cookie is refused at once. Implementations must be safe for concurrent
// use; the control plane's is in Postgres (console_sessions), shared by
// every control plane on the database.
type Sessions interface {
	// Start records session id as live until expires.
	Start(ctx context.Context, id []byte, expires time.Time) error
	// Active reports whether id is live at now (started, not ended, not
	// expired).
	Active(ctx context.Context, id []byte, now time.Time) (bool, error)
	// End ends session id; ending an unknown session is not an error.
	End(ctx context.Context, id []byte) error
}

// memSessions is the Sessions of a console without a database: in this
// process's memory only (sessions end with the process).
type memSessions struct {
	mu sync.Mutex
	m  map[string]time.Time
}

func newMemSessions() *memSessions { return &memSessions{m: map[string]time.Time{}} }

func (s *memSessions) Start(_ context.Context, id []byte, expires time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for k, exp := range s.m {
		if !now.Before(exp) {
			delete(s.m, k)
		}
	}
	s.m[string(id)] = expires
	return nil
}

func (s *memSessions) Active(_ context.Context, id []byte, now time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.m[string(id)]
	return ok && now.Before(exp), nil
}

func (s *memSessions) End(_ context.Context, id []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, string(id))
	return nil
}
