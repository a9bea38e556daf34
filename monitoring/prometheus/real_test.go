package alerts

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/locks"
	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/hms-proxy/hms-proxy/monitoring/promtest"
	"github.com/hms-proxy/hms-proxy/router/breaker"
	"github.com/hms-proxy/hms-proxy/security/ranger"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// notExportedYet lists the metrics rules use that the proxy of this test
// does not put in /metrics, with the reason. Each entry must stay absent
// from the scrape (a metric that appears fails the test until its entry is
// removed), and each names where the metric is defined, so the name is not
// a typo of the rule.
var notExportedYet = map[string]string{
	ranger.MetricPolicyLastSuccess: "defined by security/ranger's NewMetrics (its plugin tests drive it); the router does not run a Ranger plugin until issue 23's second phase",
	ranger.MetricPluginReady:       "defined by security/ranger's NewMetrics (its plugin tests drive it); the router does not run a Ranger plugin until issue 23's second phase",
	locks.MetricStoreFailures: "defined by locks.NewMetrics, a counter with series per failure: this proxy's IN_MEMORY lock store cannot fail " +
		"(e2e TestLockStoreOutage makes a ZooKeeper store fail; alerts_test.yml tests the rule)",
}

// backendMode is how a switchable backend address behaves.
type backendMode int32

const (
	forward backendMode = iota // pass bytes to the real metastore
	refuse                     // accept and close at once (a metastore that is gone)
	silent                     // accept, read, never answer (a hung metastore)
)

// switchable is a TCP address in front of a real metastore whose behaviour
// the test changes: this is how catalogs go down, hang and recover.
type switchable struct {
	t      *testing.T
	ln     net.Listener
	target string
	mu     sync.Mutex
	mode   backendMode
	conns  map[net.Conn]bool
}

func newSwitchable(t *testing.T, targetURI string, mode backendMode) *switchable {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &switchable{t: t, ln: ln, target: strings.TrimPrefix(targetURI, "thrift://"), mode: mode, conns: map[net.Conn]bool{}}
	go s.serve()
	t.Cleanup(func() { ln.Close(); s.set(refuse) })
	return s
}

func (s *switchable) URI() string { return "thrift://" + s.ln.Addr().String() }

// set changes the mode; connections of the previous mode are closed.
func (s *switchable) set(m backendMode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = m
	for c := range s.conns {
		c.Close()
	}
	clear(s.conns)
}

func (s *switchable) track(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns[c] = true
}

func (s *switchable) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		mode := s.mode
		s.mu.Unlock()
		switch mode {
		case refuse:
			c.Close()
		case silent:
			s.track(c)
			go io.Copy(io.Discard, c)
		case forward:
			up, err := net.DialTimeout("tcp", s.target, 5*time.Second)
			if err != nil {
				c.Close()
				continue
			}
			s.track(c)
			s.track(up)
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

func readyz(t *testing.T, p *proxytest.Proxy) int {
	t.Helper()
	code, _ := readyzBody(t, p)
	return code
}

func readyzBody(t *testing.T, p *proxytest.Proxy) (int, string) {
	t.Helper()
	resp, err := httpClient.Get(p.ManagementURL() + "/readyz")
	if err != nil {
		t.Fatalf("/readyz: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitScrapes waits until Prometheus has scraped the proxy n more times.
func waitScrapes(t *testing.T, prom *promtest.Server, n int) {
	t.Helper()
	samples, err := prom.QuerySamples(fmt.Sprintf(`count_over_time(up{job=%q}[1h])`, prom.Job()))
	if err != nil || len(samples) != 1 {
		t.Fatalf("scrape count: %v %v", samples, err)
	}
	have, _ := strconv.ParseFloat(samples[0].Value, 64)
	if err := prom.WaitForData(fmt.Sprintf(`count_over_time(up{job=%q}[1h]) >= %d`, prom.Job(), int(have)+n), 60*time.Second); err != nil {
		t.Fatal(err)
	}
}

// activeAlerts waits (bounded) until every wanted alert has an active
// (pending or firing) instance with the given labels, and returns what the
// rules report at that point.
func activeAlerts(t *testing.T, prom *promtest.Server, want map[string][]map[string]string, timeout time.Duration) map[string]promtest.Rule {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		rules, err := prom.Rules()
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]promtest.Rule{}
		for _, r := range rules {
			byName[r.Name] = r
		}
		var missing []string
		for name, sets := range want {
			for _, labels := range sets {
				if !hasAlert(byName[name], labels) {
					missing = append(missing, fmt.Sprintf("%s%v", name, labels))
				}
			}
		}
		if len(missing) == 0 {
			return byName
		}
		if time.Now().After(deadline) {
			for _, m := range missing {
				r := byName[strings.SplitN(m, "map[", 2)[0]]
				t.Errorf("no active alert %s within %s (rule state %q, health %q, alerts %v)", m, timeout, r.State, r.Health, r.Alerts)
			}
			return byName
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func hasAlert(r promtest.Rule, labels map[string]string) bool {
next:
	for _, a := range r.Alerts {
		for k, v := range labels {
			if a.Labels[k] != v {
				continue next
			}
		}
		return true
	}
	return false
}

// concurrent sends calls calls to slowcat over uri at once (each on its own
// connection, gap apart) until want of them failed with an error containing
// sign, in at most 10 rounds.
func concurrent(t *testing.T, want int, uri string, calls int, gap time.Duration, sign string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seen := 0
	for round := 0; round < 10 && seen < want; round++ {
		var wg sync.WaitGroup
		errs := make([]error, calls)
		for i := range calls {
			c := proxytest.Client(t, uri)
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = c.GetDatabase(ctx, "slowcat__default")
			}()
			if i < calls-1 {
				time.Sleep(gap)
			}
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil && strings.Contains(err.Error(), sign) {
				seen++
			}
		}
	}
	if seen < want {
		t.Fatalf("%d calls failed with %q over %s, want %d", seen, sign, uri, want)
	}
}

// TestAlertRulesAgainstRealPrometheusAndProxy loads alerts.yml into a real
// Prometheus that scrapes a real proxy in front of a real Hive metastore,
// breaks the backends the way production does (gone, hung, flapping),
// overloads a listener and sends it garbage, and checks that
//   - every metric a rule uses is in the proxy's /metrics (or listed in
//     notExportedYet with the reason),
//   - every rule evaluates in Prometheus without error,
//   - the rules whose conditions the test creates become active with the
//     labels naming the catalog or listener, and those it does not stay
//     inactive.
func TestAlertRulesAgainstRealPrometheusAndProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Hive metastore and a Prometheus server")
	}
	promtool(t) // the prometheus package brings both; same install rule
	hms := testbed.StartMetastoreT(t, testbed.Hive313)
	flap := newSwitchable(t, hms.URI, forward)
	dead := newSwitchable(t, hms.URI, refuse)
	slow := newSwitchable(t, hms.URI, silent)
	p := proxytest.Start(t, map[string]string{
		"catalogs":                "catalog1,flapcat,deadcat,slowcat",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris":                 hms.URI,
		"catalog.flapcat.conf.hive.metastore.uris":                  flap.URI(),
		"catalog.deadcat.conf.hive.metastore.uris":                  dead.URI(),
		"catalog.deadcat.conf.hive.metastore.connect.retries":       "0",
		"catalog.slowcat.conf.hive.metastore.uris":                  slow.URI(),
		"catalog.slowcat.shared-session-pool-size":                  "1",
		"catalog.slowcat.latency-budget-ms":                         "1000",
		"catalog.slowcat.conf.hive.metastore.client.socket.timeout": "30s",
		// deadcat's 160 failed calls open its circuit; slowcat's few budget
		// breaches stay below the threshold (its calls must keep reaching
		// the pool and the one-worker listener below).
		"routing.circuit-breaker.enabled":           "true",
		"routing.circuit-breaker.failure-threshold": "100",
		// getStatus calls beyond one a second are throttled.
		"rate-limit.method-family.admin_introspection.requests-per-second": "1",
		"additional-frontends":                          "small",
		"additional-frontends.small.port":               strconv.Itoa(proxytest.FreePort(t)),
		"additional-frontends.small.frontend-profile":   "APACHE_3_1_3",
		"additional-frontends.small.max-worker-threads": "1",
		"additional-frontends.small.min-worker-threads": "1",
		"management.readiness-cache-ms":                 "0",
	})
	rulesPath, err := filepath.Abs(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	prom := promtest.StartT(t, p.Mgmt.Addr().String(), promtest.Options{RuleFiles: []string{rulesPath}})
	instance := p.Mgmt.Addr().String()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	good := proxytest.Client(t, p.URI("primary"))

	// One round of what production does to the proxy; counters born in the
	// first round get their rate from the second.
	// A balancer's health check: deadcat and slowcat are broken, which
	// every replica would share, so this replica stays READY (issue 20).
	ready := func(when string) {
		t.Helper()
		if code := readyz(t, p); code != http.StatusOK {
			t.Errorf("/readyz %s: %d, want 200 (backends never make a replica unready)", when, code)
		}
	}
	round := func(scale int) {
		t.Helper()
		ready("with deadcat and slowcat broken")
		for range 20 * scale {
			if _, err := good.GetDatabase(ctx, "default"); err != nil {
				t.Errorf("catalog1 get_database: %v", err)
			}
		}
		// Overload protection: fb303 getStatus bursts beyond its family's limit.
		for range 5 * scale {
			_, _ = good.GetStatus(ctx)
		}
		// deadcat: every call fails with a transport error.
		for range 40 * scale {
			if _, err := good.GetDatabase(ctx, "deadcat__default"); err == nil {
				t.Error("deadcat answered")
			}
		}
		// slowcat and the one-worker listener: one call holds the worker
		// and slowcat's one session; the second waits for the worker, the
		// third finds the queue full and is refused (busy). Repeated until
		// the refusals happened, however the machine schedules the calls.
		concurrent(t, scale, p.URI("small"), 3, 300*time.Millisecond, "is busy")
		// Three concurrent calls on slowcat's one session: those left
		// waiting find no session within the 1 s budget.
		concurrent(t, scale, p.URI("primary"), 3, 0, "pool exhausted")
		// HTTP health checks pointed at the Thrift port.
		for range 160 * scale {
			c, err := net.DialTimeout("tcp", p.Listener("primary").Addr().String(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			io.Copy(io.Discard, c)
			c.Close()
		}
		ready("after a round")
	}
	if err := prom.WaitForScrapes(2, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	round(1)
	waitScrapes(t, prom, 3)
	round(3)
	waitScrapes(t, prom, 3)

	// A catalog that goes away and comes back a few times while a balancer
	// keeps asking /readyz: readiness does not follow it (no connection is
	// moved), so HmsProxyReadinessFlapping stays quiet; its firing case is
	// in alerts_test.yml.
	for range 3 {
		flap.set(refuse)
		if _, err := good.GetDatabase(ctx, "flapcat__default"); err == nil {
			t.Error("flapcat answered while refusing")
		}
		ready("with flapcat gone")
		waitScrapes(t, prom, 1)
		flap.set(forward)
		ready("with flapcat back")
		waitScrapes(t, prom, 1)
	}

	// This replica's own fault: a listener that no longer accepts
	// connections makes it NOT_READY, naming the listener.
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	if err := p.Listener("small").Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	scancel()
	if code, body := readyzBody(t, p); code != http.StatusServiceUnavailable || !strings.Contains(body, `listener \"small\" is not accepting connections`) {
		t.Fatalf("/readyz with listener small closed: %d %s", code, body)
	}
	waitScrapes(t, prom, 2)
	readyz(t, p)

	// Every metric a rule uses is exported (or known not to be yet).
	scraped := map[string]bool{"up": true} // Prometheus' own, per target
	samples, err := prom.QuerySamples(fmt.Sprintf(`count by (__name__) ({job=%q})`, prom.Job()))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		scraped[s.Metric["__name__"]] = true
	}
	rules := alertRules(t)
	used := map[string]bool{}
	for _, r := range rules {
		names, err := promtest.MetricNames(r.Expr)
		if err != nil || len(names) == 0 {
			t.Errorf("%s: metric names of %q: %v %v", r.Alert, r.Expr, names, err)
		}
		for _, n := range names {
			used[n] = true
			if why, ok := notExportedYet[n]; ok {
				t.Logf("%s uses %s, not exported yet: %s", r.Alert, n, why)
				continue
			}
			if !scraped[n] {
				t.Errorf("%s uses %s, which the running proxy does not export", r.Alert, n)
			}
		}
		// The expression as written evaluates without error.
		if _, err := prom.QuerySamples(r.Expr); err != nil {
			t.Errorf("%s: %v", r.Alert, err)
		}
	}
	// The rules name the metrics as their producers define them.
	for _, n := range []string{breaker.MetricCircuitState, monitoring.MetricRateLimitedTotal} {
		if !used[n] {
			t.Errorf("no rule uses %s", n)
		}
	}
	for n := range notExportedYet {
		if scraped[n] {
			t.Errorf("%s is exported now: remove it from notExportedYet", n)
		}
		if !used[n] {
			t.Errorf("notExportedYet lists %s, which no rule uses", n)
		}
	}

	// What the test did must show as active alerts, named precisely.
	job := prom.Job()
	inst := map[string]string{"job": job, "instance": instance}
	with := func(kv ...string) map[string]string {
		m := map[string]string{"job": job}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	byName := activeAlerts(t, prom, map[string][]map[string]string{
		"HmsProxyNotReady":               {inst},
		"HmsProxyNoReadyInstance":        {{"job": job}},
		"HmsProxyBackendDown":            {with("instance", instance, "catalog", "deadcat"), with("instance", instance, "catalog", "slowcat")},
		"HmsProxyBackendUnavailable":     {with("instance", instance, "backend", "deadcat")},
		"HmsProxySessionAcquireTimeouts": {with("instance", instance, "catalog", "slowcat", "operation", "borrow")},
		"HmsProxyHighErrorRatio":         {with("catalog", "deadcat")},
		"HmsProxyVeryHighErrorRatio":     {with("catalog", "deadcat")},
		"HmsProxyFrontendBusy":           {with("instance", instance, "frontend", "small", "reason", "busy")},
		"HmsProxyBadFrameStorm":          {with("instance", instance, "frontend", "primary", "reason", "http")},
		"HmsProxyCircuitBreakerOpen":     {with("instance", instance, "catalog", "deadcat")},
	}, 60*time.Second)
	for _, r := range rules {
		got, ok := byName[r.Alert]
		switch {
		case !ok:
			t.Errorf("Prometheus did not load rule %s", r.Alert)
		case got.Health != "ok" || got.LastError != "":
			t.Errorf("%s: health %q, error %q", r.Alert, got.Health, got.LastError)
		}
		for _, a := range got.Alerts {
			for _, key := range []string{"catalog", "backend", "frontend", "instance"} {
				if v, ok := a.Labels[key]; ok && v == "" {
					t.Errorf("%s: empty %s label", r.Alert, key)
				}
			}
			if strings.Contains(a.Annotations["description"], "<no value>") || strings.Contains(a.Annotations["summary"], "<no value>") {
				t.Errorf("%s: annotation refers to a label the series lacks: %v", r.Alert, a.Annotations)
			}
		}
	}
	// Healthy parts raise nothing.
	for name, unwanted := range map[string]map[string]string{
		"HmsProxyBackendDown":        {"catalog": "catalog1"},
		"HmsProxyBackendUnavailable": {"backend": "catalog1"},
		"HmsProxyHighErrorRatio":     {"catalog": "catalog1"},
		"HmsProxyTargetDown":         {},
		"HmsProxyNoInstanceUp":       {},
		"HmsProxyReadinessFlapping":  {},
		"HmsProxyHighLatencyP99":     {},
		"HmsProxyCircuitBreakerOpen": {"catalog": "slowcat"},
	} {
		if hasAlert(byName[name], unwanted) {
			t.Errorf("%s is active for %v: %v", name, unwanted, byName[name].Alerts)
		}
	}
	for _, r := range rules {
		if a := byName[r.Alert]; len(a.Alerts) > 0 {
			var sets []string
			for _, x := range a.Alerts {
				sets = append(sets, fmt.Sprint(x.Labels))
			}
			sort.Strings(sets)
			t.Logf("%-32s %-8s %s", r.Alert, a.State, strings.Join(sets, " "))
		}
	}
}
