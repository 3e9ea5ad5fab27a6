package distrib_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/distrib"
	"weir.dev/controlplane/internal/store"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing/natsnames"
)

// callRecord is call i of a tenant: two attempts (a 429 failed over, then
// an answer) and a cost that differs per call.
func callRecord(tenant, key string, i int, cost int64) *telemetryv1.CallRecord {
	now := time.Now()
	return &telemetryv1.CallRecord{
		CallId: fmt.Sprintf("call-%s-%06d", tenant[:8], i), TenantId: tenant, KeyId: key, EdgeId: "edge-1",
		Endpoint: "/v1/chat/completions", Model: "m", RecordName: "pool", MemberName: "b", Status: 200,
		Outcome:       telemetryv1.CallOutcome_CALL_OUTCOME_ANSWERED,
		Usage:         &telemetryv1.Usage{InputTokens: 100, OutputTokens: 20},
		ReservedNanos: cost + 500, CostNanos: cost,
		Attempts: []*telemetryv1.Attempt{
			{Index: 0, RecordName: "pool", MemberName: "a", Status: 429, Outcome: telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_FAILED_OVER,
				Kind: telemetryv1.FailureKind_FAILURE_KIND_RATE_LIMITED, Reason: "429", Latency: durationpb.New(5 * time.Millisecond), StartedAt: timestamppb.New(now)},
			{Index: 1, RecordName: "pool", MemberName: "b", Status: 200, Outcome: telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_ANSWERED,
				Kind: telemetryv1.FailureKind_FAILURE_KIND_NONE, Latency: durationpb.New(50 * time.Millisecond), CostNanos: cost, StartedAt: timestamppb.New(now)},
		},
		StartedAt: timestamppb.New(now), Duration: durationpb.New(60 * time.Millisecond), JobHash: "j",
	}
}

// publishRecord publishes rec the way an edge does, with Nats-Msg-Id msgID.
func publishRecord(ctx context.Context, t testing.TB, js jetstream.JetStream, rec *telemetryv1.CallRecord, msgID string) *jetstream.PubAck {
	t.Helper()
	data, err := proto.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(natsnames.UsageSubjectPrefix + rec.GetTenantId())
	m.Data = data
	m.Header.Set(jetstream.MsgIDHeader, msgID)
	ack, err := js.PublishMsg(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	return ack
}

// TestUsageIngestIsIdempotent publishes 1,000 call records, 100 of them a
// second time with the same Nats-Msg-Id (the stream drops them), 50 a
// second time with new message ids (a spool replayed after the duplicate
// window), and makes NATS redeliver two whole batches (acks lost after the
// commit). Exactly 1,000 calls must be stored, with their 2,000 attempts,
// and each budget must hold the cost of each of its calls once. Records of
// a tenant that does not exist and a message that is not a record are
// acked and dropped.
func TestUsageIngestIsIdempotent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tid := e.tenant("acme")
	tenant := store.UUIDString(tid)
	keyID, _ := e.key("acme", "k1")
	key := store.UUIDString(keyID)
	all := e.budget("acme", "all", "", 1<<60)
	perKey := e.budget("acme", "k1", "k1", 1<<60)

	const n = 1000
	var wantAll, wantKey int64
	recs := make([]*telemetryv1.CallRecord, n)
	for i := range n {
		k := ""
		if i%2 == 0 {
			k = key
		}
		recs[i] = callRecord(tenant, k, i, int64(1000+i))
		wantAll += recs[i].GetCostNanos()
		if k != "" {
			wantKey += recs[i].GetCostNanos()
		}
		if ack := publishRecord(ctx, t, e.js, recs[i], recs[i].GetCallId()); ack.Duplicate {
			t.Fatalf("record %d taken for a duplicate", i)
		}
	}
	for i := range 100 {
		if ack := publishRecord(ctx, t, e.js, recs[i*7], recs[i*7].GetCallId()); !ack.Duplicate {
			t.Errorf("republished record %d with the same msg id was not deduplicated", i*7)
		}
	}
	for i := range 50 {
		publishRecord(ctx, t, e.js, recs[i*13], recs[i*13].GetCallId()+"/replay")
	}
	ghost := "00000000-0000-4000-8000-00000000beef"
	for i := range 5 {
		publishRecord(ctx, t, e.js, callRecord(ghost, "", i, 1), fmt.Sprintf("ghost-%d", i))
	}
	if _, err := e.js.Publish(ctx, natsnames.UsageSubjectPrefix+tenant, []byte{0xff, 0xff, 0xff}); err != nil {
		t.Fatal(err)
	}

	in := distrib.NewIngest(e.st.Pool().Config().ConnConfig, e.js, distrib.IngestConfig{
		Consumer: "cp", Batch: 100, MaxWait: 100 * time.Millisecond, AckWait: 2 * time.Second, Workers: 2, Log: e.log,
	})
	var skipped atomic.Int32
	distrib.SetAfterCommit(in, func() bool { return skipped.Add(1) > 2 }) // lose the acks of two batches
	e.run(in.Run)

	cons, err := e.b.Usage.Consumer(ctx, "cp")
	for err != nil {
		time.Sleep(10 * time.Millisecond)
		cons, err = e.b.Usage.Consumer(ctx, "cp")
	}
	eventually(t, 30*time.Second, "every record acked", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0 && skipped.Load() > 2
	})
	info, _ := cons.Info(ctx)
	if info.NumRedelivered == 0 && info.Delivered.Consumer <= info.AckFloor.Stream {
		t.Errorf("no record was redelivered: %+v", info)
	}
	count := func(q string, args ...any) int64 {
		var v int64
		if err := e.st.Pool().QueryRow(ctx, q, args...).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := count("SELECT count(*) FROM calls"); got != n {
		t.Errorf("calls = %d, want %d", got, n)
	}
	if got := count("SELECT count(*) FROM call_attempts"); got != 2*n {
		t.Errorf("attempts = %d, want %d", got, 2*n)
	}
	if got := count("SELECT count(*) FROM calls WHERE key_id = $1", keyID); got != n/2 {
		t.Errorf("calls of key k1 = %d, want %d", got, n/2)
	}
	if got := count("SELECT spent_nanos FROM budgets WHERE id = $1", all); got != wantAll {
		t.Errorf("tenant budget spent %d, want %d (each call once)", got, wantAll)
	}
	if got := count("SELECT spent_nanos FROM budgets WHERE id = $1", perKey); got != wantKey {
		t.Errorf("key budget spent %d, want %d (each of its calls once)", got, wantKey)
	}
	// The stored call reads back as the edge reported it.
	c, err := e.st.Q.GetCall(ctx, sqlcGetCall(tid, recs[3].GetCallId()))
	if err != nil {
		t.Fatal(err)
	}
	if c.Outcome != "answered" || c.MemberName != "b" || c.CostNanos != recs[3].GetCostNanos() || c.DurationMs != 60 || c.KeyID.Valid {
		t.Errorf("stored call = %+v", c)
	}
}

// TestIngestSanitizes checks that records breaking the schema's rules (a
// status out of range, negative counts, NUL bytes, an unspecified
// outcome) are stored made valid rather than refused, and that
// a batch is one transaction with its budgets.
func TestIngestSanitizes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tid := e.tenant("acme")
	tenant := store.UUIDString(tid)
	rec := callRecord(tenant, "", 1, 10)
	rec.Status, rec.Outcome = 1200, telemetryv1.CallOutcome_CALL_OUTCOME_UNSPECIFIED
	rec.Usage.InputTokens = -5
	rec.Model = "bad\x00model"
	rec.Cache = &telemetryv1.CacheReport{Miss: "weird"}
	rec.Attempts = append(rec.Attempts, &telemetryv1.Attempt{Index: 1, Outcome: telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_UNSPECIFIED, Kind: 99})
	publishRecord(ctx, t, e.js, rec, rec.GetCallId())
	in := distrib.NewIngest(e.st.Pool().Config().ConnConfig, e.js, distrib.IngestConfig{
		Consumer: "cp", Batch: 10, MaxWait: 50 * time.Millisecond, AckWait: 2 * time.Second, Log: e.log,
	})
	e.run(in.Run)
	eventually(t, 10*time.Second, "the call stored", func() bool {
		_, err := e.st.Q.GetCall(ctx, sqlcGetCall(tid, rec.GetCallId()))
		return err == nil
	})
	c, _ := e.st.Q.GetCall(ctx, sqlcGetCall(tid, rec.GetCallId()))
	if c.Status != 0 || c.Outcome != "failed" || c.InputTokens != 0 || c.Model != "badmodel" || c.KeyID.Valid || c.CacheMiss != "" {
		t.Errorf("stored call = %+v", c)
	}
}

// TestIngestStopsAndResumes stops an ingest while it is in the middle of
// the stream, with a batch written and the next one fetched (the pipeline
// holds one batch ahead), then starts another on the same consumer: every
// record must end up stored and settled exactly once, and the consumer
// must have nothing pending.
func TestIngestStopsAndResumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tenant := store.UUIDString(e.tenant("acme"))
	all := e.budget("acme", "all", "", 1<<60)

	const n = 2000
	var want int64
	for i := range n {
		rec := callRecord(tenant, "", i, int64(1+i%7))
		want += rec.GetCostNanos()
		publishRecord(ctx, t, e.js, rec, rec.GetCallId())
	}
	cfg := distrib.IngestConfig{Consumer: "cp", Batch: 100, MaxWait: 50 * time.Millisecond, AckWait: 30 * time.Second, Workers: 2, Log: e.log}
	first := distrib.NewIngest(e.st.Pool().Config().ConnConfig, e.js, cfg)
	halfway := make(chan struct{})
	var once sync.Once
	distrib.SetOnBatch(first, func(s distrib.IngestStats) {
		if s.Records >= n/4 {
			once.Do(func() { close(halfway) })
		}
	})
	stop := e.run(first.Run)
	select {
	case <-halfway:
	case <-ctx.Done():
		t.Fatal("first ingest wrote nothing")
	}
	stop()
	if got := first.Stats().Records; got >= n {
		t.Logf("the first ingest took all %d records before it stopped", got)
	}

	// The second starts right away: records the first fetched and did not
	// write were nakked, so they come back now rather than after AckWait.
	second := distrib.NewIngest(e.st.Pool().Config().ConnConfig, e.js, cfg)
	e.run(second.Run)
	cons, err := e.b.Usage.Consumer(ctx, "cp")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "every record acked", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	})
	count := func(q string, args ...any) int64 {
		var v int64
		if err := e.st.Pool().QueryRow(ctx, q, args...).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := count("SELECT count(*) FROM calls"); got != n {
		t.Errorf("calls = %d, want %d", got, n)
	}
	if got := count("SELECT count(*) FROM call_attempts"); got != 2*n {
		t.Errorf("attempts = %d, want %d", got, 2*n)
	}
	if got := count("SELECT spent_nanos FROM budgets WHERE id = $1", all); got != want {
		t.Errorf("budget spent %d, want %d (each call once)", got, want)
	}
	// (The ingests' Inserted counts need not add up to n: a commit that
	// the stop interrupted may have happened without the first ingest
	// learning of it; its records came back and were found stored.)
}

// TestIngestRefusesForgedRecords publishes what a process allowed to
// publish usage could forge (issue 12): a call of one tenant naming a key
// of another, one naming a key that does not exist, one whose key id is not
// a UUID, and one of a tenant published on another tenant's subject. None
// is stored and no budget is charged — before, the first was stored and
// billed to its tenant without the key, and the last was billed to the
// tenant it named. A genuine record published after them is stored.
func TestIngestRefusesForgedRecords(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acme := e.tenant("acme")
	other := e.tenant("other")
	acmeKey, _ := e.key("acme", "k1")
	otherKey, _ := e.key("other", "k2")
	acmeAll := e.budget("acme", "all", "", 1<<60)
	otherAll := e.budget("other", "all", "", 1<<60)
	otherPerKey := e.budget("other", "k2", "k2", 1<<60)

	foreignKey := callRecord(store.UUIDString(acme), store.UUIDString(otherKey), 1, 777)
	unknownKey := callRecord(store.UUIDString(acme), "00000000-0000-4000-8000-000000000001", 2, 777)
	badKey := callRecord(store.UUIDString(acme), "not-a-uuid", 3, 777)
	for _, rec := range []*telemetryv1.CallRecord{foreignKey, unknownKey, badKey} {
		publishRecord(ctx, t, e.js, rec, rec.GetCallId())
	}
	// A record of acme on other's subject.
	wrongSubject := callRecord(store.UUIDString(acme), store.UUIDString(acmeKey), 4, 777)
	m := nats.NewMsg(natsnames.UsageSubjectPrefix + store.UUIDString(other))
	m.Data = mustMarshal(t, wrongSubject)
	m.Header.Set(jetstream.MsgIDHeader, wrongSubject.GetCallId())
	if _, err := e.js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	good := callRecord(store.UUIDString(acme), store.UUIDString(acmeKey), 5, 5)
	publishRecord(ctx, t, e.js, good, good.GetCallId())

	in := distrib.NewIngest(e.st.Pool().Config().ConnConfig, e.js, distrib.IngestConfig{
		Consumer: "cp", Batch: 10, MaxWait: 50 * time.Millisecond, AckWait: 2 * time.Second, Log: e.log,
	})
	e.run(in.Run)
	eventually(t, 10*time.Second, "the genuine call stored", func() bool {
		_, err := e.st.Q.GetCall(ctx, sqlcGetCall(acme, good.GetCallId()))
		return err == nil
	})
	for _, rec := range []*telemetryv1.CallRecord{foreignKey, unknownKey, badKey, wrongSubject} {
		for _, tid := range []pgtypeUUID{acme, other} {
			if _, err := e.st.Q.GetCall(ctx, sqlcGetCall(tid, rec.GetCallId())); err == nil {
				t.Errorf("forged call %s stored", rec.GetCallId())
			}
		}
	}
	spent := func(id any) int64 {
		var v int64
		if err := e.st.Pool().QueryRow(ctx, "SELECT spent_nanos FROM budgets WHERE id = $1", id).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := spent(acmeAll); got != 5 {
		t.Errorf("acme's budget spent %d, want 5 (the genuine call only)", got)
	}
	if got, gotKey := spent(otherAll), spent(otherPerKey); got != 0 || gotKey != 0 {
		t.Errorf("the other tenant's budgets spent %d and %d, want nothing", got, gotKey)
	}
	eventually(t, 5*time.Second, "4 records dropped", func() bool { return in.Stats().Dropped == 4 })
}
