package gateway_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"weir.dev/edge/internal/fakeprovider"
	"weir.dev/edge/internal/gateway"
)

func TestMetricsExposition(t *testing.T) {
	t.Parallel()
	// R-OBS-3: pool events by record, member and event; request, upstream
	// and overhead durations, in Prometheus text format.
	h := newHarness(t, pool(t, "a", "b"))
	h.fakes["a"].Enqueue(fakeprovider.RateLimited(2e9))
	if res := h.post("/v1/chat/completions", chatBody); res.status != 200 {
		t.Fatalf("status %d", res.status)
	}
	m := gatewayMetrics(h)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`weir_pool_events_total{event="rate_limited",member="a",record="pool"} 1`,
		`weir_pool_events_total{event="answered",member="b",record="pool"} 1`,
		`weir_request_duration_seconds_count{endpoint="/v1/chat/completions",status="200"} 1`,
		`weir_upstream_duration_seconds_count{member="b",record="pool"} 1`,
		`weir_overhead_seconds_count 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func gatewayMetrics(h *harness) *gateway.Metrics { return h.gw.Metrics() }
