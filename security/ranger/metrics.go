package ranger

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/monitoring/metric"
)

// Metric names. The first four are the specification's; the download
// counters, version, readiness and last-success gauges are hms-proxy's.
const (
	MetricEvaluationsTotal          = "hms_proxy_ranger_evaluations_total"
	MetricEvaluationDurationSeconds = "hms_proxy_ranger_evaluation_duration_seconds"
	MetricFilteredObjectsTotal      = "hms_proxy_ranger_filtered_objects_total"
	MetricPluginInfo                = "hms_proxy_ranger_plugin_info"
	MetricPolicyDownloadsTotal      = "hms_proxy_ranger_policy_downloads_total"
	MetricPolicyVersion             = "hms_proxy_ranger_policy_version"
	MetricPolicyLastSuccess         = "hms_proxy_ranger_policy_download_last_success_timestamp_seconds"
	MetricPluginReady               = "hms_proxy_ranger_plugin_ready"
)

// EvaluationBuckets are the buckets (seconds) of one evaluation: 1 µs to
// 10 ms (a policy set of thousands with dynamic macros).
var EvaluationBuckets = []float64{1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 1e-3, 1e-2}

// Metrics are the Ranger plugins' metrics. A nil *Metrics records nothing.
type Metrics struct {
	evaluations *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	filtered    *prometheus.CounterVec
	info        *prometheus.GaugeVec
	downloads   *prometheus.CounterVec
	policyVer   *prometheus.GaugeVec
	lastSuccess *prometheus.GaugeVec
	ready       *prometheus.GaugeVec

	mu       sync.Mutex
	catalogs map[string]*catalogMetrics
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	r := metric.New(reg, "Ranger metrics")
	m := &Metrics{
		evaluations: r.CounterVec(MetricEvaluationsTotal,
			"Ranger policy evaluations, by catalog, resource type (database, table, column, udf), access type (_any for SHOW-style listing) and result (allowed, denied).", "catalog", "resource_type", "access_type", "result"),
		duration: r.HistogramVec(MetricEvaluationDurationSeconds,
			"Time to evaluate Ranger policies for one object, by catalog and resource type.", EvaluationBuckets, "catalog", "resource_type"),
		filtered: r.CounterVec(MetricFilteredObjectsTotal,
			"Databases and tables hidden from a listing by Ranger policies, by catalog and resource type.", "catalog", "resource_type"),
		info: r.GaugeVec(MetricPluginInfo,
			"Active Ranger plugins (value 1), by catalog, service name, service type and application id.", "catalog", "service_name", "service_type", "app_id"),
		downloads: r.CounterVec(MetricPolicyDownloadsTotal,
			"Downloads from Ranger Admin, by service, kind (policies, roles) and result (updated, unchanged, failed).", "service_name", "kind", "result"),
		policyVer: r.GaugeVec(MetricPolicyVersion,
			"Version of the Ranger policies in force, by service (-1: none).", "service_name"),
		lastSuccess: r.GaugeVec(MetricPolicyLastSuccess,
			"Unix time of the last download round Ranger Admin answered, by service.", "service_name"),
		ready: r.GaugeVec(MetricPluginReady,
			"1 while a Ranger plugin has policies it enforces, 0 while it refuses the catalogs it guards, by service.", "service_name"),
		catalogs: map[string]*catalogMetrics{},
	}
	r.Must()
	return m
}

// PluginInfo sets hms_proxy_ranger_plugin_info for a catalog served by a
// plugin (Plugin.For does).
func (m *Metrics) PluginInfo(catalog, service, serviceType, appID string) {
	if m != nil {
		m.info.WithLabelValues(catalog, service, serviceType, appID).Set(1)
	}
}

// registered starts a plugin's series: no policies, not ready.
func (m *Metrics) registered(service string) {
	if m != nil {
		m.policyVer.WithLabelValues(service).Set(-1)
		m.ready.WithLabelValues(service).Set(0)
	}
}

func (m *Metrics) download(service, kind, result string) {
	if m != nil {
		m.downloads.WithLabelValues(service, kind, result).Inc()
	}
}

func (m *Metrics) version(service string, v int64, ready bool) {
	if m != nil {
		m.policyVer.WithLabelValues(service).Set(float64(v))
		r := 0.0
		if ready {
			r = 1
		}
		m.ready.WithLabelValues(service).Set(r)
	}
}

func (m *Metrics) success(service string, at time.Time) {
	if m != nil {
		m.lastSuccess.WithLabelValues(service).Set(float64(at.UnixNano()) / 1e9)
	}
}

// catalogMetrics caches one catalog's series so a check looks them up
// without building label lists.
type catalogMetrics struct {
	m       *Metrics
	catalog string
	mu      sync.RWMutex
	counts  map[[3]string]prometheus.Counter
	hist    map[string]prometheus.Observer
	filt    map[string]prometheus.Counter
}

func (m *Metrics) forCatalog(catalog string) *catalogMetrics {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.catalogs[catalog]
	if c == nil {
		c = &catalogMetrics{m: m, catalog: catalog, counts: map[[3]string]prometheus.Counter{},
			hist: map[string]prometheus.Observer{}, filt: map[string]prometheus.Counter{}}
		m.catalogs[catalog] = c
	}
	return c
}

func (c *catalogMetrics) evaluated(typ, access string, allowed bool, d time.Duration) {
	if c == nil {
		return
	}
	result := "denied"
	if allowed {
		result = "allowed"
	}
	key := [3]string{typ, access, result}
	c.mu.RLock()
	ctr, okC := c.counts[key]
	h, okH := c.hist[typ]
	c.mu.RUnlock()
	if !okC || !okH {
		c.mu.Lock()
		if ctr, okC = c.counts[key]; !okC {
			ctr = c.m.evaluations.WithLabelValues(c.catalog, typ, access, result)
			c.counts[key] = ctr
		}
		if h, okH = c.hist[typ]; !okH {
			h = c.m.duration.WithLabelValues(c.catalog, typ)
			c.hist[typ] = h
		}
		c.mu.Unlock()
	}
	ctr.Inc()
	h.Observe(d.Seconds())
}

func (c *catalogMetrics) filtered(typ string, n int) {
	if c == nil || n == 0 {
		return
	}
	c.mu.RLock()
	ctr, ok := c.filt[typ]
	c.mu.RUnlock()
	if !ok {
		c.mu.Lock()
		if ctr, ok = c.filt[typ]; !ok {
			ctr = c.m.filtered.WithLabelValues(c.catalog, typ)
			c.filt[typ] = ctr
		}
		c.mu.Unlock()
	}
	ctr.Add(float64(n))
}
