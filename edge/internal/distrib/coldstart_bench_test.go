package distrib

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"weir.dev/edge/internal/gateway"
	"weir.dev/edge/internal/natstest"
	"weir.dev/edge/internal/secrets"
	"weir.dev/natsconf"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing"
	"weir.dev/routing/natsnames"
)

const coldStartTenants = 10_000

// benchTenantID is the id of the i-th benchmark tenant (UUID-shaped, like
// the control plane's).
func benchTenantID(i int) string { return fmt.Sprintf("00000000-0000-0000-0000-%012d", i) }

// benchTenantSnap is a small valid tenant: one plain openai record on a
// loopback base URL, one caller key (distinct per tenant) and one provider
// key secret. ciphertext is sealed once and shared, since secrets are not
// bound to their owner by the seal.
func benchTenantSnap(i int, ciphertext []byte) *configv1.TenantSnapshot {
	id := benchTenantID(i)
	sum := sha256.Sum256([]byte(fmt.Sprintf("weir-bench-key-%d", i)))
	return &configv1.TenantSnapshot{
		Version: 1,
		Tenant:  &configv1.Tenant{Id: id, Name: fmt.Sprintf("tenant-%d", i)},
		ApiKeys: []*configv1.ApiKey{{Id: "key-1", Name: "ci", Sha256: sum[:]}},
		Records: []*configv1.ProviderRecord{{
			Id: "rec-openai", Name: "openai", TenantId: id, WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI,
			Models:    []*configv1.Model{{Name: "gpt-x", Kind: configv1.ModelKind_MODEL_KIND_CHAT}},
			Auth:      &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "authorization"},
			KeySecret: "key",
			BaseUrl:   "http://127.0.0.1:9/v1",
			Recovery:  &configv1.Recovery{AttemptDeadline: durationpb.New(5 * time.Second), CallDeadline: durationpb.New(20 * time.Second)},
		}},
		Secrets: []*configv1.Secret{{Name: "key", TenantId: id, Hosts: []string{"127.0.0.1"}, Ciphertext: ciphertext}},
	}
}

// BenchmarkColdStart10kTenants measures an edge's cold start against a
// WEIR_CONFIG bucket holding 10,000 tenants: from New and Start of a fresh
// edge (empty state directory) until all 10,000 tenants are installed in its
// registry. Run it with -benchtime 1x; the target is < 5 s.
func BenchmarkColdStart10kTenants(b *testing.B) {
	log := slog.New(slog.DiscardHandler)
	url := natstest.Start(b, natstest.Options{}).URL()

	// Fill the bucket as the control plane would, with async publishes.
	ctl, err := Connect(url, "bench-ctl", Auth{Insecure: true}, log)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ctl.Close)
	js, err := jetstream.New(ctl, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := ensureKV(ctx, js, natsconf.ConfigBucketConfig(1)); err != nil {
		b.Fatal(err)
	}
	ciphertext, err := secrets.Seal(testEdgeKey, []byte(testProviderKey), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	fillStart := time.Now()
	for i := 0; i < coldStartTenants; i++ {
		raw, err := proto.Marshal(benchTenantSnap(i, ciphertext))
		if err != nil {
			b.Fatal(err)
		}
		raw = signed(b, natsnames.TenantKeyPrefix+benchTenantID(i), raw)
		if _, err := js.PublishAsync("$KV."+natsnames.ConfigBucket+"."+natsnames.TenantKeyPrefix+benchTenantID(i), raw); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		b.Fatal("bucket fill did not complete")
	}
	if n := js.PublishAsyncPending(); n != 0 {
		b.Fatalf("%d puts still pending", n)
	}
	kv, err := js.KeyValue(ctx, natsnames.ConfigBucket)
	if err != nil {
		b.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if st.Values() != coldStartTenants {
		b.Fatalf("bucket holds %d values, want %d", st.Values(), coldStartTenants)
	}
	b.Logf("filled WEIR_CONFIG with %d tenants in %v", coldStartTenants, time.Since(fillStart))

	b.ResetTimer()
	var total time.Duration
	for n := 0; n < b.N; n++ {
		b.StopTimer()
		nc, err := Connect(url, "bench-edge", Auth{Insecure: true}, log)
		if err != nil {
			b.Fatal(err)
		}
		reg := gateway.NewRegistry()
		o := Options{NATS: nc, EdgeID: fmt.Sprintf("bench-edge-%d", n), StateDir: b.TempDir(), EdgeKey: testEdgeKey, ConfigPublicKey: testPublicKey,
			Registry: reg, States: routing.NewStates(), Secrets: &storeSink{}, Log: log}
		b.StartTimer()

		start := time.Now()
		e, err := New(o)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		deadline := start.Add(time.Minute)
		for len(reg.Tables()) < coldStartTenants {
			if time.Now().After(deadline) {
				b.Fatalf("only %d of %d tenants installed after a minute", len(reg.Tables()), coldStartTenants)
			}
			time.Sleep(time.Millisecond)
		}
		elapsed := time.Since(start)
		total += elapsed

		b.StopTimer()
		if reg.Tenant(benchTenantID(0)) == nil || reg.Tenant(benchTenantID(coldStartTenants-1)) == nil {
			b.Fatal("first or last tenant missing")
		}
		if t, _ := reg.Lookup(fmt.Sprintf("weir-bench-key-%d", coldStartTenants/2)); t == nil || t.TenantID != benchTenantID(coldStartTenants/2) {
			b.Fatal("a tenant's key does not find its table")
		}
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = e.Close(cctx)
		ccancel()
		nc.Close()
		if elapsed >= 5*time.Second {
			b.Logf("cold start took %v, above the 5 s target", elapsed)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(coldStartTenants)*float64(b.N)/total.Seconds(), "tenants/s")
}
