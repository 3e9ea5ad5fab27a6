// Package distrib joins an edge to the control plane over NATS JetStream
// (DESIGN.md §1 and §4): it watches the config bucket and swaps compiled
// tables into the gateway's registry, keeps the last good snapshots on local
// disk, reports member views, shares job affinity, publishes call records
// exactly once through a local journal, applies operator commands, and
// enforces budgets with leases granted by the control plane.
//
// The wire contract with the control plane is fixed by the names in
// names.go. Every part degrades on its own when NATS is away: the edge keeps
// serving from the tables it has (or from disk), call records wait in the
// journal, affinity falls back to the local memory and rendezvous hashing,
// and budgets are served from what the current leases still hold.
package distrib
