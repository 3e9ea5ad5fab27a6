package distrib

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	"weir.dev/natsconf"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing/natsnames"
)

// IngestConfig configures usage ingest.
type IngestConfig struct {
	// Replicas is the usage stream's replica count when ingest recreates
	// it (Config.Replicas).
	Replicas int
	// Consumer is the durable consumer's name on WEIR_USAGE.
	Consumer string
	// Batch is the most records fetched and written in one transaction.
	Batch int
	// MaxWait is how long a fetch waits to fill a batch.
	MaxWait time.Duration
	// AckWait is how long NATS waits for an ack before redelivering.
	AckWait time.Duration
	// Workers is how many batches are written at once, each on a
	// connection of its own; 0 means 1.
	Workers int
	// Now is the clock that decides budget periods; nil means time.Now.
	Now func() time.Time
	// Log receives dropped records and failures; nil discards.
	Log *slog.Logger
	// Tracer starts a span per batch written; nil traces nothing.
	Tracer trace.Tracer
}

// IngestStats count what one Ingest did since it started.
type IngestStats struct {
	// Records is how many records were acked after a commit (duplicates,
	// and records of unknown tenants, included).
	Records int64
	// Inserted is how many calls were new.
	Inserted int64
	// Dropped is how many records were acked without being stored: not
	// decodable, no call or tenant id, or a tenant that does not exist.
	Dropped int64
}

// Ingest consumes WEIR_USAGE with a durable pull consumer and writes call
// records into Postgres (DESIGN.md §1 step 4). Create it with NewIngest;
// several control planes may run one each on the same consumer.
//
// Contract: every record is acked only after the transaction holding it
// committed, so a crash at any point loses nothing (NATS redelivers what
// was not acked). Writes are idempotent on the call id (INSERT … ON
// CONFLICT DO NOTHING), and budgets are settled in the same transaction
// for exactly the calls that transaction inserted, so a redelivered or
// republished record is neither stored nor counted twice. A record whose
// tenant does not exist is acked and dropped (logged); so is a message that
// is not a call record. Each batch is one transaction on a connection of
// its worker's own: one INSERT … SELECT … FROM unnest(column arrays) … ON
// CONFLICT DO NOTHING RETURNING statement (one round trip carries the whole
// batch), then the budgets, locked in id order so that concurrent batches
// cannot deadlock. Each worker fetches and decodes its next batch while it
// writes the current one.
type Ingest struct {
	connCfg *pgx.ConnConfig
	js      jetstream.JetStream
	cfg     IngestConfig
	fail    *failureLog

	mu    sync.Mutex
	stats IngestStats
	// afterCommit, when set (tests), runs after each commit and before the
	// acks; returning false skips the acks, as a crash there would.
	afterCommit func() bool
	// onBatch, when set (tests, benchmarks), receives the stats after each
	// batch.
	onBatch func(IngestStats)
}

// NewIngest returns an ingest that writes with connections configured like
// connCfg (the store pool's) and reads WEIR_USAGE through js.
func NewIngest(connCfg *pgx.ConnConfig, js jetstream.JetStream, cfg IngestConfig) *Ingest {
	cfg.Log, cfg.Now = orDiscard(cfg.Log), orNow(cfg.Now)
	cfg.Workers = max(cfg.Workers, 1)
	return &Ingest{connCfg: connCfg, js: js, cfg: cfg, fail: newFailureLog(cfg.Log, "usage ingest")}
}

// ConsumerConfig is the durable consumer Ingest creates (or updates) on
// WEIR_USAGE: explicit acks, every record from the start of the stream, no
// limit on redeliveries, no subject filter.
func (in *Ingest) ConsumerConfig() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       in.cfg.Consumer,
		Description:   "Weir control plane: call records into Postgres",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       in.cfg.AckWait,
		MaxDeliver:    -1,
		MaxAckPending: max(4*in.cfg.Workers*in.cfg.Batch, 1000),
		// No filter: the stream holds only weir.usage.>, and an unfiltered
		// consumer spares the server a subject match per record.
	}
}

// Stats returns the counts so far.
func (in *Ingest) Stats() IngestStats {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.stats
}

// Run consumes until ctx ends, retrying every failure (NATS or Postgres
// away) after a pause; it returns nil when ctx ends. When the consumer or
// the stream is gone (NATS lost its state) it creates them again.
func (in *Ingest) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		cons, err := in.ensure(ctx)
		if err != nil {
			in.fail.fail(ctx, err)
			sleep(ctx, time.Second)
			continue
		}
		wctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for range in.cfg.Workers {
			wg.Go(func() {
				w := &ingestWorker{in: in}
				defer w.closeConn()
				if w.run(wctx, cons) {
					cancel()
				}
			})
		}
		wg.Wait()
		cancel()
	}
	return nil
}

// ensure creates (or updates) the stream and the durable consumer.
func (in *Ingest) ensure(ctx context.Context) (jetstream.Consumer, error) {
	s, err := in.js.CreateOrUpdateStream(ctx, natsconf.UsageStreamConfig(in.cfg.Replicas))
	if err != nil {
		return nil, fmt.Errorf("distrib: stream %s: %w", natsnames.UsageStream, err)
	}
	c, err := s.CreateOrUpdateConsumer(ctx, in.ConsumerConfig())
	if err != nil {
		return nil, fmt.Errorf("distrib: usage consumer: %w", err)
	}
	return c, nil
}

// consumerGone reports whether err says the consumer or its stream no
// longer exists (a pull request nobody answers: no responders).
func consumerGone(err error) bool {
	return errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConsumerDeleted) ||
		errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, nats.ErrNoResponders)
}

// ingestWorker fetches and writes batches on its own connection.
type ingestWorker struct {
	in   *Ingest
	conn *pgx.Conn
}

// fetched is one fetch's outcome: its records, decoded, or what ended it.
type fetched struct {
	batch *batch // nil when the fetch brought no call record
	err   error
}

// run fetches and writes batches until ctx ends or the consumer is gone
// (it then returns true). It is a pipeline of two stages: while the
// writer writes (and then acks) one batch, the fetcher fetches and decodes
// the next, so that neither NATS's round trip nor decoding holds up
// Postgres. The fetcher runs at most one batch ahead; a batch fetched and
// not written when run ends is nakked, and NATS redelivers it.
func (w *ingestWorker) run(ctx context.Context, cons jetstream.Consumer) (gone bool) {
	batches := make(chan fetched) // unbuffered: one batch written, one waiting
	fctx, stop := context.WithCancel(ctx)
	var fetcher sync.WaitGroup
	fetcher.Go(func() {
		defer close(batches)
		for fctx.Err() == nil {
			f := w.fetch(fctx, cons)
			select {
			case batches <- f:
			case <-fctx.Done():
				f.batch.nakAll()
				return
			}
			if f.err != nil {
				if consumerGone(f.err) {
					return
				}
				sleep(fctx, time.Second)
			}
		}
	})
	defer func() {
		stop()
		for f := range batches {
			f.batch.nakAll()
		}
		fetcher.Wait()
	}()
	for f := range batches {
		if ctx.Err() != nil {
			f.batch.nakAll()
			continue
		}
		err := f.err
		if err == nil && f.batch != nil {
			err = w.write(ctx, f.batch)
		}
		if err == nil {
			w.in.fail.ok(ctx)
			continue
		}
		w.in.fail.fail(ctx, err)
		if consumerGone(err) {
			return true
		}
		sleep(ctx, time.Second)
	}
	return false
}

// fetch fetches one batch and decodes it into the column arrays it is
// written from; messages that are not call records are dropped here.
func (w *ingestWorker) fetch(ctx context.Context, cons jetstream.Consumer) fetched {
	batch, err := cons.Fetch(w.in.cfg.Batch, jetstream.FetchMaxWait(w.in.cfg.MaxWait))
	if err != nil {
		return fetched{err: fmt.Errorf("distrib: usage fetch: %w", err)}
	}
	received := w.in.cfg.Now()
	var todo []pending
	n := 0
	for m := range batch.Messages() {
		n++
		rec := &telemetryv1.CallRecord{}
		if err := proto.Unmarshal(m.Data(), rec); err != nil {
			w.drop(ctx, m, fmt.Errorf("not a call record: %w", err))
			continue
		}
		row, err := toRow(rec, received)
		if err != nil {
			w.drop(ctx, m, err)
			continue
		}
		// An edge publishes a record on its tenant's subject; one on another
		// tenant's subject is forged (or broken) and billed to nobody.
		if want := natsnames.UsageSubjectPrefix + rec.GetTenantId(); m.Subject() != want {
			w.drop(ctx, m, fmt.Errorf("call record %q of tenant %q came on subject %q", row.callID, rec.GetTenantId(), m.Subject()))
			continue
		}
		if todo == nil {
			todo = make([]pending, 0, w.in.cfg.Batch)
		}
		todo = append(todo, pending{msg: m, row: row})
	}
	if err := batch.Error(); err != nil && n == 0 {
		return fetched{err: fmt.Errorf("distrib: usage fetch: %w", err)}
	}
	if len(todo) == 0 {
		return fetched{}
	}
	return fetched{batch: newBatch(todo)}
}

// pending is one fetched message and its row.
type pending struct {
	msg jetstream.Msg
	row callRow
}

// batch is what one transaction writes: fetched messages, and their rows
// as the column arrays of sqlc.IngestCalls, without a second copy of a call
// that comes twice (the first stands).
type batch struct {
	todo []pending
	cols callColumns
}

func newBatch(todo []pending) *batch {
	b := &batch{todo: todo}
	attempts := 0
	for i := range todo {
		attempts += len(todo[i].row.attempts)
	}
	b.cols.grow(len(todo), attempts)
	seenTenant := map[pgtype.UUID]bool{}
	seenCall := make(map[string]bool, len(todo))
	for i := range todo {
		r := &todo[i].row
		if !seenTenant[r.tenantID] {
			seenTenant[r.tenantID] = true
			b.cols.Tenants = append(b.cols.Tenants, r.tenantID)
		}
		if !seenCall[r.callID] {
			seenCall[r.callID] = true
			b.cols.add(r)
		}
	}
	return b
}

// nakAll asks NATS to redeliver b's messages now; b may be nil.
func (b *batch) nakAll() {
	if b == nil {
		return
	}
	for _, p := range b.todo {
		_ = p.msg.Nak()
	}
}

// write writes b (writeBatch), within a span of its own when ingest is
// traced: the records of the batch, how many were inserted, how many were
// duplicates of calls already stored, and how many were dropped.
func (w *ingestWorker) write(ctx context.Context, b *batch) error {
	tr := w.in.cfg.Tracer
	if tr == nil {
		return w.writeBatch(ctx, b, &batchCounts{})
	}
	ctx, span := tr.Start(ctx, "process "+natsnames.UsageStream, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("messaging.system", "nats"), attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.destination.name", natsnames.UsageStream),
			attribute.Int("messaging.batch.message_count", len(b.todo)), attribute.Int("weir.ingest.records", len(b.todo))))
	var n batchCounts
	err := w.writeBatch(ctx, b, &n)
	span.SetAttributes(attribute.Int64("weir.ingest.inserted", n.inserted), attribute.Int64("weir.ingest.dropped", n.dropped),
		attribute.Int64("weir.ingest.duplicates", max(n.handled-n.inserted-n.dropped, 0)))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	return err
}

// batchCounts is what writing a batch did: records handled (acked after
// a commit, or dropped), calls inserted, and records dropped (not stored: an unknown tenant, another tenant's
// key, data Postgres refused).
type batchCounts struct {
	handled, inserted, dropped int64
}

// writeBatch writes b in one transaction and acks it after the commit.
// When some record breaks a rule toRow does not know of, it writes them
// one at a time so that only that record is dropped; when Postgres fails,
// it naks what it did not write (redelivered after a second). n counts
// what it did.
func (w *ingestWorker) writeBatch(ctx context.Context, b *batch, n *batchCounts) error {
	err := w.writeAck(ctx, b, n)
	if dataError(err) && len(b.todo) > 1 {
		for i, p := range b.todo {
			err := w.writeAck(ctx, newBatch([]pending{p}), n)
			if dataError(err) {
				w.drop(ctx, p.msg, err)
				n.dropped++
				n.handled++
				continue
			}
			if err != nil {
				nakLater(b.todo[i:])
				return err
			}
		}
		return nil
	}
	if err != nil {
		nakLater(b.todo)
	}
	return err
}

// nakLater asks NATS to redeliver todo's messages after a second.
func nakLater(todo []pending) {
	for _, p := range todo {
		_ = p.msg.NakWithDelay(time.Second)
	}
}

// dataError reports whether err is PostgreSQL refusing the data (a data
// exception or an integrity violation) rather than being unavailable.
func dataError(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && (strings.HasPrefix(pg.Code, "22") || strings.HasPrefix(pg.Code, "23"))
}

// writeAck stores b in one transaction and acks every message after the
// commit, counting what it did in n. Records naming a key that is not
// their tenant's are dropped first: they are neither stored nor billed.
func (w *ingestWorker) writeAck(ctx context.Context, b *batch, n *batchCounts) error {
	conn, err := w.connection(ctx)
	if err != nil {
		return err
	}
	all := int64(len(b.todo))
	if b, err = w.dropForeignKeys(ctx, conn, b); err != nil || b == nil {
		if err == nil {
			n.dropped += all
			n.handled += all
		}
		return err
	}
	n.dropped += all - int64(len(b.todo))
	n.handled += all - int64(len(b.todo))
	inserted, unknown, err := w.writeTx(ctx, conn, b)
	if err != nil {
		w.closeConn() // the connection's state is unknown: start afresh
		return err
	}
	in := w.in
	for tenant, n := range unknown {
		in.cfg.Log.WarnContext(ctx, "usage ingest: call records of a tenant that does not exist dropped", "tenant", tenant, "records", n)
	}
	if in.afterCommit != nil && !in.afterCommit() {
		return nil
	}
	for _, p := range b.todo {
		_ = p.msg.Ack()
	}
	n.handled += int64(len(b.todo))
	n.inserted += inserted
	for _, d := range unknown {
		n.dropped += int64(d)
	}
	in.mu.Lock()
	in.stats.Records += int64(len(b.todo))
	in.stats.Inserted += inserted
	for _, n := range unknown {
		in.stats.Dropped += int64(n)
	}
	stats := in.stats
	in.mu.Unlock()
	if in.onBatch != nil {
		in.onBatch(stats)
	}
	return nil
}

// dropForeignKeys drops the records of b whose key is not a key of their
// tenant (another tenant's, or none at all) and returns the batch of the
// others, nil when none is left.
func (w *ingestWorker) dropForeignKeys(ctx context.Context, conn *pgx.Conn, b *batch) (*batch, error) {
	var ids []pgtype.UUID
	for _, p := range b.todo {
		if p.row.keyID.Valid {
			ids = append(ids, p.row.keyID)
		}
	}
	if len(ids) == 0 {
		return b, nil
	}
	keys, err := sqlc.New(conn).ListKeyTenants(ctx, ids)
	if err != nil {
		w.closeConn()
		return nil, fmt.Errorf("distrib: usage ingest: keys: %w", err)
	}
	owner := make(map[pgtype.UUID]pgtype.UUID, len(keys))
	for _, k := range keys {
		owner[k.ID] = k.TenantID
	}
	keep := b.todo[:0:0]
	for _, p := range b.todo {
		if t, ok := owner[p.row.keyID]; p.row.keyID.Valid && (!ok || t != p.row.tenantID) {
			w.drop(ctx, p.msg, fmt.Errorf("call record %q names key %s, which is not a key of tenant %s",
				p.row.callID, store.UUIDString(p.row.keyID), store.UUIDString(p.row.tenantID)))
			continue
		}
		keep = append(keep, p)
	}
	switch {
	case len(keep) == len(b.todo):
		return b, nil
	case len(keep) == 0:
		return nil, nil
	}
	return newBatch(keep), nil
}

// writeTx is the transaction of writeAck. It returns how many calls were
// inserted and, per unknown tenant, how many records were dropped.
func (w *ingestWorker) writeTx(ctx context.Context, conn *pgx.Conn, b *batch) (int64, map[string]int, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("distrib: usage ingest: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	known, inserted, err := writeCalls(ctx, tx, &b.cols, w.in.cfg.Now())
	if err != nil {
		return 0, nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, nil, fmt.Errorf("distrib: usage ingest: commit: %w", err)
	}
	unknown := map[string]int{}
	for _, p := range b.todo {
		if !known[p.row.tenantID] {
			unknown[p.row.tenantID.String()]++
		}
	}
	return inserted, unknown, nil
}

// writeCalls inserts the new calls of cols and their attempts and settles
// their cost into budgets, inside tx. It returns which tenants exist and
// how many calls were new.
func writeCalls(ctx context.Context, tx pgx.Tx, cols *callColumns, now time.Time) (map[pgtype.UUID]bool, int64, error) {
	rows, err := sqlc.New(tx).IngestCalls(ctx, cols.IngestCallsParams)
	if err != nil {
		return nil, 0, fmt.Errorf("distrib: usage ingest: write: %w", err)
	}
	known := make(map[pgtype.UUID]bool, len(rows))
	var spend sqlc.SettleSpendParams
	var inserted int64
	for _, r := range rows {
		known[r.TenantID] = true
		if r.Inserted > 0 {
			spend.TenantID = append(spend.TenantID, r.TenantID)
			spend.KeyID = append(spend.KeyID, r.KeyID)
			spend.AmountNanos = append(spend.AmountNanos, r.AmountNanos)
			inserted += r.Inserted
		}
	}
	if inserted == 0 {
		return known, 0, nil
	}
	spend.Now = pgtype.Timestamptz{Time: now, Valid: true}
	// One round trip: the server runs the two in order, so every budget is
	// locked (in id order) before any is changed.
	settle := &batchQueue{}
	q := sqlc.New(settle)
	_ = q.LockSpendBudgets(ctx, sqlc.LockSpendBudgetsParams{TenantID: spend.TenantID, KeyID: spend.KeyID})
	_ = q.SettleSpend(ctx, spend)
	if err := tx.SendBatch(ctx, &settle.Batch).Close(); err != nil {
		return nil, 0, fmt.Errorf("distrib: usage ingest: settle budgets: %w", err)
	}
	return known, inserted, nil
}

// drop terminates m (NATS never redelivers it) and logs why.
func (w *ingestWorker) drop(ctx context.Context, m jetstream.Msg, why error) {
	w.in.cfg.Log.WarnContext(ctx, "usage ingest: call record dropped", "subject", m.Subject(), "err", why)
	w.in.mu.Lock()
	w.in.stats.Dropped++
	w.in.mu.Unlock()
	_ = m.Term()
}

// connection returns the worker's connection, opening it when needed.
func (w *ingestWorker) connection(ctx context.Context) (*pgx.Conn, error) {
	if w.conn != nil {
		return w.conn, nil
	}
	conn, err := pgx.ConnectConfig(ctx, w.in.connCfg.Copy())
	if err != nil {
		return nil, fmt.Errorf("distrib: usage ingest: connect: %w", err)
	}
	w.conn = conn
	return conn, nil
}

func (w *ingestWorker) closeConn() {
	if w.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = w.conn.Close(ctx)
		cancel()
		w.conn = nil
	}
}
