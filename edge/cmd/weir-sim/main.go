// Command weir-sim runs the routing simulator: each scenario's workload
// through Weir's routing core and two baselines on a virtual clock, and
// prints one Markdown comparison table per scenario.
//
// Usage:
//
//	weir-sim [-seed N] [-duration 10m] [-scenario all|ID]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"weir.dev/edge/internal/sim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run parses args, runs the chosen scenarios and writes their tables to
// stdout. It returns the process exit code: 0 on success, 1 when a run
// fails, 2 on bad usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	def := sim.DefaultConfig()
	fs := flag.NewFlagSet("weir-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", def.Seed, "seed of every random draw; the same seed prints the same tables")
	dur := fs.Duration("duration", def.Duration, "virtual time over which jobs start")
	which := fs.String("scenario", "all", "scenario to run: all, or one of "+ids())
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "weir-sim: unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		return 2
	}
	cfg := sim.Config{Seed: *seed, Duration: *dur}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "weir-sim: %v\n", err)
		return 2
	}
	var scs []sim.Scenario
	for _, sc := range sim.Scenarios() {
		if *which == "all" || *which == sc.ID {
			scs = append(scs, sc)
		}
	}
	if len(scs) == 0 {
		fmt.Fprintf(stderr, "weir-sim: unknown scenario %q; known: all, %s\n", *which, ids())
		return 2
	}
	for _, sc := range scs {
		res, err := sim.Run(ctx, sc, cfg)
		if err != nil {
			fmt.Fprintf(stderr, "weir-sim: %s: %v\n", sc.ID, err)
			return 1
		}
		if err := res.WriteMarkdown(stdout); err != nil {
			fmt.Fprintf(stderr, "weir-sim: %v\n", err)
			return 1
		}
	}
	return 0
}

// ids lists the scenario IDs, comma-separated.
func ids() string {
	var out []string
	for _, sc := range sim.Scenarios() {
		out = append(out, sc.ID)
	}
	return strings.Join(out, ", ")
}
