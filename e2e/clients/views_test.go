package clients

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// textTable is a Hive text table (LazySimpleSerDe, ^A between fields) at a
// local directory holding rows; it returns the directory.
func textTable(t *testing.T, c *thriftgen.Client, db, name string, rows ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "part-00000"), []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tb := e2eutil.Table(db, name)
	tb.Sd.Cols = []*thriftgen.FieldSchema{{Name: "id", Type: "int"}, {Name: "name", Type: "string"}}
	tb.Sd.Location = "file://" + dir
	if err := c.CreateTable(e2eutil.Ctx(t), tb); err != nil {
		t.Fatalf("create table %s.%s: %v", db, name, err)
	}
	return dir
}

// Views through the proxy, read by a real SQL engine: pyspark 3.5.9 with
// Hive support (its Hive 2.3.9 client) pointed at the proxy, then at
// catalog2's metastore itself. The default catalog holds a table of the
// same database and table name with other rows, so a view that resolves a
// name in the wrong catalog reads visibly wrong rows.
//
//   - A view created through the proxy in catalog2 (qualified, and one-part
//     names under USE) is stored with backend names and Spark's namespace
//     properties rewritten, and reads catalog2's rows through the proxy and
//     directly on the metastore.
//   - A Hive-style view created directly on catalog2 (`sdb`.`t`) and a view
//     Spark created there (one-part name, its namespace `sdb` recorded) read
//     catalog2's table through the proxy, not the default catalog's.
//
// The Spark sessions run one after the other in one JVM: on catalog2's
// metastore (its table and view), through the proxy, on the metastore again.
//   - A view in catalog2 that names the default catalog's table is refused.
//   - With guard.transactional-ddl.mode=REWRITE_TRANSACTIONAL_TO_EXTERNAL a
//     transactional table Spark creates becomes an external purge table
//     (the standalone 3.1.3 metastore would refuse the ACID table itself),
//     and Spark's DROP TABLE purges its data under catalog2's allow-listed
//     warehouse, after the metastore dropped the table.
func TestViewsReadTheRightRowsWithSpark(t *testing.T) {
	e2eutil.NeedHive(t)
	direct1, direct2 := proxytest.Client(t, e2eutil.HMS1.URI), proxytest.Client(t, e2eutil.HMS2.URI)
	db := e2eutil.Uniq("vsdb")
	e2eutil.MkDB(t, direct1, db)
	e2eutil.MkDB(t, direct2, db)
	textTable(t, direct1, db, "t", "100\x01wrong")
	hv := e2eutil.HiveView(db, "hv", "select id, name from "+db+".t", "select `t`.`id`, `t`.`name` from `"+db+"`.`t`", "id int", "name string")
	if err := direct2.CreateTable(e2eutil.Ctx(t), hv); err != nil {
		t.Fatal(err)
	}
	warehouse := filepath.Join(e2eutil.HMS2.Dir, "warehouse")
	p := proxytest.Start(t, e2eutil.TwoCatalogs(
		"guard.transactional-ddl.mode=REWRITE_TRANSACTIONAL_TO_EXTERNAL",
		"guard.transactional-ddl.client-addresses=127.0.0.1",
		"federation.external-table-drop-purge.mode=BEST_EFFORT",
		"catalog.catalog2.conf.hms.proxy.external-table-drop-purge.allowed-prefixes=file://"+warehouse+"/"))
	ext := "catalog2__" + db
	// Phase 1, directly on catalog2's metastore: Spark's table and a view
	// Spark creates there with a one-part name (its namespace recorded).
	direct := []e2eutil.SparkStep{
		{SQL: "CREATE TABLE " + db + ".t (id INT, name STRING) STORED AS PARQUET"},
		{SQL: "INSERT INTO " + db + ".t VALUES (1, 'a'), (2, 'b')"},
		{SQL: "USE " + db},
		{SQL: "CREATE VIEW sv AS SELECT id, name FROM t"},
	}
	// Phase 2, through the proxy.
	steps := []e2eutil.SparkStep{
		{SQL: "CREATE VIEW " + ext + ".v AS SELECT id, name FROM " + ext + ".t WHERE id > 0"}, // 0
		{SQL: "USE " + ext}, // 1
		{SQL: "CREATE VIEW v2 AS SELECT t.id FROM t JOIN " + ext + ".t u ON t.id = u.id"},                    // 2
		{SQL: "CREATE VIEW " + ext + ".bad AS SELECT id FROM " + db + ".t"},                                  // 3
		{SQL: "SELECT * FROM " + ext + ".v ORDER BY id", Fetch: true},                                        // 4
		{SQL: "SELECT * FROM v2 ORDER BY id", Fetch: true},                                                   // 5
		{SQL: "SELECT * FROM " + ext + ".hv ORDER BY id", Fetch: true},                                       // 6
		{SQL: "SELECT * FROM " + ext + ".sv ORDER BY id", Fetch: true},                                       // 7
		{SQL: "SELECT * FROM " + db + ".t", Fetch: true},                                                     // 8
		{SQL: "CREATE TABLE " + ext + ".acid (id INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')"}, // 9
		{SQL: "INSERT INTO " + ext + ".acid VALUES (7)"},                                                     // 10
		{SQL: "SELECT * FROM " + ext + ".acid", Fetch: true},                                                 // 11
		{SQL: "SHOW TBLPROPERTIES " + ext + ".acid", Fetch: true},                                            // 12
		{SQL: "DESCRIBE TABLE EXTENDED " + ext + ".acid", Fetch: true},                                       // 13
		{SQL: "DROP TABLE " + ext + ".acid"},                                                                 // 14
	}
	// Phase 3, directly on catalog2's metastore again: every view.
	after := []e2eutil.SparkStep{
		{SQL: "SELECT * FROM " + db + ".v ORDER BY id", Fetch: true},
		{SQL: "SELECT * FROM " + db + ".v2 ORDER BY id", Fetch: true},
		{SQL: "SELECT * FROM " + db + ".hv ORDER BY id", Fetch: true},
		{SQL: "SELECT * FROM " + db + ".sv ORDER BY id", Fetch: true},
	}
	phases := runSpark(t, e2eutil.SparkPhase{URI: e2eutil.HMS2.URI, Steps: direct}, e2eutil.SparkPhase{URI: p.URI("primary"), Steps: steps},
		e2eutil.SparkPhase{URI: e2eutil.HMS2.URI, Steps: after})
	for i := range direct {
		e2eutil.SparkOK(t, phases[0], i)
	}
	res := phases[1]
	for _, i := range []int{0, 1, 2, 9, 10, 14} {
		e2eutil.SparkOK(t, res, i)
	}
	for _, c := range []struct {
		i    int
		want string
		what string
	}{
		{4, "1,a;2,b", "the view created through the proxy"},
		{5, "1;2", "the view with one-part names created under USE"},
		{6, "1,a;2,b", "the Hive view created directly on catalog2"},
		{7, "1,a;2,b", "the Spark view created directly on catalog2"},
		{8, "100,wrong", "the default catalog's table of the same name (control)"},
		{11, "7", "the transactional table turned external"},
	} {
		if got := e2eutil.RowsText(e2eutil.SparkOK(t, res, c.i)); got != c.want {
			t.Errorf("%s through the proxy: %s read %q, want %q", c.what, res[c.i].SQL, got, c.want)
		}
	}
	for i, want := range []string{"1,a;2,b", "1;2", "1,a;2,b", "1,a;2,b"} {
		if got := e2eutil.RowsText(e2eutil.SparkOK(t, phases[2], i)); got != want {
			t.Errorf("directly on catalog2's metastore: %s read %q, want %q", phases[2][i].SQL, got, want)
		}
	}
	if e := res[3].Error; !strings.Contains(e, "names tables of another catalog") || !strings.Contains(e, db+".t") {
		t.Errorf("a catalog2 view of the default catalog's table: want the proxy's refusal naming it, got %q", e)
	}
	props := map[string]string{}
	for _, r := range e2eutil.SparkOK(t, res, 12) {
		if len(r) == 2 {
			props[r[0]] = r[1]
		}
	}
	typ := ""
	for _, r := range e2eutil.SparkOK(t, res, 13) {
		if len(r) >= 2 && r[0] == "Type" {
			typ = r[1]
		}
	}
	if props["external.table.purge"] != "true" || props["transactional"] != "" || typ != "EXTERNAL" {
		t.Errorf("the transactional table Spark created: want an EXTERNAL table with external.table.purge=true, no transactional; type %q, properties %v", typ, props)
	}

	// What catalog2's metastore stores: backend names only.
	for _, name := range []string{"v", "v2"} {
		tb, err := direct2.GetTable(e2eutil.Ctx(t), db, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{tb.ViewOriginalText, tb.ViewExpandedText} {
			if strings.Contains(text, "catalog2__") || !strings.Contains(text, db+".t") {
				t.Errorf("view %s as catalog2's metastore stores it names external names: %q", name, text)
			}
		}
		if name == "v2" {
			if ns := tb.Parameters["view.catalogAndNamespace.part.1"]; ns != db {
				t.Errorf("Spark's current namespace of v2 on the metastore: %q, want %q", ns, db)
			}
		}
	}
	if _, err := direct2.GetTable(e2eutil.Ctx(t), db, "bad"); !e2eutil.IsNotFound(err) {
		t.Errorf("the refused view exists on catalog2's metastore: %v", err)
	}
	// What a client of the proxy reads: external names.
	c := proxytest.Client(t, p.URI("primary"))
	v2, err := c.GetTable(e2eutil.Ctx(t), ext, "v2")
	if err != nil {
		t.Fatal(err)
	}
	if ns := v2.Parameters["view.catalogAndNamespace.part.1"]; ns != ext {
		t.Errorf("Spark's current namespace of v2 through the proxy: %q, want %q", ns, ext)
	}
	if !strings.Contains(v2.ViewOriginalText, ext+".t u") {
		t.Errorf("v2's text through the proxy: %q", v2.ViewOriginalText)
	}
	sv, err := c.GetTable(e2eutil.Ctx(t), ext, "sv")
	if err != nil {
		t.Fatal(err)
	}
	if ns := sv.Parameters["view.catalogAndNamespace.part.1"]; ns != ext {
		t.Errorf("Spark's namespace of the view it created on catalog2, through the proxy: %q, want %q", ns, ext)
	}
	hvp, err := c.GetTable(e2eutil.Ctx(t), ext, "hv")
	if err != nil {
		t.Fatal(err)
	}
	if want := "from `" + ext + "`.`t`"; !strings.Contains(hvp.ViewExpandedText, want) {
		t.Errorf("the Hive view through the proxy: %q lacks %q", hvp.ViewExpandedText, want)
	}
	if n := p.Metric(t, "hms_proxy_view_text_rewrites_total", "catalog", "catalog2", "direction", "inward", "result", "rewritten"); n < 2 {
		t.Errorf("inward view rewrites counted: %v, want at least 2", n)
	}
	if n := p.Metric(t, "hms_proxy_view_text_rewrites_total", "catalog", "catalog2", "direction", "outward", "result", "rewritten"); n < 3 {
		t.Errorf("outward view rewrites counted: %v, want at least 3", n)
	}
	if n := p.Metric(t, "hms_proxy_view_text_unresolved_references_total", "catalog", "catalog2", "direction", "inward", "reason", "cross_catalog"); n < 1 {
		t.Errorf("the refused cross-catalog reference was not counted: %v", n)
	}

	// The dropped external table's data is purged in the background.
	acidDir := filepath.Join(warehouse, db+".db", "acid")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Lstat(acidDir); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists 30 s after DROP TABLE", acidDir)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := p.Metric(t, "hms_proxy_external_table_purge_total", "catalog", "catalog2", "result", "deleted"); n != 1 {
		t.Errorf("purges counted: %v, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(warehouse, db+".db", "t")); err != nil {
		t.Errorf("the managed table's data next to the purged one: %v", err)
	}
}

// A materialized view created through the proxy in catalog2: its creation
// metadata (the tables it reads, "db.table") and its expanded text are
// stored with catalog2's own names, so catalog2's metastore can find the
// source tables (it looks each one up when it stores the view), and they
// read back through the proxy in the client's names.
func TestMaterializedViewCreationMetadataIsRewritten(t *testing.T) {
	e2eutil.NeedHive(t)
	p := proxytest.Start(t, e2eutil.TwoCatalogs())
	c := proxytest.Client(t, p.URI("primary"))
	direct := proxytest.Client(t, e2eutil.HMS2.URI)
	db := e2eutil.Uniq("mv")
	e2eutil.MkDB(t, direct, db)
	ext := "catalog2__" + db
	e2eutil.MkTable(t, direct, db, "src")
	mv := e2eutil.HiveView(ext, "mv", "SELECT id FROM "+ext+".src", "SELECT `src`.`id` FROM `"+ext+"`.`src`", "id bigint")
	mv.TableType = "MATERIALIZED_VIEW"
	mv.CreationMetadata = &thriftgen.CreationMetadata{CatName: "hive", DbName: ext, TblName: "mv", TablesUsed: []string{ext + ".src"}}
	if err := c.CreateTable(e2eutil.Ctx(t), mv); err != nil {
		t.Fatalf("create materialized view %s.mv through the proxy: %v", ext, err)
	}
	stored, err := direct.GetTable(e2eutil.Ctx(t), db, "mv")
	if err != nil {
		t.Fatal(err)
	}
	if want := "SELECT `src`.`id` FROM `" + db + "`.`src`"; stored.ViewExpandedText != want {
		t.Fatalf("catalog2 stored the expanded text %q, want %q", stored.ViewExpandedText, want)
	}
	if cm := stored.CreationMetadata; cm == nil || cm.DbName != db || len(cm.TablesUsed) != 1 || cm.TablesUsed[0] != db+".src" {
		t.Fatalf("catalog2 stored the creation metadata %+v, want dbName %s and tablesUsed [%s.src]", cm, db, db)
	}
	got, err := c.GetTable(e2eutil.Ctx(t), ext, "mv")
	if err != nil {
		t.Fatal(err)
	}
	if cm := got.CreationMetadata; cm == nil || cm.DbName != ext || len(cm.TablesUsed) != 1 || cm.TablesUsed[0] != ext+".src" {
		t.Fatalf("through the proxy the creation metadata reads %+v, want dbName %s and tablesUsed [%s.src]", cm, ext, ext)
	}
	if !strings.Contains(got.ViewExpandedText, "`"+ext+"`.`src`") {
		t.Fatalf("through the proxy the expanded text reads %q", got.ViewExpandedText)
	}
}
