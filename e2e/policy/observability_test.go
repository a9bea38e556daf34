package policy

// Observability end to end: a real Prometheus scraping the proxy while it
// serves real metastores, /readyz against a metastore that stops and
// restarts and against one that never answers, the audit record of a hostile
// client, and debug tracing in the real binary's log.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/monitoring/promtest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

const obsDashboard = "../../monitoring/grafana/hms-proxy-dashboard.json"

// ---- test doubles in front of real metastores ----

// obsForwarder relays TCP to a real metastore. It can hold every client
// chunk back by a delay (a slow metastore) and can cut: drop every relayed
// connection and refuse new ones (a metastore that went away) until Restore.
type obsForwarder struct {
	ln     net.Listener
	target string
	delay  atomic.Int64 // ns
	cut    atomic.Bool

	mu    sync.Mutex
	conns map[net.Conn]bool
}

func obsForward(t *testing.T, targetURI string) *obsForwarder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &obsForwarder{ln: ln, target: strings.TrimPrefix(targetURI, "thrift://"), conns: map[net.Conn]bool{}}
	go f.serve()
	t.Cleanup(func() { ln.Close(); f.dropAll() })
	return f
}

func (f *obsForwarder) URI() string { return "thrift://" + f.ln.Addr().String() }

func (f *obsForwarder) track(c net.Conn, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if on {
		f.conns[c] = true
	} else {
		delete(f.conns, c)
	}
}

func (f *obsForwarder) dropAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		c.Close()
	}
}

// Cut drops every relayed connection and refuses new ones.
func (f *obsForwarder) Cut() { f.cut.Store(true); f.dropAll() }

// Restore relays again.
func (f *obsForwarder) Restore() { f.cut.Store(false) }

func (f *obsForwarder) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		if f.cut.Load() {
			c.Close()
			continue
		}
		b, err := net.DialTimeout("tcp", f.target, 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		f.track(c, true)
		f.track(b, true)
		go func() {
			defer func() { c.Close(); b.Close(); f.track(c, false); f.track(b, false) }()
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					time.Sleep(time.Duration(f.delay.Load()))
					if _, werr := b.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
		go func() { io.Copy(c, b); c.Close(); b.Close() }()
	}
}

// obsSilent accepts connections, reads and discards what it gets and never
// answers; it counts the connections it accepted.
type obsSilent struct {
	ln       net.Listener
	accepted atomic.Int64
	mu       sync.Mutex
	conns    []net.Conn
}

func obsSilentListener(t *testing.T) *obsSilent {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &obsSilent{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
	})
	return s
}

func (s *obsSilent) URI() string { return "thrift://" + s.ln.Addr().String() }

// ---- management HTTP ----

var obsHTTP = &http.Client{Timeout: 40 * time.Second}

type obsBackend struct {
	Connected              bool    `json:"connected"`
	Degraded               bool    `json:"degraded"`
	LastSuccessEpochSecond int64   `json:"lastSuccessEpochSecond"`
	LastFailureEpochSecond int64   `json:"lastFailureEpochSecond"`
	LastProbeEpochSecond   int64   `json:"lastProbeEpochSecond"`
	LastLatencyMs          int64   `json:"lastLatencyMs"`
	LatencyEwmaMs          float64 `json:"latencyEwmaMs"`
	LatencyBudgetMs        int64   `json:"latencyBudgetMs"`
	CircuitState           string  `json:"circuitState"`
	ConsecutiveFailures    int     `json:"consecutiveFailures"`
	LastError              *string `json:"lastError"`
}

type obsReadyz struct {
	code       int
	took       time.Duration
	raw        string
	Status     string `json:"status"`
	Ready      bool   `json:"ready"`
	Reason     string `json:"reason"`
	ProbeAgeMs *int64 `json:"probeAgeMs"`
	Summary    struct {
		Backends     int      `json:"backends"`
		Connected    int      `json:"connected"`
		Disconnected []string `json:"disconnected"`
	} `json:"summary"`
	Backends map[string]obsBackend `json:"backends"`
	Kerberos map[string]struct {
		State string `json:"state"`
	} `json:"kerberos"`
}

func obsGet(t *testing.T, url string) (int, []byte, time.Duration) {
	t.Helper()
	start := time.Now()
	resp, err := obsHTTP.Get(url)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return 0, nil, time.Since(start)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("GET %s: read: %v", url, err)
	}
	return resp.StatusCode, body, time.Since(start)
}

func obsReady(t *testing.T, p *proxytest.Proxy) obsReadyz {
	t.Helper()
	code, body, took := obsGet(t, p.ManagementURL()+"/readyz")
	r := obsReadyz{code: code, took: took, raw: string(body)}
	if code != 0 {
		if err := json.Unmarshal(body, &r); err != nil {
			t.Errorf("/readyz answered %d with non-JSON %q: %v", code, body, err)
		}
	}
	return r
}

// ---- a. real Prometheus, real traffic, every dashboard expression ----

// Metrics of the dashboard that real traffic cannot produce in this build.
// Each entry must still return NO data (so the list shrinks as the features
// land: a metric that starts to have samples fails the test until its entry
// is removed).
var obsNoProducer = map[string]string{
	// One in-memory proxy instance here; TestSyntheticLockLifecycleThroughTwoReplicas
	// and TestLockStoreOutage produce them (two replicas on ZooKeeper, ZooKeeper stopped).
	"hms_proxy_synthetic_read_lock_handoffs_total":       "needs a second proxy instance on a shared ZooKeeper store",
	"hms_proxy_synthetic_read_lock_store_failures_total": "needs a failing lock store",
	"hms_proxy_rate_limit_overflow_total":                "needs more clients limited at once than rate-limit.max-tracked-keys (50,000) holds",
	// Background refresh would reload slowcat's list through its one session
	// while the budget test below needs it (the resilience e2e tests refresh).
	"hms_proxy_cache_refreshes_total": "background refresh is off in this proxy",
	// security/ranger defines them (security/ranger tests drive them); the
	// proxy here guards no catalog with Ranger (e2e/ranger runs one).
	"hms_proxy_ranger_evaluations_total":                              "this proxy guards no catalog with Ranger (e2e/ranger exports them)",
	"hms_proxy_ranger_evaluation_duration_seconds_bucket":             "this proxy guards no catalog with Ranger (e2e/ranger exports them)",
	"hms_proxy_ranger_filtered_objects_total":                         "this proxy guards no catalog with Ranger (e2e/ranger exports them)",
	"hms_proxy_ranger_plugin_info":                                    "this proxy guards no catalog with Ranger (e2e/ranger exports them)",
	"hms_proxy_ranger_policy_downloads_total":                         "this proxy guards no catalog with Ranger (e2e/ranger exports them)",
	"hms_proxy_ranger_policy_version":                                 "this proxy guards no catalog with Ranger (e2e/ranger exports them)",
	"hms_proxy_ranger_policy_download_last_success_timestamp_seconds": "this proxy guards no catalog with Ranger (e2e/ranger exports them)",
	"hms_proxy_ranger_plugin_ready":                                   "this proxy guards no catalog with Ranger (e2e/ranger exports them)",
}

func TestObsDashboardAgainstRealPrometheusAndRealTraffic(t *testing.T) {
	e2eutil.NeedHive(t)
	direct2 := proxytest.Client(t, e2eutil.HMS2.URI)
	hidden := e2eutil.Uniq("obshid")
	e2eutil.MkDB(t, direct2, hidden)
	visible := e2eutil.Uniq("obsvis")
	e2eutil.MkDB(t, direct2, visible)
	e2eutil.MkTable(t, direct2, visible, "t1")

	purgeRoot := t.TempDir()
	def := obsForward(t, e2eutil.HMS1.URI) // catalog1, the default: can be cut
	slow := obsForward(t, e2eutil.HMS2.URI)
	slow.delay.Store(int64(700 * time.Millisecond))
	p := proxytest.Start(t, map[string]string{
		"catalogs":                "catalog1,catalog2,slowcat",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": def.URI(),
		"catalog.catalog2.conf.hive.metastore.uris": e2eutil.HMS2.URI,
		"catalog.catalog2.expose-mode":              "DENY_BY_DEFAULT",
		"catalog.catalog2.expose-db-patterns":       "default|obs(vis|r)_.*",
		"catalog.slowcat.conf.hive.metastore.uris":  slow.URI(),
		"catalog.slowcat.shared-session-pool-size":  "1",
		"catalog.slowcat.latency-budget-ms":         "1000",
		"federation.external-table-drop-purge.mode": "BEST_EFFORT",
		// Latency-aware routing and overload protection, so that their
		// panels have series: the breaker never opens here (threshold), the
		// adaptive timeout stays far above any call (bounds), polling runs
		// its first round at start only (interval) so it never holds
		// slowcat's one session during the test; only the list cache, without
		// background refresh (the metadata cache would answer the slow
		// get_database below, refreshes would hold slowcat's session).
		"routing.circuit-breaker.enabled":                                            "true",
		"routing.circuit-breaker.failure-threshold":                                  "1000",
		"routing.adaptive-timeout.enabled":                                           "true",
		"routing.adaptive-timeout.initial-ms":                                        "60000",
		"routing.adaptive-timeout.min-ms":                                            "30000",
		"routing.adaptive-timeout.max-ms":                                            "60000",
		"routing.backend-state-polling.enabled":                                      "true",
		"routing.backend-state-polling.interval-ms":                                  "600000",
		"routing.degraded-routing-policy":                                            "SAFE_FANOUT_READS",
		"routing.database-list-cache.ttl-ms":                                         "60000",
		"rate-limit.source.requests-per-second":                                      "100000",
		"rate-limit.method-family.admin_introspection.requests-per-second":           "1",
		"catalog.catalog2.conf.hms.proxy.external-table-drop-purge.allowed-prefixes": "file://" + purgeRoot,
	})
	prom := promtest.StartT(t, p.Mgmt.Addr().String(), promtest.Options{ScrapeInterval: time.Second})
	c := proxytest.Client(t, p.URI("primary"))
	cx := e2eutil.Ctx(t)

	// The real Hive 3.1.3 client's DDL scenario in the default catalog and
	// in catalog2.
	testbed.RunScenarioT(t, testbed.Hive313, p.URI("primary"), "ddl",
		"--db", e2eutil.Uniq("obsl"), "--db", "catalog2__"+e2eutil.Uniq("obsr"))
	obsTablePolicies(t, c, "catalog2__"+visible, purgeRoot)

	// Fan-out, filtered, default-catalog routed, refused, ambiguous, errors.
	dbs, err := c.GetAllDatabases(cx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(dbs, ","), "catalog2__"+hidden) {
		t.Fatalf("catalog2 exposes %s against its rules: %v", hidden, dbs)
	}
	if _, err := c.GetDatabase(cx, "catalog2__"+hidden); !e2eutil.IsNotFound(err) {
		t.Fatalf("hidden database: want not found, got %v", err)
	}
	if _, err := c.GetAllFunctions(cx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetTable(cx, "catalog2__"+visible, "no_such_table"); !e2eutil.IsNotFound(err) {
		t.Fatalf("missing table: want not found, got %v", err)
	}

	// The rare events, provoked in two rounds with Prometheus scrapes in
	// between: a counter born at 1 has no rate until it grows again.
	provoke := func() {
		// A compatibility fallback: the default catalog's metastore goes
		// away and get_runtime_stats (optional diagnostics) answers empty.
		def.Cut()
		if stats, err := c.GetRuntimeStats(cx, &thriftgen.GetRuntimeStatsRequest{MaxWeight: 10, MaxCreateTime: 0}); err != nil || len(stats) != 0 {
			t.Errorf("get_runtime_stats with the metastore gone: want the empty fallback, got %v, %v", stats, err)
		}
		// A safe fan-out read leaves the unreachable default catalog out.
		if metas, err := c.GetTableMeta(cx, "*", "*", nil); err != nil {
			t.Errorf("get_table_meta with catalog1 gone under SAFE_FANOUT_READS: %v %v", metas, err)
		}
		def.Restore()
		// fb303 getStatus beyond its family's limit (1/s) is throttled.
		for range 5 {
			_, _ = c.GetStatus(cx)
		}

		// Latency budget: slowcat has one pooled session and a 1 s budget;
		// of three concurrent calls, each held 700 ms by the metastore, one
		// session serves them one after the other: at least one is answered
		// and at least one runs out of budget (in its round trip, or still
		// waiting for the session); none waits past the budget.
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range errs {
			cl := proxytest.Client(t, p.URI("primary"))
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = cl.GetDatabase(cx, "slowcat__"+visible)
			}()
		}
		wg.Wait()
		answered := 0
		for _, err := range errs {
			var me *thriftgen.MetaException
			switch {
			case err == nil:
				answered++
			case errors.As(err, &me) && strings.Contains(me.Message, "pool exhausted"):
			default:
				e2eutil.MetaErr(t, err, "slowcat", "latency budget exceeded")
			}
		}
		if answered < 1 || answered > 2 {
			t.Errorf("three concurrent calls on a one-session pool with a 1 s budget and 700 ms calls: want 1 or 2 answered, got %v", errs)
		}

		// A client frame the proxy cannot read, a method it does not know,
		// an ambiguous and a refused call.
		obsRawCall(t, p.URI("primary"), []byte{0x80, 0x02, 0x00, 0x01, 0, 0, 0, 0})
		body := wire.Struct()
		obsRawCall(t, p.URI("primary"), wire.AppendMessage(nil, wire.Header{Name: "no_such_rpc", Type: wire.Call, SeqID: 1}, &body))
		_, err = c.GetValidWriteIds(cx, &thriftgen.GetValidWriteIdsRequest{
			FullTableNames: []string{"catalog1__a.t", "catalog2__b.t"}, ValidTxnList: e2eutil.Strp("1:1::")})
		e2eutil.MetaErr(t, err, "ambiguous")
		e2eutil.MetaErr(t, c.SetMetaConf(cx, "metastore.try.direct.sql", "false"), "namespace-less")
	}
	provoke()
	obsWaitMoreScrapes(t, prom, 2)
	provoke()

	// Steady traffic while Prometheus collects, so rates are not zero.
	stop := make(chan struct{})
	done := make(chan struct{})
	loop := proxytest.Client(t, p.URI("primary"))
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(150 * time.Millisecond):
			}
			_, _ = loop.GetDatabase(cx, "catalog2__"+visible)
			_, _ = loop.GetDatabase(cx, "catalog2__"+hidden)
			_, _ = loop.GetAllFunctions(cx)
			_, _ = loop.GetTable(cx, "catalog2__"+visible, "no_such_table")
			_, _ = loop.GetAllDatabases(cx)
			// A SELECT's lock on catalog2 (the synthetic lock shim's) and
			// a lock over both catalogs (split).
			read := thriftgen.DataOperationType_SELECT
			for _, comps := range [][]*thriftgen.LockComponent{
				{{Type: thriftgen.LockType_SHARED_READ, Level: thriftgen.LockLevel_TABLE, Dbname: "catalog2__" + visible, Tablename: e2eutil.Strp("t1"), OperationType: &read}},
				{{Type: thriftgen.LockType_SHARED_READ, Level: thriftgen.LockLevel_DB, Dbname: "default", OperationType: &read},
					{Type: thriftgen.LockType_SHARED_READ, Level: thriftgen.LockLevel_DB, Dbname: "catalog2__" + visible, OperationType: &read}},
			} {
				if l, err := loop.Lock(cx, &thriftgen.LockRequest{User: "obs", Hostname: "localhost", Component: comps}); err == nil {
					_ = loop.Unlock(cx, &thriftgen.UnlockRequest{Lockid: l.Lockid})
				}
			}
		}
	}()
	defer func() { close(stop); <-done }()

	obsWaitMoreScrapes(t, prom, 2)

	// What this traffic must have produced, as Prometheus sees it.
	for _, q := range []string{
		`hms_proxy_requests_total{catalog="all",backend="fanout",method="get_all_databases",status="ok"}`,
		`hms_proxy_requests_total{catalog="catalog1",status="fallback",method="get_runtime_stats"}`,
		`hms_proxy_requests_total{method="other",status="error"}`,
		`hms_proxy_requests_total{catalog="catalog2",method="get_table",status="error"}`,
		`hms_proxy_request_duration_seconds_bucket{catalog="slowcat",le="0.5"}`,
		`hms_proxy_backend_fallback_total{method="get_runtime_stats"}`,
		`hms_proxy_backend_failures_total{backend="slowcat",exception="BudgetExceeded"}`,
		`hms_proxy_routing_ambiguous_total >= 1`,
		`hms_proxy_default_catalog_routed_total{method="get_all_functions"} >= 1`,
		`hms_proxy_filtered_objects_total{catalog="catalog2",object_type="database",method="get_all_databases"} >= 1`,
		`hms_proxy_filtered_objects_total{catalog="catalog2",method="get_database"} >= 1`,
		`hms_proxy_bad_frames_total{frontend="primary",reason="malformed"} >= 1`,
		`hms_proxy_frontend_connections{frontend="primary"} >= 1`,
		`hms_proxy_view_text_rewrites_total{catalog="catalog2",direction="inward",result="rewritten"} >= 1`,
		`hms_proxy_view_text_rewrites_total{catalog="catalog2",direction="outward",result="rewritten"} >= 1`,
		`hms_proxy_view_text_unresolved_references_total{catalog="catalog2",direction="inward",reason="cross_catalog"} >= 1`,
		`hms_proxy_iceberg_pointer_guard_events_total{catalog="catalog2",outcome="not_iceberg"} >= 1`,
		`hms_proxy_external_table_purge_total{catalog="catalog2",result="deleted"} >= 1`,
	} {
		if err := prom.WaitForData(q, 30*time.Second); err != nil {
			t.Errorf("real traffic left no trace in Prometheus: %v", err)
		}
	}

	// Every metric name Prometheus scraped from the proxy.
	scraped := map[string]bool{}
	samples, err := prom.QuerySamples(fmt.Sprintf(`count by (__name__) ({job=%q})`, prom.Job()))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		scraped[s.Metric["__name__"]] = true
	}

	exprs, err := promtest.DashboardExprs(obsDashboard)
	if err != nil {
		t.Fatal(err)
	}
	if len(exprs) < 20 {
		t.Fatalf("only %d expressions in the dashboard", len(exprs))
	}
	deadline := time.Now().Add(90 * time.Second)
	gapSeen := map[string]bool{}
	for _, e := range exprs {
		names, err := promtest.MetricNames(e.Query)
		if err != nil {
			t.Errorf("%s: %v", e.Source, err)
			continue
		}
		var gap []string
		for _, n := range names {
			if why, ok := obsNoProducer[n]; ok {
				gap = append(gap, n+" ("+why+")")
				gapSeen[n] = true
				continue
			}
			if !scraped[n] {
				t.Errorf("%s uses %s, which the running proxy does not export (query %s)", e.Source, n, e.Query)
			}
		}
		if len(gap) > 0 {
			if n, err := prom.Query(e.Query); err != nil || n != 0 {
				t.Errorf("%s now returns %d series (err %v): remove %s from obsNoProducer", e.Source, n, err, strings.Join(gap, ", "))
			} else {
				t.Logf("NO DATA (known): %s — %s", e.Source, strings.Join(gap, "; "))
			}
			continue
		}
		left := max(time.Until(deadline), time.Second)
		if err := prom.WaitForData(e.Query, left); err != nil {
			t.Errorf("%s returns no data: %v\n  query: %s", e.Source, err, e.Query)
			continue
		}
		s, err := prom.QuerySamples(e.Query)
		if err == nil && len(s) > 0 {
			t.Logf("%-70s %2d series, first=%s", e.Source, len(s), s[0].Value)
		}
	}
	// The panels of the events provoked above show them (a non-zero value
	// within the dashboard's 1m rate window), not just an empty zero.
	for _, panel := range []string{"Session acquire timeouts", "Sessions retired", "Compatibility fallbacks", "Fallbacks and throttling by method",
		"Rate-limited requests", "Fan-out omissions", "Metadata cache hit ratio",
		"Rejected frames", "Ambiguous routing refusals", "Filtered objects", "Default-catalog routing",
		"Fan-out requests", "Backend failures", "Errors by method", "Fallback ratio"} {
		found := false
		for _, e := range exprs {
			if !strings.Contains(e.Source, fmt.Sprintf("panel %q", panel)) {
				continue
			}
			found = true
			if err := obsWaitNonZero(prom, e.Query, 30*time.Second); err != nil {
				t.Errorf("%s: %v", e.Source, err)
			}
		}
		if !found {
			t.Errorf("the dashboard has no panel %q", panel)
		}
	}
	for n := range obsNoProducer {
		if !gapSeen[n] {
			t.Errorf("obsNoProducer lists %s, which no dashboard expression uses any more", n)
		}
		if scraped[n] {
			t.Errorf("%s is scraped now: remove it from obsNoProducer", n)
		}
	}
}

// obsTablePolicies makes traffic for the table policies' metrics in
// database ext of catalog2: a view created and read (both rewrites), a view
// of another catalog's table (refused), an alter (the pointer guard's
// read), an external purge table dropped (its data purged under root).
func obsTablePolicies(t *testing.T, c *thriftgen.Client, ext, root string) {
	t.Helper()
	v := e2eutil.HiveView(ext, "obs_v", "select id from "+ext+".t1", "select `t1`.`id` from `"+ext+"`.`t1`", "id bigint")
	if err := c.CreateTable(e2eutil.Ctx(t), v); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetTable(e2eutil.Ctx(t), ext, "obs_v"); err != nil {
		t.Fatal(err)
	}
	bad := e2eutil.HiveView(ext, "obs_bad", "select id from other.t1", "select `t1`.`id` from `other`.`t1`", "id bigint")
	e2eutil.MetaErr(t, c.CreateTable(e2eutil.Ctx(t), bad), "names tables of another catalog")
	tb, err := c.GetTable(e2eutil.Ctx(t), ext, "t1")
	if err != nil {
		t.Fatal(err)
	}
	tb.Parameters["obs"] = "1"
	if err := c.AlterTable(e2eutil.Ctx(t), ext, "t1", tb); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "obs_p")
	dataDir(t, dir)
	if err := c.CreateTable(e2eutil.Ctx(t), extTable(ext, "obs_p", dir, true)); err != nil {
		t.Fatal(err)
	}
	if err := c.DropTable(e2eutil.Ctx(t), ext, "obs_p", true); err != nil {
		t.Fatal(err)
	}
	waitGone(t, dir)
}

// obsWaitMoreScrapes waits until Prometheus has scraped the proxy n more
// times than it had when called.
func obsWaitMoreScrapes(t *testing.T, prom *promtest.Server, n int) {
	t.Helper()
	have := 0
	if s, err := prom.QuerySamples(fmt.Sprintf(`sum_over_time(up{job=%q}[1h])`, prom.Job())); err == nil && len(s) == 1 {
		f, _ := strconv.ParseFloat(s[0].Value, 64)
		have = int(f)
	}
	if err := prom.WaitForScrapes(have+n, 90*time.Second); err != nil {
		t.Fatal(err)
	}
}

// obsWaitNonZero polls expr until one of its series has a non-zero value.
func obsWaitNonZero(prom *promtest.Server, expr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last []promtest.Sample
	for {
		s, err := prom.QuerySamples(expr)
		if err == nil {
			last = s
			for _, x := range s {
				if f, err := strconv.ParseFloat(x.Value, 64); err == nil && f != 0 {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no non-zero value within %s (last answer %v, err %v)", timeout, last, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// obsRawCall writes one raw message on a fresh client connection and reads
// whatever comes back until the proxy answers or closes.
func obsRawCall(t *testing.T, uri string, msg []byte) []byte {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(uri, "thrift://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	m, err := wire.ReadMessage(bufio.NewReader(c), wire.Limits{MaxMessage: 1 << 20}, nil)
	if err != nil {
		return nil // closed by the proxy (bad frame)
	}
	return m.Raw
}

// ---- b. /readyz follows a real metastore that stops and comes back ----

// ---- c. concurrent /readyz share one slow probe ----

// ---- d. audit record of a hostile client ----

// ---- e. debug tracing in the real binary ----
