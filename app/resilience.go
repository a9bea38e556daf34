package app

import (
	"fmt"
	"log/slog"
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/router"
	"github.com/hms-proxy/hms-proxy/router/breaker"
	"github.com/hms-proxy/hms-proxy/router/dbcache"
	"github.com/hms-proxy/hms-proxy/router/polling"
	"github.com/hms-proxy/hms-proxy/security/ratelimit"
)

// resilience builds the latency-aware parts of the router from their keys:
// a breaker.Guard per catalog for its lane (routing.circuit-breaker.*,
// routing.adaptive-timeout.*, catalog.<name>.latency-budget-ms), background
// polling (routing.backend-state-polling.*), hedged and degraded fan-out
// (routing.hedged-read.*, routing.degraded-routing-policy), the database
// caches (routing.database-*-cache.*, routing.database-cache.background-refresh.*)
// and synthetic refresh_privileges. Their metrics are registered on reg
// whether the features are on or not (dashboards see zeros, not gaps).
func resilience(cfg *configs.Config, m *resilienceMetrics, log *slog.Logger) (router.ResilienceOptions, map[string]*breaker.Guard, error) {
	rt := cfg.Routing
	var o router.ResilienceOptions
	bm := m.breaker
	guards := map[string]*breaker.Guard{} // each goes to its catalog's lane
	for _, cc := range cfg.Catalogs {
		at := rt.AdaptiveTimeout
		g, err := breaker.New(breaker.Options{Catalog: cc.Name,
			CircuitBreaker: rt.CircuitBreaker.Enabled, FailureThreshold: rt.CircuitBreaker.FailureThreshold,
			OpenState: rt.CircuitBreaker.OpenState, LatencyBudget: cc.LatencyBudget,
			Adaptive: breaker.Adaptive{Enabled: at.Enabled, Initial: at.Initial, Min: at.Min, Max: at.Max,
				Multiplier: at.Multiplier, Alpha: at.Alpha, ReconnectCooldown: at.ReconnectCooldown},
			Metrics: bm})
		if err != nil {
			return o, nil, err
		}
		guards[cc.Name] = g
	}
	pm := m.polling
	if bp := rt.BackendStatePolling; bp.Enabled {
		o.Polling = &polling.Options{Interval: bp.Interval, ProbeTimeout: bp.ProbeTimeout,
			MaxParallelism: bp.MaxParallelism, Metrics: pm, Log: log}
	}
	o.SafeFanoutReads = rt.DegradedRoutingPolicy == configs.DegradedSafeFanoutReads
	hr := rt.HedgedRead
	o.Hedge = router.HedgeOptions{Enabled: hr.Enabled, MaxParallelism: hr.MaxParallelism,
		DelayMultiplier: hr.DelayMultiplier, MinDelay: hr.MinDelay}
	o.FanoutTimeout = hr.FanoutTimeout
	o.SyntheticRefreshPrivileges = rt.RefreshPrivileges.SyntheticSuccess
	var err error
	o.Metrics = m.router
	cm := m.cache
	list, meta := rt.DatabaseListCache, rt.DatabaseMetadataCache
	if list.TTL > 0 || meta.TTL > 0 {
		rf := rt.DatabaseCacheRefresh
		if o.Cache, err = dbcache.New(dbcache.Options{
			List: dbcache.CacheOptions{TTL: list.TTL, MaxEntries: list.MaxEntries, MaxBytes: list.MaxBytes,
				SharedAcrossUsers: list.SharedAcrossUsers},
			Metadata: dbcache.CacheOptions{TTL: meta.TTL, MaxEntries: meta.MaxEntries, MaxBytes: meta.MaxBytes,
				SharedAcrossUsers: meta.SharedAcrossUsers},
			// With both caches off configs warned that refresh has no effect.
			Refresh: dbcache.RefreshOptions{Enabled: rf.Enabled, Interval: rf.Interval, ActivityWindow: rf.ActivityWindow},
			Metrics: cm, Log: log}); err != nil {
			return o, nil, err
		}
	}
	return o, guards, nil
}

// resilienceMetrics are the metrics of the resilience parts and the rate
// limiter, registered once: every router generation (start, each reload)
// builds its parts on them.
type resilienceMetrics struct {
	breaker *breaker.Metrics
	polling *polling.Metrics
	router  *router.ResilienceMetrics
	cache   *dbcache.Metrics
	rate    *ratelimit.Metrics
}

func newResilienceMetrics(reg prometheus.Registerer) (*resilienceMetrics, error) {
	rm, err := router.NewResilienceMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &resilienceMetrics{breaker: breaker.NewMetrics(reg), polling: polling.NewMetrics(reg), router: rm,
		cache: dbcache.NewMetrics(reg), rate: ratelimit.NewMetrics(reg)}, nil
}

// rateLimiter builds the overload protection (rate-limit.*), nil when it is
// off; its metrics are registered on reg either way.
func rateLimiter(cfg *configs.Config, rm *resilienceMetrics) (*ratelimit.Limiter, error) {
	m := rm.rate
	rl := cfg.RateLimit
	if !rl.Enabled {
		return nil, nil
	}
	lim := func(p configs.RateLimitPolicy) ratelimit.Limit {
		return ratelimit.Limit{RPS: float64(p.RequestsPerSecond), Burst: p.Burst}
	}
	o := ratelimit.Options{MethodFamily: map[string]ratelimit.Limit{}, Catalog: map[string]ratelimit.Limit{},
		RPCClass: map[string]ratelimit.Limit{}, MaxKeys: rl.MaxTrackedKeys, IdleTTL: rl.IdleTTL, Metrics: m}
	if rl.Principal.RequestsPerSecond > 0 {
		l := lim(rl.Principal)
		o.Principal = &l
	}
	if rl.Source.RequestsPerSecond > 0 {
		l := lim(rl.Source)
		o.Source = &l
	}
	var rules []string
	for name := range rl.SourceCIDR {
		rules = append(rules, name)
	}
	sort.Strings(rules)
	for _, name := range rules {
		r := rl.SourceCIDR[name]
		o.SourceCIDRs = append(o.SourceCIDRs, ratelimit.CIDRRule{Name: name, Prefixes: r.CIDRs, Limit: lim(r.RateLimitPolicy)})
	}
	for name, p := range rl.MethodFamily {
		o.MethodFamily[name] = lim(*p)
	}
	for name, p := range rl.Catalog {
		o.Catalog[name] = lim(*p)
	}
	for name, p := range rl.RPCClass {
		o.RPCClass[name] = lim(*p)
	}
	for _, cc := range cfg.Catalogs {
		o.Catalogs = append(o.Catalogs, cc.Name)
	}
	l, err := ratelimit.New(o)
	if err != nil {
		return nil, fmt.Errorf("rate-limit: %w", err)
	}
	return l, nil
}
