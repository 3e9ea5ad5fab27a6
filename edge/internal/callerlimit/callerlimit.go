// Package callerlimit enforces the caller limits of tenants and API keys on
// one edge (ROUTING.md R-CAP-2): how many calls may start per minute (rpm)
// and how many may be in flight at once (max_in_flight).
//
// The limits are cluster-wide. An edge enforces its share of each, the
// limit divided by the number of live edges, rounded up, and never less
// than 1 for a limit that is set (R-HEAD-7; routing.Share, the one rule
// for every shared limit). The live-edge count is read on every Acquire,
// so a share follows the cluster as it grows and shrinks; a standalone
// edge (count 1) enforces the whole limit.
//
// rpm is a token bucket (golang.org/x/time/rate): it holds at most the
// edge's share of tokens (the burst) and refills at share/60 tokens per
// second. So a caller idle for a minute may start its whole share at once,
// and no more than about share calls start in any minute after that. We
// chose a bucket over a fixed per-minute window because a window lets twice
// the limit through around its boundary and makes every refused caller
// retry at the same instant; the bucket's refusals name the exact time the
// next token arrives. A refused call takes no token.
//
// max_in_flight counts the calls that acquired a Slot and have not released
// it; the gateway holds the slot until the call's answer ends or is cut.
//
// Memory is bounded by what callers use: an entry exists only for a tenant
// (or a key with limits) that Acquire was called with, i.e. one of an
// installed routing table, and an entry with nothing in flight and unused
// for IdleAfter is dropped. A bucket idle that long is full again, so
// dropping it loses nothing. Entries are swept from Acquire at most once
// per sweepEvery.
package callerlimit

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	"weir.dev/routing"
)

// Limit names the limit that refused a call. Its String is the value of
// the limit label of weir_caller_limited_total.
type Limit uint8

const (
	TenantRPM Limit = iota + 1
	TenantMaxInFlight
	KeyRPM
	KeyMaxInFlight
)

func (l Limit) String() string {
	switch l {
	case TenantRPM:
		return "tenant_rpm"
	case TenantMaxInFlight:
		return "tenant_max_in_flight"
	case KeyRPM:
		return "key_rpm"
	case KeyMaxInFlight:
		return "key_max_in_flight"
	}
	return "unknown"
}

// keyLimit maps a limit check reports (as the tenant's) to the key's.
func keyLimit(l Limit) Limit {
	if l == TenantRPM {
		return KeyRPM
	}
	return KeyMaxInFlight
}

// Tenant reports whether the limit is the tenant's (else the key's).
func (l Limit) Tenant() bool { return l == TenantRPM || l == TenantMaxInFlight }

// Refusal says why a call may not start now.
type Refusal struct {
	Limit Limit
	// RetryAfter is when a call would fit: for rpm the time until the
	// bucket holds a token again, for max_in_flight one second (when a
	// slot frees cannot be known). Always positive.
	RetryAfter time.Duration
	// Share is this edge's share of the limit that refused.
	Share int64
}

const (
	// IdleAfter is how long an entry with nothing in flight is kept unused.
	// It is the time an emptied bucket takes to fill up again.
	IdleAfter = time.Minute
	// inFlightRetry is the Retry-After of a max_in_flight refusal.
	inFlightRetry = time.Second
	// sweepEvery is how often Acquire drops idle entries.
	sweepEvery = 10 * time.Second
)

// Limiter holds the state of every tenant and key limited on this edge. It
// is safe for concurrent use.
type Limiter struct {
	liveEdges func() int
	now       func() time.Time

	mu        sync.Mutex
	tenants   map[string]*entry
	keys      map[keyRef]*entry
	lastSweep time.Time
}

type keyRef struct{ tenant, key string }

// entry is one tenant's or key's state. Guarded by Limiter.mu.
type entry struct {
	// limits and edges are what the shares were computed from.
	limits             routing.CallerLimits
	edges              int
	rpmShare, mifShare int64
	bucket             *rate.Limiter // nil when there is no rpm limit
	inFlight           int64
	last               time.Time
}

// New returns a limiter. liveEdges counts the live edges (nil: always 1,
// a standalone edge); now is the clock (nil: time.Now).
func New(liveEdges func() int, now func() time.Time) *Limiter {
	if liveEdges == nil {
		liveEdges = func() int { return 1 }
	}
	if now == nil {
		now = time.Now
	}
	return &Limiter{liveEdges: liveEdges, now: now, tenants: map[string]*entry{}, keys: map[keyRef]*entry{}}
}

// Slot is an admitted call's hold on its tenant's and key's in-flight
// counts. Release it exactly once, when the call's answer has ended or was
// cut. The zero Slot holds nothing; its Release does nothing.
type Slot struct {
	l           *Limiter
	tenant, key *entry
}

// Acquire admits a call of key k (nil: none) of tenant table t, or refuses
// it. The tenant's limits are checked first, then the key's; nothing is
// taken unless every check passes, so a refusal by the key leaves the
// tenant's bucket and in-flight count as they were. Within one tenant or
// key, rpm is checked before max_in_flight (its Retry-After is the longer).
//
// Acquire and Release each run one short critical section and allocate
// nothing once the entries exist (a Refusal is allocated).
func (l *Limiter) Acquire(t *routing.Table, k *routing.Key) (Slot, *Refusal) {
	now := l.now()
	edges := l.liveEdges()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) >= sweepEvery {
		l.sweep(now)
	}
	var te, ke *entry
	if t.Limits != (routing.CallerLimits{}) {
		te = l.tenants[t.TenantID]
		if te == nil {
			te = &entry{}
			l.tenants[t.TenantID] = te
		}
		te.update(t.Limits, edges, now)
		if lim, wait, share := te.check(now); lim != 0 {
			return Slot{}, &Refusal{Limit: lim, RetryAfter: wait, Share: share}
		}
	}
	if k != nil && k.Limits != (routing.CallerLimits{}) {
		ref := keyRef{t.TenantID, k.ID}
		ke = l.keys[ref]
		if ke == nil {
			ke = &entry{}
			l.keys[ref] = ke
		}
		ke.update(k.Limits, edges, now)
		if lim, wait, share := ke.check(now); lim != 0 {
			return Slot{}, &Refusal{Limit: keyLimit(lim), RetryAfter: wait, Share: share}
		}
	}
	te.take(now)
	ke.take(now)
	return Slot{l: l, tenant: te, key: ke}, nil
}

// Release gives the slot's in-flight counts back.
func (s Slot) Release() {
	if s.l == nil {
		return
	}
	now := s.l.now()
	s.l.mu.Lock()
	s.tenant.release(now)
	s.key.release(now)
	s.l.mu.Unlock()
}

// update recomputes the entry's shares when its limits or the live-edge
// count changed, adjusting the bucket in place.
func (e *entry) update(limits routing.CallerLimits, edges int, now time.Time) {
	if e.limits == limits && e.edges == edges {
		return
	}
	e.limits, e.edges = limits, edges
	e.mifShare = routing.Share(limits.MaxInFlight, edges)
	rpm := routing.Share(limits.RPM, edges)
	switch {
	case rpm == 0:
		e.bucket = nil
	case e.bucket == nil:
		e.bucket = rate.NewLimiter(perMinute(rpm), int(rpm)) // starts full
	case rpm != e.rpmShare:
		e.bucket.SetLimitAt(now, perMinute(rpm))
		e.bucket.SetBurstAt(now, int(rpm))
	}
	e.rpmShare = rpm
}

func perMinute(n int64) rate.Limit { return rate.Limit(float64(n) / 60) }

// check reports the entry's limit that a call would break now (0 for none:
// the call fits), how long until it would fit, and the share broken, as
// tenant limits; the caller maps them to the key's. It takes nothing.
func (e *entry) check(now time.Time) (Limit, time.Duration, int64) {
	e.last = now
	if e.bucket != nil {
		if tokens := e.bucket.TokensAt(now); tokens < 1 {
			wait := time.Duration((1 - tokens) / float64(e.bucket.Limit()) * float64(time.Second))
			return TenantRPM, max(wait, time.Nanosecond), e.rpmShare
		}
	}
	if e.mifShare > 0 && e.inFlight >= e.mifShare {
		return TenantMaxInFlight, inFlightRetry, e.mifShare
	}
	return 0, 0, 0
}

// take counts a call admitted after check found it fits.
func (e *entry) take(now time.Time) {
	if e == nil {
		return
	}
	if e.bucket != nil {
		e.bucket.AllowN(now, 1)
	}
	e.inFlight++
	e.last = now
}

func (e *entry) release(now time.Time) {
	if e == nil {
		return
	}
	e.inFlight--
	e.last = now
}

// sweep drops entries with nothing in flight unused for IdleAfter. Caller
// holds mu.
func (l *Limiter) sweep(now time.Time) {
	l.lastSweep = now
	for id, e := range l.tenants {
		if e.idle(now) {
			delete(l.tenants, id)
		}
	}
	for id, e := range l.keys {
		if e.idle(now) {
			delete(l.keys, id)
		}
	}
}

func (e *entry) idle(now time.Time) bool { return e.inFlight <= 0 && now.Sub(e.last) >= IdleAfter }

// Len reports how many tenant and key entries the limiter holds.
func (l *Limiter) Len() (tenants, keys int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tenants), len(l.keys)
}

// InFlight reports the calls in flight of a tenant, and of one of its keys
// when keyID is not "" (0 for one without an entry).
func (l *Limiter) InFlight(tenantID, keyID string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var e *entry
	if keyID == "" {
		e = l.tenants[tenantID]
	} else {
		e = l.keys[keyRef{tenantID, keyID}]
	}
	if e == nil {
		return 0
	}
	return e.inFlight
}
