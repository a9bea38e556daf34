package breaker

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/monitoring/metric"
)

// Metric names of this package: the two adaptive-timeout counters of the
// specification, and the circuit's state and refusals (hms-proxy additions).
const (
	MetricAdaptiveTimeoutReconnectTotal        = "hms_proxy_adaptive_timeout_reconnect_total"
	MetricAdaptiveTimeoutReconnectSkippedTotal = "hms_proxy_adaptive_timeout_reconnect_skipped_total"
	MetricCircuitState                         = "hms_proxy_circuit_breaker_state"
	MetricCircuitRejectedTotal                 = "hms_proxy_circuit_breaker_rejected_total"
)

// Metrics are shared by every Guard (the catalog is a label). A nil *Metrics
// records nothing.
type Metrics struct {
	appliedTotal  *prometheus.CounterVec
	skippedTotal  *prometheus.CounterVec
	circuitState  *prometheus.GaugeVec
	rejectedTotal *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	r := metric.New(reg, "breaker metrics")
	m := &Metrics{
		appliedTotal: r.CounterVec(MetricAdaptiveTimeoutReconnectTotal,
			"Adaptive backend timeout changes applied, by catalog (the Java proxy reconnected its shared client on each; hms-proxy applies the new deadline from the next call on).", "catalog"),
		skippedTotal: r.CounterVec(MetricAdaptiveTimeoutReconnectSkippedTotal,
			"Adaptive backend timeout changes suppressed, by catalog and reason: hysteresis (change below max(2 s, 25 %)) or cooldown (within routing.adaptive-timeout.reconnect-cooldown-ms of the last change).", "catalog", "reason"),
		circuitState: r.GaugeVec(MetricCircuitState,
			"Circuit breaker state per catalog: 0 closed, 1 half-open, 2 open.", "catalog"),
		rejectedTotal: r.CounterVec(MetricCircuitRejectedTotal,
			"Backend calls failed fast by an open (or busy half-open) circuit breaker, by catalog.", "catalog"),
	}
	r.Must()
	return m
}

// known makes a catalog's series visible at zero for the parts that are on
// (a dashboard shows a flat zero rather than no data).
func (m *Metrics) known(catalog string, breaker, adaptive bool) {
	if m == nil {
		return
	}
	if breaker {
		m.rejectedTotal.WithLabelValues(catalog)
	}
	if adaptive {
		m.appliedTotal.WithLabelValues(catalog)
		m.skippedTotal.WithLabelValues(catalog, SkipHysteresis)
		m.skippedTotal.WithLabelValues(catalog, SkipCooldown)
	}
}

func (m *Metrics) applied(catalog string) {
	if m != nil {
		m.appliedTotal.WithLabelValues(catalog).Inc()
	}
}

func (m *Metrics) skipped(catalog, reason string) {
	if m != nil {
		m.skippedTotal.WithLabelValues(catalog, reason).Inc()
	}
}

func (m *Metrics) rejected(catalog string) {
	if m != nil {
		m.rejectedTotal.WithLabelValues(catalog).Inc()
	}
}

// state publishes the circuit state; a disabled breaker publishes nothing.
func (m *Metrics) state(catalog, state string) {
	if m == nil {
		return
	}
	v := map[string]float64{Closed: 0, HalfOpen: 1, Open: 2}
	if x, ok := v[state]; ok {
		m.circuitState.WithLabelValues(catalog).Set(x)
	}
}
