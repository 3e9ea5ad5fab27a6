package distrib_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"weir.dev/controlplane/internal/distrib"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/natsnames"
)

// TestConfigChangeReachesKVWithin1s makes 50 config changes through the
// admin API with the distributor running and measures, for each, the time
// from the request until a watcher of WEIR_CONFIG sees the snapshot that
// holds it. It logs p50 and p99 and fails when p99 reaches 1 s.
func TestConfigChangeReachesKVWithin1s(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := e.tenant("acme")
	e.runDistributor()
	key := natsnames.TenantKey(store.UUIDString(id))
	w, err := e.b.Config.Watch(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()
	// seen delivers each snapshot's budget limit as the watcher sees it.
	seen := make(chan int64, 256)
	go func() {
		for entry := range w.Updates() {
			if entry == nil || entry.Operation() != jetstream.KeyValuePut {
				continue
			}
			payload, err := e.signer.Open(key, entry.Value())
			if err != nil {
				continue
			}
			s := &configv1.TenantSnapshot{}
			if proto.Unmarshal(payload, s) == nil {
				for _, b := range s.GetBudgets() {
					seen <- b.GetLimitNanos()
				}
			}
		}
	}()
	const changes = 50
	var lat []time.Duration
	for i := range changes {
		limit := int64(1_000_000 + i)
		start := time.Now()
		if _, err := e.api.budgets.SetBudget(ctx, connect.NewRequest(&adminv1.SetBudgetRequest{
			Tenant: "acme", Name: "b", LimitNanos: limit, Period: configv1.BudgetPeriod_BUDGET_PERIOD_MONTH,
		})); err != nil {
			t.Fatal(err)
		}
		timeout := time.After(10 * time.Second)
	wait:
		for {
			select {
			case got := <-seen:
				if got == limit {
					break wait
				}
			case <-timeout:
				t.Fatalf("change %d not in WEIR_CONFIG after 10s", i)
			}
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[(len(lat)*99+99)/100-1]
	t.Logf("config change → WEIR_CONFIG over %d changes: p50 %s, p99 %s, max %s", changes, p50, p99, lat[len(lat)-1])
	if p99 >= time.Second {
		t.Errorf("p99 %s, want < 1s", p99)
	}
	rev, err := e.st.Q.GetConfigRevision(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.tenantSnapshot(ctx, id).GetVersion(); got != uint64(rev.DesiredRevision) {
		t.Errorf("snapshot version %d, desired revision %d", got, rev.DesiredRevision)
	}
}

// TestOutboxReplayAfterCrash leaves outbox rows unpublished — changes made
// while no publisher ran, and a publisher that "crashes" after putting a
// snapshot but before marking its rows — and checks that the next start
// publishes them all, marks every row, and records the published revision.
func TestOutboxReplayAfterCrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := e.tenant("a")
	b := e.tenant("b")
	e.key("a", "k1")

	crash := errors.New("simulated crash")
	p := distrib.NewPublisher(e.st, e.js, distrib.PublisherConfig{
		EdgeKey: e.edgeKey, Open: e.cfg.Open, Rand: e.cfg.Rand, PollInterval: time.Second, ResyncInterval: time.Minute, Batch: 100, Log: e.log, Signer: e.signer,
	})
	distrib.SetAfterPut(p, func() error { return crash })
	if _, err := p.Drain(ctx); !errors.Is(err, crash) {
		t.Fatalf("Drain = %v, want the crash", err)
	}
	unpublished := func() int {
		n, err := e.st.Q.StalledOutbox(ctx, sqlc.StalledOutboxParams{Before: pgNow(), AllTenants: true})
		if err != nil {
			t.Fatal(err)
		}
		return int(n.Stalled)
	}
	if n := unpublished(); n < 3 {
		t.Fatalf("%d unpublished rows after the crash, want every row (at least 3)", n)
	}
	// The snapshot was put before the crash: a replay must still mark it.
	if e.tenantSnapshot(ctx, a) == nil {
		t.Fatal("the crashed drain put no snapshot")
	}
	e.key("b", "k2") // a change after the crash

	e.runDistributor() // the next start
	eventually(t, 10*time.Second, "every outbox row published", func() bool { return unpublished() == 0 })
	for _, id := range []pgtypeUUID{a, b} {
		rev, err := e.st.Q.GetConfigRevision(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if rev.PublishedRevision != rev.DesiredRevision {
			t.Errorf("tenant %s: published %d, desired %d", store.UUIDString(id), rev.PublishedRevision, rev.DesiredRevision)
		}
		s := e.tenantSnapshot(ctx, id)
		if s.GetVersion() != uint64(rev.DesiredRevision) || len(s.GetApiKeys()) != 1 {
			t.Errorf("tenant %s: snapshot version %d with %d keys, want version %d with 1 key", store.UUIDString(id), s.GetVersion(), len(s.GetApiKeys()), rev.DesiredRevision)
		}
	}
	if _, err := e.b.Config.Get(ctx, natsnames.ClusterKey); err != nil {
		t.Errorf("cluster key: %v", err)
	}
}

// TestReconcileAfterLostState deletes a tenant's key (NATS lost its state)
// and checks that a publisher's start puts it back though nothing is
// behind in Postgres, and that the resync republishes a revision behind.
func TestReconcileAfterLostState(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := e.tenant("a")
	p := distrib.NewPublisher(e.st, e.js, distrib.PublisherConfig{
		EdgeKey: e.edgeKey, Open: e.cfg.Open, Rand: e.cfg.Rand, PollInterval: time.Second, ResyncInterval: time.Minute, Batch: 2, Log: e.log, Signer: e.signer,
	})
	if err := p.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := p.Drain(ctx); err != nil || n < 2 {
		t.Fatalf("Drain = %d, %v; want the tenant's and the cluster's rows", n, err)
	}
	want := e.tenantSnapshot(ctx, a).GetVersion()
	if err := e.b.Config.Purge(ctx, natsnames.TenantKey(store.UUIDString(a))); err != nil {
		t.Fatal(err)
	}
	if err := p.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.tenantSnapshot(ctx, a).GetVersion(); got != want || got == 0 {
		t.Errorf("after reconcile: version %d, want %d", got, want)
	}

	// A revision behind without an outbox row (a publication lost in a
	// way the outbox did not see) is caught by the resync.
	if err := e.st.Tx(ctx, store.Actor{Name: "test"}, func(tx *store.Tx) error { return tx.Changed(ctx, a) }); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Pool().Exec(ctx, "DELETE FROM outbox WHERE published_at IS NULL"); err != nil {
		t.Fatal(err)
	}
	if n, err := p.Resync(ctx); err != nil || n != 1 {
		t.Fatalf("Resync = %d, %v; want 1", n, err)
	}
	if got := e.tenantSnapshot(ctx, a).GetVersion(); got != want+1 {
		t.Errorf("after resync: version %d, want %d", got, want+1)
	}
}

// TestPutIfNewer checks that a snapshot only ever replaces an older one
// this control plane signed, that a value it did not sign is replaced
// whatever version it claims (a forged "huge version" must not freeze a
// tenant), and that the version is read without decoding the value.
func TestPutIfNewer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	snap := func(v uint64) []byte {
		b, err := proto.Marshal(&configv1.TenantSnapshot{Version: v, Tenant: &configv1.Tenant{Id: "x", Name: "x"}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	other, err := distrib.NewSigner(bytes.Repeat([]byte{6}, 32))
	if err != nil {
		t.Fatal(err)
	}
	forgedSigned, err := other.Seal("tenant.x", snap(1<<60))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := e.signer.Seal("tenant.y", snap(1<<60)) // signed, but for another key
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		forge   []byte // put first, as an attacker would
		version uint64
		written bool
		stored  uint64
	}{
		{"absent: created", nil, 5, true, 5},
		{"older: refused", nil, 3, false, 5},
		{"same: nothing to do", nil, 5, false, 5},
		{"newer: replaces", nil, 7, true, 7},
		{"unsigned huge version: repaired", snap(1 << 60), 7, true, 7},
		{"signed by another key: repaired", forgedSigned, 7, true, 7},
		{"signed for another key name: repaired", ours, 7, true, 7},
		{"garbage: repaired", []byte{0xff, 0x01}, 7, true, 7},
	}
	for _, s := range steps {
		if s.forge != nil {
			if _, err := e.b.Config.Put(ctx, "tenant.x", s.forge); err != nil {
				t.Fatal(err)
			}
		}
		ok, err := distrib.PutIfNewer(ctx, e.b.Config, e.signer, "tenant.x", s.version, snap(s.version))
		if err != nil || ok != s.written {
			t.Fatalf("%s: put v%d = %v, %v; want %v", s.name, s.version, ok, err, s.written)
		}
		entry, err := e.b.Config.Get(ctx, "tenant.x")
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := distrib.StoredVersion(e.signer, "tenant.x", entry.Value()); !ok || v != s.stored {
			t.Errorf("%s: stored v%d (%v), want v%d", s.name, v, ok, s.stored)
		}
	}
	if err := e.b.Config.Delete(ctx, "tenant.x"); err != nil {
		t.Fatal(err)
	}
	if ok, err := distrib.PutIfNewer(ctx, e.b.Config, e.signer, "tenant.x", 1, snap(1)); err != nil || !ok {
		t.Errorf("put after delete = %v, %v", ok, err)
	}
	// A tombstone (empty payload) is final.
	if ok, err := distrib.PutIfNewer(ctx, e.b.Config, e.signer, "tenant.x", ^uint64(0), nil); err != nil || !ok {
		t.Errorf("tombstone = %v, %v", ok, err)
	}
	if ok, err := distrib.PutIfNewer(ctx, e.b.Config, e.signer, "tenant.x", 9, snap(9)); err != nil || ok {
		t.Errorf("put over a tombstone = %v, %v; want nothing written", ok, err)
	}
	if _, ok := distrib.SnapshotVersion([]byte{0xff}); ok {
		t.Error("garbage read as a snapshot")
	}
	if v, ok := distrib.SnapshotVersion(nil); !ok || v != 0 {
		t.Errorf("empty snapshot: %d, %v", v, ok)
	}
}

// TestPublisherRepairsForeignEntries puts what an attacker with write
// access to WEIR_CONFIG would — an unsigned snapshot of a huge version, a
// snapshot signed with another key, a deletion, a value under a key the
// publisher never writes — and checks that the running distributor puts
// its own signed snapshot back (or purges the stray key) within seconds.
func TestPublisherRepairsForeignEntries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := e.tenant("a")
	e.key("a", "k1")
	e.runDistributor()
	key := natsnames.TenantKey(store.UUIDString(a))
	eventually(t, 10*time.Second, "the first snapshot", func() bool { return e.tenantSnapshot(ctx, a) != nil })
	want := e.tenantSnapshot(ctx, a).GetVersion()
	signedByUs := func() bool {
		entry, err := e.b.Config.Get(ctx, key)
		if err != nil {
			return false
		}
		v, ok := distrib.StoredVersion(e.signer, key, entry.Value())
		return ok && v == want
	}
	forged := &configv1.TenantSnapshot{Version: 1 << 60, Tenant: &configv1.Tenant{Id: store.UUIDString(a), Name: "a"},
		ApiKeys: []*configv1.ApiKey{{Id: "evil", Sha256: bytes.Repeat([]byte{1}, 32)}}}
	other, err := distrib.NewSigner(bytes.Repeat([]byte{6}, 32))
	if err != nil {
		t.Fatal(err)
	}
	otherSigned, err := other.Seal(key, mustMarshal(t, forged))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		forge func() error
	}{
		{"unsigned, huge version", func() error { _, err := e.b.Config.Put(ctx, key, mustMarshal(t, forged)); return err }},
		{"signed by another key", func() error { _, err := e.b.Config.Put(ctx, key, otherSigned); return err }},
		{"deleted", func() error { return e.b.Config.Delete(ctx, key) }},
		{"purged", func() error { return e.b.Config.Purge(ctx, key) }},
	} {
		if err := c.forge(); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, c.name+": repaired", signedByUs)
	}
	if _, err := e.b.Config.Put(ctx, "stray", []byte("x")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "stray key purged", func() bool {
		_, err := e.b.Config.Get(ctx, "stray")
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})

	// A snapshot of a tenant that does not exist gets a signed tombstone
	// (an empty payload), not an unsigned deletion.
	ghost := natsnames.TenantKey("00000000-0000-0000-0000-00000000beef")
	if _, err := e.b.Config.Put(ctx, ghost, mustMarshal(t, forged)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "tombstone for a tenant that does not exist", func() bool {
		entry, err := e.b.Config.Get(ctx, ghost)
		if err != nil {
			return false
		}
		p, err := e.signer.Open(ghost, entry.Value())
		return err == nil && len(p) == 0
	})
}

// TestClusterSettingsReachEdgesRSEC2RCAP2: the cluster snapshot carries the
// tenant loopback ports and the default tenant max_in_flight, and a publisher started with another setting (a
// restart with another --tenant-loopback-ports) publishes a newer cluster
// snapshot, since edges take only a version above the one they hold.
func TestClusterSettingsReachEdgesRSEC2RCAP2(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cluster := func() *configv1.ClusterSnapshot {
		t.Helper()
		entry, err := e.b.Config.Get(ctx, natsnames.ClusterKey)
		if err != nil {
			t.Fatal(err)
		}
		payload, err := e.signer.Open(natsnames.ClusterKey, entry.Value())
		if err != nil {
			t.Fatal(err)
		}
		cs := &configv1.ClusterSnapshot{}
		if err := proto.Unmarshal(payload, cs); err != nil {
			t.Fatal(err)
		}
		return cs
	}
	start := func(tl *configv1.TenantLoopback, defaultInFlight ...int64) {
		t.Helper()
		pc := distrib.PublisherConfig{
			EdgeKey: e.edgeKey, Open: e.cfg.Open, Rand: e.cfg.Rand, PollInterval: time.Second, ResyncInterval: time.Minute, Batch: 100,
			TenantLoopback: tl, Log: e.log, Signer: e.signer,
		}
		if len(defaultInFlight) > 0 {
			pc.DefaultTenantMaxInFlight = defaultInFlight[0]
		}
		p := distrib.NewPublisher(e.st, e.js, pc)
		if err := p.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Drain(ctx); err != nil {
			t.Fatal(err)
		}
	}
	start(&configv1.TenantLoopback{Ports: []uint32{8000, 11434}})
	first := cluster()
	if !slices.Equal(first.GetTenantLoopback().GetPorts(), []uint32{8000, 11434}) {
		t.Fatalf("tenant_loopback = %v", first.GetTenantLoopback())
	}
	start(&configv1.TenantLoopback{Ports: []uint32{8000, 11434}}) // same setting: nothing new
	if v := cluster().GetVersion(); v != first.GetVersion() {
		t.Errorf("same setting republished: version %d after %d", v, first.GetVersion())
	}
	start(nil) // no port
	second := cluster()
	if second.GetVersion() <= first.GetVersion() || second.GetTenantLoopback() == nil || len(second.GetTenantLoopback().GetPorts()) != 0 {
		t.Errorf("after the change: version %d (was %d), tenant_loopback %v; want a newer snapshot allowing no port",
			second.GetVersion(), first.GetVersion(), second.GetTenantLoopback())
	}
	// R-CAP-2: the default tenant max_in_flight (512 when not set) travels
	// the same way: a restart with another value publishes a newer snapshot.
	if d := second.GetDefaultTenantMaxInFlight(); d != 512 {
		t.Errorf("default_tenant_max_in_flight = %d, want 512", d)
	}
	start(nil, 512) // the same as the default: nothing new
	if v := cluster().GetVersion(); v != second.GetVersion() {
		t.Errorf("same default republished: version %d after %d", v, second.GetVersion())
	}
	start(nil, 64)
	third := cluster()
	if third.GetVersion() <= second.GetVersion() || third.GetDefaultTenantMaxInFlight() != 64 {
		t.Errorf("after --default-tenant-max-in-flight 64: version %d (was %d), default %d",
			third.GetVersion(), second.GetVersion(), third.GetDefaultTenantMaxInFlight())
	}
}
