package router

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/monitoring/metric"
	"github.com/hms-proxy/hms-proxy/router/breaker"
	"github.com/hms-proxy/hms-proxy/router/dbcache"
	"github.com/hms-proxy/hms-proxy/router/polling"
)

// Latency-aware routing (routing.circuit-breaker.*, routing.adaptive-timeout.*,
// routing.backend-state-polling.*, routing.hedged-read.*,
// routing.degraded-routing-policy, the database caches and synthetic
// refresh_privileges): the parts are built in app from their keys and passed
// in; the router consults them on every backend call and fan-out.
//
//   - Every catalog has a breaker.Guard (shared by its shared pool and its
//     impersonation pools): an open circuit fails the call before a session
//     is borrowed, the adaptive timeout bounds the call, every outcome is
//     reported to it. A catalog without a configured guard gets one with the
//     breaker and the adaptive timeout off, so /readyz always shows a latency
//     EWMA computed one way.
//   - Background polling probes each catalog with get_metastore_db_uuid past
//     the breaker and feeds the result to the guard and to /readyz.
//   - Fan-out reads (fanout.go) run their legs in parallel, each bounded by
//     its catalog's budget; hedged reads send a second attempt to a slow
//     catalog; SAFE_FANOUT_READS leaves degraded catalogs out, counted,
//     logged, audited and shown in /readyz.

// ResilienceOptions are the latency-aware parts of a Router. The zero value
// turns everything off (strict fan-out; the breakers are the lanes').
type ResilienceOptions struct {
	// Polling, when set, probes every catalog in the background (Start);
	// the router fills in Targets and Report. /readyz then shows the last
	// probes instead of probing on request.
	Polling *polling.Options
	// SafeFanoutReads is routing.degraded-routing-policy=SAFE_FANOUT_READS:
	// get_all_databases, get_databases and get_table_meta leave degraded
	// catalogs out instead of failing.
	SafeFanoutReads bool
	// Hedge is routing.hedged-read.*.
	Hedge HedgeOptions
	// FanoutTimeout bounds a whole fan-out (routing.hedged-read.fanout-timeout-ms); 0: none.
	FanoutTimeout time.Duration
	// Cache holds the database list and metadata caches; nil: off. The
	// router starts and closes it.
	Cache *dbcache.Cache
	// SyntheticRefreshPrivileges answers refresh_privileges with success
	// without a backend call (routing.refresh-privileges.*).
	SyntheticRefreshPrivileges bool
	Metrics                    *ResilienceMetrics
}

// HedgeOptions configure hedged fan-out reads.
type HedgeOptions struct {
	Enabled bool
	// MaxParallelism bounds the backend attempts of one fan-out in flight at
	// once, legs and hedges (0: the number of catalogs).
	MaxParallelism int
	// A hedge is sent once the first attempt has taken longer than
	// max(MinDelay, the catalog's latency EWMA × DelayMultiplier).
	DelayMultiplier float64
	MinDelay        time.Duration
}

// Defaults of the hedge delay (hms-proxy keys routing.hedged-read.delay-multiplier
// and .min-delay-ms).
const (
	DefaultHedgeDelayMultiplier = 3.0
	DefaultHedgeMinDelay        = 10 * time.Millisecond
)

// Metric names of the router's latency-aware parts (hms-proxy additions).
const (
	MetricFanoutOmittedTotal = "hms_proxy_fanout_omitted_total"
	MetricHedgedReadsTotal   = "hms_proxy_hedged_reads_total"
)

// Omission reasons (the reason label of MetricFanoutOmittedTotal).
const (
	OmitCircuitOpen = "circuit_open" // the catalog's breaker is open
	OmitProbeFailed = "probe_failed" // its last background probe failed
	OmitTimeout     = "timeout"      // its leg ran out of time (budget, adaptive timeout, fan-out timeout)
	OmitFailed      = "failed"       // its leg failed otherwise (connection refused, pool exhausted, bad reply)
)

// Hedge results (the result label of MetricHedgedReadsTotal).
const (
	HedgeWon  = "won"  // the second attempt answered first
	HedgeLost = "lost" // the first attempt answered first after all
)

// ResilienceMetrics are the fan-out omission and hedge counters. A nil
// *ResilienceMetrics records nothing.
type ResilienceMetrics struct {
	omitted *prometheus.CounterVec
	hedges  *prometheus.CounterVec
}

// NewResilienceMetrics registers the metrics with reg (nil: unregistered).
func NewResilienceMetrics(reg prometheus.Registerer) (*ResilienceMetrics, error) {
	r := metric.New(reg, "resilience metrics")
	m := &ResilienceMetrics{
		omitted: r.CounterVec(MetricFanoutOmittedTotal,
			"Catalogs left out of a safe fan-out read (routing.degraded-routing-policy=SAFE_FANOUT_READS), by method, catalog and reason (circuit_open, probe_failed, timeout, failed).", "method", "catalog", "reason"),
		hedges: r.CounterVec(MetricHedgedReadsTotal,
			"Second attempts of fan-out reads sent to a slow catalog (routing.hedged-read), by catalog and result: won (answered first) or lost.", "catalog", "result"),
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// Known makes the series of a catalog visible at zero.
func (m *ResilienceMetrics) Known(catalog string, methods ...string) {
	if m == nil {
		return
	}
	for _, meth := range methods {
		for _, r := range []string{OmitCircuitOpen, OmitProbeFailed, OmitTimeout, OmitFailed} {
			m.omitted.WithLabelValues(meth, catalog, r)
		}
	}
	for _, r := range []string{HedgeWon, HedgeLost} {
		m.hedges.WithLabelValues(catalog, r)
	}
}

func (m *ResilienceMetrics) omit(method, catalog, reason string) {
	if m != nil {
		m.omitted.WithLabelValues(method, catalog, reason).Inc()
	}
}

func (m *ResilienceMetrics) hedge(catalog, result string) {
	if m != nil {
		m.hedges.WithLabelValues(catalog, result).Inc()
	}
}

// safeFanoutMethods are the fan-out reads degraded omission applies to.
var safeFanoutMethods = []string{"get_all_databases", "get_databases", "get_table_meta"}

// catalogState is what the router keeps per catalog beyond the pool: the
// last background probe and the fan-out omissions.
type catalogState struct {
	probed    atomic.Bool  // a background probe has reported
	probeFail atomic.Bool  // the last one failed
	omitted   atomic.Int64 // fan-out omissions
	lastOmit  atomic.Int64 // unix seconds of the last one
}

// resilience is the router's part of ResilienceOptions (each catalog's
// breaker and probe state are its lane's).
type resilience struct {
	opt    ResilienceOptions
	poller *polling.Poller
	cache  *dbcache.Cache
	m      *ResilienceMetrics

	startOnce sync.Once
}

// newPoller builds the background poller over the lanes' shared pools.
func (r *Router) newPoller(o polling.Options) (*polling.Poller, error) {
	o.Targets = nil
	for _, l := range r.lanes {
		b := l.pool
		o.Targets = append(o.Targets, polling.Target{Name: l.cat.Name, Probe: func(ctx context.Context) error {
			reply, done, err := b.Probe(ctx, polling.DBUUID.Request(1))
			if err != nil {
				return err
			}
			defer done()
			return polling.DBUUID.Check(reply)
		}})
	}
	o.Report = func(res polling.Result) {
		l := r.Lane(res.Target)
		if l == nil {
			return
		}
		l.pool.markProbe()
		if res.Err != nil {
			l.pool.failure(fmt.Errorf("probe: %w", res.Err))
		}
		l.state.probeFail.Store(res.Err != nil)
		l.state.probed.Store(true)
		l.breaker.ProbeResult(res.Latency, res.Err)
	}
	if o.Log == nil {
		o.Log = r.log
	}
	return polling.New(o)
}

// Start runs the router's background work: backend polling and the cache's
// refresh rounds. Close stops it.
func (r *Router) Start() {
	r.res.startOnce.Do(func() {
		if r.res.poller != nil {
			r.res.poller.Start()
		}
		if r.res.cache != nil {
			r.res.cache.Start()
		}
	})
}

// Polling reports whether background polling is on (then /readyz reads the
// last probes instead of probing on request).
func (r *Router) Polling() bool { return r.res.poller != nil }

// LastBackgroundProbe is when the last completed polling round started (zero
// before the first one, or without polling).
func (r *Router) LastBackgroundProbe() time.Time {
	if r.res.poller == nil {
		return time.Time{}
	}
	return r.res.poller.LastRound()
}

// degradedNow says why a safe fan-out leaves the lane's catalog out before
// asking it: its circuit is open, or its last background probe failed (""
// when it is asked).
func (l *Lane) degradedNow() string {
	if l.breaker.Circuit() == breaker.Open {
		return OmitCircuitOpen
	}
	if l.state.probed.Load() && l.state.probeFail.Load() {
		return OmitProbeFailed
	}
	return ""
}

// omissionReason classifies a leg's failure for SAFE_FANOUT_READS: a failure
// of the catalog's backend (transport, time, breaker, pool) is an omission;
// anything else ("" : a refusal, an answer the backend gave) fails the call.
func omissionReason(err error) string {
	var be *backendError
	if !errors.As(err, &be) {
		return ""
	}
	switch {
	case errors.Is(err, breaker.ErrOpen):
		return OmitCircuitOpen
	case errors.Is(err, ErrBudgetExceeded), errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return OmitTimeout
	}
	return OmitFailed
}

// recordOmission counts, logs and remembers one omitted catalog.
func (r *Router) recordOmission(method string, l *Lane, reason string, err error) {
	c, st := l.cat, &l.state
	st.omitted.Add(1)
	st.lastOmit.Store(time.Now().Unix())
	r.res.m.omit(method, c.Name, reason)
	if ok, suppressed := r.logs.allow("omit|" + c.Name + "|" + reason + "|" + method); ok {
		attrs := []any{"method", method, "catalog", c.Name, "reason", reason}
		if err != nil {
			attrs = append(attrs, "err", err)
		}
		if suppressed > 0 {
			attrs = append(attrs, "suppressedSinceLast", suppressed)
		}
		r.log.Warn("catalog left out of a fan-out read (routing.degraded-routing-policy=SAFE_FANOUT_READS)", attrs...)
	}
}

// Cache is the database cache the router uses (nil: off).
func (r *Router) Cache() *dbcache.Cache { return r.res.cache }
