package tokens

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/monitoring/metric"
)

// Metric names. The specification names no delegation-token metrics; these
// follow the proxy's hms_proxy_ prefix.
const (
	MetricOperationsTotal    = "hms_proxy_delegation_token_operations_total"
	MetricMasterKeyRollTotal = "hms_proxy_delegation_token_master_key_rolls_total"
	MetricExpiredRemoved     = "hms_proxy_delegation_token_expired_removed_total"
)

// Operation label values of hms_proxy_delegation_token_operations_total.
const (
	OpIssue  = "issue"
	OpRenew  = "renew"
	OpCancel = "cancel"
	OpVerify = "verify" // a password lookup (DIGEST-MD5 handshake) or a token verification
)

// Result label values.
const (
	ResultOK         = "ok"
	ResultInvalid    = "invalid"     // unknown, expired, cancelled, forged or malformed token
	ResultDenied     = "denied"      // the caller may not renew or cancel it
	ResultStoreError = "store_error" // the token store failed
)

// Metrics are the secret manager's Prometheus metrics. A nil *Metrics records
// nothing.
type Metrics struct {
	ops     *prometheus.CounterVec
	rolls   *prometheus.CounterVec
	removed prometheus.Counter
}

// NewMetrics registers the metrics with reg (nil: not registered, still
// usable).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	r := metric.New(reg, "delegation token metrics")
	m := &Metrics{
		ops: r.CounterVec(MetricOperationsTotal,
			"Delegation token operations served locally, by operation (issue, renew, cancel, verify) and result (ok, invalid, denied, store_error).", "operation", "result"),
		rolls: r.CounterVec(MetricMasterKeyRollTotal,
			"Master key rolls of the delegation token secret manager, by result (ok, store_error).", "result"),
		removed: r.Counter(MetricExpiredRemoved,
			"Expired delegation tokens removed from the token store by the expired-token remover."),
	}
	for _, op := range []string{OpIssue, OpRenew, OpCancel, OpVerify} {
		for _, r := range []string{ResultOK, ResultInvalid, ResultDenied, ResultStoreError} {
			m.ops.WithLabelValues(op, r)
		}
	}
	m.rolls.WithLabelValues(ResultOK)
	m.rolls.WithLabelValues(ResultStoreError)
	r.Must()
	return m
}

func (m *Metrics) op(op, result string) {
	if m != nil {
		m.ops.WithLabelValues(op, result).Inc()
	}
}

func (m *Metrics) roll(result string) {
	if m != nil {
		m.rolls.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) expired(n int) {
	if m != nil && n > 0 {
		m.removed.Add(float64(n))
	}
}
