package polling

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/monitoring/metric"
)

// MetricProbesTotal counts background probes (an hms-proxy addition).
const MetricProbesTotal = "hms_proxy_backend_probes_total"

// Metrics of the poller. A nil *Metrics records nothing.
type Metrics struct {
	probes *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	r := metric.New(reg, "backend polling metrics")
	m := &Metrics{probes: r.CounterVec(MetricProbesTotal, "Background backend probes (routing.backend-state-polling), by catalog and result (ok, error).", "catalog", "result")}
	r.Must()
	return m
}

func (m *Metrics) observe(r Result) {
	if m == nil {
		return
	}
	res := "ok"
	if r.Err != nil {
		res = "error"
	}
	m.probes.WithLabelValues(r.Target, res).Inc()
}
