package gateway

import (
	"encoding/json"
	"net/http"
	"sync"

	"weir.dev/routing"
)

// LocalBudgets enforces budgets from this edge's own ledgers, each starting
// at the budget's limit less what the snapshot says was spent. It is the
// standalone mode's enforcement; with a control plane, leases replace it.
type LocalBudgets struct {
	mu      sync.Mutex
	ledgers map[string]*routing.Ledger
}

// NewLocalBudgets returns budgets with no ledger yet.
func NewLocalBudgets() *LocalBudgets { return &LocalBudgets{ledgers: map[string]*routing.Ledger{}} }

// Reserve implements Budgets: the same amount is reserved against every
// budget of the tenant and of the key (R-COST-1), all or none.
func (b *LocalBudgets) Reserve(t *routing.Table, k *routing.Key, amount routing.Nanos) (func(routing.Nanos), *routing.Error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var held []*routing.Ledger
	for _, ref := range t.Budgets {
		if ref.KeyID != "" && (k == nil || ref.KeyID != k.ID) {
			continue
		}
		l := b.ledgers[ref.ID]
		if l == nil {
			l = &routing.Ledger{Available: ref.Limit}
			b.ledgers[ref.ID] = l
		}
		if err := l.Reserve(amount); err != nil {
			for _, h := range held {
				h.Reserved -= amount
			}
			return nil, err
		}
		held = append(held, l)
	}
	if len(held) == 0 {
		return settleNothing, nil // no budget applies: nothing to settle
	}
	var once sync.Once
	return func(cost routing.Nanos) {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			for _, l := range held {
				l.Settle(amount, cost)
			}
		})
	}, nil
}

func settleNothing(routing.Nanos) {}

// Spent returns what a budget spent on this edge.
func (b *LocalBudgets) Spent(budgetID string) routing.Nanos {
	b.mu.Lock()
	defer b.mu.Unlock()
	if l := b.ledgers[budgetID]; l != nil {
		return l.Spent
	}
	return 0
}

// LocalAffinity is this edge's own memory of jobs' last members, bounded:
// when full, an arbitrary half is forgotten (a forgotten job falls back to
// rendezvous hashing, R-STICK-3, which most often picks the same member).
type LocalAffinity struct {
	mu  sync.Mutex
	max int
	m   map[string]affinityEntry
}

type affinityEntry struct {
	member string
	cached int64
}

// NewLocalAffinity keeps at most max jobs.
func NewLocalAffinity(max int) *LocalAffinity {
	return &LocalAffinity{max: max, m: map[string]affinityEntry{}}
}

// Get implements Affinity.
func (a *LocalAffinity) Get(tenantID, jobHash string) (string, int64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.m[tenantID+"."+jobHash]
	return e.member, e.cached, ok
}

// Put implements Affinity.
func (a *LocalAffinity) Put(tenantID, jobHash, memberID string, cached int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.m) >= a.max {
		n := 0
		for k := range a.m {
			delete(a.m, k)
			if n++; n >= a.max/2 {
				break
			}
		}
	}
	a.m[tenantID+"."+jobHash] = affinityEntry{memberID, cached}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
