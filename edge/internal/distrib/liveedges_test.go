package distrib

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"weir.dev/edge/internal/natstest"
	"weir.dev/natsconf"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/natsnames"
)

// R-HEAD-7: two running edges see each other's member views and count 2;
// each then enforces half of a caller limit (rounded up). When one stops,
// its views age out of the window and the other counts 1 again.
func TestLiveEdgesFromViewsRHEAD7(t *testing.T) {
	t.Parallel()
	fast := func(o *Options) { o.ViewHeartbeat = 100 * time.Millisecond; o.liveWindow = time.Second }
	ns, a, b, fakes := twoEdges(t, fast)
	waitFor(t, 5*time.Second, "each edge counting 2", func() bool { return a.LiveEdges() == 2 && b.LiveEdges() == 2 })
	// The members' declared limits are shared among the same count.
	waitFor(t, 5*time.Second, "each edge's member states sharing among 2", func() bool {
		return a.states.LiveEdges() == 2 && b.states.LiveEdges() == 2
	})

	// A tenant rpm of 2 over 2 edges: 1 per edge.
	snap := tenantSnap(t, 2, fakes["m0"].URL(), fakes["m1"].URL())
	snap.Tenant.Limits = &configv1.CallerLimits{Rpm: 2}
	putKV(t, connect(t, ns.URL()), natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+testTenant, mustMarshal(t, snap))
	waitFor(t, 5*time.Second, "version 2 served", func() bool { return servedVersion(a) == 2 })
	if status, _ := a.call(t, ""); status != 200 {
		t.Fatalf("first call on A: %d", status)
	}
	if status, _ := a.call(t, ""); status != 429 {
		t.Fatalf("second call on A: %d, want 429 (A's share of rpm 2 is 1)", status)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "A counting 1 after B stopped", func() bool { return a.LiveEdges() == 1 && a.states.LiveEdges() == 1 })
}

// The count is made with the edge's own NATS permissions for WEIR_VIEWS
// (an ordered, metadata-only watch: consumer create on KV_WEIR_VIEWS, no
// direct gets), counts this edge once however many views it put, and
// follows puts made after the watch began.
func TestLiveEdgesWatchWithEdgePermissionsRHEAD7(t *testing.T) {
	t.Parallel()
	viewsReader := &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{
			"$JS.API.INFO", "$JS.API.STREAM.INFO.KV_WEIR_VIEWS",
			"$JS.API.CONSUMER.CREATE.KV_WEIR_VIEWS", "$JS.API.CONSUMER.CREATE.KV_WEIR_VIEWS.>",
			"$JS.API.CONSUMER.INFO.KV_WEIR_VIEWS.>", "$JS.API.CONSUMER.DELETE.KV_WEIR_VIEWS.>", "$JS.FC.>",
		}},
		Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>"}},
	}
	ns := startNATS(t, func(o *natstest.Options) {
		o.Users = []*server.User{{Username: "admin", Password: "a"}, {Username: "edge-x", Password: "x", Permissions: viewsReader}}
	})
	port := strings.TrimPrefix(ns.URL(), "nats://127.0.0.1:")
	admin := connect(t, "nats://admin:a@127.0.0.1:"+port)
	put := func(key string) { putRawKV(t, admin, natsconf.ViewsBucketConfig(1), key, []byte("v")) }
	put(testTenant + ".rec.m0.edge-x")
	put(testTenant + ".rec.m1.edge-x")
	put(natsnames.ManagedTenantToken + ".rec.m0.edge-y")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := mustJS(t, connect(t, "nats://edge-x:x@127.0.0.1:"+port)).KeyValue(ctx, natsnames.ViewsBucket)
	if err != nil {
		t.Fatal(err)
	}
	l := newLiveEdges("edge-x", 500*time.Millisecond, time.Now, testLog(t))
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.run(ctx, func() jetstream.KeyValue { return kv }, nil)
	}()
	defer func() { cancel(); <-done }()
	waitFor(t, 5*time.Second, "edge-y counted", func() bool { return l.Count() == 2 })
	waitFor(t, 5*time.Second, "edge-y aged out", func() bool { return l.Count() == 1 })
	put(testTenant + ".rec.m0.edge-z")
	waitFor(t, 5*time.Second, "edge-z counted", func() bool { return l.Count() == 2 })
}

// Edges not heard from for two minutes are forgotten, so the map holds
// only recent edges; the count never goes below 1.
func TestLiveEdgesForgetsOldEdges(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLiveEdges("self", 0, func() time.Time { return now }, testLog(t))
	l.note("t.r.m.e1", now.Add(-10*time.Second))
	l.note("t.r.m.e2", now.Add(-40*time.Second))
	l.note("t.r.m.e3", now.Add(-3*time.Minute))
	l.note("t.r.m.self", now)
	l.note("t.r.m.e1", now.Add(-50*time.Second)) // older than what is known: ignored
	l.note("garbage", now)
	l.recount()
	if l.Count() != 2 {
		t.Fatalf("count %d, want 2 (self and e1 within 30 s)", l.Count())
	}
	// e3, silent for 3 minutes, is forgotten; a key without an edge token
	// and this edge's own keys are not kept.
	if _, ok1 := l.seen["e1"]; !ok1 || len(l.seen) != 2 || !l.seen["e1"].Equal(now.Add(-10*time.Second)) {
		t.Fatalf("seen %v, want e1 (newest put) and e2", l.seen)
	}
	now = now.Add(time.Minute)
	l.recount()
	if l.Count() != 1 {
		t.Fatalf("count %d, want 1", l.Count())
	}
}
