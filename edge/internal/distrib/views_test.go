package distrib

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"weir.dev/edge/internal/fakeprovider"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing"
	"weir.dev/routing/natsnames"
)

// Each member's view lands in WEIR_VIEWS under
// "<tenant>.<record>.<member>.<edge>" and follows what the edge learns: a
// call's counters and status, then a cooldown with its kind and reason.
func TestViewsPutOnChange(t *testing.T) {
	t.Parallel()
	ns, a, _, fakes := twoEdges(t)
	kv, err := mustJS(t, connect(t, ns.URL())).KeyValue(context.Background(), natsnames.ViewsBucket)
	if err != nil {
		t.Fatal(err)
	}
	view := func(member, edge string) *telemetryv1.MemberView {
		e, err := kv.Get(context.Background(), testTenant+".rec-pool."+member+"."+edge)
		if err != nil {
			return nil
		}
		var v telemetryv1.MemberView
		if err := proto.Unmarshal(e.Value(), &v); err != nil {
			t.Fatal(err)
		}
		return &v
	}
	waitFor(t, 5*time.Second, "views of both members from both edges", func() bool {
		return view("m0", "edge-a") != nil && view("m1", "edge-a") != nil && view("m0", "edge-b") != nil && view("m1", "edge-b") != nil
	})
	members := a.reg.Tenant(testTenant).Record("pool").Members
	const job = "job-views"
	hashed := routing.Rendezvous(job, members)
	fakes[hashed.Name].Enqueue(fakeprovider.RateLimited(time.Minute))
	if status, _ := a.call(t, job); status != 200 {
		t.Fatalf("call: %d", status)
	}
	waitFor(t, 5*time.Second, "the cooldown in edge A's view", func() bool {
		v := view(hashed.Name, "edge-a")
		return v != nil && v.GetCooldown().GetUntil().AsTime().After(time.Now()) && v.GetLastStatus() == 429 &&
			v.GetCooldown().GetKind() == telemetryv1.FailureKind_FAILURE_KIND_RATE_LIMITED && v.GetConsecutiveRefusals() == 1
	})
	v := view(hashed.Name, "edge-a")
	if v.GetEdgeId() != "edge-a" || v.GetTenantId() != testTenant || v.GetRecordName() != "pool" || v.GetObservedAt() == nil || v.GetCounters()["rate_limited"] != 1 {
		t.Fatalf("view %v", v)
	}
	if vb := view(hashed.Name, "edge-b"); vb.GetCooldown() != nil {
		t.Fatalf("edge B reports a cooldown it never saw: %v", vb)
	}
}

// R-CAP-1, R-HEAD-6, R-HEAD-7: a member's view carries this edge's
// in-flight count against its cap and today's requests against its rpd
// share, so the control plane can show "in flight 3/5, today 120/1000".
func TestMemberViewLimits(t *testing.T) {
	t.Parallel()
	r := &routing.Record{ID: "rec-1", Name: "pool", TenantID: testTenant, Wire: routing.WireOpenAI}
	m := &routing.Member{ID: "rec-1/a", Name: "a", Record: r, Wire: routing.WireGemini}
	mv := memberView(routing.View{InFlight: 3, MaxInFlight: 5, RequestsToday: 120, RPDShare: 1000}, r, m, "edge-a")
	if mv.GetInFlight() != 3 || mv.GetMaxInFlight() != 5 || mv.GetRequestsToday() != 120 || mv.GetRpdShare() != 1000 || mv.GetWireFormat() != "gemini" {
		t.Fatalf("view %v", mv)
	}
	mv = memberView(routing.View{InFlight: -1, MaxInFlight: -2, RequestsToday: -3}, r, m, "edge-a")
	if mv.GetInFlight() != 0 || mv.GetMaxInFlight() != 0 || mv.GetRequestsToday() != 0 || mv.GetRpdShare() != 0 {
		t.Fatalf("negative counts shown as %v", mv)
	}
}
