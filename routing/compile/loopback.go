package compile

import (
	"fmt"

	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/rules"
)

// TenantLoopback reads the cluster snapshot's tenant_loopback (R-SEC-2):
// which loopback ports tenant-owned records may dial. When the snapshot is
// nil or does not set it, the answer is absent: an edge joined to a control
// plane passes no port, a standalone edge every port. A port outside
// 1-65535 is an error.
func TenantLoopback(cluster *configv1.ClusterSnapshot, absent rules.TenantLoopback) (rules.TenantLoopback, error) {
	tl := cluster.GetTenantLoopback()
	if tl == nil {
		return absent, nil
	}
	out := rules.TenantLoopback{AllPorts: tl.GetAllPorts()}
	for _, p := range tl.GetPorts() {
		if p < 1 || p > 65535 {
			return absent, fmt.Errorf("cluster: tenant_loopback: port %d is not in 1-65535", p)
		}
		out.Ports = append(out.Ports, uint16(p))
	}
	return out, nil
}
