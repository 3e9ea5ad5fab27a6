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
// between two look-ups (DNS rebinding). The address ranges are those of
// weir.dev/routing/rules (rules.AddrRefusal), the list the configuration check uses,
// so the two never disagree.
//
// The Dialer also knows the edge's own machine: the listeners it serves on
// (SetListeners), which no record may dial, and the loopback ports tenant
// records may dial (SetTenantLoopback); both are judged with the port, at
// resolve time and again in the Control hook.
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
//   - Pooled connections outlive a narrower SetTenantLoopback: close the
//     Transport's idle connections after calling it (the edge does).
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"weir.dev/routing/rules"
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

// IsPolicyKey reports whether key is the key WithPolicy stores the policy
// under. A context type of its own that carries a policy answers Value(key)
// with its Policy for that key (PolicyFrom then finds it), saving the
// context.WithValue.
func IsPolicyKey(key any) bool {
	_, ok := key.(policyKey)
	return ok
}

// PolicyFrom is the policy ctx carries, or PolicyTenant (the stricter) when it
// carries none: forgetting WithPolicy can only refuse more.
func PolicyFrom(ctx context.Context) Policy {
	if p, ok := ctx.Value(policyKey{}).(Policy); ok {
		return p
	}
	return PolicyTenant
}

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

// refusal is the reason p refuses ip, or "". The ranges are rules'
// (rules.AddrRefusal), the list the configuration check uses too.
func refusal(ip netip.Addr, p Policy) string {
	switch p {
	case PolicyTenant:
		return rules.AddrRefusal(ip, false)
	case PolicyTrusted:
		return rules.AddrRefusal(ip, true)
	}
	return "unknown policy"
}
