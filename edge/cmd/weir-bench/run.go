package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// config is the benchmark's configuration, from flags.
type config struct {
	EdgeBin string
	FakeBin string
	SelfBin string
	Out     string
	Profile string
	Quick   bool

	// Rates are the fixed non-streaming rates, requests per second.
	Rates []int
	// StreamRates are the fixed streaming rates, streams per second.
	StreamRates []int
	// Duration is the length of one fixed-rate run.
	Duration time.Duration
	// Rounds is how many times each target runs at each fixed rate,
	// interleaved (direct, edge, proxy, direct, edge, proxy …).
	Rounds int
	// Step, StepDuration and MaxRate drive the search for the maximum
	// sustainable rate: Step, 2×Step, … up to MaxRate.
	Step         int
	StepDuration time.Duration
	MaxRate      int
	// P99Bound is the highest p99 a sustainable rate may have.
	P99Bound time.Duration
	// Tokens and TokenDelay shape the fake's streams in the streaming runs.
	Tokens     int
	TokenDelay time.Duration
	// Streams is how many concurrent streams the memory measurement holds.
	Streams int
	// Conns bounds the load generator's connections per target.
	Conns int
}

// defaults returns the default configuration, or the quick one.
func defaults(quick bool) config {
	c := config{
		Rates:        []int{500, 1000, 2000},
		StreamRates:  []int{200, 500},
		Duration:     4 * time.Second,
		Rounds:       2,
		Step:         1000,
		StepDuration: 3 * time.Second,
		MaxRate:      12000,
		P99Bound:     100 * time.Millisecond,
		Tokens:       16,
		TokenDelay:   2 * time.Millisecond,
		Streams:      1000,
		Conns:        256,
	}
	if quick {
		c.Rates = []int{500, 2000}
		c.StreamRates = []int{200}
		c.Duration = time.Second
		c.Rounds = 1
		c.StepDuration = time.Second
		c.MaxRate = 3000
		c.Streams = 200
	}
	return c
}

// Validate reports every problem of c.
func (c config) Validate() error {
	var errs []error
	for _, b := range []struct{ flag, path string }{{"-edge", c.EdgeBin}, {"-fake", c.FakeBin}, {"-self", c.SelfBin}} {
		if b.path == "" {
			errs = append(errs, fmt.Errorf("%s is required", b.flag))
			continue
		}
		if st, err := os.Stat(b.path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", b.flag, err))
		} else if st.IsDir() || st.Mode()&0o111 == 0 {
			errs = append(errs, fmt.Errorf("%s: %s is not an executable file", b.flag, b.path))
		}
	}
	if len(c.Rates) == 0 || len(c.StreamRates) == 0 {
		errs = append(errs, errors.New("-rates and -stream-rates must each name at least one rate"))
	}
	for _, r := range append(append([]int(nil), c.Rates...), c.StreamRates...) {
		if r <= 0 {
			errs = append(errs, fmt.Errorf("rates must be positive, got %d", r))
		}
	}
	if c.Duration <= 0 || c.StepDuration <= 0 || c.P99Bound <= 0 {
		errs = append(errs, errors.New("-duration, -step-duration and -p99-bound must be positive"))
	}
	if c.Rounds < 1 || c.Step < 1 || c.MaxRate < c.Step || c.Tokens < 1 || c.Streams < 1 || c.Conns < 1 {
		errs = append(errs, errors.New("-rounds, -step, -tokens, -streams and -conns must be at least 1, and -max-rate at least -step"))
	}
	if c.TokenDelay < 0 {
		errs = append(errs, errors.New("-token-delay must not be negative"))
	}
	return errors.Join(errs...)
}

// intList is a flag.Value of comma-separated integers.
type intList struct{ v *[]int }

func (l intList) String() string {
	if l.v == nil {
		return ""
	}
	s := make([]string, len(*l.v))
	for i, n := range *l.v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (l intList) Set(s string) error {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("%q is not an integer", f)
		}
		out = append(out, n)
	}
	*l.v = out
	return nil
}

// parse reads the benchmark's flags. Defaults depend on -quick, so it is
// looked for first.
func parse(args []string, stderr io.Writer) (config, error) {
	quick := false
	for _, a := range args {
		if a == "-quick" || a == "--quick" || a == "-quick=true" || a == "--quick=true" {
			quick = true
		}
	}
	c := defaults(quick)
	self, _ := os.Executable()
	dir := filepath.Dir(self)
	fs := flag.NewFlagSet("weir-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.EdgeBin, "edge", filepath.Join(dir, "edge"), "the edge binary")
	fs.StringVar(&c.FakeBin, "fake", filepath.Join(dir, "fakeprovider"), "the fake provider binary")
	fs.StringVar(&c.SelfBin, "self", self, "the weir-bench binary, run as the bare reverse proxy")
	fs.StringVar(&c.Out, "out", "", "also write the report to this file")
	fs.StringVar(&c.Profile, "cpuprofile", "", "save CPU profiles of the edge under non-streaming load (this file) and streaming load (the name with -stream before its extension)")
	fs.BoolVar(&c.Quick, "quick", quick, "short runs and fewer steps, for a smoke run")
	fs.Var(intList{&c.Rates}, "rates", "fixed non-streaming rates, requests per second")
	fs.Var(intList{&c.StreamRates}, "stream-rates", "fixed streaming rates, streams per second")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "length of each fixed-rate run")
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "interleaved repetitions of each target at each fixed rate")
	fs.IntVar(&c.Step, "step", c.Step, "step of the maximum-rate search, requests per second")
	fs.DurationVar(&c.StepDuration, "step-duration", c.StepDuration, "length of each step of the maximum-rate search")
	fs.IntVar(&c.MaxRate, "max-rate", c.MaxRate, "highest rate the search tries")
	fs.DurationVar(&c.P99Bound, "p99-bound", c.P99Bound, "highest p99 latency of a sustainable rate")
	fs.IntVar(&c.Tokens, "tokens", c.Tokens, "output tokens of each streamed answer")
	fs.DurationVar(&c.TokenDelay, "token-delay", c.TokenDelay, "time per token of the streaming runs")
	fs.IntVar(&c.Streams, "streams", c.Streams, "concurrent streams held open for the memory measurement")
	fs.IntVar(&c.Conns, "conns", c.Conns, "load generator connections per target (non-streaming runs)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return c, c.Validate()
}

// run dispatches to the reverse-proxy mode or runs the benchmark, and
// returns the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "reverse-proxy" {
		return runProxy(ctx, args[1:], stdout, stderr)
	}
	cfg, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "weir-bench:", err)
		return 2
	}
	if err := bench(ctx, cfg, getenv, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "weir-bench:", err)
		if ctx.Err() != nil {
			return 130
		}
		return 1
	}
	return 0
}
