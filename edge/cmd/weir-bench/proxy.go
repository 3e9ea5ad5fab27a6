package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"
)

// maxProxyBody bounds the request bodies the bare proxy buffers, like the
// edge's --max-body.
const maxProxyBody = 32 << 20

// newBareProxy returns the baseline the edge is compared with: an
// httputil.ReverseProxy with a tuned transport to upstream. It reads each
// request body fully before forwarding it, as the edge does: forwarding the
// body while streaming the answer cut SSE streams under load (see
// BENCHMARKING.md).
func newBareProxy(upstream *url.URL) (http.Handler, *http.Transport) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // never an environment proxy: loopback only
	tr.MaxIdleConns = 2048
	tr.MaxIdleConnsPerHost = 1024
	tr.IdleConnTimeout = 90 * time.Second
	rp := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(upstream) },
		Transport: tr,
		// FlushInterval stays 0: ReverseProxy flushes streams (SSE or no
		// Content-Length) at every write anyway.
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(r, maxProxyBody)
		if err != nil {
			http.Error(w, "request body could not be read", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.TransferEncoding = nil // sent with a Content-Length now
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		rp.ServeHTTP(w, r)
	})
	return h, tr
}

// readBody reads r's body whole, at most limit bytes.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	lr := http.MaxBytesReader(nil, r.Body, limit)
	if n := r.ContentLength; n > 0 && n <= limit {
		b := make([]byte, n)
		if _, err := io.ReadFull(lr, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(lr)
}

// checkLoopbackURL refuses any URL whose host is not a 127.0.0.0/8 literal:
// the benchmark sends traffic to nothing else.
func checkLoopbackURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("%s: only http:// on loopback", raw)
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || ip.To4() == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("%s: the host must be a 127.0.0.0/8 address", raw)
	}
	return u, nil
}

// checkLoopbackAddr refuses a listen address outside 127.0.0.0/8.
func checkLoopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || ip.To4() == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s: listen on a 127.0.0.0/8 address", addr)
	}
	return nil
}

// runProxy serves the bare reverse proxy until ctx ends. It prints
// "listening on ADDR" once it accepts connections.
func runProxy(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("weir-bench reverse-proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	upstream := fs.String("upstream", "", "upstream base URL, http://127.0.0.1:PORT")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	u, err := checkLoopbackURL(*upstream)
	if err == nil {
		err = checkLoopbackAddr(*listen)
	}
	if err != nil {
		fmt.Fprintln(stderr, "weir-bench reverse-proxy:", err)
		return 2
	}
	h, tr := newBareProxy(u)
	defer tr.CloseIdleConnections()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(stderr, "weir-bench reverse-proxy:", err)
		return 1
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: 1 << 20}
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "listening on %s\n", ln.Addr())
	select {
	case <-ctx.Done():
	case err := <-errs:
		fmt.Fprintln(stderr, "weir-bench reverse-proxy:", err)
		return 1
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	return 0
}
