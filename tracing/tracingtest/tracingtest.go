// Package tracingtest is an in-process OTLP/HTTP trace receiver for tests:
// it decodes what an exporter sends, as a collector would.
package tracingtest

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span with its resource's service name.
type Span struct {
	Service string
	*tracepb.Span
}

// TraceID is the span's trace id, hex.
func (s Span) TraceID() string { return hex.EncodeToString(s.Span.TraceId) }

// SpanID is the span's id, hex.
func (s Span) SpanID() string { return hex.EncodeToString(s.Span.SpanId) }

// ParentID is the span's parent span id, hex ("" for a root span).
func (s Span) ParentID() string { return hex.EncodeToString(s.Span.ParentSpanId) }

// Attrs returns the span's attributes as Go values (string, int64, bool,
// float64; other kinds as their protobuf text).
func (s Span) Attrs() map[string]any {
	m := map[string]any{}
	for _, kv := range s.Attributes {
		m[kv.Key] = value(kv.Value)
	}
	return m
}

func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	}
	return v.String()
}

// Receiver is an OTLP/HTTP endpoint (protobuf, optionally gzip) that keeps
// every span it receives.
type Receiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []Span
}

// NewReceiver starts a receiver, closed when the test ends.
func NewReceiver(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.export)
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	return r
}

// URL is the receiver's base URL, for OTEL_EXPORTER_OTLP_ENDPOINT.
func (r *Receiver) URL() string { return r.srv.URL }

func (r *Receiver) export(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.got = append(r.got, Span{Service: service, Span: s})
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.got...)
}

// Wait returns the spans received once some span satisfies ok, or all
// received when ctx ends first.
func (r *Receiver) Wait(ctx context.Context, ok func(Span) bool) []Span {
	for {
		spans := r.Spans()
		for _, s := range spans {
			if ok(s) {
				return spans
			}
		}
		select {
		case <-ctx.Done():
			return spans
		case <-time.After(20 * time.Millisecond):
		}
	}
}
