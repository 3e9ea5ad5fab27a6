package routing

import (
	"sort"
)

// Table is the immutable routing table of one tenant: its own records and
// the managed records enabled for it, indexed by model. Build it with
// NewTable; never change it afterwards (edges swap whole tables).
type Table struct {
	TenantID   string
	TenantName string
	Rules      DataRules
	Records    []*Record
	keys       map[[32]byte]*Key
	byName     map[string]*Record
	byModel    map[string][]*Record
	members    map[string]*Member
	// Budgets apply to calls of this tenant (R-COST-1).
	Budgets []BudgetRef
	// Limits are the tenant's caller limits (R-CAP-2), defaults applied:
	// MaxInFlight is never 0 in a compiled table.
	Limits CallerLimits
	// Version is the snapshot version the table was compiled from.
	Version uint64
}

// BudgetRef names a budget that applies to the tenant, or to one key.
type BudgetRef struct {
	ID    string
	Name  string
	KeyID string // "" = every call of the tenant
	Limit Nanos
}

// KeyEntry pairs a key's SHA-256 with the key.
type KeyEntry struct {
	SHA256 [32]byte
	Key    *Key
}

// NewTable indexes records and keys. Records must already be validated and
// their members resolved (see the compile package).
func NewTable(tenantID, tenantName string, rules DataRules, records []*Record, keys []KeyEntry) *Table {
	t := &Table{
		TenantID:   tenantID,
		TenantName: tenantName,
		Rules:      rules,
		Records:    records,
		keys:       make(map[[32]byte]*Key, len(keys)),
		byName:     make(map[string]*Record, len(records)),
		byModel:    map[string][]*Record{},
		members:    map[string]*Member{},
	}
	for _, k := range keys {
		t.keys[k.SHA256] = k.Key
	}
	for _, r := range records {
		if _, dup := t.byName[r.Name]; !dup {
			t.byName[r.Name] = r
		}
		for m := range r.Models {
			t.byModel[m] = append(t.byModel[m], r)
		}
		for _, m := range r.Members {
			t.members[m.ID] = m
		}
	}
	return t
}

// Key returns the key with this SHA-256, or nil when unknown or revoked.
func (t *Table) Key(sum [32]byte) *Key {
	k := t.keys[sum]
	if k == nil || k.Revoked {
		return nil
	}
	return k
}

// Record returns the record with this name, or nil.
func (t *Table) Record(name string) *Record { return t.byName[name] }

// Member returns the member with this ID ("<record id>/<name>"), or nil.
func (t *Table) Member(id string) *Member { return t.members[id] }

// Models lists, once each and sorted, every model the key may call on any
// endpoint (R-MODEL-6).
func (t *Table) Models(k *Key) []string {
	seen := map[string]bool{}
	for model, recs := range t.byModel {
		if len(k.AllowedModels) > 0 && !k.AllowedModels[model] {
			continue
		}
		for _, r := range recs {
			if keyAllowsRecord(k, r) {
				seen[model] = true
				break
			}
		}
	}
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// KeyHashes lists the SHA-256 of every key of the table that is not revoked,
// for an edge-wide key index.
func (t *Table) KeyHashes() [][32]byte {
	out := make([][32]byte, 0, len(t.keys))
	for h, k := range t.keys {
		if !k.Revoked {
			out = append(out, h)
		}
	}
	return out
}
