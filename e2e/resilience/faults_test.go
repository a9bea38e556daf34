package resilience

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Acceptance of issue 14: catalog2's metastore hangs (SIGSTOP) or dies
// (SIGKILL) under 8 connections of mixed load; catalog1 must not notice,
// catalog2's calls fail within their budget, fan-out reads answer without
// catalog2 (SAFE_FANOUT_READS, counted) or fail fast naming it (STRICT), and
// the catalog serves again within a polling interval of its return.
//
// Bounds: load runs ~2 s of warm-up, 5 s before, 8 s during the fault; every
// worker paces its calls (catalog1 ~100 calls/s per connection), so a test
// makes at most a few thousand calls.

const (
	budget       = 2 * time.Second
	pollInterval = time.Second
	probeTimeout = 700 * time.Millisecond
	// margin: what a call may take beyond its budget on this shared 2-core
	// machine (scheduling, the client's own read) before it counts as waiting
	// past the budget; generous enough for a machine ten times slower, and
	// still far below the socket timeout a call without the budget waits for.
	margin = 8 * time.Second
)

// faultProps: breakers, polling and the budget on both catalogs. The open
// window is long (60 s): a catalog that comes back within the test came back
// through a probe, not through the breaker's own half-open trial.
func faultProps(policy string) map[string]string {
	return props(
		"catalog.catalog1.latency-budget-ms="+fmt.Sprint(budget.Milliseconds()),
		"catalog.catalog2.latency-budget-ms="+fmt.Sprint(budget.Milliseconds()),
		"catalog.catalog1.shared-session-pool-size=8",
		"catalog.catalog2.shared-session-pool-size=8",
		"routing.circuit-breaker.enabled=true",
		"routing.circuit-breaker.failure-threshold=3",
		"routing.circuit-breaker.open-state-ms=60000",
		"routing.backend-state-polling.enabled=true",
		"routing.backend-state-polling.interval-ms="+fmt.Sprint(pollInterval.Milliseconds()),
		"routing.backend-state-polling.probe-timeout-ms="+fmt.Sprint(probeTimeout.Milliseconds()),
		"routing.degraded-routing-policy="+policy,
	)
}

// sample is one client call.
type sample struct {
	kind  string // c1, c2, fanout
	start time.Time
	d     time.Duration
	err   error
	dbs   []string // fan-out answer
}

// load is 8 client connections: 4 on catalog1 (get_database and
// get_all_tables of default), 2 on catalog2 (get_database), 2 fan-outs
// (get_all_databases), each pacing its calls.
type load struct {
	mu      sync.Mutex
	samples []sample
	stop    chan struct{}
	wg      sync.WaitGroup
}

func startLoad(t *testing.T, p *proxytest.Proxy) *load {
	l := &load{stop: make(chan struct{})}
	worker := func(kind string, pace time.Duration, call func(c *thriftgen.Client, i int) ([]string, error)) {
		c := proxytest.Client(t, p.URI("primary"))
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				start := time.Now()
				dbs, err := call(c, i)
				s := sample{kind: kind, start: start, d: time.Since(start), err: err, dbs: dbs}
				l.mu.Lock()
				l.samples = append(l.samples, s)
				l.mu.Unlock()
				time.Sleep(pace)
			}
		}()
	}
	bg := context.Background()
	for i := 0; i < 4; i++ {
		worker("c1", 10*time.Millisecond, func(c *thriftgen.Client, i int) ([]string, error) {
			if i%2 == 0 {
				_, err := c.GetDatabase(bg, "default")
				return nil, err
			}
			_, err := c.GetAllTables(bg, "default")
			return nil, err
		})
	}
	for i := 0; i < 2; i++ {
		worker("c2", 20*time.Millisecond, func(c *thriftgen.Client, _ int) ([]string, error) {
			_, err := c.GetDatabase(bg, "catalog2__default")
			return nil, err
		})
	}
	for i := 0; i < 2; i++ {
		worker("fanout", 50*time.Millisecond, func(c *thriftgen.Client, _ int) ([]string, error) {
			return c.GetAllDatabases(bg)
		})
	}
	t.Cleanup(l.halt)
	return l
}

func (l *load) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// window returns the samples of kind that started in [from, to).
func (l *load) window(kind string, from, to time.Time) []sample {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []sample
	for _, s := range l.samples {
		if s.kind == kind && !s.start.Before(from) && s.start.Before(to) {
			out = append(out, s)
		}
	}
	return out
}

func durations(ss []sample) []time.Duration {
	out := make([]time.Duration, len(ss))
	for i, s := range ss {
		out[i] = s.d
	}
	return out
}

// p99Limit is the acceptance bound on catalog1's p99 during the fault: 1.5×
// its p99 before, or that p99 + 500 ms, whichever is larger. The floor is
// there because catalog1's p99 before is a few milliseconds, and on this
// shared 2-core machine a scheduling hiccup of another engineer's build
// moves a p99 of a few ms by far more than 50 % with no fault anywhere (a
// loaded run saw hundreds of ms); 500 ms is still a quarter of what a proxy
// that waits on catalog2 would show (its budget, 2 s).
func p99Limit(before time.Duration) time.Duration {
	return max(before*3/2, before+500*time.Millisecond)
}

// waitSamples waits (bounded) until the load has n samples of kind since from.
func (l *load) waitSamples(t *testing.T, kind string, from time.Time, n int) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); len(l.window(kind, from, time.Now())) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d %s samples in 3 minutes, want %d", len(l.window(kind, from, time.Now())), kind, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fault is one fault scenario: how catalog2 goes away and comes back.
type fault struct {
	name    string
	inject  func() error
	recover func() error
}

func TestCatalog2HungBySIGSTOP(t *testing.T) {
	needHive(t)
	runFault(t, fault{name: "SIGSTOP", inject: hms2.Pause, recover: hms2.Resume})
}

func TestCatalog2Killed(t *testing.T) {
	needHive(t)
	runFault(t, fault{name: "SIGKILL", inject: hms2.Kill, recover: hms2.Restart})
}

func runFault(t *testing.T, f fault) {
	safe := proxytest.Start(t, faultProps("SAFE_FANOUT_READS"))
	strict := proxytest.Start(t, faultProps("STRICT"))
	strictClient := proxytest.Client(t, strict.URI("primary"))
	// Both catalogs answer, through both proxies.
	for _, p := range []*proxytest.Proxy{safe, strict} {
		c := proxytest.Client(t, p.URI("primary"))
		if _, err := c.GetDatabase(ctx(t), "catalog2__default"); err != nil {
			t.Fatalf("catalog2 before the fault: %v", err)
		}
	}

	l := startLoad(t, safe)
	time.Sleep(2 * time.Second) // warm-up: sessions open, JIT, EWMA
	beforeFrom := time.Now()
	time.Sleep(5 * time.Second)
	l.waitSamples(t, "c1", beforeFrom, 500) // enough for a p99, however slow the machine
	faultAt := time.Now()
	if err := f.inject(); err != nil {
		t.Fatal(err)
	}
	// Calls that began before the fault was in place (a kill waits for the
	// process to go) may still succeed; those begun after may not.
	injected := time.Now()
	recovered := false
	t.Cleanup(func() {
		if !recovered {
			_ = f.recover()
		}
	})
	t.Logf("%s: catalog2's metastore stopped", f.name)

	// STRICT: a fan-out fails fast, naming catalog2. The first ones may wait
	// for catalog2 up to its budget; once its circuit is open they fail at once.
	var strictTimes []time.Duration
	var lastStrictErr error
	for i := 0; i < 6; i++ {
		start := time.Now()
		_, err := strictClient.GetAllDatabases(ctx(t))
		d := time.Since(start)
		strictTimes = append(strictTimes, d)
		if err == nil {
			if start.After(injected) {
				t.Errorf("STRICT fan-out %d s into the fault succeeded", int(time.Since(faultAt).Seconds()))
			}
		} else {
			lastStrictErr = err
			metaErr(t, err, "catalog2")
		}
		if d > budget+margin {
			t.Errorf("STRICT fan-out took %v during the fault; the budget is %v", d, budget)
		}
		time.Sleep(time.Second)
	}
	t.Logf("STRICT fan-outs during the fault: %v; last: %v", strictTimes, lastStrictErr)
	if last := strictTimes[len(strictTimes)-1]; last > budget*3/4 {
		t.Errorf("STRICT fan-out with catalog2's circuit open took %v: want a fast failure, not a wait for the budget (%v)", last, budget)
	}
	metaErr(t, lastStrictErr, "catalog2", "circuit breaker OPEN")

	time.Sleep(time.Until(faultAt.Add(8 * time.Second)))
	l.waitSamples(t, "c1", faultAt, 500)
	// /readyz while catalog2 is gone: OPEN, omitted.
	rz := getReadyz(t, safe)
	if b := rz.Backends["catalog2"]; b.CircuitState != "OPEN" || b.Degraded == nil || !*b.Degraded || b.CircuitRetryAtEpochMs == 0 {
		t.Errorf("/readyz during the fault: catalog2 = %+v", b)
	}
	if rz.Summary.FanoutOmitted == nil || strings.Join(*rz.Summary.FanoutOmitted, ",") != "catalog2" {
		t.Errorf("/readyz summary.fanoutOmitted during the fault = %v, want [catalog2]", rz.Summary.FanoutOmitted)
	}
	if b := rz.Backends["catalog1"]; b.CircuitState != "CLOSED" {
		t.Errorf("/readyz during the fault: catalog1 = %+v", b)
	}
	faultTo := time.Now()

	if err := f.recover(); err != nil {
		t.Fatal(err)
	}
	recovered = true
	back := time.Now()
	t.Logf("%s: catalog2's metastore is back", f.name)
	// The next successful probe closes the circuit: within a polling
	// interval (plus the probe that may be running, and a margin).
	c := proxytest.Client(t, safe.URI("primary"))
	var again time.Duration
	for {
		if _, err := c.GetDatabase(ctx(t), "catalog2__default"); err == nil {
			again = time.Since(back)
			break
		} else if !isMeta(err, "catalog2") {
			t.Fatalf("catalog2 after recovery: %v", err)
		}
		if time.Since(back) > 2*time.Minute {
			t.Fatalf("catalog2 still failing %v after it came back", time.Since(back))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("catalog2 served again %v after its metastore came back", again)
	if again > pollInterval+probeTimeout+margin {
		t.Errorf("catalog2 served again only %v after its metastore came back; the polling interval is %v", again, pollInterval)
	}
	time.Sleep(500 * time.Millisecond)
	l.halt()

	if b := getReadyz(t, safe).Backends["catalog2"]; b.CircuitState != "CLOSED" {
		t.Errorf("/readyz after recovery: catalog2 = %+v", b)
	}

	// catalog1: no error, p99 within the bound.
	before := l.window("c1", beforeFrom, faultAt)
	during := l.window("c1", faultAt, faultTo)
	for _, s := range append(before, during...) {
		if s.err != nil {
			t.Errorf("a catalog1 call failed: %v", s.err)
			break
		}
	}
	p99b, p99d := percentile(durations(before), 0.99), percentile(durations(during), 0.99)
	t.Logf("catalog1: %d calls before, p99 %v; %d calls during the fault, p99 %v (p50 %v / %v); bound %v",
		len(before), p99b, len(during), p99d, percentile(durations(before), 0.5), percentile(durations(during), 0.5), p99Limit(p99b))
	if len(before) < 500 || len(during) < 500 {
		t.Fatalf("too few catalog1 samples (%d before, %d during) for a p99", len(before), len(during))
	}
	if p99d > p99Limit(p99b) {
		t.Errorf("catalog1's p99 during the fault is %v, before %v: over the bound %v", p99d, p99b, p99Limit(p99b))
	}

	// catalog2: every call during the fault fails within its budget.
	c2 := l.window("c2", faultAt, faultTo)
	var open, worst int
	var longest time.Duration
	for _, s := range c2 {
		if s.start.After(injected) && s.err == nil {
			t.Errorf("a catalog2 call %v into the fault succeeded", s.start.Sub(faultAt))
		}
		if s.err != nil && !isMeta(s.err, "catalog2") {
			t.Errorf("a catalog2 call failed without a MetaException naming catalog2: %v", s.err)
		}
		if isMeta(s.err, "circuit breaker OPEN") {
			open++
		}
		if s.d > longest {
			longest = s.d
		}
		if s.d > budget+margin {
			worst++
		}
	}
	t.Logf("catalog2: %d calls during the fault, %d failed fast by the open circuit, longest %v", len(c2), open, longest)
	if worst > 0 {
		t.Errorf("%d catalog2 calls waited past the budget %v (+%v)", worst, budget, margin)
	}
	if open == 0 {
		t.Error("no catalog2 call was failed fast by an open circuit")
	}

	// Fan-outs: answered within the budget, without catalog2, counted.
	fo := l.window("fanout", faultAt, faultTo)
	var slowest time.Duration
	for _, s := range fo {
		if s.err != nil {
			t.Errorf("a SAFE_FANOUT_READS fan-out failed during the fault: %v", s.err)
			continue
		}
		for _, db := range s.dbs {
			if strings.HasPrefix(db, "catalog2__") && s.start.After(injected) {
				t.Errorf("a fan-out %v into the fault listed %s", s.start.Sub(faultAt), db)
				break
			}
		}
		slowest = max(slowest, s.d)
	}
	t.Logf("fan-outs: %d during the fault, slowest %v", len(fo), slowest)
	if slowest > budget+margin {
		t.Errorf("a fan-out took %v during the fault; the budget is %v", slowest, budget)
	}
	omitted := safe.Metric(t, "hms_proxy_fanout_omitted_total", "catalog", "catalog2", "method", "get_all_databases")
	if omitted < float64(len(fo))/2 {
		t.Errorf("hms_proxy_fanout_omitted_total{catalog=catalog2} = %v for %d fan-outs during the fault", omitted, len(fo))
	}
	if n := len(auditRecords(t, safe, `"method":"get_all_databases"`, `"omittedCatalogs":["catalog2"]`)); n == 0 {
		t.Error("no audit record lists the omitted catalog2")
	}
	// After recovery fan-outs list catalog2 again.
	dbs, err := c.GetAllDatabases(ctx(t))
	if err != nil || !contains(dbs, "catalog2__default") {
		t.Errorf("fan-out after recovery: %v %v", dbs, err)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Under SAFE_FANOUT_READS a catalog whose circuit is open but whose list the
// cache holds fresh is answered from the cache, not left out: the entry is
// as good as it was before the fault (its TTL says how old it may be).
func TestDegradedCatalogServedFromTheListCache(t *testing.T) {
	needHive(t)
	p := proxytest.Start(t, props(
		"catalog.catalog2.latency-budget-ms=1000",
		"routing.circuit-breaker.enabled=true",
		"routing.backend-state-polling.enabled=true",
		"routing.backend-state-polling.interval-ms=300",
		"routing.backend-state-polling.probe-timeout-ms=300",
		"routing.degraded-routing-policy=SAFE_FANOUT_READS",
		"routing.database-list-cache.ttl-ms=60000",
		"routing.database-list-cache.shared-across-users=true"))
	c := proxytest.Client(t, p.URI("primary"))
	if dbs, err := c.GetAllDatabases(ctx(t)); err != nil || !contains(dbs, "catalog2__default") {
		t.Fatalf("fan-out before the fault: %v %v", dbs, err)
	}
	if err := hms2.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = hms2.Resume()
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for getReadyz(t, p).Backends["catalog2"].CircuitState != "OPEN" {
		if time.Now().After(deadline) {
			t.Fatal("catalog2's circuit did not open from probes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// From the cache: listed, and not counted as omitted (a wait for the
	// hung metastore would end in its budget and an omission).
	dbs, err := c.GetAllDatabases(ctx(t))
	if err != nil || !contains(dbs, "catalog2__default") {
		t.Fatalf("fan-out with catalog2's circuit open and its list cached: %v %v", dbs, err)
	}
	if n := p.Metric(t, "hms_proxy_fanout_omitted_total", "catalog", "catalog2"); n != 0 {
		t.Errorf("a cached catalog was counted as omitted %v times", n)
	}
	// get_table_meta is not cached: there catalog2 is left out.
	if _, err := c.GetTableMeta(ctx(t), "*", "*", nil); err != nil {
		t.Fatalf("get_table_meta with catalog2 degraded: %v", err)
	}
	if n := p.Metric(t, "hms_proxy_fanout_omitted_total", "catalog", "catalog2", "method", "get_table_meta", "reason", "circuit_open"); n != 1 {
		t.Errorf("hms_proxy_fanout_omitted_total{catalog2,get_table_meta,circuit_open} = %v, want 1", n)
	}
	if err := hms2.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
}
