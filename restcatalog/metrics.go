package restcatalog

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/monitoring/metric"
)

// Metric names of the specification.
const (
	MetricRequestsTotal   = "hms_proxy_rest_requests_total"
	MetricRequestDuration = "hms_proxy_rest_request_duration_seconds"
	MetricListenerInfo    = "hms_proxy_rest_listener_info"
)

// Metrics holds the REST listener's Prometheus metrics. A nil *Metrics
// records nothing. Label values are bounded: prefix is a configured catalog
// (or "" for /v1/config and unknown prefixes), route an endpoint template or
// "unmatched", status an HTTP status code.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	listener *prometheus.GaugeVec
}

// NewMetrics registers the REST metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	r := metric.New(reg, "REST catalog metrics")
	m := &Metrics{
		requests: r.CounterVec(MetricRequestsTotal,
			"Iceberg REST requests by catalog prefix, route and final HTTP status.", "prefix", "route", "status"),
		duration: r.HistogramVec(MetricRequestDuration,
			"Duration of Iceberg REST requests by catalog prefix and route.", []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}, "prefix", "route"),
		listener: r.GaugeVec(MetricListenerInfo,
			"Configured bind host and port of the Iceberg REST listener (constant 1).", "bind_host", "port"),
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// ListenerInfo sets hms_proxy_rest_listener_info{bind_host,port} to 1.
func (m *Metrics) ListenerInfo(host string, port int) {
	if m == nil {
		return
	}
	m.listener.WithLabelValues(host, strconv.Itoa(port)).Set(1)
}

func (m *Metrics) observe(prefix, route string, status int, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(prefix, route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(prefix, route).Observe(d.Seconds())
}
