package restcatalog_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/restcatalog"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

var simpleSchema = map[string]any{
	"type": "struct", "schema-id": 0,
	"fields": []any{
		map[string]any{"id": 1, "name": "id", "type": "long", "required": true},
		map[string]any{"id": 2, "name": "name", "type": "string", "required": false},
		map[string]any{"id": 3, "name": "ts", "type": "timestamptz", "required": false},
		map[string]any{"id": 4, "name": "tags", "type": map[string]any{"type": "list", "element-id": 5, "element": "string", "element-required": false}, "required": false},
	},
}

// A table created through REST is an Iceberg table to a Hive client of the
// same metastore: table_type, metadata_location, the Hive-engine storage
// descriptor, columns, EXTERNAL.
func TestCreatedTableIsReadableAsIcebergByHive(t *testing.T) {
	e := newEnv(t, nil, nil)
	wh := t.TempDir()
	ns := uniq("hv")
	if a := e.do("POST", "/v1/catalog1/namespaces", map[string]any{"namespace": []string{ns}, "properties": map[string]string{"location": "file:" + wh + "/" + ns, "owner_team": "data"}}); a.Status != 200 {
		t.Fatalf("create namespace: %d %s", a.Status, a.Body)
	}
	a := e.do("POST", "/v1/catalog1/namespaces/"+ns+"/tables", map[string]any{"name": "events", "schema": simpleSchema})
	if a.Status != 200 {
		t.Fatalf("create table: %d %s", a.Status, a.Body)
	}
	res := a.json(t)
	loc, _ := res["metadata-location"].(string)
	if !strings.HasPrefix(loc, "file:"+wh+"/"+ns+"/events/metadata/00000-") {
		t.Fatalf("metadata-location %q not under the namespace location", loc)
	}
	if _, err := os.Stat(strings.TrimPrefix(loc, "file:")); err != nil {
		t.Fatalf("metadata file not written: %v", err)
	}

	tbl, err := e.hms().GetTable(tctx(t), ns, "events")
	if err != nil {
		t.Fatal(err)
	}
	p := tbl.Parameters
	for k, want := range map[string]string{
		"table_type": "ICEBERG", "metadata_location": loc, "EXTERNAL": "TRUE",
		"storage_handler": "org.apache.iceberg.mr.hive.HiveIcebergStorageHandler",
	} {
		if p[k] != want {
			t.Errorf("parameter %s=%q, want %q", k, p[k], want)
		}
	}
	if tbl.TableType != "EXTERNAL_TABLE" {
		t.Errorf("tableType %q", tbl.TableType)
	}
	sd := tbl.Sd
	if sd.InputFormat != "org.apache.iceberg.mr.hive.HiveIcebergInputFormat" || sd.OutputFormat != "org.apache.iceberg.mr.hive.HiveIcebergOutputFormat" ||
		sd.SerdeInfo.SerializationLib != "org.apache.iceberg.mr.hive.HiveIcebergSerDe" {
		t.Errorf("storage descriptor not Hive-readable: %s / %s / %s", sd.InputFormat, sd.OutputFormat, sd.SerdeInfo.SerializationLib)
	}
	var cols []string
	for _, c := range sd.Cols {
		cols = append(cols, c.Name+":"+c.Type)
	}
	if want := []string{"id:bigint", "name:string", "ts:timestamp with local time zone", "tags:array<string>"}; !slices.Equal(cols, want) {
		t.Errorf("columns %v, want %v", cols, want)
	}
	// The backend itself holds the same record (no proxy-only state).
	raw, err := direct(t, hms1).GetTable(tctx(t), ns, "events")
	if err != nil || raw.Parameters["metadata_location"] != loc {
		t.Fatalf("backend record: %v %v", err, raw)
	}
	// And REST loads it back.
	if a := e.do("GET", "/v1/catalog1/namespaces/"+ns+"/tables/events", nil); a.Status != 200 || a.json(t)["metadata-location"] != loc {
		t.Fatalf("load: %d %s", a.Status, a.Body)
	}
	if a := e.do("HEAD", "/v1/catalog1/namespaces/"+ns+"/tables/events", nil); a.Status != 204 || len(a.Body) != 0 {
		t.Fatalf("HEAD existing table: %d %q", a.Status, a.Body)
	}
	if a := e.do("HEAD", "/v1/catalog1/namespaces/"+ns+"/tables/nope", nil); a.Status != 404 || len(a.Body) != 0 {
		t.Fatalf("HEAD missing table: %d %q", a.Status, a.Body)
	}
}

func (e *env) load(t *testing.T, prefix, ns, table string) map[string]any {
	t.Helper()
	a := e.do("GET", "/v1/"+prefix+"/namespaces/"+ns+"/tables/"+table, nil)
	if a.Status != 200 {
		t.Fatalf("load %s.%s: %d %s", ns, table, a.Status, a.Body)
	}
	return a.json(t)
}

func props(m map[string]any) map[string]any {
	return m["metadata"].(map[string]any)["properties"].(map[string]any)
}

func setProps(uuid any, kv map[string]string, ns, table string) map[string]any {
	return map[string]any{
		"identifier":   map[string]any{"namespace": []string{ns}, "name": table},
		"requirements": []any{map[string]any{"type": "assert-table-uuid", "uuid": uuid}},
		"updates":      []any{map[string]any{"action": "set-properties", "updates": kv}},
	}
}

// POST /v1/{prefix}/transactions/commit with the body Iceberg's Java
// RESTSessionCatalog sends: every change applies, or none does when one
// requirement fails or one table's catalog takes no writes.
func TestMultiTableTransaction(t *testing.T) {
	e := newEnv(t, nil, nil)
	ns := e.createTable(t, "catalog1", "tx", "a")
	if a := e.do("POST", "/v1/catalog1/namespaces/"+ns+"/tables", map[string]any{"name": "b", "schema": simpleSchema}); a.Status != 200 {
		t.Fatalf("create b: %d %s", a.Status, a.Body)
	}
	ua, ub := e.load(t, "catalog1", ns, "a")["metadata"].(map[string]any)["table-uuid"], e.load(t, "catalog1", ns, "b")["metadata"].(map[string]any)["table-uuid"]

	a := e.do("POST", "/v1/catalog1/transactions/commit", map[string]any{"table-changes": []any{
		setProps(ua, map[string]string{"step": "1"}, ns, "a"), setProps(ub, map[string]string{"step": "1"}, ns, "b")}})
	if a.Status != 204 || len(a.Body) != 0 {
		t.Fatalf("transaction: %d %s", a.Status, a.Body)
	}
	for _, tbl := range []string{"a", "b"} {
		if p := props(e.load(t, "catalog1", ns, tbl)); p["step"] != "1" {
			t.Errorf("%s not committed: %v", tbl, p)
		}
	}
	locA := e.load(t, "catalog1", ns, "a")["metadata-location"]

	// One failed requirement: neither table changes, no file is left.
	a = e.do("POST", "/v1/catalog1/transactions/commit", map[string]any{"table-changes": []any{
		setProps(ua, map[string]string{"step": "2"}, ns, "a"),
		setProps("00000000-0000-0000-0000-000000000009", map[string]string{"step": "2"}, ns, "b")}})
	if typ, _ := a.errorModel(t, 409); typ != "CommitFailedException" {
		t.Errorf("type %s", typ)
	}
	if got := e.load(t, "catalog1", ns, "a"); got["metadata-location"] != locA || props(got)["step"] != "1" {
		t.Errorf("table a changed by a failed transaction: %v", props(got))
	}

	// A table of a catalog without writer isolation: 403 before anything.
	ns2 := uniq("tx2")
	a = e.do("POST", "/v1/catalog1/transactions/commit", map[string]any{"table-changes": []any{
		setProps(ua, map[string]string{"step": "3"}, ns, "a"),
		setProps(ub, map[string]string{"step": "3"}, "catalog2__"+ns2, "b")}})
	if typ, msg := a.errorModel(t, 403); typ != "ForbiddenException" || !strings.Contains(msg, "catalog2") {
		t.Errorf("%s: %s", typ, msg)
	}
	if props(e.load(t, "catalog1", ns, "a"))["step"] != "1" {
		t.Error("table a changed by a refused transaction")
	}
	// The same table twice is bad input.
	a = e.do("POST", "/v1/catalog1/transactions/commit", map[string]any{"table-changes": []any{
		setProps(ua, map[string]string{"x": "1"}, ns, "a"), setProps(ua, map[string]string{"x": "2"}, ns, "a")}})
	if typ, msg := a.errorModel(t, 400); typ != "BadRequestException" || !strings.Contains(msg, "twice") {
		t.Errorf("%s: %s", typ, msg)
	}
}

// An Iceberg view created through REST is an Iceberg view in the metastore
// (VIRTUAL_VIEW, table_type=ICEBERG-VIEW, the SQL as view text); replace and
// rename work; a table is not a view and a view is not a table.
func TestViewsInTheMetastore(t *testing.T) {
	e := newEnv(t, nil, nil)
	ns := e.createTable(t, "catalog1", "vw", "base")
	version := map[string]any{"version-id": 1, "schema-id": 0, "timestamp-ms": 1700000000000, "summary": map[string]string{},
		"default-namespace": []string{ns},
		"representations":   []any{map[string]any{"type": "sql", "sql": "SELECT id FROM base", "dialect": "trino"}, map[string]any{"type": "sql", "sql": "SELECT `id` FROM base", "dialect": "hive"}}}
	a := e.do("POST", "/v1/catalog1/namespaces/"+ns+"/views", map[string]any{"name": "v", "schema": simpleSchema, "view-version": version, "properties": map[string]string{"comment": "ids"}})
	if a.Status != 200 {
		t.Fatalf("create view: %d %s", a.Status, a.Body)
	}
	loc := a.json(t)["metadata-location"]
	rec, err := e.hms().GetTable(tctx(t), ns, "v")
	if err != nil {
		t.Fatal(err)
	}
	if rec.TableType != "VIRTUAL_VIEW" || rec.Parameters["table_type"] != "ICEBERG-VIEW" || rec.Parameters["metadata_location"] != loc || rec.ViewOriginalText != "SELECT `id` FROM base" {
		t.Errorf("view record: type %s params %v text %q", rec.TableType, rec.Parameters, rec.ViewOriginalText)
	}
	if a := e.do("GET", "/v1/catalog1/namespaces/"+ns+"/tables/v", nil); a.Status != 404 {
		t.Errorf("view loaded as a table: %d", a.Status)
	}
	if a := e.do("GET", "/v1/catalog1/namespaces/"+ns+"/views/base", nil); a.Status != 404 {
		t.Errorf("table loaded as a view: %d", a.Status)
	}
	uuid := e.do("GET", "/v1/catalog1/namespaces/"+ns+"/views/v", nil).json(t)["metadata"].(map[string]any)["view-uuid"]
	v2 := map[string]any{"version-id": 2, "schema-id": 0, "timestamp-ms": 1700000001000, "summary": map[string]string{},
		"default-namespace": []string{ns}, "representations": []any{map[string]any{"type": "sql", "sql": "SELECT id, name FROM base", "dialect": "hive"}, map[string]any{"type": "sql", "sql": "SELECT id, name FROM base", "dialect": "trino"}}}
	a = e.do("POST", "/v1/catalog1/namespaces/"+ns+"/views/v", map[string]any{
		"requirements": []any{map[string]any{"type": "assert-view-uuid", "uuid": uuid}},
		"updates":      []any{map[string]any{"action": "add-view-version", "view-version": v2}, map[string]any{"action": "set-current-view-version", "view-version-id": -1}}})
	if a.Status != 200 {
		t.Fatalf("replace view: %d %s", a.Status, a.Body)
	}
	if rec, _ := e.hms().GetTable(tctx(t), ns, "v"); rec.ViewOriginalText != "SELECT id, name FROM base" || rec.Parameters["previous_metadata_location"] != loc {
		t.Errorf("replaced view record: %q %v", rec.ViewOriginalText, rec.Parameters)
	}
	if a := e.do("POST", "/v1/catalog1/views/rename", map[string]any{"source": map[string]any{"namespace": []string{ns}, "name": "v"}, "destination": map[string]any{"namespace": []string{ns}, "name": "v2"}}); a.Status != 204 {
		t.Fatalf("rename view: %d %s", a.Status, a.Body)
	}
	if a := e.do("HEAD", "/v1/catalog1/namespaces/"+ns+"/views/v2", nil); a.Status != 204 {
		t.Errorf("renamed view: %d", a.Status)
	}
	if ids := e.do("GET", "/v1/catalog1/namespaces/"+ns+"/views", nil).json(t)["identifiers"].([]any); len(ids) != 1 {
		t.Errorf("views listed: %v", ids)
	}
}

// The Hive-engine descriptor: on by default; the table's engine.hive.enabled
// wins; then catalog.<n>.conf.iceberg.engine.hive.enabled; then
// rest-catalog.hive-engine-descriptor.
func TestHiveEngineDescriptorChoice(t *testing.T) {
	e := newEnv(t, map[string]string{"catalog.hive4.conf.iceberg.engine.hive.enabled": "false"}, nil)
	e.setIsolated("hive4", true)
	off := func(t *testing.T, c interface {
		GetTable(ctx context.Context, db, tbl string) (*thriftgen.Table, error)
	}, db, tbl string) bool {
		t.Helper()
		rec, err := c.GetTable(tctx(t), db, tbl)
		if err != nil {
			t.Fatal(err)
		}
		_, handler := rec.Parameters["storage_handler"]
		if handler != (rec.Sd.InputFormat == "org.apache.iceberg.mr.hive.HiveIcebergInputFormat") {
			t.Errorf("%s.%s: storage_handler and input format disagree: %v / %s", db, tbl, rec.Parameters, rec.Sd.InputFormat)
		}
		if !handler && rec.Sd.InputFormat != "org.apache.hadoop.mapred.FileInputFormat" {
			t.Errorf("%s.%s: input format %s", db, tbl, rec.Sd.InputFormat)
		}
		return !handler
	}
	ns := e.createTable(t, "catalog1", "he", "plain")
	if off(t, e.hms(), ns, "plain") {
		t.Error("default: descriptor off")
	}
	if a := e.do("POST", "/v1/catalog1/namespaces/"+ns+"/tables", map[string]any{"name": "optout", "schema": simpleSchema, "properties": map[string]string{"engine.hive.enabled": "false"}}); a.Status != 200 {
		t.Fatal(a.Status, string(a.Body))
	}
	if !off(t, e.hms(), ns, "optout") {
		t.Error("engine.hive.enabled=false on the table: descriptor on")
	}
	ns4 := e.createTable(t, "hive4", "he", "bycatalog")
	if !off(t, e.hms(), "hive4__"+ns4, "bycatalog") {
		t.Error("catalog.hive4.conf.iceberg.engine.hive.enabled=false: descriptor on")
	}
	if a := e.do("POST", "/v1/hive4/namespaces/"+ns4+"/tables", map[string]any{"name": "optin", "schema": simpleSchema, "properties": map[string]string{"engine.hive.enabled": "true"}}); a.Status != 200 {
		t.Fatal(a.Status, string(a.Body))
	}
	if off(t, e.hms(), "hive4__"+ns4, "optin") {
		t.Error("engine.hive.enabled=true on the table does not win over the catalog setting")
	}
	e2 := newEnv(t, nil, func(o *restcatalog.Options) { o.HiveEngineDescriptor = false })
	ns2 := e2.createTable(t, "catalog1", "he", "optionoff")
	if !off(t, e2.hms(), ns2, "optionoff") {
		t.Error("rest-catalog.hive-engine-descriptor=false: descriptor on")
	}
	// A commit keeps the choice (it rewrites the descriptor every time).
	uuid := e.load(t, "catalog1", ns, "plain")["metadata"].(map[string]any)["table-uuid"]
	if a := e.do("POST", "/v1/catalog1/namespaces/"+ns+"/tables/plain", setProps(uuid, map[string]string{"k": "v"}, ns, "plain")); a.Status != 200 {
		t.Fatal(a.Status, string(a.Body))
	}
	if off(t, e.hms(), ns, "plain") {
		t.Error("a commit dropped the descriptor")
	}
}

// /v1/config discovery: warehouse selects the prefix, endpoints say what
// each catalog allows, unknown warehouses are 400 and unknown prefixes 404.
func TestConfigDiscovery(t *testing.T) {
	e := newEnv(t, nil, nil)
	cfg := func(path string) (string, []string) {
		a := e.do("GET", path, nil)
		if a.Status != 200 {
			t.Fatalf("%s: %d %s", path, a.Status, a.Body)
		}
		var c struct {
			Overrides map[string]string `json:"overrides"`
			Defaults  map[string]string `json:"defaults"`
			Endpoints []string          `json:"endpoints"`
		}
		if err := json.Unmarshal(a.Body, &c); err != nil || c.Defaults == nil {
			t.Fatalf("%s: %v %s", path, err, a.Body)
		}
		return c.Overrides["prefix"], c.Endpoints
	}
	p, eps := cfg("/v1/config")
	if p != "catalog1" || len(eps) != 22 || !slices.Contains(eps, "POST /v1/{prefix}/transactions/commit") {
		t.Errorf("default: prefix %s, %d endpoints %v", p, len(eps), eps)
	}
	p, eps = cfg("/v1/config?warehouse=catalog2")
	if p != "catalog2" || len(eps) != 9 || slices.ContainsFunc(eps, func(s string) bool { return !strings.HasPrefix(s, "GET ") && !strings.HasPrefix(s, "HEAD ") }) {
		t.Errorf("catalog2: prefix %s, endpoints %v", p, eps)
	}
	if p, eps = cfg("/v1/hive4/config"); p != "hive4" || len(eps) != 9 {
		t.Errorf("hive4 prefix config: %s %v", p, eps)
	}
	e.setIsolated("catalog2", true)
	if _, eps = cfg("/v1/config?warehouse=CATALOG2"); len(eps) != 22 {
		t.Errorf("catalog2 with isolated writes: %d endpoints", len(eps))
	}
	if typ, _ := e.do("GET", "/v1/nope/config", nil).errorModel(t, 404); typ != "NoSuchCatalogException" {
		t.Errorf("unknown prefix config: %s", typ)
	}
	if n := metric(t, e, "hms_proxy_rest_listener_info", "bind_host", "127.0.0.1", "port", "0"); n != 1 {
		t.Errorf("listener info %v", n)
	}
	if n := metric(t, e, "hms_proxy_rest_request_duration_seconds", "prefix", "catalog2", "route", "GET /v1/config"); n != 2 {
		t.Errorf("duration samples for warehouse=catalog2: %v", n)
	}
	// The audit hook saw each request with its route, prefix and status.
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.requests) != 5 || e.requests[1].Route != "GET /v1/config" || e.requests[1].Prefix != "catalog2" || e.requests[1].Status != 200 ||
		e.requests[4].Status != 404 || e.requests[4].Error != "NoSuchCatalogException" || e.requests[0].Caller.RemoteAddr == "" {
		t.Errorf("audit hook records: %+v", e.requests)
	}
}

// REST requests go through the router's policy: a READ_ONLY catalog
// refuses REST writes as it refuses Thrift ones, even when its locks isolate
// writers, and the answer is a 403 naming the policy.
func TestRouterPolicyApplies(t *testing.T) {
	e := newEnv(t, map[string]string{"catalog.catalog1.access-mode": "READ_ONLY"}, nil)
	ns := uniq("ro")
	typ, msg := e.do("POST", "/v1/catalog1/namespaces", map[string]any{"namespace": []string{ns}}).errorModel(t, 403)
	if typ != "ForbiddenException" || !strings.Contains(msg, "READ_ONLY") {
		t.Errorf("%s: %s", typ, msg)
	}
	if _, err := direct(t, hms1).GetDatabase(tctx(t), ns); err == nil {
		t.Error("the refused namespace reached the metastore")
	}
	if a := e.do("GET", "/v1/catalog1/namespaces", nil); a.Status != 200 {
		t.Errorf("reads on a READ_ONLY catalog: %d %s", a.Status, a.Body)
	}
}

// write.metadata.compression-codec=gzip: the metadata files are gzip
// (.gz.metadata.json), and they read back on load and commit.
func TestGzipMetadataFiles(t *testing.T) {
	e := newEnv(t, nil, nil)
	ns := uniq("gz")
	if a := e.do("POST", "/v1/catalog1/namespaces", map[string]any{"namespace": []string{ns}, "properties": map[string]string{"location": "file:" + t.TempDir() + "/" + ns}}); a.Status != 200 {
		t.Fatal(a.Status, string(a.Body))
	}
	a := e.do("POST", "/v1/catalog1/namespaces/"+ns+"/tables", map[string]any{"name": "z", "schema": simpleSchema, "properties": map[string]string{"write.metadata.compression-codec": "gzip"}})
	if a.Status != 200 {
		t.Fatal(a.Status, string(a.Body))
	}
	loc := a.json(t)["metadata-location"].(string)
	b, err := os.ReadFile(localPath(loc))
	if !strings.HasSuffix(loc, ".gz.metadata.json") || err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("metadata file %s is not gzip: %v", loc, err)
	}
	uuid := e.load(t, "catalog1", ns, "z")["metadata"].(map[string]any)["table-uuid"]
	if a := e.do("POST", "/v1/catalog1/namespaces/"+ns+"/tables/z", setProps(uuid, map[string]string{"k": "v"}, ns, "z")); a.Status != 200 {
		t.Fatal(a.Status, string(a.Body))
	}
	if got := e.load(t, "catalog1", ns, "z"); props(got)["k"] != "v" || !strings.Contains(got["metadata-location"].(string), "/00001-") {
		t.Errorf("after a commit: %v %v", got["metadata-location"], props(got))
	}
}
