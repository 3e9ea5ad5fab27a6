package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
	"weir.dev/routing/rules"
)

// Resolver looks up a host's addresses. *net.Resolver implements it; tests
// use a fake so that no test depends on DNS.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer dials TCP connections that obey a Policy. The zero Dialer is ready
// to use: net.DefaultResolver, 30 s connect timeout, 30 s keep-alive.
// A Dialer is safe for concurrent use; do not change its fields while it is
// in use (SetTenantLoopback and SetListeners may be called at any time), and
// do not copy it.
type Dialer struct {
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
	// Timeout bounds each connect attempt; 0 means 30 s.
	Timeout time.Duration
	// KeepAlive is the TCP keep-alive period; 0 means 30 s, negative
	// disables keep-alives.
	KeepAlive time.Duration
	// InterfaceAddrs lists the machine's own addresses for SetListeners;
	// nil means net.InterfaceAddrs.
	InterfaceAddrs func() ([]net.Addr, error)

	loopback atomic.Pointer[rules.TenantLoopback] // nil: every port
	self     atomic.Pointer[self]                 // nil: no listener known
}

// DialContext dials address ("host:port") on a "tcp", "tcp4" or "tcp6"
// network under the policy ctx carries (PolicyFrom: PolicyTenant when none).
// It has the signature of http.Transport.DialContext, but see the package
// hazards before sharing one http.Transport between policies: Transport is
// the safe way.
//
// The host is resolved once; if any of its addresses is refused the dial is
// refused as a whole (a name that mixes public and private answers is not
// trusted), with a *RefusedError wrapping ErrRefused and no connection
// attempted. Otherwise the addresses are tried in order, and each socket is
// checked again in its Control hook against the address it is about to
// connect to.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return d.dial(ctx, network, address, PolicyFrom(ctx))
}

// DialContext returns a dial function, for http.Transport.DialContext, that
// dials with a zero Dialer under policy p whatever the request's context
// says. Use it for a transport that serves only one kind of record.
func DialContext(p Policy) func(ctx context.Context, network, address string) (net.Conn, error) {
	d := &Dialer{}
	return d.fixed(p)
}

func (d *Dialer) fixed(p Policy) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		return d.dial(ctx, network, address, p)
	}
}

func (d *Dialer) dial(ctx context.Context, network, address string, p Policy) (net.Conn, error) {
	var want func(netip.Addr) bool
	switch network {
	case "tcp":
		want = func(netip.Addr) bool { return true }
	case "tcp4":
		want = func(a netip.Addr) bool { return a.Unmap().Is4() }
	case "tcp6":
		want = func(a netip.Addr) bool { return a.Is6() && !a.Is4In6() }
	default:
		return nil, fmt.Errorf("netguard: dial %s %s: only tcp is supported", network, address)
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("netguard: dial %s: %w", address, err)
	}
	portNum, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("netguard: dial %s: port is not a number in 0-65535", address)
	}
	ips, err := d.resolve(ctx, network, host)
	if err != nil {
		return nil, err
	}
	var candidates []netip.Addr
	for _, ip := range ips {
		if err := d.checkAddrPort(host, netip.AddrPortFrom(ip, uint16(portNum)), p); err != nil {
			return nil, err
		}
		if want(ip) {
			candidates = append(candidates, ip)
		}
	}
	if len(candidates) == 0 {
		return nil, fmt.Errorf("netguard: dial %s %s: no %s address", network, address, network)
	}

	nd := net.Dialer{
		Timeout:   d.Timeout,
		KeepAlive: d.KeepAlive,
		Control:   d.control(host, p),
	}
	if nd.Timeout == 0 {
		nd.Timeout = 30 * time.Second
	}
	if nd.KeepAlive == 0 {
		nd.KeepAlive = 30 * time.Second
	}
	var errs []error
	for _, ip := range candidates {
		conn, err := nd.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil || errors.Is(err, ErrRefused) {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// resolve returns host's addresses: the literal itself, or what the
// resolver answers.
func (d *Dialer) resolve(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	r := d.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	lookup := "ip"
	switch network {
	case "tcp4":
		lookup = "ip4"
	case "tcp6":
		lookup = "ip6"
	}
	ips, err := r.LookupNetIP(ctx, lookup, host)
	if err != nil {
		return nil, fmt.Errorf("netguard: resolving %s: %w", host, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("netguard: resolving %s: no address", host)
	}
	return ips, nil
}

// control is the socket hook that checks the address and port the kernel is
// about to connect to, whatever produced them: the last word on R-SEC-2.
func (d *Dialer) control(host string, p Policy) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &RefusedError{Host: host, Reason: "unparsable socket address", Policy: p}
		}
		return d.checkAddrPort(host, ap, p)
	}
}

// Transport is an http.RoundTripper that sends each request under the policy
// its context carries (WithPolicy; PolicyTenant when none) through one of
// two http.Transports, one per policy, so that a connection dialled for a
// trusted record is never reused by a tenant's request to the same host:port.
type Transport struct {
	tenant, trusted *http.Transport
}

// NewTransport returns a Transport whose two pools dial through d (nil: a
// zero Dialer). Both are clones of base (nil: http.DefaultTransport) with
// Proxy, DialTLSContext and DialTLS cleared and DialContext set to d under a
// fixed policy, since a proxy or a custom TLS dial would bypass the guard.
func NewTransport(d *Dialer, base *http.Transport) *Transport {
	if d == nil {
		d = &Dialer{}
	}
	if base == nil {
		base = http.DefaultTransport.(*http.Transport)
	}
	mk := func(p Policy) *http.Transport {
		t := base.Clone()
		t.Proxy = nil
		t.DialTLSContext = nil
		t.DialTLS = nil // deprecated, but it would still take precedence
		t.Dial = nil
		t.DialContext = d.fixed(p)
		return t
	}
	return &Transport{tenant: mk(PolicyTenant), trusted: mk(PolicyTrusted)}
}

// RoundTrip sends req through the pool of its context's policy.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.For(PolicyFrom(req.Context())).RoundTrip(req)
}

// For is the underlying transport of one policy, e.g. to tune it. Requests
// sent through it directly use that policy whatever their context says.
func (t *Transport) For(p Policy) *http.Transport {
	if p == PolicyTrusted {
		return t.trusted
	}
	return t.tenant
}

// CloseIdleConnections closes the idle connections of both pools.
func (t *Transport) CloseIdleConnections() {
	t.tenant.CloseIdleConnections()
	t.trusted.CloseIdleConnections()
}
