package gateway_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"weir.dev/edge/internal/fakeprovider"
	"weir.dev/edge/internal/gateway"
	configv1 "weir.dev/proto/gen/weir/config/v1"
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

// R-FMT-6, R-CAP-1, R-HEAD-6: served calls by the member's format and
// translation, and each member's in-flight calls and requests today
// against this edge's shares of its declared limits, read at the scrape.
func TestMetricsFormatAndMemberLimits(t *testing.T) {
	t.Parallel()
	sp := anthropicRecord(t, "a")
	prev := sp.members[0].edit
	sp.members[0].edit = func(m *configv1.Member) {
		prev(m)
		m.Limits = &configv1.Limits{MaxInFlight: 7, Rpd: 1000}
	}
	sp.edit = func(r *configv1.ProviderRecord) { r.DayZone = "Europe/Oslo" }
	h := newHarness(t, sp)
	h.gw.Metrics().WatchMembers(h.reg, h.states, time.Now)
	for range 2 {
		if res := h.post("/v1/chat/completions", `{"model":"claude-x","messages":[{"role":"user","content":"hi"}]}`); res.status != 200 {
			t.Fatalf("status %d: %s", res.status, res.body)
		}
	}
	if res := h.post("/v1/messages", `{"model":"claude-x","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`, "x-api-key", callerKey, "Authorization", ""); res.status != 200 {
		t.Fatalf("messages status %d: %s", res.status, res.body)
	}
	rec := httptest.NewRecorder()
	h.gw.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	labels := `{format="anthropic",member="a",record="claude",tenant="acme"}`
	for _, want := range []string{
		`weir_calls_served_total{endpoint="/v1/chat/completions",member_format="anthropic",translated="true"} 2`,
		`weir_calls_served_total{endpoint="/v1/messages",member_format="anthropic",translated="false"} 1`,
		`weir_member_in_flight` + labels + ` 0`,
		`weir_member_max_in_flight` + labels + ` 7`,
		`weir_member_requests_today` + labels + ` 3`,
		`weir_member_requests_per_day` + labels + ` 1000`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func gatewayMetrics(h *harness) *gateway.Metrics { return h.gw.Metrics() }
