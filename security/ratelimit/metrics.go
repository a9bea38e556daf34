package ratelimit

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/monitoring/metric"
)

// Metric names of this package. The refusals themselves are counted by the
// router in monitoring's hms_proxy_rate_limited_total{dimension,scope,method,
// method_family,catalog}, from a refused Decision's Dimension and Scope.
const (
	MetricTrackedKeys   = "hms_proxy_rate_limit_tracked_keys"
	MetricOverflowTotal = "hms_proxy_rate_limit_overflow_total"
)

// Metrics are the limiter's own gauges and counters (hms-proxy additions).
// A nil *Metrics records nothing.
type Metrics struct {
	trackedKeys *prometheus.GaugeVec
	overflow    *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	r := metric.New(reg, "rate limit metrics")
	m := &Metrics{
		trackedKeys: r.GaugeVec(MetricTrackedKeys,
			"Per-key rate-limit buckets held in memory, by dimension (principal, source).", "dimension"),
		overflow: r.CounterVec(MetricOverflowTotal,
			"Requests charged to a dimension's shared overflow bucket because its table of per-key buckets was full.", "dimension"),
	}
	r.Must()
	return m
}

func (m *Metrics) tracked(dim string, n int) {
	if m != nil {
		m.trackedKeys.WithLabelValues(dim).Set(float64(n))
	}
}

func (m *Metrics) overflowed(dim string) {
	if m != nil {
		m.overflow.WithLabelValues(dim).Inc()
	}
}
