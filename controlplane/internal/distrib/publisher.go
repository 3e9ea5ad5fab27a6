package distrib

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"weir.dev/controlplane/internal/snapshot"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	"weir.dev/natsconf"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/natsnames"
)

// PublisherConfig configures the outbox publisher.
type PublisherConfig struct {
	// Replicas is WEIR_CONFIG's replica count when the publisher recreates
	// it (Config.Replicas).
	Replicas int
	// EdgeKey seals secrets in snapshots for edges (32 bytes, WEIR_EDGE_KEY).
	EdgeKey []byte
	// Open opens a secret sealed under the master key.
	Open snapshot.OpenFunc
	// Rand is the source of nonces for sealing; nil means crypto/rand.
	Rand io.Reader
	// PollInterval is how often the outbox is checked for new rows.
	PollInterval time.Duration
	// ResyncInterval is how often snapshots whose published revision is
	// behind are published again.
	ResyncInterval time.Duration
	// Batch is how many outbox rows one drain transaction claims.
	Batch int
	// TenantLoopback goes into every cluster snapshot (R-SEC-2); nil means
	// no port. When the bucket's cluster snapshot says otherwise, Reconcile
	// publishes a new one: a restart with another setting reaches edges.
	TenantLoopback *configv1.TenantLoopback
	// DefaultTenantMaxInFlight goes into every cluster snapshot (R-CAP-2);
	// 0 means 512 (snapshot.DefaultTenantMaxInFlight). Like TenantLoopback,
	// a bucket's cluster snapshot that says another is published again.
	DefaultTenantMaxInFlight int64
	// Log receives failures, never secret values; nil discards.
	Log *slog.Logger
	// Signer signs every value put into the bucket (DESIGN.md §4).
	// Required.
	Signer *Signer
}

// Publisher turns committed config changes into snapshots in WEIR_CONFIG
// (DESIGN.md §1 step 1). Create it with NewPublisher; Run it once per
// process. Several control planes may each run one: outbox rows are claimed
// with FOR UPDATE SKIP LOCKED and every write to the bucket is a
// compare-and-set that only moves a key's snapshot version forward.
//
// Contract: a change committed with store.Tx.Changed reaches the bucket
// within about one PollInterval while Postgres and NATS are up. Outbox rows
// are marked published only in the transaction that claimed them and after
// the snapshot is in the bucket, so a crash between the commit of a change
// and its publication loses nothing: the rows are still unpublished and the
// next drain (of this or another control plane) publishes them.
type Publisher struct {
	st   *store.Store
	js   jetstream.JetStream
	kv   jetstream.KeyValue // set by Reconcile
	cfg  PublisherConfig
	fail *failureLog

	// afterPut, when set (tests), runs after a snapshot is put and before
	// the claiming transaction commits; an error aborts the drain as a
	// crash there would.
	afterPut func() error
}

// NewPublisher returns a publisher writing into WEIR_CONFIG through js.
func NewPublisher(st *store.Store, js jetstream.JetStream, cfg PublisherConfig) *Publisher {
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	cfg.Log = orDiscard(cfg.Log)
	return &Publisher{st: st, js: js, cfg: cfg, fail: newFailureLog(cfg.Log, "config publisher")}
}

// Run reconciles the bucket with the database, then drains the outbox every
// PollInterval and resyncs every ResyncInterval until ctx ends. Failures
// (Postgres or NATS away) are logged and retried after a second, and the
// first success after a failure reconciles again; so does a resync that
// finds the cluster snapshot gone, so that a NATS server that came back
// without its state gets every snapshot back within ResyncInterval. Run
// returns nil when ctx ends.
func (p *Publisher) Run(ctx context.Context) error {
	poll := time.NewTicker(p.cfg.PollInterval)
	defer poll.Stop()
	resync := time.NewTicker(p.cfg.ResyncInterval)
	defer resync.Stop()
	reconciled := false
	for ctx.Err() == nil {
		var err error
		if !reconciled {
			if err = p.Reconcile(ctx); err == nil {
				reconciled = true
			}
		}
		if err == nil {
			_, err = p.Drain(ctx)
		}
		if err != nil {
			p.fail.fail(ctx, err)
			reconciled = false
			sleep(ctx, time.Second)
			continue
		}
		p.fail.ok(ctx)
		select {
		case <-ctx.Done():
		case <-poll.C:
		case <-resync.C:
			_, err := p.Resync(ctx)
			if err == nil && !p.intact(ctx) {
				err = errors.New("distrib: the cluster snapshot is missing from the bucket")
			}
			if err != nil {
				p.fail.fail(ctx, err)
				reconciled = false
			}
		}
	}
	return nil
}

// Drain publishes every unpublished outbox row, oldest first, and returns
// how many rows it marked published. It stops at the first failure that is
// not about one snapshot's rows (NATS or Postgres away), leaving the rest
// for the next drain.
func (p *Publisher) Drain(ctx context.Context) (int, error) {
	if err := p.bucket(ctx, false); err != nil {
		return 0, err
	}
	total := 0
	for {
		n, more, err := p.drainBatch(ctx)
		total += n
		if err != nil || !more {
			return total, err
		}
	}
}

// drainBatch claims up to Batch rows in one transaction, publishes the
// snapshot of each owner they name (once per owner, at its current desired
// revision, which covers every row of the owner), and marks them published.
func (p *Publisher) drainBatch(ctx context.Context) (n int, more bool, err error) {
	tx, err := p.st.Pool().BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return 0, false, fmt.Errorf("distrib: outbox: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := sqlc.New(tx)
	rows, err := q.ListUnpublishedOutbox(ctx, int32(p.cfg.Batch))
	if err != nil {
		return 0, false, fmt.Errorf("distrib: outbox: claim rows: %w", err)
	}
	if len(rows) == 0 {
		return 0, false, nil
	}
	var owners []pgtype.UUID
	ids := map[pgtype.UUID][]int64{}
	for _, r := range rows {
		if _, ok := ids[r.TenantID]; !ok {
			owners = append(owners, r.TenantID)
		}
		ids[r.TenantID] = append(ids[r.TenantID], r.ID)
	}
	var done []int64
	var stop error
	versions := map[pgtype.UUID]uint64{}
	for _, owner := range owners {
		version, err := p.publish(ctx, owner)
		if err != nil && !permanent(err) {
			stop = err
			break
		}
		if err != nil {
			// A snapshot that cannot be built stays behind (the resync
			// retries it and logs), but must not hold up other tenants'
			// rows behind it.
			p.cfg.Log.ErrorContext(ctx, "config snapshot cannot be built; its outbox rows are skipped", "owner", ownerKey(owner), "err", err)
		} else {
			versions[owner] = version
		}
		done = append(done, ids[owner]...)
	}
	if len(done) == 0 {
		return 0, false, stop
	}
	if p.afterPut != nil {
		if err := p.afterPut(); err != nil {
			return 0, false, err
		}
	}
	// The revision rows are locked only now, after every snapshot was
	// loaded on other connections: a change waiting for one of these locks
	// while holding the pool's last connection cannot stall the drain.
	for _, owner := range owners {
		if v, ok := versions[owner]; ok {
			if err := markPublished(ctx, q, owner, v); err != nil {
				return 0, false, err
			}
		}
	}
	if _, err := q.MarkOutboxPublished(ctx, done); err != nil {
		return 0, false, fmt.Errorf("distrib: outbox: mark published: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, false, fmt.Errorf("distrib: outbox: commit: %w", err)
	}
	return len(done), stop == nil && len(rows) == p.cfg.Batch, stop
}

// Resync publishes every snapshot whose published revision is behind its
// desired revision (a publication that failed, or a snapshot that could
// not be built before) and returns how many it published.
func (p *Publisher) Resync(ctx context.Context) (int, error) {
	if err := p.bucket(ctx, false); err != nil {
		return 0, err
	}
	behind, err := p.st.Q.ListConfigRevisionsBehind(ctx)
	if err != nil {
		return 0, fmt.Errorf("distrib: resync: %w", err)
	}
	return p.republish(ctx, behind)
}

// Reconcile makes the bucket whole, at start and after failures: it
// creates the bucket when it is missing, makes sure the cluster snapshot has
// a revision (so that the "cluster" key always exists), and publishes every
// snapshot that is behind or whose key is missing from the bucket (NATS
// lost its state, or the bucket was recreated).
func (p *Publisher) Reconcile(ctx context.Context) error {
	if err := p.bucket(ctx, true); err != nil {
		return err
	}
	if _, err := p.st.Q.GetConfigRevision(ctx, store.Cluster); errors.Is(err, pgx.ErrNoRows) {
		err := p.st.Tx(ctx, store.Actor{Name: "controlplane"}, func(tx *store.Tx) error {
			return tx.Changed(ctx, store.Cluster)
		})
		if err != nil {
			return fmt.Errorf("distrib: reconcile: cluster revision: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("distrib: reconcile: cluster revision: %w", err)
	}
	if err := p.reconcileLoopback(ctx); err != nil {
		return err
	}
	keys := map[string]bool{}
	lister, err := p.kv.ListKeys(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		return fmt.Errorf("distrib: reconcile: list keys: %w", err)
	}
	if err == nil {
		for k := range lister.Keys() {
			keys[k] = true
		}
	}
	all, err := p.st.Q.ListConfigRevisions(ctx)
	if err != nil {
		return fmt.Errorf("distrib: reconcile: %w", err)
	}
	var todo []sqlc.ConfigRevision
	for _, r := range all {
		if r.PublishedRevision < r.DesiredRevision || !keys[ownerKey(r.TenantID)] {
			todo = append(todo, r)
		}
	}
	_, err = p.republish(ctx, todo)
	return err
}

// reconcileLoopback asks for a new cluster snapshot when the bucket's says
// other tenant loopback ports or another default tenant max_in_flight than
// the configured ones (the control plane was restarted with another
// --tenant-loopback-ports or --default-tenant-max-in-flight): edges take
// only a snapshot whose version is above the one they hold.
func (p *Publisher) reconcileLoopback(ctx context.Context) error {
	entry, err := p.kv.Get(ctx, natsnames.ClusterKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil // published below
	}
	if err != nil {
		return fmt.Errorf("distrib: reconcile: cluster snapshot: %w", err)
	}
	cs := &configv1.ClusterSnapshot{}
	// A value this control plane did not sign says nothing (the repair
	// replaces it); a signed one is compared.
	if payload, err := p.cfg.Signer.Open(natsnames.ClusterKey, entry.Value()); err == nil && proto.Unmarshal(payload, cs) == nil {
		want := p.cfg.TenantLoopback
		if want == nil {
			want = &configv1.TenantLoopback{}
		}
		if proto.Equal(cs.GetTenantLoopback(), want) && cs.GetDefaultTenantMaxInFlight() == p.defaultMaxInFlight() {
			return nil
		}
	}
	err = p.st.Tx(ctx, store.Actor{Name: "controlplane"}, func(tx *store.Tx) error {
		return tx.Changed(ctx, store.Cluster)
	})
	if err != nil {
		return fmt.Errorf("distrib: reconcile: cluster settings changed: %w", err)
	}
	return nil
}

// intact reports whether the bucket still holds the cluster snapshot, which
// Reconcile always puts: when it is missing, NATS lost its state (or the
// bucket was deleted) and everything must be published again.
func (p *Publisher) intact(ctx context.Context) bool {
	_, err := p.kv.Get(ctx, natsnames.ClusterKey)
	return err == nil
}

// bucket creates (or updates) WEIR_CONFIG when it has not yet, or always
// when again is set.
func (p *Publisher) bucket(ctx context.Context, again bool) error {
	if p.kv != nil && !again {
		return nil
	}
	kv, err := p.js.CreateOrUpdateKeyValue(ctx, natsconf.ConfigBucketConfig(p.cfg.Replicas))
	if err != nil {
		return fmt.Errorf("distrib: bucket %s: %w", natsnames.ConfigBucket, err)
	}
	p.kv = kv
	return nil
}

// republish publishes the snapshots of revs and records their publication.
// A snapshot that cannot be built is logged and skipped.
func (p *Publisher) republish(ctx context.Context, revs []sqlc.ConfigRevision) (int, error) {
	n := 0
	for _, r := range revs {
		version, err := p.publish(ctx, r.TenantID)
		if err != nil {
			if permanent(err) {
				p.cfg.Log.ErrorContext(ctx, "config snapshot cannot be built", "owner", ownerKey(r.TenantID), "err", err)
				continue
			}
			return n, err
		}
		if err := markPublished(ctx, p.st.Q, r.TenantID, version); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// publish builds owner's snapshot (store.Cluster: the cluster's) from the
// current state and puts it, signed, in the bucket unless the bucket
// already holds that version or a later one signed by this control plane.
// A tenant that no longer exists gets a signed tombstone. It returns the
// version published (0 for a tombstone).
func (p *Publisher) publish(ctx context.Context, owner pgtype.UUID) (uint64, error) {
	return p.publishTo(ctx, p.kv, owner)
}

// publishTo is publish into kv, a handle of WEIR_CONFIG.
func (p *Publisher) publishTo(ctx context.Context, kv jetstream.KeyValue, owner pgtype.UUID) (uint64, error) {
	key := ownerKey(owner)
	var msg proto.Message
	var version uint64
	if !owner.Valid {
		rows, err := snapshot.LoadCluster(ctx, p.st.Pool())
		if err != nil {
			return 0, err
		}
		rows.TenantLoopback = p.cfg.TenantLoopback
		rows.DefaultTenantMaxInFlight = p.cfg.DefaultTenantMaxInFlight
		s, err := snapshot.BuildCluster(rows, p.cfg.Open, p.cfg.EdgeKey, p.cfg.Rand)
		if err != nil {
			return 0, err
		}
		msg, version = s, s.GetVersion()
	} else {
		rows, err := snapshot.LoadTenant(ctx, p.st.Pool(), owner)
		if errors.Is(err, snapshot.ErrTenantNotFound) {
			// A signed tombstone, not a deletion: an edge takes no
			// unsigned word for a tenant's end.
			if _, err := putIfNewer(ctx, kv, p.cfg.Signer, key, tombstoneVersion, nil); err != nil {
				return 0, fmt.Errorf("distrib: withdraw %s: %w", key, err)
			}
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		s, err := snapshot.BuildTenant(rows, p.cfg.Open, p.cfg.EdgeKey, p.cfg.Rand)
		if err != nil {
			return 0, err
		}
		msg, version = s, s.GetVersion()
	}
	data, err := proto.Marshal(msg)
	if err != nil {
		return 0, fmt.Errorf("distrib: marshal %s: %w", key, err)
	}
	if _, err := putIfNewer(ctx, kv, p.cfg.Signer, key, version, data); err != nil {
		return 0, err
	}
	return version, nil
}

// markPublished records that owner's snapshot of version is in the bucket.
// A tenant deleted meanwhile has no revision row left, which is fine.
func markPublished(ctx context.Context, q *sqlc.Queries, owner pgtype.UUID, version uint64) error {
	if version == 0 {
		return nil
	}
	_, err := q.MarkConfigPublished(ctx, sqlc.MarkConfigPublishedParams{Revision: int64(version), TenantID: owner})
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("distrib: mark %s published: %w", ownerKey(owner), err)
	}
	return nil
}

// permanent reports whether err is about the rows of one snapshot (which
// retrying at once will not fix) rather than about Postgres or NATS.
func permanent(err error) bool {
	return errors.Is(err, snapshot.ErrInvalidRows) || errors.Is(err, snapshot.ErrSecret)
}

// ownerKey is owner's key in WEIR_CONFIG.
func ownerKey(owner pgtype.UUID) string {
	if !owner.Valid {
		return natsnames.ClusterKey
	}
	return natsnames.TenantKey(store.UUIDString(owner))
}

// defaultMaxInFlight is the default tenant max_in_flight the cluster
// snapshot carries.
func (p *Publisher) defaultMaxInFlight() int64 {
	if p.cfg.DefaultTenantMaxInFlight > 0 {
		return p.cfg.DefaultTenantMaxInFlight
	}
	return snapshot.DefaultTenantMaxInFlight
}
