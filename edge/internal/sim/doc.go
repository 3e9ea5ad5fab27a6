// Package sim is Weir's routing simulator: a discrete-event simulation, on
// a virtual clock, of one edge routing a tenant's calls over a pool of
// rate-limited deployments, with Weir's routing core and two naive
// policies side by side.
//
// Nothing here sleeps or reads the wall clock: events (a turn arriving, an
// attempt's answer coming back) sit in a priority queue at virtual times,
// and every random draw comes from math/rand/v2 PCG sources seeded from
// Config.Seed, so a seed always prints the same tables.
//
// # The world
//
// Each pool member is a provider deployment with token buckets for
// requests and tokens per minute that refill continuously (the bucket holds
// one minute's worth). A request is charged its prompt plus output tokens
// when it is admitted. The member answers like the real APIs do: every
// answer carries the rate-limit headers of its wire format (OpenAI
// x-ratelimit-{limit,remaining,reset}-{requests,tokens} with reset as a
// duration, or Anthropic anthropic-ratelimit-{requests,tokens}-* with reset
// as an RFC 3339 time); a request that does not fit gets a 429 whose wait
// is named by retry-after, by retry-after-ms, or not at all, depending on
// the member; a share of admitted requests (1 %) gets a 500, 503 or 529;
// one member of one scenario runs out of quota and answers 429
// insufficient_quota from then on. A served answer takes time roughly
// proportional to its tokens (prefill of the uncached prompt, then decode
// of the output), and a refusal comes back within ~0.1 s.
//
// Callers run jobs of 3–10 turns. Every turn's prompt is the job's whole
// conversation so far, so a turn served by the member that served the
// job's previous turn reads that prefix from the member's prompt cache: it
// is billed at the cache-read price (and, on Anthropic-style members, the
// rest is a cache write) and needs no prefill. Jobs start uniformly over
// the run's duration; a job's next turn is sent a think time after its
// previous turn ended, answered or not (callers do not retry). Demand is
// the workload's tokens per minute as a multiple of the capacity of the
// members whose quota lasts the run.
//
// # The policies
//
// Weir's policy is the routing core itself: routing.Table.Begin, then
// Call.Next, Call.Dispatch and Call.Report for each attempt, and
// Call.Finish or Call.Final at the end, with the table built from routing
// types (DefaultRecovery, so max_wait is 0), one edge's routing.States, the
// job id set on every call and the job's last serving member from a local
// map (R-STICK). Every answer goes through routing.ClassifyWith and
// routing.ParseRateLimits as real headers and bodies. The baselines are
// round robin with a fixed 5 s cooldown after any failure, and weighted
// random order without headers or cooldowns; both fail over on 429 and 5xx
// with Weir's attempt limits.
//
// Each policy runs against its own fresh copy of the members, with the
// same workload and the same seeds.
//
// # The numbers
//
// Per scenario and policy: calls; caller-visible 429s (calls whose caller
// got a 429); failed calls (calls whose caller got any other error);
// attempts per call (attempts that went out, over calls); p99 added wait
// (virtual time between a call's arrival and the attempt that gave its
// answer, or its error: time spent in failed attempts and waits); cache
// affinity (of the answered turns of a job that follow an answered turn,
// the share served by the member that served the job's previous answered
// turn); and cost (routing.Settlement of every answer's usage at the
// serving member's prices, summed in integer nano-dollars, printed in
// dollars rounded to four decimals).
//
// # Two edges, one member
//
// The scenario two-edges-shared is of another kind (Scenario.Shared): two
// edges, each with its own routing.States and slots, route to one pool of
// a member that declares rpm and max_in_flight and a member without
// limits. It runs twice on the same arrivals: with Weir's rule, each edge
// counting against its share of the declared limits (routing.Share over 2
// live edges, R-HEAD-7), and with each edge counting against the whole
// limit; it prints the peak requests per minute (any 60 s) and the peak in
// flight the limited member saw, against what it declared.
package sim
