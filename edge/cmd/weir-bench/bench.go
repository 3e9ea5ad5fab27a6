package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Keys of the benchmark's one tenant. They guard nothing but loopback
// processes that live for one run.
const (
	callerKey   = "weir-bench-caller-key-0123456789"
	providerKey = "sk-weir-bench-provider"
	benchModel  = "gpt-4o-mini"
	bodySize    = 1024
)

// chatBody returns an OpenAI chat body of exactly size bytes (when size
// leaves room for the JSON around the message).
func chatBody(size int, stream bool) []byte {
	head := `{"model":"` + benchModel + `",`
	if stream {
		head += `"stream":true,`
	}
	head += `"messages":[{"role":"user","content":"`
	tail := `"}]}`
	pad := max(size-len(head)-len(tail), 1)
	words := strings.Repeat("lorem ipsum dolor sit amet ", pad/27+1)[:pad]
	return []byte(head + words + tail)
}

// target is one destination of the load: the fake directly, the edge or
// the bare proxy.
type target struct {
	name   string
	url    string
	header http.Header
	client *http.Client
	// proc is the proxy process whose CPU and memory are measured (nil for
	// the fake itself).
	proc *child
}

// rig is the set of processes under test.
type rig struct {
	cfg    config
	dir    string
	getenv func(string) string
	log    io.Writer

	fakeAddr, edgeAddr, adminAddr, proxyAddr string
	fake, edge, proxy                        *child
	direct, edgeT, proxyT                    *target
	probe                                    *http.Client
}

// targets returns the three targets in their interleaving order.
func (r *rig) targets() []*target { return []*target{r.direct, r.edgeT, r.proxyT} }

// childEnv is the environment of a child: the few variables that shape a
// Go program's runtime, plus extra.
func (r *rig) childEnv(extra ...string) []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "GOMAXPROCS", "GOGC", "GOMEMLIMIT", "GODEBUG"} {
		if v := r.getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extra...)
}

// fakeArgs are the fake provider's flags: no rate limits, no latency.
func (r *rig) fakeArgs(tokens int, tokenDelay time.Duration) []string {
	return []string{"-addr", r.fakeAddr, "-flavor", "openai", "-rpm", "0", "-itpm", "0", "-otpm", "0",
		"-latency", "0s", "-tokens", strconv.Itoa(tokens), "-token-delay", tokenDelay.String()}
}

// startFake (re)starts the fake provider on its address with the given
// stream shape and waits until it answers.
func (r *rig) startFake(ctx context.Context, tokens int, tokenDelay time.Duration) error {
	if r.fake != nil {
		r.fake.stop(10 * time.Second)
	}
	c, err := startChild("fakeprovider", r.dir, r.cfg.FakeBin, r.fakeArgs(tokens, tokenDelay), r.childEnv("FAKEPROVIDER_API_KEY="+providerKey))
	if err != nil {
		return err
	}
	r.fake = c
	return c.waitReady(ctx, 10*time.Second, httpProbe(r.probe, http.MethodGet, "http://"+r.fakeAddr+"/v1/models", r.direct.header, nil))
}

// edgeConfig is the edge's standalone configuration: one tenant (with
// room for every stream the memory measure opens), one record whose one
// member is the fake, and the caller's key.
func edgeConfig(fakeAddr string) ([]byte, error) {
	sum := sha256.Sum256([]byte(callerKey))
	type obj = map[string]any
	cfg := obj{
		"tenants": []any{obj{
			"version": "1",
			// The memory measure holds 1,000 streams at once: above the
			// default tenant max_in_flight of 512 (R-CAP-2), which would
			// refuse the rest with 429 weir_tenant_limit.
			"tenant":  obj{"id": "bench", "name": "bench", "limits": obj{"maxInFlight": "100000"}},
			"apiKeys": []any{obj{"id": "bench-key", "name": "bench", "sha256": base64.StdEncoding.EncodeToString(sum[:])}},
			"records": []any{obj{
				"id": "rec-bench", "name": "bench", "tenantId": "bench", "wireFormat": "WIRE_FORMAT_OPENAI",
				"models":    []any{obj{"name": benchModel, "kind": "MODEL_KIND_CHAT"}},
				"auth":      obj{"kind": "AUTH_KIND_API_KEY", "header": "authorization"},
				"keySecret": "bench-provider-key",
				"prices":    []any{obj{"model": benchModel, "inputMicros": "150000", "outputMicros": "600000", "cacheReadMicros": "75000"}},
				"members": []any{obj{"name": "fake", "baseUrl": "http://" + fakeAddr + "/v1", "region": "local",
					"weight": 1, "order": 1, "account": "fake"}},
			}},
		}},
		"secrets": []any{obj{"name": "bench-provider-key", "tenantId": "bench", "hosts": []string{"127.0.0.1"}, "env": "WEIR_BENCH_PROVIDER_KEY"}},
	}
	return json.MarshalIndent(cfg, "", "  ")
}

// setup starts the fake, the edge and the bare proxy.
func (r *rig) setup(ctx context.Context) error {
	for _, a := range []*string{&r.fakeAddr, &r.edgeAddr, &r.adminAddr, &r.proxyAddr} {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		*a = addr
	}
	hdr := func(key string) http.Header {
		return http.Header{"Authorization": {"Bearer " + key}, "Content-Type": {"application/json"}}
	}
	conns := r.cfg.Conns
	r.direct = &target{name: "direct", url: "http://" + r.fakeAddr + "/v1/chat/completions", header: hdr(providerKey), client: newLoadClient(conns)}
	r.edgeT = &target{name: "edge", url: "http://" + r.edgeAddr + "/v1/chat/completions", header: hdr(callerKey), client: newLoadClient(conns)}
	r.proxyT = &target{name: "proxy", url: "http://" + r.proxyAddr + "/v1/chat/completions", header: hdr(providerKey), client: newLoadClient(conns)}

	if err := r.startFake(ctx, r.cfg.Tokens, 0); err != nil {
		return err
	}
	cfgJSON, err := edgeConfig(r.fakeAddr)
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(r.dir, "edge.json")
	if err := os.WriteFile(cfgPath, cfgJSON, 0o600); err != nil {
		return err
	}
	r.edge, err = startChild("edge", r.dir, r.cfg.EdgeBin,
		[]string{"--config", cfgPath, "--listen", r.edgeAddr, "--admin-listen", r.adminAddr, "--pprof", "--edge-id", "weir-bench", "--shutdown-grace", "2s"},
		r.childEnv("WEIR_BENCH_PROVIDER_KEY="+providerKey))
	if err != nil {
		return err
	}
	r.edgeT.proc = r.edge
	r.proxy, err = startChild("proxy", r.dir, r.cfg.SelfBin,
		[]string{"reverse-proxy", "-listen", r.proxyAddr, "-upstream", "http://" + r.fakeAddr},
		r.childEnv())
	if err != nil {
		return err
	}
	r.proxyT.proc = r.proxy
	body := chatBody(bodySize, false)
	if err := r.edge.waitReady(ctx, 15*time.Second, httpProbe(r.probe, http.MethodPost, r.edgeT.url, r.edgeT.header, body)); err != nil {
		return err
	}
	return r.proxy.waitReady(ctx, 10*time.Second, httpProbe(r.probe, http.MethodPost, r.proxyT.url, r.proxyT.header, body))
}

// shutdown stops every child.
func (r *rig) shutdown() {
	var wg sync.WaitGroup
	for _, c := range []*child{r.edge, r.proxy, r.fake} {
		if c != nil {
			wg.Go(func() { c.stop(5 * time.Second) })
		}
	}
	wg.Wait()
	for _, t := range []*target{r.direct, r.edgeT, r.proxyT} {
		if t != nil {
			t.client.CloseIdleConnections()
		}
	}
}

// measured is one load run and the CPU the processes spent on it.
type measured struct {
	target string
	rate   int
	round  int
	res    *loadResult
	// cpu is the target's proxy process's CPU time during the run (0 for
	// direct); fakeCPU the fake's.
	cpu, fakeCPU time.Duration
}

// requests is the number of requests the processes saw: all but those
// never sent.
func (m *measured) requests() int { return m.res.Scheduled - m.res.Unsent }

// measure runs spec against t and reads the CPU time of t's process and of
// the fake around it.
func (r *rig) measure(ctx context.Context, t *target, spec loadSpec, round int) (*measured, error) {
	spec.URL, spec.Header = t.url, t.header
	pid := 0
	if t.proc != nil {
		pid = t.proc.pid()
	}
	cpu0, err := r.cpu(pid)
	if err != nil {
		return nil, err
	}
	fake0, err := cpuTime(r.fake.pid())
	if err != nil {
		return nil, err
	}
	res := runLoad(ctx, t.client, spec)
	cpu1, err := r.cpu(pid)
	if err != nil {
		return nil, err
	}
	fake1, err := cpuTime(r.fake.pid())
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, c := range []*child{r.fake, r.edge, r.proxy} {
		if c.exited() {
			return nil, fmt.Errorf("%s exited during the run (%v):\n%s", c.name, c.err, c.logTail())
		}
	}
	return &measured{target: t.name, rate: int(spec.Rate), round: round, res: res, cpu: cpu1 - cpu0, fakeCPU: fake1 - fake0}, nil
}

func (r *rig) cpu(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, nil
	}
	return cpuTime(pid)
}

// progress prints one run's line.
func (r *rig) progress(phase string, m *measured) {
	res := m.res
	line := fmt.Sprintf("%-9s %-6s %5d/s r%d: achieved %7.1f/s  errors %5.2f%%  p50 %6.3f ms  p99 %7.3f ms",
		phase, m.target, m.rate, m.round, res.Achieved(), 100*res.ErrorRate(), ms(percentile(res.Latency, 50)), ms(percentile(res.Latency, 99)))
	if phase == "stream" {
		line += fmt.Sprintf("  ttfb p50 %6.3f ms  cut %d", ms(percentile(res.TTFB, 50)), res.Cut)
	}
	if m.cpu > 0 {
		line += fmt.Sprintf("  cpu %5.0f µs/req", us(m.cpu)/float64(max(m.requests(), 1)))
	}
	if res.Errors > 0 {
		line += "  " + kinds(res.ErrorKinds)
	}
	fmt.Fprintln(r.log, line)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// kinds renders error counts by kind.
func kinds(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s×%d", k, v))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// pause lets connections and timers settle between runs.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// warmUp sends a short uncounted run to every target.
func (r *rig) warmUp(ctx context.Context, body []byte, stream bool) error {
	d := time.Second
	if r.cfg.Quick {
		d = 300 * time.Millisecond
	}
	for _, t := range r.targets() {
		res := runLoad(ctx, t.client, loadSpec{URL: t.url, Header: t.header, Body: body, Stream: stream, Rate: 500, Duration: d, Conns: r.cfg.Conns})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if res.ErrorRate() > 0.01 {
			return fmt.Errorf("warm-up of %s: %d of %d requests failed %s", t.name, res.Errors, res.Scheduled, kinds(res.ErrorKinds))
		}
	}
	return nil
}

// fixedRates runs every target at every rate, rounds times, interleaved.
func (r *rig) fixedRates(ctx context.Context, phase string, rates []int, body []byte, stream bool, conns int) ([]*measured, error) {
	var out []*measured
	for _, rate := range rates {
		for round := 1; round <= r.cfg.Rounds; round++ {
			for _, t := range r.targets() {
				spec := loadSpec{Body: body, Stream: stream, Rate: float64(rate), Duration: r.cfg.Duration, Conns: conns, Drain: 2 * time.Second}
				m, err := r.measure(ctx, t, spec, round)
				if err != nil {
					return nil, err
				}
				r.progress(phase, m)
				out = append(out, m)
				if err := pause(ctx, 200*time.Millisecond); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// sustainable reports whether a step-up run passed (sustainableRes).
func (r *rig) sustainable(res *loadResult) bool { return sustainableRes(res, r.cfg.P99Bound) }

// maxRate is the outcome of the step-up search for one target.
type maxRate struct {
	target string
	// best is the highest rate that passed; failedAt the first that failed
	// twice (0: none failed up to the search's top).
	best, failedAt int
	runs           []*measured
}

// maxRates steps the rate up for every target, interleaved, until the
// edge and the proxy have both failed. A failed step is tried once more
// before it counts, since a shared 2-core machine has bad seconds.
func (r *rig) maxRates(ctx context.Context, body []byte) (map[string]*maxRate, error) {
	out := map[string]*maxRate{}
	for _, t := range r.targets() {
		out[t.name] = &maxRate{target: t.name}
	}
	for rate := r.cfg.Step; rate <= r.cfg.MaxRate; rate += r.cfg.Step {
		if out["edge"].failedAt > 0 && out["proxy"].failedAt > 0 {
			break
		}
		for _, t := range r.targets() {
			mr := out[t.name]
			if mr.failedAt > 0 {
				continue
			}
			passed := false
			for try := 1; try <= 2 && !passed; try++ {
				spec := loadSpec{Body: body, Rate: float64(rate), Duration: r.cfg.StepDuration, Conns: r.cfg.Conns, Drain: time.Second}
				m, err := r.measure(ctx, t, spec, try)
				if err != nil {
					return nil, err
				}
				r.progress("max-rate", m)
				mr.runs = append(mr.runs, m)
				passed = r.sustainable(m.res)
				if err := pause(ctx, 300*time.Millisecond); err != nil {
					return nil, err
				}
			}
			if passed {
				mr.best = rate
			} else {
				mr.failedAt = rate
			}
		}
	}
	return out, nil
}

// memory is the RSS measurement of one proxy process.
type memory struct {
	target       string
	before, with int64
	opened       int
	wanted       int
}

// memoryWithStreams opens n streams through t at once (the fake's slow
// tokens keep them open), reads VmRSS of t's process while they are all
// open, then cancels them.
func (r *rig) memoryWithStreams(ctx context.Context, t *target, n int) (*memory, error) {
	m := &memory{target: t.name, wanted: n}
	var err error
	if m.before, err = rssBytes(t.proc.pid()); err != nil {
		return nil, err
	}
	client := newLoadClient(n)
	defer client.CloseIdleConnections()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	body := chatBody(bodySize, true)
	var opened atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(sctx, http.MethodPost, t.url, strings.NewReader(string(body)))
			if err != nil {
				return
			}
			req.Header = t.header
			resp, err := client.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			buf := make([]byte, 4096)
			if k, _ := resp.Body.Read(buf); k > 0 && resp.StatusCode == http.StatusOK {
				opened.Add(1)
			}
			_, _ = io.Copy(io.Discard, resp.Body) // until cancelled
		})
	}
	deadline := time.Now().Add(15 * time.Second)
	for opened.Load() < int64(n) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	// Let the last streams' buffers settle, then take the highest of a few
	// samples.
	for range 5 {
		if err := pause(ctx, 100*time.Millisecond); err != nil {
			break
		}
		if v, err := rssBytes(t.proc.pid()); err == nil && v > m.with {
			m.with = v
		}
	}
	m.opened = int(opened.Load())
	cancel()
	wg.Wait()
	fmt.Fprintf(r.log, "memory    %-6s %d of %d streams open: RSS %.1f MiB → %.1f MiB\n", t.name, m.opened, n, mib(m.before), mib(m.with))
	return m, ctx.Err()
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// profileEdge saves a CPU profile of the edge taken under load at rate
// (streams when stream is set).
func (r *rig) profileEdge(ctx context.Context, path string, rate int, body []byte, stream bool) error {
	secs := 8
	if r.cfg.Quick {
		secs = 2
	}
	errc := make(chan error, 1)
	go func() {
		url := "http://" + r.adminAddr + "/debug/pprof/profile?seconds=" + strconv.Itoa(secs)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			errc <- err
			return
		}
		resp, err := r.probe.Do(req)
		if err != nil {
			errc <- err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			errc <- fmt.Errorf("profile: status %d", resp.StatusCode)
			return
		}
		f, err := os.Create(path)
		if err != nil {
			errc <- err
			return
		}
		_, err = io.Copy(f, resp.Body)
		errc <- errors.Join(err, f.Close())
	}()
	spec := loadSpec{Body: body, Stream: stream, Rate: float64(rate), Duration: time.Duration(secs+1) * time.Second, Conns: 2 * r.cfg.Conns}
	m, err := r.measure(ctx, r.edgeT, spec, 1)
	if err != nil {
		return err
	}
	r.progress("profile", m)
	if err := <-errc; err != nil {
		return err
	}
	fmt.Fprintf(r.log, "profile   edge CPU profile at %d/s (stream %v) saved to %s\n", rate, stream, path)
	return nil
}

// results gathers everything the report shows.
type results struct {
	cfg     config
	started time.Time
	took    time.Duration
	chat    []*measured
	stream  []*measured
	max     map[string]*maxRate
	mem     []*memory
	selfCPU time.Duration
	// loadBefore and loadAfter are the machine's load averages, since
	// other work on it skews every figure.
	loadBefore, loadAfter string
}

// bench runs the whole benchmark and prints the report.
func bench(ctx context.Context, cfg config, getenv func(string) string, stdout, stderr io.Writer) (err error) {
	started := time.Now()
	dir, err := os.MkdirTemp("", "weir-bench-")
	if err != nil {
		return err
	}
	keepLogs := false
	defer func() {
		if keepLogs {
			fmt.Fprintf(stderr, "weir-bench: process logs kept in %s\n", dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()
	r := &rig{cfg: cfg, dir: dir, getenv: getenv, log: stderr, probe: newLoadClient(8)}
	defer r.shutdown()
	defer func() { keepLogs = err != nil && ctx.Err() == nil }()

	fmt.Fprintf(stderr, "weir-bench: starting fake provider, edge and bare proxy on 127.0.0.1 (logs in %s)\n", dir)
	if err := r.setup(ctx); err != nil {
		return err
	}
	self0, _ := cpuTime(os.Getpid())
	res := &results{cfg: cfg, started: started, loadBefore: loadAvg()}
	if err := r.measureChat(ctx, res); err != nil {
		return err
	}
	if err := r.measureStreams(ctx, res); err != nil {
		return err
	}
	if err := r.measureMemory(ctx, res); err != nil {
		return err
	}
	self1, _ := cpuTime(os.Getpid())
	res.selfCPU = self1 - self0
	res.took = time.Since(started)
	res.loadAfter = loadAvg()
	return writeReport(res, stdout)
}

// measureChat measures non-streaming chat into res: a warm-up, the fixed
// rates (res.chat), the maximum-rate search (res.max) and, with
// cfg.Profile set, a CPU profile of the edge at the rate nearest 2000 rps.
// It returns the first error.
func (r *rig) measureChat(ctx context.Context, res *results) error {
	cfg := r.cfg
	chat := chatBody(bodySize, false)
	if err := r.warmUp(ctx, chat, false); err != nil {
		return err
	}
	var err error
	if res.chat, err = r.fixedRates(ctx, "chat", cfg.Rates, chat, false, cfg.Conns); err != nil {
		return err
	}
	if res.max, err = r.maxRates(ctx, chat); err != nil {
		return err
	}
	if cfg.Profile != "" {
		if err := r.profileEdge(ctx, cfg.Profile, nearest(cfg.Rates, 2000), chat, false); err != nil {
			return err
		}
	}
	return nil
}

// measureStreams restarts the fake to spend cfg.TokenDelay per token and
// measures streaming chat into res: a warm-up, the fixed rates (res.stream)
// and, with cfg.Profile set, a CPU profile of the edge at the highest
// stream rate, written next to cfg.Profile with "-stream" before its
// extension. It returns the first error.
func (r *rig) measureStreams(ctx context.Context, res *results) error {
	cfg := r.cfg
	if err := r.startFake(ctx, cfg.Tokens, cfg.TokenDelay); err != nil {
		return err
	}
	stream := chatBody(bodySize, true)
	if err := r.warmUp(ctx, stream, true); err != nil {
		return err
	}
	var err error
	if res.stream, err = r.fixedRates(ctx, "stream", cfg.StreamRates, stream, true, 2*cfg.Conns); err != nil {
		return err
	}
	if cfg.Profile != "" {
		ext := filepath.Ext(cfg.Profile)
		path := strings.TrimSuffix(cfg.Profile, ext) + "-stream" + ext
		if err := r.profileEdge(ctx, path, cfg.StreamRates[len(cfg.StreamRates)-1], stream, true); err != nil {
			return err
		}
	}
	return nil
}

// measureMemory restarts the fake to spend a second per token, so that
// streams stay open while RSS is read, and measures the edge's then the
// proxy's memory with cfg.Streams open streams into res.mem, pausing half a
// second after each. It returns the first error.
func (r *rig) measureMemory(ctx context.Context, res *results) error {
	if err := r.startFake(ctx, r.cfg.Tokens, time.Second); err != nil {
		return err
	}
	for _, t := range []*target{r.edgeT, r.proxyT} {
		m, err := r.memoryWithStreams(ctx, t, r.cfg.Streams)
		if err != nil {
			return err
		}
		res.mem = append(res.mem, m)
		if err := pause(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// writeReport renders the report of res, prints it to stdout and, with
// res.cfg.Out set, writes it to that file too, returning the write's error.
func writeReport(res *results, stdout io.Writer) error {
	report := renderReport(res)
	fmt.Fprint(stdout, report)
	if res.cfg.Out != "" {
		if err := os.WriteFile(res.cfg.Out, []byte(report), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// loadAvg returns the 1-, 5- and 15-minute load averages of /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// nearest returns the rate of rates closest to want.
func nearest(rates []int, want int) int {
	best := rates[0]
	for _, r := range rates {
		if abs(r-want) < abs(best-want) {
			best = r
		}
	}
	return best
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
