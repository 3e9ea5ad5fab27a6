package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// These tests check the harness's counting, not anyone's speed.

func TestLoadCountsAtFixedRate(t *testing.T) {
	t.Parallel()
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if len(b) != bodySize {
			http.Error(w, "short body", http.StatusBadRequest)
			return
		}
		got.Add(1)
		time.Sleep(2 * time.Millisecond)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	client := newLoadClient(32)
	defer client.CloseIdleConnections()

	res := runLoad(context.Background(), client, loadSpec{URL: srv.URL, Header: http.Header{}, Body: chatBody(bodySize, false), Rate: 200, Duration: time.Second, Conns: 32})
	if res.Scheduled != 200 || res.OK != 200 || res.Errors != 0 || got.Load() != 200 {
		t.Fatalf("scheduled %d, ok %d, errors %d %v, server saw %d; want 200 of each", res.Scheduled, res.OK, res.Errors, res.ErrorKinds, got.Load())
	}
	if a := res.Achieved(); a < 180 || a > 201 {
		t.Errorf("achieved %.1f/s, want about 200/s", a)
	}
	if p50 := percentile(res.Latency, 50); p50 < 2*time.Millisecond {
		t.Errorf("p50 %v is below the server's own 2 ms", p50)
	}
	if !sustainableRes(res, time.Second) {
		t.Errorf("a run that kept up is not sustainable: %+v", res)
	}
}

// TestLoadLatencyFromScheduledTime overloads a server that answers one
// request at a time in 10 ms with 200 requests a second: a closed loop
// would report 10 ms each; the open loop reports the queue too.
func TestLoadLatencyFromScheduledTime(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(10 * time.Millisecond)
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	client := newLoadClient(1)
	defer client.CloseIdleConnections()

	// 100 requests due 5 ms apart; served 10+ ms apart on one connection,
	// request i ends near 10(i+1) ms but was due at 5i ms.
	res := runLoad(context.Background(), client, loadSpec{URL: srv.URL, Header: http.Header{}, Body: []byte("{}"), Rate: 200, Duration: 500 * time.Millisecond, Conns: 1, Drain: 5 * time.Second})
	if res.Scheduled != 100 || res.OK != 100 {
		t.Fatalf("scheduled %d, ok %d (%v)", res.Scheduled, res.OK, res.ErrorKinds)
	}
	if p99 := percentile(res.Latency, 99); p99 < 450*time.Millisecond {
		t.Errorf("p99 %v: latency is not counted from the scheduled time (want ≥ 450 ms)", p99)
	}
	if p50 := percentile(res.Latency, 50); p50 < 200*time.Millisecond {
		t.Errorf("p50 %v: latency is not counted from the scheduled time (want ≥ 200 ms)", p50)
	}
	if a := res.Achieved(); a > 105 {
		t.Errorf("achieved %.1f/s; one connection at 10 ms a request cannot beat 100/s", a)
	}
	if sustainableRes(res, time.Second) {
		t.Error("an overloaded run counts as sustainable")
	}
}

func TestLoadDetectsCutStreams(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		i := n.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"x\":1}\n\n")
		w.(http.Flusher).Flush()
		switch i % 4 {
		case 1: // the connection dies mid-stream
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		case 2: // a clean end without [DONE]
			_, _ = io.WriteString(w, "data: {\"x\":2}\n\n")
			return
		}
		_, _ = io.WriteString(w, "data: {\"x\":2}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	client := newLoadClient(16)
	defer client.CloseIdleConnections()

	res := runLoad(context.Background(), client, loadSpec{URL: srv.URL, Header: http.Header{}, Body: chatBody(bodySize, true), Stream: true, Rate: 100, Duration: time.Second, Conns: 16})
	if res.Scheduled != 100 || res.OK != 50 || res.Cut != 50 || res.Errors != 50 {
		t.Fatalf("scheduled %d, ok %d, cut %d, errors %d (%v); want 100, 50, 50, 50", res.Scheduled, res.OK, res.Cut, res.Errors, res.ErrorKinds)
	}
	if len(res.TTFB) != 50 || percentile(res.TTFB, 50) > percentile(res.Latency, 50) {
		t.Errorf("TTFB %d samples, p50 %v after the end p50 %v", len(res.TTFB), percentile(res.TTFB, 50), percentile(res.Latency, 50))
	}
}

func TestLoadCountsStatusesAndDeadline(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if n.Add(1)%10 == 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	client := newLoadClient(8)
	defer client.CloseIdleConnections()
	res := runLoad(context.Background(), client, loadSpec{URL: srv.URL, Header: http.Header{}, Body: []byte("{}"), Rate: 100, Duration: time.Second, Conns: 8})
	if res.OK != 90 || res.Errors != 10 || res.ErrorKinds["status 503"] != 10 || res.Cut != 0 {
		t.Fatalf("ok %d, errors %d %v, cut %d", res.OK, res.Errors, res.ErrorKinds, res.Cut)
	}

	// A server that never answers: everything still out at the deadline
	// is an error, and the run ends within schedule + drain.
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hang.Close()
	defer close(release)
	start := time.Now()
	res = runLoad(context.Background(), client, loadSpec{URL: hang.URL, Header: http.Header{}, Body: []byte("{}"), Rate: 50, Duration: 200 * time.Millisecond, Conns: 4, Drain: 300 * time.Millisecond})
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("run took %v, want about 0.5 s", took)
	}
	if res.OK != 0 || res.Errors != res.Scheduled || res.Scheduled != 10 || res.Unsent == 0 {
		t.Fatalf("scheduled %d ok %d errors %d unsent %d %v", res.Scheduled, res.OK, res.Errors, res.Unsent, res.ErrorKinds)
	}
}

func TestBareProxyBuffersBodyAndStreams(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != bodySize {
			http.Error(w, fmt.Sprintf("content length %d", r.ContentLength), http.StatusBadRequest)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for range 3 {
			_, _ = io.WriteString(w, "data: {}\n\n")
			w.(http.Flusher).Flush()
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer up.Close()
	u, err := checkLoopbackURL(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	h, tr := newBareProxy(u)
	defer tr.CloseIdleConnections()
	px := httptest.NewServer(h)
	defer px.Close()

	// A chunked request body (no Content-Length) reaches the upstream with
	// one, since the proxy read it first.
	req, _ := http.NewRequest(http.MethodPost, px.URL+"/v1/chat/completions", io.MultiReader(bytes.NewReader(chatBody(bodySize, true))))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasSuffix(strings.TrimSpace(string(b)), "data: [DONE]") {
		t.Fatalf("status %d body %q", resp.StatusCode, b)
	}
}

func TestLoopbackOnly(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"http://10.0.0.1:80", "http://example.com", "https://127.0.0.1:1", "http://[::1]:80"} {
		if _, err := checkLoopbackURL(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, err := checkLoopbackURL("http://127.0.0.1:8080"); err != nil {
		t.Error(err)
	}
	if err := checkLoopbackAddr("0.0.0.0:80"); err == nil {
		t.Error("0.0.0.0 accepted")
	}
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"reverse-proxy", "-upstream", "http://192.0.2.1:80"}, func(string) string { return "" }, io.Discard, &stderr); code != 2 {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

func TestProcParsing(t *testing.T) {
	t.Parallel()
	d, err := parseStatCPU([]byte("1234 (we ird) (name)) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1 0"))
	if err != nil || d != 3*time.Second {
		t.Errorf("cpu %v %v, want 3s", d, err)
	}
	rss, err := parseVmRSS([]byte("Name:\tx\nVmPeak:\t 9 kB\nVmRSS:\t  2048 kB\n"))
	if err != nil || rss != 2<<20 {
		t.Errorf("rss %d %v", rss, err)
	}
	if _, err := parseVmRSS([]byte("Name:\tx\n")); err == nil {
		t.Error("no VmRSS accepted")
	}
}

func TestChatBodyIsOneKilobyte(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		b := chatBody(bodySize, stream)
		if len(b) != bodySize || bytes.Contains(b, []byte(`"stream":true`)) != stream {
			t.Errorf("stream %v: %d bytes %.80s", stream, len(b), b)
		}
	}
}

func TestReportRenders(t *testing.T) {
	t.Parallel()
	cfg := defaults(true)
	mk := func(target string, rate int, lat time.Duration, cut int) *measured {
		res := &loadResult{Rate: float64(rate), Scheduled: 100, OK: 100, Cut: cut, Span: time.Second, ErrorKinds: map[string]int{}}
		for range 100 {
			res.Latency = append(res.Latency, lat)
			res.TTFB = append(res.TTFB, lat/2)
		}
		return &measured{target: target, rate: rate, round: 1, res: res, cpu: 30 * time.Millisecond, fakeCPU: 10 * time.Millisecond}
	}
	var chat, stream []*measured
	for _, rate := range cfg.Rates {
		chat = append(chat, mk("direct", rate, time.Millisecond, 0), mk("edge", rate, 1300*time.Microsecond, 0), mk("proxy", rate, 1200*time.Microsecond, 0))
	}
	stream = append(stream, mk("direct", 200, 40*time.Millisecond, 0), mk("edge", 200, 41*time.Millisecond, 1), mk("proxy", 200, 41*time.Millisecond, 0))
	out := renderReport(&results{
		cfg: cfg, chat: chat, stream: stream,
		max: map[string]*maxRate{"direct": {target: "direct", best: 3000}, "edge": {target: "edge", best: 2000, failedAt: 3000}, "proxy": {target: "proxy", best: 3000}},
		mem: []*memory{{target: "edge", before: 30 << 20, with: 40 << 20, opened: 200, wanted: 200}, {target: "proxy", before: 20 << 20, with: 25 << 20, opened: 200, wanted: 200}},
	})
	for _, want := range []string{
		"| CPU per request, non-streaming at 2000 rps (µs) | 300 | 300 | **1.00×** |",
		"| added p50 latency vs direct (ms) at 500 / 2000 rps | +0.300 / +0.300 | +0.200 / +0.200 | 1.50× / 1.50× |",
		"| max sustainable rate (rps; direct to fake: ≥ 3000) | 2000 | ≥ 3000 | **≤ 0.67×** |",
		"| cut streams, all streaming runs (must be 0) | 1 | 0 | |",
		"| RSS growth per open stream (KiB) | 51.2 | 25.6 | 2.00× |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
