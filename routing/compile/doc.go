// Package compile is the edge's translation stage from configuration to
// routing: it turns one tenant's TenantSnapshot, plus the cluster's
// ClusterSnapshot of managed records, into the immutable routing.Table the
// routing core works on (DESIGN §2).
//
// Compile is a pure function: it reads its arguments, never changes them,
// never keeps a reference into them (every map and slice of the table is the
// table's own copy), and has no clock, randomness, network or global state.
// The same snapshots always compile to the same table, on every edge.
//
// Compile resolves everything the routing core would otherwise have to work
// out per call: a plain record becomes a pool of one member named "primary";
// pool members inherit what they leave unset from their record (ROUTING.md
// "Member"); member prices are merged over record prices (R-COST-4); recovery
// settings get the ROUTING.md defaults (routing.DefaultRecovery). It also
// validates the snapshot and reports every problem it finds at once, each
// naming the object and field at fault. A snapshot with any problem is refused
// whole: the caller keeps serving the table it had.
//
// Where ROUTING.md is silent, Compile decides as follows (each is stated
// again where it is implemented):
//   - A model with an unspecified kind is a chat model.
//   - An auth with no kind is API-key auth when it names a header or a key
//     secret is in effect, else no auth; API-key auth with no header uses the
//     wire format's usual one ("x-api-key" for anthropic, else
//     "authorization"). Naming API-key auth with no key secret in effect is
//     a problem.
//   - A pool member that declares any limit has only its own limits; one
//     that declares none takes the record's.
//   - Every merged price of a model a member serves must be whole, also when
//     the record's own price for it lacks parts.
//   - A member's account, when none is declared, is the secret it signs with:
//     key_secret, SigV4 access_key_secret or OAuth2 client secret.
//   - A disabled tenant compiles with every key revoked.
//   - An own record and a managed record may share a name; the own record
//     wins it for pinning.
//
// Things Compile deliberately does not check, because they are decided
// elsewhere: whether a named secret exists or is bound to a member's host
// (R-SEC-1, R-END-3: a member whose key is missing is passed over per call);
// whether a host name resolves to a private address (R-SEC-2: checked at dial
// time); the warnings of R-SEC-4 (shared key secret or host), which belong to
// the admin API that accepts the change.
package compile
