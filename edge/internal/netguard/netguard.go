// Package netguard keeps the edge from being turned against the network it
// runs in (ROUTING.md R-SEC-2): a tenant's record may name any base_url, so
// every upstream connection is checked where it is made, after DNS.
//
// There are two layers. CheckURL is the static check of a URL (scheme, user
// info, a literal address). Dialer is the check that matters: it resolves the
// name itself, refuses the dial when any resolved address is forbidden, and
// checks again, in the socket's Control hook, the address actually connected
// to. A name that resolves to a private or metadata address is therefore
// refused however it was spelt, and so is a name whose DNS answer changes
// between two look-ups (DNS rebinding).
//
// Hazards for callers:
//   - A proxy defeats the guard (the proxy resolves the target): transports
//     using the guard must have Proxy == nil. NewTransport ensures it.
//   - http.Transport pools connections by host:port, not by policy. A
//     connection dialled under PolicyTrusted must never carry a tenant's
//     request, so one http.Transport must not serve both policies through
//     Dialer.DialContext. Transport keeps one pool per policy for that reason.
//   - The policy travels in the request's context (WithPolicy). When absent
//     it is PolicyTenant, the stricter one.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
)

// Policy says which destinations a connection may reach.
type Policy uint8

const (
	// PolicyTenant is for tenant-owned records, and the default: loopback is
	// allowed (a sidecar such as a local vLLM), private, link-local (cloud
	// metadata included), shared (CGNAT), reserved, unspecified, broadcast
	// and multicast addresses are refused, as are the IPv4-mapped and NAT64
	// forms of refused IPv4 addresses.
	PolicyTenant Policy = iota
	// PolicyTrusted is for records cluster admins own (managed, or marked
	// internal): every unicast address is allowed; unspecified, broadcast
	// and multicast addresses are still refused.
	PolicyTrusted
)

// String names the policy.
func (p Policy) String() string {
	switch p {
	case PolicyTenant:
		return "tenant"
	case PolicyTrusted:
		return "trusted"
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// PolicyFor is the policy of a record: trusted for managed and internal
// records, tenant otherwise.
func PolicyFor(managed, internal bool) Policy {
	if managed || internal {
		return PolicyTrusted
	}
	return PolicyTenant
}

// ErrRefused is wrapped by every refusal of a destination (*RefusedError),
// so callers can classify it (R-FAIL-5, transport, for the call) with
// errors.Is wherever it surfaces: dial, http.Client, CheckURL.
var ErrRefused = errors.New("destination refused")

// ErrBadURL is wrapped by CheckURL for a URL that is not an acceptable
// upstream URL (not absolute, wrong scheme, user info, no host).
var ErrBadURL = errors.New("unacceptable upstream URL")

// RefusedError is a destination address the policy forbids.
type RefusedError struct {
	// Host is the name or literal that was asked for.
	Host string
	// IP is the address that was refused (one of Host's addresses).
	IP netip.Addr
	// Reason says which rule refused it, e.g. "private address".
	Reason string
	// Policy is the policy in force.
	Policy Policy
}

func (e *RefusedError) Error() string {
	if e.Host == "" || e.Host == e.IP.String() {
		return fmt.Sprintf("netguard: %s refused under %s policy: %s", e.IP, e.Policy, e.Reason)
	}
	return fmt.Sprintf("netguard: %s (%s) refused under %s policy: %s", e.Host, e.IP, e.Policy, e.Reason)
}

// Unwrap makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Unwrap() error { return ErrRefused }

type policyKey struct{}

// WithPolicy returns a context carrying the policy for the connections made
// under it. Set it on each upstream request's context: one Transport then
// serves tenant and trusted records alike.
func WithPolicy(ctx context.Context, p Policy) context.Context {
	return context.WithValue(ctx, policyKey{}, p)
}

// PolicyFrom is the policy ctx carries, or PolicyTenant (the stricter) when it
// carries none: forgetting WithPolicy can only refuse more.
func PolicyFrom(ctx context.Context) Policy {
	if p, ok := ctx.Value(policyKey{}).(Policy); ok {
		return p
	}
	return PolicyTenant
}

type rangeRule struct {
	prefix netip.Prefix
	reason string
}

func rules(list ...any) []rangeRule {
	out := make([]rangeRule, 0, len(list)/2)
	for i := 0; i < len(list); i += 2 {
		out = append(out, rangeRule{netip.MustParsePrefix(list[i].(string)), list[i+1].(string)})
	}
	return out
}

// alwaysRefused are never unicast destinations, whatever the policy.
var alwaysRefused = rules(
	"0.0.0.0/8", "unspecified address",
	"::/128", "unspecified address",
	"224.0.0.0/4", "multicast address",
	"ff00::/8", "multicast address",
	"255.255.255.255/32", "broadcast address",
)

// tenantRefused are the internal ranges of R-SEC-2 and their neighbours that
// are never a public service. Loopback is deliberately absent.
var tenantRefused = rules(
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

var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	v4Compat   = netip.MustParsePrefix("::/96")
	loopbackV4 = netip.MustParsePrefix("127.0.0.0/8")
)

// CheckAddr reports whether the policy allows a connection to ip. It
// returns nil or a *RefusedError (wrapping ErrRefused) whose Host is empty.
// An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is judged as the IPv4
// address it maps; an IPv6 zone is ignored.
func CheckAddr(ip netip.Addr, p Policy) error {
	if reason := refusal(ip, p); reason != "" {
		return &RefusedError{IP: ip, Reason: reason, Policy: p}
	}
	return nil
}

func refusal(ip netip.Addr, p Policy) string {
	if !ip.IsValid() {
		return "invalid address"
	}
	ip = ip.WithZone("").Unmap()
	for _, r := range alwaysRefused {
		if r.prefix.Contains(ip) {
			return r.reason
		}
	}
	if p == PolicyTrusted {
		return ""
	}
	if p != PolicyTenant {
		return "unknown policy"
	}
	if ip.IsLoopback() {
		return ""
	}
	for _, r := range tenantRefused {
		if r.prefix.Contains(ip) {
			return r.reason
		}
	}
	// IPv6 forms that carry an IPv4 address in their last 32 bits reach that
	// address through a translator (NAT64) or old stacks (IPv4-compatible):
	// judge the IPv4 address. Their loopback is not the edge's own machine.
	if ip.Is6() && (nat64.Contains(ip) || v4Compat.Contains(ip)) {
		b := ip.As16()
		v4 := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		if loopbackV4.Contains(v4) {
			return "loopback address behind an IPv6 translation prefix"
		}
		if r := refusal(v4, p); r != "" {
			return r + " behind an IPv6 translation prefix"
		}
	}
	return ""
}
