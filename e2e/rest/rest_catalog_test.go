package rest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/hms-proxy/hms-proxy/app"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/locks"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Issue 16 on the binary's path: the REST listener proxytest.Start builds
// from the configuration (app/rest.go), whose requests reach the router
// through its in-process listener "rest", with real PyIceberg clients and
// real Hive 3.1.3 metastores.

// The nine read routes /v1/config announces for every catalog, and the
// thirteen write routes of a catalog whose writers are isolated.
var (
	restReadRoutes = []string{
		"GET /v1/{prefix}/namespaces", "GET /v1/{prefix}/namespaces/{namespace}", "HEAD /v1/{prefix}/namespaces/{namespace}",
		"GET /v1/{prefix}/namespaces/{namespace}/tables", "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
		"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}", "GET /v1/{prefix}/namespaces/{namespace}/views",
		"GET /v1/{prefix}/namespaces/{namespace}/views/{view}", "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
	}
	restWriteRoutes = []string{
		"POST /v1/{prefix}/namespaces/{namespace}/tables", "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
		"DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}", "POST /v1/{prefix}/tables/rename",
		"POST /v1/{prefix}/namespaces/{namespace}/register", "POST /v1/{prefix}/namespaces/{namespace}/views",
		"POST /v1/{prefix}/namespaces/{namespace}/views/{view}", "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
		"POST /v1/{prefix}/views/rename", "POST /v1/{prefix}/namespaces", "POST /v1/{prefix}/namespaces/{namespace}/properties",
		"DELETE /v1/{prefix}/namespaces/{namespace}", "POST /v1/{prefix}/transactions/commit",
	}
)

func assertEndpoints(t *testing.T, p *e2eutil.RestProxy, warehouse string, writes bool) {
	t.Helper()
	want := slices.Clone(restReadRoutes)
	if writes {
		want = append(want, restWriteRoutes...)
	}
	got := p.Endpoints(t, warehouse)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("/v1/config?warehouse=%s endpoints (writes %v):\n got %v\nwant %v", warehouse, writes, got, want)
	}
}

type restRead struct {
	IDs              []int64  `json:"ids"`
	Snapshots        int      `json:"snapshots"`
	Chain            int      `json:"chain"`
	MetadataLocation string   `json:"metadata_location"`
	MetadataLog      []string `json:"metadata_log"`
}

// restIcebergRecord asserts that catalog2's metastore holds db.tbl as an
// Iceberg table whose metadata_location is the client's, and whose
// previous_metadata_location is the last entry of the metadata log: the
// chain of metadata files the commits wrote is unbroken.
func restIcebergRecord(t *testing.T, direct *thriftgen.Client, db, tbl string, read restRead) {
	t.Helper()
	got, err := direct.GetTable(e2eutil.Ctx(t), db, tbl)
	if err != nil {
		t.Fatalf("%s.%s is not in catalog2's metastore: %v", db, tbl, err)
	}
	p := got.Parameters
	if !strings.EqualFold(p["table_type"], "ICEBERG") || p["metadata_location"] != read.MetadataLocation {
		t.Fatalf("catalog2's metastore has %s.%s with %v; the client read %s", db, tbl, p, read.MetadataLocation)
	}
	if n := len(read.MetadataLog); n == 0 || p["previous_metadata_location"] != read.MetadataLog[n-1] {
		t.Fatalf("previous_metadata_location %q is not the last metadata log entry of %v", p["previous_metadata_location"], read.MetadataLog)
	}
}

// A non-default Hive 3.1.3 catalog behind the isolating lock shim takes
// REST writes: /v1/config announces them, PyIceberg creates a namespace and
// a table, appends twice and reads both back, and each commit's table lock
// was the shim's.
func TestRESTWritesOnANonDefaultHive3Catalog(t *testing.T) {
	e2eutil.NeedHive(t)
	p := e2eutil.StartREST(t, e2eutil.TwoCatalogs(), app.TestHooks{})
	assertEndpoints(t, p, "catalog1", true)
	assertEndpoints(t, p, "catalog2", true)
	ns := e2eutil.Uniq("restw")
	direct := proxytest.Client(t, e2eutil.HMS2.URI)
	t.Cleanup(func() { _ = direct.DropDatabase(e2eutil.Ctx(t), ns, true, true) })
	var read restRead
	e2eutil.RestPy(t, map[string]any{"scenario": "write", "uri": p.Base, "warehouse": "catalog2", "ns": ns, "table": "events",
		"location": "file://" + t.TempDir(), "appends": 2}, &read)
	if fmt.Sprint(read.IDs) != "[0 1 10 11]" || read.Snapshots != 2 || read.Chain != 2 {
		t.Fatalf("read back %v in %d snapshots (chain %d), want the four rows of two appends", read.IDs, read.Snapshots, read.Chain)
	}
	restIcebergRecord(t, direct, ns, "events", read)
	if _, err := proxytest.Client(t, e2eutil.HMS1.URI).GetDatabase(e2eutil.Ctx(t), ns); err == nil {
		t.Fatalf("namespace %s of catalog2 was created in catalog1's metastore", ns)
	}
	// Two appends, each under the table's lock, which the shim served.
	if n := p.Metric(t, locks.MetricEvents, "operation", "unlock", "catalog", "catalog2", "result", "ok"); n < 2 {
		t.Fatalf("the commits' locks were not the shim's: %v unlocks", n)
	}
	if held := e2eutil.BackendLocks(t, direct, ns); len(held) != 0 {
		t.Fatalf("catalog2's metastore holds locks: %+v", held)
	}
}

// Two proxies sharing a real ZooKeeper lock store, as behind a load
// balancer: PyIceberg writers commit to one table of catalog2 (Hive 3.1.3)
// through both at once. Every commit is present afterwards: all rows, one
// snapshot per commit on one unbroken parent chain, the metastore's
// previous_metadata_location the metadata log's last file.
func TestRESTConcurrentCommitsThroughTwoReplicas(t *testing.T) {
	zkAddr := e2eutil.ZooKeeper(t)
	props := e2eutil.TwoCatalogs(
		"synthetic-read-lock.store.mode=ZOOKEEPER",
		"synthetic-read-lock.store.zookeeper.connect-string="+zkAddr,
		"synthetic-read-lock.store.zookeeper.znode=/e2e-rest/"+e2eutil.Uniq("zn"),
		"synthetic-read-lock.store.zookeeper.connection-timeout-ms=5000",
		"synthetic-read-lock.store.zookeeper.session-timeout-ms=20000")
	a, b := e2eutil.StartREST(t, props, app.TestHooks{}), e2eutil.StartREST(t, props, app.TestHooks{})
	assertEndpoints(t, b, "catalog2", true)
	ns := e2eutil.Uniq("restz")
	direct := proxytest.Client(t, e2eutil.HMS2.URI)
	t.Cleanup(func() { _ = direct.DropDatabase(e2eutil.Ctx(t), ns, true, true) })
	cfg := func(p *e2eutil.RestProxy, scenario string, extra ...any) map[string]any {
		m := map[string]any{"scenario": scenario, "uri": p.Base, "warehouse": "catalog2", "ns": ns, "table": "events"}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return m
	}
	var first restRead
	e2eutil.RestPy(t, cfg(a, "write", "location", "file://"+t.TempDir(), "appends", 1), &first)
	const appends = 6
	// Both writers start appending at the same moment (after PyIceberg's
	// start-up), so their commits overlap.
	startAt := float64(time.Now().Add(15*time.Second).UnixMilli()) / 1000
	var wg sync.WaitGroup
	conflicts := make([]struct {
		Conflicts int `json:"conflicts"`
	}, 2)
	for i, p := range []*e2eutil.RestProxy{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e2eutil.RestPy(t, cfg(p, "append", "appends", appends, "start", 100*(i+1), "writer", fmt.Sprint("w", i),
				"start_at", startAt), &conflicts[i])
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var read restRead
	e2eutil.RestPy(t, cfg(b, "read"), &read)
	var want []int64
	for _, start := range []int64{0, 100, 200} {
		n := appends
		if start == 0 {
			n = 1
		}
		for i := range int64(n) {
			want = append(want, start+10*i, start+10*i+1)
		}
	}
	if fmt.Sprint(read.IDs) != fmt.Sprint(want) {
		t.Fatalf("rows after the concurrent commits:\n got %v\nwant %v", read.IDs, want)
	}
	if commits := 1 + 2*appends; read.Snapshots != commits || read.Chain != commits {
		t.Fatalf("%d snapshots, %d on the parent chain; want %d (one per commit)", read.Snapshots, read.Chain, commits)
	}
	restIcebergRecord(t, direct, ns, "events", read)
	t.Logf("commits answered 409 (CommitFailedException, retried by PyIceberg or the script): %v through a, %v through b; "+
		"surfaced to the script: %d, %d",
		a.Metric(t, "hms_proxy_rest_requests_total", "status", "409"), b.Metric(t, "hms_proxy_rest_requests_total", "status", "409"),
		conflicts[0].Conflicts, conflicts[1].Conflicts)
	for name, p := range map[string]*e2eutil.RestProxy{"a": a, "b": b} {
		if n := p.Metric(t, locks.MetricEvents, "operation", "unlock", "catalog", "catalog2", "result", "ok"); n < appends {
			t.Errorf("proxy %s: %v shim unlocks for %d commits", name, n, appends)
		}
	}
}

// Without writer isolation (the shim granting every lock at once, as the
// Java proxy's does) catalog2 keeps the spec's read-only REST surface:
// /v1/config announces only reads, PyIceberg refuses from discovery, and a
// client ignoring discovery gets 403 naming the catalog; nothing reaches
// the metastore.
func TestRESTWithoutWriterIsolation(t *testing.T) {
	e2eutil.NeedHive(t)
	p := e2eutil.StartREST(t, e2eutil.TwoCatalogs(), app.TestHooks{LockGrantAtOnce: true})
	assertEndpoints(t, p, "catalog1", true)
	assertEndpoints(t, p, "catalog2", false)
	ns := e2eutil.Uniq("restn")
	var refused struct {
		Refused   bool   `json:"refused"`
		ErrorType string `json:"error_type"`
		Message   string `json:"message"`
	}
	e2eutil.RestPy(t, map[string]any{"scenario": "refused", "uri": p.Base, "warehouse": "catalog2", "ns": ns, "location": "file://" + t.TempDir()}, &refused)
	if !refused.Refused || refused.ErrorType != "NotImplementedError" || !strings.Contains(refused.Message, "POST /v1/{prefix}/namespaces") {
		t.Fatalf("PyIceberg on catalog2 without isolation: %+v", refused)
	}
	for _, path := range []struct{ prefix, ns string }{{"catalog2", ns}, {"catalog1", "catalog2__" + ns}} {
		a := p.Do(t, "POST", "/v1/"+path.prefix+"/namespaces", map[string]any{"namespace": []string{path.ns}})
		if typ, msg := a.ErrorModel(); a.Status != 403 || typ != "ForbiddenException" || !strings.Contains(msg, "catalog 'catalog2'") {
			t.Fatalf("a write by prefix %s: %d %s %s", path.prefix, a.Status, typ, msg)
		}
	}
	if _, err := proxytest.Client(t, e2eutil.HMS2.URI).GetDatabase(e2eutil.Ctx(t), ns); err == nil {
		t.Fatal("the refused create_namespace reached catalog2's metastore")
	}
}

// The router's policy applies to REST requests: a READ_ONLY catalog's write
// is refused by the access mode (the message names it and its key), a
// database an exposure rule hides is neither listed nor loadable, and the
// calls run on the router's listener "rest".
func TestRESTAccessModeAndExposure(t *testing.T) {
	e2eutil.NeedHive(t)
	direct := proxytest.Client(t, e2eutil.HMS2.URI)
	id := e2eutil.Uniq("")
	visible, hidden := "vis"+id, "hid"+id
	e2eutil.MkDB(t, direct, visible)
	e2eutil.MkDB(t, direct, hidden)
	for _, db := range []string{visible, hidden} {
		tbl := e2eutil.Table(db, "ice")
		tbl.Parameters["table_type"] = "ICEBERG"
		tbl.Parameters["metadata_location"] = "file:///nonexistent/" + db + "/v1.metadata.json"
		if err := direct.CreateTable(e2eutil.Ctx(t), tbl); err != nil {
			t.Fatal(err)
		}
	}
	p := e2eutil.StartREST(t, e2eutil.TwoCatalogs("catalog.catalog2.access-mode=READ_ONLY",
		"catalog.catalog2.expose-mode=DENY_BY_DEFAULT", "catalog.catalog2.expose-db-patterns=vis.*"), app.TestHooks{})
	// catalog2 is READ_ONLY: no write endpoint is announced, and a write
	// is refused by the REST write gate with the access mode's reason.
	assertEndpoints(t, p, "catalog2", false)
	a := p.Do(t, "POST", "/v1/catalog2/namespaces", map[string]any{"namespace": []string{"ro" + id}})
	if typ, msg := a.ErrorModel(); a.Status != 403 || typ != "ForbiddenException" || !strings.Contains(msg, "READ_ONLY") ||
		!strings.Contains(msg, "catalog.catalog2.access-mode") {
		t.Fatalf("a write on a READ_ONLY catalog: %d %s %q", a.Status, typ, msg)
	}
	a = p.Do(t, "POST", "/v1/catalog2/namespaces/"+visible+"/properties", map[string]any{"updates": map[string]string{"k": "v"}})
	if typ, msg := a.ErrorModel(); a.Status != 403 || !strings.Contains(msg, "READ_ONLY") {
		t.Fatalf("a property update on a READ_ONLY catalog: %d %s %q", a.Status, typ, msg)
	}
	if got, _ := direct.GetDatabase(e2eutil.Ctx(t), visible); got != nil && got.Parameters["k"] != "" {
		t.Fatalf("the refused update reached the metastore: %v", got.Parameters)
	}
	for _, list := range []struct{ prefix, show, hide string }{{"catalog2", visible, hidden}, {"catalog1", "catalog2__" + visible, "catalog2__" + hidden}} {
		a := p.Do(t, "GET", "/v1/"+list.prefix+"/namespaces", nil)
		text := jsonText(a.Body)
		if a.Status != 200 || !strings.Contains(text, `"`+list.show+`"`) || strings.Contains(text, list.hide) {
			t.Fatalf("namespaces of prefix %s: %d %s (want %s, not %s)", list.prefix, a.Status, text, list.show, list.hide)
		}
	}
	if a := p.Do(t, "GET", "/v1/catalog2/namespaces/"+visible+"/tables", nil); a.Status != 200 || !strings.Contains(jsonText(a.Body), `"ice"`) {
		t.Fatalf("tables of the visible database: %d %v", a.Status, a.Body)
	}
	for _, path := range []string{"/v1/catalog2/namespaces/" + hidden, "/v1/catalog2/namespaces/" + hidden + "/tables",
		"/v1/catalog2/namespaces/" + hidden + "/tables/ice", "/v1/catalog1/namespaces/catalog2__" + hidden + "/tables/ice"} {
		if a := p.Do(t, "GET", path, nil); a.Status != 404 {
			t.Fatalf("GET %s of a hidden database: %d %v, want 404", path, a.Status, a.Body)
		}
	}
	if a := p.Do(t, "HEAD", "/v1/catalog2/namespaces/"+hidden, nil); a.Status != 404 {
		t.Fatalf("HEAD of a hidden database: %d", a.Status)
	}
	// The REST requests' calls are the router's, on its listener "rest".
	if n := p.Metric(t, "hms_proxy_requests_total", "method", "get_databases", "catalog", "catalog2"); n < 1 {
		t.Fatalf("hms_proxy_requests_total{method=get_databases,catalog=catalog2} = %v", n)
	}
	if !p.Proxy.HasSeries(t, "hms_proxy_frontend_inflight_calls", "frontend", "rest") {
		t.Fatal("no hms_proxy_frontend_inflight_calls series for listener rest")
	}
}

// A catalog whose metastore is down answers 503 ServiceUnavailableException
// naming the catalog (not a 500, not a hang); other catalogs keep serving.
func TestRESTBackendDownIs503(t *testing.T) {
	e2eutil.NeedHive(t)
	ms := testbed.StartMetastoreT(t, testbed.Hive313)
	db := e2eutil.Uniq("down")
	e2eutil.MkDB(t, proxytest.Client(t, ms.URI), db)
	p := e2eutil.StartREST(t, e2eutil.TwoCatalogs("catalog.catalog2.conf.hive.metastore.uris="+ms.URI), app.TestHooks{})
	if a := p.Do(t, "GET", "/v1/catalog2/namespaces/"+db, nil); a.Status != 200 {
		t.Fatalf("load namespace while catalog2 is up: %d %v", a.Status, a.Body)
	}
	if err := ms.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/catalog2/namespaces/" + db, "/v1/catalog2/namespaces", "/v1/catalog1/namespaces/catalog2__" + db + "/tables"} {
		start := time.Now()
		a := p.Do(t, "GET", path, nil)
		typ, msg := a.ErrorModel()
		if a.Status != 503 || typ != "ServiceUnavailableException" || !strings.Contains(msg, "catalog2") {
			t.Fatalf("GET %s with catalog2's metastore down: %d %s %q", path, a.Status, typ, msg)
		}
		t.Logf("GET %s: 503 after %v: %s", path, time.Since(start).Round(time.Millisecond), msg)
	}
	if a := p.Do(t, "GET", "/v1/catalog1/namespaces/default", nil); a.Status != 200 {
		t.Fatalf("catalog1 while catalog2 is down: %d %v", a.Status, a.Body)
	}
}

// Issue 20 item 4: a READ_ONLY catalog refuses every REST write with 403
// ForbiddenException naming its access mode, decided before any lock, file
// or metastore write, and /v1/config announces no write endpoint for it.
// PyIceberg's append to a table of that catalog is refused, not left
// CommitStateUnknown, and the table is unchanged.
func TestRESTReadOnlyCatalogRefusesEveryWriteBeforeALock(t *testing.T) {
	e2eutil.NeedHive(t)
	ns := e2eutil.Uniq("restro")
	direct := proxytest.Client(t, e2eutil.HMS2.URI)
	t.Cleanup(func() { _ = direct.DropDatabase(e2eutil.Ctx(t), ns, true, true) })
	rw := e2eutil.StartREST(t, e2eutil.TwoCatalogs(), app.TestHooks{})
	var read restRead
	e2eutil.RestPy(t, map[string]any{"scenario": "write", "uri": rw.Base, "warehouse": "catalog2", "ns": ns, "table": "events",
		"location": "file://" + t.TempDir(), "appends": 1}, &read)

	p := e2eutil.StartREST(t, e2eutil.TwoCatalogs("catalog.catalog2.access-mode=READ_ONLY"), app.TestHooks{})
	assertEndpoints(t, p, "catalog1", true)
	assertEndpoints(t, p, "catalog2", false)

	var refused struct {
		Refused   bool   `json:"refused"`
		ErrorType string `json:"error_type"`
		Message   string `json:"message"`
		Before    string `json:"before"`
		After     string `json:"after"`
	}
	e2eutil.RestPy(t, map[string]any{"scenario": "append_refused", "uri": p.Base, "warehouse": "catalog2", "ns": ns, "table": "events"}, &refused)
	if !refused.Refused || refused.ErrorType == "CommitStateUnknownException" || refused.Before != refused.After ||
		refused.Before != read.MetadataLocation {
		t.Fatalf("PyIceberg's append to a READ_ONLY catalog: %+v (the table was at %s)", refused, read.MetadataLocation)
	}
	t.Logf("PyIceberg's append: %s: %s", refused.ErrorType, refused.Message)

	// A client that ignores discovery: every write route, through both
	// prefixes, is 403 naming the access mode.
	schema := map[string]any{"type": "struct", "schema-id": 0, "fields": []any{map[string]any{"id": 1, "name": "id", "required": false, "type": "long"}}}
	for _, pre := range []struct{ prefix, ns string }{{"catalog2", ns}, {"catalog1", "catalog2__" + ns}} {
		id := func(name string) map[string]any { return map[string]any{"namespace": []string{pre.ns}, "name": name} }
		base := "/v1/" + pre.prefix
		nsPath := base + "/namespaces/" + pre.ns
		for _, w := range []struct {
			method, path string
			body         any
		}{
			{"POST", nsPath + "/tables", map[string]any{"name": "x", "schema": schema}},
			{"POST", nsPath + "/tables/events", map[string]any{"requirements": []any{}, "updates": []any{map[string]any{"action": "set-properties", "updates": map[string]string{"k": "v"}}}}},
			{"DELETE", nsPath + "/tables/events", nil},
			{"DELETE", nsPath + "/tables/events?purgeRequested=true", nil},
			{"POST", base + "/tables/rename", map[string]any{"source": id("events"), "destination": id("moved")}},
			{"POST", nsPath + "/register", map[string]any{"name": "r", "metadata-location": read.MetadataLocation}},
			{"POST", nsPath + "/views", map[string]any{"name": "v", "schema": schema, "view-version": map[string]any{"version-id": 1}}},
			{"POST", nsPath + "/views/v", map[string]any{"requirements": []any{}, "updates": []any{}}},
			{"DELETE", nsPath + "/views/v", nil},
			{"POST", base + "/views/rename", map[string]any{"source": id("v"), "destination": id("w")}},
			{"POST", base + "/namespaces", map[string]any{"namespace": []string{pre.ns + "x"}}},
			{"POST", nsPath + "/properties", map[string]any{"updates": map[string]string{"k": "v"}}},
			{"DELETE", nsPath, nil},
			{"POST", base + "/transactions/commit", map[string]any{"table-changes": []any{map[string]any{"identifier": id("events"), "requirements": []any{}, "updates": []any{}}}}},
		} {
			a := p.Do(t, w.method, w.path, w.body)
			if typ, msg := a.ErrorModel(); a.Status != 403 || typ != "ForbiddenException" || !strings.Contains(msg, "is READ_ONLY (catalog.catalog2.access-mode)") {
				t.Errorf("%s %s on a READ_ONLY catalog: %d %s %q", w.method, w.path, a.Status, typ, msg)
			}
		}
	}
	// Nothing reached catalog2's metastore but reads: no lock, no write.
	for _, m := range []string{"lock", "create_table", "alter_table", "alter_table_with_environment_context", "drop_table",
		"create_database", "alter_database", "drop_database"} {
		if n := p.Metric(t, "hms_proxy_requests_total", "method", m, "catalog", "catalog2"); n != 0 {
			t.Errorf("%v %s calls reached catalog2 through the READ_ONLY proxy", n, m)
		}
	}
	got, err := direct.GetTable(e2eutil.Ctx(t), ns, "events")
	if err != nil || got.Parameters["metadata_location"] != read.MetadataLocation {
		t.Fatalf("the table changed: %v %v", err, got)
	}
}
