package policy

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/app"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Issue 20, security items 1 and 2: with expose rules, a hidden object does
// not exist for the caller in any RPC family, and nothing aimed at it
// changes a metastore. Each backend holds database pub (tables vis_a and
// hid_x, each with partition p=1) and database sec (table t1 with p=1,
// function f1); the rules show pub and, in it, vis_* only. Every test
// compares what the metastore holds, read directly, before and after.

// exposureWorld is one proxy over catalog1 (hms1, default), hx (hms2, Hive
// 3.1.3) and hy (hms4, Hive 4.1.0), with the rules on hx and hy (and on
// catalog1 when the default catalog's ACID calls are under test).
type exposureWorld struct {
	p        *proxytest.Proxy
	pub, sec string
	direct   map[string]*thriftgen.Client // by catalog
}

// newExposureWorld populates the metastores of cats; with rules, those
// catalogs hide sec and hid_x; extra are more settings (key=value).
func newExposureWorld(t *testing.T, cats []string, rules bool, extra ...string) *exposureWorld {
	t.Helper()
	e2eutil.NeedHive(t)
	id := e2eutil.Uniq("")
	w := &exposureWorld{pub: "bd_pub" + id, sec: "bd_secret" + id, direct: map[string]*thriftgen.Client{
		"catalog1": proxytest.Client(t, e2eutil.HMS1.URI), "hx": proxytest.Client(t, e2eutil.HMS2.URI), "hy": proxytest.Client(t, e2eutil.HMS4.URI)}}
	props := map[string]string{
		"catalogs":                "catalog1,hx,hy",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": e2eutil.HMS1.URI,
		"catalog.hx.conf.hive.metastore.uris":       e2eutil.HMS2.URI,
		"catalog.hy.conf.hive.metastore.uris":       e2eutil.HMS4.URI,
		"catalog.hy.runtime-profile":                "APACHE_4_1_0",
	}
	for _, c := range cats {
		if rules {
			props["catalog."+c+".expose-mode"] = "DENY_BY_DEFAULT"
			props["catalog."+c+".expose-db-patterns"] = w.pub
			props["catalog."+c+".expose-table-patterns."+w.pub] = "vis_.*"
		}
	}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		props[k] = v
	}
	for _, c := range cats {
		d := w.direct[c]
		for _, db := range []string{w.pub, w.sec} {
			e2eutil.MkDB(t, d, db)
		}
		e2eutil.AdPartitioned(t, d, w.pub, "vis_a", "1")
		e2eutil.AdPartitioned(t, d, w.pub, "hid_x", "1")
		e2eutil.AdPartitioned(t, d, w.sec, "t1", "1")
		if err := d.CreateFunction(e2eutil.Ctx(t), &thriftgen.Function{FunctionName: "f1", DbName: w.sec, ClassName: "e2e.F",
			OwnerName: "e2e", OwnerType: thriftgen.PrincipalType_USER, FunctionType: thriftgen.FunctionType_JAVA}); err != nil {
			t.Fatal(err)
		}
	}
	w.p = proxytest.Start(t, e2eutil.WithHive4Frontend(t, props))
	return w
}

// ext is a database's name as the clients of catalog cat spell it.
func ext(cat, db string) string {
	if cat == "catalog1" {
		return db
	}
	return cat + "__" + db
}

// backendState renders what a metastore holds of the test's databases:
// databases with their parameters, tables with parameters and columns,
// partitions, functions, column statistics, locks, and the test principal's
// privileges on each table. Calls both Hive 3.1.3 and 4.1.0 serve.
func (w *exposureWorld) backendState(t *testing.T, c *thriftgen.Client) string {
	t.Helper()
	var b strings.Builder
	for _, db := range []string{w.pub, w.sec} {
		d, err := c.GetDatabase(e2eutil.Ctx(t), db)
		if err != nil {
			fmt.Fprintf(&b, "database %s: %v\n", db, err)
			continue
		}
		fmt.Fprintf(&b, "database %s %q %v\n", d.Name, d.Description, sortedParams(d.Parameters))
		tables, err := c.GetAllTables(e2eutil.Ctx(t), db)
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(tables)
		for _, name := range tables {
			res, err := c.GetTableReq(e2eutil.Ctx(t), &thriftgen.GetTableRequest{DbName: db, TblName: name})
			if err != nil {
				t.Fatal(err)
			}
			tb := res.Table
			var cols []string
			for _, col := range tb.Sd.Cols {
				cols = append(cols, col.Name+" "+col.Type)
			}
			fmt.Fprintf(&b, "  table %s owner=%s cols=%v %v\n", tb.TableName, tb.Owner, cols, sortedParams(tb.Parameters))
			parts, err := c.GetPartitionNames(e2eutil.Ctx(t), db, name, -1)
			if err != nil {
				t.Fatal(err)
			}
			sort.Strings(parts)
			fmt.Fprintf(&b, "    partitions %v\n", parts)
			stats, err := c.GetTableStatisticsReq(e2eutil.Ctx(t), &thriftgen.TableStatsRequest{DbName: db, TblName: name,
				ColNames: []string{"id"}, Engine: e2eutil.Strp("hive")})
			if err == nil {
				fmt.Fprintf(&b, "    column statistics %d\n", len(stats.TableStats))
			}
			privs, err := c.ListPrivileges(e2eutil.Ctx(t), "e2e_exposure", thriftgen.PrincipalType_USER,
				&thriftgen.HiveObjectRef{ObjectType: thriftgen.HiveObjectType_TABLE, DbName: db, ObjectName: name})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "    privileges %d\n", len(privs))
		}
		fns, err := c.GetFunctions(e2eutil.Ctx(t), db, "*")
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(fns)
		fmt.Fprintf(&b, "  functions %v\n", fns)
	}
	locks, err := c.ShowLocks(e2eutil.Ctx(t), &thriftgen.ShowLocksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range locks.Locks {
		if (l.Dbname == w.pub || l.Dbname == w.sec) && l.Tablename != nil {
			fmt.Fprintf(&b, "lock %s.%s %s %s\n", l.Dbname, *l.Tablename, l.Type, l.State)
		}
	}
	return b.String()
}

func sortedParams(m map[string]string) []string {
	var out []string
	for k, v := range m {
		switch k {
		case "transient_lastDdlTime", "last_modified_time", "last_modified_by":
			continue
		}
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// exposureCall is one attempt and the answer it must get.
type exposureCall struct {
	name string
	read bool // changes nothing: a READ_ONLY catalog serves it
	call func(c *thriftgen.Client) error
	// want checks the error: "" when it is the expected one.
	want func(err error) string
}

func exc[T error](what string) func(error) string {
	return func(err error) string {
		var e T
		if !errors.As(err, &e) {
			return fmt.Sprintf("want %T naming %s, got %v", e, what, err)
		}
		if !strings.Contains(err.Error(), what) {
			return fmt.Sprintf("%T does not name %s as the client does: %v", e, what, err)
		}
		return ""
	}
}

func appExc(what string) func(error) string {
	return func(err error) string {
		var e thrift.TApplicationException
		if !errors.As(err, &e) || !strings.Contains(err.Error(), what) {
			return fmt.Sprintf("want a TApplicationException naming %s, got %v", what, err)
		}
		return ""
	}
}

// calls aimed at hidden objects of catalog cat, in every family the
// thrift API has, with the exception each RPC declares for a missing
// object (the client's names in its text).
func (w *exposureWorld) calls(t *testing.T, cat string) []exposureCall {
	sec, pub := ext(cat, w.sec), ext(cat, w.pub)
	hidTable := pub + ".hid_x"
	tbl := func(db, name string) *thriftgen.Table {
		tb := e2eutil.Table(db, name)
		tb.PartitionKeys = []*thriftgen.FieldSchema{{Name: "p", Type: "string"}}
		return tb
	}
	part := func(db, t string) *thriftgen.Partition {
		return &thriftgen.Partition{DbName: db, TableName: t, Values: []string{"2"}, Sd: tbl(db, t).Sd, Parameters: map[string]string{}}
	}
	stats := func(db, t string) *thriftgen.ColumnStatistics {
		return &thriftgen.ColumnStatistics{StatsDesc: &thriftgen.ColumnStatisticsDesc{IsTblLevel: true, DbName: db, TableName: t},
			StatsObj: []*thriftgen.ColumnStatisticsObj{{ColName: "id", ColType: "bigint",
				StatsData: &thriftgen.ColumnStatisticsData{LongStats: &thriftgen.LongColumnStatsData{NumNulls: 1, NumDVs: 9}}}},
			Engine: e2eutil.Strp("hive")}
	}
	lockOn := func(db, t string, typ thriftgen.LockType) *thriftgen.LockRequest {
		op := thriftgen.DataOperationType_NO_TXN
		return &thriftgen.LockRequest{User: "e2e", Hostname: "localhost", Component: []*thriftgen.LockComponent{{Type: typ,
			Level: thriftgen.LockLevel_TABLE, Dbname: db, Tablename: &t, OperationType: &op}}}
	}
	grant := func(db, t string) *thriftgen.PrivilegeBag {
		return &thriftgen.PrivilegeBag{Privileges: []*thriftgen.HiveObjectPrivilege{{
			HiveObject:    &thriftgen.HiveObjectRef{ObjectType: thriftgen.HiveObjectType_TABLE, DbName: db, ObjectName: t},
			PrincipalName: "e2e_exposure", PrincipalType: thriftgen.PrincipalType_USER,
			GrantInfo: &thriftgen.PrivilegeGrantInfo{Privilege: "SELECT", Grantor: "e2e", GrantorType: thriftgen.PrincipalType_USER}}}}
	}
	nso, meta := exc[*thriftgen.NoSuchObjectException], exc[*thriftgen.MetaException]
	calls := []exposureCall{
		// metadata reads, both forms
		{"get_database", true, func(c *thriftgen.Client) error { _, err := c.GetDatabase(e2eutil.Ctx(t), sec); return err }, nso(sec)},
		{"get_table_req", true, func(c *thriftgen.Client) error {
			_, err := c.GetTableReq(e2eutil.Ctx(t), &thriftgen.GetTableRequest{DbName: pub, TblName: "hid_x"})
			return err
		}, nso(hidTable)},
		{"get_table_objects_by_name_req", true, func(c *thriftgen.Client) error {
			_, err := c.GetTableObjectsByNameReq(e2eutil.Ctx(t), &thriftgen.GetTablesRequest{DbName: sec, TblNames: []string{"t1"}})
			return err
		}, exc[*thriftgen.UnknownDBException](sec)},
		{"get_fields", true, func(c *thriftgen.Client) error { _, err := c.GetFields(e2eutil.Ctx(t), pub, "hid_x"); return err },
			exc[*thriftgen.UnknownTableException](hidTable)},
		{"get_partition_names", true, func(c *thriftgen.Client) error {
			_, err := c.GetPartitionNames(e2eutil.Ctx(t), sec, "t1", -1)
			return err
		}, nso(sec)},
		// metadata writes
		{"drop_database cascade", false, func(c *thriftgen.Client) error { return c.DropDatabase(e2eutil.Ctx(t), sec, false, true) }, nso(sec)},
		{"drop_table (hidden database)", false, func(c *thriftgen.Client) error { return c.DropTable(e2eutil.Ctx(t), sec, "t1", true) }, nso(sec)},
		{"drop_table (hidden table)", false, func(c *thriftgen.Client) error { return c.DropTable(e2eutil.Ctx(t), pub, "hid_x", true) }, nso(hidTable)},
		{"alter_table", false, func(c *thriftgen.Client) error {
			nt := tbl(pub, "hid_x")
			nt.Parameters["altered"] = "yes"
			return c.AlterTable(e2eutil.Ctx(t), pub, "hid_x", nt)
		}, exc[*thriftgen.InvalidOperationException](hidTable)},
		{"alter_table_with_environment_context (rename a visible table onto a hidden name)", false, func(c *thriftgen.Client) error {
			return c.AlterTableWithEnvironmentContext(e2eutil.Ctx(t), pub, "vis_a", tbl(pub, "hid_new"), nil)
		}, meta(pub + ".hid_new is hidden by the exposure rules")},
		{"create_table in a hidden database", false, func(c *thriftgen.Client) error { return c.CreateTable(e2eutil.Ctx(t), tbl(sec, "t_new")) }, nso(sec)},
		{"create_table of a hidden name", false, func(c *thriftgen.Client) error { return c.CreateTable(e2eutil.Ctx(t), tbl(pub, "hid_new")) },
			meta(pub + ".hid_new is hidden by the exposure rules of catalog " + cat)},
		{"create_database of a hidden name", false, func(c *thriftgen.Client) error {
			return c.CreateDatabase(e2eutil.Ctx(t), &thriftgen.Database{Name: sec + "_2"})
		}, meta(sec + "_2 is hidden by the exposure rules")},
		{"alter_database", false, func(c *thriftgen.Client) error {
			return c.AlterDatabase(e2eutil.Ctx(t), sec, &thriftgen.Database{Name: sec, Description: "altered"})
		}, nso(sec)},
		{"truncate_table", false, func(c *thriftgen.Client) error { return c.TruncateTable(e2eutil.Ctx(t), pub, "hid_x", nil) }, meta(hidTable)},
		// partitions
		{"add_partition", false, func(c *thriftgen.Client) error { _, err := c.AddPartition(e2eutil.Ctx(t), part(sec, "t1")); return err },
			exc[*thriftgen.InvalidObjectException](sec)},
		{"add_partitions_req", false, func(c *thriftgen.Client) error {
			_, err := c.AddPartitionsReq(e2eutil.Ctx(t), &thriftgen.AddPartitionsRequest{DbName: pub, TblName: "hid_x",
				Parts: []*thriftgen.Partition{part(pub, "hid_x")}, IfNotExists: true})
			return err
		}, exc[*thriftgen.InvalidObjectException](hidTable)},
		{"drop_partition", false, func(c *thriftgen.Client) error {
			_, err := c.DropPartition(e2eutil.Ctx(t), sec, "t1", []string{"1"}, true)
			return err
		}, nso(sec)},
		{"alter_partitions", false, func(c *thriftgen.Client) error {
			p := part(pub, "hid_x")
			p.Values = []string{"1"}
			return c.AlterPartitions(e2eutil.Ctx(t), pub, "hid_x", []*thriftgen.Partition{p})
		}, exc[*thriftgen.InvalidOperationException](hidTable)},
		// statistics, constraints, functions, privileges
		{"update_table_column_statistics", false, func(c *thriftgen.Client) error {
			_, err := c.UpdateTableColumnStatistics(e2eutil.Ctx(t), stats(pub, "hid_x"))
			return err
		}, nso(hidTable)},
		{"add_primary_key", false, func(c *thriftgen.Client) error {
			return c.AddPrimaryKey(e2eutil.Ctx(t), &thriftgen.AddPrimaryKeyRequest{PrimaryKeyCols: []*thriftgen.SQLPrimaryKey{{
				TableDb: pub, TableName: "hid_x", ColumnName: "id", KeySeq: 1, PkName: "pk_e2e"}}})
		}, nso(hidTable)},
		{"create_function", false, func(c *thriftgen.Client) error {
			return c.CreateFunction(e2eutil.Ctx(t), &thriftgen.Function{FunctionName: "f2", DbName: sec, ClassName: "e2e.F",
				OwnerName: "e2e", OwnerType: thriftgen.PrincipalType_USER, FunctionType: thriftgen.FunctionType_JAVA})
		}, nso(sec)},
		{"grant_privileges", false, func(c *thriftgen.Client) error {
			_, err := c.GrantPrivileges(e2eutil.Ctx(t), grant(pub, "hid_x"))
			return err
		},
			meta(hidTable)},
		// locks: an EXCLUSIVE lock declares neither a not-found exception
		// nor MetaException: Hive's processor answers such a failure with
		// a TApplicationException, and so does the proxy
		{"lock EXCLUSIVE", false, func(c *thriftgen.Client) error {
			_, err := c.Lock(e2eutil.Ctx(t), lockOn(pub, "hid_x", thriftgen.LockType_EXCLUSIVE))
			return err
		}, appExc(hidTable)},
		{"lock split over two catalogs", true, func(c *thriftgen.Client) error {
			r := lockOn(pub, "vis_a", thriftgen.LockType_SHARED_READ)
			r.Component = append(r.Component, lockOn(ext("catalog1", w.sec), "t1", thriftgen.LockType_SHARED_READ).Component...)
			r.Component[0].Dbname = sec
			_, err := c.Lock(e2eutil.Ctx(t), r)
			return err
		}, appExc(sec)},
	}
	return calls
}

// req4 are Hive 4's *_req forms of the calls, for an APACHE_4_1_0 listener.
func (w *exposureWorld) req4(t *testing.T, cat string) []exposureCall {
	sec, pub := ext(cat, w.sec), ext(cat, w.pub)
	hidTable := pub + ".hid_x"
	nso, meta := exc[*thriftgen.NoSuchObjectException], exc[*thriftgen.MetaException]
	tbl := func(db, name string) *thriftgen.Table {
		tb := e2eutil.Table(db, name)
		tb.PartitionKeys = []*thriftgen.FieldSchema{{Name: "p", Type: "string"}}
		return tb
	}
	return []exposureCall{
		{"get_database_req", true, func(c *thriftgen.Client) error {
			_, err := c.GetDatabaseReq(e2eutil.Ctx(t), &thriftgen.GetDatabaseRequest{Name: &sec, CatalogName: e2eutil.Strp("hive")})
			return err
		}, nso(sec)},
		{"drop_database_req", false, func(c *thriftgen.Client) error {
			return c.DropDatabaseReq(e2eutil.Ctx(t), &thriftgen.DropDatabaseRequest{Name: sec, DeleteData: true, Cascade: true})
		}, nso(sec)},
		{"create_table_req in a hidden database", false, func(c *thriftgen.Client) error {
			return c.CreateTableReq(e2eutil.Ctx(t), &thriftgen.CreateTableRequest{Table: tbl(sec, "t_new")})
		}, nso(sec)},
		{"drop_table_req", false, func(c *thriftgen.Client) error {
			return c.DropTableReq(e2eutil.Ctx(t), &thriftgen.DropTableRequest{DbName: pub, TableName: "hid_x"})
		}, nso(hidTable)},
		{"alter_table_req", false, func(c *thriftgen.Client) error {
			_, err := c.AlterTableReq(e2eutil.Ctx(t), &thriftgen.AlterTableRequest{DbName: pub, TableName: "hid_x", Table: tbl(pub, "hid_x")})
			return err
		}, exc[*thriftgen.InvalidOperationException](hidTable)},
		{"alter_table_req (rename onto a hidden name)", false, func(c *thriftgen.Client) error {
			_, err := c.AlterTableReq(e2eutil.Ctx(t), &thriftgen.AlterTableRequest{DbName: pub, TableName: "vis_a", Table: tbl(pub, "hid_new")})
			return err
		}, meta(pub + ".hid_new is hidden by the exposure rules")},
		{"get_partitions_req", true, func(c *thriftgen.Client) error {
			_, err := c.GetPartitionsReq(e2eutil.Ctx(t), &thriftgen.PartitionsRequest{DbName: pub, TblName: "hid_x"})
			return err
		}, nso(hidTable)},
		{"alter_partitions_req", false, func(c *thriftgen.Client) error {
			_, err := c.AlterPartitionsReq(e2eutil.Ctx(t), &thriftgen.AlterPartitionsRequest{DbName: pub, TableName: "hid_x",
				Partitions: []*thriftgen.Partition{{DbName: pub, TableName: "hid_x", Values: []string{"1"}, Sd: tbl(pub, "hid_x").Sd}}})
			return err
		}, exc[*thriftgen.InvalidOperationException](hidTable)},
		{"truncate_table_req", false, func(c *thriftgen.Client) error {
			_, err := c.TruncateTableReq(e2eutil.Ctx(t), &thriftgen.TruncateTableRequest{DbName: pub, TableName: "hid_x"})
			return err
		}, meta(hidTable)},
		{"update_table_column_statistics_req", false, func(c *thriftgen.Client) error {
			_, err := c.UpdateTableColumnStatisticsReq(e2eutil.Ctx(t), &thriftgen.SetPartitionsStatsRequest{Engine: e2eutil.Strp("hive"),
				ColStats: []*thriftgen.ColumnStatistics{{StatsDesc: &thriftgen.ColumnStatisticsDesc{IsTblLevel: true, DbName: pub, TableName: "hid_x"},
					StatsObj: []*thriftgen.ColumnStatisticsObj{{ColName: "id", ColType: "bigint",
						StatsData: &thriftgen.ColumnStatisticsData{LongStats: &thriftgen.LongColumnStatsData{NumNulls: 1, NumDVs: 9}}}},
					Engine: e2eutil.Strp("hive")}}})
			return err
		}, nso(hidTable)},
	}
}

// positional3 are the positional calls only Hive 3.1.3 has (an APACHE_3_1_3
// listener serves them on either catalog).
func (w *exposureWorld) positional3(t *testing.T, cat string) []exposureCall {
	sec := ext(cat, w.sec)
	return []exposureCall{
		// The positional form declares no exception at all: for a missing
		// database Hive itself answers "Internal error processing
		// get_table_objects_by_name", a TApplicationException.
		{"get_table_objects_by_name", true, func(c *thriftgen.Client) error {
			_, err := c.GetTableObjectsByName(e2eutil.Ctx(t), sec, []string{"t1"})
			return err
		}, appExc(sec)},
	}
}

// Every family of the Thrift API, aimed at hidden objects of a Hive 3.1.3
// and a Hive 4.1.0 catalog through the generated client: each call gets the
// RPC's declared not-found exception in the client's names, is counted, and
// neither metastore changes; lists and fan-out leave the hidden objects
// out; the same calls on visible objects work.
func TestExposureHidesObjectsFromEveryRPCFamily(t *testing.T) {
	w := newExposureWorld(t, []string{"hx", "hy"}, true)
	c := proxytest.Client(t, w.p.URI("primary"))
	before := map[string]string{"hx": w.backendState(t, w.direct["hx"]), "hy": w.backendState(t, w.direct["hy"])}
	c4 := proxytest.Client(t, w.p.URI("hive4"))
	for _, cat := range []string{"hx", "hy"} {
		for _, call := range append(w.calls(t, cat), w.positional3(t, cat)...) {
			if why := call.want(call.call(c)); why != "" {
				t.Errorf("%s on %s: %s", call.name, cat, why)
			}
		}
		for _, call := range w.req4(t, cat) {
			if why := call.want(call.call(c4)); why != "" {
				t.Errorf("%s on %s (APACHE_4_1_0 listener): %s", call.name, cat, why)
			}
		}
		pub := ext(cat, w.pub)
		// lists and lookups of several names leave the hidden ones out
		tables, err := c.GetAllTables(e2eutil.Ctx(t), pub)
		if err != nil || strings.Join(tables, ",") != "vis_a" {
			t.Errorf("get_all_tables(%s) = %v %v, want [vis_a]", pub, tables, err)
		}
		objs, err := c.GetTableObjectsByNameReq(e2eutil.Ctx(t), &thriftgen.GetTablesRequest{DbName: pub, TblNames: []string{"vis_a", "hid_x"}})
		if err != nil || len(objs.Tables) != 1 || objs.Tables[0].TableName != "vis_a" {
			t.Errorf("get_table_objects_by_name_req(%s, vis_a hid_x) = %+v %v, want vis_a alone", pub, objs, err)
		}
		// visible objects work
		if _, err := c.GetTableReq(e2eutil.Ctx(t), &thriftgen.GetTableRequest{DbName: pub, TblName: "vis_a"}); err != nil {
			t.Errorf("get_table_req of the visible %s.vis_a: %v", pub, err)
		}
	}
	// fan-out
	dbs, err := c.GetAllDatabases(e2eutil.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dbs {
		if strings.Contains(d, w.sec) {
			t.Errorf("get_all_databases lists the hidden %s", d)
		}
	}
	seen := tableMetaNames(t, c, "*"+strings.TrimPrefix(w.pub, "bd_pub")+"*")
	if want := "hx__" + w.pub + ".vis_a hy__" + w.pub + ".vis_a"; strings.Join(seen, " ") != want {
		t.Errorf("get_table_meta = %v, want %s", seen, want)
	}
	for cat, was := range before {
		if now := w.backendState(t, w.direct[cat]); now != was {
			t.Errorf("catalog %s's metastore changed:\nbefore:\n%s\nafter:\n%s", cat, was, now)
		}
	}
	for _, cat := range []string{"hx", "hy"} {
		if n := w.p.Metric(t, "hms_proxy_filtered_objects_total", "method", "drop_database", "catalog", cat, "object_type", "database"); n != 1 {
			t.Errorf("hms_proxy_filtered_objects_total{drop_database,%s,database} = %v, want 1", cat, n)
		}
		if n := w.p.Metric(t, "hms_proxy_filtered_objects_total", "method", "alter_table", "catalog", cat, "object_type", "table"); n != 1 {
			t.Errorf("hms_proxy_filtered_objects_total{alter_table,%s,table} = %v, want 1", cat, n)
		}
	}
}

// The default catalog's ACID calls name their tables too: write ids, valid
// write ids, compactions and write notifications of hidden tables are
// refused, and the metastore's own locks on hidden tables do not show.
func TestExposureCoversTheDefaultCatalogsACIDCalls(t *testing.T) {
	w := newExposureWorld(t, []string{"catalog1"}, true)
	c := proxytest.Client(t, w.p.URI("primary"))
	direct := w.direct["catalog1"]
	// A lock the metastore holds on the hidden table, taken directly.
	hidden := "hid_x"
	op := thriftgen.DataOperationType_SELECT
	held, err := direct.Lock(e2eutil.Ctx(t), &thriftgen.LockRequest{User: "e2e", Hostname: "localhost", Component: []*thriftgen.LockComponent{{
		Type: thriftgen.LockType_SHARED_READ, Level: thriftgen.LockLevel_TABLE, Dbname: w.pub, Tablename: &hidden, OperationType: &op}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = direct.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: held.Lockid}) })
	before := w.backendState(t, direct)
	txns, err := c.OpenTxns(e2eutil.Ctx(t), &thriftgen.OpenTxnRequest{NumTxns: 1, User: "e2e", Hostname: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	txn := txns.TxnIds[0]
	defer func() { _ = c.AbortTxn(e2eutil.Ctx(t), &thriftgen.AbortTxnRequest{Txnid: txn}) }()
	meta := exc[*thriftgen.MetaException]
	for _, call := range []exposureCall{
		{"allocate_table_write_ids", false, func(c *thriftgen.Client) error {
			_, err := c.AllocateTableWriteIds(e2eutil.Ctx(t), &thriftgen.AllocateTableWriteIdsRequest{TxnIds: []int64{txn}, DbName: w.sec, TableName: "t1"})
			return err
		}, meta(w.sec)},
		{"get_valid_write_ids", false, func(c *thriftgen.Client) error {
			_, err := c.GetValidWriteIds(e2eutil.Ctx(t), &thriftgen.GetValidWriteIdsRequest{FullTableNames: []string{w.pub + ".vis_a", w.pub + ".hid_x"},
				ValidTxnList: e2eutil.Strp(fmt.Sprintf("%d:%d::", txn, txn))})
			return err
		}, meta(w.pub + ".hid_x")},
		{"compact", false, func(c *thriftgen.Client) error {
			return c.Compact(e2eutil.Ctx(t), &thriftgen.CompactionRequest{Dbname: w.pub, Tablename: "hid_x", Type: thriftgen.CompactionType_MAJOR})
		}, appExc(w.pub + ".hid_x")},
		{"lock in a transaction", false, func(c *thriftgen.Client) error {
			shared := thriftgen.DataOperationType_INSERT
			_, err := c.Lock(e2eutil.Ctx(t), &thriftgen.LockRequest{Txnid: &txn, User: "e2e", Hostname: "localhost", Component: []*thriftgen.LockComponent{{
				Type: thriftgen.LockType_SHARED_READ, Level: thriftgen.LockLevel_TABLE, Dbname: w.sec, Tablename: e2eutil.Strp("t1"), OperationType: &shared}}})
			return err
		}, exc[*thriftgen.TxnAbortedException](w.sec)}, // the refusal aborts the transaction, so HiveServer2 leaves none open
	} {
		if why := call.want(call.call(c)); why != "" {
			t.Errorf("%s: %s", call.name, why)
		}
	}
	locks, err := c.ShowLocks(e2eutil.Ctx(t), &thriftgen.ShowLocksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range locks.Locks {
		if l.Dbname == w.pub && l.Tablename != nil && *l.Tablename == hidden {
			t.Errorf("show_locks shows the metastore's lock on the hidden %s.%s", w.pub, hidden)
		}
	}
	if now := w.backendState(t, direct); now != before {
		t.Errorf("the default catalog's metastore changed:\nbefore:\n%s\nafter:\n%s", before, now)
	}
}

// The stock Java HiveMetaStoreClient 3.1.3 and 4.1.0 (Hive 4's sends the
// *_req forms) through the proxy: every call aimed at a hidden object fails
// with the exception Hive's client declares, and neither metastore changes.
func TestExposureWithTheJavaClients(t *testing.T) {
	w := newExposureWorld(t, []string{"hx", "hy"}, true)
	before := map[string]string{"hx": w.backendState(t, w.direct["hx"]), "hy": w.backendState(t, w.direct["hy"])}
	for client, listener := range map[testbed.Version]string{testbed.Hive313: "primary", testbed.Hive410: "hive4"} {
		for _, cat := range []string{"hx", "hy"} {
			testbed.RunScenarioT(t, client, w.p.URI(listener), "exposure",
				"--secret-db", ext(cat, w.sec), "--pub-db", ext(cat, w.pub), "--hidden-table", "hid_x",
				"--visible-table", "vis_a", "--secret-table", "t1")
		}
	}
	for cat, was := range before {
		if now := w.backendState(t, w.direct[cat]); now != was {
			t.Errorf("catalog %s's metastore changed:\nbefore:\n%s\nafter:\n%s", cat, was, now)
		}
	}
}

// The Iceberg REST door talks to the router like any client: PyIceberg's
// RestCatalog gets NoSuchNamespace/NoSuchTable (404) for every call aimed at
// a hidden namespace or table, a create of a hidden name is forbidden (403),
// lists leave them out, and the metastore does not change.
func TestRESTExposureHidesObjectsFromEveryCall(t *testing.T) {
	e2eutil.NeedHive(t)
	direct := proxytest.Client(t, e2eutil.HMS2.URI)
	id := e2eutil.Uniq("")
	pub, sec := "rpub"+id, "rsec"+id
	for _, db := range []string{pub, sec} {
		e2eutil.MkDB(t, direct, db)
	}
	for _, tb := range [][2]string{{pub, "vis_a"}, {pub, "hid_x"}, {sec, "t1"}} {
		tbl := e2eutil.Table(tb[0], tb[1])
		tbl.Parameters["table_type"] = "ICEBERG"
		tbl.Parameters["metadata_location"] = "file:///nonexistent/" + tb[0] + "/" + tb[1] + "/v1.metadata.json"
		if err := direct.CreateTable(e2eutil.Ctx(t), tbl); err != nil {
			t.Fatal(err)
		}
	}
	w := &exposureWorld{pub: pub, sec: sec}
	before := w.backendState(t, direct)
	p := e2eutil.StartREST(t, e2eutil.TwoCatalogs("catalog.catalog2.expose-mode=DENY_BY_DEFAULT",
		"catalog.catalog2.expose-db-patterns="+pub, "catalog.catalog2.expose-table-patterns."+pub+"=vis_.*"), app.TestHooks{})
	var got map[string]struct {
		OK        string `json:"ok"`
		ErrorType string `json:"error_type"`
		Message   string `json:"message"`
	}
	e2eutil.RestPy(t, map[string]any{"scenario": "hidden", "uri": p.Base, "warehouse": "catalog2", "pub": pub, "sec": sec}, &got)
	want := map[string]string{
		"load_namespace_properties": "NoSuchNamespaceError", "list_tables": "NoSuchNamespaceError",
		"update_namespace_properties": "NoSuchNamespaceError", "drop_namespace": "NoSuchNamespaceError",
		"create_table_in_hidden_namespace": "NoSuchNamespaceError", "load_table_in_hidden_namespace": "NoSuchTableError",
		"drop_table_in_hidden_namespace": "NoSuchTableError", "load_table": "NoSuchTableError", "drop_table": "NoSuchTableError",
		"purge_table": "NoSuchTableError", "rename_from_hidden": "NoSuchTableError",
		"rename_onto_hidden": "ForbiddenError", "create_table_of_hidden_name": "ForbiddenError",
		"create_namespace_of_hidden_name": "ForbiddenError",
	}
	for call, typ := range want {
		if g := got[call]; g.ErrorType != typ {
			t.Errorf("PyIceberg %s: %+v, want %s", call, g, typ)
		}
	}
	if g := got["table_exists"]; g.OK != "False" {
		t.Errorf("table_exists of the hidden table: %+v", g)
	}
	if g := got["list_namespaces"]; strings.Contains(g.OK, sec) || !strings.Contains(g.OK, pub) {
		t.Errorf("list_namespaces: %+v", g)
	}
	if g := got["list_tables_of_visible"]; g.OK != "['"+pub+".vis_a']" {
		t.Errorf("list_tables(%s): %+v", pub, g)
	}
	if now := w.backendState(t, direct); now != before {
		t.Errorf("the metastore changed:\nbefore:\n%s\nafter:\n%s", before, now)
	}
	for _, path := range []string{"/v1/catalog1/namespaces/catalog2__" + sec, "/v1/catalog1/namespaces/catalog2__" + pub + "/tables/hid_x"} {
		if a := p.Do(t, "DELETE", path, nil); a.Status != 404 {
			t.Errorf("DELETE %s: %d %v, want 404", path, a.Status, a.Body)
		}
	}
}

// The access mode over the same calls, on catalogs that hide nothing: on
// READ_ONLY Hive 3.1.3 and 4.1.0 catalogs every write of every family, each
// *_req form and each payload write (an EXCLUSIVE lock, a rename, statistics,
// privileges) is refused naming READ_ONLY, every read is served, and
// neither metastore changes; the same through the stock Java clients.
func TestReadOnlyRefusesEveryWriteFamily(t *testing.T) {
	w := newExposureWorld(t, []string{"hx", "hy"}, false, "catalog.hx.access-mode=READ_ONLY", "catalog.hy.access-mode=READ_ONLY")
	c, c4 := proxytest.Client(t, w.p.URI("primary")), proxytest.Client(t, w.p.URI("hive4"))
	before := map[string]string{"hx": w.backendState(t, w.direct["hx"]), "hy": w.backendState(t, w.direct["hy"])}
	for _, cat := range []string{"hx", "hy"} {
		run := func(client *thriftgen.Client, calls []exposureCall) {
			for _, call := range calls {
				err := call.call(client)
				switch {
				case call.read && strings.HasPrefix(call.name, "lock"):
					// a SHARED_READ lock of the split: served (or refused for its other catalog)
				case call.read && err != nil:
					t.Errorf("%s on %s: a read failed: %v", call.name, cat, err)
				case !call.read && (err == nil || !strings.Contains(err.Error(), "is READ_ONLY (catalog."+cat+".access-mode)")):
					t.Errorf("%s on %s: want a READ_ONLY refusal, got %v", call.name, cat, err)
				}
			}
		}
		run(c, append(w.calls(t, cat), w.positional3(t, cat)...))
		run(c4, w.req4(t, cat))
	}
	for client, listener := range map[testbed.Version]string{testbed.Hive313: "primary", testbed.Hive410: "hive4"} {
		for _, cat := range []string{"hx", "hy"} {
			testbed.RunScenarioT(t, client, w.p.URI(listener), "exposure",
				"--secret-db", ext(cat, w.sec), "--pub-db", ext(cat, w.pub), "--hidden-table", "hid_x",
				"--visible-table", "vis_a", "--secret-table", "t1", "--refusal", "is READ_ONLY (catalog."+cat+".access-mode)")
		}
	}
	for cat, was := range before {
		if now := w.backendState(t, w.direct[cat]); now != was {
			t.Errorf("catalog %s's metastore changed:\nbefore:\n%s\nafter:\n%s", cat, was, now)
		}
	}
}
