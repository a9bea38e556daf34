package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/hms-proxy/hms-proxy/router"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Reload without restart.
//
// What can change live is what the router is built from: the catalogs and
// their backends, access modes, exposure, the table policies, tracing (and,
// once the resilience parts are wired in, rate limits, breakers and caches).
// A reload builds a whole new router from the new configuration and swaps it
// under the listeners in one atomic store (routerSwitch): a call runs on the
// router it started on, a new call on the new one, and the old router's
// backend pools are closed once its last call has finished. One mechanism
// covers every part the router owns, added catalogs and removed ones
// included, and no call ever sees half of an old and half of a new
// configuration. The log level is the one live part outside the router (an
// slog.LevelVar).
//
// Everything else (listeners, management, Kerberos, tokens, the lock store,
// the REST listener, audit, the log file) is built once; a reload that
// changes one of those keys keeps the running value and says so, naming
// the key (restartKey).

// MetricConfigReloads and MetricConfigLastReloadSuccess are the reload
// metrics (hms-proxy additions).
const (
	MetricConfigReloads           = "hms_proxy_config_reloads_total"
	MetricConfigLastReloadSuccess = "hms_proxy_config_last_reload_success_timestamp_seconds"
)

// reloadMetrics counts reloads by result and keeps the time of the last
// configuration that was applied (the start counts as one).
type reloadMetrics struct {
	reloads *prometheus.CounterVec
	last    prometheus.Gauge
}

func newReloadMetrics(reg prometheus.Registerer) *reloadMetrics {
	m := &reloadMetrics{
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricConfigReloads,
			Help: "Configuration reloads (SIGHUP, POST /reload) by result: success (applied), failure (refused: the running configuration is kept)."},
			[]string{"result"}),
		last: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricConfigLastReloadSuccess,
			Help: "Unix time at which the configuration in force was applied (the start, or the last successful reload)."}),
	}
	m.reloads.WithLabelValues("success")
	m.reloads.WithLabelValues("failure")
	m.last.SetToCurrentTime()
	reg.MustRegister(m.reloads, m.last)
	return m
}

// generation is one router and the calls running on it.
type generation struct {
	r     *router.Router
	cfg   *configs.Config
	calls atomic.Int64 // calls in flight; retiredBit set once it is replaced
	idle  chan struct{}
	once  sync.Once
}

const retiredBit = int64(1) << 62

func newGeneration(r *router.Router, cfg *configs.Config) *generation {
	return &generation{r: r, cfg: cfg, idle: make(chan struct{})}
}

// enter counts a call, false when the generation was replaced meanwhile.
func (g *generation) enter() bool {
	for {
		n := g.calls.Load()
		if n&retiredBit != 0 {
			return false
		}
		if g.calls.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (g *generation) leave() {
	if g.calls.Add(-1) == retiredBit {
		g.once.Do(func() { close(g.idle) })
	}
}

// retire marks the generation replaced; idle is closed when its last call
// has left.
func (g *generation) retire() {
	if g.calls.Or(retiredBit) == 0 {
		g.once.Do(func() { close(g.idle) })
	}
}

// routerSwitch is the listeners' handler: it runs each call on the current
// generation's router.
type routerSwitch struct {
	cur atomic.Pointer[generation]
}

func (s *routerSwitch) acquire() *generation {
	for {
		g := s.cur.Load()
		if g.enter() {
			return g
		}
	}
}

// Handle implements frontdoor.Handler.
func (s *routerSwitch) Handle(ctx context.Context, conn *router.ConnInfo, msg *wire.Message, out []byte) []byte {
	g := s.acquire()
	defer g.leave()
	return g.r.Handle(ctx, conn, msg, out)
}

// swap installs g and returns the generation it replaced (retired).
func (s *routerSwitch) swap(g *generation) *generation {
	old := s.cur.Swap(g)
	old.retire()
	return old
}

// Current is the router serving new calls (Router is the one Build made).
func (a *App) Current() *router.Router { return a.sw.cur.Load().r }

// CurrentConfig is the configuration in force (Config is the one Build
// was given).
func (a *App) CurrentConfig() *configs.Config { return a.sw.cur.Load().cfg }

// SetSource names the file a reload re-reads (SIGHUP, POST /reload) and
// the properties the running configuration was parsed from.
func (a *App) SetSource(path string, props map[string]string) {
	a.rmu.Lock()
	defer a.rmu.Unlock()
	a.path, a.props = path, props
}

// ReadConfigFile reads a properties file once, returning its parsed and
// validated configuration and its raw properties (a reload compares them).
func ReadConfigFile(path string) (*configs.Config, map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := configs.ParseReader(bytes.NewReader(b))
	if err != nil {
		var se *configs.SyntaxError
		if errors.As(err, &se) {
			se.File = path
		}
		return nil, nil, err
	}
	props, err := configs.ReadProperties(bytes.NewReader(b))
	if err != nil {
		return nil, nil, err
	}
	return cfg, props, nil
}

// ReloadOutcome says what a reload did.
type ReloadOutcome struct {
	Changed []string // keys applied live
	Kept    []string // keys that need a restart: their running value was kept
}

func (o ReloadOutcome) String() string {
	if len(o.Changed) == 0 && len(o.Kept) == 0 {
		return "no change"
	}
	var parts []string
	if len(o.Changed) > 0 {
		parts = append(parts, "applied: "+strings.Join(o.Changed, ", "))
	}
	if len(o.Kept) > 0 {
		parts = append(parts, "need a restart, running values kept: "+strings.Join(o.Kept, ", "))
	}
	return strings.Join(parts, "; ")
}

// Reload re-reads the file given to SetSource and applies it (ReloadProps).
func (a *App) Reload(ctx context.Context) (ReloadOutcome, error) {
	a.rmu.Lock()
	path := a.path
	a.rmu.Unlock()
	if path == "" {
		err := errors.New("no configuration file to reload from (the proxy was not started from a file)")
		a.reloadFailed(err)
		return ReloadOutcome{}, err
	}
	cfg, props, err := ReadConfigFile(path)
	if err != nil {
		err = fmt.Errorf("%s is invalid, the running configuration is kept:\n%w", path, err)
		a.reloadFailed(err)
		return ReloadOutcome{}, err
	}
	return a.reload(ctx, cfg, props, path)
}

// ReloadProps applies a new configuration given as properties (tests, or a
// caller that read the file itself).
func (a *App) ReloadProps(ctx context.Context, props map[string]string) (ReloadOutcome, error) {
	cfg, err := configs.Parse(props)
	if err != nil {
		err = fmt.Errorf("the new configuration is invalid, the running configuration is kept:\n%w", err)
		a.reloadFailed(err)
		return ReloadOutcome{}, err
	}
	return a.reload(ctx, cfg, props, "the new configuration")
}

func (a *App) reloadFailed(err error) {
	a.reloadMetrics.reloads.WithLabelValues("failure").Inc()
	a.Log.Error("configuration reload refused; the running configuration is kept", "err", err)
}

// reload applies cfg (parsed from props): keys that need a restart keep
// their running values, the rest is built into a new router, which is
// probed and then swapped in.
func (a *App) reload(ctx context.Context, cfg *configs.Config, props map[string]string, what string) (ReloadOutcome, error) {
	a.rmu.Lock()
	defer a.rmu.Unlock()
	if a.draining.Load() {
		err := fmt.Errorf("%s is not applied: the proxy is shutting down", what)
		a.reloadFailed(err)
		return ReloadOutcome{}, err
	}
	cur := a.sw.cur.Load()
	var out ReloadOutcome
	changed := changedKeys(cur.cfg, cfg)
	oldCats := map[string]bool{}
	for _, c := range cur.cfg.Catalogs {
		oldCats[c.Name] = true
	}
	merged := make(map[string]string, len(props))
	for k, v := range props {
		merged[k] = v
	}
	var refusals []string
	for _, s := range changed {
		if !restartKey(s) {
			out.Changed = append(out.Changed, s.Key)
			continue
		}
		if cat := catalogOfKey(s.Key, cur.cfg); cat != "" && cfg.Catalog(cat) == nil {
			continue // the catalog is removed by this reload, and its keys with it
		}
		if cat := catalogOfKey(s.Key, cfg); cat != "" && !oldCats[cat] {
			// A catalog added by the reload has no running value to keep.
			// Serving it without a setting the parts built at start would
			// need (a Kerberized backend reached without Kerberos, a user
			// not impersonated) would silently change what it means.
			if !s.Default || s.Feature == "impersonation" && strings.HasSuffix(s.Key, ".impersonation-enabled") && s.Value == "true" {
				refusals = append(refusals, fmt.Sprintf("%s=%s: catalog %s is added by this reload, and this key needs a restart (%s is built at start); restart the proxy to add this catalog",
					s.Key, s.Value, cat, featureTitle(s.Feature)))
			}
			continue
		}
		out.Kept = append(out.Kept, s.Key)
		if old, ok := a.props[s.Key]; ok {
			merged[s.Key] = old
		} else {
			delete(merged, s.Key)
		}
	}
	if len(refusals) > 0 {
		err := fmt.Errorf("%s is refused, the running configuration is kept:\n%s", what, strings.Join(refusals, "\n"))
		a.reloadFailed(err)
		return out, err
	}
	next := cfg
	if len(out.Kept) > 0 {
		var err error
		if next, err = configs.Parse(merged); err != nil {
			err = fmt.Errorf("%s is refused: with the keys that need a restart kept at their running values (%s) it is invalid, the running configuration is kept:\n%w",
				what, strings.Join(out.Kept, ", "), err)
			a.reloadFailed(err)
			return out, err
		}
	}
	for _, k := range out.Kept {
		a.Log.Warn("configuration reload: this key needs a restart; the running value is kept until then", "key", k,
			"running", settingValue(cur.cfg, k), "file", settingValue(cfg, k))
	}
	if len(out.Changed) == 0 {
		a.reloadMetrics.reloads.WithLabelValues("success").Inc()
		a.reloadMetrics.last.SetToCurrentTime()
		a.Log.Info("configuration reloaded: nothing that can change live changed", "kept", len(out.Kept))
		return out, nil
	}
	r, err := a.buildRouter(next)
	if err != nil {
		err = fmt.Errorf("%s is refused, the running configuration is kept: %w", what, err)
		a.reloadFailed(err)
		return out, err
	}
	// Probe the new backends before they serve, so /readyz (and the
	// balancer) see them connected at once rather than unknown.
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	r.ProbeBackends(pctx)
	cancel()
	r.Start() // its background polling and cache refresh (Close stops them)
	if a.LogLevel != nil {
		var lv slog.Level
		if err := lv.UnmarshalText([]byte(next.Logging.Level)); err == nil {
			a.LogLevel.Set(lv)
		}
	}
	old := a.sw.swap(newGeneration(r, next))
	a.props = merged
	a.reloadMetrics.reloads.WithLabelValues("success").Inc()
	a.reloadMetrics.last.SetToCurrentTime()
	a.Log.Info("configuration reloaded", "applied", strings.Join(out.Changed, ","), "kept_until_restart", strings.Join(out.Kept, ","))
	a.retired.Add(1)
	go func() {
		defer a.retired.Done()
		<-old.idle
		old.r.Close()
		for _, c := range old.cfg.Catalogs {
			if next.Catalog(c.Name) == nil {
				a.Metrics.BackendSessionsOf(c.Name)(0, 0) // its pool is closed: no sessions left
			}
		}
		a.Log.Debug("the router of the previous configuration is closed (its last call finished)")
	}()
	return out, nil
}

// changedKeys are the keys whose effective value differs, in registry order
// (a key only one side has counts).
func changedKeys(old, cur *configs.Config) []configs.Setting {
	before := map[string]configs.Setting{}
	for _, s := range old.Settings() {
		before[s.Key] = s
	}
	seen := map[string]bool{}
	var out []configs.Setting
	for _, s := range cur.Settings() {
		seen[s.Key] = true
		if b, ok := before[s.Key]; !ok || b.Value != s.Value || b.HasValue != s.HasValue {
			out = append(out, s)
		}
	}
	for _, s := range old.Settings() {
		if !seen[s.Key] {
			s.Value, s.HasValue = "", false
			out = append(out, s)
		}
	}
	return out
}

// liveFeatures are the features whose keys a reload applies: what the
// router is built from.
var liveFeatures = map[string]bool{
	"catalogs": true, "backend-client": true, "session-lifetime": true,
	"rate-limit": true, "circuit-breaker": true, "adaptive-timeout": true, "backend-polling": true,
	"hedged-read": true, "degraded-routing": true, "database-list-cache": true,
	"database-metadata-cache": true, "database-cache-refresh": true, "refresh-privileges": true,
	"view-rewrite": true, "transactional-ddl-guard": true, "iceberg-pointer-guard": true,
}

// liveKeys are live keys of features that are otherwise built once.
var liveKeys = map[string]bool{"logging.level": true, "logging.debug-tracing": true}

// restartOnly are keys of live features that still need a restart.
var restartOnly = map[string]bool{
	// Transactions, the lock shim's rules and every client's unqualified
	// names belong to the default catalog; the separator is part of every
	// external database name clients hold.
	"routing.default-catalog":      true,
	"routing.catalog-db-separator": true,
}

// restartKey reports whether a key needs a restart.
func restartKey(s configs.Setting) bool {
	if restartOnly[s.Pattern] {
		return true
	}
	return !liveFeatures[s.Feature] && !liveKeys[s.Pattern]
}

// RestartKeys lists the key patterns a reload does not apply
// (docs/operations.md#reloading-the-configuration).
func RestartKeys(cfg *configs.Config) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range cfg.Settings() {
		if restartKey(s) && !seen[s.Pattern] {
			seen[s.Pattern] = true
			out = append(out, s.Pattern)
		}
	}
	sort.Strings(out)
	return out
}

// catalogOfKey is the catalog a catalog.<name>.* key belongs to.
func catalogOfKey(key string, cfg *configs.Config) string {
	rest, ok := strings.CutPrefix(key, "catalog.")
	if !ok {
		return ""
	}
	for _, c := range cfg.Catalogs {
		if strings.HasPrefix(rest, c.Name+".") {
			return c.Name
		}
	}
	return ""
}

func featureTitle(id string) string {
	switch id {
	case "backend-kerberos":
		return "outbound Kerberos"
	case "impersonation":
		return "impersonation"
	case "external-table-drop-purge":
		return "the drop purge"
	case "synthetic-locks":
		return "the synthetic lock shim"
	}
	return "feature " + id
}

func settingValue(cfg *configs.Config, key string) string {
	for _, s := range cfg.Settings() {
		if s.Key == key {
			if !s.HasValue {
				return "(none)"
			}
			return s.Value
		}
	}
	return "(not set)"
}

var _ monitoring.ReadinessSource = readiness{}

// managementReload is POST /reload (management.reload-enabled), nil when off.
func (a *App) managementReload() func(ctx context.Context) (string, error) {
	if !a.Config.Management.ReloadEnabled {
		return nil
	}
	return func(ctx context.Context) (string, error) {
		out, err := a.Reload(ctx)
		if err != nil {
			return "", err
		}
		return out.String(), nil
	}
}
