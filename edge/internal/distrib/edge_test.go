package distrib

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"weir.dev/natsconf"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing"
	"weir.dev/routing/natsnames"
)

// seedCache writes snapshots into the disk cache under stateDir, as an
// edge that served them before would have left them.
func seedCache(t *testing.T, stateDir string, snaps ...*configv1.TenantSnapshot) {
	t.Helper()
	c, err := openDiskCache(filepath.Join(stateDir, "config"), testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		c.putTenant(s.GetTenant().GetId(), signed(t, natsnames.TenantKeyPrefix+s.GetTenant().GetId(), mustMarshal(t, s)))
	}
	c.close()
}

// readyz is the status of the edge's GET /readyz.
func readyz(t *testing.T, te *testEdge) int {
	t.Helper()
	resp, err := http.Get(te.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// An edge ready from its disk cache while its buckets cannot be had yet
// (NATS is slow, or the control plane has not made them) serves calls at
// once; the job affinity and member views it writes meanwhile wait, and
// land once the buckets exist: nothing is lost to the start order, and no
// caller sees an error. Regression: they were published into buckets that
// did not exist yet and lost (views until their next heartbeat).
func TestWritesWaitForBuckets(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	fake := newFake(t)
	dir := t.TempDir()
	seedCache(t, dir, tenantSnap(t, 1, fake.URL()))
	release := make(chan struct{})
	te := newTestEdge(t, ns.URL(), "edge-a", dir, func(o *Options) {
		o.beforeEnsure = func(ctx context.Context, bucket string) {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	})
	te.start(t)
	if !te.reg.Ready() || readyz(t, te) != http.StatusOK {
		t.Fatal("not ready from the disk cache")
	}
	const job = "job-early"
	status, served := te.call(t, job)
	if status != http.StatusOK || served == "" {
		t.Fatalf("call before the buckets exist: %d %q", status, served)
	}
	if _, _, ok := te.Affinity().Get(testTenant, "job-unknown"); ok {
		t.Fatal("affinity hit for an unknown job")
	}
	// Hold the buckets a while: longer than several view intervals and than
	// JetStream's own retries of a publish nobody takes (2 × 250 ms).
	time.Sleep(time.Second)
	js := mustJS(t, connect(t, ns.URL()))
	if _, err := js.KeyValue(context.Background(), natsnames.AffinityBucket); err == nil {
		t.Fatal("WEIR_AFFINITY exists while its setup is held: the test would prove nothing")
	}
	select {
	case <-te.Synced():
		t.Fatal("synced with NATS before the edge's buckets exist")
	default:
	}
	close(release)

	key := affinityKey(testTenant, routing.JobHash(testTenant, job))
	get := func(bucket, key string) []byte {
		kv, err := js.KeyValue(context.Background(), bucket)
		if err != nil {
			return nil
		}
		e, err := kv.Get(context.Background(), key)
		if err != nil {
			return nil
		}
		return e.Value()
	}
	waitFor(t, 5*time.Second, "the early affinity write in WEIR_AFFINITY", func() bool { return get(natsnames.AffinityBucket, key) != nil })
	var aff telemetryAffinity
	if err := proto.Unmarshal(get(natsnames.AffinityBucket, key), &aff); err != nil || aff.GetRecordId() != "rec-pool" || aff.GetMemberName() != served {
		t.Fatalf("affinity %v (%v), want rec-pool/%s", &aff, err, served)
	}
	waitFor(t, 5*time.Second, "the member's view in WEIR_VIEWS", func() bool {
		return get(natsnames.ViewsBucket, testTenant+".rec-pool.m0.edge-a") != nil
	})
	select {
	case <-te.Synced():
	case <-time.After(5 * time.Second):
		t.Fatal("no sync after the buckets were released")
	}
	if v := servedVersion(te); v != 1 {
		t.Fatalf("served version %d after the sync of an empty bucket, want the cached 1", v)
	}
}

// Readiness (GET /readyz) means the edge holds a config: the whole of
// WEIR_CONFIG as NATS first delivered it, even with no tenant in it, or
// its disk cache. Without either it is not ready, however long it runs.
func TestReadiness(t *testing.T) {
	t.Parallel()
	synced := func(t *testing.T, te *testEdge) {
		t.Helper()
		select {
		case <-te.Synced():
		case <-time.After(5 * time.Second):
			t.Fatal("initial sync did not finish")
		}
	}
	t.Run("empty cluster", func(t *testing.T) {
		t.Parallel()
		ns := startNATS(t)
		if _, err := mustJS(t, connect(t, ns.URL())).CreateKeyValue(context.Background(), natsconf.ConfigBucketConfig(1)); err != nil {
			t.Fatal(err)
		}
		te := newTestEdge(t, ns.URL(), "edge-a", t.TempDir())
		if te.reg.Ready() {
			t.Fatal("ready before anything was installed")
		}
		te.start(t)
		synced(t, te)
		if !te.reg.Ready() || readyz(t, te) != http.StatusOK {
			t.Fatalf("an edge holding the empty config of a cluster without tenants is not ready (readyz %d)", readyz(t, te))
		}
	})
	t.Run("no bucket yet", func(t *testing.T) {
		t.Parallel()
		ns := startNATS(t)
		te := newTestEdge(t, ns.URL(), "edge-a", t.TempDir())
		te.start(t)
		synced(t, te)
		if readyz(t, te) != http.StatusOK {
			t.Fatal("not ready after syncing the (new, empty) config bucket")
		}
	})
	t.Run("only a cluster entry", func(t *testing.T) {
		t.Parallel()
		ns := startNATS(t)
		putKV(t, connect(t, ns.URL()), natsconf.ConfigBucketConfig(1), natsnames.ClusterKey, mustMarshal(t, &configv1.ClusterSnapshot{Version: 1}))
		te := newTestEdge(t, ns.URL(), "edge-a", t.TempDir())
		te.start(t)
		synced(t, te)
		if readyz(t, te) != http.StatusOK {
			t.Fatal("not ready with a cluster snapshot and no tenants")
		}
		// Later changes still arrive.
		putKV(t, connect(t, ns.URL()), natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+testTenant, mustMarshal(t, tenantSnap(t, 1, "http://127.0.0.1:9")))
		waitFor(t, 5*time.Second, "the tenant put after the sync", func() bool { return servedVersion(te) == 1 })
	})
	t.Run("no NATS and no cache", func(t *testing.T) {
		t.Parallel()
		ns := startNATS(t)
		ns.Stop()
		te := newTestEdge(t, ns.URL(), "edge-a", t.TempDir())
		te.start(t)
		for range 5 {
			if te.reg.Ready() || readyz(t, te) != http.StatusServiceUnavailable {
				t.Fatalf("ready without any config (readyz %d)", readyz(t, te))
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	t.Run("no NATS, a cache", func(t *testing.T) {
		t.Parallel()
		ns := startNATS(t)
		ns.Stop()
		dir := t.TempDir()
		seedCache(t, dir, tenantSnap(t, 3, "http://127.0.0.1:9"))
		te := newTestEdge(t, ns.URL(), "edge-a", dir)
		if readyz(t, te) != http.StatusOK {
			t.Fatal("not ready from the disk cache")
		}
	})
	t.Run("no NATS, a cached cluster without tenants", func(t *testing.T) {
		t.Parallel()
		ns := startNATS(t)
		ns.Stop()
		dir := t.TempDir()
		c, err := openDiskCache(filepath.Join(dir, "config"), testLog(t))
		if err != nil {
			t.Fatal(err)
		}
		c.putCluster(signed(t, natsnames.ClusterKey, mustMarshal(t, &configv1.ClusterSnapshot{Version: 1})))
		c.close()
		te := newTestEdge(t, ns.URL(), "edge-a", dir)
		if readyz(t, te) != http.StatusOK {
			t.Fatal("not ready from a disk cache holding the cluster snapshot of a cluster without tenants")
		}
	})
}
