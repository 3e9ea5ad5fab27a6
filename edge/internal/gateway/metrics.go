package gateway

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the edge's Prometheus metrics (R-OBS-3), on their own registry
// so tests and several gateways in one process do not collide.
type Metrics struct {
	reg             *prometheus.Registry
	PoolEvents      *prometheus.CounterVec
	RequestDuration *prometheus.HistogramVec
	UpstreamDur     *prometheus.HistogramVec
	Overhead        prometheus.Histogram
	// RecordsLost counts call records the sink could not take (the journal
	// could not be written): answered calls that will not be counted.
	RecordsLost prometheus.Counter
	// Panics counts panics recovered while serving a caller's request: each
	// such call was answered 500 weir_internal (or its stream ended with an
	// error event) and logged at error level with its call id and stack.
	Panics prometheus.Counter
	// CallerLimited counts calls refused by caller limits (R-CAP-3), by
	// tenant name and limit (callerlimit.Limit's String).
	CallerLimited *prometheus.CounterVec
}

// NewMetrics registers the edge's metrics on a fresh registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		PoolEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weir_pool_events_total", Help: "Pool member events by record, member and event (answered, rate_limited, …).",
		}, []string{"record", "member", "event"}),
		RequestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "weir_request_duration_seconds", Help: "Whole call duration as the caller saw it.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 16),
		}, []string{"endpoint", "status"}),
		UpstreamDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "weir_upstream_duration_seconds", Help: "Time to response headers of each attempt.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 16),
		}, []string{"record", "member"}),
		Overhead: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "weir_overhead_seconds", Help: "Edge time of a call excluding time waiting on providers.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 2, 16),
		}),
		RecordsLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "weir_call_records_lost_total", Help: "Call records the usage sink could not write (the call was answered, its record is lost).",
		}),
		Panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "weir_panics_total", Help: "Panics recovered while serving a request (answered 500 weir_internal, or the stream ended with an error event).",
		}),
		CallerLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weir_caller_limited_total",
			Help: "Calls refused 429 by a caller limit (ROUTING R-CAP-2), by tenant name and limit: tenant_rpm, tenant_max_in_flight, key_rpm or key_max_in_flight.",
		}, []string{"tenant", "limit"}),
	}
	m.reg.MustRegister(m.PoolEvents, m.RequestDuration, m.UpstreamDur, m.Overhead, m.RecordsLost, m.Panics, m.CallerLimited,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
