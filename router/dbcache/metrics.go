package dbcache

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/monitoring/metric"
)

// Metric names (the specification's, plus the refresh counter it names in
// the background-refresh description).
const (
	MetricRequestsTotal      = "hms_proxy_cache_requests_total"
	MetricEntries            = "hms_proxy_cache_entries"
	MetricInvalidationsTotal = "hms_proxy_cache_invalidations_total"
	MetricRefreshesTotal     = "hms_proxy_cache_refreshes_total"
)

// Metrics of the caches. A nil *Metrics records nothing.
type Metrics struct {
	requests      *prometheus.CounterVec
	entryCount    *prometheus.GaugeVec
	invalidations *prometheus.CounterVec
	refreshes     *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	r := metric.New(reg, "database cache metrics")
	m := &Metrics{
		requests: r.CounterVec(MetricRequestsTotal,
			"Metadata cache lookups by cache (database_list, database_metadata), catalog and result (hit, miss); a lookup that joined an identical load in flight is a hit.", "cache", "catalog", "result"),
		entryCount: r.GaugeVec(MetricEntries,
			"Entries held by the metadata caches, by cache and catalog.", "cache", "catalog"),
		invalidations: r.CounterVec(MetricInvalidationsTotal,
			"Metadata cache entries invalidated, by cache, catalog and reason (write, catalog, prune, all).", "cache", "catalog", "reason"),
		refreshes: r.CounterVec(MetricRefreshesTotal,
			"Background reloads of metadata cache entries, by cache, catalog and result (success, failure).", "cache", "catalog", "result"),
	}
	r.Must()
	return m
}

func (m *Metrics) request(kind Kind, catalog string, hit bool) {
	if m == nil {
		return
	}
	r := "miss"
	if hit {
		r = "hit"
	}
	m.requests.WithLabelValues(string(kind), catalog, r).Inc()
}

func (m *Metrics) entries(kind Kind, catalog string, n int) {
	if m != nil {
		m.entryCount.WithLabelValues(string(kind), catalog).Set(float64(n))
	}
}

func (m *Metrics) invalidated(kind Kind, catalog, reason string, n int) {
	if m != nil {
		m.invalidations.WithLabelValues(string(kind), catalog, reason).Add(float64(n))
	}
}

func (m *Metrics) refresh(kind Kind, catalog string, ok bool) {
	if m == nil {
		return
	}
	r := "failure"
	if ok {
		r = "success"
	}
	m.refreshes.WithLabelValues(string(kind), catalog, r).Inc()
}
