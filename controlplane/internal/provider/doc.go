// Package provider implements the admin API's ProviderService, PoolService
// and PriceService (weir.admin.v1): provider records, pool members and
// prices, with the semantics of DESIGN §3 and ROUTING.md.
//
// The package has two layers.
//
// The pure layer knows no database and no RPC:
//   - presets.go resolves a preset (openai, azure-openai, anthropic,
//     bedrock, vllm) into explicit fields at creation (ResolveRecordPreset,
//     ResolveMemberPreset), and fills in the server's own defaults.
//   - validate.go checks the whole record a change produces (Validate) and
//     reports every problem at once, each naming its request field: names,
//     R-SEC-2 URLs, R-SEC-3 auth, R-COST-4 whole prices, models, model maps,
//     weights, orders, regions, durations, limits, tags, secrets. It is the
//     twin of the edge's snapshot compiler (weir.dev/routing/compile), restated
//     here rather than imported, and at least as strict: the control plane
//     must never accept what the edges would refuse.
//   - resolve.go resolves member inheritance (Effective, ResolvedPrices):
//     auth as a whole, key secret, region, retains_data, account,
//     api_version, limits, models, tags merged, prices merged per part, each
//     inherited field named.
//   - warnings.go computes a record's warnings (Warnings): R-SEC-4
//     shared_key_secret and shared_host, secret_host_mismatch (R-SEC-1),
//     model_unpriced (R-MODEL-4), rules_refuse_all (R-ELIG-2).
//   - changes.go lists the fields one state of a record changes from
//     another (Changes), by proto reflection over the specs, each value as
//     one line of text (changetext.go).
//   - summary.go says in one line how the edges route over a record
//     (RoutingSummary), from a ProviderDetail's resolved members.
//
// The RPC layer (service.go, handlers_*.go, db.go, rows.go, preview.go)
// authorizes each request with package auth, runs every change in one
// store.Tx — validate the resulting record, write only what differs, one
// audit row, one outbox row for the owner's snapshot (the cluster's for
// managed records) — and maps errors with package apierr: InvalidArgument
// with a ValidationError listing every problem, NotFound, AlreadyExists,
// FailedPrecondition, Aborted for a stale expected_revision. A refused
// change writes nothing. Every change answers with the fields it changes
// (Changes).
//
// A change with validate_only runs the very same steps and checks (one
// code path, commit) and stops before the write: no row, audit entry,
// outbox row or revision. Its validation problems come back in the answer
// with OK instead of InvalidArgument; every other refusal stays an error.
// Its record is the record as it would be stored (wouldBeStored: the
// columns save would write, read back as loadRecord reads them), with the
// current id, times and revision (none for a new record), so that the
// revision can be sent as expected_revision with the real request.
//
// Decisions where the contract is silent or the sources differ:
//   - Record revisions are the record's updated_at in microseconds, moved
//     strictly forward on every change of the record or its members
//     (TouchProviderRecord); the schema has no revision column.
//   - Presets fill the vendor's default base_url (OpenAI, Anthropic) only
//     where an endpoint is needed and none is given.
//   - A pool record has no limits of its own (its members declare theirs),
//     and a record's auth kind is always required.
//   - Every price a member ends up with after merging must be whole (the
//     edge refuses anything less), not only member prices where the record
//     has none; record prices always give input and output (the schema).
//   - A member auth that names neither kind nor header but other fields is
//     resolved at write time into the record's auth with those fields
//     replaced.
//   - Removing a last member that is off is refused (a plain record cannot
//     be off, and removing must not switch a record back on).
//   - Auth lets a tenant name it holds no role on fail with NotFound (see
//     package auth).
//   - A validate_only request with problems still answers with the record
//     as the request builds it, its warnings and its changes, so a preview
//     shows what is wrong next to what would change; the checks that run
//     only on a valid record (a record name already taken) run only once no
//     problem is left, as for the real request.
//   - Changes lists the stored preset too ("preset", "members[eu].preset"),
//     and lists a whole member added or removed as one change whose value is
//     the member's set fields; a plain record turning into a pool shows as
//     its base_url and limits cleared and its members added.
package provider
