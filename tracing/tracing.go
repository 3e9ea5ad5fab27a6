// Package tracing sets up OpenTelemetry tracing for Weir's binaries from
// the standard OTEL_* environment variables, exporting spans over OTLP.
//
// Tracing is on only when an OTLP endpoint is configured
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), and
// neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none says
// otherwise. Off, Start builds nothing: Enabled is false and callers are
// expected to skip their instrumentation altogether, so that tracing costs
// nothing on hot paths.
//
// Nothing here touches OpenTelemetry's global providers: the provider is
// handed to what uses it.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Provider is a binary's tracer provider: the SDK's, exporting over OTLP,
// or none when tracing is off. Close it on exit to flush spans.
type Provider struct {
	sdk *sdktrace.TracerProvider
}

// Config returns what the environment says of tracing: whether it is on,
// and over which OTLP protocol ("http/protobuf" or "grpc"). It reports an
// error for settings this package does not support (another exporter than
// otlp or none, or OTLP over http/json).
func Config(getenv func(string) string) (on bool, protocol string, err error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, "", nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false, "", nil
	case "", "otlp":
	default:
		return false, "", fmt.Errorf("tracing: OTEL_TRACES_EXPORTER=%q is not supported (otlp or none)", exp)
	}
	if getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
		return false, "", nil
	}
	protocol = getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch protocol {
	case "", "http/protobuf":
		return true, "http/protobuf", nil
	case "grpc":
		return true, protocol, nil
	}
	return false, "", fmt.Errorf("tracing: OTLP protocol %q is not supported (http/protobuf or grpc)", protocol)
}

// Start returns the provider the environment configures (Config), named
// service unless OTEL_SERVICE_NAME says otherwise. getenv decides whether
// tracing is on and how it exports; the SDK then reads the settings of the
// exporter (endpoint, headers, TLS, compression, timeout), the batch span
// processor (OTEL_BSP_*), the sampler (OTEL_TRACES_SAMPLER, default
// parent-based always-on) and the resource (OTEL_RESOURCE_ATTRIBUTES) from
// the process environment itself.
func Start(ctx context.Context, service string, getenv func(string) string) (*Provider, error) {
	on, protocol, err := Config(getenv)
	if err != nil || !on {
		return &Provider{}, err
	}
	var exp sdktrace.SpanExporter
	if protocol == "grpc" {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	// Later options override earlier ones: OTEL_SERVICE_NAME wins over
	// service.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return &Provider{sdk: sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))}, nil
}

// Enabled reports whether spans are recorded and exported.
func (p *Provider) Enabled() bool { return p.sdk != nil }

// TracerProvider is the provider to start spans with: a no-op one when
// tracing is off.
func (p *Provider) TracerProvider() trace.TracerProvider {
	if p.sdk == nil {
		return noop.NewTracerProvider()
	}
	return p.sdk
}

// Close flushes the spans not yet exported and stops the exporter, within
// ctx. Spans started afterwards are dropped.
func (p *Provider) Close(ctx context.Context) error {
	if p.sdk == nil {
		return nil
	}
	return p.sdk.Shutdown(ctx)
}

// CloseLogged is Close within timeout, for a process's last step: a
// failure to flush is logged, since nothing else is left to report it to.
func (p *Provider) CloseLogged(timeout time.Duration, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		log.Error("flushing traces", "err", err)
	}
}

// Propagator is how trace context crosses process boundaries: W3C Trace
// Context (traceparent and tracestate). Baggage is not propagated: a
// caller's baggage is not for its providers.
func Propagator() propagation.TextMapPropagator { return propagation.TraceContext{} }
