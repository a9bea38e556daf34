package locks

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/monitoring/metric"
)

// Metric names (the Java proxy's, so dashboards carry over; "read_lock" is
// historical: the shim serves DDL and write locks too).
const (
	MetricEvents           = "hms_proxy_synthetic_read_lock_events_total"
	MetricStoreFailures    = "hms_proxy_synthetic_read_lock_store_failures_total"
	MetricHandoffs         = "hms_proxy_synthetic_read_lock_handoffs_total"
	MetricActive           = "hms_proxy_synthetic_read_locks_active"
	MetricStoreInfo        = "hms_proxy_synthetic_read_lock_store_info"
	MetricLockRequestSplit = "hms_proxy_lock_request_split_total"
)

// Values of the operation label.
const (
	OpAcquire    = "acquire"
	OpCheckLock  = "check_lock"
	OpHeartbeat  = "heartbeat"
	OpUnlock     = "unlock"
	OpReleaseTxn = "release_txn"
	OpCleanup    = "cleanup"
)

// Values of the result label of the events metric.
const (
	ResultAcquired    = "acquired"     // lock/check_lock granted
	ResultWaiting     = "waiting"      // lock/check_lock must wait for an earlier lock
	ResultNotAcquired = "not_acquired" // Hive 4 zero-wait read or exclusive CTAS refused at once
	ResultOK          = "ok"           // heartbeat, unlock, release_txn done
	ResultNoSuchLock  = "no_such_lock" // the id names no live lock
	ResultTxnOpen     = "txn_open"     // unlock of a granted lock that belongs to a transaction
	ResultError       = "error"        // the store failed
	ResultExpired     = "expired"      // cleanup: the sweep removed a lock whose heartbeats stopped
	ResultOrphan      = "orphan"       // cleanup: a node of an unknown format, a lost creation, or a lock whose instance ended before answering it removed
)

// Metrics are the shim's Prometheus metrics. A nil *Metrics records nothing.
type Metrics struct {
	events   *prometheus.CounterVec
	failures *prometheus.CounterVec
	handoffs *prometheus.CounterVec
	active   *prometheus.GaugeVec
	info     *prometheus.GaugeVec
	split    *prometheus.CounterVec
}

// NewMetrics registers the shim's metrics with reg (nil: not registered).
// A metric already registered there with the very same definition is shared,
// not registered twice; one registered under the same name with another
// definition is an error naming it (the monitoring package's own
// hms_proxy_lock_request_split_total, for instance, must give way to this one).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	r := metric.New(reg, "locks")
	m := &Metrics{
		events: r.CounterVec(MetricEvents,
			"Synthetic lock shim lifecycle events: acquire, check_lock, heartbeat, unlock, release_txn, cleanup.",
			"operation", "catalog", "store_mode", "result"),
		failures: r.CounterVec(MetricStoreFailures,
			"Failures of the synthetic lock store (in-memory or ZooKeeper) by operation and exception type.",
			"operation", "store_mode", "exception"),
		handoffs: r.CounterVec(MetricHandoffs,
			"Synthetic locks taken through one proxy instance and served through another.",
			"operation", "catalog", "store_mode"),
		active: r.GaugeVec(MetricActive,
			"Synthetic locks currently in the store (incremental; resynchronised by every expiry sweep).",
			"store_mode"),
		info: r.GaugeVec(MetricStoreInfo,
			"Constant 1, labelled with the synthetic lock store in use.", "store_mode"),
		split: r.CounterVec(MetricLockRequestSplit,
			"Lock requests naming several catalogs, split into per-catalog parts; catalog is the one whose lock id the client got.",
			"catalog"),
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Metrics) event(op, catalog, mode, result string) {
	if m != nil {
		m.events.WithLabelValues(op, catalog, mode, result).Inc()
	}
}

func (m *Metrics) failure(op, mode, exception string) {
	if m != nil {
		m.failures.WithLabelValues(op, mode, exception).Inc()
	}
}

func (m *Metrics) handoff(op, catalog, mode string) {
	if m != nil {
		m.handoffs.WithLabelValues(op, catalog, mode).Inc()
	}
}

func (m *Metrics) addActive(mode string, n int) {
	if m != nil && n != 0 {
		m.active.WithLabelValues(mode).Add(float64(n))
	}
}

func (m *Metrics) setActive(mode string, n int) {
	if m != nil {
		m.active.WithLabelValues(mode).Set(float64(n))
	}
}

func (m *Metrics) storeInfo(mode string) {
	if m != nil {
		m.info.WithLabelValues(mode).Set(1)
	}
}

// LockRequestSplit counts one split lock request (see Split); catalog is the
// catalog whose lock id the client receives.
func (m *Metrics) LockRequestSplit(catalog string) {
	if m != nil {
		m.split.WithLabelValues(catalog).Inc()
	}
}
