package gateway_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"weir.dev/edge/internal/fakeprovider"
	"weir.dev/edge/internal/gateway"
	"weir.dev/edge/internal/netguard"
	"weir.dev/edge/internal/secrets"
	"weir.dev/edge/internal/upauth"
	"weir.dev/edge/internal/usage"
	"weir.dev/edge/internal/wire"
	"weir.dev/edge/internal/wire/anthropic"
	"weir.dev/edge/internal/wire/bedrock"
	"weir.dev/edge/internal/wire/gemini"
	"weir.dev/edge/internal/wire/openai"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing"
	"weir.dev/routing/compile"
)

// The benchmarks below send whole requests over loopback, client → handler
// → in-process fake provider, in parallel. ns/op is wall time per call with
// GOMAXPROCS callers; B/op and allocs/op count the whole process (client,
// handler and fake), so compare the gateway with BenchmarkReverseProxy and
// BenchmarkDirect, which share the client and the fake: the difference is
// the gateway's own share. They assert nothing about time.

// benchBodySize is the size of the benchmarks' chat bodies.
const benchBodySize = 1024

// benchChatBody returns a 1 KB OpenAI chat body for model gpt-x.
func benchChatBody(stream bool) []byte {
	head := `{"model":"gpt-x",`
	if stream {
		head += `"stream":true,`
	}
	head += `"messages":[{"role":"user","content":"`
	tail := `"}]}`
	pad := benchBodySize - len(head) - len(tail)
	return []byte(head + strings.Repeat("lorem ipsum dolor sit amet ", pad/27+1)[:pad] + tail)
}

// benchTransport is the tuned upstream transport the edge binary uses.
func benchTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 1024, 256
	t.ResponseHeaderTimeout = 0
	return t
}

// benchFake starts an in-process fake provider that keeps no history.
func benchFake(b *testing.B) *fakeprovider.Server {
	return benchFakeFlavor(b, fakeprovider.FlavorOpenAI)
}

// benchFakeFlavor starts an in-process fake provider of one flavor that
// keeps no history.
func benchFakeFlavor(b *testing.B, flavor fakeprovider.Flavor) *fakeprovider.Server {
	b.Helper()
	f := fakeprovider.New(fakeprovider.Options{Flavor: flavor, APIKey: providerKey, History: -1})
	if _, err := f.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Close() })
	return f
}

// benchGateway serves, as the edge binary does without --usage-log
// (records discarded, tuned transport, default metrics), a gateway whose one
// pool member is fake.
func benchGateway(b *testing.B, fake *fakeprovider.Server) string {
	return benchGatewayWire(b, fake, configv1.WireFormat_WIRE_FORMAT_OPENAI)
}

// benchGatewayWire is benchGateway with a record of wire format w serving
// gpt-x: an anthropic record makes every OpenAI-format call translated
// (R-FMT-2).
func benchGatewayWire(b *testing.B, fake *fakeprovider.Server, w configv1.WireFormat) string {
	return benchGatewayTraced(b, fake, w, nil)
}

// benchGatewayTraced is benchGatewayWire whose calls are traced by tracer
// (nil: not traced).
func benchGatewayTraced(b *testing.B, fake *fakeprovider.Server, w configv1.WireFormat, tracer trace.Tracer) string {
	b.Helper()
	auth, base := &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "authorization"}, fake.URL()+"/v1"
	if w == configv1.WireFormat_WIRE_FORMAT_ANTHROPIC {
		auth, base = &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "x-api-key"}, fake.URL()
	}
	sum := sha256.Sum256([]byte(callerKey))
	snap := &configv1.TenantSnapshot{
		Version: 1,
		Tenant:  &configv1.Tenant{Id: "tenant-1", Name: "acme"},
		ApiKeys: []*configv1.ApiKey{{Id: "key-1", Name: "bench", Sha256: sum[:]}},
		Records: []*configv1.ProviderRecord{{
			Id: "rec-pool", Name: "pool", TenantId: "tenant-1", WireFormat: w,
			Models:    []*configv1.Model{chatModel("gpt-x")},
			Auth:      auth,
			KeySecret: "key",
			Members:   []*configv1.Member{{Name: "fake", BaseUrl: base, Weight: 1, Order: 1}},
		}},
	}
	table, err := compile.Compile(snap, nil)
	if err != nil {
		b.Fatalf("compile: %v", err)
	}
	store, err := secrets.NewStore([]secrets.Secret{{Name: "key", TenantID: "tenant-1", Hosts: []string{"127.0.0.1"}, Value: []byte(providerKey)}})
	if err != nil {
		b.Fatal(err)
	}
	reg := gateway.NewRegistry()
	reg.Put(table)
	transport := netguard.NewTransport(nil, benchTransport())
	b.Cleanup(transport.CloseIdleConnections)
	gw, err := gateway.New(gateway.Config{
		EdgeID: "edge-bench", Registry: reg, States: routing.NewStates(),
		Adapters: map[routing.WireFormat]wire.Adapter{
			routing.WireOpenAI: openai.Adapter{}, routing.WireAnthropic: anthropic.Adapter{}, routing.WireBedrock: bedrock.Adapter{}, routing.WireGemini: gemini.Adapter{},
		},
		Signer: upauth.New(store, &http.Client{Transport: transport}, time.Now), SignErrorKind: upauth.Kind,
		Transport: transport, Sink: usage.Discard{}, Metrics: gateway.NewMetrics(), Tracer: tracer,
	})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	b.Cleanup(srv.Close)
	return srv.URL
}

// benchReverseProxy serves a bare httputil.ReverseProxy to fake with the
// same tuned transport. Like the edge (and weir-bench's proxy) it reads the
// request body fully before forwarding it.
func benchReverseProxy(b *testing.B, fake *fakeprovider.Server) string {
	b.Helper()
	up, err := url.Parse(fake.URL())
	if err != nil {
		b.Fatal(err)
	}
	tr := benchTransport()
	b.Cleanup(tr.CloseIdleConnections)
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(up) }, Transport: tr}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 32<<20))
		if err != nil {
			http.Error(w, "request body could not be read", http.StatusBadRequest)
			return
		}
		r.Body, r.ContentLength, r.TransferEncoding = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		rp.ServeHTTP(w, r)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

// benchCalls posts body to url+"/v1/chat/completions" with key from
// GOMAXPROCS goroutines and reads each answer whole. A stream must end with
// "data: [DONE]".
func benchCalls(b *testing.B, base, key string, stream bool) {
	body := benchChatBody(stream)
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64, DisableCompression: true}}
	b.Cleanup(client.CloseIdleConnections)
	url := base + "/v1/chat/completions"
	header := http.Header{"Authorization": {"Bearer " + key}, "Content-Type": {"application/json"}}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var buf bytes.Buffer
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			req.Header = header
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			buf.Reset()
			_, err = buf.ReadFrom(resp.Body)
			resp.Body.Close()
			switch {
			case err != nil:
				b.Errorf("read: %v", err)
				return
			case resp.StatusCode != http.StatusOK:
				b.Errorf("status %d: %.300s", resp.StatusCode, buf.Bytes())
				return
			case stream && !bytes.HasSuffix(bytes.TrimSpace(buf.Bytes()), []byte("data: [DONE]")):
				b.Errorf("stream cut: %.300q", buf.Bytes())
				return
			}
		}
	})
}

// BenchmarkChat measures a non-streaming 1 KB chat call through the
// gateway to the fake provider.
func BenchmarkChat(b *testing.B) {
	fake := benchFake(b)
	benchCalls(b, benchGateway(b, fake), callerKey, false)
}

// BenchmarkChatStream measures a streamed chat call (16 tokens) through the
// gateway to the fake provider.
func BenchmarkChatStream(b *testing.B) {
	fake := benchFake(b)
	benchCalls(b, benchGateway(b, fake), callerKey, true)
}

// BenchmarkChatTranslated measures a non-streaming OpenAI-format call
// served by an Anthropic member: the body and the answer are translated
// (R-FMT-2). Compare with BenchmarkChat (issue goal: ≤ 1.3× its CPU).
func BenchmarkChatTranslated(b *testing.B) {
	fake := benchFakeFlavor(b, fakeprovider.FlavorAnthropic)
	benchCalls(b, benchGatewayWire(b, fake, configv1.WireFormat_WIRE_FORMAT_ANTHROPIC), callerKey, false)
}

// BenchmarkChatStreamTranslated is BenchmarkChatTranslated streamed: each
// Anthropic event is translated into OpenAI chunks as it arrives.
func BenchmarkChatStreamTranslated(b *testing.B) {
	fake := benchFakeFlavor(b, fakeprovider.FlavorAnthropic)
	benchCalls(b, benchGatewayWire(b, fake, configv1.WireFormat_WIRE_FORMAT_ANTHROPIC), callerKey, true)
}

// BenchmarkChatTraced is BenchmarkChat with every call traced (a call span
// and an attempt span, sampled and recorded): the cost of tracing when it
// is on, less the export (the spans are dropped when they end).
func BenchmarkChatTraced(b *testing.B) {
	fake := benchFake(b)
	tp := sdktrace.NewTracerProvider()
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	benchCalls(b, benchGatewayTraced(b, fake, configv1.WireFormat_WIRE_FORMAT_OPENAI, tp.Tracer("bench")), callerKey, false)
}

// BenchmarkReverseProxy is the baseline: the same calls through a bare
// httputil.ReverseProxy with the same transport, to the same fake.
func BenchmarkReverseProxy(b *testing.B) {
	for _, stream := range []bool{false, true} {
		b.Run(benchName(stream), func(b *testing.B) {
			fake := benchFake(b)
			benchCalls(b, benchReverseProxy(b, fake), providerKey, stream)
		})
	}
}

// BenchmarkDirect is the floor: the same calls straight to the fake.
func BenchmarkDirect(b *testing.B) {
	for _, stream := range []bool{false, true} {
		b.Run(benchName(stream), func(b *testing.B) {
			fake := benchFake(b)
			benchCalls(b, fake.URL(), providerKey, stream)
		})
	}
}

func benchName(stream bool) string {
	if stream {
		return "stream"
	}
	return "chat"
}
