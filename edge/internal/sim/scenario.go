package sim

import (
	"fmt"
	"time"

	"weir.dev/routing"
)

// Model is the one model every simulated pool serves.
const Model = "sim-model"

// MemberSpec is one simulated pool member: its provider-side limits and
// behaviour, and the weight the pool's config gives it.
type MemberSpec struct {
	Name string
	// RPM and TPM are the member's real limits: requests and tokens
	// (prompt plus output) per minute.
	RPM, TPM int64
	// Weight is the member's configured weight.
	Weight uint32
	// Retry is how its 429 answers name the wait.
	Retry RetryStyle
	// SpentAfter, when positive, is how long into the run the member's
	// quota runs out; from then on it answers every call with a 429
	// insufficient_quota.
	SpentAfter time.Duration
}

// Scenario is one pool and one level of demand.
type Scenario struct {
	// ID names the scenario on the command line.
	ID string
	// Title heads its table.
	Title string
	// Wire is the pool's wire format; it decides the members' headers.
	Wire routing.WireFormat
	// Demand is the offered load as a multiple of Capacity.
	Demand  float64
	Members []MemberSpec
	// ServerErrorRate is the share of admitted attempts a member answers
	// with a 5xx (500, 503, or 529 on anthropic).
	ServerErrorRate float64
	// Shared, when set, makes this a run of several edges sharing one
	// pool (R-HEAD-7) instead of one edge against baselines; Demand,
	// Members and ServerErrorRate are then unused.
	Shared *SharedSpec
}

// Capacity is the pool's tokens per minute, counting only members whose
// quota lasts the whole run: the load the pool can carry for good.
func (s *Scenario) Capacity() int64 {
	var c int64
	for _, m := range s.Members {
		if m.SpentAfter <= 0 {
			c += m.TPM
		}
	}
	return c
}

// Scenarios returns the scenarios `make sim` runs, in order.
func Scenarios() []Scenario {
	const errRate = 0.01
	equal := func(n int, tpm, rpm int64) []MemberSpec {
		out := make([]MemberSpec, n)
		for i := range out {
			out[i] = MemberSpec{Name: fmt.Sprintf("m%d", i+1), RPM: rpm, TPM: tpm, Weight: 1, Retry: RetryStyle(i % 3)}
		}
		return out
	}
	uneven := []MemberSpec{
		{Name: "east", RPM: 150, TPM: 600_000, Weight: 3, Retry: RetrySeconds},
		{Name: "west", RPM: 100, TPM: 400_000, Weight: 2, Retry: RetryMillis},
		{Name: "eu", RPM: 50, TPM: 200_000, Weight: 1, Retry: RetryNone},
	}
	spent := equal(4, 400_000, 100)
	spent[3].SpentAfter = 2 * time.Minute
	mixed := []MemberSpec{
		{Name: "big", RPM: 200, TPM: 800_000, Weight: 1, Retry: RetrySeconds},
		{Name: "mid", RPM: 100, TPM: 400_000, Weight: 1, Retry: RetryMillis},
		{Name: "small-a", RPM: 50, TPM: 200_000, Weight: 1, Retry: RetryNone},
		{Name: "small-b", RPM: 50, TPM: 200_000, Weight: 1, Retry: RetrySeconds},
	}
	return []Scenario{
		{ID: "0.5x-equal", Title: "0.5x equal members", Wire: routing.WireOpenAI, Demand: 0.5, Members: equal(4, 400_000, 100), ServerErrorRate: errRate},
		{ID: "0.9x-uneven", Title: "0.9x uneven weights", Wire: routing.WireAnthropic, Demand: 0.9, Members: uneven, ServerErrorRate: errRate},
		{ID: "0.8x-mixed", Title: "0.8x different capacities, equal weights", Wire: routing.WireOpenAI, Demand: 0.8, Members: mixed, ServerErrorRate: errRate},
		{ID: "1.0x-spent", Title: "1.0x one member spent", Wire: routing.WireOpenAI, Demand: 1.0, Members: spent, ServerErrorRate: errRate},
		{ID: "1.5x", Title: "1.5x overload", Wire: routing.WireOpenAI, Demand: 1.5, Members: equal(4, 400_000, 100), ServerErrorRate: errRate},
		{ID: "2.0x", Title: "2.0x overload, uneven weights", Wire: routing.WireAnthropic, Demand: 2.0, Members: uneven, ServerErrorRate: errRate},
		{ID: "two-edges-shared", Title: "Two edges sharing one member's declared limits (R-HEAD-7)", Wire: routing.WireOpenAI,
			Shared: &SharedSpec{Edges: 2, RPM: 60, MaxInFlight: 4, Weight: 100, PerEdgeRPM: 120,
				MinLatency: time.Second, MaxLatency: 3 * time.Second}},
	}
}

// prices are the per-million-token prices of a wire format's members, in
// micro-dollars: an OpenAI-style model with half-price cache reads and no
// cache writes, and an Anthropic-style model with 10 % cache reads and
// 125 % cache writes.
func prices(w routing.WireFormat) routing.Price {
	if w == routing.WireAnthropic {
		return routing.Price{Input: 3_000_000, Output: 15_000_000, CacheRead: 300_000, CacheWrite: 3_750_000,
			HasInput: true, HasOutput: true, HasCacheRead: true, HasCacheWrite: true}
	}
	return routing.Price{Input: 2_000_000, Output: 8_000_000, CacheRead: 500_000,
		HasInput: true, HasOutput: true, HasCacheRead: true}
}

// recordID is the pool record's id in every simulated table.
const recordID = "rec-pool"

// Table builds the routing table of a scenario's pool straight from routing
// types: one pool record serving Model, one member per MemberSpec with the
// ROUTING.md defaults (DefaultRecovery, so max_wait is 0), its weight, tier
// 1, its own account and no declared limits: Weir learns them from headers.
func (s *Scenario) Table() *routing.Table {
	rec := &routing.Record{
		ID: recordID, Name: "pool", TenantID: "tenant-sim", Wire: s.Wire,
		Models: map[string]routing.ModelKind{Model: routing.KindChat}, Pool: true,
		Recovery: routing.DefaultRecovery(), DefaultMaxOutput: routing.DefaultMaxOutput,
		CreatedAt: epoch(),
	}
	p := prices(s.Wire)
	for i, ms := range s.Members {
		m := &routing.Member{
			ID: recordID + "/" + ms.Name, Name: ms.Name, Record: rec, Index: i,
			BaseURL:   "https://" + ms.Name + ".sim.invalid",
			Auth:      routing.Auth{Kind: routing.AuthAPIKey},
			KeySecret: "sim-key-" + ms.Name,
			Prices:    map[string]routing.Price{Model: p},
			Weight:    ms.Weight, Order: 1,
		}
		m.Account = "secret:" + m.KeySecret
		rec.Members = append(rec.Members, m)
	}
	return routing.NewTable("tenant-sim", "sim", routing.DataRules{}, []*routing.Record{rec}, nil)
}

// endpoint is the caller-facing endpoint of a pool's wire format.
func (s *Scenario) endpoint() routing.Endpoint {
	if s.Wire == routing.WireAnthropic {
		return routing.EndpointMessages
	}
	return routing.EndpointChatCompletions
}

// epoch is the virtual clock's start; any fixed instant will do.
func epoch() time.Time { return time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC) }
