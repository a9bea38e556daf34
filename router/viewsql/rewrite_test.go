package viewsql

import (
	"strings"
	"testing"
)

func testRewriter(t testing.TB, qualify bool) *Rewriter {
	t.Helper()
	r, err := New(Options{Separator: "__", DefaultCatalog: "catalog1", QualifyUnqualified: qualify,
		Catalogs: []Catalog{{Name: "catalog1"}, {Name: "catalog2"}, {Name: "cat-3", BackendName: "hive3"}}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type rwCase struct {
	name, in, want string
	findings       []Reason
}

func runCases(t *testing.T, r *Rewriter, d Direction, v View, cases []rwCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := r.Rewrite(d, v, c.in)
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != c.want {
				t.Errorf("%s %q\n got %q\nwant %q", d, c.in, res.Text, c.want)
			}
			var got []Reason
			for _, f := range res.Findings {
				got = append(got, f.Reason)
			}
			if len(got) != len(c.findings) {
				t.Fatalf("findings %v, want %v (%v)", got, c.findings, res.Findings)
			}
			for i := range got {
				if got[i] != c.findings[i] {
					t.Errorf("finding %d: %v, want %v (%v)", i, got[i], c.findings[i], res.Findings[i])
				}
			}
		})
	}
}

func TestOutwardOfANonDefaultCatalog(t *testing.T) {
	r := testRewriter(t, true)
	v := View{Catalog: "catalog2", DB: "sales"}
	runCases(t, r, Outward, v, []rwCase{
		{"qualified", "SELECT * FROM sales.t", "SELECT * FROM catalog2__sales.t", nil},
		{"backquoted, as Hive expands", "SELECT `t`.`id` FROM `sales`.`t`", "SELECT `t`.`id` FROM `catalog2__sales`.`t`", nil},
		{"unqualified gets the view's db", "select id from orders where id > 1", "select id from catalog2__sales.orders where id > 1", nil},
		{"unqualified backquoted", "select 1 from `orders`", "select 1 from `catalog2__sales`.`orders`", nil},
		{"alias and column qualifier untouched", "select sales.col, t.c from sales.orders t", "select sales.col, t.c from catalog2__sales.orders t", nil},
		{"joins of every form", "SELECT 1 FROM a.x JOIN b.y ON 1=1 LEFT OUTER JOIN c.z ON 1=1 left semi join d.w on 1=1 CROSS JOIN e.v FULL OUTER JOIN f.u ON 1=1 RIGHT JOIN g.s ON 1=1 INNER JOIN h.r ON 1=1",
			"SELECT 1 FROM catalog2__a.x JOIN catalog2__b.y ON 1=1 LEFT OUTER JOIN catalog2__c.z ON 1=1 left semi join catalog2__d.w on 1=1 CROSS JOIN catalog2__e.v FULL OUTER JOIN catalog2__f.u ON 1=1 RIGHT JOIN catalog2__g.s ON 1=1 INNER JOIN catalog2__h.r ON 1=1", nil},
		{"comma list", "SELECT 1 FROM a.x x1, b.y, `c`.`z` WHERE x1.k = 1, 2", "SELECT 1 FROM catalog2__a.x x1, catalog2__b.y, `catalog2__c`.`z` WHERE x1.k = 1, 2", nil},
		{"comma join after ON", "SELECT 1 FROM a.x JOIN b.y ON (x.k = y.k), c.z", "SELECT 1 FROM catalog2__a.x JOIN catalog2__b.y ON (x.k = y.k), catalog2__c.z", nil},
		{"subqueries", "SELECT * FROM (SELECT a, b FROM s.x UNION ALL SELECT a, b FROM (SELECT * FROM s.y) q) u WHERE a IN (SELECT a FROM s.z)",
			"SELECT * FROM (SELECT a, b FROM catalog2__s.x UNION ALL SELECT a, b FROM (SELECT * FROM catalog2__s.y) q) u WHERE a IN (SELECT a FROM catalog2__s.z)", nil},
		{"parenthesized join", "SELECT * FROM (s.a JOIN s.b ON a.k = b.k)", "SELECT * FROM (catalog2__s.a JOIN catalog2__s.b ON a.k = b.k)", nil},
		{"CTE names stay", "WITH x AS (SELECT * FROM s.t), y (c) AS (SELECT c FROM x) SELECT * FROM x JOIN y ON 1=1 JOIN s.u ON 1=1",
			"WITH x AS (SELECT * FROM catalog2__s.t), y (c) AS (SELECT c FROM x) SELECT * FROM x JOIN y ON 1=1 JOIN catalog2__s.u ON 1=1", nil},
		{"literals and comments untouched", "SELECT 'from s.t', \"join s.u\", 'it\\'s from s.v' /* from s.w */ FROM s.t -- from s.x\n",
			"SELECT 'from s.t', \"join s.u\", 'it\\'s from s.v' /* from s.w */ FROM catalog2__s.t -- from s.x\n", nil},
		{"FROM inside functions", "SELECT extract(year FROM d), trim(BOTH ' ' FROM n), substring(s FROM 2 FOR 3) FROM s.t",
			"SELECT extract(year FROM d), trim(BOTH ' ' FROM n), substring(s FROM 2 FOR 3) FROM catalog2__s.t", nil},
		{"exists subquery", "SELECT 1 FROM s.c WHERE EXISTS(SELECT 1 FROM s.o WHERE o.k = c.k)", "SELECT 1 FROM catalog2__s.c WHERE EXISTS(SELECT 1 FROM catalog2__s.o WHERE o.k = c.k)", nil},
		{"table-valued function", "SELECT * FROM range(10) r JOIN s.t ON 1=1", "SELECT * FROM range(10) r JOIN catalog2__s.t ON 1=1", nil},
		{"lateral view commas are columns", "SELECT k, v FROM s.t LATERAL VIEW explode(m) e AS k, v JOIN s.u ON 1=1",
			"SELECT k, v FROM catalog2__s.t LATERAL VIEW explode(m) e AS k, v JOIN catalog2__s.u ON 1=1", nil},
		{"insert into table, update", "INSERT INTO TABLE s.t SELECT * FROM s.u; UPDATE s.v SET a = 1",
			"INSERT INTO TABLE catalog2__s.t SELECT * FROM catalog2__s.u; UPDATE catalog2__s.v SET a = 1", nil},
		{"group by commas are not tables", "SELECT a, b FROM s.t GROUP BY a, b ORDER BY a, b", "SELECT a, b FROM catalog2__s.t GROUP BY a, b ORDER BY a, b", nil},
		{"spaces around the dot", "SELECT * FROM s . t", "SELECT * FROM catalog2__s . t", nil},
		{"backend catalog collapses", "SELECT * FROM hive.s.t", "SELECT * FROM catalog2__s.t", nil},
		{"spark session catalog keeps its prefix", "SELECT * FROM spark_catalog.s.t", "SELECT * FROM spark_catalog.catalog2__s.t", nil},
		{"foreign catalog kept", "SELECT * FROM other.s.t", "SELECT * FROM other.s.t", []Reason{Unclassified}},
		{"substitution kept", "SELECT * FROM ${hiveconf:db}.t JOIN db_${env}.u ON 1=1", "SELECT * FROM ${hiveconf:db}.t JOIN db_${env}.u ON 1=1", []Reason{Unclassified, Unclassified}},
		{"already external", "SELECT * FROM catalog2__s.t", "SELECT * FROM catalog2__s.t", []Reason{Unclassified}},
		{"dotted backquoted name", "SELECT * FROM `s.t`", "SELECT * FROM `s.t`", []Reason{Unclassified}},
		{"spark file source", "SELECT * FROM parquet.`/data/x`", "SELECT * FROM parquet.`/data/x`", []Reason{Unclassified}},
		{"numbers", "SELECT 1.5, 10L, 2e3 FROM s.t LIMIT 10", "SELECT 1.5, 10L, 2e3 FROM catalog2__s.t LIMIT 10", nil},
		{"keywords in any case", "select * FrOm s.t jOiN s.u on 1=1", "select * FrOm catalog2__s.t jOiN catalog2__s.u on 1=1", nil},
		{"unterminated literal", "SELECT 'from s.t FROM s.u", "SELECT 'from s.t FROM s.u", nil},
		{"presto view blob", "/* Presto View: eyJvcmlnaW5hbFNxbCI6IlNFTEVDVCAqIEZST00gcy50In0= */", "/* Presto View: eyJvcmlnaW5hbFNxbCI6IlNFTEVDVCAqIEZST00gcy50In0= */", nil},
	})
}

func TestOutwardQuotesNamesThatNeedIt(t *testing.T) {
	r := testRewriter(t, true)
	runCases(t, r, Outward, View{Catalog: "cat-3", DB: "d"}, []rwCase{
		{"hyphen", "SELECT * FROM s.t", "SELECT * FROM `cat-3__s`.t", nil},
		{"own backend name", "SELECT * FROM hive3.s.t JOIN hive.s.u ON 1=1", "SELECT * FROM `cat-3__s`.t JOIN hive.s.u ON 1=1", []Reason{Unclassified}},
	})
}

func TestOutwardOfTheDefaultCatalogChangesNothing(t *testing.T) {
	r := testRewriter(t, true)
	runCases(t, r, Outward, View{Catalog: "catalog1", DB: "sales"}, []rwCase{
		{"qualified", "SELECT * FROM sales.t JOIN t2 ON 1=1", "SELECT * FROM sales.t JOIN t2 ON 1=1", nil},
		{"backend catalog collapses", "SELECT * FROM hive.sales.t", "SELECT * FROM sales.t", nil},
	})
}

func TestInward(t *testing.T) {
	r := testRewriter(t, true)
	runCases(t, r, Inward, View{Catalog: "catalog2"}, []rwCase{
		{"own catalog", "SELECT * FROM catalog2__sales.t", "SELECT * FROM sales.t", nil},
		{"case of the prefix", "SELECT * FROM CATALOG2__Sales.t", "SELECT * FROM Sales.t", nil},
		{"backquoted", "SELECT `t`.`a` FROM `catalog2__sales`.`t`", "SELECT `t`.`a` FROM `sales`.`t`", nil},
		{"unqualified stays", "SELECT * FROM t", "SELECT * FROM t", nil},
		{"another catalog", "SELECT * FROM catalog2__s.a JOIN `cat-3__dim`.x ON 1=1", "SELECT * FROM s.a JOIN `cat-3__dim`.x ON 1=1", []Reason{CrossCatalog}},
		{"default catalog's db from a catalog2 view", "SELECT * FROM sales.t", "SELECT * FROM sales.t", []Reason{CrossCatalog}},
		{"explicit default catalog", "SELECT * FROM catalog1__sales.t", "SELECT * FROM catalog1__sales.t", []Reason{CrossCatalog}},
		{"proxy catalog three-part", "SELECT * FROM catalog2.sales.t", "SELECT * FROM hive.sales.t", nil},
		{"another proxy catalog three-part", "SELECT * FROM catalog1.sales.t", "SELECT * FROM catalog1.sales.t", []Reason{CrossCatalog}},
		{"spark session catalog", "SELECT * FROM spark_catalog.catalog2__s.t", "SELECT * FROM spark_catalog.s.t", nil},
		{"strings untouched", "SELECT 'catalog2__s.t' FROM catalog2__s.t", "SELECT 'catalog2__s.t' FROM s.t", nil},
	})
	runCases(t, r, Inward, View{Catalog: "catalog1"}, []rwCase{
		{"default catalog keeps names", "SELECT * FROM sales.t", "SELECT * FROM sales.t", nil},
		{"explicit default prefix", "SELECT * FROM catalog1__sales.t", "SELECT * FROM sales.t", nil},
		{"non-default from default", "SELECT * FROM catalog2__sales.t", "SELECT * FROM catalog2__sales.t", []Reason{CrossCatalog}},
	})
}

func TestCrossCatalogErrorNamesTheReference(t *testing.T) {
	r := testRewriter(t, true)
	res, err := r.Rewrite(Inward, View{Catalog: "catalog2"}, "SELECT * FROM catalog2__s.a JOIN sales.b ON 1=1")
	if err != nil {
		t.Fatal(err)
	}
	e := res.Err()
	if e == nil || !strings.Contains(e.Error(), `"sales.b"`) || !strings.Contains(e.Error(), "catalog2") {
		t.Fatalf("Err() = %v", e)
	}
	res, _ = r.Rewrite(Outward, View{Catalog: "catalog2", DB: "s"}, "SELECT * FROM other.s.t")
	if res.Err() != nil {
		t.Fatalf("an outward finding is not a refusal: %v", res.Err())
	}
}

func TestReportIsCalledOncePerReference(t *testing.T) {
	var got []Finding
	r, err := New(Options{Separator: "__", DefaultCatalog: "c1", Catalogs: []Catalog{{Name: "c1"}, {Name: "c2"}},
		Report: func(f Finding) { got = append(got, f) }})
	if err != nil {
		t.Fatal(err)
	}
	text := "SELECT * FROM ${db}.t JOIN x.y.z.w ON 1=1"
	if _, err := r.Rewrite(Outward, View{Catalog: "c2", DB: "d"}, text); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Ref != "${db}.t" || got[0].Offset != 14 || got[1].Ref != "x.y.z.w" {
		t.Fatalf("reports %+v", got)
	}
	if !strings.Contains(got[1].String(), "more than three") {
		t.Errorf("finding text %q", got[1])
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, o := range []Options{
		{DefaultCatalog: "a", Catalogs: []Catalog{{Name: "a"}}},
		{Separator: "__", DefaultCatalog: "a"},
		{Separator: "__", DefaultCatalog: "b", Catalogs: []Catalog{{Name: "a"}}},
		{Separator: "__", DefaultCatalog: "a", Catalogs: []Catalog{{Name: "a"}, {Name: "A"}}},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
	r := testRewriter(t, true)
	if _, err := r.Rewrite(Inward, View{Catalog: "nope"}, "x"); err == nil {
		t.Error("unknown catalog accepted")
	}
}
