// Package systest holds Weir's system-level tests: the real binaries
// (controlplane, weir, edge, fakeprovider) run as child processes against a
// private PostgreSQL cluster and a NATS JetStream server that the tests can
// stop and start, proving what issue 6's "Done when" asks of the whole
// system:
//
//   - a config change made with the weir CLI is served by two edges, with
//     its propagation latency measured (TestCLIChangeServedByTwoEdges);
//   - under steady load through two edges, NATS stopped for 30 s, the
//     control plane SIGKILLed, PostgreSQL stopped and one edge SIGKILLed
//     (and, beyond the list, an edge SIGKILLed while NATS is down)
//     leave the calls answered equal to the calls recorded in Postgres,
//     exactly, none counted twice (TestChaosUnderSteadyLoad).
//
// Everything lives in the tests; this file only names the package. The
// tests build the binaries in TestMain, write each child's output to a log
// file in the test's temporary directory and print the tail of every log
// when a test fails.
package systest
