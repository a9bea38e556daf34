package dbcache

import "github.com/prometheus/client_golang/prometheus"

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
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRequestsTotal,
			Help: "Metadata cache lookups by cache (database_list, database_metadata), catalog and result (hit, miss); a lookup that joined an identical load in flight is a hit.",
		}, []string{"cache", "catalog", "result"}),
		entryCount: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricEntries,
			Help: "Entries held by the metadata caches, by cache and catalog.",
		}, []string{"cache", "catalog"}),
		invalidations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricInvalidationsTotal,
			Help: "Metadata cache entries invalidated, by cache, catalog and reason (write, catalog, prune, all).",
		}, []string{"cache", "catalog", "reason"}),
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRefreshesTotal,
			Help: "Background reloads of metadata cache entries, by cache, catalog and result (success, failure).",
		}, []string{"cache", "catalog", "result"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.entryCount, m.invalidations, m.refreshes)
	}
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
