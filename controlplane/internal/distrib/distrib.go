package distrib

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"weir.dev/controlplane/internal/singleton"
	"weir.dev/controlplane/internal/snapshot"
	"weir.dev/controlplane/internal/store"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// Config is the distribution layer's configuration: what every part needs
// (keys, clock, log) and each part's settings. DefaultConfig holds the
// defaults; EdgeKey and Open have none.
type Config struct {
	// EdgeKey seals secrets for edges (32 bytes, WEIR_EDGE_KEY). Required.
	EdgeKey []byte
	// Open opens secrets sealed under the master key. Required.
	Open snapshot.OpenFunc
	// SigningKey is the 32-byte seed of the Ed25519 key that signs config
	// snapshots and operator commands (WEIR_CONFIG_SIGNING_KEY). Required.
	SigningKey []byte
	// Rand is the source of nonces; nil means crypto/rand.
	Rand io.Reader
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log receives operational messages; nil discards them.
	Log *slog.Logger
	// Tracer traces usage ingest, a span per batch; nil traces nothing.
	Tracer trace.Tracer

	// Replicas is how many JetStream servers keep each bucket and the
	// usage stream (--nats-replicas): 1 on a single server, 3 in a
	// three-node cluster. 0 means 1.
	Replicas int
	// ReplicaName names this control plane in logs (the host name).
	ReplicaName string
	// SingletonTryEvery is how often a replica that does not run the
	// singleton jobs tries to take them over (1s).
	SingletonTryEvery time.Duration

	// PollInterval is how often the publisher looks for new outbox rows
	// (default 100ms: a change reaches WEIR_CONFIG well under a second).
	PollInterval time.Duration
	// ResyncInterval is how often snapshots behind are republished (30s).
	ResyncInterval time.Duration
	// OutboxBatch is the most outbox rows claimed per transaction (100).
	OutboxBatch int
	// TenantLoopback is which loopback ports tenant records may dial on
	// edges, sent in the cluster snapshot (R-SEC-2); nil means none.
	TenantLoopback *configv1.TenantLoopback
	// DefaultTenantMaxInFlight is the cluster default of a tenant's
	// max_in_flight, sent in the cluster snapshot (R-CAP-2); 0 sends 512.
	DefaultTenantMaxInFlight int64

	// IngestConsumer names the durable consumer ("weir-controlplane-usage").
	IngestConsumer string
	// IngestBatch is the most call records per transaction (500).
	IngestBatch int
	// IngestMaxWait is how long a fetch waits to fill a batch (100ms).
	IngestMaxWait time.Duration
	// IngestAckWait is how long NATS waits for an ack before redelivering
	// a record (30s).
	IngestAckWait time.Duration
	// IngestWorkers is how many batches are written at once, each on its
	// own connection (2: Postgres inserts use one core per connection).
	IngestWorkers int

	// LeaseTTL is how long a lease may be reserved against (60s).
	LeaseTTL time.Duration
	// LeaseMinSlice is the smallest lease worth a round trip, in
	// nano-dollars (10,000,000: one cent).
	LeaseMinSlice int64
	// LeaseSettleLag is how long a returned lease counts at what it used
	// (30s).
	LeaseSettleLag time.Duration
	// LeaseReclaimAfter is how long past its expiry a lease that was never
	// returned counts at its whole grant (11m: the 600 s call deadline
	// plus settling).
	LeaseReclaimAfter time.Duration
	// LeaseWorkers is how many lease requests are served at once (4).
	LeaseWorkers int

	// ViewFlushInterval is how long member views are gathered before one
	// write (250ms).
	ViewFlushInterval time.Duration

	// JanitorInterval is how often old rows are swept (1m).
	JanitorInterval time.Duration
	// ClosedLeaseRetention keeps closed leases (7 days).
	ClosedLeaseRetention time.Duration
	// ViewRetention keeps member views after they were observed (1h).
	ViewRetention time.Duration
	// EdgeRetention keeps edges that stopped reporting (24h).
	EdgeRetention time.Duration
	// OutboxRetention keeps published outbox rows (7 days).
	OutboxRetention time.Duration
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		PollInterval:         100 * time.Millisecond,
		ResyncInterval:       30 * time.Second,
		OutboxBatch:          100,
		IngestConsumer:       "weir-controlplane-usage",
		IngestBatch:          500,
		IngestMaxWait:        100 * time.Millisecond,
		IngestAckWait:        30 * time.Second,
		IngestWorkers:        2,
		LeaseTTL:             60 * time.Second,
		LeaseMinSlice:        10_000_000,
		LeaseSettleLag:       30 * time.Second,
		LeaseReclaimAfter:    11 * time.Minute,
		LeaseWorkers:         4,
		ViewFlushInterval:    250 * time.Millisecond,
		JanitorInterval:      time.Minute,
		ClosedLeaseRetention: 7 * 24 * time.Hour,
		ViewRetention:        time.Hour,
		EdgeRetention:        24 * time.Hour,
		OutboxRetention:      7 * 24 * time.Hour,
	}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if len(c.EdgeKey) != snapshot.EdgeKeySize {
		errs = append(errs, fmt.Errorf("the edge key must be %d bytes", snapshot.EdgeKeySize))
	}
	if c.Open == nil {
		errs = append(errs, errors.New("no secret opener"))
	}
	if len(c.SigningKey) != ed25519.SeedSize {
		errs = append(errs, fmt.Errorf("the config signing key must be a %d-byte Ed25519 seed", ed25519.SeedSize))
	}
	for name, d := range map[string]time.Duration{
		"poll interval": c.PollInterval, "resync interval": c.ResyncInterval, "ingest max wait": c.IngestMaxWait,
		"ingest ack wait": c.IngestAckWait, "lease TTL": c.LeaseTTL, "view flush interval": c.ViewFlushInterval,
		"janitor interval": c.JanitorInterval, "closed lease retention": c.ClosedLeaseRetention,
		"view retention": c.ViewRetention, "edge retention": c.EdgeRetention, "outbox retention": c.OutboxRetention,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("the %s must be positive", name))
		}
	}
	if c.LeaseSettleLag < 0 || c.LeaseReclaimAfter < 0 {
		errs = append(errs, errors.New("the lease settle lag and reclaim grace must not be negative"))
	}
	if c.OutboxBatch < 1 || c.IngestBatch < 1 || c.IngestWorkers < 1 || c.LeaseWorkers < 1 {
		errs = append(errs, errors.New("the outbox batch, ingest batch, ingest workers and lease workers must be at least 1"))
	}
	if c.LeaseMinSlice < 0 {
		errs = append(errs, errors.New("the minimum lease slice must not be negative"))
	}
	if c.IngestConsumer == "" {
		errs = append(errs, errors.New("the ingest consumer needs a name"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("distrib: %w", err)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Distributor runs the control plane's side of distribution over one NATS
// connection: it creates the buckets and the stream, then runs the outbox
// publisher, usage ingest, the lease server, the view mirror and the
// janitor until its context ends. Create it with New.
type Distributor struct {
	st     *store.Store
	nc     *nats.Conn
	cfg    Config
	signer *Signer
	cmd    *Commander
	// lock is the singleton lock's runner once Run has started.
	lock atomic.Pointer[singleton.Runner]
}

// New checks cfg and returns a distributor over st and nc. The caller owns
// nc and closes it after Run returns.
func New(st *store.Store, nc *nats.Conn, cfg Config) (*Distributor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	signer, err := NewSigner(cfg.SigningKey)
	if err != nil {
		return nil, err
	}
	return &Distributor{st: st, nc: nc, cfg: cfg.withDefaults(), signer: signer, cmd: NewCommander(nc, signer)}, nil
}

// Signer is the signer of config snapshots and commands.
func (d *Distributor) Signer() *Signer { return d.signer }

// Commander returns the operator command publisher (provider.Resetter,
// admin.Revoker). It works whether or not Run has started.
func (d *Distributor) Commander() *Commander { return d.cmd }

// Run sets up the buckets and the stream (retrying while NATS is away),
// then runs every part until ctx ends, and returns nil once they all have
// stopped. Each part retries its own failures, so Run returns an error only
// for a setup that cannot succeed.
func (d *Distributor) Run(ctx context.Context) error {
	// A JetStream request that finds no stream leader (its node just died)
	// waits out the timeout before it is tried again; 2 s, well above a
	// healthy put, lets a put reach the newly elected leader soon.
	js, err := jetstream.New(d.nc, jetstream.WithDefaultTimeout(jsTimeout))
	if err != nil {
		return fmt.Errorf("distrib: jetstream: %w", err)
	}
	fail := newFailureLog(d.cfg.Log, "NATS setup")
	for {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = d.setupLocked(sctx, js)
		cancel()
		if err == nil {
			fail.ok(ctx)
			break
		}
		fail.fail(ctx, err)
		if !sleep(ctx, time.Second) {
			return nil
		}
	}
	c := d.cfg
	leases := LeaseConfig{
		TTL: c.LeaseTTL, MinSlice: c.LeaseMinSlice, SettleLag: c.LeaseSettleLag, ReclaimAfter: c.LeaseReclaimAfter,
		Workers: c.LeaseWorkers, Now: c.Now, Log: c.Log,
	}
	pub := NewPublisher(d.st, js, PublisherConfig{
		Replicas: c.Replicas, EdgeKey: c.EdgeKey, Open: c.Open, Rand: c.Rand, PollInterval: c.PollInterval,
		ResyncInterval: c.ResyncInterval, Batch: c.OutboxBatch, TenantLoopback: c.TenantLoopback, DefaultTenantMaxInFlight: c.DefaultTenantMaxInFlight, Log: c.Log, Signer: d.signer,
	})
	// Every replica ingests (the durable consumer hands each record to one
	// of them; inserts are idempotent) and answers lease requests (a queue
	// group hands each request to one; grants lock the budget's row).
	every := []interface{ Run(context.Context) error }{
		NewIngest(d.st.Pool().Config().ConnConfig, js, IngestConfig{
			Consumer: c.IngestConsumer, Batch: c.IngestBatch, MaxWait: c.IngestMaxWait, AckWait: c.IngestAckWait,
			Workers: c.IngestWorkers, Now: c.Now, Log: c.Log, Replicas: c.Replicas, Tracer: c.Tracer,
		}),
		NewLeaseServer(d.st, d.nc, leases),
	}
	// One replica at a time publishes the outbox, repairs snapshots,
	// mirrors views and runs the janitor (package singleton).
	once := []interface{ Run(context.Context) error }{
		pub,
		runFunc(pub.RunRepair),
		NewViewMirror(d.st, js, ViewConfig{FlushInterval: c.ViewFlushInterval, Log: c.Log, Replicas: c.Replicas}),
		NewJanitor(d.st, JanitorConfig{
			Interval: c.JanitorInterval, Leases: leases, ClosedLeaseRetention: c.ClosedLeaseRetention,
			ViewRetention: c.ViewRetention, EdgeRetention: c.EdgeRetention, OutboxRetention: c.OutboxRetention,
			Now: c.Now, Log: c.Log,
		}),
	}
	lock, err := singleton.New(singleton.Config{Conn: d.st.Pool().Config().ConnConfig, Name: c.ReplicaName, TryEvery: c.SingletonTryEvery, Log: c.Log})
	if err != nil {
		return err
	}
	d.lock.Store(lock)
	d.cfg.Log.InfoContext(ctx, "distribution running", "nats", d.nc.ConnectedUrlRedacted(), "replicas", max(c.Replicas, 1))
	var wg sync.WaitGroup
	errs := make([]error, len(every)+len(once))
	for i, p := range every {
		wg.Go(func() { errs[i] = p.Run(ctx) })
	}
	wg.Go(func() {
		lock.Run(ctx, func(ctx context.Context) {
			var jobs sync.WaitGroup
			for i, p := range once {
				jobs.Go(func() {
					if err := p.Run(ctx); err != nil {
						errs[len(every)+i] = err
					}
				})
			}
			jobs.Wait()
		})
	})
	wg.Wait()
	return errors.Join(errs...)
}

// RunsSingletonJobs reports whether this replica holds the singleton lock
// and runs the jobs only one replica may run (false before Run starts).
func (d *Distributor) RunsSingletonJobs() bool {
	l := d.lock.Load()
	return l != nil && l.Held()
}

// jsTimeout bounds a JetStream request without a deadline of its own.
const jsTimeout = 2 * time.Second

// setupLockKey is the Postgres advisory lock control planes take around
// Setup: FNV-1a of "weir.controlplane.natssetup".
var setupLockKey = func() int64 {
	h := fnv.New64a()
	h.Write([]byte("weir.controlplane.natssetup"))
	return int64(h.Sum64())
}()

// setupLocked runs Setup while holding a transaction-level advisory lock,
// so that control-plane replicas starting together set NATS up one after
// another: a JetStream cluster does not answer two replicas that create
// the same replicated stream at once (both requests time out, and the
// creation can stall for tens of seconds), while updating an existing one
// concurrently is fine.
func (d *Distributor) setupLocked(ctx context.Context, js jetstream.JetStream) error {
	tx, err := d.st.Pool().Begin(ctx)
	if err != nil {
		return fmt.Errorf("distrib: setup lock: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, setupLockKey); err != nil {
		return fmt.Errorf("distrib: setup lock: %w", err)
	}
	if _, err := Setup(ctx, js, d.cfg.Replicas); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// runFunc makes a function one of Run's parts.
type runFunc func(context.Context) error

func (f runFunc) Run(ctx context.Context) error { return f(ctx) }
