// Package routing is Weir's routing core: given a compiled Table, the
// learned state of each member and a description of a call, it decides which
// provider record and which pool member each attempt goes to, what every
// upstream answer does to the call and to the member, and what the caller gets
// when no member answered. Every rule of shared/ROUTING.md lives here and is
// named by its id (R-…) in the code and in the tests, except the reading of
// providers' headers and error bodies, which is package upstream's (below).
//
// The package is pure: it uses the standard library only, opens no
// connection, and has no clock or randomness of its own. Time is passed in as
// a time.Time and randomness as a Rand; the caller owns both, so every
// decision is reproducible in tests and in the simulator.
//
// # The module
//
// Module weir.dev/routing is the one configuration contract of Weir: the
// control plane and the edge both import it, so what one accepts the other
// can route, and the names they exchange over NATS cannot drift apart. It
// depends on the standard library and the generated protobuf types only (no
// NATS client, no database), which is what lets both binaries link it. Its
// packages:
//
//   - weir.dev/routing (this package): the routing core the edge runs;
//   - weir.dev/routing/compile: the snapshot compiler, weir.config.v1
//     snapshot to routing Table, whose problems carry field paths;
//   - weir.dev/routing/rules: the format rules of configuration values
//     (names, regions, models, upstream URLs and the address ranges of
//     R-SEC-2, NATS authentication flags);
//   - weir.dev/routing/formats: the one table of the names of wire formats
//     and auth kinds (enum value, stored name, CLI and console word);
//   - weir.dev/routing/natsnames: the NATS buckets, streams, subjects and
//     keys both sides use, their key builders and lifetimes.
//   - weir.dev/routing/upstream: what a provider's answer says, per
//     provider (rate-limit headers, retry-after, error bodies); a leaf this
//     package reads answers with (R-HEAD-1, R-HEAD-2, R-FAIL-2, R-FAIL-3).
//
// The module is named for the routing table it exists to produce; the
// edge-only parts (adapters, gateway, dialer, NATS plumbing) stay in the edge.
package routing
