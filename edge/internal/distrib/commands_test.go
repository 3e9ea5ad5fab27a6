package distrib

import (
	"crypto/sha256"
	"net/http"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/edge/internal/fakeprovider"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing"
	"weir.dev/routing/natsnames"
)

// A member reset (R-OBS-4) and a key revocation published once reach both
// edges and take effect within 1 s (measured).
func TestCommandsReachEveryEdge(t *testing.T) {
	t.Parallel()
	ns, a, b, fakes := twoEdges(t)
	members := a.reg.Tenant(testTenant).Record("pool").Members
	// One job per edge, both hashing to the same member, so that each edge
	// tries that member first (affinity is shared per job).
	hashed := members[0]
	var jobs []string
	for i := 0; len(jobs) < 2; i++ {
		if j := "job-cmd-" + itoa(i); routing.Rendezvous(j, members) == hashed {
			jobs = append(jobs, j)
		}
	}
	fakes[hashed.Name].Enqueue(fakeprovider.RateLimited(5*time.Minute), fakeprovider.RateLimited(5*time.Minute))
	for i, te := range []*testEdge{a, b} {
		if status, _ := te.call(t, jobs[i]); status != 200 {
			t.Fatalf("call: %d", status)
		}
		if !te.states.View(hashed, time.Now()).Cooling(time.Now()) {
			t.Fatal("member not cooling after a 429")
		}
	}
	pub := connect(t, ns.URL())

	start := time.Now()
	cmd := &telemetryv1.Command{Id: "c1", IssuedAt: timestamppb.Now(), Command: &telemetryv1.Command_ResetMember{
		ResetMember: &telemetryv1.ResetMember{TenantId: testTenant, RecordId: "rec-pool", MemberName: hashed.Name}}}
	if err := pub.Publish(natsnames.ResetSubject, signed(t, natsnames.ResetSubject, mustMarshal(t, cmd))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Second, "reset on both edges", func() bool {
		now := time.Now()
		return !a.states.View(hashed, now).Cooling(now) && !b.states.View(hashed, now).Cooling(now)
	})
	t.Logf("reset took effect on both edges in %v", time.Since(start))

	sum := sha256.Sum256([]byte(testCallerKey))
	start = time.Now()
	cmd = &telemetryv1.Command{Id: "c2", IssuedAt: timestamppb.Now(), Command: &telemetryv1.Command_RevokeKey{RevokeKey: &telemetryv1.RevokeKey{TenantId: testTenant, Sha256: sum[:]}}}
	if err := pub.Publish(natsnames.RevokeSubject, signed(t, natsnames.RevokeSubject, mustMarshal(t, cmd))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Second, "revocation on both edges", func() bool {
		ta, _ := a.reg.Lookup(testCallerKey)
		tb, _ := b.reg.Lookup(testCallerKey)
		return ta == nil && tb == nil
	})
	t.Logf("revocation took effect on both edges in %v", time.Since(start))
	for _, te := range []*testEdge{a, b} {
		if status, _ := te.call(t, ""); status != http.StatusUnauthorized {
			t.Fatalf("revoked key answered %d", status)
		}
	}
}
