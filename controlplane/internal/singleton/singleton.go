// Package singleton runs work that must happen on exactly one control-plane
// replica at a time (outbox publishing and resync, snapshot repair,
// mirroring views into Postgres, the janitor that closes leases), chosen
// by a Postgres session-level advisory lock.
//
// Why Postgres and not a NATS KV lease: every singleton job reads and
// writes Postgres, so a replica that cannot reach Postgres could not do the
// work anyway, and the lock's holder is exactly the replica whose database
// session is alive. Postgres releases a session's advisory locks the moment
// the session ends, so a replica that crashes (SIGKILL, OOM, machine loss
// with the TCP connection reset) hands the work over within one TryEvery
// of the standby; a replica cut off without a reset is dropped by the
// server's TCP keepalives (about KeepaliveIdle + 3 × KeepaliveInterval).
// The holder checks its session every CheckEvery and stops its jobs at
// once when the check fails, before it tries to take the lock again.
//
// There is a short window in which an old holder that has not yet noticed
// a lost session still runs its jobs beside the new one; every job is safe
// to run twice (outbox rows are claimed FOR UPDATE SKIP LOCKED, snapshot
// puts are compare-and-set and move versions forward only, view and
// janitor writes are idempotent), so the lock makes the work efficient
// and its logs clear, not correct.
//
// The lock needs a real session: behind a connection pooler in
// transaction mode (PgBouncer) it does not hold; connect the control plane
// to Postgres directly.
package singleton

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// LockKey is the advisory lock's key: the 64-bit FNV-1a hash of
// "weir.controlplane.singleton", fixed so that every replica and every
// version agrees on it.
const LockKey int64 = 0x72687f2da6c88346

// Config says how a Runner takes and keeps the lock.
type Config struct {
	// Conn is the Postgres connection config the lock's session is opened
	// with (a session of its own, outside any pool).
	Conn *pgx.ConnConfig
	// Name names this replica in logs (the host name, say).
	Name string
	// TryEvery is how often a standby tries to take the lock (1s).
	TryEvery time.Duration
	// CheckEvery is how often the holder checks its session (1s); a check
	// that does not answer within CheckEvery fails.
	CheckEvery time.Duration
	// KeepaliveIdle and KeepaliveInterval are the server-side TCP
	// keepalive settings of the session (5s and 2s, three probes): how
	// soon Postgres drops the session of a holder that vanished without
	// closing its connection.
	KeepaliveIdle, KeepaliveInterval time.Duration
	// Log receives takeovers and losses; nil discards.
	Log *slog.Logger
}

func (c *Config) defaults() {
	if c.TryEvery <= 0 {
		c.TryEvery = time.Second
	}
	if c.CheckEvery <= 0 {
		c.CheckEvery = time.Second
	}
	if c.KeepaliveIdle <= 0 {
		c.KeepaliveIdle = 5 * time.Second
	}
	if c.KeepaliveInterval <= 0 {
		c.KeepaliveInterval = 2 * time.Second
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

// Runner runs jobs while it holds the lock.
type Runner struct {
	cfg  Config
	held atomic.Bool
	// failures counts consecutive failed tries; lastWarn is when one was
	// last logged (a failure is logged at once, then every 30 s).
	failures int
	lastWarn time.Time
	// takeovers counts how often this replica took the lock.
	takeovers atomic.Int64
}

// New returns a Runner for cfg; cfg.Conn is required.
func New(cfg Config) (*Runner, error) {
	if cfg.Conn == nil {
		return nil, errors.New("singleton: a Postgres connection config is required")
	}
	cfg.defaults()
	cfg.Conn = cfg.Conn.Copy()
	if cfg.Conn.RuntimeParams == nil {
		cfg.Conn.RuntimeParams = map[string]string{}
	}
	cfg.Conn.RuntimeParams["application_name"] = "weir-controlplane-singleton"
	cfg.Conn.RuntimeParams["tcp_keepalives_idle"] = fmt.Sprint(int(cfg.KeepaliveIdle.Seconds()))
	cfg.Conn.RuntimeParams["tcp_keepalives_interval"] = fmt.Sprint(int(cfg.KeepaliveInterval.Seconds()))
	cfg.Conn.RuntimeParams["tcp_keepalives_count"] = "3"
	return &Runner{cfg: cfg}, nil
}

// Held reports whether this replica holds the lock now.
func (r *Runner) Held() bool { return r.held.Load() }

// Takeovers is how often this replica has taken the lock.
func (r *Runner) Takeovers() int64 { return r.takeovers.Load() }

// Run takes the lock whenever it is free and runs jobs with a context that
// ends when the lock is lost (or ctx ends); jobs must return soon after
// their context ends. Run returns when ctx ends, after jobs have returned.
func (r *Runner) Run(ctx context.Context, jobs func(context.Context)) {
	for ctx.Err() == nil {
		conn, ok := r.take(ctx)
		if ok {
			r.hold(ctx, conn, jobs)
		}
		if conn != nil {
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = conn.Close(cctx) // closing the session releases the lock
			cancel()
		}
		if !sleep(ctx, r.cfg.TryEvery) {
			return
		}
	}
}

// take opens a session and tries the lock once. It returns the session
// (to close) and whether the lock is this session's.
func (r *Runner) take(ctx context.Context) (*pgx.Conn, bool) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, r.cfg.Conn)
	if err != nil {
		r.failed(ctx, "singleton lock: cannot reach Postgres", err)
		return nil, false
	}
	var got bool
	if err := conn.QueryRow(cctx, `SELECT pg_try_advisory_lock($1)`, LockKey).Scan(&got); err != nil {
		r.failed(ctx, "singleton lock: cannot try the lock", err)
		return conn, false
	}
	if r.failures > 0 {
		r.cfg.Log.Info("singleton lock: Postgres answers again", "failed_tries", r.failures)
		r.failures = 0
	}
	return conn, got
}

// failed logs a failed try: the first of a run at once, then one line
// every 30 s with the count, so that a long database outage does not
// flood the log.
func (r *Runner) failed(ctx context.Context, msg string, err error) {
	if ctx.Err() != nil {
		return
	}
	r.failures++
	if r.failures == 1 || time.Since(r.lastWarn) >= 30*time.Second {
		r.lastWarn = time.Now()
		r.cfg.Log.Warn(msg, "err", err, "failed_tries", r.failures)
	}
}

// hold runs jobs while conn's session answers, then stops them.
func (r *Runner) hold(ctx context.Context, conn *pgx.Conn, jobs func(context.Context)) {
	r.held.Store(true)
	r.takeovers.Add(1)
	since := time.Now()
	r.cfg.Log.Info("singleton jobs started on this replica (it holds the lock)", "replica", r.cfg.Name)
	jctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		jobs(jctx)
	}()
	t := time.NewTicker(r.cfg.CheckEvery)
	defer t.Stop()
	var lost error
	for lost == nil {
		select {
		case <-ctx.Done():
		case <-done:
		case <-t.C:
			cctx, cancel := context.WithTimeout(ctx, r.cfg.CheckEvery)
			lost = conn.Ping(cctx)
			cancel()
			continue
		}
		break
	}
	stop()
	<-done
	r.held.Store(false)
	if lost != nil && ctx.Err() == nil {
		r.cfg.Log.Warn("singleton jobs stopped: the lock's session failed; another replica may take over",
			"replica", r.cfg.Name, "held", time.Since(since).Round(time.Millisecond), "err", lost)
	} else {
		r.cfg.Log.Info("singleton jobs stopped", "replica", r.cfg.Name, "held", time.Since(since).Round(time.Millisecond))
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
