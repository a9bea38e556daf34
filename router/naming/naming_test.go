package naming

import (
	"fmt"
	"testing"
)

func testNS(preserve bool) *Namespace {
	return NewNamespace("__", "catalog1", preserve, []*Catalog{
		{Name: "catalog1", BackendName: "hive"},
		{Name: "catalog2", BackendName: "hive"},
		{Name: "remote_hdp", BackendName: "hive"},
	})
}

func TestSplitDBRoutesByPrefixOnlyForConfiguredCatalogs(t *testing.T) {
	ns := testNS(false)
	cases := []struct {
		in, cat, db string
		explicit    bool
	}{
		{"catalog2__sales", "catalog2", "sales", true},
		{"CATALOG2__Sales", "catalog2", "Sales", true},
		{"sales", "catalog1", "sales", false},
		{"unknown__sales", "catalog1", "unknown__sales", false}, // not a catalog: a default-catalog db named so
		{"catalog1__x", "catalog1", "x", true},
		{"remote_hdp__db__with__seps", "remote_hdp", "db__with__seps", true},
		{"__x", "catalog1", "__x", false},
	}
	for _, c := range cases {
		cat, db, explicit := ns.SplitDB(c.in)
		if cat.Name != c.cat || db != c.db || explicit != c.explicit {
			t.Errorf("SplitDB(%q) = %s,%q,%v; want %s,%q,%v", c.in, cat.Name, db, explicit, c.cat, c.db, c.explicit)
		}
	}
}

func TestExternalNamesRoundTrip(t *testing.T) {
	ns := testNS(false)
	c2 := ns.Lookup("catalog2")
	if got := ns.ExternalDB(c2, "sales"); got != "catalog2__sales" {
		t.Fatalf("ExternalDB = %q", got)
	}
	if got := ns.ExternalDB(ns.Default(), "sales"); got != "sales" {
		t.Fatalf("default catalog keeps names, got %q", got)
	}
	if got := ns.ExternalFullTable(c2, "sales.orders"); got != "catalog2__sales.orders" {
		t.Fatalf("ExternalFullTable = %q", got)
	}
	cat, internal, _ := ns.SplitFullTable("catalog2__sales.orders")
	if cat != c2 || internal != "sales.orders" {
		t.Fatalf("SplitFullTable = %v %q", cat.Name, internal)
	}
	if got := ns.ExternalCatalog(c2, "hive"); got != "catalog2" {
		t.Fatalf("ExternalCatalog = %q", got)
	}
	if got := testNS(true).ExternalCatalog(c2, "hive"); got != "hive" {
		t.Fatalf("preserve-backend-catalog-name keeps the backend value, got %q", got)
	}
}

// HiveServer2 turns the schema pattern of DatabaseMetaData.getTables into a
// regex by replacing every unescaped '_' with '.', so "catalog2__sales"
// arrives as "catalog2..sales" and "remote_hdp__x" as "remote.hdp..x".
func TestSplitPatternUnderstandsHiveServer2Translation(t *testing.T) {
	ns := testNS(false)
	cases := []struct {
		in, cat, rest string
		ok            bool
	}{
		{"catalog2__sales", "catalog2", "sales", true},
		{"catalog2..sales", "catalog2", "sales", true},
		{"catalog2..*", "catalog2", "*", true},
		{"catalog2__", "catalog2", "*", true},
		{"remote.hdp..sales", "remote_hdp", "sales", true},
		{"remote_hdp__sal*", "remote_hdp", "sal*", true},
		{"sales*", "", "sales*", false},
		{"*", "", "*", false},
	}
	for _, c := range cases {
		cat, rest, ok := ns.SplitPattern(c.in)
		name := ""
		if cat != nil {
			name = cat.Name
		}
		if ok != c.ok || name != c.cat || rest != c.rest {
			t.Errorf("SplitPattern(%q) = %q,%q,%v; want %q,%q,%v", c.in, name, rest, ok, c.cat, c.rest, c.ok)
		}
	}
}

func TestHivePatternMatchesLikeHMS(t *testing.T) {
	re, err := Pattern("catalog2__sal*|other")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"catalog2__sales": true, "CATALOG2__SALES": true, "other": true, "others": false, "xcatalog2__sales": false} {
		if got := re.MatchString(name); got != want {
			t.Errorf("match %q = %v, want %v", name, got, want)
		}
	}
	// HiveServer2's translated form matches the external name, because '.' is a regex wildcard.
	re, _ = Pattern("catalog2..sales")
	if !re.MatchString("catalog2__sales") {
		t.Error("catalog2..sales should match catalog2__sales")
	}
	if _, err := Pattern("bad(["); err == nil {
		t.Error("an invalid pattern must be an error")
	}
}

// A pattern is compiled once and kept (the same matcher serves the next
// call), and the store stays bounded whatever patterns clients invent; a
// kept pattern matches as a fresh one does.
func TestPatternsAreCompiledOnceAndKeptBounded(t *testing.T) {
	a, err := Pattern("hmsbench*|sales")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Pattern("hmsbench*|sales")
	if a != b {
		t.Fatal("the same pattern was compiled twice")
	}
	if !b.MatchString("HMSBENCH_1") || !b.MatchString("sales") || b.MatchString("salesx") {
		t.Fatalf("kept pattern %s matches wrongly", b)
	}
	for i := 0; i < 3*MaxCompiled; i++ {
		if _, err := Pattern(fmt.Sprintf("db%d*", i)); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	patterns.m.Range(func(any, any) bool { n++; return true })
	if n > MaxCompiled {
		t.Fatalf("%d compiled patterns kept, bound %d", n, MaxCompiled)
	}
	if _, err := Pattern("(bad"); err == nil {
		t.Fatal("an invalid pattern compiled")
	}
}
