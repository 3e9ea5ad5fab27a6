package rules

import (
	"net/netip"
	"slices"
	"sync"
)

// The one list of address ranges R-SEC-2 refuses. The configuration check
// (CheckURL, in the control plane and the edge compiler) and the edge's
// dial-time guard (the edge's netguard, after DNS) both judge addresses
// with AddrRefusal, so they can never disagree about an address.

type addrRange struct {
	prefix netip.Prefix
	reason string
}

// alwaysRefused are never unicast destinations, whoever owns the record
// (parsed once: AddrRefusal runs on every upstream request).
var alwaysRefused = sync.OnceValue(func() []addrRange {
	return ranges(
		"0.0.0.0/8", "unspecified address",
		"::/128", "unspecified address",
		"224.0.0.0/4", "multicast address",
		"ff00::/8", "multicast address",
		"255.255.255.255/32", "broadcast address",
	)
})

// tenantRefused are the internal ranges of R-SEC-2 and their neighbours that
// are never a public service, refused on tenant-owned records. Loopback is
// deliberately absent: it is allowed on the ports the operator lists.
//
// 100.64.0.0/10 (shared address space, RFC 6598, carrier-grade NAT) is
// refused as a whole: no public service lives there, and Alibaba Cloud's
// metadata service (100.100.100.200) does.
var tenantRefused = sync.OnceValue(func() []addrRange {
	return ranges(
		"10.0.0.0/8", "private address",
		"172.16.0.0/12", "private address",
		"192.168.0.0/16", "private address",
		"fc00::/7", "private address", // AWS IMDS over IPv6 (fd00:ec2::254) too
		"fec0::/10", "private address (site-local)",
		"169.254.0.0/16", "link-local address (cloud metadata)",
		"fe80::/10", "link-local address",
		"100.64.0.0/10", "shared address space (CGNAT; Alibaba Cloud metadata)",
		"168.63.129.16/32", "cloud metadata address (Azure)",
		"192.0.0.0/24", "IETF protocol assignment",
		"198.18.0.0/15", "benchmarking address",
		"240.0.0.0/4", "reserved address",
	)
})

func ranges(list ...string) []addrRange {
	out := make([]addrRange, 0, len(list)/2)
	for i := 0; i+1 < len(list); i += 2 {
		out = append(out, addrRange{netip.MustParsePrefix(list[i]), list[i+1]})
	}
	return out
}

// AddrRefusal says why a record may never reach a, or returns "" when it
// may (R-SEC-2). Every record is refused unspecified, broadcast and multicast
// addresses; a tenant-owned record (clusterOwned false) is refused private
// (10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10), link-local (169.254/16
// with the cloud metadata address, fe80::/10), shared (100.64/10, with
// Alibaba Cloud's metadata address), Azure's metadata address, reserved and
// benchmarking addresses, and IPv6 forms (NAT64, IPv4-compatible) of refused
// IPv4 addresses or of loopback. Loopback itself is allowed here: which of
// its ports a tenant may reach is the dial-time guard's business. An
// IPv4-mapped IPv6 address is judged as the IPv4 address it maps; a zone is
// ignored; the zero Addr is refused.
func AddrRefusal(a netip.Addr, clusterOwned bool) string {
	if !a.IsValid() {
		return "invalid address"
	}
	a = a.WithZone("").Unmap()
	for _, r := range alwaysRefused() {
		if r.prefix.Contains(a) {
			return r.reason
		}
	}
	if clusterOwned || a.IsLoopback() {
		return ""
	}
	for _, r := range tenantRefused() {
		if r.prefix.Contains(a) {
			return r.reason
		}
	}
	// IPv6 forms that carry an IPv4 address in their last 32 bits reach that
	// address through a translator (NAT64) or old stacks (IPv4-compatible):
	// judge the IPv4 address. Their loopback is not the edge's own machine.
	nat64, v4Compat := netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("::/96")
	if a.Is6() && (nat64.Contains(a) || v4Compat.Contains(a)) {
		b := a.As16()
		v4 := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		if v4.IsLoopback() {
			return "loopback address behind an IPv6 translation prefix"
		}
		if r := AddrRefusal(v4, false); r != "" {
			return r + " behind an IPv6 translation prefix"
		}
	}
	return ""
}

// TenantLoopback says which ports of the edge's own machine tenant-owned
// records may reach (R-SEC-2): on a hosted edge loopback is shared by every
// tenant, so a tenant's record may use it only on the ports the operator
// lists. The machine's own addresses (those of its interfaces) count as
// loopback here: a service listening on all interfaces is reached through
// them as well. Records cluster admins own are not limited by it.
type TenantLoopback struct {
	// AllPorts allows every port (a --dev control plane, or a standalone
	// file that says nothing).
	AllPorts bool
	// Ports are the ports allowed.
	Ports []uint16
	// Never are ports refused whatever AllPorts and Ports say: those of the
	// NATS servers the edge uses.
	Never []uint16
}

// Allows reports whether a tenant-owned record may dial port on the edge's
// own machine. A nil l allows every port: nothing was said, as on a
// standalone edge.
func (l *TenantLoopback) Allows(port uint16) bool {
	if l == nil {
		return true // a zero Dialer: nothing said, as a standalone edge
	}
	if slices.Contains(l.Never, port) {
		return false
	}
	return l.AllPorts || slices.Contains(l.Ports, port)
}
