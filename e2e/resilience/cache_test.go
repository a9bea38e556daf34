package resilience

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// cacheBed: both catalogs behind taps (which count what reaches each
// metastore), both database caches on and shared, nothing in the background
// (no polling, no refresh) so that the taps see client traffic only.
func cacheBed(t *testing.T, extra ...string) (*proxytest.Proxy, *proxytest.Tap, *proxytest.Tap) {
	t1, t2 := proxytest.NewTap(t, hms1.URI), proxytest.NewTap(t, hms2.URI)
	p := proxytest.Start(t, props(append([]string{
		"catalog.catalog1.conf.hive.metastore.uris=" + t1.URI(),
		"catalog.catalog2.conf.hive.metastore.uris=" + t2.URI(),
		"catalog.catalog1.shared-session-pool-size=4",
		"catalog.catalog2.shared-session-pool-size=4",
		"routing.database-list-cache.ttl-ms=600000",
		"routing.database-list-cache.shared-across-users=true",
		"routing.database-metadata-cache.ttl-ms=600000",
		"routing.database-metadata-cache.shared-across-users=true",
	}, extra...)...))
	return p, t1, t2
}

func countCalls(tp *proxytest.Tap, method string) int {
	n := 0
	for _, m := range tp.Methods() {
		if m == method {
			n++
		}
	}
	return n
}

// rawCall sends one whole call on a fresh connection and reads the reply.
type rawConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, uri string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(uri, "thrift://"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{c: c, r: bufio.NewReader(c)}
}

func (rc *rawConn) call(msg []byte) (*wire.Message, error) {
	_ = rc.c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := rc.c.Write(msg); err != nil {
		return nil, err
	}
	return wire.ReadMessage(rc.r, wire.Limits{MaxMessage: 16 << 20}, nil)
}

// databaseNames decodes a get_all_databases reply.
func databaseNames(m *wire.Message) ([]string, error) {
	if m.Type != wire.Reply {
		return nil, fmt.Errorf("message type %d", m.Type)
	}
	v, err := wire.DecodeStruct(m.Body())
	if err != nil {
		return nil, err
	}
	l := v.Field(0)
	if l == nil {
		return nil, fmt.Errorf("no success field: %v", v)
	}
	var out []string
	for _, e := range l.Elems {
		out = append(out, string(e.Str))
	}
	return out, nil
}

// 1,000 concurrent identical get_all_databases (1,000 connections, released
// at once) make one backend call per catalog; all get the same, complete
// answer.
func TestCacheThousandConcurrentListsOneBackendCallPerCatalog(t *testing.T) {
	needHive(t)
	p, t1, t2 := cacheBed(t)
	const n = 1000
	args := wire.Struct()
	msg := wire.AppendMessage(nil, wire.Header{Name: "get_all_databases", Type: wire.Call, SeqID: 7}, &args)
	conns := make([]*rawConn, n)
	for i := range conns {
		conns[i] = dialRaw(t, p.URI("primary"))
	}
	start := make(chan struct{})
	answers := make([][]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			m, err := conns[i].call(msg)
			if err == nil {
				answers[i], err = databaseNames(m)
			}
			errs[i] = err
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	t.Logf("%d concurrent get_all_databases answered in %v", n, time.Since(began))
	want := strings.Join(answers[0], ",")
	if !strings.Contains(","+want+",", ",default,") || !strings.Contains(want, "catalog2__default") {
		t.Fatalf("answer %v lacks a catalog's default database", answers[0])
	}
	for i := range conns {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if got := strings.Join(answers[i], ","); got != want {
			t.Fatalf("call %d got %s, call 0 got %s", i, got, want)
		}
	}
	if a, b := countCalls(t1, "get_all_databases"), countCalls(t2, "get_all_databases"); a != 1 || b != 1 {
		t.Fatalf("1,000 concurrent identical get_all_databases reached catalog1's metastore %d times, catalog2's %d times; want once each", a, b)
	}
	hits := p.Metric(t, "hms_proxy_cache_requests_total", "cache", "database_list", "catalog", "catalog1", "result", "hit")
	misses := p.Metric(t, "hms_proxy_cache_requests_total", "cache", "database_list", "catalog", "catalog1", "result", "miss")
	if hits != n-1 || misses != 1 {
		t.Errorf("hms_proxy_cache_requests_total{database_list,catalog1}: %v hits, %v misses; want %d and 1", hits, misses, n-1)
	}
}

// The real Hive 3.1.3 client creates databases in both catalogs through the
// proxy after the database lists were cached: its getAllDatabases lists
// them at once, and after its dropDatabase its getDatabase finds nothing
// (both caches were invalidated by the writes). alter_database is read back
// at once through the metadata cache.
func TestCacheWritesThroughTheProxyAreVisibleAtOnce(t *testing.T) {
	needHive(t)
	p, _, t2 := cacheBed(t)
	c := proxytest.Client(t, p.URI("primary"))
	before, err := c.GetAllDatabases(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	local, remote := uniq("cachew"), uniq("cachewr")
	// Caching "not found" would hide the creation: the metastore's
	// NoSuchObjectException is never cached.
	if _, err := c.GetDatabase(ctx(t), "catalog2__"+remote); err == nil {
		t.Fatal("database exists before the test")
	}
	t2.Reset()
	testbed.RunScenarioT(t, testbed.Hive313, p.URI("primary"), "ddl", "--db", local, "--db", "catalog2__"+remote)
	after, err := c.GetAllDatabases(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("after the scenario dropped what it created the list is %v, before it was %v", after, before)
	}
	if got := countCalls(t2, "get_all_databases"); got < 1 {
		t.Errorf("the scenario's writes did not make the proxy ask catalog2 again (%d calls)", got)
	}

	// alter_database: read back at once, though get_database is cached.
	name := uniq("cachealt")
	if err := c.CreateDatabase(ctx(t), &thriftgen.Database{Name: "catalog2__" + name, Description: "one"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DropDatabase(ctx(t), "catalog2__"+name, true, true) })
	t2.Reset()
	for i := 0; i < 20; i++ {
		db, err := c.GetDatabase(ctx(t), "catalog2__"+name)
		if err != nil || db.Description != "one" || db.Name != "catalog2__"+name {
			t.Fatalf("get_database %d: %+v %v", i, db, err)
		}
	}
	if got := countCalls(t2, "get_database"); got != 1 {
		t.Errorf("20 get_database of one database reached the metastore %d times; want once", got)
	}
	db, _ := c.GetDatabase(ctx(t), "catalog2__"+name)
	db.Description = "two"
	if err := c.AlterDatabase(ctx(t), "catalog2__"+name, db); err != nil {
		t.Fatal(err)
	}
	if db, err := c.GetDatabase(ctx(t), "catalog2__"+name); err != nil || db.Description != "two" {
		t.Fatalf("get_database right after alter_database: %+v %v", db, err)
	}
	if n := p.Metric(t, "hms_proxy_cache_invalidations_total", "cache", "database_metadata", "catalog", "catalog2", "reason", "write"); n < 1 {
		t.Errorf("hms_proxy_cache_invalidations_total{database_metadata,catalog2,write} = %v", n)
	}
}

// refresh_privileges with synthetic success never reaches a metastore.
func TestSyntheticRefreshPrivileges(t *testing.T) {
	needHive(t)
	t1 := proxytest.NewTap(t, hms1.URI)
	p := proxytest.Start(t, props("catalog.catalog1.conf.hive.metastore.uris="+t1.URI(),
		"routing.refresh-privileges.synthetic-success=true"))
	c := proxytest.Client(t, p.URI("primary"))
	obj := &thriftgen.HiveObjectRef{ObjectType: thriftgen.HiveObjectType_TABLE, DbName: "default", ObjectName: "t"}
	resp, err := c.RefreshPrivileges(ctx(t), obj, "hive", &thriftgen.GrantRevokePrivilegeRequest{})
	if err != nil || resp == nil || resp.Success == nil || !*resp.Success {
		t.Fatalf("refresh_privileges: %+v %v", resp, err)
	}
	if m := t1.Methods(); len(m) != 0 {
		t.Fatalf("refresh_privileges reached the metastore: %v", m)
	}
}

// Background refresh keeps a list that is read warm: while clients read it
// no client call reaches the metastore (each is a cache hit), the entry is
// reloaded every interval in the background, and when the metastore hangs
// the failed refresh keeps the old entry (stale but good) until it expires.
// The TTL is long enough that nothing expires during the test however slow
// the machine; the refreshes are waited for, not counted in a time window.
func TestCacheBackgroundRefreshKeepsHotListsWarm(t *testing.T) {
	needHive(t)
	p, _, t2 := cacheBed(t,
		"routing.database-list-cache.ttl-ms=600000",
		"routing.database-cache.background-refresh.enabled=true",
		"routing.database-cache.background-refresh.interval-ms=500")
	c := proxytest.Client(t, p.URI("primary"))
	if _, err := c.GetAllDatabases(ctx(t)); err != nil {
		t.Fatal(err)
	}
	misses := func() float64 {
		return p.Metric(t, "hms_proxy_cache_requests_total", "cache", "database_list", "catalog", "catalog2", "result", "miss")
	}
	before := misses()
	t2.Reset()
	refreshed := func() float64 {
		return p.Metric(t, "hms_proxy_cache_refreshes_total", "cache", "database_list", "catalog", "catalog2", "result", "success")
	}
	base := refreshed()
	reads := 0
	for deadline := time.Now().Add(2 * time.Minute); refreshed() < base+3; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%v background refreshes in 2 minutes with a 500 ms interval, want 3", refreshed()-base)
		}
		dbs, err := c.GetAllDatabases(ctx(t))
		if err != nil || !strings.Contains(strings.Join(dbs, ","), "catalog2__default") {
			t.Fatalf("fan-out: %v %v", dbs, err)
		}
		reads++
	}
	reloads := countCalls(t2, "get_all_databases")
	t.Logf("%d reads: %d background reloads of catalog2's list, %v refreshes counted, %v misses", reads, reloads, refreshed()-base, misses()-before)
	if misses() != before {
		t.Errorf("%v client reads missed the cache while background refresh kept it warm", misses()-before)
	}
	if reloads < 3 {
		t.Errorf("3 refreshes counted but %d reloads reached catalog2", reloads)
	}

	// catalog2 hangs: refreshes fail, the entry it has is still served.
	if err := hms2.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = hms2.Resume()
		}
	})
	paused := time.Now()
	failed := func() float64 {
		return p.Metric(t, "hms_proxy_cache_refreshes_total", "cache", "database_list", "catalog", "catalog2", "result", "failure")
	}
	for deadline := time.Now().Add(3 * time.Minute); failed() < 1; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no failed refresh counted 3 minutes after catalog2 hung")
		}
		dbs, err := c.GetAllDatabases(ctx(t))
		if err != nil || !strings.Contains(strings.Join(dbs, ","), "catalog2__default") {
			t.Fatalf("a fan-out %v after catalog2 hung, before its entry expired: %v %v", time.Since(paused), dbs, err)
		}
	}
	// After a failed refresh the old entry is still served.
	if dbs, err := c.GetAllDatabases(ctx(t)); err != nil || !strings.Contains(strings.Join(dbs, ","), "catalog2__default") {
		t.Fatalf("a fan-out after a failed refresh: %v %v", dbs, err)
	}
	if err := hms2.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
}

// A Hive 4.1 client's get_database_req against a Hive 3.1.3 metastore is
// adapted to get_database; the metadata cache holds the adapted answer:
// 20 calls reach the metastore once, an alter_database through the proxy is
// read back at once, and the answer is the same as the uncached one.
func TestCacheAdaptedGetDatabaseReq(t *testing.T) {
	needHive(t)
	p, _, t2 := cacheBed(t, "additional-frontends=hive4",
		"additional-frontends.hive4.port="+fmt.Sprint(proxytest.FreePort(t)),
		"additional-frontends.hive4.frontend-profile=APACHE_4_1_0")
	c4 := proxytest.Client(t, p.URI("hive4"))
	c := proxytest.Client(t, p.URI("primary"))
	name := uniq("cachereq")
	ext := "catalog2__" + name
	if err := c.CreateDatabase(ctx(t), &thriftgen.Database{Name: ext, Description: "one"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DropDatabase(ctx(t), ext, true, true) })
	t2.Reset()
	req := &thriftgen.GetDatabaseRequest{Name: &ext}
	for i := 0; i < 20; i++ {
		db, err := c4.GetDatabaseReq(ctx(t), req)
		if err != nil || db.Name != ext || db.Description != "one" {
			t.Fatalf("get_database_req %d: %+v %v", i, db, err)
		}
	}
	if got := countCalls(t2, "get_database"); got != 1 {
		t.Errorf("20 adapted get_database_req reached the metastore as %d get_database calls; want 1 (methods %v)", got, t2.Methods())
	}
	db, err := c.GetDatabase(ctx(t), ext)
	if err != nil {
		t.Fatal(err)
	}
	db.Description = "two"
	if err := c.AlterDatabase(ctx(t), ext, db); err != nil {
		t.Fatal(err)
	}
	if db, err := c4.GetDatabaseReq(ctx(t), req); err != nil || db.Description != "two" {
		t.Fatalf("get_database_req after alter_database: %+v %v", db, err)
	}
	if n := p.Metric(t, "hms_proxy_backend_fallback_total", "method", "get_database_req", "to_api", "get_database"); n < 1 {
		t.Errorf("the adapted call was not counted as a compatibility path: %v", n)
	}
}
