package distrib

import (
	"context"
	"sort"
	"testing"
	"time"

	"weir.dev/natsconf"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/natsnames"
)

// Config propagation to two edges: 50 changes to one tenant (a member's
// weight bumped, or a model added, with the version each time), each timed
// from the KV put until both edges' registries serve the new version. The
// p50 and p99 are logged; the target is p99 < 1 s.
func TestPropagationTwoEdges(t *testing.T) {
	t.Parallel()
	const changes = 50
	ns := startNATS(t)
	put := connect(t, ns.URL())
	a := newTestEdge(t, ns.URL(), "edge-a", t.TempDir())
	b := newTestEdge(t, ns.URL(), "edge-b", t.TempDir())
	a.start(t)
	b.start(t)
	for _, te := range []*testEdge{a, b} {
		select {
		case <-te.Synced():
		case <-time.After(5 * time.Second):
			t.Fatal("initial sync did not finish")
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kv, err := ensureKV(ctx, mustJS(t, put), natsconf.ConfigBucketConfig(1))
	if err != nil {
		t.Fatal(err)
	}
	both := func(v uint64) bool { return servedVersion(a) == v && servedVersion(b) == v }
	snapFor := func(v uint64) []byte {
		s := tenantSnap(t, v, "http://127.0.0.1:9", "http://127.0.0.1:10")
		rec := s.Records[0]
		rec.Members[0].Weight = uint32(v) // a weight bump each change
		if v%2 == 0 {                     // and a model added every other one
			rec.Models = append(rec.Models, &configv1.Model{Name: "gpt-v" + itoa(int(v)), Kind: configv1.ModelKind_MODEL_KIND_CHAT})
		}
		return signed(t, natsnames.TenantKeyPrefix+testTenant, mustMarshal(t, s))
	}
	if _, err := kv.Put(ctx, natsnames.TenantKeyPrefix+testTenant, snapFor(1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "version 1 on both edges", func() bool { return both(1) })

	lat := make([]time.Duration, 0, changes)
	for i := 0; i < changes; i++ {
		v := uint64(i + 2)
		raw := snapFor(v)
		start := time.Now()
		if _, err := kv.Put(ctx, natsnames.TenantKeyPrefix+testTenant, raw); err != nil {
			t.Fatal(err)
		}
		deadline := start.Add(5 * time.Second)
		for !both(v) {
			if time.Now().After(deadline) {
				t.Fatalf("change %d (version %d): edge-a serves %d, edge-b %d after 5 s", i, v, servedVersion(a), servedVersion(b))
			}
			time.Sleep(100 * time.Microsecond)
		}
		lat = append(lat, time.Since(start))
	}
	// The last change is what both edges serve.
	last := uint64(changes + 1)
	for _, te := range []*testEdge{a, b} {
		r := te.reg.Tenant(testTenant).Record("pool")
		if r == nil || r.Members[0].Weight != uint32(last) {
			t.Fatalf("edge serves %+v, want member weight %d", r, last)
		}
	}

	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1)+0.5)] }
	p50, p99 := pct(0.50), pct(0.99)
	t.Logf("config propagation to 2 edges over %d changes: p50 %v, p99 %v, max %v", changes, p50, p99, lat[len(lat)-1])
	if p99 >= time.Second {
		t.Fatalf("p99 propagation %v, target < 1 s", p99)
	}
}
