package routing

import (
	"sort"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/locks"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// The real Hive 3.1.3 HiveMetaStoreClient runs the DDL scenario through the
// proxy in both catalogs; each backend then holds what a direct run creates,
// under internal names.
func TestFederatedScenarioWithHive313Client(t *testing.T) {
	e2eutil.NeedHive(t)
	p := proxytest.Start(t, e2eutil.TwoCatalogs())
	local, remote := e2eutil.Uniq("fed"), e2eutil.Uniq("fedr")
	testbed.RunScenarioT(t, testbed.Hive313, p.URI("primary"), "ddl",
		"--db", local, "--db", "catalog2__"+remote, "--keep")

	c1, c2 := proxytest.Client(t, e2eutil.HMS1.URI), proxytest.Client(t, e2eutil.HMS2.URI)
	t.Cleanup(func() {
		_ = c1.DropDatabase(e2eutil.Ctx(t), local, true, true)
		_ = c2.DropDatabase(e2eutil.Ctx(t), remote, true, true)
	})
	// Internal names on the backends: no prefix anywhere.
	if _, err := c1.GetDatabase(e2eutil.Ctx(t), local); err != nil {
		t.Fatalf("catalog1's metastore lacks %s: %v", local, err)
	}
	if _, err := c2.GetDatabase(e2eutil.Ctx(t), remote); err != nil {
		t.Fatalf("catalog2's metastore lacks %s (internal name of catalog2__%s): %v", remote, remote, err)
	}
	for _, c := range []*thriftgen.Client{c1, c2} {
		dbs, err := c.GetAllDatabases(e2eutil.Ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dbs {
			if strings.Contains(d, "__") {
				t.Errorf("a backend holds an external name %q", d)
			}
		}
	}
	if _, err := c1.GetDatabase(e2eutil.Ctx(t), remote); !e2eutil.IsNotFound(err) {
		t.Errorf("catalog2's database leaked into catalog1: %v", err)
	}

	// The same scenario run directly against catalog2's metastore.
	direct := e2eutil.Uniq("direct")
	testbed.RunScenarioT(t, testbed.Hive313, e2eutil.HMS2.URI, "ddl", "--db", direct, "--keep")
	t.Cleanup(func() { _ = c2.DropDatabase(e2eutil.Ctx(t), direct, true, true) })
	got, want := dump(t, c2, remote), dump(t, c2, direct)
	// The direct run must hold what the ddl scenario leaves (DdlScenario.java
	// with --keep), so two runs that left nothing cannot agree.
	for _, line := range []string{"table type=MANAGED_TABLE owner=hmsbed", "  col id bigint", "  col added_col string",
		"  partkey ds string", "  partkey region string", "  param hmsbed.altered=yes",
		"  partitions ds=2024-01-01/region=eu,ds=2024-01-01/region=us,ds=2024-01-02/region=eu"} {
		if !strings.Contains(want, line+"\n") {
			t.Fatalf("a direct run of the ddl scenario left no %q; it left\n%s", line, want)
		}
	}
	if got != want {
		t.Fatalf("through the proxy catalog2 holds\n%s\nbut a direct run creates\n%s", got, want)
	}
}

// dump renders a database's tables and partitions with names and volatile
// values (times, locations, run ids) normalised, for comparing two runs.
func dump(t *testing.T, c *thriftgen.Client, db string) string {
	t.Helper()
	tables, err := c.GetAllTables(e2eutil.Ctx(t), db)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(tables)
	var b strings.Builder
	for _, name := range tables {
		tb, err := c.GetTable(e2eutil.Ctx(t), db, name)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("table type=" + tb.TableType + " owner=" + tb.Owner + "\n")
		for _, col := range tb.Sd.Cols {
			b.WriteString("  col " + col.Name + " " + col.Type + "\n")
		}
		for _, k := range tb.PartitionKeys {
			b.WriteString("  partkey " + k.Name + " " + k.Type + "\n")
		}
		keys := make([]string, 0, len(tb.Parameters))
		for k := range tb.Parameters {
			if k != "transient_lastDdlTime" && k != "last_modified_time" && k != "last_modified_by" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.WriteString("  param " + k + "=" + tb.Parameters[k] + "\n")
		}
		parts, err := c.GetPartitionNames(e2eutil.Ctx(t), db, name, -1)
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(parts)
		b.WriteString("  partitions " + strings.Join(parts, ",") + "\n")
	}
	return b.String()
}

// HiveServer2 turns a JDBC schema pattern into a regex, so GUI clients ask
// for "catalog2..sales" instead of "catalog2__sales".
func TestHiveServer2PatternForms(t *testing.T) {
	e2eutil.NeedHive(t)
	direct := proxytest.Client(t, e2eutil.HMS2.URI)
	db := e2eutil.Uniq("gui")
	e2eutil.MkDB(t, direct, db)
	e2eutil.MkTable(t, direct, db, "orders")
	p := proxytest.Start(t, e2eutil.TwoCatalogs())
	c := proxytest.Client(t, p.URI("primary"))
	for _, pattern := range []string{"catalog2.." + db, "catalog2__" + db, "catalog2..*"} {
		metas, err := c.GetTableMeta(e2eutil.Ctx(t), pattern, "*", nil)
		if err != nil {
			t.Fatalf("%s: %v", pattern, err)
		}
		found := false
		for _, m := range metas {
			if m.DbName == "catalog2__"+db && m.TableName == "orders" {
				found = true
			}
			if !strings.HasPrefix(m.DbName, "catalog2__") {
				t.Errorf("%s: a database of another catalog leaked in: %s", pattern, m.DbName)
			}
		}
		if !found {
			t.Errorf("get_table_meta(%q) misses catalog2__%s.orders: %v", pattern, db, metas)
		}
	}
	dbs, err := c.GetDatabases(e2eutil.Ctx(t), "catalog2..*")
	if err != nil {
		t.Fatal(err)
	}
	if !e2eutil.Contains(dbs, "catalog2__"+db) || e2eutil.Contains(dbs, db) {
		t.Fatalf("get_databases(catalog2..*) = %v", dbs)
	}
}

// catName in answers is the proxy catalog by default, the backend's own
// value with federation.preserve-backend-catalog-name=true; routing is the
// same either way.
func TestPreserveBackendCatalogName(t *testing.T) {
	e2eutil.NeedHive(t)
	direct := proxytest.Client(t, e2eutil.HMS2.URI)
	db := e2eutil.Uniq("cat")
	e2eutil.MkDB(t, direct, db)
	e2eutil.MkTable(t, direct, db, "t")
	for _, tc := range []struct{ preserve, want string }{{"false", "catalog2"}, {"true", "hive"}} {
		p := proxytest.Start(t, e2eutil.TwoCatalogs("federation.preserve-backend-catalog-name="+tc.preserve))
		tb, err := proxytest.Client(t, p.URI("primary")).GetTable(e2eutil.Ctx(t), "catalog2__"+db, "t")
		if err != nil {
			t.Fatal(err)
		}
		if tb.CatName == nil || *tb.CatName != tc.want || tb.DbName != "catalog2__"+db {
			t.Fatalf("preserve=%s: catName=%v dbName=%s, want catName=%s", tc.preserve, tb.CatName, tb.DbName, tc.want)
		}
	}
}

// Functions and lock components carry database names too.
func TestFunctionsAndLocksAreRewritten(t *testing.T) {
	e2eutil.NeedHive(t)
	direct := proxytest.Client(t, e2eutil.HMS2.URI)
	db := e2eutil.Uniq("fn")
	e2eutil.MkDB(t, direct, db)
	e2eutil.MkTable(t, direct, db, "t")
	p := proxytest.Start(t, e2eutil.TwoCatalogs())
	c := proxytest.Client(t, p.URI("primary"))
	fn := &thriftgen.Function{FunctionName: "myupper", DbName: "catalog2__" + db, ClassName: "org.example.Upper",
		OwnerName: "e2e", OwnerType: thriftgen.PrincipalType_USER, FunctionType: thriftgen.FunctionType_JAVA}
	if err := c.CreateFunction(e2eutil.Ctx(t), fn); err != nil {
		t.Fatalf("create_function: %v", err)
	}
	got, err := direct.GetFunction(e2eutil.Ctx(t), db, "myupper")
	if err != nil || got.DbName != db {
		t.Fatalf("the backend should hold the function under %s: %+v %v", db, got, err)
	}
	back, err := c.GetFunction(e2eutil.Ctx(t), "catalog2__"+db, "myupper")
	if err != nil || back.DbName != "catalog2__"+db || back.ClassName != "org.example.Upper" {
		t.Fatalf("get_function through the proxy: %+v %v", back, err)
	}
	tbl := "t"
	lock, err := c.Lock(e2eutil.Ctx(t), &thriftgen.LockRequest{User: "e2e", Hostname: "localhost",
		Component: []*thriftgen.LockComponent{{Type: thriftgen.LockType_SHARED_READ, Level: thriftgen.LockLevel_TABLE,
			Dbname: "catalog2__" + db, Tablename: &tbl}}})
	if err != nil || lock.State != thriftgen.LockState_ACQUIRED {
		t.Fatalf("lock on catalog2's table: %+v %v", lock, err)
	}
	// The lock is the synthetic lock shim's (issue 11): catalog2's metastore
	// does not know the default catalog's transactions and holds nothing.
	if !locks.IsShimLockID(lock.Lockid) {
		t.Fatalf("lock on catalog2's table got id %d, not a shim id", lock.Lockid)
	}
	held, err := direct.ShowLocks(e2eutil.Ctx(t), &thriftgen.ShowLocksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range held.Locks {
		if l.Dbname == db {
			t.Fatalf("catalog2's metastore holds a lock on %s: %+v", db, l)
		}
	}
	if err := c.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: lock.Lockid}); err != nil {
		t.Fatalf("unlock through the proxy: %v", err)
	}
}
