package gateway

import (
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"weir.dev/routing"
)

// sampleCount is the number of observations of h's child with values.
func sampleCount(t *testing.T, m *Metrics, values ...string) uint64 {
	t.Helper()
	var d dto.Metric
	if err := m.RequestDuration.WithLabelValues(values...).(interface{ Write(*dto.Metric) error }).Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetHistogram().GetSampleCount()
}

// TestDurationForLabels: the cached children DurationFor hands out observe
// under the same labels a label lookup gives, for cached and uncached
// statuses and every endpoint.
func TestDurationForLabels(t *testing.T) {
	m := NewMetrics()
	eps := []routing.Endpoint{routing.EndpointChatCompletions, routing.EndpointMessages}
	for _, ep := range eps {
		for _, status := range []int{200, 429, 503, 418, 500} {
			for range 2 { // the second time from the cache
				m.DurationFor(ep, status).Observe(0.01)
			}
		}
	}
	for _, ep := range eps {
		for _, status := range []int{200, 429, 503, 418, 500} {
			if got := sampleCount(t, m, ep.String(), statusLabel(status)); got != 2 {
				t.Errorf("%s %d: %d observations, want 2", ep, status, got)
			}
		}
		if got := sampleCount(t, m, ep.String(), "400"); got != 0 {
			t.Errorf("%s 400: %d observations, want 0", ep, got)
		}
	}
}

// TestDateHeader: the shared Date value is net/http's format of the
// current second, the same slice within a second and a new one after it.
func TestDateHeader(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 5, 50, 7, 100, time.FixedZone("x", 3600))
	a := dateHeader(t0)
	if want := "Sun, 06 Dec 2026 04:50:07 GMT"; len(a) != 1 || a[0] != want {
		t.Fatalf("Date %q, want [%q]", a, want)
	}
	if cap(a) != 1 {
		t.Errorf("cap %d: an append could reach the shared value", cap(a))
	}
	b := dateHeader(t0.Add(800 * time.Millisecond))
	if &a[0] != &b[0] {
		t.Error("same second formatted again")
	}
	c := dateHeader(t0.Add(time.Second))
	if c[0] != "Sun, 06 Dec 2026 04:50:08 GMT" {
		t.Errorf("next second: %q", c)
	}
	if _, err := http.ParseTime(c[0]); err != nil {
		t.Error(err)
	}
}

// TestMemberChildren: Upstream and Event hand out the children a label
// lookup gives, the same ones on later calls, apart for other labels.
func TestMemberChildren(t *testing.T) {
	m := NewMetrics()
	for range 3 {
		m.Upstream("rec", "a").Observe(0.1)
		m.Event("rec", "a", "answered").Inc()
	}
	m.Upstream("rec", "b").Observe(0.1)
	m.Event("rec", "a", "rate_limited").Inc()
	m.Event("rec2", "a", "answered").Inc()
	var d dto.Metric
	count := func(c interface{ Write(*dto.Metric) error }) float64 {
		d.Reset()
		if err := c.Write(&d); err != nil {
			t.Fatal(err)
		}
		if h := d.GetHistogram(); h != nil {
			return float64(h.GetSampleCount())
		}
		return d.GetCounter().GetValue()
	}
	for _, tc := range []struct {
		c    interface{ Write(*dto.Metric) error }
		want float64
	}{
		{m.UpstreamDur.WithLabelValues("rec", "a").(interface{ Write(*dto.Metric) error }), 3},
		{m.UpstreamDur.WithLabelValues("rec", "b").(interface{ Write(*dto.Metric) error }), 1},
		{m.PoolEvents.WithLabelValues("rec", "a", "answered"), 3},
		{m.PoolEvents.WithLabelValues("rec", "a", "rate_limited"), 1},
		{m.PoolEvents.WithLabelValues("rec2", "a", "answered"), 1},
		{m.PoolEvents.WithLabelValues("rec2", "b", "answered"), 0},
	} {
		if got := count(tc.c); got != tc.want {
			t.Errorf("%v: %v, want %v", d.GetLabel(), got, tc.want)
		}
	}
	if testing.AllocsPerRun(100, func() { m.Event("rec", "a", "answered").Inc(); m.Upstream("rec", "a").Observe(1) }) != 0 {
		t.Error("a cached child allocates")
	}
}
