package distrib

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/edge/internal/natstest"
	"weir.dev/natsconf"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing/natsnames"
)

// Regression (issue 12): any process on NATS could put a snapshot with a
// new API key for any tenant and have it served, freeze a tenant with a
// huge version, or delete its config. Now an edge serving version 2
// refuses an unsigned snapshot, one signed with another key, one signed
// for another key name, an older signed one and an unsigned deletion, and
// keeps serving version 2 (the forged API key does not authenticate).
func TestForgedSnapshotsRefused(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	fake := newFake(t)
	put := connect(t, ns.URL())
	te := newTestEdge(t, ns.URL(), "edge-a", t.TempDir())
	te.start(t)
	key := natsnames.TenantKeyPrefix + testTenant
	putKV(t, put, natsconf.ConfigBucketConfig(1), key, mustMarshal(t, tenantSnap(t, 2, fake.URL())))
	waitFor(t, 5*time.Second, "version 2 served", func() bool { return servedVersion(te) == 2 })

	const evilKey = "weir-evil-key-0123456789"
	forged := func(version uint64) []byte {
		s := tenantSnap(t, version, fake.URL())
		sum := sha256.Sum256([]byte(evilKey))
		s.ApiKeys = append(s.ApiKeys, &configv1.ApiKey{Id: "key-evil", Sha256: sum[:]})
		return mustMarshal(t, s)
	}
	other := ed25519.NewKeyFromSeed([]byte("an-attacker-s-own-signing-seed-!"))
	badSig := signed(t, key, forged(9))
	badSig[len(badSig)-1] ^= 1 // the signature is the envelope's last field
	cases := []struct {
		name string
		raw  []byte
	}{
		{"unsigned, huge version", forged(1 << 60)},
		{"signed with another key", signWith(t, other, key, forged(9))},
		{"signed for another key name", signed(t, natsnames.TenantKeyPrefix+"other-tenant", forged(9))},
		{"bad signature", badSig},
		{"envelope without signature", mustMarshal(t, &configv1.Signed{Payload: forged(9)})},
		{"older version, signed", signed(t, key, forged(1))},
	}
	for i, c := range cases {
		putRawKV(t, put, natsconf.ConfigBucketConfig(1), key, c.raw)
		// A marker tenant put after it shows it was processed.
		marker := "tenant-marker-" + itoa(i)
		m := tenantSnap(t, 1)
		m.Tenant = &configv1.Tenant{Id: marker, Name: marker}
		m.ApiKeys, m.Secrets, m.Records = nil, nil, nil
		putKV(t, put, natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+marker, mustMarshal(t, m))
		waitFor(t, 5*time.Second, "marker served", func() bool { return te.reg.Tenant(marker) != nil })
		if v := servedVersion(te); v != 2 {
			t.Fatalf("%s: served version %d, want 2", c.name, v)
		}
		if tt, _ := te.reg.Lookup(evilKey); tt != nil {
			t.Fatalf("%s: the forged API key authenticates", c.name)
		}
	}
	kv, err := mustJS(t, put).KeyValue(context.Background(), natsnames.ConfigBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	putKV(t, put, natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+"tenant-marker-del", mustMarshal(t, &configv1.TenantSnapshot{
		Version: 1, Tenant: &configv1.Tenant{Id: "tenant-marker-del", Name: "m"}}))
	waitFor(t, 5*time.Second, "marker served", func() bool { return te.reg.Tenant("tenant-marker-del") != nil })
	if v := servedVersion(te); v != 2 {
		t.Fatalf("after an unsigned deletion: served version %d, want 2", v)
	}
	if status, _ := te.call(t, ""); status != http.StatusOK {
		t.Fatalf("call after the forgeries: %d", status)
	}
	// The signed version 3 is still taken.
	putKV(t, put, natsconf.ConfigBucketConfig(1), key, mustMarshal(t, tenantSnap(t, 3, fake.URL())))
	waitFor(t, 5*time.Second, "version 3 served", func() bool { return servedVersion(te) == 3 })
}

// A forged snapshot in the disk cache (written there by anything but this
// edge) is refused at start like one from NATS.
func TestForgedCacheRefused(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	ns.Stop()
	dir := t.TempDir()
	c, err := openDiskCache(filepath.Join(dir, "config"), testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	c.putTenant(testTenant, mustMarshal(t, tenantSnap(t, 3, "http://127.0.0.1:9"))) // unsigned
	c.close()
	te := newTestEdge(t, ns.URL(), "edge-a", dir)
	if te.reg.Tenant(testTenant) != nil {
		t.Fatal("an unsigned cached snapshot is served")
	}
	if _, err := os.Stat(filepath.Join(dir, "config", tenantFile(testTenant))); err != nil {
		t.Fatal(err)
	}
}

// Regression (issue 12): any process on NATS could revoke keys (or reset
// members) with a weir.cmd message. Now an unsigned command, one signed
// with another key or for another subject, a stale one and a replayed one
// are ignored; a signed, fresh one is applied.
func TestForgedCommandsIgnored(t *testing.T) {
	t.Parallel()
	ns, a, _, _ := twoEdges(t)
	pub := connect(t, ns.URL())
	sum := sha256.Sum256([]byte(testCallerKey))
	revoke := func(id string, at time.Time) []byte {
		return mustMarshal(t, &telemetryv1.Command{Id: id, IssuedAt: timestamppb.New(at), Command: &telemetryv1.Command_RevokeKey{
			RevokeKey: &telemetryv1.RevokeKey{TenantId: testTenant, Sha256: sum[:]}}})
	}
	other := ed25519.NewKeyFromSeed([]byte("an-attacker-s-own-signing-seed-!"))
	now := time.Now()
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"unsigned", revoke("f1", now)},
		{"signed with another key", signWith(t, other, natsnames.RevokeSubject, revoke("f2", now))},
		{"signed for another subject", signed(t, natsnames.ResetSubject, revoke("f3", now))},
		{"issued long ago", signed(t, natsnames.RevokeSubject, revoke("f4", now.Add(-time.Hour)))},
		{"issued in the future", signed(t, natsnames.RevokeSubject, revoke("f5", now.Add(time.Hour)))},
	} {
		if err := pub.Publish(natsnames.RevokeSubject, c.data); err != nil {
			t.Fatal(err)
		}
		if err := pub.Flush(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if tt, _ := a.reg.Lookup(testCallerKey); tt == nil {
			t.Fatalf("%s: the key was revoked", c.name)
		}
	}

	// A replayed command is ignored: apply a signed one to a fresh
	// commands state twice, the second time after the state was reset by
	// the key's reinstatement (a new snapshot).
	cmds := &commands{reg: a.reg, states: a.states, log: testLog(t), pub: testPublicKey, now: time.Now}
	msg := signed(t, natsnames.RevokeSubject, revoke("ok-1", time.Now()))
	var m telemetryv1.Command
	if err := proto.Unmarshal(revoke("ok-1", time.Now()), &m); err != nil {
		t.Fatal(err)
	}
	if err := cmds.fresh(&m); err != nil {
		t.Fatalf("a fresh command refused: %v", err)
	}
	if err := cmds.fresh(&m); err == nil {
		t.Fatal("a replayed command accepted")
	}
	if err := pub.Publish(natsnames.RevokeSubject, msg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "signed revocation applied", func() bool {
		tt, _ := a.reg.Lookup(testCallerKey)
		return tt == nil
	})
}

func TestParsePublicKey(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"} {
		k, err := ParsePublicKey(s)
		if err != nil || len(k) != 32 || k[31] != 31 {
			t.Errorf("ParsePublicKey(%q) = %x, %v", s, k, err)
		}
	}
	if _, err := ParsePublicKey("c2hvcnQ="); err == nil {
		t.Error("a short key accepted")
	}
}

// An edge whose NATS user may not create streams or buckets (the edge role,
// DESIGN.md §4) and that finds them missing waits, retrying, until the
// control plane has made them, then syncs; it never creates them itself.
func TestEdgeWaitsForBucketsItMayNotCreate(t *testing.T) {
	t.Parallel()
	noCreate := &server.Permissions{Publish: &server.SubjectPermission{
		Deny: []string{"$JS.API.STREAM.CREATE.>", "$JS.API.STREAM.UPDATE.>", "$KV.WEIR_CONFIG.>"}}}
	ns := startNATS(t, func(o *natstest.Options) {
		o.Users = []*server.User{{Username: "admin", Password: "a"}, {Username: "edge-a", Password: "e", Permissions: noCreate}}
	})
	port := strings.TrimPrefix(ns.URL(), "nats://127.0.0.1:")
	fake := newFake(t)
	te := newTestEdge(t, "nats://edge-a:e@127.0.0.1:"+port, "edge-a", t.TempDir())
	te.start(t)
	select {
	case <-te.Synced():
		t.Fatal("synced though the buckets do not exist")
	case <-time.After(1500 * time.Millisecond):
	}
	admin := connect(t, "nats://admin:a@127.0.0.1:"+port)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := mustJS(t, admin).KeyValue(ctx, natsnames.ConfigBucket); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("the edge made %s (or the lookup failed: %v)", natsnames.ConfigBucket, err)
	}
	// The control plane comes and makes them.
	for _, cfg := range []jetstream.KeyValueConfig{natsconf.ViewsBucketConfig(1), natsconf.AffinityBucketConfig(1)} {
		putKV(t, admin, cfg, "x", []byte("x"))
	}
	putKV(t, admin, natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+testTenant, mustMarshal(t, tenantSnap(t, 1, fake.URL())))
	select {
	case <-te.Synced():
	case <-time.After(20 * time.Second):
		t.Fatal("not synced within 20 s of the buckets appearing")
	}
	waitFor(t, 5*time.Second, "version 1 served", func() bool { return servedVersion(te) == 1 })
}
