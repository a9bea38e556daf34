package cachesync

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/monitoring/metric"
)

// Metric names (hms-proxy additions: the specification has no cache
// coherence across instances).
const (
	MetricBumpsTotal         = "hms_proxy_cache_epoch_bumps_total"
	MetricInvalidationsTotal = "hms_proxy_cache_epoch_invalidations_total"
)

// Reasons of MetricInvalidationsTotal.
const (
	ReasonEpochChanged = "epoch_changed" // a replica (this one included) bumped the catalog's epoch
	ReasonSessionLost  = "session_lost"  // the ZooKeeper connection was lost
	ReasonReconnected  = "reconnected"   // it came back (bumps may have been missed)
)

// Metrics of the epoch sync. A nil *Metrics records nothing.
type Metrics struct {
	bumps         *prometheus.CounterVec
	invalidations *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	r := metric.New(reg, "cache coherence metrics")
	m := &Metrics{
		bumps: r.CounterVec(MetricBumpsTotal,
			"Database cache epoch bumps written to ZooKeeper after a database write, by catalog and result (ok, error; a failed bump is retried).", "catalog", "result"),
		invalidations: r.CounterVec(MetricInvalidationsTotal,
			"Database cache invalidations caused through ZooKeeper, by catalog (all for a whole-cache drop) and reason (epoch_changed, session_lost, reconnected).", "catalog", "reason"),
	}
	r.Must()
	return m
}

func (m *Metrics) bump(catalog string, err error) {
	if m == nil {
		return
	}
	r := "ok"
	if err != nil {
		r = "error"
	}
	m.bumps.WithLabelValues(catalog, r).Inc()
}

func (m *Metrics) invalidation(catalog, reason string) {
	if m == nil {
		return
	}
	m.invalidations.WithLabelValues(catalog, reason).Inc()
}
