package viewsql

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// hiveCorpus reads testdata/corpus/hive-expanded.sql.
func hiveCorpus(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "corpus", "hive-expanded.sql"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(b), "\n----\n")
	var out []string
	for _, s := range blocks[1:] { // the first block is the file's note
		if s = strings.TrimRight(s, "\n"); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// sparkView is one line of testdata/corpus/spark-*.jsonl: what real Spark
// (pyspark, spark.sql.catalogImplementation=hive) stored in a real Hive 3.1.3
// metastore for CREATE VIEW (testdata/make_spark_views.py).
type sparkView struct {
	DB               string            `json:"db"`
	Name             string            `json:"name"`
	TableType        string            `json:"tableType"`
	ViewOriginalText string            `json:"viewOriginalText"`
	ViewExpandedText string            `json:"viewExpandedText"`
	Parameters       map[string]string `json:"parameters"`
}

func sparkCorpus(t testing.TB) []sparkView {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", "corpus", "spark-*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no Spark corpus")
	}
	var out []sparkView
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var v sparkView
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, v)
		}
		fh.Close()
	}
	return out
}

// tableValue builds the Table a backend would send for v.
func (v sparkView) tableValue() wire.Value {
	keys := make([]string, 0, len(v.Parameters))
	for k := range v.Parameters {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	params := wire.Value{Type: wire.TMap, KeyType: wire.TString, ElemType: wire.TString}
	for _, k := range keys {
		params.Elems = append(params.Elems, wire.Str(k), wire.Str(v.Parameters[k]))
	}
	return wire.Struct(
		wire.Field{ID: tableFieldTableName, V: wire.Str(v.Name)},
		wire.Field{ID: tableFieldDBName, V: wire.Str(v.DB)},
		wire.Field{ID: tableFieldParameters, V: params},
		wire.Field{ID: tableFieldViewOriginalText, V: wire.Str(v.ViewOriginalText)},
		wire.Field{ID: tableFieldViewExpandedText, V: wire.Str(v.ViewExpandedText)},
		wire.Field{ID: tableFieldTableType, V: wire.Str(v.TableType)},
	)
}

func TestTableFieldIDsMatchTheSchema(t *testing.T) {
	s := thriftgen.LookupStruct("Table")
	for id, name := range map[int16]string{tableFieldTableName: "tableName", tableFieldDBName: "dbName",
		tableFieldParameters: "parameters", tableFieldViewOriginalText: "viewOriginalText",
		tableFieldViewExpandedText: "viewExpandedText", tableFieldTableType: "tableType"} {
		if f := s.FieldByID(id); f == nil || f.Name != name {
			t.Errorf("Table field %d is %v, want %s", id, f, name)
		}
	}
}

// Every Hive-shaped text: qualified names move to the external form and come
// back byte for byte; literals, comments and numbers never change.
func TestHiveCorpusRoundTrip(t *testing.T) {
	r := testRewriter(t, true)
	v := View{Catalog: "catalog2", DB: "sales"}
	for i, x := range hiveCorpus(t) {
		out, err := r.Rewrite(Outward, v, x)
		if err != nil {
			t.Fatal(err)
		}
		if out.Changed == 0 || len(out.Findings) != 0 {
			t.Errorf("text %d: %d changes, findings %v:\n%s", i, out.Changed, out.Findings, x)
			continue
		}
		checkPreserved(t, x, out.Text)
		if strings.Contains(out.Text, "`sales`.`") || strings.Contains(out.Text, "`default`.`") || strings.Contains(out.Text, "`dim`.`") {
			t.Errorf("text %d: a backend database left in table position:\n%s", i, out.Text)
		}
		back, err := r.Rewrite(Inward, v, out.Text)
		if err != nil {
			t.Fatal(err)
		}
		want := x
		if out.Irreversible > 0 { // `hive`.`sales`.`orders` collapsed
			want = strings.ReplaceAll(x, "`hive`.", "")
		}
		if back.Text != want || len(back.Findings) != 0 {
			t.Errorf("text %d: inward of outward\n got %s\nwant %s\n(outward %s, findings %v)", i, back.Text, want, out.Text, back.Findings)
		}
	}
}

// What real Spark 3.5 stored: outward for catalog2 gives external names in
// both texts and in view.catalogAndNamespace.part.1; inward restores the
// backend record (one-part names come back qualified: see Irreversible).
func TestSparkCorpusTables(t *testing.T) {
	var reported []Finding
	r, err := New(Options{Separator: "__", DefaultCatalog: "catalog1", QualifyUnqualified: true,
		Catalogs: []Catalog{{Name: "catalog1"}, {Name: "catalog2"}}, Report: func(f Finding) { reported = append(reported, f) }})
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTableRewriter(r, TableOptions{Metrics: NewMetrics(nil)})
	views := sparkCorpus(t)
	for _, sv := range views {
		tbl := sv.tableValue()
		res, err := tr.Rewrite(Outward, "catalog2", &tbl)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Findings) != 0 {
			t.Errorf("%s: findings %v", sv.Name, res.Findings)
		}
		exp := tbl.Field(tableFieldViewExpandedText).String()
		checkPreserved(t, sv.ViewExpandedText, exp)
		part1 := paramOf(&tbl, sparkPartPrefix+"1")
		if !strings.HasPrefix(part1, "catalog2__") {
			t.Errorf("%s: view.catalogAndNamespace.part.1 = %q", sv.Name, part1)
		}
		for _, k := range []string{"view.query.out.col.0", "view.sqlConfig.spark.sql.session.timeZone", "spark.sql.sources.schema"} {
			if got := paramOf(&tbl, k); got != sv.Parameters[k] {
				t.Errorf("%s: %s changed to %q", sv.Name, k, got)
			}
		}
		// Inward gives the backend record again, with one-part names
		// qualified by Spark's namespace.
		if _, err := tr.Rewrite(Inward, "catalog2", &tbl); err != nil {
			t.Fatal(err)
		}
		if got := paramOf(&tbl, sparkPartPrefix+"1"); got != sv.Parameters[sparkPartPrefix+"1"] {
			t.Errorf("%s: part.1 back %q", sv.Name, got)
		}
		again := tbl.Field(tableFieldViewExpandedText).String()
		if again != sv.ViewExpandedText {
			// Only qualification may differ: outward again must equal outward.
			t2 := sv.tableValue()
			t2.Field(tableFieldViewExpandedText).Str = []byte(again)
			t2.Field(tableFieldViewOriginalText).Str = []byte(again)
			if _, err := tr.Rewrite(Outward, "catalog2", &t2); err != nil {
				t.Fatal(err)
			}
			if got := t2.Field(tableFieldViewExpandedText).String(); got != exp {
				t.Errorf("%s: not stable after one round trip:\n%s\n%s", sv.Name, got, exp)
			}
		}
	}
	// Expected texts of a few of them (the rest is covered above).
	want := map[string]string{
		"v_simple":        "SELECT id, amount FROM catalog2__sales.orders WHERE amount > 10",
		"v_cte":           "WITH big AS (SELECT * FROM catalog2__sales.orders WHERE amount > 100) SELECT big.id, 'from sales.orders' AS s FROM big",
		"v_other_current": "SELECT id FROM catalog2__dim.region",
		"v_catalog":       "SELECT id FROM spark_catalog.catalog2__sales.orders",
		"v_tvf":           "SELECT r.id FROM range(3) r CROSS JOIN catalog2__dim.region",
		"v_extract":       "SELECT id, extract(year FROM current_date()) AS y, trim(BOTH ' ' FROM note) AS n FROM catalog2__sales.orders",
	}
	for _, sv := range views {
		if w, ok := want[sv.Name]; ok {
			tbl := sv.tableValue()
			if _, err := tr.Rewrite(Outward, "catalog2", &tbl); err != nil {
				t.Fatal(err)
			}
			if got := tbl.Field(tableFieldViewOriginalText).String(); got != w {
				t.Errorf("%s:\n got %s\nwant %s", sv.Name, got, w)
			}
			delete(want, sv.Name)
		}
	}
	if len(want) != 0 {
		t.Errorf("views missing from the corpus: %v", want)
	}
	if len(reported) != 0 {
		t.Errorf("reports: %v", reported)
	}
}

func paramOf(tbl *wire.Value, k string) string {
	p := tbl.Field(tableFieldParameters)
	for i := 0; i+1 < len(p.Elems); i += 2 {
		if string(p.Elems[i].Str) == k {
			return string(p.Elems[i+1].Str)
		}
	}
	return ""
}

// checkPreserved fails unless literals, comments, numbers and substitutions
// of in appear in out, in order, byte for byte.
func checkPreserved(t testing.TB, in, out string) {
	t.Helper()
	a, b := opaque(in), opaque(out)
	if len(a) != len(b) {
		t.Fatalf("opaque tokens %q became %q", a, b)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("opaque token %q became %q", a[i], b[i])
		}
	}
}

func opaque(s string) []string {
	var out []string
	for _, tk := range lex(s) {
		switch tk.kind {
		case tString, tComment, tNumber, tSubst:
			out = append(out, s[tk.start:tk.end])
		}
	}
	return out
}

func TestCorpusIsThere(t *testing.T) {
	if n := len(hiveCorpus(t)); n < 20 {
		t.Fatalf("hive corpus has %d texts", n)
	}
	if n := len(sparkCorpus(t)); n < 14 {
		t.Fatalf("spark corpus has %d views", n)
	}
}
