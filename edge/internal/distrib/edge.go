package distrib

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"weir.dev/natsconf"
	"weir.dev/routing/rules"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"weir.dev/edge/internal/gateway"
	"weir.dev/edge/internal/secrets"
	"weir.dev/routing"
	"weir.dev/routing/natsnames"
)

// Options configure an Edge. NATS, EdgeID, StateDir, EdgeKey, Registry,
// States and Secrets are required; zero durations take defaults.
type Options struct {
	// NATS is the edge's connection. It should retry forever
	// (nats.MaxReconnects(-1), nats.RetryOnFailedConnect(true)) and must not
	// buffer while reconnecting (nats.ReconnectBufSize(-1)), so that a
	// publish fails at once while NATS is away and records go to the journal
	// path instead of a buffer that a crash would lose.
	NATS     *nats.Conn
	EdgeID   string
	StateDir string
	// EdgeKey opens the snapshots' secrets (32 bytes, AES-256-GCM).
	EdgeKey []byte
	// ConfigPublicKey is the control plane's Ed25519 public key
	// (--config-public-key): config snapshots and operator commands that
	// do not verify under it are refused. Required.
	ConfigPublicKey ed25519.PublicKey
	Registry        *gateway.Registry
	States          *routing.States
	Secrets         SecretSink
	// TenantLoopback, when set, is called with the loopback ports tenant
	// records may dial (R-SEC-2) each time a cluster snapshot is installed
	// (from the disk cache or NATS); a snapshot that does not say allows
	// none. It is not called before the first cluster snapshot.
	TenantLoopback func(rules.TenantLoopback)
	Log            *slog.Logger
	Now            func() time.Time

	// ViewInterval is how often views are checked for changes (default 1 s),
	// ViewHeartbeat how often an unchanged view is put again (default 20 s).
	// ConfigProbe is how often the config watch checks it is not behind
	// the bucket (DefaultConfigProbe).
	ViewInterval, ViewHeartbeat time.Duration
	ConfigProbe                 time.Duration
	// AffinityTimeout bounds a WEIR_AFFINITY read on a local miss (default
	// 50 ms).
	AffinityTimeout time.Duration
	// AckTimeout bounds the wait for a call record's ack (default 5 s).
	AckTimeout time.Duration
	// Leases tune the budget leases; EdgeID, Now and Log are filled in.
	Leases LeaseOptions
	// UsageSegment is the journal's segment size (default 8 MiB).
	UsageSegment int64

	// beforeEnsure, when set (tests), runs before the edge looks up or
	// creates a bucket; a test delays or holds it to play a slow NATS.
	beforeEnsure func(ctx context.Context, bucket string)
	// liveWindow, when set (tests), replaces LiveEdgeWindow.
	liveWindow time.Duration
}

// Validate reports every missing or malformed option.
func (o Options) Validate() error {
	var errs []error
	if o.NATS == nil {
		errs = append(errs, errors.New("a NATS connection is required"))
	}
	if o.EdgeID == "" {
		errs = append(errs, errors.New("an edge id is required"))
	}
	if o.StateDir == "" {
		errs = append(errs, errors.New("a state directory is required"))
	}
	if len(o.EdgeKey) != secrets.KeySize {
		errs = append(errs, fmt.Errorf("the edge key must be %d bytes, got %d", secrets.KeySize, len(o.EdgeKey)))
	}
	if len(o.ConfigPublicKey) != ed25519.PublicKeySize {
		errs = append(errs, fmt.Errorf("the config public key must be %d bytes, got %d", ed25519.PublicKeySize, len(o.ConfigPublicKey)))
	}
	if o.Registry == nil || o.States == nil || o.Secrets == nil {
		errs = append(errs, errors.New("registry, states and secret sink are required"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("distrib: %w", errors.Join(errs...))
	}
	return nil
}

// Edge is one edge's link to the control plane. New loads the disk cache
// (the edge can serve at once); Start runs everything against NATS; Close
// flushes and gives back what the edge holds.
type Edge struct {
	o      Options
	cache  *diskCache
	config *configState
	usage  *Usage
	leases *Leases
	aff    *Affinity
	views  *viewPublisher
	live   *liveEdges
	cmds   *commands
	kvjs   jetstream.JetStream
	cfgjs  jetstream.JetStream
	// affKV and viewsKV are set once the buckets are open (openBuckets);
	// until then affinity and views wait.
	affKV   atomic.Pointer[jetstream.KeyValue]
	viewsKV atomic.Pointer[jetstream.KeyValue]
	synced  chan struct{}
	once    sync.Once

	closeOnce sync.Once
	closeErr  error

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New prepares an edge and installs the config cached on disk, if any.
func New(o Options) (*Edge, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ViewInterval <= 0 {
		o.ViewInterval = time.Second
	}
	if o.ConfigProbe <= 0 {
		o.ConfigProbe = DefaultConfigProbe
	}
	if o.ViewHeartbeat <= 0 {
		o.ViewHeartbeat = 20 * time.Second
	}
	if o.AffinityTimeout <= 0 {
		o.AffinityTimeout = 50 * time.Millisecond
	}
	if o.AckTimeout <= 0 {
		o.AckTimeout = 5 * time.Second
	}
	e := &Edge{o: o, synced: make(chan struct{})}
	var err error
	if e.cache, err = openDiskCache(filepath.Join(o.StateDir, "config"), o.Log); err != nil {
		return nil, err
	}
	e.config = newConfigState(o.Registry, o.Secrets, o.EdgeKey, o.ConfigPublicKey, e.cache, o.Log)
	e.config.loopback = o.TenantLoopback
	n, err := e.config.loadDisk()
	if err != nil {
		e.cache.close()
		return nil, err
	}
	if n > 0 {
		o.Log.Info("config loaded from the disk cache", "tenants", n)
	}
	const window = 512
	usageJS, err := jetstream.New(o.NATS, jetstream.WithPublishAsyncTimeout(o.AckTimeout), jetstream.WithPublishAsyncMaxPending(4*window))
	if err != nil {
		e.cache.close()
		return nil, fmt.Errorf("distrib: %w", err)
	}
	if e.kvjs, err = jetstream.New(o.NATS, jetstream.WithPublishAsyncTimeout(o.AckTimeout), jetstream.WithPublishAsyncMaxPending(8192)); err != nil {
		e.cache.close()
		return nil, fmt.Errorf("distrib: %w", err)
	}
	if e.cfgjs, err = jetstream.New(o.NATS); err != nil {
		e.cache.close()
		return nil, fmt.Errorf("distrib: %w", err)
	}
	if e.usage, err = openUsage(filepath.Join(o.StateDir, "usage"), o.NATS, usageJS, o.Log, usageOptions{Window: window, MaxSegment: o.UsageSegment,
		TenantName: tenantNamer(o.Registry)}); err != nil {
		e.cache.close()
		return nil, err
	}
	lo := o.Leases
	lo.EdgeID, lo.Now, lo.Log = o.EdgeID, o.Now, o.Log
	e.leases = NewLeases(natsRequester{o.NATS}, lo)
	e.aff = &Affinity{local: gateway.NewLocalAffinity(100_000), nc: o.NATS, js: e.kvjs, timeout: o.AffinityTimeout, now: o.Now, log: o.Log,
		pending: map[string]*telemetryAffinity{}, wake: make(chan struct{}, 1)}
	e.aff.kv = func() jetstream.KeyValue {
		if p := e.affKV.Load(); p != nil {
			return *p
		}
		return nil
	}
	e.views = &viewPublisher{js: e.kvjs, nc: o.NATS, reg: o.Registry, states: o.States, edgeID: o.EdgeID, edgeToken: natsnames.Token(o.EdgeID),
		now: o.Now, log: o.Log, interval: o.ViewInterval, heartbeat: o.ViewHeartbeat,
		open: func() bool { return e.viewsKV.Load() != nil }}
	e.live = newLiveEdges(natsnames.Token(o.EdgeID), o.liveWindow, o.Now, o.Log)
	if o.States != nil {
		e.live.onChange = o.States.ShareAmong // R-HEAD-7: members' declared limits are shared too
	}
	e.cmds = &commands{reg: o.Registry, states: o.States, log: o.Log, pub: o.ConfigPublicKey, now: o.Now}
	return e, nil
}

// Usage is the edge's call record sink.
func (e *Edge) Usage() *Usage { return e.usage }

// Budgets is the edge's budget enforcement.
func (e *Edge) Budgets() *Leases { return e.leases }

// Affinity is the edge's shared job affinity.
func (e *Edge) Affinity() *Affinity { return e.aff }

// LiveEdges is the number of live edges of the cluster, this one included
// (at least 1), as WEIR_VIEWS shows them (R-HEAD-7): the gateway's
// Config.LiveEdges. It is one atomic load.
func (e *Edge) LiveEdges() int { return e.live.Count() }

// Synced is closed once the edge has every bucket it uses (WEIR_CONFIG,
// WEIR_VIEWS, WEIR_AFFINITY) and has applied the whole config bucket as
// NATS delivered it the first time.
func (e *Edge) Synced() <-chan struct{} { return e.synced }

// Start runs the link to NATS — buckets, then the config watch — and views,
// the live-edge count, affinity writes, the usage sender, lease upkeep and
// operator commands until Close. It returns at once, also while NATS is away.
//
// What "ready" (gateway.Registry.Ready, GET /readyz) means for an edge: it
// holds a config to route with. That is either its disk cache, installed by
// New (so an edge restarted while NATS is down serves at once), or the
// whole of WEIR_CONFIG as the watch first delivered it, even when it holds
// no tenant. The edge installs config from NATS only after it has opened
// (or created) every bucket it uses, so an edge that became ready through
// NATS has them all. Before that — NATS away or slow, or the control plane
// not yet having made them — member views and job affinity writes wait in
// memory (bounded) and are published once the buckets are open, and
// affinity reads answer from this edge's memory only: no caller sees an
// error for the start order.
func (e *Edge) Start(ctx context.Context) error {
	if err := e.cmds.subscribe(e.o.NATS); err != nil {
		return err
	}
	ctx, e.cancel = context.WithCancel(ctx)
	e.usage.start(ctx)
	// Each watch is rebuilt when NATS reconnects.
	restart, viewsRestart := make(chan struct{}, 1), make(chan struct{}, 1)
	status := e.o.NATS.StatusChanged(nats.CONNECTED)
	e.goRun(func() {
		for {
			select {
			case <-ctx.Done():
				e.o.NATS.RemoveStatusListener(status)
				return
			case <-status:
				for _, ch := range []chan struct{}{restart, viewsRestart} {
					select {
					case ch <- struct{}{}:
					default:
					}
				}
			}
		}
	})
	e.goRun(func() {
		watchConfig(ctx, e.openBuckets, e.config, restart, e.o.ConfigProbe, func() { e.once.Do(func() { close(e.synced) }) })
	})
	e.goRun(func() { e.views.run(ctx) })
	e.goRun(func() {
		e.live.run(ctx, func() jetstream.KeyValue {
			if p := e.viewsKV.Load(); p != nil {
				return *p
			}
			return nil
		}, viewsRestart)
	})
	e.goRun(func() { e.aff.run(ctx) })
	e.goRun(func() { e.leases.run(ctx) })
	return nil
}

func (e *Edge) goRun(f func()) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		f()
	}()
}

// openBuckets opens every bucket the edge uses, creating one that is
// missing when NATS lets it (the control plane normally has made them all),
// hands WEIR_VIEWS and WEIR_AFFINITY to the view publisher and the affinity
// sharer, and returns WEIR_CONFIG. The config watch calls it before each
// watch it builds (at start, and again after NATS came back, which makes a
// bucket a NATS without state lost exist again), so config from NATS is
// installed only once every bucket exists. On a rebuild, once the other
// buckets have been open, only WEIR_CONFIG holds the watch up; the others
// are ensured beside it.
func (e *Edge) openBuckets(ctx context.Context) (jetstream.KeyValue, error) {
	openIn := func(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
		if e.o.beforeEnsure != nil {
			e.o.beforeEnsure(ctx, cfg.Bucket)
		}
		return ensureKV(ctx, e.cfgjs, cfg)
	}
	open := func(cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) { return openIn(ctx, cfg) }
	if e.viewsKV.Load() != nil && e.affKV.Load() != nil {
		// A rebuilt watch (NATS reconnected, or the watch fell behind):
		// the other buckets were open already, and a bucket whose stream
		// is electing a new leader (its server died) would hold the config
		// watch up for seconds. Ensure them beside the watch instead.
		go func() {
			for _, cfg := range []jetstream.KeyValueConfig{natsconf.ViewsBucketConfig(1), natsconf.AffinityBucketConfig(1)} {
				bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				if _, err := openIn(bctx, cfg); err != nil {
					e.o.Log.Debug("bucket not ensured after a watch rebuild", "bucket", cfg.Bucket, "err", err)
				}
				cancel()
			}
		}()
		return open(natsconf.ConfigBucketConfig(1))
	}
	views, err := open(natsconf.ViewsBucketConfig(1))
	if err != nil {
		return nil, err
	}
	e.viewsKV.Store(&views)
	aff, err := open(natsconf.AffinityBucketConfig(1))
	if err != nil {
		return nil, err
	}
	e.affKV.Store(&aff)
	select { // publish the writes that waited for it
	case e.aff.wake <- struct{}{}:
	default:
	}
	return open(natsconf.ConfigBucketConfig(1))
}

// Close stops taking commands, flushes call records (those not acked by
// the time ctx ends stay in the journal for the next start), gives back
// unused leases, stops every loop and flushes the disk cache. Call it after
// the gateway stopped taking calls. Later calls return the first's result.
func (e *Edge) Close(ctx context.Context) error {
	e.closeOnce.Do(func() { e.closeErr = e.close(ctx) })
	return e.closeErr
}

func (e *Edge) close(ctx context.Context) error {
	e.cmds.unsubscribe()
	uerr := e.usage.close(ctx)
	e.leases.Close(ctx)
	if e.cancel != nil {
		e.cancel()
	}
	e.wg.Wait()
	select { // best effort: let view and affinity puts already sent land
	case <-e.kvjs.PublishAsyncComplete():
	case <-ctx.Done():
	case <-time.After(time.Second):
	}
	e.cache.close()
	return uerr
}
