package policy

import (
	"sort"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

func TestReadOnlyCatalogRefusesWritesAndServesReads(t *testing.T) {
	e2eutil.NeedHive(t)
	direct := proxytest.Client(t, e2eutil.HMS2.URI)
	db := e2eutil.Uniq("ro")
	e2eutil.MkDB(t, direct, db)
	p := proxytest.Start(t, e2eutil.TwoCatalogs("catalog.catalog2.access-mode=READ_ONLY"))
	c := proxytest.Client(t, p.URI("primary"))

	err := c.CreateTable(e2eutil.Ctx(t), e2eutil.Table("catalog2__"+db, "t1"))
	e2eutil.MetaErr(t, err, "catalog2", "READ_ONLY")
	e2eutil.MetaErr(t, c.CreateDatabase(e2eutil.Ctx(t), &thriftgen.Database{Name: "catalog2__" + e2eutil.Uniq("nope")}), "READ_ONLY")
	if tables, _ := direct.GetAllTables(e2eutil.Ctx(t), db); len(tables) != 0 {
		t.Fatalf("a refused write reached the backend: %v", tables)
	}
	if _, err := c.GetDatabase(e2eutil.Ctx(t), "catalog2__"+db); err != nil {
		t.Fatalf("reads must still work on a READ_ONLY catalog: %v", err)
	}
	// A SELECT's SHARED_READ lock is a read and passes; an EXCLUSIVE lock is
	// a write and is refused.
	tbl := "t_ro"
	e2eutil.MkTable(t, direct, db, tbl)
	lock := func(typ thriftgen.LockType) (*thriftgen.LockResponse, error) {
		op := thriftgen.DataOperationType_SELECT
		if typ != thriftgen.LockType_SHARED_READ {
			op = thriftgen.DataOperationType_NO_TXN
		}
		return c.Lock(e2eutil.Ctx(t), &thriftgen.LockRequest{User: "e2e", Hostname: "localhost",
			Component: []*thriftgen.LockComponent{{Type: typ, Level: thriftgen.LockLevel_TABLE,
				Dbname: "catalog2__" + db, Tablename: &tbl, OperationType: &op}}})
	}
	r, err := lock(thriftgen.LockType_SHARED_READ)
	if err != nil || r.State != thriftgen.LockState_ACQUIRED {
		t.Fatalf("a SHARED_READ lock on a READ_ONLY catalog must be granted: %+v %v", r, err)
	}
	if err := c.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: r.Lockid}); err != nil {
		t.Fatalf("unlock of the shim's lock: %v", err)
	}
	if _, err := lock(thriftgen.LockType_EXCLUSIVE); err == nil {
		t.Fatal("an EXCLUSIVE lock on a READ_ONLY catalog must be refused")
	} else if !strings.Contains(err.Error(), "READ_ONLY") {
		t.Fatalf("refusal should name READ_ONLY: %v", err)
	}
	// The default catalog stays writable.
	own := e2eutil.Uniq("rw")
	if err := c.CreateDatabase(e2eutil.Ctx(t), &thriftgen.Database{Name: own}); err != nil {
		t.Fatalf("catalog1 is READ_WRITE: %v", err)
	}
	_ = c.DropDatabase(e2eutil.Ctx(t), own, true, true)
}

func TestWriteWhitelistAllowsOnlyListedDatabases(t *testing.T) {
	e2eutil.NeedHive(t)
	direct := proxytest.Client(t, e2eutil.HMS2.URI)
	open, closed := e2eutil.Uniq("wl_open"), e2eutil.Uniq("wl_closed")
	e2eutil.MkDB(t, direct, open)
	e2eutil.MkDB(t, direct, closed)
	p := proxytest.Start(t, e2eutil.TwoCatalogs("catalog.catalog2.access-mode=READ_WRITE_DB_WHITELIST",
		"catalog.catalog2.write-db-whitelist="+open))
	c := proxytest.Client(t, p.URI("primary"))
	if err := c.CreateTable(e2eutil.Ctx(t), e2eutil.Table("catalog2__"+open, "t1")); err != nil {
		t.Fatalf("whitelisted database refused a write: %v", err)
	}
	e2eutil.MetaErr(t, c.CreateTable(e2eutil.Ctx(t), e2eutil.Table("catalog2__"+closed, "t1")), closed, "write-db-whitelist")
	if got, _ := direct.GetAllTables(e2eutil.Ctx(t), open); len(got) != 1 {
		t.Fatalf("backend should hold t1 in %s, has %v", open, got)
	}
	if got, _ := direct.GetAllTables(e2eutil.Ctx(t), closed); len(got) != 0 {
		t.Fatalf("refused write reached %s: %v", closed, got)
	}
}

func TestSelectiveExposure(t *testing.T) {
	e2eutil.NeedHive(t)
	direct := proxytest.Client(t, e2eutil.HMS2.URI)
	id := e2eutil.Uniq("x")
	sales, finance, secret := "sales_"+id, "finance_"+id, "secret_"+id
	for _, db := range []string{sales, finance, secret} {
		e2eutil.MkDB(t, direct, db)
		for _, tb := range []string{"orders_1", "events", "audit_log"} {
			e2eutil.MkTable(t, direct, db, tb)
		}
	}
	p := proxytest.Start(t, e2eutil.TwoCatalogs(
		"catalog.catalog2.expose-mode=DENY_BY_DEFAULT",
		"catalog.catalog2.expose-db-patterns=sales_.*",
		"catalog.catalog2.expose-table-patterns.finance_.*=audit_.*"))
	c := proxytest.Client(t, p.URI("primary"))

	dbs, err := c.GetAllDatabases(e2eutil.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	has := map[string]bool{}
	for _, d := range dbs {
		has[d] = true
	}
	if !has["catalog2__"+sales] || !has["catalog2__"+finance] || has["catalog2__"+secret] {
		t.Fatalf("get_all_databases exposure wrong: %v", dbs)
	}
	if _, err := c.GetDatabase(e2eutil.Ctx(t), "catalog2__"+secret); !e2eutil.IsNotFound(err) {
		t.Fatalf("a hidden database must answer not found, got %v", err)
	}
	tables, err := c.GetAllTables(e2eutil.Ctx(t), "catalog2__"+finance)
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 1 || tables[0] != "audit_log" {
		t.Fatalf("table rule for finance_.* should leave only audit_log, got %v", tables)
	}
	if _, err := c.GetTable(e2eutil.Ctx(t), "catalog2__"+finance, "events"); !e2eutil.IsNotFound(err) {
		t.Fatalf("a hidden table must answer not found, got %v", err)
	}
	if _, err := c.GetTable(e2eutil.Ctx(t), "catalog2__"+finance, "audit_log"); err != nil {
		t.Fatalf("an exposed table must be readable: %v", err)
	}
	all, _ := c.GetAllTables(e2eutil.Ctx(t), "catalog2__"+sales)
	sort.Strings(all)
	if strings.Join(all, ",") != "audit_log,events,orders_1" {
		t.Fatalf("a db-level rule exposes every table of sales_*, got %v", all)
	}
	seen := tableMetaNames(t, c, "catalog2__*"+id)
	want := []string{"catalog2__" + finance + ".audit_log", "catalog2__" + sales + ".audit_log", "catalog2__" + sales + ".events", "catalog2__" + sales + ".orders_1"}
	if strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Fatalf("get_table_meta exposure:\n got %v\nwant %v", seen, want)
	}
	if n := p.Metric(t, "hms_proxy_filtered_objects_total", "method", "get_all_databases", "catalog", "catalog2", "object_type", "database"); n < 1 {
		t.Fatalf("hms_proxy_filtered_objects_total did not count the hidden database (%v)", n)
	}
}

func TestAmbiguousAndNamespaceLessWritesAreRefused(t *testing.T) {
	e2eutil.NeedHive(t)
	p := proxytest.Start(t, e2eutil.TwoCatalogs())
	c := proxytest.Client(t, p.URI("primary"))

	e2eutil.MetaErr(t, c.SetMetaConf(e2eutil.Ctx(t), "metastore.try.direct.sql", "false"), "setMetaConf", "namespace-less")
	_, err := c.GrantRole(e2eutil.Ctx(t), "admin", "bob", thriftgen.PrincipalType_USER, "alice", thriftgen.PrincipalType_USER, false)
	e2eutil.MetaErr(t, err, "grant_role", "namespace-less")
	e2eutil.MetaErr(t, c.CreateCatalog(e2eutil.Ctx(t), &thriftgen.CreateCatalogRequest{Catalog: &thriftgen.Catalog{Name: "x", LocationUri: "/tmp/x"}}),
		"create_catalog", "catalogs=")

	_, err = c.GetValidWriteIds(e2eutil.Ctx(t), &thriftgen.GetValidWriteIdsRequest{
		FullTableNames: []string{"catalog1__a.t", "catalog2__b.t"}, ValidTxnList: e2eutil.Strp("1:1::")})
	e2eutil.MetaErr(t, err, "ambiguous", "catalog1", "catalog2")
	// A lock naming two catalogs is split, not refused (issue 11): one lock id.
	split, err := c.Lock(e2eutil.Ctx(t), &thriftgen.LockRequest{User: "u", Hostname: "h", Component: []*thriftgen.LockComponent{
		{Type: thriftgen.LockType_SHARED_READ, Level: thriftgen.LockLevel_DB, Dbname: "catalog1__a"},
		{Type: thriftgen.LockType_SHARED_READ, Level: thriftgen.LockLevel_DB, Dbname: "catalog2__b"}}})
	if err != nil || split.State != thriftgen.LockState_ACQUIRED {
		t.Fatalf("a lock naming two catalogs is split and granted: %+v %v", split, err)
	}
	if err := c.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: split.Lockid}); err != nil {
		t.Fatal(err)
	}
	if n := p.Metric(t, "hms_proxy_lock_request_split_total", "catalog", "catalog1"); n != 1 {
		t.Fatalf("hms_proxy_lock_request_split_total{catalog1} = %v, want 1", n)
	}
	if n := p.Metric(t, "hms_proxy_routing_ambiguous_total"); n < 1 {
		t.Fatalf("hms_proxy_routing_ambiguous_total = %v", n)
	}

	cats, err := c.GetCatalogs(e2eutil.Ctx(t))
	if err != nil || strings.Join(cats.Names, ",") != "catalog1,catalog2" {
		t.Fatalf("get_catalogs lists the configured catalogs: %v %v", cats, err)
	}
	// Reads without a namespace go to the default catalog, and are counted.
	if _, err := c.GetAllFunctions(e2eutil.Ctx(t)); err != nil {
		t.Fatalf("get_all_functions: %v", err)
	}
	if n := p.Metric(t, "hms_proxy_default_catalog_routed_total", "method", "get_all_functions"); n != 1 {
		t.Fatalf("hms_proxy_default_catalog_routed_total{method=get_all_functions} = %v", n)
	}
}

// tableMetaNames is get_table_meta(dbPattern, "*") as sorted "db.table" names.
func tableMetaNames(t *testing.T, c *thriftgen.Client, dbPattern string) []string {
	t.Helper()
	metas, err := c.GetTableMeta(e2eutil.Ctx(t), dbPattern, "*", nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, m := range metas {
		seen = append(seen, m.DbName+"."+m.TableName)
	}
	sort.Strings(seen)
	return seen
}
