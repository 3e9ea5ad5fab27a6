// Package routing is Weir's routing core: given a compiled Table, the
// learned state of each member and a description of a call, it decides which
// provider record and which pool member each attempt goes to, what every
// upstream answer does to the call and to the member, and what the caller gets
// when no member answered. Every rule of shared/ROUTING.md lives here and is
// named by its id (R-…) in the code and in the tests.
//
// The package is pure: it uses the standard library only, opens no
// connection, and has no clock or randomness of its own. Time is passed in as
// a time.Time and randomness as a Rand; the caller owns both, so every
// decision is reproducible in tests and in the simulator.
package routing
