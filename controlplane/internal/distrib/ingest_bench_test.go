package distrib_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"weir.dev/controlplane/internal/distrib"
	"weir.dev/controlplane/internal/store"
	"weir.dev/routing/natsnames"
)

// BenchmarkUsageIngest measures usage ingest into Postgres: b.N call
// records (half of them on a key with its own budget; with one attempt, the
// common case, or two: a 429 failed over, then the answer) are put in
// WEIR_USAGE first, then the clock runs while one Ingest with the default
// batch size and 1 or 2 (the default) workers fetches, decodes, writes,
// settles and acks them all. It reports records/s, and fails unless every
// call and attempt was stored and settled exactly once. Each run sets up a
// fresh database and NATS server, so give it a fixed count:
//
//	go test -run '^$' -bench UsageIngest -benchtime 40000x ./internal/distrib
func BenchmarkUsageIngest(b *testing.B) {
	for _, attempts := range []int{1, 2} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("attempts=%d/workers=%d", attempts, workers), func(b *testing.B) { benchmarkIngest(b, attempts, workers) })
		}
	}
}

func benchmarkIngest(b *testing.B, attempts, workers int) {
	e := newEnv(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tenant := store.UUIDString(e.tenant("acme"))
	keyID, _ := e.key("acme", "k1")
	key := store.UUIDString(keyID)
	all := e.budget("acme", "all", "", 1<<60)
	perKey := e.budget("acme", "k1", "k1", 1<<60)

	js, err := jetstream.New(e.nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		b.Fatal(err)
	}
	for i := range b.N {
		k := ""
		if i%2 == 0 {
			k = key
		}
		rec := callRecord(tenant, k, i, 1000)
		rec.Attempts = rec.Attempts[len(rec.Attempts)-attempts:]
		data, err := proto.Marshal(rec)
		if err != nil {
			b.Fatal(err)
		}
		m := nats.NewMsg(natsnames.UsageSubjectPrefix + tenant)
		m.Data = data
		m.Header.Set(jetstream.MsgIDHeader, rec.GetCallId())
		if _, err := js.PublishMsgAsync(m); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		b.Fatal("records not published")
	}

	cfg := e.cfg
	in := distrib.NewIngest(e.st.Pool().Config().ConnConfig, e.js, distrib.IngestConfig{
		Consumer: "bench", Batch: cfg.IngestBatch, MaxWait: cfg.IngestMaxWait, AckWait: cfg.IngestAckWait, Workers: workers, Log: e.log,
	})
	done := make(chan struct{})
	distrib.SetOnBatch(in, func(s distrib.IngestStats) {
		if s.Records >= int64(b.N) {
			select {
			case <-done:
			default:
				close(done)
			}
		}
	})
	b.ResetTimer()
	start := time.Now()
	stop := e.run(in.Run)
	select {
	case <-done:
	case <-ctx.Done():
		b.Fatal("records not ingested in time")
	}
	elapsed := time.Since(start)
	b.StopTimer()
	stop()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
	count := func(q string, args ...any) int64 {
		var v int64
		if err := e.st.Pool().QueryRow(ctx, q, args...).Scan(&v); err != nil {
			b.Fatal(err)
		}
		return v
	}
	if got := count("SELECT count(*) FROM calls"); got != int64(b.N) {
		b.Fatalf("calls = %d, want %d", got, b.N)
	}
	if got, want := count("SELECT count(*) FROM call_attempts"), int64(b.N*attempts); got != want {
		b.Fatalf("attempts = %d, want %d", got, want)
	}
	// Every call settled once: 1,000 nano-dollars each, half of them on k1.
	if got, want := count("SELECT spent_nanos FROM budgets WHERE id = $1", all), int64(b.N)*1000; got != want {
		b.Fatalf("tenant budget spent %d, want %d", got, want)
	}
	if got, want := count("SELECT spent_nanos FROM budgets WHERE id = $1", perKey), int64((b.N+1)/2)*1000; got != want {
		b.Fatalf("key budget spent %d, want %d", got, want)
	}
}
