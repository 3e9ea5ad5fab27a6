package netguard

// No test here sends traffic anywhere but loopback: refused addresses are
// refused before any connect, and allowed public addresses are judged by
// CheckAddr only, never dialled.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"weir.dev/routing/rules"
)

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	const ok = ""
	for _, tc := range []struct {
		addr    string
		tenant  string // "" = allowed, else a word of the reason
		trusted string
	}{
		{"127.0.0.1", ok, ok},
		{"127.8.9.10", ok, ok},
		{"::1", ok, ok},
		{"::ffff:127.0.0.1", ok, ok},
		{"8.8.8.8", ok, ok},
		{"2001:4860:4860::8888", ok, ok},
		{"10.0.0.1", "private", ok},
		{"10.255.255.255", "private", ok},
		{"172.16.0.1", "private", ok},
		{"172.31.255.254", "private", ok},
		{"172.32.0.1", ok, ok},
		{"192.168.1.1", "private", ok},
		{"fc00::1", "private", ok},
		{"fd00:ec2::254", "private", ok},
		{"169.254.169.254", "link-local", ok},
		{"169.254.0.1", "link-local", ok},
		{"fe80::1", "link-local", ok},
		{"fe80::1%eth0", "link-local", ok},
		{"100.100.100.200", "shared", ok},
		{"168.63.129.16", "metadata", ok},
		{"::ffff:10.0.0.1", "private", ok},
		{"::ffff:169.254.169.254", "link-local", ok},
		{"::ffff:192.168.0.1", "private", ok},
		{"64:ff9b::a00:1", "private", ok},
		{"64:ff9b::7f00:1", "loopback", ok},
		{"64:ff9b::808:808", ok, ok},
		{"::a00:1", "private", ok},
		{"0.0.0.0", "unspecified", "unspecified"},
		{"0.1.2.3", "unspecified", "unspecified"},
		{"::", "unspecified", "unspecified"},
		{"::ffff:0.0.0.0", "unspecified", "unspecified"},
		{"224.0.0.1", "multicast", "multicast"},
		{"239.255.255.250", "multicast", "multicast"},
		{"ff02::1", "multicast", "multicast"},
		{"::ffff:224.0.0.1", "multicast", "multicast"},
		{"255.255.255.255", "broadcast", "broadcast"},
		{"240.0.0.1", "reserved", ok},
	} {
		for _, pc := range []struct {
			p    Policy
			want string
		}{{PolicyTenant, tc.tenant}, {PolicyTrusted, tc.trusted}} {
			t.Run(fmt.Sprintf("R-SEC-2 %s %s", pc.p, tc.addr), func(t *testing.T) {
				t.Parallel()
				err := CheckAddr(netip.MustParseAddr(tc.addr), pc.p)
				if pc.want == ok {
					if err != nil {
						t.Fatalf("CheckAddr = %v, want allowed", err)
					}
					return
				}
				var re *RefusedError
				if !errors.As(err, &re) || !errors.Is(err, ErrRefused) {
					t.Fatalf("CheckAddr = %v, want a *RefusedError wrapping ErrRefused", err)
				}
				if !strings.Contains(re.Reason, pc.want) {
					t.Fatalf("reason %q, want it to mention %q", re.Reason, pc.want)
				}
			})
		}
	}
	t.Run("R-SEC-2 invalid address", func(t *testing.T) {
		t.Parallel()
		if err := CheckAddr(netip.Addr{}, PolicyTrusted); !errors.Is(err, ErrRefused) {
			t.Fatalf("CheckAddr(zero) = %v, want refused", err)
		}
	})
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		url  string
		p    Policy
		want error // nil = accepted
	}{
		{"R-SEC-2 https", "https://api.openai.com/v1", PolicyTenant, nil},
		{"R-SEC-2 https with port", "https://llm.example.com:8443", PolicyTenant, nil},
		{"R-SEC-2 scheme case", "HTTPS://api.openai.com/", PolicyTenant, nil},
		{"R-SEC-2 http loopback v4", "http://127.0.0.1:8000/v1", PolicyTenant, nil},
		{"R-SEC-2 http loopback 127/8", "http://127.1.2.3:8000", PolicyTenant, nil},
		{"R-SEC-2 http loopback v6", "http://[::1]:8000/v1", PolicyTenant, nil},
		{"R-SEC-2 http localhost", "http://LocalHost:8000/v1", PolicyTenant, nil},
		{"R-SEC-2 http to a name", "http://api.example.com/v1", PolicyTenant, ErrBadURL},
		{"R-SEC-2 http to a name that says localhost", "http://localhost.evil.example/v1", PolicyTenant, ErrBadURL},
		{"R-SEC-2 http to a public literal", "http://8.8.8.8/v1", PolicyTenant, ErrBadURL},
		{"R-SEC-2 http on a trusted record", "http://vllm.internal:8000/v1", PolicyTrusted, nil},
		{"R-SEC-2 private literal on a trusted record", "http://10.0.0.5:8000/v1", PolicyTrusted, nil},
		{"R-SEC-2 private literal", "https://10.0.0.1/v1", PolicyTenant, ErrRefused},
		{"R-SEC-2 metadata literal", "http://169.254.169.254/latest/meta-data", PolicyTenant, ErrBadURL},
		{"R-SEC-2 metadata literal over https", "https://169.254.169.254/", PolicyTenant, ErrRefused},
		{"R-SEC-2 mapped private literal", "https://[::ffff:10.0.0.1]/", PolicyTenant, ErrRefused},
		{"R-SEC-2 unspecified on a trusted record", "http://0.0.0.0:8000/", PolicyTrusted, ErrRefused},
		{"R-SEC-2 user info", "https://user:pw@api.example.com/", PolicyTenant, ErrBadURL},
		{"R-SEC-2 relative", "/v1/chat", PolicyTenant, ErrBadURL},
		{"R-SEC-2 no host", "https:///v1", PolicyTenant, ErrBadURL},
		{"R-SEC-2 opaque", "https:api.example.com", PolicyTenant, ErrBadURL},
		{"R-SEC-2 other scheme", "ftp://api.example.com/", PolicyTrusted, ErrBadURL},
		{"R-SEC-2 file scheme", "file:///etc/passwd", PolicyTrusted, ErrBadURL},
		{"R-SEC-2 bad port", "https://api.example.com:99999/", PolicyTenant, ErrBadURL},
		{"R-SEC-2 empty port", "https://api.example.com:/", PolicyTenant, ErrBadURL},
		{"R-SEC-2 unparsable", "https://api.example.com/%zz", PolicyTenant, ErrBadURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := CheckURL(tc.url, tc.p)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("CheckURL(%q) = %v, want nil", tc.url, err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("CheckURL(%q) = %v, want %v", tc.url, err, tc.want)
			}
		})
	}
	t.Run("R-SEC-2 error hides the password", func(t *testing.T) {
		t.Parallel()
		for _, raw := range []string{"https://user:hunter2@api.example.com/", "https://user:hunter2@api.example.com/%zz"} {
			if err := CheckURL(raw, PolicyTenant); err == nil || strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("CheckURL(%q) = %v; want an error without the password", raw, err)
			}
		}
	})
}

func TestPolicyContext(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want Policy
	}{
		{"R-SEC-2 default is tenant", context.Background(), PolicyTenant},
		{"R-SEC-2 trusted", WithPolicy(context.Background(), PolicyTrusted), PolicyTrusted},
		{"R-SEC-2 tenant", WithPolicy(WithPolicy(context.Background(), PolicyTrusted), PolicyTenant), PolicyTenant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := PolicyFrom(tc.ctx); got != tc.want {
				t.Fatalf("PolicyFrom = %v, want %v", got, tc.want)
			}
		})
	}
	if PolicyFor(false, false) != PolicyTenant || PolicyFor(true, false) != PolicyTrusted || PolicyFor(false, true) != PolicyTrusted {
		t.Fatal("PolicyFor: managed and internal records are trusted, others not")
	}
}

// fakeResolver answers from a table, counting look-ups; an unknown name is
// an error, so no test ever asks real DNS. Answers may change between
// look-ups (DNS rebinding).
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	lookups map[string]int
}

func newFakeResolver(answers map[string][]string) *fakeResolver {
	r := &fakeResolver{answers: map[string][][]netip.Addr{}, lookups: map[string]int{}}
	for host, seq := range answers {
		for _, a := range seq {
			var one []netip.Addr
			for _, s := range strings.Split(a, ",") {
				one = append(one, netip.MustParseAddr(s))
			}
			r.answers[host] = append(r.answers[host], one)
		}
	}
	return r
}

func (r *fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	n := r.lookups[host]
	r.lookups[host]++
	if n >= len(seq) {
		n = len(seq) - 1
	}
	return seq[n], nil
}

func TestDialRefusesBeforeConnecting(t *testing.T) {
	t.Parallel()
	res := newFakeResolver(map[string][]string{
		"private.test":  {"10.0.0.1"},
		"metadata.test": {"169.254.169.254"},
		"mapped.test":   {"::ffff:10.0.0.1"},
		"mixed.test":    {"127.0.0.1,10.0.0.1"},
		"v6ll.test":     {"fe80::1"},
	})
	d := &Dialer{Resolver: res}
	for _, tc := range []struct {
		name, addr, ip string
		p              Policy
	}{
		{"R-SEC-2 name resolving to private", "private.test:443", "10.0.0.1", PolicyTenant},
		{"R-SEC-2 name resolving to metadata", "metadata.test:80", "169.254.169.254", PolicyTenant},
		{"R-SEC-2 name resolving to mapped private", "mapped.test:443", "::ffff:10.0.0.1", PolicyTenant},
		{"R-SEC-2 one private answer refuses the name", "mixed.test:443", "10.0.0.1", PolicyTenant},
		{"R-SEC-2 name resolving to link-local v6", "v6ll.test:443", "fe80::1", PolicyTenant},
		{"R-SEC-2 private literal", "10.0.0.1:443", "10.0.0.1", PolicyTenant},
		{"R-SEC-2 unspecified literal", "0.0.0.0:443", "0.0.0.0", PolicyTenant},
		{"R-SEC-2 unspecified literal trusted", "0.0.0.0:443", "0.0.0.0", PolicyTrusted},
		{"R-SEC-2 multicast literal trusted", "[ff02::1]:443", "ff02::1", PolicyTrusted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conn, err := d.DialContext(WithPolicy(context.Background(), tc.p), "tcp", tc.addr)
			if conn != nil {
				conn.Close()
				t.Fatal("dial succeeded")
			}
			var re *RefusedError
			if !errors.As(err, &re) || !errors.Is(err, ErrRefused) {
				t.Fatalf("dial error = %v, want *RefusedError wrapping ErrRefused", err)
			}
			if re.IP.String() != tc.ip {
				t.Fatalf("refused IP %s, want %s", re.IP, tc.ip)
			}
			if host, _, _ := net.SplitHostPort(tc.addr); re.Host != host {
				t.Fatalf("refused host %q, want %q", re.Host, host)
			}
		})
	}

	t.Run("R-SEC-2 unknown name is a resolve error, not a refusal", func(t *testing.T) {
		t.Parallel()
		_, err := d.DialContext(context.Background(), "tcp", "nowhere.test:443")
		var dnsErr *net.DNSError
		if err == nil || errors.Is(err, ErrRefused) || !errors.As(err, &dnsErr) {
			t.Fatalf("dial error = %v, want a DNS error", err)
		}
	})
	t.Run("R-SEC-2 udp is not dialled", func(t *testing.T) {
		t.Parallel()
		if _, err := d.DialContext(context.Background(), "udp", "127.0.0.1:53"); err == nil {
			t.Fatal("udp dial succeeded")
		}
	})
}

func TestControlChecksTheConnectedAddress(t *testing.T) {
	t.Parallel()
	// The Control hook is what the kernel's connect passes through; it is
	// called here directly with the addresses a rebinding attack would
	// produce, so nothing is connected.
	for _, tc := range []struct {
		name    string
		address string
		p       Policy
		refused bool
	}{
		{"R-SEC-2 loopback", "127.0.0.1:8080", PolicyTenant, false},
		{"R-SEC-2 private", "10.0.0.1:443", PolicyTenant, true},
		{"R-SEC-2 metadata", "169.254.169.254:80", PolicyTenant, true},
		{"R-SEC-2 mapped private", "[::ffff:10.0.0.1]:443", PolicyTenant, true},
		{"R-SEC-2 link-local v6 with zone", "[fe80::1%eth0]:443", PolicyTenant, true},
		{"R-SEC-2 private trusted", "10.0.0.1:443", PolicyTrusted, false},
		{"R-SEC-2 unspecified trusted", "0.0.0.0:443", PolicyTrusted, true},
		{"R-SEC-2 garbage", "not-an-address", PolicyTrusted, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := (&Dialer{}).control("rebind.test", tc.p)("tcp", tc.address, nil)
			if tc.refused != (err != nil) {
				t.Fatalf("control(%s) = %v, refused want %v", tc.address, err, tc.refused)
			}
			if err != nil && !errors.Is(err, ErrRefused) {
				t.Fatalf("control error %v does not wrap ErrRefused", err)
			}
		})
	}
}

func TestDialRebinding(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	// First answer loopback, then a private address: every dial is judged
	// on its own look-up, so the second is refused.
	res := newFakeResolver(map[string][]string{"rebind.test": {"127.0.0.1", "10.0.0.1"}})
	d := &Dialer{Resolver: res}
	conn, err := d.DialContext(context.Background(), "tcp", "rebind.test:"+port)
	if err != nil {
		t.Fatalf("R-SEC-2 first dial: %v", err)
	}
	conn.Close()
	if _, err := d.DialContext(context.Background(), "tcp", "rebind.test:"+port); !errors.Is(err, ErrRefused) {
		t.Fatalf("R-SEC-2 second dial = %v, want refused", err)
	}
}

func TestTransportLoopback(t *testing.T) {
	t.Parallel()
	var conns sync.Map // remote address -> seen
	var connCount atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello "+r.Host)
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			if _, dup := conns.LoadOrStore(c.RemoteAddr().String(), true); !dup {
				connCount.Add(1)
			}
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	res := newFakeResolver(map[string][]string{
		"upstream.test": {"127.0.0.1"},
		"evil.test":     {"10.0.0.1"},
	})
	tr := NewTransport(&Dialer{Resolver: res}, nil)
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}

	get := func(ctx context.Context, rawURL string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
		if err != nil {
			return "", err
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}

	tenant := context.Background()
	trusted := WithPolicy(context.Background(), PolicyTrusted)

	t.Run("R-SEC-2 loopback literal reachable by a tenant", func(t *testing.T) {
		if _, err := get(tenant, srv.URL); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("R-SEC-2 name resolving to loopback reachable", func(t *testing.T) {
		body, err := get(tenant, "http://upstream.test:"+port+"/")
		if err != nil {
			t.Fatal(err)
		}
		if body != "hello upstream.test:"+port {
			t.Fatalf("body %q", body)
		}
	})
	t.Run("R-SEC-2 trusted pool is separate", func(t *testing.T) {
		before := connCount.Load()
		if _, err := get(trusted, "http://upstream.test:"+port+"/"); err != nil {
			t.Fatal(err)
		}
		if connCount.Load() != before+1 {
			t.Fatal("a trusted request reused a tenant connection")
		}
		before = connCount.Load()
		if _, err := get(tenant, "http://upstream.test:"+port+"/"); err != nil {
			t.Fatal(err)
		}
		if connCount.Load() != before {
			t.Fatal("a tenant request did not reuse the tenant pool")
		}
	})
	t.Run("R-SEC-2 name resolving to private refused through http.Client", func(t *testing.T) {
		_, err := get(tenant, "https://evil.test/")
		var re *RefusedError
		var ue *url.Error
		if !errors.Is(err, ErrRefused) || !errors.As(err, &re) || !errors.As(err, &ue) {
			t.Fatalf("GET = %v, want a *url.Error wrapping *RefusedError", err)
		}
	})
	t.Run("R-SEC-2 fixed-policy dial function", func(t *testing.T) {
		c := &http.Client{Transport: &http.Transport{DialContext: DialContext(PolicyTenant)}}
		defer c.CloseIdleConnections()
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	})
}

func TestTransportLoopbackV6(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	tr := NewTransport(nil, nil)
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		t.Fatalf("R-SEC-2 ::1 through the guard: %v", err)
	}
	resp.Body.Close()
}

// TestConfigCheckAgreesWithDialCheckRSEC2 judges a table of addresses with
// the configuration check (rules.CheckURL, which the control plane and the
// edge compiler run) and with the dial-time check: they refuse the same
// addresses under the same ownership, since both read one list.
func TestConfigCheckAgreesWithDialCheckRSEC2(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{
		"127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1", "8.8.8.8", "2001:4860:4860::8888",
		"10.0.0.1", "172.16.0.1", "172.32.0.1", "192.168.1.1", "fc00::1", "fd00:ec2::254", "fec0::1",
		"169.254.169.254", "fe80::1", "100.64.0.1", "100.100.100.200", "100.127.255.255", "100.128.0.1",
		"168.63.129.16", "192.0.0.1", "198.18.0.1", "240.0.0.1", "255.255.255.255",
		"::ffff:10.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a00:1", "64:ff9b::7f00:1", "64:ff9b::808:808", "::a00:1",
		"0.0.0.0", "0.1.2.3", "::", "::ffff:0.0.0.0", "224.0.0.1", "ff02::1", "::ffff:224.0.0.1",
	} {
		ip := netip.MustParseAddr(addr)
		host := addr
		if ip.Is6() {
			host = "[" + addr + "]"
		}
		for _, p := range []Policy{PolicyTenant, PolicyTrusted} {
			dialRefused := CheckAddr(ip, p) != nil
			configRefused := false
			for _, pr := range rules.CheckURL("https://"+host+"/v1", p == PolicyTrusted) {
				if pr.Kind == rules.URLPrivateAddress {
					configRefused = true
				}
			}
			if dialRefused != configRefused {
				t.Errorf("%s under %s: dial check refuses: %v, config check refuses: %v", addr, p, dialRefused, configRefused)
			}
		}
	}
	for _, must := range []string{"100.100.100.200", "255.255.255.255", "169.254.169.254"} {
		if CheckAddr(netip.MustParseAddr(must), PolicyTenant) == nil {
			t.Errorf("%s is allowed to tenants", must)
		}
	}
}

// portOf is the port of a listener's address.
func portOf(t *testing.T, a net.Addr) uint16 {
	t.Helper()
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		t.Fatal(err)
	}
	return ap.Port()
}

// TestTenantLoopbackPortsRSEC2 dials real loopback servers: a tenant's
// record reaches only the ports the operator listed (never NATS's), a
// record cluster admins own reaches any, and the zero Dialer (nothing said)
// every port.
func TestTenantLoopbackPortsRSEC2(t *testing.T) {
	t.Parallel()
	open := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(open.Close)
	closed := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(closed.Close)
	openPort, closedPort := portOf(t, open.Listener.Addr()), portOf(t, closed.Listener.Addr())
	dial := func(d *Dialer, p Policy, port uint16) error {
		conn, err := d.DialContext(WithPolicy(context.Background(), p), "tcp", net.JoinHostPort("localhost", strconv.Itoa(int(port))))
		if err == nil {
			conn.Close()
		}
		return err
	}

	zero := &Dialer{Resolver: newFakeResolver(map[string][]string{"localhost": {"127.0.0.1"}})}
	if err := dial(zero, PolicyTenant, closedPort); err != nil {
		t.Errorf("zero Dialer: %v, want every loopback port", err)
	}

	d := &Dialer{Resolver: newFakeResolver(map[string][]string{"localhost": {"127.0.0.1"}})}
	d.SetTenantLoopback(rules.TenantLoopback{Ports: []uint16{openPort}})
	if err := dial(d, PolicyTenant, openPort); err != nil {
		t.Errorf("listed port: %v", err)
	}
	err := dial(d, PolicyTenant, closedPort)
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(re.Reason, "--tenant-loopback-ports") {
		t.Errorf("unlisted port: %v, want refused", err)
	}
	if err := dial(d, PolicyTrusted, closedPort); err != nil {
		t.Errorf("unlisted port on a trusted record: %v", err)
	}
	// The Control hook judges the port too (a resolver that lies).
	if err := d.control("x", PolicyTenant)("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(closedPort))), nil); !errors.Is(err, ErrRefused) {
		t.Errorf("control hook: %v, want refused", err)
	}
	if err := d.control("x", PolicyTenant)("tcp", net.JoinHostPort("::1", strconv.Itoa(int(closedPort))), nil); !errors.Is(err, ErrRefused) {
		t.Errorf("control hook ::1: %v, want refused", err)
	}

	// Every port (--dev), but never NATS's.
	d.SetTenantLoopback(rules.TenantLoopback{AllPorts: true, Never: []uint16{openPort}})
	if err := dial(d, PolicyTenant, closedPort); err != nil {
		t.Errorf("every port: %v", err)
	}
	if err := dial(d, PolicyTenant, openPort); !errors.Is(err, ErrRefused) {
		t.Errorf("NATS port: %v, want refused", err)
	}

	// No port at all.
	d.SetTenantLoopback(rules.TenantLoopback{})
	if err := dial(d, PolicyTenant, openPort); !errors.Is(err, ErrRefused) {
		t.Errorf("no port listed: %v, want refused", err)
	}
}

// TestOwnListenersRefusedRSEC2: no record, whoever owns it, reaches the
// edge's own listeners: one bound to an address at that address, one bound
// to every address at any loopback or own address with its port. The
// machine's own addresses count as loopback for tenant records.
func TestOwnListenersRefusedRSEC2(t *testing.T) {
	t.Parallel()
	d := &Dialer{InterfaceAddrs: func() ([]net.Addr, error) {
		return []net.Addr{
			&net.IPNet{IP: net.ParseIP("127.0.0.1"), Mask: net.CIDRMask(8, 32)},
			&net.IPNet{IP: net.ParseIP("203.0.113.9"), Mask: net.CIDRMask(24, 32)},
		}, nil
	}}
	if err := d.SetListeners(
		&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 9090},
		&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080},
	); err != nil {
		t.Fatal(err)
	}
	d.SetTenantLoopback(rules.TenantLoopback{AllPorts: true})
	for _, tc := range []struct {
		addr    string
		p       Policy
		refused bool
	}{
		{"127.0.0.1:9090", PolicyTenant, true},
		{"127.0.0.1:9090", PolicyTrusted, true},
		{"[::ffff:127.0.0.1]:9090", PolicyTrusted, true},
		{"127.0.0.2:9090", PolicyTrusted, false}, // not bound there
		{"127.0.0.1:8080", PolicyTrusted, true},
		{"127.0.0.53:8080", PolicyTenant, true},
		{"[::1]:8080", PolicyTrusted, true},
		{"203.0.113.9:8080", PolicyTrusted, true},
		{"203.0.113.9:8080", PolicyTenant, true},
		{"203.0.113.9:8000", PolicyTrusted, false},
		{"203.0.113.10:8080", PolicyTrusted, false}, // another machine
		{"127.0.0.1:8000", PolicyTenant, false},
	} {
		err := d.control("h", tc.p)("tcp", tc.addr, nil)
		if tc.refused != (err != nil) {
			t.Errorf("%s under %s: %v, refused want %v", tc.addr, tc.p, err, tc.refused)
		}
	}
	// The machine's own public address counts as loopback for tenants.
	d.SetTenantLoopback(rules.TenantLoopback{Ports: []uint16{8000}})
	if err := d.control("h", PolicyTenant)("tcp", "203.0.113.9:5432", nil); !errors.Is(err, ErrRefused) {
		t.Errorf("own address, unlisted port: %v, want refused", err)
	}
	if err := d.control("h", PolicyTenant)("tcp", "203.0.113.9:8000", nil); err != nil {
		t.Errorf("own address, listed port: %v", err)
	}
}
