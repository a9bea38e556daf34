package sasl

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/monitoring/metric"
)

// Metric names of the SASL front door.
const (
	MetricAuthFailuresTotal     = "hms_proxy_authentication_failures_total"
	MetricHandshakeDurationSecs = "hms_proxy_authentication_handshake_duration_seconds"
)

// Metrics counts negotiation outcomes. A nil *Metrics records nothing.
type Metrics struct {
	failures  *prometheus.CounterVec
	durations *prometheus.HistogramVec
}

// NewMetrics registers the SASL metrics with reg (nil reg: unregistered, as
// in tests that read the collectors directly).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	r := metric.New(reg, "SASL metrics")
	m := &Metrics{
		failures: r.CounterVec(MetricAuthFailuresTotal,
			"Failed SASL negotiations on a front-door listener, by mechanism (\"-\" before one was chosen) and reason.", "listener", "mechanism", "reason"),
		durations: r.HistogramVec(MetricHandshakeDurationSecs,
			"Duration of successful SASL negotiations on a front-door listener.", []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}, "listener", "mechanism"),
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Metrics) failure(listener, mech, reason string) {
	if m == nil {
		return
	}
	if mech == "" {
		mech = "-"
	}
	m.failures.WithLabelValues(listener, mech, reason).Inc()
}

func (m *Metrics) handshake(listener, mech string, d time.Duration) {
	if m == nil {
		return
	}
	m.durations.WithLabelValues(listener, mech).Observe(d.Seconds())
}

// Failures returns the failure count of one label set (for tests and tools).
func (m *Metrics) Failures(listener, mech, reason string) float64 {
	if m == nil {
		return 0
	}
	if mech == "" {
		mech = "-"
	}
	c, err := m.failures.GetMetricWithLabelValues(listener, mech, reason)
	if err != nil {
		return 0
	}
	return counterValue(c)
}
