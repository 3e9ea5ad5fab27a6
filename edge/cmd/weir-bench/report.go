package main

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// pooled is every round of one target at one rate taken together.
type pooled struct {
	res      loadResult
	cpu      time.Duration
	fakeCPU  time.Duration
	requests int
}

// cpuPerReq is the proxy process's CPU time per request, in µs.
func (p *pooled) cpuPerReq() float64 { return us(p.cpu) / float64(max(p.requests, 1)) }

// fakePerReq is the fake's CPU time per request, in µs.
func (p *pooled) fakePerReq() float64 { return us(p.fakeCPU) / float64(max(p.requests, 1)) }

// pool merges runs by rate and target.
func pool(runs []*measured) map[int]map[string]*pooled {
	out := map[int]map[string]*pooled{}
	for _, m := range runs {
		if out[m.rate] == nil {
			out[m.rate] = map[string]*pooled{}
		}
		p := out[m.rate][m.target]
		if p == nil {
			p = &pooled{}
			out[m.rate][m.target] = p
		}
		p.res.merge(m.res)
		p.res.Rate = m.res.Rate
		p.cpu += m.cpu
		p.fakeCPU += m.fakeCPU
		p.requests += m.requests()
	}
	return out
}

// sortedRates returns the keys of a pool in order.
func sortedRates(p map[int]map[string]*pooled) []int {
	var rates []int
	for r := range p {
		rates = append(rates, r)
	}
	slices.Sort(rates)
	return rates
}

// ratio renders a/b as "1.23×", or "–" when b is zero.
func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// addedRatio renders the ratio of two added latencies, or "–" when the
// proxy's is under 50 µs, where the ratio would only show noise.
func addedRatio(edge, proxy time.Duration) string {
	if proxy < 50*time.Microsecond {
		return "–"
	}
	return ratio(ms(edge), ms(proxy))
}

// signedMs renders a duration difference in milliseconds with its sign.
func signedMs(d time.Duration) string { return fmt.Sprintf("%+.3f", ms(d)) }

// maxCell renders a maximum sustainable rate.
func maxCell(m *maxRate) string {
	if m == nil {
		return "–"
	}
	if m.failedAt == 0 {
		return fmt.Sprintf("≥ %d", m.best)
	}
	return fmt.Sprintf("%d", m.best)
}

// targetNames are the targets of every run, in the order the report's
// tables list them.
var targetNames = []string{"direct", "edge", "proxy"}

// report is a Markdown report being written: the results it reports on and
// their fixed-rate runs pooled by rate and target.
type report struct {
	b            strings.Builder
	r            *results
	chat, stream map[int]map[string]*pooled
}

// p appends a formatted line (or part of one) to the report.
func (w *report) p(format string, a ...any) { fmt.Fprintf(&w.b, format, a...) }

// renderReport returns the Markdown report: a header on the run, the
// summary table, then the non-streaming, streaming, maximum-rate and memory
// details (the last two when measured), and the load generator's CPU time.
func renderReport(r *results) string {
	w := &report{r: r, chat: pool(r.chat), stream: pool(r.stream)}
	ref := nearest(r.cfg.Rates, 2000)
	sref := r.cfg.StreamRates[len(r.cfg.StreamRates)-1]
	w.header()
	w.summary(ref, sref)
	w.chatDetail()
	w.streamDetail()
	if r.max != nil {
		w.maxDetail()
	}
	if len(r.mem) > 0 {
		w.memoryDetail()
	}
	w.p("\nLoad generator CPU over the whole run: %.1f s.\n", r.selfCPU.Seconds())
	return w.b.String()
}

// header writes the report's title and the paragraph on the machine, the
// setup and the run.
func (w *report) header() {
	r, cfg := w.r, w.r.cfg
	w.p("## weir-bench: edge vs bare httputil.ReverseProxy\n\n")
	w.p("%s, %d CPUs, %s/%s, %s. Everything on 127.0.0.1: fake provider (no latency, no limits), edge (standalone, one pool member), bare `httputil.ReverseProxy` (tuned transport, body read before forwarding) and the open-loop load generator share the machine. Non-streaming bodies are %d B; streams carry %d tokens at %v a token. Mode: %s. Took %s. Load average before %s, after %s (other work on the machine skews every figure).\n\n",
		r.started.Format("2006-01-02 15:04"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(),
		bodySize, cfg.Tokens, cfg.TokenDelay, mode(cfg), r.took.Round(time.Second), r.loadBefore, r.loadAfter)
}

// summary writes the summary table, edge against the bare proxy: the
// non-streaming figures at rate ref, the added p50 latency at every rate,
// the maximum rate, the streaming figures at sref streams/s, cut streams
// and memory, each row only when its runs were measured; then the note on
// how the figures were taken.
func (w *report) summary(ref, sref int) {
	w.p("### Summary\n\n")
	w.p("| measure | edge | bare proxy | edge / proxy |\n|---|---:|---:|---:|\n")
	w.summaryChat(ref)
	w.summaryAddedP50()
	if w.r.max != nil {
		w.summaryMax()
	}
	w.summaryStream(sref)
	w.summaryCutAndMemory()
	w.p("\nCPU per request is the utime+stime delta of the process (`/proc/<pid>/stat`) over the requests of its runs; the maximum sustainable rate is the highest step (%d rps apart) with ≤ 0.1 %% errors, ≥ 95 %% of the rate achieved and p99 ≤ %v, a failed step tried twice. Latencies count from each request's scheduled send time. p99 swings several-fold between repetitions on this machine; judge by CPU per request and the maximum rate. Allocations per call: see the `go test -bench` output above the table (`make bench`).\n\n",
		w.r.cfg.Step, w.r.cfg.P99Bound)
}

// summaryChat writes the summary rows of non-streaming chat at rate ref
// (CPU per request, added p99 when direct was measured, error rate), or
// nothing when the edge or the proxy was not measured at ref.
func (w *report) summaryChat(ref int) {
	c := w.chat[ref]
	if c == nil || c["edge"] == nil || c["proxy"] == nil {
		return
	}
	e, x, d := c["edge"], c["proxy"], c["direct"]
	w.p("| CPU per request, non-streaming at %d rps (µs) | %.0f | %.0f | **%s** |\n", ref, e.cpuPerReq(), x.cpuPerReq(), ratio(e.cpuPerReq(), x.cpuPerReq()))
	if d != nil {
		e9, x9, d9 := percentile(e.res.Latency, 99), percentile(x.res.Latency, 99), percentile(d.res.Latency, 99)
		w.p("| added p99 latency at %d rps vs direct (ms; noisy here) | %s | %s | %s |\n", ref, signedMs(e9-d9), signedMs(x9-d9), addedRatio(e9-d9, x9-d9))
	}
	w.p("| error rate at %d rps | %.3f %% | %.3f %% | |\n", ref, 100*e.res.ErrorRate(), 100*x.res.ErrorRate())
}

// summaryAddedP50 writes the summary row of the added p50 latency at every
// fixed rate at which all three targets were measured, or nothing when
// there is none. The highest rates load this machine near its limit, where
// queueing swamps the proxies' own share, hence every rate.
func (w *report) summaryAddedP50() {
	var rs, ec, xc, rc []string
	for _, rate := range sortedRates(w.chat) {
		e, x, d := w.chat[rate]["edge"], w.chat[rate]["proxy"], w.chat[rate]["direct"]
		if e == nil || x == nil || d == nil {
			continue
		}
		dp := percentile(d.res.Latency, 50)
		ea, xa := percentile(e.res.Latency, 50)-dp, percentile(x.res.Latency, 50)-dp
		rs = append(rs, strconv.Itoa(rate))
		ec, xc, rc = append(ec, signedMs(ea)), append(xc, signedMs(xa)), append(rc, addedRatio(ea, xa))
	}
	if len(rs) > 0 {
		w.p("| added p50 latency vs direct (ms) at %s rps | %s | %s | %s |\n", strings.Join(rs, " / "), strings.Join(ec, " / "), strings.Join(xc, " / "), strings.Join(rc, " / "))
	}
}

// summaryMax writes the summary row of the maximum sustainable rates; the
// ratio is a bound ("≥", "≤") when only one of edge and proxy failed, and
// "–" when neither did. w.r.max must hold the edge and the proxy.
func (w *report) summaryMax() {
	e, x := w.r.max["edge"], w.r.max["proxy"]
	q := ratio(float64(e.best), float64(x.best))
	switch {
	case e.failedAt == 0 && x.failedAt == 0:
		q = "–"
	case e.failedAt == 0:
		q = "≥ " + q
	case x.failedAt == 0:
		q = "≤ " + q
	}
	w.p("| max sustainable rate (rps; direct to fake: %s) | %s | %s | **%s** |\n", maxCell(w.r.max["direct"]), maxCell(e), maxCell(x), q)
}

// summaryStream writes the summary rows of streaming at sref streams/s (CPU
// per stream, added TTFB p50 when direct was measured), or nothing when the
// edge or the proxy was not measured at sref.
func (w *report) summaryStream(sref int) {
	s := w.stream[sref]
	if s == nil || s["edge"] == nil || s["proxy"] == nil {
		return
	}
	e, x, d := s["edge"], s["proxy"], s["direct"]
	w.p("| CPU per stream at %d streams/s (µs) | %.0f | %.0f | **%s** |\n", sref, e.cpuPerReq(), x.cpuPerReq(), ratio(e.cpuPerReq(), x.cpuPerReq()))
	if d != nil {
		et, xt, dt := percentile(e.res.TTFB, 50), percentile(x.res.TTFB, 50), percentile(d.res.TTFB, 50)
		w.p("| added time to first byte p50 at %d streams/s (ms) | %s | %s | %s |\n", sref, signedMs(et-dt), signedMs(xt-dt), addedRatio(et-dt, xt-dt))
	}
}

// summaryCutAndMemory writes the summary row of cut streams over all
// streaming runs (always) and the rows of memory with open streams (when
// both the edge and the proxy were measured).
func (w *report) summaryCutAndMemory() {
	cut := map[string]int{}
	for _, m := range w.r.stream {
		cut[m.target] += m.res.Cut
	}
	w.p("| cut streams, all streaming runs (must be 0) | %d | %d | |\n", cut["edge"], cut["proxy"])
	mem := map[string]*memory{}
	for _, m := range w.r.mem {
		mem[m.target] = m
	}
	if e, x := mem["edge"], mem["proxy"]; e != nil && x != nil {
		w.p("| RSS with %d open streams (MiB; idle before) | %.1f (%.1f) | %.1f (%.1f) | **%s** |\n", w.r.cfg.Streams, mib(e.with), mib(e.before), mib(x.with), mib(x.before), ratio(mib(e.with), mib(x.with)))
		w.p("| RSS growth per open stream (KiB) | %.1f | %.1f | %s |\n", perStream(e), perStream(x), ratio(perStream(e), perStream(x)))
	}
}

// chatDetail writes the table of non-streaming chat: a row per rate and
// measured target, the added latencies and CPU against direct ("–" for
// direct itself or when direct was not measured at that rate).
func (w *report) chatDetail() {
	cfg := w.r.cfg
	w.p("### Non-streaming chat, %d B body, fixed rates (%d × %v per target, interleaved)\n\n", bodySize, cfg.Rounds, cfg.Duration)
	w.p("| rate | target | achieved rps | errors | p50 ms | p99 ms | added p50 ms | added p99 ms | CPU µs/req | fake CPU µs/req |\n")
	w.p("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, rate := range sortedRates(w.chat) {
		d := w.chat[rate]["direct"]
		for _, name := range targetNames {
			x := w.chat[rate][name]
			if x == nil {
				continue
			}
			p50, p99 := percentile(x.res.Latency, 50), percentile(x.res.Latency, 99)
			add50, add99, cpu := "–", "–", "–"
			if d != nil && name != "direct" {
				add50 = signedMs(p50 - percentile(d.res.Latency, 50))
				add99 = signedMs(p99 - percentile(d.res.Latency, 99))
				cpu = fmt.Sprintf("%.0f", x.cpuPerReq())
			}
			w.p("| %d | %s | %.0f | %s | %.3f | %.3f | %s | %s | %s | %.0f |\n", rate, name, achievedMean(x), errCell(&x.res), ms(p50), ms(p99), add50, add99, cpu, x.fakePerReq())
		}
	}
}

// streamDetail writes the table of streaming chat: a row per rate and
// measured target, the added times to first byte and CPU against direct
// ("–" for direct itself or when direct was not measured at that rate).
func (w *report) streamDetail() {
	cfg := w.r.cfg
	w.p("\n### Streaming chat, %d tokens at %v a token, fixed rates (%d × %v per target, interleaved)\n\n", cfg.Tokens, cfg.TokenDelay, cfg.Rounds, cfg.Duration)
	w.p("| rate | target | achieved streams/s | errors | cut | TTFB p50 ms | TTFB p99 ms | added TTFB p50 ms | added TTFB p99 ms | end p50 ms | CPU µs/stream |\n")
	w.p("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, rate := range sortedRates(w.stream) {
		d := w.stream[rate]["direct"]
		for _, name := range targetNames {
			x := w.stream[rate][name]
			if x == nil {
				continue
			}
			t50, t99 := percentile(x.res.TTFB, 50), percentile(x.res.TTFB, 99)
			add50, add99, cpu := "–", "–", "–"
			if d != nil && name != "direct" {
				add50 = signedMs(t50 - percentile(d.res.TTFB, 50))
				add99 = signedMs(t99 - percentile(d.res.TTFB, 99))
				cpu = fmt.Sprintf("%.0f", x.cpuPerReq())
			}
			w.p("| %d | %s | %.0f | %s | %d | %.3f | %.3f | %s | %s | %.3f | %s |\n", rate, name, achievedMean(x), errCell(&x.res), x.res.Cut, ms(t50), ms(t99), add50, add99, ms(percentile(x.res.Latency, 50)), cpu)
		}
	}
}

// maxDetail writes the table of the maximum-rate search: a row per rate
// tried, a cell per target listing each try at that rate (achieved rps,
// error rate, p99, ✗ when not sustainable), "–" when it tried none. w.r.max
// must hold every target.
func (w *report) maxDetail() {
	w.p("\n### Maximum sustainable rate (steps of %v; achieved rps / errors / p99 ms; ✗ = not sustainable)\n\n", w.r.cfg.StepDuration)
	w.p("| rate | direct | edge | proxy |\n|---:|---|---|---|\n")
	byRate := map[int]map[string][]*measured{}
	for _, name := range targetNames {
		for _, m := range w.r.max[name].runs {
			if byRate[m.rate] == nil {
				byRate[m.rate] = map[string][]*measured{}
			}
			byRate[m.rate][name] = append(byRate[m.rate][name], m)
		}
	}
	var rates []int
	for rate := range byRate {
		rates = append(rates, rate)
	}
	slices.Sort(rates)
	for _, rate := range rates {
		w.p("| %d |", rate)
		for _, name := range targetNames {
			w.p(" %s |", maxTries(byRate[rate][name], w.r.cfg.P99Bound))
		}
		w.p("\n")
	}
}

// maxTries renders the tries of one target at one rate of the maximum-rate
// search, "achieved / errors % / p99" each, ✗ marking those not sustainable
// under p99 bound, separated by "; ", or "–" when there are none.
func maxTries(runs []*measured, bound time.Duration) string {
	var cells []string
	for _, m := range runs {
		mark := ""
		if !sustainableRes(m.res, bound) {
			mark = " ✗"
		}
		cells = append(cells, fmt.Sprintf("%.0f / %.2f %% / %.1f%s", m.res.Achieved(), 100*m.res.ErrorRate(), ms(percentile(m.res.Latency, 99)), mark))
	}
	if len(cells) == 0 {
		cells = []string{"–"}
	}
	return strings.Join(cells, "; ")
}

// memoryDetail writes the table of memory with concurrent streams open, a
// row per measurement.
func (w *report) memoryDetail() {
	w.p("\n### Memory with %d concurrent streams (1 s a token, held open)\n\n", w.r.cfg.Streams)
	w.p("| target | streams open | VmRSS before (MiB) | VmRSS with streams (MiB) | growth per stream (KiB) |\n|---|---:|---:|---:|---:|\n")
	for _, m := range w.r.mem {
		w.p("| %s | %d of %d | %.1f | %.1f | %.1f |\n", m.target, m.opened, m.wanted, mib(m.before), mib(m.with), perStream(m))
	}
}

// sustainableRes reports whether a step-up run passed: at most 0.1 % errors,
// at least 95 % of the rate achieved, p99 within bound.
func sustainableRes(res *loadResult, bound time.Duration) bool {
	return res.ErrorRate() <= 0.001 && res.Achieved() >= 0.95*res.Rate && percentile(res.Latency, 99) <= bound
}

// achievedMean is the achieved rate of pooled rounds: their OK answers over
// their spans.
func achievedMean(p *pooled) float64 {
	if p.res.Span <= 0 {
		return 0
	}
	return float64(p.res.OK) / p.res.Span.Seconds()
}

// errCell renders an error rate and count.
func errCell(r *loadResult) string {
	if r.Errors == 0 {
		return "0"
	}
	return fmt.Sprintf("%.2f %% (%d)", 100*r.ErrorRate(), r.Errors)
}

// perStream is the RSS growth per open stream, in KiB.
func perStream(m *memory) float64 {
	if m.opened == 0 {
		return 0
	}
	return float64(m.with-m.before) / 1024 / float64(m.opened)
}

// mode names the run's mode.
func mode(cfg config) string {
	if cfg.Quick {
		return "-quick (smoke run; figures are rough)"
	}
	return "default"
}
