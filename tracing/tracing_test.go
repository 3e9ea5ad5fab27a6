package tracing_test

import (
	"context"
	"os"
	"testing"
	"time"

	"weir.dev/tracing"
	"weir.dev/tracing/tracingtest"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		env      map[string]string
		on       bool
		protocol string
		err      bool
	}{
		{name: "nothing set", env: nil},
		{name: "endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, on: true, protocol: "http/protobuf"},
		{name: "traces endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, on: true, protocol: "http/protobuf"},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, on: true, protocol: "grpc"},
		{name: "traces protocol wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, on: true, protocol: "grpc"},
		{name: "sdk disabled", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}},
		{name: "exporter none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}},
		{name: "exporter console", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "console"}, err: true},
		{name: "http/json", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			on, protocol, err := tracing.Config(env(tc.env))
			if on != tc.on || protocol != tc.protocol || (err != nil) != tc.err {
				t.Errorf("Config = %v, %q, %v; want %v, %q, error %v", on, protocol, err, tc.on, tc.protocol, tc.err)
			}
		})
	}
}

func TestOffIsNoop(t *testing.T) {
	t.Parallel()
	p, err := tracing.Start(context.Background(), "weir-test", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if p.Enabled() {
		t.Error("tracing is on without an endpoint")
	}
	_, span := p.TracerProvider().Tracer("t").Start(context.Background(), "x")
	if span.IsRecording() || span.SpanContext().IsValid() {
		t.Error("a span of the provider that is off records")
	}
	if err := p.Close(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestExportsToEndpoint sends a span over OTLP/HTTP to an in-process
// receiver, configured by the environment alone.
func TestExportsToEndpoint(t *testing.T) {
	recv := tracingtest.NewReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL())
	t.Setenv("OTEL_SERVICE_NAME", "")
	ctx := context.Background()
	p, err := tracing.Start(ctx, "weir-test", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Enabled() {
		t.Fatal("tracing is off with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	_, span := p.TracerProvider().Tracer("t").Start(ctx, "hello")
	span.End()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := p.Close(cctx); err != nil {
		t.Fatal(err)
	}
	spans := recv.Spans()
	if len(spans) != 1 || spans[0].Name != "hello" || spans[0].Service != "weir-test" {
		t.Fatalf("received %+v, want one span hello of service weir-test", spans)
	}
}
