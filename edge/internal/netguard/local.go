package netguard

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"weir.dev/routing/rules"
)

// self is what the edge listens on.
type self struct {
	// exact are listeners bound to one address.
	exact []netip.AddrPort
	// anyPorts are the ports of listeners bound to every address.
	anyPorts []uint16
	// addrs are the machine's own addresses when the listeners were set.
	addrs []netip.Addr
}

// SetTenantLoopback sets which loopback ports tenant-owned records may
// reach from now on. Until it is first called every port is allowed, as for
// a standalone edge whose file says nothing; an edge joined to a control
// plane sets it at start (no port) and again from each cluster snapshot.
// Connections already made are not closed: close the idle ones of the
// Transport after a change.
func (d *Dialer) SetTenantLoopback(l rules.TenantLoopback) {
	l.Ports, l.Never = slices.Clone(l.Ports), slices.Clone(l.Never)
	d.loopback.Store(&l)
}

// SetListeners tells the Dialer the addresses the edge listens on (as its
// net.Listeners report them once bound), so that no record, whoever owns it,
// ever reaches the edge itself (R-SEC-2): a listener bound to one address is
// refused at that address and port; one bound to every address (":9090") is
// refused on that port at any loopback address and at any address of the
// machine's interfaces, as listed when SetListeners is called.
func (d *Dialer) SetListeners(addrs ...net.Addr) error {
	s := &self{}
	for _, a := range addrs {
		ap, err := netip.ParseAddrPort(a.String())
		if err != nil {
			return fmt.Errorf("netguard: listener address %q: %w", a, err)
		}
		ap = netip.AddrPortFrom(ap.Addr().WithZone("").Unmap(), ap.Port())
		if ap.Addr().IsUnspecified() {
			s.anyPorts = append(s.anyPorts, ap.Port())
		} else {
			s.exact = append(s.exact, ap)
		}
	}
	list := d.InterfaceAddrs
	if list == nil {
		list = net.InterfaceAddrs
	}
	ifaddrs, err := list()
	if err != nil {
		return fmt.Errorf("netguard: the machine's addresses: %w", err)
	}
	for _, a := range ifaddrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			s.addrs = append(s.addrs, p.Addr().WithZone("").Unmap())
		} else if ip, err := netip.ParseAddr(a.String()); err == nil {
			s.addrs = append(s.addrs, ip.WithZone("").Unmap())
		}
	}
	d.self.Store(s)
	return nil
}

// checkAddrPort is CheckAddr for a destination with its port, plus the
// rules of the edge's own machine: its own listeners (every policy) and the
// tenant loopback ports (PolicyTenant).
func (d *Dialer) checkAddrPort(host string, ap netip.AddrPort, p Policy) error {
	if err := CheckAddr(ap.Addr(), p); err != nil {
		err.(*RefusedError).Host = host
		return err
	}
	ip, port := ap.Addr().WithZone("").Unmap(), ap.Port()
	s := d.self.Load()
	own := ip.IsLoopback()
	if s != nil {
		own = own || slices.Contains(s.addrs, ip)
		if slices.Contains(s.exact, netip.AddrPortFrom(ip, port)) || own && slices.Contains(s.anyPorts, port) {
			return &RefusedError{Host: host, IP: ip, Reason: "the edge's own listener (port " + strconv.Itoa(int(port)) + ")", Policy: p}
		}
	}
	if own && p == PolicyTenant && !d.loopback.Load().Allows(port) {
		return &RefusedError{Host: host, IP: ip, Reason: "port " + strconv.Itoa(int(port)) + " of the edge's own machine is not open to tenant records (--tenant-loopback-ports)", Policy: p}
	}
	return nil
}
