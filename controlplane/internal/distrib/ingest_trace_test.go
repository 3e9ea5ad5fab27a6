package distrib_test

import (
	"context"
	"os"
	"testing"
	"time"

	"weir.dev/controlplane/internal/distrib"
	"weir.dev/controlplane/internal/store"
	"weir.dev/tracing"
	"weir.dev/tracing/tracingtest"
)

// TestIngestIsTraced: each batch ingest writes is a span at the OTLP
// receiver, counting its records, the calls inserted, the duplicates and
// the records dropped; summed over the batches, they are what was
// published.
func TestIngestIsTraced(t *testing.T) {
	recv := tracingtest.NewReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL())
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	traces, err := tracing.Start(context.Background(), "weir-controlplane", os.Getenv)
	if err != nil || !traces.Enabled() {
		t.Fatalf("tracing.Start: %v", err)
	}
	t.Cleanup(func() { _ = traces.Close(context.Background()) })
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tenant := store.UUIDString(e.tenant("acme"))
	for i := range 3 {
		rec := callRecord(tenant, "", i, 10)
		publishRecord(ctx, t, e.js, rec, rec.GetCallId())
	}
	dup := callRecord(tenant, "", 0, 10) // a spool replayed after the duplicate window
	publishRecord(ctx, t, e.js, dup, dup.GetCallId()+"/replay")
	ghost := callRecord("00000000-0000-4000-8000-00000000beef", "", 9, 1) // no such tenant
	publishRecord(ctx, t, e.js, ghost, ghost.GetCallId())

	in := distrib.NewIngest(e.st.Pool().Config().ConnConfig, e.js, distrib.IngestConfig{
		Consumer: "cp", Batch: 10, MaxWait: 100 * time.Millisecond, AckWait: 5 * time.Second, Log: e.log,
		Tracer: traces.TracerProvider().Tracer("weir.dev/controlplane"),
	})
	e.run(in.Run)
	sum := map[string]int64{}
	eventually(t, 20*time.Second, "spans of every record", func() bool {
		clear(sum)
		for _, s := range recv.Spans() {
			if s.Name != "process WEIR_USAGE" {
				continue
			}
			for _, k := range []string{"weir.ingest.records", "weir.ingest.inserted", "weir.ingest.duplicates", "weir.ingest.dropped"} {
				n, _ := s.Attrs()[k].(int64)
				sum[k] += n
			}
		}
		return sum["weir.ingest.records"] >= 5
	})
	want := map[string]int64{"weir.ingest.records": 5, "weir.ingest.inserted": 3, "weir.ingest.duplicates": 1, "weir.ingest.dropped": 1}
	for k, v := range want {
		if sum[k] != v {
			t.Errorf("%s summed over the batches' spans = %d, want %d", k, sum[k], v)
		}
	}
}
