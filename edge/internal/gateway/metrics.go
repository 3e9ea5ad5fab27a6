package gateway

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"weir.dev/routing"
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
	// Served counts calls a member answered, by caller endpoint, the
	// member's wire format and whether the call was translated (R-FMT-6).
	Served *prometheus.CounterVec
	// served caches Served's children (ServedBy), so that counting a call
	// costs no label lookup on the call path.
	served [8][8][2]atomic.Pointer[prometheus.Counter]
	// durations caches RequestDuration's children for the statuses
	// statusLabel names without formatting (DurationFor).
	durations [8][len(commonStatuses)]atomic.Pointer[prometheus.Observer]
	// upstream and events cache UpstreamDur's and PoolEvents' children
	// by their labels (Upstream, Event). They hold as many entries as the
	// vectors themselves, which also keep every child they made.
	upstream labelCache[[2]string, prometheus.Observer]
	events   labelCache[[3]string, prometheus.Counter]
}

// Upstream is UpstreamDur's observer for member of record, found without
// the vector's label hashing once made.
func (m *Metrics) Upstream(record, member string) prometheus.Observer {
	return m.upstream.get([2]string{record, member}, func() prometheus.Observer {
		return m.UpstreamDur.WithLabelValues(record, member)
	})
}

// Event is PoolEvents' counter of event ev of member of record, found
// without the vector's label hashing once made.
func (m *Metrics) Event(record, member, ev string) prometheus.Counter {
	return m.events.get([3]string{record, member, ev}, func() prometheus.Counter {
		return m.PoolEvents.WithLabelValues(record, member, ev)
	})
}

// labelCache maps label values to a vector's child, made by the vector
// the first time they are asked for.
type labelCache[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

func (c *labelCache[K, V]) get(k K, make func() V) V {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return v
	}
	v = make()
	c.mu.Lock()
	if c.m == nil {
		c.m = map[K]V{}
	}
	c.m[k] = v
	c.mu.Unlock()
	return v
}

// commonStatuses are the statuses whose RequestDuration children are
// cached; any other status is looked up by its labels.
var commonStatuses = [...]int{200, 400, 429, 499, 502, 503, 504}

// DurationFor is RequestDuration's observer for calls on endpoint ep that
// ended with status, without a label lookup for the usual statuses.
func (m *Metrics) DurationFor(ep routing.Endpoint, status int) prometheus.Observer {
	i := -1
	for j, s := range commonStatuses {
		if s == status {
			i = j
			break
		}
	}
	if i < 0 || int(ep) >= len(m.durations) {
		return m.RequestDuration.WithLabelValues(ep.String(), statusLabel(status))
	}
	slot := &m.durations[ep][i]
	if o := slot.Load(); o != nil {
		return *o
	}
	o := m.RequestDuration.WithLabelValues(ep.String(), statusLabel(status))
	slot.Store(&o)
	return o
}

// ServedBy is Served's counter for calls on endpoint ep that a member of
// wire format w answered, translated or not.
func (m *Metrics) ServedBy(ep routing.Endpoint, w routing.WireFormat, translated bool) prometheus.Counter {
	t := 0
	if translated {
		t = 1
	}
	if int(ep) >= len(m.served) || int(w) >= len(m.served[0]) {
		return m.Served.WithLabelValues(ep.String(), w.String(), strconv.FormatBool(translated))
	}
	slot := &m.served[ep][w][t]
	if c := slot.Load(); c != nil {
		return *c
	}
	c := m.Served.WithLabelValues(ep.String(), w.String(), strconv.FormatBool(translated))
	slot.Store(&c)
	return c
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
	m.Served = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "weir_calls_served_total",
		Help: "Calls a member answered, by the caller's endpoint, the member's wire format and whether the call was translated to it (R-FMT-6).",
	}, []string{"endpoint", "member_format", "translated"})
	m.reg.MustRegister(m.PoolEvents, m.RequestDuration, m.UpstreamDur, m.Overhead, m.RecordsLost, m.Panics, m.CallerLimited, m.Served,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// WatchMembers adds, read at each scrape (nothing on the call path), every
// member's in-flight calls and requests today against this edge's share
// of its declared max_in_flight and rpd (R-CAP-1, R-HEAD-6, R-HEAD-7), as
// the views sent to the control plane carry them, by tenant, record,
// member and the member's wire format.
func (m *Metrics) WatchMembers(reg *Registry, states *routing.States, now func() time.Time) {
	m.reg.MustRegister(&memberCollector{reg: reg, states: states, now: now})
}

var (
	memberLabels        = []string{"tenant", "record", "member", "format"}
	descMemberInFlight  = prometheus.NewDesc("weir_member_in_flight", "Calls in flight to the member from this edge.", memberLabels, nil)
	descMemberMaxFlight = prometheus.NewDesc("weir_member_max_in_flight", "This edge's share of the member's declared max_in_flight (0: none declared).", memberLabels, nil)
	descMemberToday     = prometheus.NewDesc("weir_member_requests_today", "Requests this edge sent the member in the current day of the record's day_zone.", memberLabels, nil)
	descMemberRPD       = prometheus.NewDesc("weir_member_requests_per_day", "This edge's share of the member's declared rpd (0: none declared).", memberLabels, nil)
)

// memberCollector reads the members' state when Prometheus scrapes.
type memberCollector struct {
	reg    *Registry
	states *routing.States
	now    func() time.Time
}

func (c *memberCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMemberInFlight, descMemberMaxFlight, descMemberToday, descMemberRPD} {
		ch <- d
	}
}

func (c *memberCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	seen := map[string]bool{} // members of managed records, which every tenant's table holds
	for _, t := range c.reg.Tables() {
		for _, r := range t.Records {
			tenant := t.TenantName
			if r.Managed {
				tenant = "" // the cluster's, not this tenant's
			}
			for _, m := range r.Members {
				if r.Managed {
					if seen[m.ID] {
						continue
					}
					seen[m.ID] = true
				}
				v := c.states.View(m, now)
				labels := []string{tenant, r.Name, m.Name, m.Format().String()}
				ch <- prometheus.MustNewConstMetric(descMemberInFlight, prometheus.GaugeValue, float64(v.InFlight), labels...)
				ch <- prometheus.MustNewConstMetric(descMemberMaxFlight, prometheus.GaugeValue, float64(v.MaxInFlight), labels...)
				ch <- prometheus.MustNewConstMetric(descMemberToday, prometheus.GaugeValue, float64(v.RequestsToday), labels...)
				ch <- prometheus.MustNewConstMetric(descMemberRPD, prometheus.GaugeValue, float64(v.RPDShare), labels...)
			}
		}
	}
}

// Handler serves the metrics in Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
