// Package monitoring holds the proxy's Prometheus metrics, the management HTTP
// listener (/healthz, /readyz, /metrics) and the bundled Grafana dashboard
// (grafana/hms-proxy-dashboard.json). It imports none of the proxy's other
// packages: the router feeds it through Metrics and ReadinessSource.
package monitoring

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Request status label values of hms_proxy_requests_total.
const (
	StatusOK        = "ok"
	StatusError     = "error"
	StatusFallback  = "fallback"
	StatusThrottled = "throttled"
)

// Label values with a fixed meaning.
const (
	// FanoutCatalog and FanoutBackend label a request sent to several backends at once.
	FanoutCatalog = "all"
	FanoutBackend = "fanout"
	// OtherLabel replaces any label value outside the known, bounded set
	// (unknown method names, unexpected statuses, too many distinct exception types).
	OtherLabel = "other"
	// Backend session gauge states.
	SessionActive = "active"
	SessionIdle   = "idle"
	// Session acquire timeout operations.
	OperationBorrow    = "borrow"
	OperationReconnect = "reconnect"
)

// Why a backend session was closed instead of given back to its pool (the
// reason label of hms_proxy_backend_session_retired_total; router/sessions.go
// decides).
const (
	// RetireException: the metastore answered a declared exception that may
	// have left state on the session (any exception of a write, txn or lock
	// call; a read's exception other than "does not exist").
	RetireException = "exception"
	// RetireApplicationException: a TApplicationException other than
	// UNKNOWN_METHOD (a handler that did not finish, e.g. INTERNAL_ERROR).
	RetireApplicationException = "application_exception"
	// RetireProtocolError: PROTOCOL_ERROR, or an exception the proxy could
	// not read: the stream may be out of step.
	RetireProtocolError = "protocol_error"
	// RetireSessionState: a success that changes the session for the calls
	// after it (setMetaConf).
	RetireSessionState = "session_state"
	// RetireTransport: the round trip failed (I/O error, a reply that does
	// not belong to its request).
	RetireTransport = "transport"
	// RetireTimeout: the round trip ran out of time (latency budget,
	// adaptive or socket timeout).
	RetireTimeout = "timeout"
	// RetireCancelled: the caller gave up (a fan-out leg whose sibling
	// failed, a hedged read's losing attempt).
	RetireCancelled = "cancelled"
)

// RetireReasons are the reason label values, in the order above.
var RetireReasons = []string{RetireException, RetireApplicationException, RetireProtocolError,
	RetireSessionState, RetireTransport, RetireTimeout, RetireCancelled}

// maxDynamicLabelValues caps the distinct values of a label whose values are
// not known up front (exception type names, bad-frame reasons, API names). Past
// the cap new values fold into OtherLabel, so a misbehaving backend cannot grow
// the series count without bound.
const maxDynamicLabelValues = 64

// Metric names, exported so that tests and tools can refer to them.
const (
	MetricRequestsTotal               = "hms_proxy_requests_total"
	MetricRequestDurationSeconds      = "hms_proxy_request_duration_seconds"
	MetricBackendFailuresTotal        = "hms_proxy_backend_failures_total"
	MetricBackendFallbackTotal        = "hms_proxy_backend_fallback_total"
	MetricRoutingAmbiguousTotal       = "hms_proxy_routing_ambiguous_total"
	MetricDefaultCatalogRoutedTotal   = "hms_proxy_default_catalog_routed_total"
	MetricRateLimitedTotal            = "hms_proxy_rate_limited_total"
	MetricFilteredObjectsTotal        = "hms_proxy_filtered_objects_total"
	MetricSessionAcquireTimeoutsTotal = "hms_proxy_backend_session_acquire_timeouts_total"
	MetricBackendSessions             = "hms_proxy_backend_sessions"
	MetricSessionRetiredTotal         = "hms_proxy_backend_session_retired_total"
	MetricFrontendConnections         = "hms_proxy_frontend_connections"
	MetricBadFramesTotal              = "hms_proxy_bad_frames_total"
	MetricFrontendRefusedTotal        = "hms_proxy_frontend_refused_total"
	MetricFrontendInFlightCalls       = "hms_proxy_frontend_inflight_calls"
	MetricFrontendInFlightBytes       = "hms_proxy_frontend_inflight_message_bytes"
	MetricTLSCertificateExpiry        = "hms_proxy_tls_certificate_expiry_timestamp_seconds"
	MetricTLSCertificateReloads       = "hms_proxy_tls_certificate_reloads_total"
)

// RequestDurationBuckets are the histogram buckets (seconds) of
// hms_proxy_request_duration_seconds: 1 ms to 60 s, which spans a cached
// get_database through a slow partition listing.
var RequestDurationBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Metrics holds every Prometheus metric the proxy exports. A nil *Metrics is
// valid and records nothing, so code under test can run without metrics.
// All methods are safe for concurrent use.
type Metrics struct {
	methods map[string]struct{}

	requests          *prometheus.CounterVec
	duration          *prometheus.HistogramVec
	backendFailures   *prometheus.CounterVec
	backendFallback   *prometheus.CounterVec
	routingAmbiguous  prometheus.Counter
	defaultCatalog    *prometheus.CounterVec
	rateLimited       *prometheus.CounterVec
	filtered          *prometheus.CounterVec
	acquireTimeouts   *prometheus.CounterVec
	sessionRetired    *prometheus.CounterVec
	backendSessions   *prometheus.GaugeVec
	frontendConns     *prometheus.GaugeVec
	badFrames         *prometheus.CounterVec
	frontendRefused   *prometheus.CounterVec
	frontendInFlight  *prometheus.GaugeVec
	tlsExpiry         *prometheus.GaugeVec
	tlsReloads        *prometheus.CounterVec
	exceptionValues   boundedValues
	apiValues         boundedValues
	badFrameReasons   boundedValues
	rateLimitDimValue boundedValues

	// children caches the request counter and histogram of each label set,
	// so the per-request path does one map lookup instead of two label hashes.
	childMu  sync.RWMutex
	children map[requestKey]*requestChild
	// The per-call counters of a label value (the default-catalog counter
	// per method, the in-flight gauge per listener), cached likewise: a
	// WithLabelValues checks and hashes its values on every call, about
	// 650 instructions, twice per call for the in-flight gauge.
	defaultChildren  sync.Map // method label -> prometheus.Counter
	inFlightChildren sync.Map // listener name -> prometheus.Gauge
}

type requestKey struct{ method, catalog, backend, status string }

type requestChild struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

// NewMetrics creates the proxy's metrics and registers them, plus the Go
// runtime and process collectors (they take the place of the JVM memory gauges
// of the Java implementation), with reg. methods is every RPC name the proxy
// knows (the method table); any other method label value is reported as
// "other", which keeps label cardinality bounded whatever clients send.
//
// A nil reg creates unregistered metrics. Registering the proxy metrics twice
// on one registry is a programming error and panics; Go/process collectors that
// are already registered (for example on prometheus.DefaultRegisterer) are
// kept as they are.
func NewMetrics(reg prometheus.Registerer, methods []string) *Metrics {
	m := &Metrics{
		methods:  make(map[string]struct{}, len(methods)),
		children: make(map[requestKey]*requestChild),
	}
	for _, name := range methods {
		m.methods[name] = struct{}{}
	}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricRequestsTotal,
		Help: "Client requests handled by the proxy, by method, resolved catalog, serving backend and outcome (ok, error, fallback, throttled). Fan-out requests use catalog=\"all\", backend=\"fanout\".",
	}, []string{"method", "catalog", "backend", "status"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    MetricRequestDurationSeconds,
		Help:    "Client request latency in seconds, measured from request decode to response written, by method, resolved catalog and serving backend.",
		Buckets: RequestDurationBuckets,
	}, []string{"method", "catalog", "backend"})
	m.backendFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricBackendFailuresTotal,
		Help: "Backend-side call failures, by backend and exception type.",
	}, []string{"backend", "exception"})
	m.backendFallback = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricBackendFallbackTotal,
		Help: "Compatibility fallbacks answered after a backend failure, by method and the API the call was retried from and to.",
	}, []string{"method", "from_api", "to_api"})
	m.routingAmbiguous = prometheus.NewCounter(prometheus.CounterOpts{
		Name: MetricRoutingAmbiguousTotal,
		Help: "Requests refused because their namespace hints named conflicting catalogs (the proxy does not guess a route).",
	})
	m.defaultCatalog = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricDefaultCatalogRoutedTotal,
		Help: "Requests sent to the default catalog because they carried no explicit catalog namespace, by method.",
	}, []string{"method"})
	m.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricRateLimitedTotal,
		Help: "Requests rejected by overload protection, by limiting dimension, configured scope, method, method family and resolved catalog.",
	}, []string{"dimension", "scope", "method", "method_family", "catalog"})
	m.filtered = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricFilteredObjectsTotal,
		Help: "Databases or tables hidden from clients by selective federation exposure rules, by method, catalog and object type.",
	}, []string{"method", "catalog", "object_type"})
	m.acquireTimeouts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricSessionAcquireTimeoutsTotal,
		Help: "Fail-fast events where no backend session became free within the catalog's latency budget, by catalog and operation (borrow, reconnect).",
	}, []string{"catalog", "operation"})
	m.sessionRetired = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricSessionRetiredTotal,
		Help: "Backend sessions (shared and impersonation pools) closed instead of given back, because the outcome of their last call may have left state on the metastore's side of the session, by catalog and reason.",
	}, []string{"catalog", "reason"})
	m.backendSessions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricBackendSessions,
		Help: "Pooled backend metastore sessions of each catalog, by state (active = lent to a request, idle = open and waiting in the pool).",
	}, []string{"catalog", "state"})
	m.frontendConns = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricFrontendConnections,
		Help: "Open client connections, by front-door listener.",
	}, []string{"frontend"})
	m.badFrames = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricBadFramesTotal,
		Help: "Client messages rejected before dispatch because they could not be read as Thrift calls, by front-door listener and reason.",
	}, []string{"frontend", "reason"})

	m.frontendRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricFrontendRefusedTotal,
		Help: "Client calls or connections refused by front-door admission, by listener and reason (busy: no worker free within the queue bounds of server.max-worker-threads; per_source: the source address's connection cap).",
	}, []string{"frontend", "reason"})
	m.frontendInFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricFrontendInFlightCalls,
		Help: "Client calls being served now, by front-door listener (bounded by its max-worker-threads).",
	}, []string{"frontend"})

	m.tlsExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricTLSCertificateExpiry,
		Help: "Unix time at which the certificate a TLS listener presents expires (server.tls.*), by listener.",
	}, []string{"frontend"})
	m.tlsReloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricTLSCertificateReloads,
		Help: "Readings of a TLS listener's certificate and key files after they changed, by listener and result (success: the new pair is served; failure: the previous one is kept).",
	}, []string{"frontend", "result"})

	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.backendFailures, m.backendFallback,
			m.routingAmbiguous, m.defaultCatalog, m.rateLimited, m.filtered,
			m.acquireTimeouts, m.sessionRetired, m.backendSessions, m.frontendConns, m.badFrames,
			m.frontendRefused, m.frontendInFlight, m.tlsExpiry, m.tlsReloads)
		for _, c := range []prometheus.Collector{
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		} {
			if err := reg.Register(c); err != nil {
				var are prometheus.AlreadyRegisteredError
				if !errors.As(err, &are) {
					panic(err)
				}
			}
		}
	}
	return m
}

// MethodLabel returns the method label value used for name: name itself when
// it is a known RPC, OtherLabel otherwise.
func (m *Metrics) MethodLabel(name string) string {
	if _, ok := m.methods[name]; ok {
		return name
	}
	return OtherLabel
}

func statusLabel(s string) string {
	switch s {
	case StatusOK, StatusError, StatusFallback, StatusThrottled:
		return s
	}
	return OtherLabel
}

// validLabel makes s usable as a label value (Prometheus requires UTF-8).
func validLabel(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// ObserveRequest counts one finished client request and records its latency.
// status is one of StatusOK, StatusError, StatusFallback, StatusThrottled; a
// fan-out request uses catalog FanoutCatalog and backend FanoutBackend; for a
// catalog-routed call backend is the catalog name. Catalog and backend values
// must come from configuration (a bounded set).
func (m *Metrics) ObserveRequest(method, catalog, backend, status string, d time.Duration) {
	if m == nil {
		return
	}
	key := requestKey{m.MethodLabel(method), catalog, backend, statusLabel(status)}
	m.childMu.RLock()
	c := m.children[key]
	m.childMu.RUnlock()
	if c == nil {
		c = m.newChild(key)
	}
	c.count.Inc()
	c.duration.Observe(d.Seconds())
}

func (m *Metrics) newChild(key requestKey) *requestChild {
	catalog, backend := validLabel(key.catalog), validLabel(key.backend)
	c := &requestChild{
		count:    m.requests.WithLabelValues(key.method, catalog, backend, key.status),
		duration: m.duration.WithLabelValues(key.method, catalog, backend),
	}
	m.childMu.Lock()
	if old := m.children[key]; old != nil {
		c = old
	} else {
		m.children[key] = c
	}
	m.childMu.Unlock()
	return c
}

// BackendFailure counts a failed backend call. exception is the exception type
// name (e.g. MetaException, TTransportException); distinct names are capped.
func (m *Metrics) BackendFailure(backend, exception string) {
	if m == nil {
		return
	}
	m.backendFailures.WithLabelValues(validLabel(backend), m.exceptionValues.label(exception)).Inc()
}

// BackendFallback counts a compatibility fallback: method was retried from one
// backend API (profile) to another after a backend failure.
func (m *Metrics) BackendFallback(method, fromAPI, toAPI string) {
	if m == nil {
		return
	}
	m.backendFallback.WithLabelValues(m.MethodLabel(method), m.apiValues.label(fromAPI), m.apiValues.label(toAPI)).Inc()
}

// RoutingAmbiguous counts a request refused because of conflicting namespace hints.
func (m *Metrics) RoutingAmbiguous() {
	if m == nil {
		return
	}
	m.routingAmbiguous.Inc()
}

// DefaultCatalogRouted counts a request routed to the default catalog for lack
// of an explicit catalog namespace.
func (m *Metrics) DefaultCatalogRouted(method string) {
	if m == nil {
		return
	}
	label := m.MethodLabel(method)
	if c, ok := m.defaultChildren.Load(label); ok {
		c.(prometheus.Counter).Inc()
		return
	}
	c, _ := m.defaultChildren.LoadOrStore(label, m.defaultCatalog.WithLabelValues(label))
	c.(prometheus.Counter).Inc()
}

// FilteredObjects adds n objects of objectType ("database" or "table") hidden
// by exposure rules while answering method for catalog. n <= 0 is ignored.
func (m *Metrics) FilteredObjects(method, catalog, objectType string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.filtered.WithLabelValues(m.MethodLabel(method), validLabel(catalog), validLabel(objectType)).Add(float64(n))
}

// SessionAcquireTimeout counts a fail-fast backend session acquisition
// timeout; operation is OperationBorrow or OperationReconnect.
func (m *Metrics) SessionAcquireTimeout(catalog, operation string) {
	if m == nil {
		return
	}
	m.acquireTimeouts.WithLabelValues(validLabel(catalog), validLabel(operation)).Inc()
}

// SessionRetired counts a backend session of catalog closed instead of given
// back to its pool; reason is one of RetireReasons.
func (m *Metrics) SessionRetired(catalog, reason string) {
	if m == nil {
		return
	}
	m.sessionRetired.WithLabelValues(validLabel(catalog), validLabel(reason)).Inc()
}

// RateLimited counts a request rejected by overload protection. dimension is
// the limiting dimension (principal, source, source_cidr, method_family,
// catalog, rpc_class), scope the configured rule that fired (e.g. "default",
// a CIDR rule name, a family, a catalog or an RPC class), methodFamily the
// method's family and catalog the resolved catalog. The caller should also
// call ObserveRequest with StatusThrottled.
func (m *Metrics) RateLimited(dimension, scope, method, methodFamily, catalog string) {
	if m == nil {
		return
	}
	m.rateLimited.WithLabelValues(m.rateLimitDimValue.label(dimension), validLabel(scope),
		m.MethodLabel(method), validLabel(methodFamily), validLabel(catalog)).Inc()
}

// SetBackendSessions publishes the pooled backend session counts of a catalog.
func (m *Metrics) SetBackendSessions(catalog string, active, idle int) {
	m.BackendSessionsOf(catalog)(active, idle)
}

// BackendSessionsOf returns a setter for one catalog's session gauges with
// the label children resolved once, for callers that update on every call.
func (m *Metrics) BackendSessionsOf(catalog string) func(active, idle int) {
	if m == nil {
		return func(int, int) {}
	}
	catalog = validLabel(catalog)
	a := m.backendSessions.WithLabelValues(catalog, SessionActive)
	i := m.backendSessions.WithLabelValues(catalog, SessionIdle)
	return func(active, idle int) {
		a.Set(float64(active))
		i.Set(float64(idle))
	}
}

// FrontendConnectionOpened and FrontendConnectionClosed track the open client
// connections of a front-door listener (name from configuration).
func (m *Metrics) FrontendConnectionOpened(frontend string) {
	if m == nil {
		return
	}
	m.frontendConns.WithLabelValues(validLabel(frontend)).Inc()
}

// FrontendConnectionClosed: see FrontendConnectionOpened.
func (m *Metrics) FrontendConnectionClosed(frontend string) {
	if m == nil {
		return
	}
	m.frontendConns.WithLabelValues(validLabel(frontend)).Dec()
}

// TLSCertificate records the certificate a TLS listener serves (at start
// and after each reading of changed files: ok false keeps the previous one).
func (m *Metrics) TLSCertificate(frontend string, notAfter time.Time, reloaded, ok bool) {
	if m == nil {
		return
	}
	if ok {
		m.tlsExpiry.WithLabelValues(validLabel(frontend)).Set(float64(notAfter.Unix()))
	}
	if reloaded {
		result := "success"
		if !ok {
			result = "failure"
		}
		m.tlsReloads.WithLabelValues(validLabel(frontend), result).Inc()
	}
}

// BadFrame counts a client message rejected before dispatch (e.g. reason
// "oversized", "bad_version", "decode_error"); distinct reasons are capped.
func (m *Metrics) BadFrame(frontend, reason string) {
	if m == nil {
		return
	}
	m.badFrames.WithLabelValues(validLabel(frontend), m.badFrameReasons.label(reason)).Inc()
}

// KnownBackendExceptions are the exception labels the proxy itself gives
// backend failures; KnownBackend exports them at zero for a catalog so that
// dashboards and alerts see the series before the first failure.
var KnownBackendExceptions = []string{"TTransportException", "PoolExhausted", "BadReply", "BudgetExceeded",
	"TApplicationException", "MetaException", "NoSuchObjectException"}

// KnownBackend creates the per-catalog series with known label sets at zero:
// backend failures by the proxy's exception labels, session acquire
// timeouts of both operations, and session retirements by reason.
func (m *Metrics) KnownBackend(catalog string) {
	if m == nil {
		return
	}
	catalog = validLabel(catalog)
	for _, e := range KnownBackendExceptions {
		m.backendFailures.WithLabelValues(catalog, m.exceptionValues.label(e))
	}
	m.acquireTimeouts.WithLabelValues(catalog, OperationBorrow)
	m.acquireTimeouts.WithLabelValues(catalog, OperationReconnect)
	for _, r := range RetireReasons {
		m.sessionRetired.WithLabelValues(catalog, r)
	}
}

// FrontendRefused counts a call or connection refused by admission.
func (m *Metrics) FrontendRefused(frontend, reason string) {
	if m == nil {
		return
	}
	m.frontendRefused.WithLabelValues(validLabel(frontend), m.badFrameReasons.label(reason)).Inc()
}

// FrontendInFlight moves the in-flight call gauge of a listener by delta.
func (m *Metrics) FrontendInFlight(frontend string, delta int) {
	if m == nil {
		return
	}
	if g, ok := m.inFlightChildren.Load(frontend); ok {
		g.(prometheus.Gauge).Add(float64(delta))
		return
	}
	g, _ := m.inFlightChildren.LoadOrStore(frontend, m.frontendInFlight.WithLabelValues(validLabel(frontend)))
	g.(prometheus.Gauge).Add(float64(delta))
}

// RegisterInFlightBytes exports the bytes client messages in progress hold
// beyond their base buffers, over all listeners (read from used at scrape).
func RegisterInFlightBytes(reg prometheus.Registerer, used func() int64, budget int64) {
	if reg == nil {
		return
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        MetricFrontendInFlightBytes,
		Help:        "Bytes that client messages being read hold beyond their base buffers, over all listeners; bounded by the in-flight message budget (the const label budget_bytes, twice the largest server.max-message-size).",
		ConstLabels: prometheus.Labels{"budget_bytes": strconv.FormatInt(budget, 10)},
	}, func() float64 { return float64(used()) }))
}

// boundedValues admits the first maxDynamicLabelValues distinct values of a
// label and folds the rest into OtherLabel.
type boundedValues struct {
	seen  sync.Map // string -> struct{}
	count atomic.Int32
	mu    sync.Mutex
}

func (b *boundedValues) label(v string) string {
	v = validLabel(v)
	if _, ok := b.seen.Load(v); ok {
		return v
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.seen.Load(v); ok {
		return v
	}
	if b.count.Load() >= maxDynamicLabelValues {
		return OtherLabel
	}
	b.seen.Store(v, struct{}{})
	b.count.Add(1)
	return v
}
