package polling

import "github.com/prometheus/client_golang/prometheus"

// MetricProbesTotal counts background probes (an hms-proxy addition).
const MetricProbesTotal = "hms_proxy_backend_probes_total"

// Metrics of the poller. A nil *Metrics records nothing.
type Metrics struct {
	probes *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{probes: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricProbesTotal,
		Help: "Background backend probes (routing.backend-state-polling), by catalog and result (ok, error).",
	}, []string{"catalog", "result"})}
	if reg != nil {
		reg.MustRegister(m.probes)
	}
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
