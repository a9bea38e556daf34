package monitoring

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Readiness metric names: hms-proxy additions (the specification exports
// readiness only as /readyz). The management listener serves them on its
// /metrics next to the registry it was given, so an alert can see what load
// balancers and orchestrators see.
const (
	MetricReady                     = "hms_proxy_ready"
	MetricReadinessChecksTotal      = "hms_proxy_readiness_checks_total"
	MetricReadinessTransitionsTotal = "hms_proxy_readiness_transitions_total"
	MetricBackendConnected          = "hms_proxy_backend_connected"
)

// Values of the result label of hms_proxy_readiness_checks_total.
const (
	ReadinessReady    = "ready"
	ReadinessNotReady = "not_ready"
)

// readinessMetrics remembers the answers /readyz gave and reports them, with
// the live per-catalog connectivity, at scrape time.
type readinessMetrics struct {
	src ReadinessSource

	ready, checks, transitions, connected *prometheus.Desc

	mu          sync.Mutex
	checked     bool // at least one /readyz answer
	lastReady   bool
	readyN      float64
	notReadyN   float64
	transitionN float64
}

func newReadinessMetrics(src ReadinessSource) *readinessMetrics {
	return &readinessMetrics{
		src: src,
		ready: prometheus.NewDesc(MetricReady,
			"1 when the last /readyz answer was READY, 0 when it was NOT_READY or when /readyz has not been asked yet.",
			nil, nil),
		checks: prometheus.NewDesc(MetricReadinessChecksTotal,
			"/readyz answers, by result (ready, not_ready).",
			[]string{"result"}, nil),
		transitions: prometheus.NewDesc(MetricReadinessTransitionsTotal,
			"Changes of the /readyz answer between READY and NOT_READY (the first answer is no change).",
			nil, nil),
		connected: prometheus.NewDesc(MetricBackendConnected,
			"1 when the catalog's backend metastore answered its last call or probe, 0 when that failed or before the first one, by catalog (the connected field of /readyz, read live at scrape time).",
			[]string{"catalog"}, nil),
	}
}

// observe records one /readyz answer.
func (r *readinessMetrics) observe(ready bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.checked && r.lastReady != ready {
		r.transitionN++
	}
	r.checked, r.lastReady = true, ready
	if ready {
		r.readyN++
	} else {
		r.notReadyN++
	}
}

func (r *readinessMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- r.ready
	ch <- r.checks
	ch <- r.transitions
	ch <- r.connected
}

func (r *readinessMetrics) Collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	ready := 0.0
	if r.checked && r.lastReady {
		ready = 1
	}
	readyN, notReadyN, transitions := r.readyN, r.notReadyN, r.transitionN
	r.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(r.ready, prometheus.GaugeValue, ready)
	ch <- prometheus.MustNewConstMetric(r.checks, prometheus.CounterValue, readyN, ReadinessReady)
	ch <- prometheus.MustNewConstMetric(r.checks, prometheus.CounterValue, notReadyN, ReadinessNotReady)
	ch <- prometheus.MustNewConstMetric(r.transitions, prometheus.CounterValue, transitions)
	if r.src == nil {
		return
	}
	seen := map[string]bool{}
	for _, s := range r.src.BackendStates() {
		name := validLabel(s.Catalog)
		if seen[name] {
			continue // one series per catalog, whatever the source reports
		}
		seen[name] = true
		v := 0.0
		if s.Connected {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(r.connected, prometheus.GaugeValue, v, name)
	}
}
