package distrib_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/store"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

// TestViewsReachTheAdminAPI puts member views into WEIR_VIEWS as edges do
// and checks that `weir provider show`, `weir provider pool list`, `weir
// edges list` and `weir doctor` (pool_cooling, edge_silent) show them.
func TestViewsReachTheAdminAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	tid := e.tenant("acme")
	e.pool("acme", "p", "m1", "m2")
	detail, err := e.api.providers.GetProvider(ctx, connect.NewRequest(&adminv1.GetProviderRequest{Tenant: "acme", Name: "p"}))
	if err != nil {
		t.Fatal(err)
	}
	tenant, record := store.UUIDString(tid), detail.Msg.GetDetail().GetRecord().GetId()
	e.runDistributor()

	now := time.Now()
	put := func(edge, member string, observed time.Time, coolingUntil time.Time) {
		t.Helper()
		v := &telemetryv1.MemberView{
			EdgeId: edge, TenantId: tenant, RecordId: record, RecordName: "p", MemberName: member,
			Headroom: 0.5, LastStatus: 200, InFlight: 3, ObservedAt: timestamppb.New(observed),
			Counters: map[string]uint64{"answered": 7},
		}
		if !coolingUntil.IsZero() {
			v.Cooldown = &telemetryv1.Cooldown{Until: timestamppb.New(coolingUntil), Kind: telemetryv1.FailureKind_FAILURE_KIND_RATE_LIMITED, Reason: "429"}
		}
		data, err := proto.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.b.Views.Put(ctx, fmt.Sprintf("%s.%s.%s.%s", tenant, record, member, edge), data); err != nil {
			t.Fatal(err)
		}
	}
	put("edge-1", "m1", now, now.Add(time.Minute))
	put("edge-1", "m2", now, now.Add(time.Minute))
	put("edge-2", "m1", now.Add(-2*time.Minute), time.Time{}) // an edge that stopped reporting
	// Ignored: a record that does not exist, and a value that is no view.
	if _, err := e.b.Views.Put(ctx, tenant+".00000000-0000-4000-8000-000000000000.m1.edge-1", []byte{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Views.Put(ctx, tenant+"."+record+".m1.edge-3", []byte{0xff, 0xff}); err != nil {
		t.Fatal(err)
	}

	views := func(members []*adminv1.MemberDetail) []string {
		var out []string
		for _, m := range members {
			for _, v := range m.GetEdgeViews() {
				out = append(out, fmt.Sprintf("%s@%s expired=%v cooling=%v inflight=%d",
					m.GetMember().GetName(), v.GetView().GetEdgeId(), v.GetExpired(), v.GetView().GetCooldown() != nil, v.GetView().GetInFlight()))
			}
		}
		slices.Sort(out)
		return out
	}
	want := []string{
		"m1@edge-1 expired=false cooling=true inflight=3",
		"m1@edge-2 expired=true cooling=false inflight=3",
		"m2@edge-1 expired=false cooling=true inflight=3",
	}
	eventually(t, 5*time.Second, "views in provider show", func() bool {
		d, err := e.api.providers.GetProvider(ctx, connect.NewRequest(&adminv1.GetProviderRequest{Tenant: "acme", Name: "p"}))
		return err == nil && slices.Equal(views(d.Msg.GetDetail().GetMembers()), want)
	})
	list, err := e.api.pools.ListPoolMembers(ctx, connect.NewRequest(&adminv1.ListPoolMembersRequest{Tenant: "acme", Record: "p"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := views(list.Msg.GetMembers()); !slices.Equal(got, want) {
		t.Errorf("pool list views = %v, want %v", got, want)
	}
	edges, err := e.api.edges.ListEdges(ctx, connect.NewRequest(&adminv1.ListEdgesRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range edges.Msg.GetEdges() {
		got = append(got, fmt.Sprintf("%s silent=%v views=%d", x.GetId(), x.GetSilent(), x.GetMemberViews()))
	}
	if want := []string{"edge-1 silent=false views=2", "edge-2 silent=true views=0"}; !slices.Equal(got, want) {
		t.Errorf("edges = %v, want %v", got, want)
	}

	findings := func(tenant string) []string {
		d, err := e.api.doctor.Diagnose(ctx, connect.NewRequest(&adminv1.DiagnoseRequest{Tenant: tenant}))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range d.Msg.GetFindings() {
			if f.GetCode() != "shared_account" { // both members are on 127.0.0.1
				out = append(out, fmt.Sprintf("%s %s%v%v", f.GetCode(), f.GetRecord(), f.GetMembers(), f.GetEdges()))
			}
		}
		slices.Sort(out)
		return out
	}
	if got, want := findings("acme"), []string{"pool_cooling p[m1 m2][edge-1]"}; !slices.Equal(got, want) {
		t.Errorf("tenant doctor = %v, want %v", got, want)
	}
	if got, want := findings(""), []string{"edge_silent [][edge-2]", "pool_cooling p[m1 m2][edge-1]"}; !slices.Equal(got, want) {
		t.Errorf("cluster doctor = %v, want %v", got, want)
	}

	// A newer view replaces the stored one: m1 is no longer cooling.
	put("edge-1", "m1", time.Now(), time.Time{})
	eventually(t, 5*time.Second, "the newer view", func() bool {
		return !slices.Contains(findings("acme"), "pool_cooling p[m1 m2][edge-1]")
	})
}
