package distrib

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"weir.dev/natsconf"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/natsnames"
)

func servedVersion(te *testEdge) uint64 {
	if t := te.reg.Tenant(testTenant); t != nil {
		return t.Version
	}
	return 0
}

// A snapshot put into WEIR_CONFIG is compiled and served by the edge's
// registry, with its secrets in the signer; an older version is ignored; an
// invalid one is refused and the previous one stays. The edge is ready
// from the sync of the empty bucket on.
func TestConfigPutIsServed(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	fake := newFake(t)
	put := connect(t, ns.URL())
	te := newTestEdge(t, ns.URL(), "edge-a", t.TempDir())
	te.start(t)
	select {
	case <-te.Synced():
	case <-time.After(5 * time.Second):
		t.Fatal("initial sync of an empty bucket did not finish")
	}
	if !te.reg.Ready() {
		t.Fatal("not ready after syncing an empty config bucket")
	}

	start := time.Now()
	putKV(t, put, natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+testTenant, mustMarshal(t, tenantSnap(t, 1, fake.URL())))
	waitFor(t, 5*time.Second, "version 1 served", func() bool { return servedVersion(te) == 1 })
	t.Logf("put → served in %v", time.Since(start))
	if !te.reg.Ready() {
		t.Fatal("not ready with a config")
	}
	if status, member := te.call(t, ""); status != 200 || member != "m0" {
		t.Fatalf("call: %d %q", status, member)
	}

	// Version 2 adds a member; version 1 again is ignored.
	fake2 := newFake(t)
	putKV(t, put, natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+testTenant, mustMarshal(t, tenantSnap(t, 2, fake.URL(), fake2.URL())))
	waitFor(t, 5*time.Second, "version 2 served", func() bool { return servedVersion(te) == 2 })
	putKV(t, put, natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+testTenant, mustMarshal(t, tenantSnap(t, 1, fake.URL())))

	// Version 3 is invalid (a bad member URL); version 4 has a secret sealed
	// under another key. Both are refused; version 2 stays.
	bad := tenantSnap(t, 3, fake.URL())
	bad.Records[0].Members[0].BaseUrl = "ftp://nowhere"
	putKV(t, put, natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+testTenant, mustMarshal(t, bad))
	wrongKey := tenantSnap(t, 4, fake.URL())
	wrongKey.Secrets[0].Ciphertext[len(wrongKey.Secrets[0].Ciphertext)-1] ^= 1
	putKV(t, put, natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+testTenant, mustMarshal(t, wrongKey))
	// A marker tenant put after them shows they were processed.
	other := tenantSnap(t, 1)
	other.Tenant = &configv1.Tenant{Id: "tenant-marker", Name: "marker"}
	other.ApiKeys, other.Secrets, other.Records = nil, nil, nil
	putKV(t, put, natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+"tenant-marker", mustMarshal(t, other))
	waitFor(t, 5*time.Second, "marker served", func() bool { return te.reg.Tenant("tenant-marker") != nil })
	if v := servedVersion(te); v != 2 {
		t.Fatalf("served version %d after refused snapshots, want 2", v)
	}
	if got := len(te.reg.Tenant(testTenant).Record("pool").Members); got != 2 {
		t.Fatalf("%d members served, want 2", got)
	}
	if status, _ := te.call(t, ""); status != 200 {
		t.Fatalf("call after refusals: %d", status)
	}

	// A signed tombstone (an empty payload) removes the tenant.
	putKV(t, put, natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+"tenant-marker", nil)
	waitFor(t, 5*time.Second, "marker removed", func() bool { return te.reg.Tenant("tenant-marker") == nil })
}

// A cluster snapshot's managed records reach the tenants it names, and a
// new cluster snapshot recompiles every tenant.
func TestClusterChangeRecompilesTenants(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	fake := newFake(t)
	put := connect(t, ns.URL())
	te := newTestEdge(t, ns.URL(), "edge-a", t.TempDir())
	te.start(t)
	putKV(t, put, natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+testTenant, mustMarshal(t, tenantSnap(t, 1, fake.URL())))
	waitFor(t, 5*time.Second, "tenant served", func() bool { return servedVersion(te) == 1 })

	cluster := func(version uint64, model string) *configv1.ClusterSnapshot {
		return &configv1.ClusterSnapshot{Version: version, ManagedRecords: []*configv1.ManagedRecord{{
			TenantIds: []string{testTenant},
			Record: &configv1.ProviderRecord{Id: "rec-managed", Name: "managed", WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI,
				Models: []*configv1.Model{{Name: model, Kind: configv1.ModelKind_MODEL_KIND_CHAT}},
				Auth:   &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "authorization"}, KeySecret: "shared",
				BaseUrl: fake.URL() + "/v1"},
		}}, Secrets: []*configv1.Secret{{Name: "shared", Hosts: []string{"127.0.0.1"}, Ciphertext: seal(t, testProviderKey)}}}
	}
	putKV(t, put, natsconf.ConfigBucketConfig(1), natsnames.ClusterKey, mustMarshal(t, cluster(1, "gpt-managed")))
	waitFor(t, 5*time.Second, "managed record served", func() bool {
		r := te.reg.Tenant(testTenant).Record("managed")
		return r != nil && r.Models["gpt-managed"] != 0
	})
	putKV(t, put, natsconf.ConfigBucketConfig(1), natsnames.ClusterKey, mustMarshal(t, cluster(2, "gpt-managed-2")))
	waitFor(t, 5*time.Second, "managed record recompiled", func() bool {
		r := te.reg.Tenant(testTenant).Record("managed")
		return r != nil && r.Models["gpt-managed-2"] != 0
	})
	if st := te.signer; st == nil {
		t.Fatal("no signer")
	}
	if v := servedVersion(te); v != 1 {
		t.Fatalf("tenant version %d", v)
	}
}

// An edge restarted while NATS is down serves at once from its disk cache:
// ready, and calls answered, with secrets opened from the cached snapshot.
func TestRestartFromDiskWithNATSDown(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	fake := newFake(t)
	dir := t.TempDir()
	put := connect(t, ns.URL())
	first := newTestEdge(t, ns.URL(), "edge-a", dir)
	first.start(t)
	putKV(t, put, natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+testTenant, mustMarshal(t, tenantSnap(t, 5, fake.URL())))
	waitFor(t, 5*time.Second, "served", func() bool { return servedVersion(first) == 5 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	ns.Stop()

	start := time.Now()
	second := newTestEdge(t, ns.URL(), "edge-a", dir)
	if v := servedVersion(second); v != 5 {
		t.Fatalf("restarted edge serves version %d from disk, want 5", v)
	}
	second.start(t)
	if !second.reg.Ready() {
		t.Fatal("restarted edge not ready")
	}
	if status, member := second.call(t, ""); status != 200 || member != "m0" {
		t.Fatalf("call with NATS down: %d %q", status, member)
	}
	t.Logf("restart → first call answered in %v with NATS down", time.Since(start))

	// NATS returns with a newer snapshot: the edge takes it.
	ns.Start()
	putKV(t, connect(t, ns.URL()), natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+testTenant, mustMarshal(t, tenantSnap(t, 6, fake.URL())))
	waitFor(t, 10*time.Second, "version 6 after NATS returned", func() bool { return servedVersion(second) == 6 })
}

// A tenant deleted while the edge was away is dropped on the first sync,
// unless the bucket is empty (then the cache stays in force).
func TestInitialSyncDropsTenantsGoneFromBucket(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	dir := t.TempDir()
	put := connect(t, ns.URL())
	first := newTestEdge(t, ns.URL(), "edge-a", dir)
	first.start(t)
	gone := tenantSnap(t, 1)
	gone.Tenant = &configv1.Tenant{Id: "tenant-gone", Name: "gone"}
	gone.Secrets, gone.Records = nil, nil
	gone.ApiKeys[0].Id = "key-gone"
	putKV(t, put, natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+"tenant-gone", mustMarshal(t, gone))
	waitFor(t, 5*time.Second, "served", func() bool { return first.reg.Tenant("tenant-gone") != nil })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	putKV(t, put, natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+"tenant-gone", nil) // its tombstone
	keep := proto.Clone(gone).(*configv1.TenantSnapshot)
	keep.Tenant = &configv1.Tenant{Id: "tenant-keep", Name: "keep"}
	keep.ApiKeys[0].Id = "key-keep"
	putKV(t, put, natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+"tenant-keep", mustMarshal(t, keep))

	second := newTestEdge(t, ns.URL(), "edge-a", dir)
	if second.reg.Tenant("tenant-gone") == nil {
		t.Fatal("cached tenant not served before the sync")
	}
	second.start(t)
	<-second.Synced()
	if second.reg.Tenant("tenant-gone") != nil || second.reg.Tenant("tenant-keep") == nil {
		t.Fatalf("after sync: gone=%v keep=%v", second.reg.Tenant("tenant-gone") != nil, second.reg.Tenant("tenant-keep") != nil)
	}
}
