package sasl

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

// Handshakes returns how many successful negotiations were timed for one
// listener and mechanism (for tests and tools).
func (m *Metrics) Handshakes(listener, mech string) uint64 {
	if m == nil {
		return 0
	}
	o, err := m.durations.GetMetricWithLabelValues(listener, mech)
	if err != nil {
		return 0
	}
	var d dto.Metric
	if err := o.(prometheus.Histogram).Write(&d); err != nil {
		return 0
	}
	return d.GetHistogram().GetSampleCount()
}
