package distrib

import (
	"slices"
	"testing"
	"weir.dev/routing/rules"

	"weir.dev/edge/internal/gateway"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/natsnames"
)

// R-SEC-2: the loopback ports tenant records may dial come with each cluster
// snapshot installed; one that does not say allows none, and an older one is
// ignored like the rest of it.
func TestClusterSnapshotSetsTenantLoopbackRSEC2(t *testing.T) {
	t.Parallel()
	var got []rules.TenantLoopback
	st := newConfigState(gateway.NewRegistry(), &storeSink{}, testEdgeKey, testPublicKey, nil, testLog(t))
	st.loopback = func(l rules.TenantLoopback) { got = append(got, l) }
	put := func(cs *configv1.ClusterSnapshot) {
		st.apply([]change{{key: natsnames.ClusterKey, raw: signed(t, natsnames.ClusterKey, mustMarshal(t, cs))}}, false)
	}
	put(&configv1.ClusterSnapshot{Version: 1, TenantLoopback: &configv1.TenantLoopback{Ports: []uint32{8000, 11434}}})
	put(&configv1.ClusterSnapshot{Version: 2})
	put(&configv1.ClusterSnapshot{Version: 3, TenantLoopback: &configv1.TenantLoopback{AllPorts: true}})
	put(&configv1.ClusterSnapshot{Version: 2, TenantLoopback: &configv1.TenantLoopback{Ports: []uint32{1}}}) // older: ignored
	if len(got) != 3 {
		t.Fatalf("loopback set %d times (%+v), want 3", len(got), got)
	}
	if !slices.Equal(got[0].Ports, []uint16{8000, 11434}) || got[0].AllPorts {
		t.Errorf("first: %+v", got[0])
	}
	if got[1].AllPorts || len(got[1].Ports) != 0 {
		t.Errorf("a snapshot that does not say: %+v, want no port", got[1])
	}
	if !got[2].AllPorts {
		t.Errorf("all ports: %+v", got[2])
	}
}
