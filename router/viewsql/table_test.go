package viewsql

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hms-proxy/hms-proxy/wire"
)

func viewTable(db, orig, expanded string, params ...string) wire.Value {
	p := wire.Value{Type: wire.TMap, KeyType: wire.TString, ElemType: wire.TString}
	for _, s := range params {
		p.Elems = append(p.Elems, wire.Str(s))
	}
	return wire.Struct(
		wire.Field{ID: tableFieldTableName, V: wire.Str("v")},
		wire.Field{ID: tableFieldDBName, V: wire.Str(db)},
		wire.Field{ID: tableFieldParameters, V: p},
		wire.Field{ID: tableFieldViewOriginalText, V: wire.Str(orig)},
		wire.Field{ID: tableFieldViewExpandedText, V: wire.Str(expanded)},
		wire.Field{ID: tableFieldTableType, V: wire.Str("VIRTUAL_VIEW")},
	)
}

func TestModesAndPreserveOriginalText(t *testing.T) {
	r := testRewriter(t, true)
	const orig, exp = "select * from t", "SELECT `t`.`a` FROM `sales`.`t`"

	tbl := viewTable("sales", orig, exp)
	res, err := NewTableRewriter(r, TableOptions{Mode: ModeDisabled}).Rewrite(Outward, "catalog2", &tbl)
	if err != nil || res.Changed != 0 || tbl.Field(tableFieldViewExpandedText).String() != exp {
		t.Fatalf("DISABLED changed something: %+v %v", res, err)
	}

	tbl = viewTable("sales", orig, exp)
	if _, err := NewTableRewriter(r, TableOptions{PreserveOriginalText: true}).Rewrite(Outward, "catalog2", &tbl); err != nil {
		t.Fatal(err)
	}
	if got := tbl.Field(tableFieldViewOriginalText).String(); got != orig {
		t.Errorf("preserved original text became %q", got)
	}
	if got := tbl.Field(tableFieldViewExpandedText).String(); got != "SELECT `t`.`a` FROM `catalog2__sales`.`t`" {
		t.Errorf("expanded text %q", got)
	}

	tbl = viewTable("catalog2__sales", orig, exp) // dbName already external
	if _, err := NewTableRewriter(r, TableOptions{}).Rewrite(Outward, "catalog2", &tbl); err != nil {
		t.Fatal(err)
	}
	if got := tbl.Field(tableFieldViewOriginalText).String(); got != "select * from catalog2__sales.t" {
		t.Errorf("original text %q", got)
	}

	for _, s := range []string{"", "rewrite", "REWRITE", " DISABLED "} {
		if _, err := ParseMode(s); err != nil {
			t.Errorf("ParseMode(%q): %v", s, err)
		}
	}
	if _, err := ParseMode("ON"); err == nil || !strings.Contains(err.Error(), "federation.view-text-rewrite.mode") {
		t.Errorf("ParseMode(ON) = %v", err)
	}
}

// A view created through the proxy in catalog2 that reads the default
// catalog's table: inward finds it, the router refuses with Err.
func TestInwardRefusalOfACrossCatalogView(t *testing.T) {
	r := testRewriter(t, true)
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	tr := NewTableRewriter(r, TableOptions{Metrics: m})
	tbl := viewTable("catalog2__sales", "SELECT * FROM sales.t", "SELECT `t`.`a` FROM `sales`.`t`",
		"view.catalogAndNamespace.numParts", "2", "view.catalogAndNamespace.part.0", "spark_catalog",
		"view.catalogAndNamespace.part.1", "catalog2__sales")
	res, err := tr.Rewrite(Inward, "catalog2", &tbl)
	if err != nil {
		t.Fatal(err)
	}
	if res.Err() == nil || !strings.Contains(res.Err().Error(), "sales.t") {
		t.Fatalf("Err() = %v (%v)", res.Err(), res.Findings)
	}
	if got := paramOf(&tbl, "view.catalogAndNamespace.part.1"); got != "sales" {
		t.Errorf("part.1 = %q", got)
	}
	if got := testutil.ToFloat64(m.findings.WithLabelValues("catalog2", "inward", "cross_catalog")); got != 2 {
		t.Errorf("cross_catalog findings counted %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.rewrites.WithLabelValues("catalog2", "inward", "rewritten")); got != 1 {
		t.Errorf("rewrites counted %v", got)
	}

	// Spark 2.x's view.default.database naming another catalog is a finding.
	tbl = viewTable("catalog2__sales", "", "", "view.default.database", "catalog1__sales")
	res, _ = tr.Rewrite(Inward, "catalog2", &tbl)
	if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Ref, "view.default.database") {
		t.Errorf("findings %v", res.Findings)
	}

	// A plain table is not a view: nothing counted.
	plain := wire.Struct(wire.Field{ID: tableFieldDBName, V: wire.Str("sales")})
	before := testutil.CollectAndCount(m.rewrites)
	if _, err := tr.Rewrite(Outward, "catalog2", &plain); err != nil {
		t.Fatal(err)
	}
	if after := testutil.CollectAndCount(m.rewrites); after != before {
		t.Errorf("a plain table was counted")
	}
	var nilM *Metrics
	nilM.observe("c", Inward, TableResult{}) // nil-safe
}

// Spark records the session's current database with every view, also a
// fully qualified one created from another catalog's database (USE default,
// then CREATE VIEW catalog2__sales.v AS SELECT ... FROM catalog2__sales.t,
// as real Spark 3.5.9 sends it): that namespace resolves nothing and is no
// reason to refuse; with a one-part name it resolves that name in the other
// catalog and is.
func TestInwardSparkNamespaceOfAQualifiedView(t *testing.T) {
	r := testRewriter(t, true)
	tr := NewTableRewriter(r, TableOptions{})
	ns := []string{"view.catalogAndNamespace.numParts", "2", "view.catalogAndNamespace.part.0", "spark_catalog",
		"view.catalogAndNamespace.part.1", "default"}
	q := "SELECT id, name FROM catalog2__sales.t WHERE id > 0"
	tbl := viewTable("catalog2__sales", q, q, ns...)
	res, err := tr.Rewrite(Inward, "catalog2", &tbl)
	if err != nil || res.Err() != nil {
		t.Fatalf("a qualified view was refused: %v %v", err, res.Err())
	}
	if len(res.Findings) != 1 || res.Findings[0].Reason != Unclassified {
		t.Errorf("findings %v: want the namespace reported as left unchanged", res.Findings)
	}
	if got := tbl.Field(tableFieldViewExpandedText).String(); got != "SELECT id, name FROM sales.t WHERE id > 0" {
		t.Errorf("text %q", got)
	}
	if got := paramOf(&tbl, "view.catalogAndNamespace.part.1"); got != "default" {
		t.Errorf("part.1 = %q", got)
	}
	q = "SELECT id FROM t"
	tbl = viewTable("catalog2__sales", q, q, ns...)
	if res, _ = tr.Rewrite(Inward, "catalog2", &tbl); res.Err() == nil {
		t.Errorf("a one-part name resolved in the default catalog's database was not refused: %v", res.Findings)
	}
}

// An Iceberg view's SQL is the text of the engine that wrote it through an
// Iceberg catalog (a non-default catalog's REST prefix names that catalog's
// own databases unprefixed): neither direction judges or changes it.
func TestIcebergViewTextIsTheEngines(t *testing.T) {
	r := testRewriter(t, true)
	tr := NewTableRewriter(r, TableOptions{})
	const sql = "SELECT id FROM sales.t"
	for _, d := range []Direction{Inward, Outward} {
		tbl := viewTable("catalog2__sales", sql, sql, "table_type", "iceberg-view", "metadata_location", "file:/w/v.metadata.json")
		res, err := tr.Rewrite(d, "catalog2", &tbl)
		if err != nil || res.Err() != nil || res.Changed != 0 || len(res.Findings) != 0 {
			t.Fatalf("%v: an Iceberg view was judged: %+v %v", d, res, err)
		}
		if got := tbl.Field(tableFieldViewOriginalText).String(); got != sql {
			t.Fatalf("%v: text became %q", d, got)
		}
	}
	// The same text in a Hive view is a cross-catalog reference.
	tbl := viewTable("catalog2__sales", sql, sql)
	if res, _ := tr.Rewrite(Inward, "catalog2", &tbl); res.Err() == nil {
		t.Fatal("a Hive view naming the default catalog's table was not refused")
	}
}
