package restcatalog_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type lifecycleResult struct {
	Prefix              string            `json:"prefix"`
	NamespaceProperties map[string]string `json:"namespace_properties"`
	IDs                 []int64           `json:"ids"`
	Snapshots           int               `json:"snapshots"`
	MetadataLocation    string            `json:"metadata_location"`
	TableLocation       string            `json:"table_location"`
	Namespaces          [][]string        `json:"namespaces"`
	DefaultNamespaces   [][]string        `json:"default_namespaces"`
	Tables              [][]string        `json:"tables"`
	TablesAfterRename   [][]string        `json:"tables_after_rename"`
	IDsAfterRename      []int64           `json:"ids_after_rename"`
	Files               []string          `json:"files"`
	LoadedAfterPurge    bool              `json:"loaded_after_purge"`
}

// localPath turns file:/p, file:///p into /p.
func localPath(loc string) string {
	loc = strings.TrimPrefix(loc, "file:")
	for strings.HasPrefix(loc, "//") {
		loc = loc[1:]
	}
	return loc
}

func containsNS(list [][]string, name string) bool {
	return slices.ContainsFunc(list, func(n []string) bool { return len(n) == 1 && n[0] == name })
}

// runLifecycle runs the pyiceberg life cycle on one catalog (warehouse ""
// is the default) and checks what every catalog must show.
func runLifecycle(t *testing.T, e *env, warehouse, wantPrefix string) (lifecycleResult, string) {
	t.Helper()
	ns := uniq("py")
	wh := t.TempDir()
	nsLoc := "file:" + wh + "/" + ns
	sentinel := filepath.Join(wh, ns, "orders", "data", "unreferenced.parquet")
	var r lifecycleResult
	runPy(t, "pyiceberg_scenario.py", map[string]any{
		"scenario": "lifecycle", "uri": e.url, "warehouse": warehouse, "ns": ns, "location": nsLoc,
		"sentinel": sentinel, "default_uri_check": true,
	}, &r)
	if r.Prefix != wantPrefix {
		t.Errorf("warehouse %q bound to prefix %q, want %q", warehouse, r.Prefix, wantPrefix)
	}
	if r.NamespaceProperties["location"] != nsLoc {
		t.Errorf("namespace location %q, want %q", r.NamespaceProperties["location"], nsLoc)
	}
	if want := []int64{0, 1, 2, 3, 4}; !slices.Equal(r.IDs, want) || r.Snapshots != 2 {
		t.Errorf("after two appends: ids %v snapshots %d, want %v and 2", r.IDs, r.Snapshots, want)
	}
	if !strings.HasPrefix(r.TableLocation, nsLoc+"/orders") {
		t.Errorf("table location %q not under the namespace's %q", r.TableLocation, nsLoc)
	}
	if !containsNS(r.Namespaces, ns) {
		t.Errorf("namespace %s not listed under its prefix: %v", ns, r.Namespaces)
	}
	if len(r.Tables) != 1 || r.Tables[0][1] != "orders" || len(r.TablesAfterRename) != 1 || r.TablesAfterRename[0][1] != "orders_renamed" {
		t.Errorf("tables %v, after rename %v", r.Tables, r.TablesAfterRename)
	}
	if !slices.Equal(r.IDsAfterRename, r.IDs) {
		t.Errorf("renamed table reads %v, want %v", r.IDsAfterRename, r.IDs)
	}
	// Purge: every file the metadata named is gone, nothing else is.
	if r.LoadedAfterPurge {
		t.Error("the purged table still loads")
	}
	if len(r.Files) < 7 { // 2 data, 2 manifests, 2 lists, 3 metadata files at least
		t.Errorf("only %d table files listed: %v", len(r.Files), r.Files)
	}
	for _, f := range r.Files {
		if _, err := os.Stat(localPath(f)); !os.IsNotExist(err) {
			t.Errorf("purge left %s (%v)", f, err)
		}
	}
	if _, err := os.Stat(sentinel); err != nil {
		t.Errorf("purge deleted a file no metadata names: %v", err)
	}
	return r, ns
}

// pyiceberg against the default catalog: namespace and table DDL, two
// appends, a scan, listings across catalogs, rename, purge.
func TestPyIcebergDefaultCatalog(t *testing.T) {
	e := newEnv(t, nil, nil)
	r, ns := runLifecycle(t, e, "", "catalog1")
	// The default prefix shows the other catalogs' databases under their
	// federated names.
	for _, want := range []string{"default", "catalog2__default", "hive4__default"} {
		if !containsNS(r.Namespaces, want) {
			t.Errorf("default prefix does not list %s: %v", want, r.Namespaces)
		}
	}
	if _, err := direct(t, hms1).GetTable(tctx(t), ns, "orders_renamed"); err == nil {
		t.Error("the purged table is still in the metastore")
	}
	if n := metric(t, e, "hms_proxy_rest_requests_total", "prefix", "catalog1", "route", "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}", "status", "204"); n != 1 {
		t.Errorf("purge counted %v times in hms_proxy_rest_requests_total", n)
	}
}

// pyiceberg against a non-default catalog bound by warehouse=<catalog> whose
// locks do not isolate writers: refused, and nothing reaches the metastore.
func TestPyIcebergWriteGate(t *testing.T) {
	e := newEnv(t, nil, nil)
	ns := uniq("py")
	var refused struct {
		Refused   bool   `json:"refused"`
		ErrorType string `json:"error_type"`
		Message   string `json:"message"`
	}
	runPy(t, "pyiceberg_scenario.py", map[string]any{"scenario": "write_refused", "uri": e.url, "warehouse": "catalog2", "ns": ns, "location": "file:" + t.TempDir()}, &refused)
	// pyiceberg learns from /v1/config's endpoints that catalog2 takes no
	// writes and refuses before sending.
	if !refused.Refused || refused.ErrorType != "NotImplementedError" || !strings.Contains(refused.Message, "POST /v1/{prefix}/namespaces") {
		t.Fatalf("write on catalog2 without isolation: %+v", refused)
	}
	// A client that ignores discovery gets the 403 naming the resolved
	// catalog, by catalog2's prefix and by the federated name alike.
	for _, a := range []answer{
		e.do("POST", "/v1/catalog2/namespaces", map[string]any{"namespace": []string{ns}}),
		e.do("POST", "/v1/catalog1/namespaces", map[string]any{"namespace": []string{"catalog2__" + ns}}),
	} {
		typ, msg := a.errorModel(t, 403)
		if typ != "ForbiddenException" || !strings.Contains(msg, "catalog 'catalog2'") {
			t.Errorf("refusal %s: %s", typ, msg)
		}
	}
	if _, err := direct(t, hms2).GetDatabase(tctx(t), ns); err == nil {
		t.Fatal("the refused create_namespace reached the metastore")
	}

}

// The whole pyiceberg life cycle on a non-default catalog whose writes are
// isolated: hive4 (Hive 4.1.0) with iceberg.engine.hive.lock-enabled=false,
// so commits rely on Hive 4's compare-and-swap of metadata_location and take
// no metastore lock (see TestNonDefaultHive3CatalogLocks for the locking
// path, which needs the router's lock shim).
func TestPyIcebergNonDefaultCatalog(t *testing.T) {
	e := newEnv(t, map[string]string{"catalog.hive4.conf.iceberg.engine.hive.lock-enabled": "false"}, nil)
	e.setIsolated("hive4", true)
	r, ns := runLifecycle(t, e, "hive4", "hive4")
	// A pure view: hive4's own databases under their own names.
	if !containsNS(r.Namespaces, "default") || slices.ContainsFunc(r.Namespaces, func(n []string) bool { return strings.Contains(n[0], "__") }) {
		t.Errorf("hive4 prefix lists %v", r.Namespaces)
	}
	if !containsNS(r.DefaultNamespaces, "hive4__"+ns) {
		t.Errorf("the default prefix does not show hive4__%s: %v", ns, r.DefaultNamespaces)
	}
	if _, err := direct(t, hms4).GetDatabase(tctx(t), ns); err != nil {
		t.Errorf("namespace not created in hive4's metastore: %v", err)
	}
	if _, err := direct(t, hms1).GetDatabase(tctx(t), ns); err == nil {
		t.Error("hive4's namespace leaked into catalog1's metastore")
	}
}

// Two pyiceberg writers on one table: the second's commit is refused with
// CommitFailedException (409); its retry on fresh metadata succeeds, by hand
// (retries off) and by pyiceberg's own retry (the default); both appends
// survive either way.
func TestPyIcebergCommitConflict(t *testing.T) {
	e := newEnv(t, nil, nil)
	var r map[string]any
	runPy(t, "pyiceberg_scenario.py", map[string]any{"scenario": "conflict", "uri": e.url, "ns": uniq("cf"), "location": "file:" + t.TempDir() + "/cf"}, &r)
	if r["manual_second_writer"] != "CommitFailedException" {
		t.Errorf("second writer with retries off: %v", r["manual_second_writer"])
	}
	if r["auto_second_writer"] != "committed" {
		t.Errorf("second writer with pyiceberg's retries: %v", r["auto_second_writer"])
	}
	for _, name := range []string{"manual", "auto"} {
		var ids []int64
		for _, v := range r[name+"_ids"].([]any) {
			ids = append(ids, int64(v.(float64)))
		}
		if want := []int64{0, 1, 100, 101}; !slices.Equal(ids, want) || r[name+"_snapshots"] != 2.0 {
			t.Errorf("%s: ids %v snapshots %v, want %v and 2", name, ids, r[name+"_snapshots"], want)
		}
	}
	if n := metric(t, e, "hms_proxy_rest_requests_total", "route", "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}", "status", "409"); n != 2 {
		t.Errorf("%v commits answered 409, want 2 (one per second writer)", n)
	}
}

// pyiceberg's other catalog calls: namespace properties, a create-table
// transaction (stage-create, then a commit with assert-create), register,
// Iceberg views, drops. The view is an Iceberg view to Hive as well.
func TestPyIcebergCatalogOperations(t *testing.T) {
	e := newEnv(t, nil, nil)
	ns := uniq("ops")
	var r map[string]any
	runPy(t, "pyiceberg_scenario.py", map[string]any{"scenario": "catalog_ops", "uri": e.url, "ns": ns, "location": "file:" + t.TempDir() + "/" + ns}, &r)
	check := func(key string, want any) {
		t.Helper()
		got, _ := json.Marshal(r[key])
		w, _ := json.Marshal(want)
		if string(got) != string(w) {
			t.Errorf("%s = %s, want %s", key, got, w)
		}
	}
	check("props_summary", map[string]any{"updated": []string{"new", "team"}, "removed": []string{"old"}, "missing": []string{"absent"}})
	props := r["props"].(map[string]any)
	if props["team"] != "b" || props["new"] != "y" || props["old"] != nil {
		t.Errorf("namespace properties after update: %v", props)
	}
	check("staged_exists_before_commit", false)
	check("staged_ids", []int{0, 1, 2})
	check("staged_exists_after_drop", false)
	check("registered_ids", []int{0, 1, 2})
	check("registered_metadata_location", true)
	check("views", [][]string{{ns, "v_ids"}})
	check("view_exists", true)
	check("view_sql", "SELECT id FROM registered")
	check("tables_exclude_views", [][]string{{ns, "registered"}})
	check("view_exists_after_drop", false)
	check("namespace_exists_after_drop", false)
	if _, err := direct(t, hms1).GetDatabase(tctx(t), ns); err == nil {
		t.Error("the dropped namespace is still in the metastore")
	}
}

// A second real client: DuckDB's iceberg extension attaches the REST
// catalog (warehouse = the catalog) and reads the table pyiceberg wrote, on
// the default and on a non-default catalog.
func TestDuckDBReadsTheSameTables(t *testing.T) {
	e := newEnv(t, map[string]string{"catalog.hive4.conf.iceberg.engine.hive.lock-enabled": "false"}, nil)
	e.setIsolated("hive4", true)
	for _, cat := range []string{"catalog1", "hive4"} {
		t.Run(cat, func(t *testing.T) {
			ns := uniq("dk")
			var p prepared
			runPy(t, "pyiceberg_scenario.py", map[string]any{"scenario": "prepare_table", "uri": e.url, "warehouse": cat, "ns": ns, "table": "t", "location": "file:" + t.TempDir() + "/" + ns}, &p)
			var r struct {
				IDs    []int64  `json:"ids"`
				Tables []string `json:"tables"`
			}
			// prepare_table appends ids 0 and 1: pyiceberg must read them
			// back itself, so two empty reads cannot agree
			if !slices.Equal(p.IDs, []int64{0, 1}) {
				t.Fatalf("pyiceberg reads back ids %v of the table it wrote, want [0 1]", p.IDs)
			}
			runPy(t, "duckdb_read.py", map[string]any{"uri": e.url, "warehouse": cat, "ns": ns, "table": "t"}, &r)
			if !slices.Equal(r.IDs, p.IDs) || !slices.Equal(r.Tables, []string{"t"}) {
				t.Errorf("DuckDB reads ids %v tables %v; pyiceberg wrote %v", r.IDs, r.Tables, p.IDs)
			}
		})
	}
}
