package distrib

import (
	"context"
	"testing"
	"time"

	"weir.dev/edge/internal/fakeprovider"
	"weir.dev/edge/internal/natstest"
	"weir.dev/natsconf"
	"weir.dev/routing"
	"weir.dev/routing/natsnames"
)

// twoEdges starts two edges on one NATS with the test tenant's pool over
// two fake members, and returns them with the fakes by member name.
func twoEdges(t *testing.T, mutate ...func(*Options)) (*natstest.Server, *testEdge, *testEdge, map[string]*fakeprovider.Server) {
	t.Helper()
	ns := startNATS(t)
	f0, f1 := newFake(t), newFake(t)
	a := newTestEdge(t, ns.URL(), "edge-a", t.TempDir(), mutate...)
	b := newTestEdge(t, ns.URL(), "edge-b", t.TempDir(), mutate...)
	a.start(t)
	b.start(t)
	putKV(t, connect(t, ns.URL()), natsconf.ConfigBucketConfig(1), natsnames.TenantKeyPrefix+testTenant, mustMarshal(t, tenantSnap(t, 1, f0.URL(), f1.URL())))
	waitFor(t, 5*time.Second, "both edges served", func() bool { return servedVersion(a) == 1 && servedVersion(b) == 1 })
	return ns, a, b, map[string]*fakeprovider.Server{"m0": f0, "m1": f1}
}

// slowBuckets delays each lookup of WEIR_VIEWS and WEIR_AFFINITY by d, as
// a loaded machine or a slow NATS does.
func slowBuckets(d time.Duration) func(*Options) {
	return func(o *Options) {
		o.beforeEnsure = func(ctx context.Context, bucket string) {
			if bucket != natsnames.ViewsBucket && bucket != natsnames.AffinityBucket {
				return
			}
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
	}
}

// R-STICK-3 across edges: a job's first call, served on edge A by the
// member rendezvous hashing did NOT pick (A's pick was rate limited), is
// followed on edge B, which never saw the job, by the same member, read
// from WEIR_AFFINITY; without it B would have picked the rendezvous member.
//
// "slow bucket setup" is the regression test of a start-order race: the
// edge made its buckets in the background and installed config from NATS
// (turning ready) before they existed, so on a loaded machine the affinity
// bucket was "not found" about one run in six. Delaying the setup makes
// the race happen every time.
func TestAffinitySharedAcrossEdges(t *testing.T) {
	t.Parallel()
	t.Run("prompt", func(t *testing.T) {
		t.Parallel()
		testAffinityShared(t)
	})
	t.Run("slow bucket setup", func(t *testing.T) {
		t.Parallel()
		testAffinityShared(t, slowBuckets(500*time.Millisecond))
	})
}

func testAffinityShared(t *testing.T, mutate ...func(*Options)) {
	ns, a, b, fakes := twoEdges(t, mutate...)
	const job = "job-sticky-1"
	members := a.reg.Tenant(testTenant).Record("pool").Members
	hashed := routing.Rendezvous(job, members)
	other := members[0]
	if other == hashed {
		other = members[1]
	}
	fakes[hashed.Name].Enqueue(fakeprovider.RateLimited(30 * time.Second))

	status, served := a.call(t, job)
	if status != 200 || served != other.Name {
		t.Fatalf("edge A: %d served by %q, want %q after %q was rate limited", status, served, other.Name, hashed.Name)
	}
	kv, err := mustJS(t, connect(t, ns.URL())).KeyValue(context.Background(), natsnames.AffinityBucket)
	if err != nil {
		t.Fatal(err)
	}
	key := affinityKey(testTenant, routing.JobHash(testTenant, job))
	waitFor(t, 5*time.Second, "affinity in WEIR_AFFINITY", func() bool {
		_, err := kv.Get(context.Background(), key)
		return err == nil
	})
	if b.states.View(hashed, time.Now()).Cooling(time.Now()) {
		t.Fatal("edge B learned A's cooldown: the test would prove nothing")
	}
	status, served = b.call(t, job)
	if status != 200 || served != other.Name {
		t.Fatalf("edge B: %d served by %q, want %q (the job's last member), not the hashed %q", status, served, other.Name, hashed.Name)
	}
	// A job never seen anywhere goes, on B, to its rendezvous member.
	fresh := "job-fresh-2"
	if status, served := b.call(t, fresh); status != 200 || served != routing.Rendezvous(fresh, members).Name {
		t.Fatalf("fresh job: %d %q", status, served)
	}
}

// With NATS down, a local miss costs at most the short timeout and the call
// is served (affinity falls back to rendezvous hashing).
func TestAffinityMissWithNATSDown(t *testing.T) {
	t.Parallel()
	ns, a, _, _ := twoEdges(t)
	ns.Stop()
	start := time.Now()
	if _, _, ok := a.Affinity().Get(testTenant, "nope"); ok {
		t.Fatal("hit for an unknown job")
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Fatalf("a miss with NATS down took %v", d)
	}
	if status, _ := a.call(t, "job-x"); status != 200 {
		t.Fatalf("call with NATS down: %d", status)
	}
}
