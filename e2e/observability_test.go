package e2e

// Observability end to end: a real Prometheus scraping the proxy while it
// serves real metastores, /readyz against a metastore that stops and
// restarts and against one that never answers, the audit record of a hostile
// client, and debug tracing in the real binary's log.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/monitoring/promtest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

const obsDashboard = "../monitoring/grafana/hms-proxy-dashboard.json"

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
	// router does not run a Ranger plugin until issue 23's second phase.
	"hms_proxy_ranger_evaluations_total":                              "Ranger is not wired into the router yet",
	"hms_proxy_ranger_evaluation_duration_seconds_bucket":             "Ranger is not wired into the router yet",
	"hms_proxy_ranger_filtered_objects_total":                         "Ranger is not wired into the router yet",
	"hms_proxy_ranger_plugin_info":                                    "Ranger is not wired into the router yet",
	"hms_proxy_ranger_policy_downloads_total":                         "Ranger is not wired into the router yet",
	"hms_proxy_ranger_policy_version":                                 "Ranger is not wired into the router yet",
	"hms_proxy_ranger_policy_download_last_success_timestamp_seconds": "Ranger is not wired into the router yet",
	"hms_proxy_ranger_plugin_ready":                                   "Ranger is not wired into the router yet",
}

func TestObsDashboardAgainstRealPrometheusAndRealTraffic(t *testing.T) {
	needHive(t)
	direct2 := proxytest.Client(t, hms2.URI)
	hidden := uniq("obshid")
	mkDB(t, direct2, hidden)
	visible := uniq("obsvis")
	mkDB(t, direct2, visible)
	mkTable(t, direct2, visible, "t1")

	purgeRoot := t.TempDir()
	def := obsForward(t, hms1.URI) // catalog1, the default: can be cut
	slow := obsForward(t, hms2.URI)
	slow.delay.Store(int64(700 * time.Millisecond))
	p := proxytest.Start(t, map[string]string{
		"catalogs":                "catalog1,catalog2,slowcat",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": def.URI(),
		"catalog.catalog2.conf.hive.metastore.uris": hms2.URI,
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
	cx := ctx(t)

	// The real Hive 3.1.3 client's DDL scenario in the default catalog and
	// in catalog2.
	testbed.RunScenarioT(t, testbed.Hive313, p.URI("primary"), "ddl",
		"--db", uniq("obsl"), "--db", "catalog2__"+uniq("obsr"))
	obsTablePolicies(t, c, "catalog2__"+visible, purgeRoot)

	// Fan-out, filtered, default-catalog routed, refused, ambiguous, errors.
	dbs, err := c.GetAllDatabases(cx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(dbs, ","), "catalog2__"+hidden) {
		t.Fatalf("catalog2 exposes %s against its rules: %v", hidden, dbs)
	}
	if _, err := c.GetDatabase(cx, "catalog2__"+hidden); !isNotFound(err) {
		t.Fatalf("hidden database: want not found, got %v", err)
	}
	if _, err := c.GetAllFunctions(cx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetTable(cx, "catalog2__"+visible, "no_such_table"); !isNotFound(err) {
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
				metaErr(t, err, "slowcat", "latency budget exceeded")
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
			FullTableNames: []string{"catalog1__a.t", "catalog2__b.t"}, ValidTxnList: strp("1:1::")})
		metaErr(t, err, "ambiguous")
		metaErr(t, c.SetMetaConf(cx, "metastore.try.direct.sql", "false"), "namespace-less")
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
				{{Type: thriftgen.LockType_SHARED_READ, Level: thriftgen.LockLevel_TABLE, Dbname: "catalog2__" + visible, Tablename: strp("t1"), OperationType: &read}},
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
	v := hiveView(ext, "obs_v", "select id from "+ext+".t1", "select `t1`.`id` from `"+ext+"`.`t1`", "id bigint")
	if err := c.CreateTable(ctx(t), v); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetTable(ctx(t), ext, "obs_v"); err != nil {
		t.Fatal(err)
	}
	bad := hiveView(ext, "obs_bad", "select id from other.t1", "select `t1`.`id` from `other`.`t1`", "id bigint")
	metaErr(t, c.CreateTable(ctx(t), bad), "names tables of another catalog")
	tb, err := c.GetTable(ctx(t), ext, "t1")
	if err != nil {
		t.Fatal(err)
	}
	tb.Parameters["obs"] = "1"
	if err := c.AlterTable(ctx(t), ext, "t1", tb); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "obs_p")
	dataDir(t, dir)
	if err := c.CreateTable(ctx(t), extTable(ext, "obs_p", dir, true)); err != nil {
		t.Fatal(err)
	}
	if err := c.DropTable(ctx(t), ext, "obs_p", true); err != nil {
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

func TestObsReadyzFollowsAStoppedAndRestartedMetastore(t *testing.T) {
	needHive(t)
	edge := testbed.StartMetastoreT(t, testbed.Hive313) // private: it is stopped below
	const cache = 200 * time.Millisecond
	p := proxytest.Start(t, map[string]string{
		"catalogs":                "catalog1,edge",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": hms1.URI,
		"catalog.edge.conf.hive.metastore.uris":     edge.URI,
		"management.readiness-cache-ms":             strconv.Itoa(int(cache / time.Millisecond)),
	})

	r := obsReady(t, p)
	if r.code != http.StatusOK || r.Status != "READY" || !r.Ready || r.Summary.Backends != 2 || r.Summary.Connected != 2 {
		t.Fatalf("both metastores up: want 200 READY with 2 connected, got %d %s", r.code, r.raw)
	}
	e := r.Backends["edge"]
	if !e.Connected || e.LastSuccessEpochSecond == 0 || e.LastProbeEpochSecond == 0 || e.LastError != nil || r.ProbeAgeMs == nil {
		t.Fatalf("edge backend state after a good probe: %s", r.raw)
	}
	if r.Kerberos["frontDoor"].State != "DISABLED" || r.Kerberos["backend"].State != "DISABLED" {
		t.Errorf("kerberos section: %s", r.raw)
	}

	if err := edge.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	// One probe interval later the very next /readyz probes afresh.
	time.Sleep(cache + 50*time.Millisecond)
	r = obsReady(t, p)
	// A metastore every replica shares is reported, never a reason to take
	// this replica out of the balancer (issue 20, item 6): catalog1's
	// clients keep being served.
	if r.code != http.StatusOK || r.Status != "READY" || !r.Ready || r.Reason != "" {
		t.Fatalf("%s after the edge metastore stopped (cache %s): want 200 READY, got %d %s",
			time.Since(stopped).Round(time.Millisecond), cache, r.code, r.raw)
	}
	e = r.Backends["edge"]
	if e.Connected || e.LastError == nil || *e.LastError == "" || e.LastFailureEpochSecond == 0 || e.ConsecutiveFailures == 0 {
		t.Errorf("edge must show connected=false with lastError: %s", r.raw)
	}
	if len(r.Summary.Disconnected) != 1 || r.Summary.Disconnected[0] != "edge" {
		t.Errorf("the summary must name catalog edge (and only it): %s", r.raw)
	}
	if !r.Backends["catalog1"].Connected {
		t.Errorf("catalog1 is still up: %s", r.raw)
	}
	// /healthz is about the process only.
	if code, body, _ := obsGet(t, p.ManagementURL()+"/healthz"); code != http.StatusOK || !strings.Contains(string(body), `"UP"`) {
		t.Errorf("/healthz while a backend is down: %d %s", code, body)
	}

	if err := edge.Restart(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(cache + 50*time.Millisecond)
	r = obsReady(t, p)
	if r.code != http.StatusOK || r.Status != "READY" || !r.Backends["edge"].Connected {
		t.Fatalf("one probe interval after the restart: want 200 READY with edge connected, got %d %s", r.code, r.raw)
	}
}

// ---- c. concurrent /readyz share one slow probe ----

func TestObsConcurrentReadyzShareOneSlowProbe(t *testing.T) {
	needHive(t)
	silent := obsSilentListener(t)
	const cache = 3 * time.Second
	p := proxytest.Start(t, map[string]string{
		"catalogs":                "catalog1,mute",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": hms1.URI,
		"catalog.mute.conf.hive.metastore.uris":     silent.URI(),
		// Longer than the router's 5 s probe deadline, so the probe ends at
		// that deadline (see the report about retries after a read timeout).
		"catalog.mute.conf.hive.metastore.client.socket.timeout": "60s",
		"management.readiness-cache-ms":                          strconv.Itoa(int(cache / time.Millisecond)),
		"management.threads":                                     "16",
	})

	burst := func() []obsReadyz {
		out := make([]obsReadyz, 10)
		var wg sync.WaitGroup
		for i := range out {
			wg.Add(1)
			go func() { defer wg.Done(); out[i] = obsReady(t, p) }()
		}
		wg.Wait()
		return out
	}
	checkAll := func(round string, rs []obsReadyz) {
		t.Helper()
		for _, r := range rs {
			if r.code != http.StatusOK || len(r.Summary.Disconnected) != 1 || r.Summary.Disconnected[0] != "mute" {
				t.Errorf("%s: want 200 with catalog mute disconnected, got %d %s", round, r.code, r.raw)
			}
		}
	}

	// Round 1: the first probe ever; all ten wait for that same probe.
	start := time.Now()
	rs := burst()
	checkAll("first burst", rs)
	if n := silent.accepted.Load(); n != 1 {
		t.Errorf("ten concurrent /readyz during the first probe opened %d probe connections to the silent metastore, want 1", n)
	}
	// At its 5 s deadline: not before, and well before the 60 s socket
	// timeout it would otherwise wait for (a bound a slow machine keeps).
	if took := time.Since(start); took < 4*time.Second || took > 45*time.Second {
		t.Errorf("first probe round took %s; the probe of a silent metastore should end at its 5 s deadline", took)
	}
	if p.Mgmt.ProbeCount() != 1 {
		t.Errorf("%d probes started, want 1", p.Mgmt.ProbeCount())
	}

	// Round 2, inside the cache period: answered from the cache, without a
	// probe (which takes its 5 s deadline against the silent metastore).
	rs = burst()
	checkAll("cached burst", rs)
	for _, r := range rs {
		if r.took > 4*time.Second || r.ProbeAgeMs == nil {
			t.Errorf("cached /readyz took %s (probeAgeMs %v)", r.took, r.ProbeAgeMs)
		}
	}
	if n := silent.accepted.Load(); n != 1 {
		t.Errorf("within the cache period: %d probe connections, want still 1", n)
	}

	// Round 3, cache expired: exactly one new probe; the other nine answer
	// from the previous result without waiting, and /healthz and /metrics
	// stay fast meanwhile.
	time.Sleep(cache + 100*time.Millisecond)
	var side sync.WaitGroup
	side.Add(1)
	go func() {
		defer side.Done()
		time.Sleep(time.Second) // the new probe is running now
		for _, path := range []string{"/healthz", "/metrics"} {
			if code, _, took := obsGet(t, p.ManagementURL()+path); code != http.StatusOK || took > 4*time.Second {
				t.Errorf("%s during a slow probe: %d after %s", path, code, took)
			}
		}
	}()
	rs = burst()
	side.Wait()
	checkAll("burst after expiry", rs)
	fast := 0
	for _, r := range rs {
		if r.took < 4*time.Second { // the probe they did not wait for takes 5 s
			fast++
		}
	}
	if fast < 9 {
		t.Errorf("only %d of 10 /readyz answered from the previous result while one probe ran", fast)
	}
	if n := silent.accepted.Load(); n != 2 {
		t.Errorf("two cache periods, two probes: %d probe connections to the silent metastore, want 2", n)
	}
	if p.Mgmt.ProbeCount() != 2 {
		t.Errorf("%d probes started, want 2", p.Mgmt.ProbeCount())
	}
}

// ---- d. audit record of a hostile client ----

func TestObsAuditRecordOfAHostileClient(t *testing.T) {
	needHive(t)
	p := proxytest.Start(t, twoCatalogs())
	hostileUser := "eve\"},\n{\"event\":\"forged\",\"x\":\"\r\t\x00\x01\x1b\x7f\\ ünïcødé 日本 \u2028 \xff"
	hostileMethod := "get_\"table\"\n{\"event\":\"forged\"}\x00\x07é"

	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(p.URI("primary"), "thrift://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	rd := bufio.NewReader(conn)
	call := func(name string, args wire.Value) *wire.Message {
		t.Helper()
		if _, err := conn.Write(wire.AppendMessage(nil, wire.Header{Name: name, Type: wire.Call, SeqID: 1}, &args)); err != nil {
			t.Fatal(err)
		}
		m, err := wire.ReadMessage(rd, wire.Limits{MaxMessage: 16 << 20}, nil)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		return m
	}
	call("set_ugi", wire.Struct(wire.Field{ID: 1, V: wire.Str(hostileUser)},
		wire.Field{ID: 2, V: wire.List(wire.TString, wire.Str("g\n1"))}))
	if m := call("get_database", wire.Struct(wire.Field{ID: 1, V: wire.Str("default")})); m.Type != wire.Reply {
		t.Fatalf("get_database: message type %d", m.Type)
	}
	if m := call(hostileMethod, wire.Struct()); m.Type != wire.Exception {
		t.Fatalf("unknown hostile method: message type %d", m.Type)
	}
	local := conn.LocalAddr().String()

	// The records are written before the replies leave the proxy.
	data, err := os.ReadFile(p.AuditFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("three requests, want three audit lines, got %d:\n%s", len(lines), data)
	}
	wantUser := strings.ToValidUTF8(hostileUser, "\uFFFD")
	type rec = map[string]any
	var recs []rec
	for i, line := range lines {
		for _, b := range []byte(line) {
			if b < 0x20 || b == 0x7f {
				t.Errorf("line %d holds raw control byte 0x%02x: %q", i, b, line)
			}
		}
		var r rec
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("audit line %d is not JSON: %v\n%q", i, err, line)
		}
		if dec.More() {
			t.Fatalf("audit line %d holds more than one JSON value: %q", i, line)
		}
		// Exactly the spec's fields, with their JSON types.
		want := map[string]string{"event": "string", "requestId": "number", "method": "string", "operationClass": "string",
			"catalog": "string", "backend": "string", "status": "string", "durationMs": "number",
			"remoteAddress": "string", "authenticatedUser": "string", "routed": "bool", "fanout": "bool",
			"fallback": "bool", "defaultCatalogRouted": "bool"}
		for k, typ := range want {
			v, ok := r[k]
			got := ""
			switch v.(type) {
			case string:
				got = "string"
			case json.Number:
				got = "number"
			case bool:
				got = "bool"
			}
			if !ok || got != typ {
				t.Errorf("line %d: field %s = %#v, want a %s", i, k, v, typ)
			}
		}
		if len(r) != len(want) {
			t.Errorf("line %d has %d fields, want %d: %s", i, len(r), len(want), line)
		}
		if r["event"] != "hms_proxy_audit" || r["remoteAddress"] != local {
			t.Errorf("line %d: event %v remoteAddress %v (client is %s)", i, r["event"], r["remoteAddress"], local)
		}
		recs = append(recs, r)
	}
	setUGI, getDB, unknown := recs[0], recs[1], recs[2]
	if setUGI["method"] != "set_ugi" || setUGI["authenticatedUser"] != wantUser {
		t.Errorf("set_ugi record: %v", setUGI)
	}
	for k, v := range map[string]any{"method": "get_database", "operationClass": "metadata_read", "catalog": "catalog1",
		"backend": "catalog1", "status": "ok", "authenticatedUser": wantUser, "routed": true, "fanout": false,
		"fallback": false, "defaultCatalogRouted": true} {
		if getDB[k] != v {
			t.Errorf("get_database record: %s = %#v, want %#v", k, getDB[k], v)
		}
	}
	if getDB["authenticatedUser"] != wantUser {
		t.Errorf("principal did not survive escaping:\n got %q\nwant %q", getDB["authenticatedUser"], wantUser)
	}
	if unknown["method"] != hostileMethod || unknown["status"] != "error" || unknown["authenticatedUser"] != wantUser {
		t.Errorf("hostile method record: %v", unknown)
	}
	ids := []string{string(setUGI["requestId"].(json.Number)), string(getDB["requestId"].(json.Number)), string(unknown["requestId"].(json.Number))}
	if !sort.SliceIsSorted(ids, func(i, j int) bool { a, _ := strconv.Atoi(ids[i]); b, _ := strconv.Atoi(ids[j]); return a < b }) || ids[0] == ids[1] {
		t.Errorf("request ids not increasing: %v", ids)
	}
}

// ---- e. debug tracing in the real binary ----

func TestObsDebugTracingInTheRealBinary(t *testing.T) {
	needHive(t)
	direct := proxytest.Client(t, hms2.URI)
	db := uniq("obstr")
	mkDB(t, direct, db)
	mkTable(t, direct, db, "orders")

	bin := filepath.Join(t.TempDir(), "hms-proxy")
	bctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	build := exec.CommandContext(bctx, "go", "build", "-o", bin, "github.com/hms-proxy/hms-proxy/cmd/hms-proxy")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/hms-proxy: %v\n%s", err, out)
	}

	run := func(tracing bool) string {
		dir := t.TempDir()
		port := proxytest.FreePort(t)
		logFile := filepath.Join(dir, "proxy.log")
		props := strings.Join([]string{
			"server.bind-host=127.0.0.1",
			"server.port=" + strconv.Itoa(port),
			"management.enabled=false",
			"catalogs=catalog1,catalog2",
			"routing.default-catalog=catalog1",
			"synthetic-read-lock.store.mode=IN_MEMORY",
			"catalog.catalog1.conf.hive.metastore.uris=" + hms1.URI,
			"catalog.catalog2.conf.hive.metastore.uris=" + hms2.URI,
			"audit.file=" + filepath.Join(dir, "audit.log"),
			"logging.level=DEBUG",
			"logging.file=" + logFile,
			"logging.debug-tracing=" + strconv.FormatBool(tracing),
		}, "\n") + "\n"
		propsFile := filepath.Join(dir, "hms-proxy.properties")
		if err := os.WriteFile(propsFile, []byte(props), 0o644); err != nil {
			t.Fatal(err)
		}
		stop := obsStartProcess(t, bin, propsFile, port)
		c := proxytest.Client(t, "thrift://127.0.0.1:"+strconv.Itoa(port))
		tb, err := c.GetTable(ctx(t), "catalog2__"+db, "orders")
		if err != nil {
			t.Fatalf("get_table through the binary: %v", err)
		}
		if tb.DbName != "catalog2__"+db {
			t.Fatalf("get_table answered dbName %q", tb.DbName)
		}
		stop()
		data, err := os.ReadFile(logFile)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}

	log := run(true)
	stageRE := regexp.MustCompile(`\bstage=(\S+)`)
	idRE := regexp.MustCompile(`\brequestId=(\d+)`)
	// The request id of the get_table call.
	var id string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "msg=trace") && strings.Contains(line, "stage=client-request") &&
			strings.Contains(line, "method=get_table") {
			if m := idRE.FindStringSubmatch(line); m != nil {
				id = m[1]
			}
		}
	}
	if id == "" {
		t.Fatalf("no client-request trace of get_table in the log:\n%s", obsTail(log, 30))
	}
	byStage := map[string]string{}
	var order []string
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "msg=trace") || !strings.Contains(line, " requestId="+id+" ") {
			continue
		}
		if !strings.Contains(line, "level=DEBUG") {
			t.Errorf("trace record not at DEBUG: %s", line)
		}
		if m := stageRE.FindStringSubmatch(line); m != nil {
			byStage[m[1]] = line
			order = append(order, m[1])
		}
	}
	wantOrder := []string{"client-request", "plan", "backend-selected", "backend-request", "backend-response", "client-response"}
	if strings.Join(order, ",") != strings.Join(wantOrder, ",") {
		t.Fatalf("trace stages of request %s: %v, want %v\n%s", id, order, wantOrder, obsTail(log, 30))
	}
	ext, internal := "catalog2__"+db, db
	checks := []struct{ stage, must, mustNot string }{
		{"client-request", "get_table(dbname='" + ext + "', tbl_name='orders')", ""},
		{"plan", "single catalog2 mode=native", "default catalog"},
		{"backend-selected", "catalog=catalog2", ""},
		{"backend-request", "get_table(dbname='" + internal + "', tbl_name='orders')", "catalog2__"},
		{"backend-response", "success=Table{tableName='orders', dbName='" + internal + "'", "catalog2__"},
		{"client-response", "success=Table{tableName='orders', dbName='" + ext + "'", ""},
	}
	for _, c := range checks {
		line := byStage[c.stage]
		t.Log(line)
		if !strings.Contains(line, c.must) || (c.mustNot != "" && strings.Contains(line, c.mustNot)) {
			t.Errorf("%s trace: want %q (and not %q) in\n%s", c.stage, c.must, c.mustNot, line)
		}
		if len(line) > 4500 {
			t.Errorf("%s trace record is %d characters long", c.stage, len(line))
		}
	}

	// Off by default: DEBUG logging alone writes no trace.
	if log := run(false); strings.Contains(log, "msg=trace") {
		t.Errorf("logging.debug-tracing=false still traced:\n%s", obsTail(log, 10))
	}
}

// obsStartProcess runs the proxy binary until the returned stop function (or
// the test's cleanup) sends SIGTERM; it waits until the port accepts.
func obsStartProcess(t *testing.T, bin, props string, port int) (stop func()) {
	t.Helper()
	var out bytes.Buffer
	var outMu sync.Mutex
	cmd := exec.Command(bin, props)
	w := obsLockedWriter{w: &out, mu: &outMu}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(15 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
				t.Errorf("hms-proxy did not stop within 15 s of SIGTERM")
			}
		})
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
			return stop
		}
		select {
		case <-exited:
			outMu.Lock()
			defer outMu.Unlock()
			t.Fatalf("hms-proxy exited at start-up: %s\n%s", cmd.ProcessState, out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("hms-proxy did not listen on %d within 30 s", port)
		}
	}
}

type obsLockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l obsLockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func obsTail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Issue 10 A9 on the real router: /readyz reports only what it computes
// (circuitState is the breaker's state, DISABLED without one, never a
// CLOSED nothing computes; runtimeProfile is the catalog's), and per-catalog failure and acquire
// timeout series are exported at zero before the first call, so alerts and
// dashboards see them from the start.
func TestReadyzAndZeroSeriesAreComputedNotHardCoded(t *testing.T) {
	needHive(t)
	for _, withBreaker := range []bool{false, true} {
		t.Run(fmt.Sprintf("breaker=%v", withBreaker), func(t *testing.T) {
			props := twoCatalogs("catalog.catalog2.runtime-profile=APACHE_3_1_3")
			if withBreaker {
				props["routing.circuit-breaker.enabled"] = "true"
			}
			p := proxytest.Start(t, props)
			for _, cat := range []string{"catalog1", "catalog2"} {
				for _, e := range []string{"TTransportException", "PoolExhausted", "BadReply", "BudgetExceeded"} {
					if !p.HasSeries(t, "hms_proxy_backend_failures_total", "backend", cat, "exception", e) {
						t.Errorf("no zero series hms_proxy_backend_failures_total{backend=%q,exception=%q} before the first call", cat, e)
					}
				}
				if !p.HasSeries(t, "hms_proxy_backend_session_acquire_timeouts_total", "catalog", cat) {
					t.Errorf("no zero series of session acquire timeouts for %s before the first call", cat)
				}
			}
			r := obsReady(t, p)
			var raw struct {
				Backends map[string]map[string]any `json:"backends"`
			}
			if err := json.Unmarshal([]byte(r.raw), &raw); err != nil {
				t.Fatal(err)
			}
			for _, cat := range []string{"catalog1", "catalog2"} {
				b := raw.Backends[cat]
				if b["runtimeProfile"] != "APACHE_3_1_3" {
					t.Errorf("%s: runtimeProfile %v", cat, b["runtimeProfile"])
				}
				_, hasDegraded := b["degraded"]
				if withBreaker && (b["circuitState"] != "CLOSED" || !hasDegraded) {
					t.Errorf("%s with a breaker: circuitState %v, degraded present %v; want CLOSED and present", cat, b["circuitState"], hasDegraded)
				}
				if !withBreaker && b["circuitState"] != "DISABLED" {
					t.Errorf("%s without a breaker reports circuitState %v, want DISABLED (no breaker computes CLOSED or OPEN)", cat, b["circuitState"])
				}
			}
		})
	}
}
