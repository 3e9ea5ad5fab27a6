package distrib

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"weir.dev/edge/internal/gateway"
	"weir.dev/natsconf"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing/natsnames"
)

// Usage implements usage.Sink over the WEIR_USAGE stream, exactly once
// (DESIGN.md §1.3): Record writes the call record to the local journal and
// returns; a sender goroutine publishes the journal in order with
// Nats-Msg-Id = call id and waits for the stream's acks asynchronously.
// When a publish fails or is not acked in time (NATS down, stream missing,
// disconnected) the sender stops, rewinds to the first record not acked, and
// when NATS is back re-publishes from there in order: the stream drops the
// ones it already has by message id (within its duplicate window), and the
// control plane's ingest is idempotent on the call id beyond it. Acked
// segments are deleted; the journal survives restarts and is replayed at
// start. No call ever waits on NATS; a call waits only for one local write.
type Usage struct {
	j       *journal
	nc      *nats.Conn
	js      jetstream.JetStream
	log     *slog.Logger
	window  int
	syncInt time.Duration
	// tenantName is usageOptions.TenantName.
	tenantName func(string) string

	mu     sync.Mutex
	acked  pos           // every frame before it is acked
	change chan struct{} // acked moved
	stop   context.CancelFunc
	done   chan struct{}
}

// usageOptions tune a Usage; zero values take defaults.
type usageOptions struct {
	// Window is the most records published and not yet acked (default 512).
	Window int
	// SyncEvery is the journal's fsync interval (default 50 ms).
	SyncEvery time.Duration
	// MaxSegment is the journal's segment size (default 8 MiB).
	MaxSegment int64
	// TenantName names a tenant by its id for the log ("" when unknown);
	// nil names none.
	TenantName func(id string) string
}

// openUsage opens the journal in dir. Call start to begin publishing.
func openUsage(dir string, nc *nats.Conn, js jetstream.JetStream, log *slog.Logger, o usageOptions) (*Usage, error) {
	j, start, err := openJournal(dir, o.MaxSegment)
	if err != nil {
		return nil, err
	}
	if o.Window <= 0 {
		o.Window = 512
	}
	if o.SyncEvery <= 0 {
		o.SyncEvery = 50 * time.Millisecond
	}
	return &Usage{j: j, nc: nc, js: js, log: log, window: o.Window, syncInt: o.SyncEvery, acked: start, change: make(chan struct{}),
		tenantName: o.TenantName}, nil
}

// Record implements usage.Sink. The record is on local disk (in the page
// cache, fsync'd within SyncEvery) when it returns; an error means it could
// not be written and is lost.
func (u *Usage) Record(_ context.Context, rec *telemetryv1.CallRecord) error {
	body, err := proto.Marshal(rec)
	if err != nil {
		return fmt.Errorf("distrib: call record %s: %w", rec.GetCallId(), err)
	}
	if err := u.j.append(encodeEntry(rec.GetCallId(), rec.GetTenantId(), body)); err != nil {
		return fmt.Errorf("distrib: call record %s: %w", rec.GetCallId(), err)
	}
	return nil
}

// encodeEntry frames what the sender needs without decoding the record: the
// call id (the message id), the tenant id (the subject) and the record.
func encodeEntry(callID, tenantID string, body []byte) []byte {
	b := make([]byte, 0, 2*binary.MaxVarintLen64+len(callID)+len(tenantID)+len(body))
	b = binary.AppendUvarint(b, uint64(len(callID)))
	b = append(b, callID...)
	b = binary.AppendUvarint(b, uint64(len(tenantID)))
	b = append(b, tenantID...)
	return append(b, body...)
}

func decodeEntry(b []byte) (callID, tenantID string, body []byte, err error) {
	next := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return "", false
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, true
	}
	var ok1, ok2 bool
	callID, ok1 = next()
	tenantID, ok2 = next()
	if !ok1 || !ok2 {
		return "", "", nil, errors.New("distrib: journal entry does not decode")
	}
	return callID, tenantID, b, nil
}

// start runs the sender and the journal's fsync loop until close.
func (u *Usage) start(ctx context.Context) {
	ctx, u.stop = context.WithCancel(ctx)
	u.done = make(chan struct{})
	go func() {
		t := time.NewTicker(u.syncInt)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := u.j.sync(); err != nil {
					u.log.Error("usage journal: fsync failed", "err", err)
				}
			}
		}
	}()
	go func() {
		defer close(u.done)
		u.send(ctx)
	}()
}

// flight is one published record waiting for its ack.
type flight struct {
	f    jetstream.PubAckFuture
	next pos // the position after the record
}

// send is the sender loop: publish from cursor, advance acked in order,
// rewind on failure.
func (u *Usage) send(ctx context.Context) {
	cursor := u.ackedPos()
	var inflight []flight
	bo := newBackoff(200*time.Millisecond, 5*time.Second)
	healthy := false // the stream is checked before the first publish
	saveTick := time.NewTicker(time.Second)
	defer saveTick.Stop()
	saved := cursor
	for {
		if !healthy && len(inflight) == 0 {
			if !u.nc.IsConnected() || u.ensureStream(ctx) != nil {
				if !bo.sleep(ctx) {
					return
				}
				continue
			}
			healthy = true
			bo.reset()
			cursor = u.ackedPos() // rewind to the first record not acked
		}
		if healthy {
			cursor, inflight, healthy = u.fill(cursor, inflight)
		}
		var more <-chan struct{}
		if healthy && len(inflight) < u.window {
			more = u.j.notify
		}
		var okc <-chan *jetstream.PubAck
		var errc <-chan error
		if len(inflight) > 0 {
			okc, errc = inflight[0].f.Ok(), inflight[0].f.Err()
		}
		select {
		case <-ctx.Done():
			return
		case <-more:
		case <-okc:
			done := inflight[0]
			inflight = inflight[1:]
			if len(inflight) == 0 {
				u.setAcked(cursor) // every record before it was acked or skipped
			} else {
				u.setAcked(done.next)
			}
		case err := <-errc:
			u.log.Warn("usage: record not acked; records wait in the journal", "err", err)
			healthy = false
			// Later futures resolve (ack or time out) on their own; acks
			// that come in order still count, then the sender rewinds.
			inflight = u.drain(inflight[1:])
		case <-saveTick.C:
			if a := u.ackedPos(); a != saved {
				if err := u.j.saveAcked(a); err == nil {
					saved = a
				}
			}
		}
	}
}

// fill publishes journal records from cursor until the window of records
// in flight is full or the journal has no more, and returns the new cursor,
// the flights and whether the stream is still healthy (a read or publish
// failure says not: the records wait in the journal). A record that can
// never be published goes to the dead-letter file and is skipped.
func (u *Usage) fill(cursor pos, inflight []flight) (pos, []flight, bool) {
	for len(inflight) < u.window {
		payload, next, ok, err := u.j.read(cursor)
		if err != nil {
			u.log.Error("usage journal: read failed; retrying", "err", err)
			return cursor, inflight, false
		}
		if !ok {
			break
		}
		f, err := u.publish(payload)
		if errors.Is(err, errSkip) {
			log := u.recordLog(payload)
			log.Error("call record cannot be published; kept in the dead-letter file", "file", deadFile, "err", err)
			if err := u.j.deadLetter(payload); err != nil {
				log.Error("call record lost", "err", err)
			}
			if len(inflight) == 0 {
				u.setAcked(next)
			}
			cursor = next
			continue
		}
		if err != nil {
			u.log.Warn("usage: publish failed; records wait in the journal", "err", err)
			return cursor, inflight, false
		}
		inflight = append(inflight, flight{f: f, next: next})
		cursor = next
	}
	return cursor, inflight, true
}

// drain waits for every flight to resolve, advancing acked over the leading
// ones that were acked, and returns nil.
func (u *Usage) drain(fl []flight) []flight {
	inOrder := true
	for _, x := range fl {
		select {
		case <-x.f.Ok():
			if inOrder {
				u.setAcked(x.next)
			}
		case <-x.f.Err():
			inOrder = false
		}
	}
	return nil
}

// recordLog is u's logger with the call id and tenant of the journal entry
// payload, as on the gateway's lines about a call; u's own when the entry
// does not decode.
func (u *Usage) recordLog(payload []byte) *slog.Logger {
	callID, tenantID, _, err := decodeEntry(payload)
	if err != nil {
		return u.log
	}
	attrs := []any{slog.String("call_id", callID)}
	if u.tenantName != nil {
		if name := u.tenantName(tenantID); name != "" {
			attrs = append(attrs, slog.String("tenant", name))
		}
	}
	return u.log.With(append(attrs, slog.String("tenant_id", tenantID))...)
}

// tenantNamer names tenants by id from the tables installed in reg.
func tenantNamer(reg *gateway.Registry) func(string) string {
	return func(id string) string {
		if t := reg.Tenant(id); t != nil {
			return t.TenantName
		}
		return ""
	}
}

// errSkip marks a record that can never be published (larger than the
// server's max payload); it is logged and skipped rather than blocking
// every later record.
var errSkip = errors.New("distrib: record cannot be published")

func (u *Usage) publish(payload []byte) (jetstream.PubAckFuture, error) {
	callID, tenantID, body, err := decodeEntry(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errSkip, err)
	}
	if mp := u.nc.MaxPayload(); mp > 0 && int64(len(body)) > mp-1024 {
		return nil, fmt.Errorf("%w: call %s is %d bytes", errSkip, callID, len(body))
	}
	msg := &nats.Msg{Subject: natsnames.UsageSubject(tenantID), Data: body, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, callID)
	f, err := u.js.PublishMsgAsync(msg, jetstream.WithStallWait(time.Second))
	if errors.Is(err, nats.ErrMaxPayload) {
		return nil, fmt.Errorf("%w: call %s: %w", errSkip, callID, err)
	}
	if err != nil {
		return nil, fmt.Errorf("distrib: publishing call %s: %w", callID, err)
	}
	return f, nil
}

func (u *Usage) ensureStream(ctx context.Context) error {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return ensureStream(c, u.js, natsconf.UsageStreamConfig(1))
}

func (u *Usage) ackedPos() pos {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.acked
}

func (u *Usage) setAcked(p pos) {
	u.j.ackTo(p)
	u.mu.Lock()
	u.acked = p
	close(u.change)
	u.change = make(chan struct{})
	u.mu.Unlock()
}

// Pending reports whether any journaled record is not yet acked.
func (u *Usage) Pending() bool {
	end := u.j.end()
	u.mu.Lock()
	defer u.mu.Unlock()
	_, a := u.j.normalizeLocked(u.acked)
	return a.less(end)
}

// Flush waits until every record written so far is acked, or ctx ends.
func (u *Usage) Flush(ctx context.Context) error {
	for {
		u.mu.Lock()
		ch := u.change
		u.mu.Unlock()
		if !u.Pending() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("distrib: usage flush: %w", ctx.Err())
		case <-ch:
		}
	}
}

// close flushes within ctx (when connected), stops the sender and closes the journal;
// records not acked stay in it for the next start.
func (u *Usage) close(ctx context.Context) error {
	var ferr error
	if u.nc.IsConnected() { // else the journal keeps them: no use waiting
		ferr = u.Flush(ctx)
	} else if u.Pending() {
		ferr = errors.New("distrib: NATS is disconnected")
	}
	if u.stop != nil {
		u.stop()
		<-u.done
	}
	if err := u.j.close(u.ackedPos()); err != nil {
		return err
	}
	if ferr != nil {
		u.log.Warn("usage: records left in the journal for the next start", "err", ferr)
	}
	return nil
}
