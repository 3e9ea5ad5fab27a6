// Command weir-bench measures the edge against a bare Go reverse proxy, both
// in front of the same fake provider, on loopback.
//
// It builds nothing: give it the edge and fake provider binaries (make bench
// builds them into var/bin first). It starts, as separate processes on
// 127.0.0.1, one fake provider, the edge in standalone mode and a bare
// httputil.ReverseProxy (a mode of weir-bench itself), then runs an
// open-loop load generator in-process against the fake directly, the edge
// and the proxy, interleaved, and prints a Markdown table.
//
// Usage:
//
//	weir-bench [-edge PATH] [-fake PATH] [-quick] [-out FILE] [-cpuprofile FILE] …
//	weir-bench reverse-proxy -listen 127.0.0.1:PORT -upstream http://127.0.0.1:PORT
//
// See BENCHMARKING.md for why it measures what it measures: CPU time per
// request of the proxy process and the maximum sustainable rate hold still
// on a shared 2-core machine; p99 latency does not.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
