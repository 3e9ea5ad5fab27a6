package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"weir.dev/edge/internal/fakeprovider"
	"weir.dev/tracing"
	"weir.dev/tracing/tracingtest"
)

// TestTracingOffByDefault: without OTEL_* settings the gateway gets no
// tracer at all, so calls start no span and allocate nothing for tracing.
func TestTracingOffByDefault(t *testing.T) {
	t.Parallel()
	p, err := tracing.Start(context.Background(), "weir-edge", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if tr := gatewayTracer(p); tr != nil {
		t.Fatalf("gateway tracer %T without any OTEL_* setting, want none", tr)
	}
}

// TestTracesExportedOnExit: with OTEL_EXPORTER_OTLP_ENDPOINT set, the
// edge's call spans reach the OTLP receiver, flushed when the edge exits.
func TestTracesExportedOnExit(t *testing.T) {
	recv := tracingtest.NewReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL())
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "60000") // only the exit flushes
	fake := fakeprovider.New(fakeprovider.Options{})
	up, err := fake.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	getenv := func(k string) string {
		if k == "TEST_KEY" {
			return "sk-x"
		}
		return os.Getenv(k)
	}
	go func() {
		done <- run(ctx, []string{"--config", writeConfig(t, up), "--listen", addr, "--admin-listen", "", "--shutdown-grace", "5s"}, getenv, io.Discard, &stderr)
	}()
	waitReady(t, addr, &stderr)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer k-test")
	req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("edge did not exit")
	}
	var names []string
	for _, s := range recv.Spans() {
		names = append(names, s.Name)
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.Name == "chat gpt-x" && s.TraceID() == "4bf92f3577b34da6a3ce929d0e0e4736" && s.Service == "weir-edge" {
			return
		}
	}
	t.Fatalf("no call span of service weir-edge in the caller's trace among %q", names)
}
