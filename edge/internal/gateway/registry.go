// Package gateway is the edge's HTTP data plane: it authenticates callers,
// routes each call with the routing core, runs the attempt loop against the
// providers through the wire adapters, relays answers (streamed or not) and
// writes the gateway's own errors in the caller's API format.
package gateway

import (
	"crypto/sha256"
	"sync/atomic"

	"weir.dev/routing"
)

// Registry maps API keys to tenants' routing tables. Tables are swapped in
// whole and atomically; readers never lock.
type Registry struct {
	v atomic.Pointer[index]
}

type index struct {
	byKey    map[[32]byte]*routing.Table
	byTenant map[string]*routing.Table
	revoked  map[[32]byte]bool
	// installed: Set or Put has run (Ready).
	installed bool
}

// NewRegistry returns an empty registry (no key is valid), not ready.
func NewRegistry() *Registry {
	r := &Registry{}
	r.v.Store(&index{byKey: map[[32]byte]*routing.Table{}, byTenant: map[string]*routing.Table{}, revoked: map[[32]byte]bool{}})
	return r
}

// Set installs a whole config — the tables of every tenant, replacing all
// others — at once. A config with no tenant is a config too: after Set, even
// Set(nil), the registry is ready.
func (r *Registry) Set(tables []*routing.Table) {
	old := r.v.Load()
	ix := &index{byKey: map[[32]byte]*routing.Table{}, byTenant: map[string]*routing.Table{}, revoked: old.revoked, installed: true}
	for _, t := range tables {
		ix.byTenant[t.TenantID] = t
		for _, h := range t.KeyHashes() {
			ix.byKey[h] = t
		}
	}
	r.v.Store(ix)
}

// Put installs or replaces one tenant's table; the registry is then ready.
func (r *Registry) Put(t *routing.Table) {
	for {
		old := r.v.Load()
		ix := &index{byKey: make(map[[32]byte]*routing.Table, len(old.byKey)), byTenant: make(map[string]*routing.Table, len(old.byTenant)),
			revoked: old.revoked, installed: true}
		for h, tt := range old.byKey {
			if tt.TenantID != t.TenantID {
				ix.byKey[h] = tt
			}
		}
		for id, tt := range old.byTenant {
			ix.byTenant[id] = tt
		}
		ix.byTenant[t.TenantID] = t
		for _, h := range t.KeyHashes() {
			ix.byKey[h] = t
		}
		if r.v.CompareAndSwap(old, ix) {
			return
		}
	}
}

// Revoke refuses a key at once on this edge, before the tenant's next
// snapshot says so (an operator command).
func (r *Registry) Revoke(sum [32]byte) {
	for {
		old := r.v.Load()
		rev := make(map[[32]byte]bool, len(old.revoked)+1)
		for h := range old.revoked {
			rev[h] = true
		}
		rev[sum] = true
		ix := &index{byKey: old.byKey, byTenant: old.byTenant, revoked: rev, installed: old.installed}
		if r.v.CompareAndSwap(old, ix) {
			return
		}
	}
}

// Lookup returns the table and key for a presented API key, or nils.
func (r *Registry) Lookup(apiKey string) (*routing.Table, *routing.Key) {
	sum := sha256.Sum256([]byte(apiKey))
	ix := r.v.Load()
	if ix.revoked[sum] {
		return nil, nil
	}
	t := ix.byKey[sum]
	if t == nil {
		return nil, nil
	}
	k := t.Key(sum)
	if k == nil {
		return nil, nil
	}
	return t, k
}

// Tenant returns a tenant's table, or nil.
func (r *Registry) Tenant(id string) *routing.Table { return r.v.Load().byTenant[id] }

// Tables lists every tenant's table.
func (r *Registry) Tables() []*routing.Table {
	ix := r.v.Load()
	out := make([]*routing.Table, 0, len(ix.byTenant))
	for _, t := range ix.byTenant {
		out = append(out, t)
	}
	return out
}

// Ready reports whether a config has been installed (Set or Put), even
// one without any tenant: the gateway then answers every call as that
// config says (GET /readyz is 200). A registry nothing was installed into
// is not ready (503): it would refuse every key only for lack of a config.
func (r *Registry) Ready() bool { return r.v.Load().installed }
