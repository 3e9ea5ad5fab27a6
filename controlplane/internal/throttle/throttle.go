// Package throttle slows down repeated authentication failures from one
// client address (DESIGN §5): failed admin-token checks on the admin API and
// failed console sign-ins.
//
// Each address has a token bucket of failures (golang.org/x/time/rate):
// Burst failures are free, then one more is allowed per Every. While an
// address has no failure left, Wait says how long to wait and callers
// refuse its requests before checking any token (429 / ResourceExhausted
// with Retry-After), so a guessing client costs no database work. Other
// addresses are not affected. Memory is bounded: at most MaxAddrs
// addresses are tracked, the least recently seen dropped first.
//
// The address is the TCP peer (http.Request.RemoteAddr) without its port;
// IPv6 peers are grouped by /64, the block one client usually holds.
// X-Forwarded-For is never read: behind a proxy every client shares the
// proxy's bucket.
package throttle

import (
	"container/list"
	"math"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of New's zero values.
const (
	DefaultBurst    = 5
	DefaultEvery    = time.Second
	DefaultMaxAddrs = 10000
)

// Limiter tracks failures per address. It is safe for concurrent use.
type Limiter struct {
	burst int
	every rate.Limit
	max   int
	now   func() time.Time

	mu    sync.Mutex
	addrs map[string]*list.Element // of *entry
	lru   *list.List               // front: most recently seen
}

type entry struct {
	key string
	lim *rate.Limiter
}

// Config sets a Limiter's bucket; zero fields take the defaults. Now is the
// clock (nil: time.Now).
type Config struct {
	Burst    int
	Every    time.Duration
	MaxAddrs int
	Now      func() time.Time
}

// New returns a Limiter.
func New(c Config) *Limiter {
	if c.Burst <= 0 {
		c.Burst = DefaultBurst
	}
	if c.Every <= 0 {
		c.Every = DefaultEvery
	}
	if c.MaxAddrs <= 0 {
		c.MaxAddrs = DefaultMaxAddrs
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Limiter{burst: c.Burst, every: rate.Every(c.Every), max: c.MaxAddrs, now: c.Now,
		addrs: map[string]*list.Element{}, lru: list.New()}
}

// Key is the bucket of a remote address ("host:port" or a bare host): the
// IP for IPv4, its /64 for IPv6, the text itself when it is not an IP.
func Key(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// Wait returns 0 when the address may try to authenticate now, else how
// long until it may (at least one second, whole seconds, for Retry-After).
// It records nothing.
func (l *Limiter) Wait(remoteAddr string) time.Duration {
	k := Key(remoteAddr)
	l.mu.Lock()
	defer l.mu.Unlock()
	el, ok := l.addrs[k]
	if !ok {
		return 0
	}
	tokens := el.Value.(*entry).lim.TokensAt(l.now())
	if tokens >= 1 {
		return 0
	}
	secs := math.Ceil((1 - tokens) / float64(l.every))
	return time.Duration(max(secs, 1)) * time.Second
}

// Fail records a failed attempt from the address.
func (l *Limiter) Fail(remoteAddr string) {
	k := Key(remoteAddr)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	el, ok := l.addrs[k]
	if ok {
		l.lru.MoveToFront(el)
	} else {
		for l.lru.Len() >= l.max {
			old := l.lru.Back()
			l.lru.Remove(old)
			delete(l.addrs, old.Value.(*entry).key)
		}
		el = l.lru.PushFront(&entry{key: k, lim: rate.NewLimiter(l.every, l.burst)})
		l.addrs[k] = el
	}
	el.Value.(*entry).lim.AllowN(now, 1)
}

// Len is the number of addresses tracked.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lru.Len()
}
