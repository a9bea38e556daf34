package monitoring

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/locks"
	"github.com/hms-proxy/hms-proxy/monitoring/promtest"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

const dashboardPath = "grafana/hms-proxy-dashboard.json"

// exerciseAllMetrics makes at least one observation on every metric Metrics
// exports, so that every series family shows up in a scrape.
func exerciseAllMetrics(m *Metrics, i int) {
	d := time.Duration(1+i%50) * time.Millisecond
	m.ObserveRequest("get_table", "catalog1", "catalog1", StatusOK, d)
	m.ObserveRequest("get_table", "catalog2", "catalog2", StatusOK, 3*d)
	m.ObserveRequest("get_all_databases", FanoutCatalog, FanoutBackend, StatusOK, 2*d)
	m.ObserveRequest("get_table", "catalog2", "catalog2", StatusError, d)
	m.ObserveRequest("get_table", "catalog1", "catalog1", StatusFallback, d)
	m.ObserveRequest("lock", "catalog1", "catalog1", StatusThrottled, 0)
	m.BackendFailure("catalog2", "TTransportException")
	m.BackendFallback("get_table", "APACHE_3_1_3", "HORTONWORKS_3_1_0_3_1_0_78")
	m.RoutingAmbiguous()
	m.DefaultCatalogRouted("get_table")
	m.FilteredObjects("get_all_tables", "catalog1", "table", 2)
	m.SessionAcquireTimeout("catalog1", OperationBorrow)
	m.SessionRetired("catalog1", RetireException)
	m.RateLimited("principal", "default", "lock", "acid_id_bound_lifecycle", "catalog1")
	m.SetBackendSessions("catalog1", 1+i%3, 4)
	m.FrontendConnectionOpened("primary")
	m.FrontendConnectionClosed("primary")
	m.FrontendConnectionOpened("primary")
	m.BadFrame("primary", "oversized")
}

// featureMetrics are metrics defined by feature packages next to their code
// (router/viewsql, router/guards, router/purge, router/breaker,
// router/polling, router, security/ratelimit, router/dbcache; gauges among
// them are registered as counters here: only names and labels matter), which this package does not
// import: their names and labels are repeated here so the dashboard checks
// see them. e2e's dashboard test scrapes the real ones from a running
// proxy fed by real traffic, so a drift between the two fails there.
var featureMetrics = []struct {
	name   string
	labels []string // name, value pairs of one series
}{
	{"hms_proxy_view_text_rewrites_total", []string{"catalog", "catalog2", "direction", "outward", "result", "rewritten"}},
	{"hms_proxy_view_text_unresolved_references_total", []string{"catalog", "catalog2", "direction", "inward", "reason", "cross_catalog"}},
	{"hms_proxy_iceberg_pointer_guard_events_total", []string{"catalog", "catalog1", "outcome", "repaired"}},
	{"hms_proxy_external_table_purge_total", []string{"catalog", "catalog2", "result", "deleted"}},
	// router/breaker, router/polling, router (fan-out), security/ratelimit, router/dbcache
	{"hms_proxy_circuit_breaker_state", []string{"catalog", "catalog2"}},
	{"hms_proxy_circuit_breaker_rejected_total", []string{"catalog", "catalog2"}},
	{"hms_proxy_adaptive_timeout_reconnect_total", []string{"catalog", "catalog2"}},
	{"hms_proxy_adaptive_timeout_reconnect_skipped_total", []string{"catalog", "catalog2", "reason", "hysteresis"}},
	{"hms_proxy_backend_probes_total", []string{"catalog", "catalog2", "result", "ok"}},
	{"hms_proxy_fanout_omitted_total", []string{"method", "get_all_databases", "catalog", "catalog2", "reason", "circuit_open"}},
	{"hms_proxy_hedged_reads_total", []string{"catalog", "catalog2", "result", "won"}},
	{"hms_proxy_rate_limit_tracked_keys", []string{"dimension", "source"}},
	{"hms_proxy_rate_limit_overflow_total", []string{"dimension", "source"}},
	// security/ranger (the histogram by its _bucket series, the gauges as counters: names and labels only)
	{"hms_proxy_ranger_evaluations_total", []string{"catalog", "catalog1", "resource_type", "table", "access_type", "_any", "result", "allowed"}},
	{"hms_proxy_ranger_evaluation_duration_seconds_bucket", []string{"catalog", "catalog1", "resource_type", "table", "le", "1e-05"}},
	{"hms_proxy_ranger_filtered_objects_total", []string{"catalog", "catalog1", "resource_type", "database"}},
	{"hms_proxy_ranger_plugin_info", []string{"catalog", "catalog1", "service_name", "hms_hive", "service_type", "hive", "app_id", "hms-proxy"}},
	{"hms_proxy_ranger_policy_downloads_total", []string{"service_name", "hms_hive", "kind", "policies", "result", "unchanged"}},
	{"hms_proxy_ranger_policy_version", []string{"service_name", "hms_hive"}},
	{"hms_proxy_ranger_policy_download_last_success_timestamp_seconds", []string{"service_name", "hms_hive"}},
	{"hms_proxy_ranger_plugin_ready", []string{"service_name", "hms_hive"}},
	{"hms_proxy_cache_requests_total", []string{"cache", "database_list", "catalog", "catalog1", "result", "hit"}},
	{"hms_proxy_cache_entries", []string{"cache", "database_list", "catalog", "catalog1"}},
	{"hms_proxy_cache_invalidations_total", []string{"cache", "database_list", "catalog", "catalog1", "reason", "write"}},
	{"hms_proxy_cache_refreshes_total", []string{"cache", "database_list", "catalog", "catalog1", "result", "success"}},
}

// registerFeatureMetrics registers featureMetrics on reg and returns a
// function that makes one observation on each.
func registerFeatureMetrics(reg prometheus.Registerer) func() {
	var incs []func()
	for _, fm := range featureMetrics {
		var names, values []string
		for i := 0; i+1 < len(fm.labels); i += 2 {
			names, values = append(names, fm.labels[i]), append(values, fm.labels[i+1])
		}
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: fm.name, Help: "feature metric " + fm.name}, names)
		reg.MustRegister(v)
		c := v.WithLabelValues(values...)
		incs = append(incs, c.Inc)
	}
	return func() {
		for _, inc := range incs {
			inc()
		}
	}
}

// lockExercise drives the synthetic lock shim's metrics (registered on the
// same registry, as app does) through two shims sharing one in-memory store:
// acquire, a check and an unlock through the other instance (handoffs), a
// store failure (a cancelled call), a split.
type lockExercise struct {
	m    *locks.Metrics
	a, b *locks.Shim
}

func newLockExercise(t *testing.T, reg prometheus.Registerer) *lockExercise {
	t.Helper()
	m, err := locks.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	store := locks.NewMemoryStore()
	mk := func(id string) *locks.Shim {
		s, err := locks.New(locks.Options{Store: store, Rules: locks.RulesHive3, SweepInterval: -1, Metrics: m, InstanceID: id})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	return &lockExercise{m: m, a: mk("replica-a"), b: mk("replica-b")}
}

func (e *lockExercise) run() {
	ctx := context.Background()
	tbl := "orders"
	req := locks.Request{Catalog: "catalog2", Lock: &thriftgen.LockRequest{User: "u", Hostname: "h",
		Component: []*thriftgen.LockComponent{{Type: thriftgen.LockType_SHARED_READ, Level: thriftgen.LockLevel_TABLE, Dbname: "sales", Tablename: &tbl}}}}
	if resp, err := e.a.Lock(ctx, req); err == nil {
		_, _ = e.b.CheckLock(ctx, resp.Lockid)
		_ = e.b.Unlock(ctx, resp.Lockid)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, _ = e.a.Lock(cancelled, req)
	e.m.LockRequestSplit("catalog1")
}

// exportedNames gathers a registry built by NewMetrics after every metric was
// touched, and returns every metric name a PromQL query can select (with the
// _bucket/_sum/_count series of histograms and summaries).
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	reg := prometheus.NewRegistry()
	exerciseAllMetrics(NewMetrics(reg, testMethods), 0)
	registerFeatureMetrics(reg)()
	newLockExercise(t, reg).run()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		n := mf.GetName()
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			names[n+"_bucket"], names[n+"_sum"], names[n+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[n], names[n+"_sum"], names[n+"_count"] = true, true, true
		default:
			names[n] = true
		}
	}
	return names
}

func TestDashboardUsesOnlyExportedMetrics(t *testing.T) {
	exprs, err := promtest.DashboardExprs(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(exprs) < 20 {
		t.Fatalf("only %d expressions found in the dashboard", len(exprs))
	}
	exported := exportedNames(t)
	used := map[string]bool{}
	for _, e := range exprs {
		names, err := promtest.MetricNames(e.Query)
		if err != nil {
			t.Errorf("%s: %v", e.Source, err)
			continue
		}
		if len(names) == 0 {
			t.Errorf("%s: no metric in %q", e.Source, e.Raw)
		}
		for _, n := range names {
			used[n] = true
			if !exported[n] {
				t.Errorf("%s uses %s, which this build does not export (expr %q)", e.Source, n, e.Raw)
			}
		}
	}
	// Every proxy metric has a panel, except those of features not built
	// yet: their panels come back with the features (a panel that can only
	// show "No data" would hide a real gap).
	notBuilt := map[string]bool{}
	for n := range exported {
		if notBuilt[n] {
			if used[n] {
				t.Errorf("%s has a panel, but its feature is not built: the panel could only show No data", n)
			}
			continue
		}
		if strings.HasPrefix(n, "hms_proxy_") && !used[n] &&
			!strings.HasSuffix(n, "_sum") && !strings.HasSuffix(n, "_count") {
			t.Errorf("metric %s has no panel in the dashboard", n)
		}
	}
}

func TestDashboardModel(t *testing.T) {
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		SchemaVersion int    `json:"schemaVersion"`
		UID           string `json:"uid"`
		Title         string `json:"title"`
		Panels        []struct {
			ID         int             `json:"id"`
			Type       string          `json:"type"`
			Title      string          `json:"title"`
			Datasource json.RawMessage `json:"datasource"`
			GridPos    struct{ H, W, X, Y int }
			Targets    []struct {
				Datasource json.RawMessage `json:"datasource"`
				Expr       string          `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name     string `json:"name"`
				Type     string `json:"type"`
				AllValue string `json:"allValue"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	if d.SchemaVersion < 36 || d.UID == "" || d.Title == "" {
		t.Fatalf("schemaVersion %d uid %q title %q", d.SchemaVersion, d.UID, d.Title)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Type == "query" && v.AllValue != ".*" {
			t.Errorf("variable %s: allValue %q, want .* (queries use =~)", v.Name, v.AllValue)
		}
	}
	for name, typ := range map[string]string{"datasource": "datasource", "catalog": "query", "backend": "query", "method": "query",
		"store_mode": "query"} {
		if vars[name] != typ {
			t.Errorf("template variable %s: want type %s, got %q", name, typ, vars[name])
		}
	}
	ids := map[int]bool{}
	titles := map[string]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("duplicate panel id %d", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		titles[p.Title] = true
		if !strings.Contains(string(p.Datasource), "${datasource}") {
			t.Errorf("panel %q does not use the datasource variable", p.Title)
		}
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: bad gridPos %+v", p.Title, p.GridPos)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if !strings.Contains(string(tg.Datasource), "${datasource}") {
				t.Errorf("panel %q: target does not use the datasource variable", p.Title)
			}
		}
	}
	for _, want := range []string{"Request rate", "Error ratio", "Fallback ratio", "Latency quantiles",
		"Top 10 methods by request rate", "Backend failures", "Compatibility fallbacks",
		"Default-catalog routing", "Ambiguous routing refusals", "Filtered objects",
		"Session acquire timeouts", "Sessions retired", "Backend sessions", "Memory", "View SQL rewrites", "View references left unchanged",
		"Iceberg pointer guard", "External table purges", "Synthetic lock events", "Active synthetic locks",
		"Synthetic lock handoffs", "Synthetic lock store failures", "Synthetic lock store", "Lock request splits",
		"Circuit breaker state", "Calls failed fast by open circuits",
		"Adaptive timeout changes", "Background probes", "Fan-out omissions", "Hedged reads", "Rate-limited requests",
		"Rate-limit tables", "Metadata cache hit ratio", "Metadata cache entries", "Cache invalidations and refreshes",
		"Ranger evaluations", "Ranger evaluation time p99", "Objects hidden by Ranger", "Ranger policy age",
		"Ranger policy version and readiness", "Ranger downloads", "Ranger plugins"} {
		if !titles[want] {
			t.Errorf("dashboard lacks panel %q", want)
		}
	}
}

// TestDashboardExpressionsReturnDataFromRealPrometheus scrapes the real
// management listener's /metrics with a real Prometheus server and runs every
// dashboard expression against it.
func TestDashboardExpressionsReturnDataFromRealPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Prometheus server")
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, testMethods)
	exerciseAllMetrics(m, 0)
	features := registerFeatureMetrics(reg)
	features()
	lx := newLockExercise(t, reg)
	lx.run()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // steady traffic so rates and quantiles are non-trivial
		defer close(done)
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				exerciseAllMetrics(m, i)
				features()
				lx.run()
			}
		}
	}()
	defer func() { close(stop); <-done }()

	// Prometheus scrapes the management listener's /metrics, as in production.
	mgmt := NewManagement(ManagementConfig{BindHost: "127.0.0.1"}, reg, newFakeSource(BackendState{Catalog: "catalog1", Connected: true}), nil)
	if err := mgmt.Start(); err != nil {
		t.Fatal(err)
	}
	defer mgmt.Shutdown(t.Context())
	prom := promtest.StartT(t, mgmt.Addr().String(), promtest.Options{})
	if err := prom.WaitForScrapes(3, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	exprs, err := promtest.DashboardExprs(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, e := range exprs {
		left := max(time.Until(deadline), time.Second)
		if err := prom.WaitForData(e.Query, left); err != nil {
			t.Errorf("%s returns no data: %v\n  query: %s", e.Source, err, e.Query)
			continue
		}
		samples, err := prom.QuerySamples(e.Query)
		if err != nil {
			t.Errorf("%s: %v", e.Source, err)
			continue
		}
		t.Logf("%-75s %d series, first=%s", e.Source, len(samples), samples[0].Value)
	}
}
