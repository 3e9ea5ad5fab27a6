package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// loadSpec describes one open-loop run: Rate requests per second for
// Duration, each request scheduled at a fixed time whatever became of the
// ones before.
type loadSpec struct {
	URL    string
	Header http.Header
	Body   []byte
	// Stream says the answers are SSE streams, which must end with
	// "data: [DONE]".
	Stream   bool
	Rate     float64
	Duration time.Duration
	// MaxRequests bounds the count (0: Rate×Duration).
	MaxRequests int
	// Drain is how long requests may still finish after the last one was
	// scheduled; what is still out then is cancelled and counted as an
	// error (default one second).
	Drain time.Duration
	// Conns is the number of workers, and so the most connections and
	// requests in flight (default 256). A request finding every worker busy
	// waits, and its latency counts the wait.
	Conns int
}

// count returns the number of requests the run schedules.
func (s loadSpec) count() int {
	n := int(math.Round(s.Rate * s.Duration.Seconds()))
	if s.MaxRequests > 0 && n > s.MaxRequests {
		n = s.MaxRequests
	}
	return max(n, 1)
}

// loadResult is what one run measured.
type loadResult struct {
	Rate      float64
	Scheduled int
	// OK counts complete 2xx answers (streams ending with [DONE]).
	OK int
	// Errors counts every other request: transport errors, other
	// statuses, cut streams, requests still out or unsent at the deadline.
	Errors int
	// Cut counts streams that began with 200 but whose read failed or
	// that ended without "data: [DONE]" before the deadline.
	Cut int
	// Unsent counts requests the deadline caught before they were sent.
	Unsent int
	// Span is the window in which the OK answers ended plus one interval,
	// at least the schedule's own length; Achieved divides by it.
	Span time.Duration
	// Latency holds, for each OK request, the time from its scheduled send
	// to its answer's last byte; TTFB to its answer's first body byte.
	Latency []time.Duration
	TTFB    []time.Duration
	// ErrorKinds counts errors by kind, for the report.
	ErrorKinds map[string]int
}

// Achieved is the rate of OK answers over the run's span.
func (r *loadResult) Achieved() float64 {
	if r.Span <= 0 {
		return 0
	}
	return float64(r.OK) / r.Span.Seconds()
}

// ErrorRate is the share of scheduled requests that did not end OK.
func (r *loadResult) ErrorRate() float64 {
	if r.Scheduled == 0 {
		return 0
	}
	return float64(r.Errors) / float64(r.Scheduled)
}

// merge adds o's counts and samples to r.
func (r *loadResult) merge(o *loadResult) {
	r.Scheduled += o.Scheduled
	r.OK += o.OK
	r.Errors += o.Errors
	r.Cut += o.Cut
	r.Unsent += o.Unsent
	r.Span += o.Span
	r.Latency = append(r.Latency, o.Latency...)
	r.TTFB = append(r.TTFB, o.TTFB...)
	if r.ErrorKinds == nil {
		r.ErrorKinds = map[string]int{}
	}
	for k, v := range o.ErrorKinds {
		r.ErrorKinds[k] += v
	}
}

// percentile returns the p-th percentile (0–100) of ds, nearest rank; ds is
// sorted in place.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(math.Ceil(p/100*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// newLoadClient returns a keep-alive HTTP/1.1 client for one target, with
// room for conns connections. It never uses an environment proxy.
func newLoadClient(conns int) *http.Client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{Transport: tr}
}

// outcome is one request's fate.
type outcome struct {
	ok        bool
	cut       bool
	unsent    bool
	kind      string
	latency   time.Duration
	ttfb      time.Duration
	finishedT time.Time
}

// runLoad runs spec open-loop with client and returns what it measured.
// ctx ending stops the run early; requests not done count as errors.
func runLoad(ctx context.Context, client *http.Client, spec loadSpec) *loadResult {
	n := spec.count()
	conns := spec.Conns
	if conns <= 0 {
		conns = 256
	}
	drain := spec.Drain
	if drain <= 0 {
		drain = time.Second
	}
	interval := float64(time.Second) / spec.Rate
	start := time.Now().Add(time.Millisecond)
	schedEnd := start.Add(time.Duration(float64(n) * interval))
	rctx, cancel := context.WithDeadline(ctx, schedEnd.Add(drain))
	defer cancel()

	jobs := make(chan time.Time, n)
	outs := make([][]outcome, conns)
	var wg sync.WaitGroup
	for w := range conns {
		wg.Go(func() {
			buf := make([]byte, 32<<10)
			for at := range jobs {
				outs[w] = append(outs[w], doRequest(rctx, client, spec, at, buf))
			}
		})
	}
	sendSchedule(rctx, jobs, n, start, interval)
	close(jobs)
	wg.Wait()

	res := tally(outs, spec.Rate, n)
	res.Span = answerSpan(outs, res.OK, schedEnd.Sub(start), interval)
	return res
}

// sendSchedule sends on jobs the due times of n requests, request i due at
// start + i×interval, each once it is due; it returns when all are sent or
// ctx ends (then with the rest unsent). jobs must have room for n. Every
// wake-up sends all that are due, so a late timer never lowers the rate;
// the lateness shows in the latencies, which count from the due time.
func sendSchedule(ctx context.Context, jobs chan<- time.Time, n int, start time.Time, interval float64) {
	for i := 0; i < n; {
		now := time.Now()
		for ; i < n; i++ {
			at := start.Add(time.Duration(float64(i) * interval))
			if at.After(now) {
				break
			}
			jobs <- at
		}
		if i >= n {
			break
		}
		next := start.Add(time.Duration(float64(i) * interval))
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		if ctx.Err() != nil {
			break
		}
	}
}

// tally counts the outcomes of a run of n scheduled requests at rate (one
// list per worker) into a loadResult without its Span: the latencies and
// times to first byte of the OK ones, the errors by kind, cut streams and
// unsent requests. Requests with no outcome (never handed to a worker, ctx
// having ended the schedule early) count as unsent errors.
func tally(outs [][]outcome, rate float64, n int) *loadResult {
	res := &loadResult{Rate: rate, Scheduled: n, ErrorKinds: map[string]int{}}
	done := 0
	for _, list := range outs {
		for _, o := range list {
			done++
			switch {
			case o.ok:
				res.OK++
				res.Latency = append(res.Latency, o.latency)
				res.TTFB = append(res.TTFB, o.ttfb)
			default:
				res.Errors++
				res.ErrorKinds[o.kind]++
				if o.cut {
					res.Cut++
				}
				if o.unsent {
					res.Unsent++
				}
			}
		}
	}
	if missing := n - done; missing > 0 {
		res.Errors += missing
		res.Unsent += missing
		res.ErrorKinds["unsent"] += missing
	}
	return res
}

// answerSpan returns a run's span: the window the ok OK answers among outs
// came in, plus one interval (n answers due 1/rate apart take n intervals),
// and at least sched, the schedule's length: answers that keep up arrive at
// the rate, answers held up spread over a longer window. Long requests
// (streams) do not lower the rate by their length.
func answerSpan(outs [][]outcome, ok int, sched time.Duration, interval float64) time.Duration {
	if ok == 0 {
		return sched
	}
	var first, last time.Time
	for _, list := range outs {
		for _, o := range list {
			if !o.ok {
				continue
			}
			if first.IsZero() || o.finishedT.Before(first) {
				first = o.finishedT
			}
			if o.finishedT.After(last) {
				last = o.finishedT
			}
		}
	}
	return max(sched, last.Sub(first)+time.Duration(interval))
}

// doneMarker ends every complete OpenAI stream.
const doneMarker = "data: [DONE]"

// doRequest sends one request due at at and reads its answer.
func doRequest(ctx context.Context, client *http.Client, spec loadSpec, at time.Time, buf []byte) outcome {
	if ctx.Err() != nil {
		return outcome{unsent: true, kind: "unsent"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, spec.URL, bytes.NewReader(spec.Body))
	if err != nil {
		return outcome{kind: "request: " + err.Error()}
	}
	req.Header = spec.Header
	resp, err := client.Do(req)
	if err != nil {
		return outcome{kind: errKind(ctx, err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, resp.Body)
		return outcome{kind: fmt.Sprintf("status %d", resp.StatusCode)}
	}
	var first time.Time
	// tail keeps the end of the body, to find the stream's last event.
	var tail []byte
	for {
		k, err := resp.Body.Read(buf)
		if k > 0 {
			if first.IsZero() {
				first = time.Now()
			}
			if spec.Stream {
				tail = append(tail, buf[:k]...)
				if len(tail) > 256 {
					tail = append(tail[:0], tail[len(tail)-64:]...)
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return outcome{kind: "deadline"}
			}
			if spec.Stream {
				return outcome{cut: true, kind: "cut: " + shortErr(err)}
			}
			return outcome{kind: "read: " + shortErr(err)}
		}
	}
	end := time.Now()
	if first.IsZero() {
		first = end
	}
	if spec.Stream && !bytes.HasSuffix(bytes.TrimRight(tail, "\r\n"), []byte(doneMarker)) {
		return outcome{cut: true, kind: "cut: no [DONE]"}
	}
	return outcome{ok: true, latency: end.Sub(at), ttfb: first.Sub(at), finishedT: end}
}

// errKind names a transport error for the report.
func errKind(ctx context.Context, err error) string {
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return "deadline"
	}
	return "transport: " + shortErr(err)
}

// shortErr is err's message without the URL net/http prefixes it with.
func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && strings.Contains(s, "://") {
		s = s[i+2:]
	}
	return s
}
