package singleton_test

import (
	"bytes"
	"context"
	"hash/fnv"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"weir.dev/controlplane/internal/singleton"
	"weir.dev/db/pgtest"
)

// The key is what its doc says, so that no other use of it collides by
// accident.
func TestLockKeyIsTheNamesHash(t *testing.T) {
	h := fnv.New64a()
	h.Write([]byte("weir.controlplane.singleton"))
	if got := int64(h.Sum64()); got != singleton.LockKey {
		t.Fatalf("LockKey %#x, FNV-1a %#x", singleton.LockKey, got)
	}
}

// replica is one control plane's Runner with a job that counts how many
// replicas run at once.
type replica struct {
	r      *singleton.Runner
	cancel context.CancelFunc
	done   chan struct{}
	// running is 1 while this replica's job runs.
	running atomic.Int32
}

type cluster struct {
	mu sync.Mutex
	// now is how many replicas run the job at this moment; most is the
	// largest now ever seen.
	now, most int
}

func (c *cluster) enter() {
	c.mu.Lock()
	c.now++
	c.most = max(c.most, c.now)
	c.mu.Unlock()
}

func (c *cluster) leave() {
	c.mu.Lock()
	c.now--
	c.mu.Unlock()
}

func startReplica(t *testing.T, conn *pgx.ConnConfig, name string, c *cluster) *replica {
	t.Helper()
	r, err := singleton.New(singleton.Config{Conn: conn, Name: name, TryEvery: 100 * time.Millisecond, CheckEvery: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rep := &replica{r: r, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(rep.done)
		r.Run(ctx, func(jctx context.Context) {
			c.enter()
			rep.running.Store(1)
			<-jctx.Done()
			rep.running.Store(0)
			c.leave()
		})
	}()
	t.Cleanup(func() { rep.stop() })
	return rep
}

func (r *replica) stop() {
	r.cancel()
	<-r.done
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

// Two replicas: exactly one runs the jobs; when it stops, the other takes
// over at once, and the two never run together.
func TestOneReplicaRunsTheJobsAndHandsOver(t *testing.T) {
	cfg, err := pgx.ParseConfig(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	var c cluster
	a := startReplica(t, cfg, "a", &c)
	waitUntil(t, 5*time.Second, "replica a runs the jobs", func() bool { return a.running.Load() == 1 })
	b := startReplica(t, cfg, "b", &c)
	time.Sleep(500 * time.Millisecond) // five of b's tries
	if b.running.Load() != 0 || b.r.Held() {
		t.Fatal("replica b runs the jobs while a holds the lock")
	}
	a.stop()
	took := waitUntil(t, 2*time.Second, "replica b takes over after a stops", func() bool { return b.running.Load() == 1 })
	t.Logf("handover after a clean stop: %v", took)
	if c.most != 1 {
		t.Fatalf("%d replicas ran the jobs at once", c.most)
	}
	if a.r.Takeovers() != 1 || b.r.Takeovers() != 1 {
		t.Errorf("takeovers a %d b %d, want 1 each", a.r.Takeovers(), b.r.Takeovers())
	}
}

// The holder's session dies (as when its process is killed, or Postgres
// drops it): the holder stops its jobs within a check, and the standby
// takes over within a try.
func TestHolderWhoseSessionDiesStopsAndTheOtherTakesOver(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var c cluster
	a := startReplica(t, cfg, "a", &c)
	waitUntil(t, 5*time.Second, "replica a runs the jobs", func() bool { return a.running.Load() == 1 })
	b := startReplica(t, cfg, "b", &c)

	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var killed int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(l.pid)) FROM pg_locks l
		WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Fatalf("%d sessions held the advisory lock, want 1", killed)
	}
	stopped := waitUntil(t, 2*time.Second, "replica a stops its jobs", func() bool { return a.running.Load() == 0 })
	took := waitUntil(t, 3*time.Second, "replica b takes over", func() bool { return b.running.Load() == 1 })
	t.Logf("a stopped %v and b took over %v after a's session was killed", stopped, took)
	// a keeps trying and stays a standby.
	time.Sleep(300 * time.Millisecond)
	if a.running.Load() != 0 {
		t.Fatal("both replicas run the jobs")
	}
}

// New refuses a config without a connection.
func TestNewNeedsAConnection(t *testing.T) {
	if _, err := singleton.New(singleton.Config{}); err == nil {
		t.Fatal("New without Conn: no error")
	}
}

// A standby that cannot reach Postgres keeps trying and says so once, not
// at every try.
func TestUnreachablePostgresIsLoggedOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	cfg, err := pgx.ParseConfig("postgres://postgres@" + addr + "/weir?sslmode=disable&connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var mu sync.Mutex
	r, err := singleton.New(singleton.Config{Conn: cfg, TryEvery: 20 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	r.Run(ctx, func(context.Context) { t.Error("jobs ran without the lock") })
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(logs.String(), "cannot reach Postgres"); n != 1 {
		t.Fatalf("%d lines about the unreachable database in 600 ms of tries, want 1:\n%s", n, logs.String())
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
