// Package distrib is the control plane's side of distribution over NATS
// JetStream (DESIGN.md §1, §4; issue 6): config snapshots out to the edges,
// call records, member views and lease requests back in, operator commands
// out. Every name on the wire is in names.go; the edge's twin is
// edge/internal/distrib.
//
// Parts (each has a Run(ctx) loop that retries its own failures, so that a
// control plane keeps serving its admin API while NATS or Postgres is
// away; Distributor runs them all):
//
//   - Publisher drains the config outbox into KV WEIR_CONFIG
//     ("tenant.<id>", "cluster"), polls every 100 ms, resyncs every 30 s and
//     reconciles at start. Outbox rows are claimed FOR UPDATE SKIP LOCKED and
//     marked published in the same transaction after the put, so a crash
//     between a change's commit and its publication loses nothing; every put
//     is a compare-and-set that only moves a key's snapshot version forward.
//     Every value is a weir.config.v1.Signed envelope (Signer, Ed25519
//     over the key and the payload); a tenant that no longer exists gets a
//     signed tombstone (an empty payload). RunRepair watches the bucket and
//     republishes at once any entry this control plane did not sign,
//     whatever version it claims.
//   - Ingest consumes stream WEIR_USAGE with a durable pull consumer, writes
//     calls and attempts idempotently (primary key = call id) and settles
//     budgets for exactly the newly inserted calls, one transaction per
//     batch, acking only after commit. A record on another tenant's
//     subject, or naming a key that is not its tenant's, is dropped: never
//     stored nor billed.
//   - LeaseServer answers weir.lease.request with budget leases.
//   - ViewMirror copies WEIR_VIEWS into member_views and edges, which the
//     admin API reads.
//   - Janitor closes leases that no longer count and deletes old rows.
//   - Commander publishes weir.cmd.reset (provider.Resetter) and
//     weir.cmd.revoke (admin.Revoker), signed like snapshots.
//
// # Budget leases and the overspend bound
//
// Edges enforce budgets without a round trip per call (R-COST-1/2): an edge
// asks for a lease on a budget, reserves each call's cost against what the
// lease holds, settles it at the real cost when the call ends, and gives
// the lease back (lease_id and returned_nanos, the part it never used)
// when the lease runs out or expires, usually in the same request that asks
// for the next one. For one budget at the time of a grant, let
//
//	S = spent_nanos, the spend settled by ingest;
//	A = the sum of the grants of active leases: not yet returned, and not
//	    expired for more than ReclaimAfter (default 11 min);
//	R = the sum of what returned leases used (grant - returned), for those
//	    returned within the last SettleLag (default 30 s).
//
// A grant is at most limit - S - A - R (and at most max(that / (2 × edges
// holding leases), MinSlice, want)), computed under a lock on the budget's
// row, so grants of one budget never race. Hence at every grant
// S + A + R ≤ limit.
//
// The edge's part of the contract:
//
//  1. it reserves against a lease only before the lease expires, and never
//     more in total than the lease holds (settling a call returns the
//     unused part of its reservation to the lease);
//  2. it returns a lease only after every call reserved against it has
//     finished and its call record was published (acked by the stream or
//     in the spool);
//
// and the operational assumption:
//
//  3. a published call record is settled within SettleLag of its lease's
//     return, and the calls of a lease that is never returned are settled
//     within ReclaimAfter of its expiry.
//
// Bound. The final spend of a budget is at most
//
//	limit + X + L
//
// where X is the sum over calls of max(0, cost - reservation) (settlement
// excess: R-COST-1 reserves at the highest price and the output cap, so X
// comes only from estimates such as an unknown outcome's input cost or
// uncapped cache writes), and L is the spend under leases whose calls
// broke assumption 3 (settled later than the lag allowed, e.g. records held
// in an edge's spool through a long NATS outage). Under the assumptions,
// L = 0 and the overspend is at most X.
//
// Proof sketch: every call is reserved against one lease (1), so the spend
// not yet in S at the last grant is spend under leases that exist then. An
// active lease's calls cost at most its grant plus their excess (1), and it
// is counted in A at its grant. A returned lease's calls cost at most what
// it used plus their excess (2); within SettleLag it is counted in R at
// that amount, and after SettleLag its calls are in S (3). A lease expired
// for more than ReclaimAfter has its calls in S (3). The new grant is
// counted in full. So the final spend is at most S + A + R + grant + X ≤
// limit + X. Counting used amounts in R while they may already be in S
// only makes grants smaller for SettleLag: never an overspend.
//
// Budget periods: day and month periods are UTC calendar periods; a grant
// or a settlement after the period ended starts a new one (nothing spent),
// as the snapshot builder reports it.
package distrib
