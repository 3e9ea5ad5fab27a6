// Package snapshot is the control plane's translation stage from database
// rows to the weir.config.v1 snapshots that edges compile (DESIGN.md §1 steps
// 1–2, §2).
//
// It has two halves:
//
//   - BuildTenant and BuildCluster are pure functions. They take plain
//     structs of sqlc rows (TenantRows, ClusterRows), an opener for secrets
//     sealed under the control plane's master key, the edge key and a source
//     of nonces, and return a snapshot. They use no database, no clock (the
//     rows carry the time the snapshot describes), no randomness of their own
//     and no global state: the same rows and the same nonce stream always give
//     the same snapshot, byte for byte.
//   - LoadTenant and LoadCluster read every row a snapshot needs in one
//     read-only REPEATABLE READ transaction, so a snapshot never mixes two
//     states of the store.
//
// Mapping rules, where the schema and config.proto leave room:
//
//   - Provider records, their models, prices, members and member prices are
//     decoded by package recordrow, which states what each column means (a
//     NULL member column leaves the member's optional field unset so that
//     it takes the record's value; NULL recovery durations stay unset;
//     a NULL price part is an unset optional field, never 0).
//   - Caller limits (ROUTING.md R-CAP-2): a tenant or an API key whose rpm
//     and max_in_flight are both 0 has no Limits; otherwise both are sent as
//     stored, 0 meaning no limit of its own. The cluster snapshot always
//     carries default_tenant_max_in_flight, the max_in_flight of tenants
//     whose own is 0.
//   - Output is ordered independently of the order of the input rows: records
//     by name; each pool's members by order, then name; models and prices by
//     model; keys by name (then creation time and id); budgets and secrets by
//     name; a managed record's tenants by tenant name, then id.
//   - A pool record with no members serves nothing and is left out (the edge
//     would refuse the whole snapshot for it).
//   - API keys: every active key, and a revoked key only while no other key of
//     the snapshot has its name (names of revoked keys may be reused, and the
//     edge refuses two keys of one name). A key left out is refused by the edge
//     like a revoked one.
//   - Secrets: only the secrets that some record or member of the snapshot
//     names (key_secret, access_key_secret, client_secret_secret) are sent,
//     resealed for edges; key material no route can use never leaves the
//     control plane.
//   - Budgets: day and month periods are UTC calendar periods. When the stored
//     period has already ended at the snapshot's time (the store has not yet
//     rolled it over), the budget is sent with the current period's start and
//     nothing spent.
//
// The builders also guard tenant isolation (DESIGN.md §5): every row given to
// BuildTenant must belong to its tenant, and every row given to BuildCluster
// to the cluster; a row of another owner is an error, never output.
package snapshot

import (
	"errors"
	"time"

	"weir.dev/db/sqlc"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// ErrInvalidRows is wrapped by every error BuildTenant and BuildCluster return
// for rows that cannot be mapped: an unknown enum value, malformed JSON, a row
// of another owner, a model or member of a record that is not in the rows.
var ErrInvalidRows = errors.New("snapshot: rows cannot be mapped")

// ErrSecret is wrapped by the errors of opening a secret under the master key
// or sealing it for edges. Such errors name the secret, never its value.
var ErrSecret = errors.New("snapshot: secret cannot be resealed")

// ErrTenantNotFound is returned by LoadTenant and ReadTenant when the tenant
// does not exist (it was deleted: its snapshot should be withdrawn).
var ErrTenantNotFound = errors.New("snapshot: tenant not found")

// TenantRows is everything one tenant's snapshot is built from, as the store
// holds it. LoadTenant fills it; tests build it by hand.
type TenantRows struct {
	// Version is stamped on the snapshot (config_revisions.desired_revision).
	Version uint64
	// Now is the time the rows describe; it becomes generated_at and decides
	// which budget period is current. It must be set.
	Now    time.Time
	Tenant sqlc.Tenant
	// DataRules is nil when the tenant has set none.
	DataRules *sqlc.DataRule
	// APIKeys are all the tenant's keys, revoked ones included.
	APIKeys []sqlc.APIKey
	// Records are the tenant's own provider records; Models, Members,
	// RecordPrices and MemberPrices are the rows that belong to them.
	Records      []sqlc.ProviderRecord
	Models       []sqlc.RecordModel
	Members      []sqlc.PoolMember
	RecordPrices []sqlc.RecordPrice
	MemberPrices []sqlc.MemberPrice
	Budgets      []sqlc.Budget
	// Secrets are the tenant's secrets, sealed under the master key.
	Secrets []sqlc.Secret
}

// ClusterRows is everything the cluster snapshot (managed records and the
// tenants they are shared with) is built from.
type ClusterRows struct {
	// Version is stamped on the snapshot (the cluster's config_revisions row).
	Version uint64
	// Now is the time the rows describe; it becomes generated_at. It must be
	// set.
	Now time.Time
	// Records are the managed (cluster-owned) records; Models, Members,
	// RecordPrices and MemberPrices are the rows that belong to them.
	Records      []sqlc.ProviderRecord
	Models       []sqlc.RecordModel
	Members      []sqlc.PoolMember
	RecordPrices []sqlc.RecordPrice
	MemberPrices []sqlc.MemberPrice
	// Shares enable managed records for tenants (R-MODEL-3).
	Shares []sqlc.ListRecordSharesRow
	// Secrets are the cluster's secrets, sealed under the master key.
	Secrets []sqlc.Secret
	// TenantLoopback is which loopback ports tenant-owned records may dial
	// on edges (ROUTING.md R-SEC-2, controlplane serve
	// --tenant-loopback-ports). It is the operator's setting, not a row:
	// LoadCluster leaves it nil, which means no port.
	TenantLoopback *configv1.TenantLoopback
	// DefaultTenantMaxInFlight is the cluster default of a tenant's
	// max_in_flight (ROUTING.md R-CAP-2, controlplane serve
	// --default-tenant-max-in-flight). It is the operator's setting, not a
	// row: LoadCluster leaves it 0, which means DefaultTenantMaxInFlight.
	DefaultTenantMaxInFlight int64
}

// DefaultTenantMaxInFlight is the cluster default of a tenant's
// max_in_flight when the operator sets none (ROUTING.md R-CAP-2).
const DefaultTenantMaxInFlight = 512

// OpenFunc returns the plaintext of a secret row sealed under the control
// plane's master key (its ciphertext, nonce and key_version columns). The
// builders clear the returned slice once it is resealed, so OpenFunc must
// return a slice of its own. Its errors must not contain the value.
type OpenFunc func(row sqlc.Secret) ([]byte, error)
