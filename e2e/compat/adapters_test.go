package compat

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Every compatibility adapter against real metastores, with a Tap between
// the proxy and the metastore: each row shows what the client got AND what
// the backend received (the positional or *_req calls, with internal
// database names), not only that an answer came back.

func newAdapterEnv(t *testing.T, hive4 bool) *e2eutil.AdapterEnv {
	t.Helper()
	backend, runtime := e2eutil.HMS2, "APACHE_3_1_3"
	if hive4 {
		backend, runtime = e2eutil.HMS4, "APACHE_4_1_0"
	}
	e := &e2eutil.AdapterEnv{Db: e2eutil.Uniq("ad")}
	e.Direct = proxytest.Client(t, backend.URI)
	e.Direct1 = proxytest.Client(t, e2eutil.HMS1.URI)
	e.Tap1, e.Tap2 = proxytest.NewTap(t, e2eutil.HMS1.URI), proxytest.NewTap(t, backend.URI)
	e.P = proxytest.Start(t, e2eutil.WithHive4Frontend(t, e2eutil.TwoCatalogs(
		"catalog.catalog1.conf.hive.metastore.uris="+e.Tap1.URI(),
		"catalog.catalog2.conf.hive.metastore.uris="+e.Tap2.URI(),
		"catalog.catalog2.runtime-profile="+runtime)))
	e.C3 = proxytest.Client(t, e.P.URI("primary"))
	e.C4 = proxytest.Client(t, e.P.URI("hive4"))
	e2eutil.MkDB(t, e.Direct, e.Db)
	return e
}

// adOutcome classifies an answer for comparing the proxy with a real Hive 4.1
// server: ok, NoSuchObjectException, MetaException or other.
func adOutcome(err error) string {
	var me *thriftgen.MetaException
	switch {
	case err == nil:
		return "ok"
	case e2eutil.IsNotFound(err):
		return "NoSuchObjectException"
	case errors.As(err, &me):
		return "MetaException"
	}
	return "other: " + err.Error()
}

// at follows field ids down a struct tree (nil when absent).
func adAt(v *wire.Value, ids ...int16) *wire.Value {
	for _, id := range ids {
		if v == nil {
			return nil
		}
		v = v.Field(id)
	}
	return v
}

func adStrList(v *wire.Value) []string {
	if v == nil {
		return nil
	}
	out := []string{}
	for _, e := range v.Elems {
		out = append(out, string(e.Str))
	}
	return out
}

func adPartVals(ps []*thriftgen.Partition) []string {
	var out []string
	for _, p := range ps {
		out = append(out, strings.Join(p.Values, "/"))
	}
	sort.Strings(out)
	return out
}

func adSorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func adSame(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !reflect.DeepEqual(adSorted(got), adSorted(want)) {
		t.Fatalf("%s: got %q, want %q", what, got, want)
	}
}

func adAppErr(t *testing.T, err error, typ int32, fragments ...string) {
	t.Helper()
	var app thrift.TApplicationException
	if !errors.As(err, &app) || app.TypeId() != typ {
		t.Fatalf("want TApplicationException type %d containing %q, got %v", typ, fragments, err)
	}
	for _, f := range fragments {
		if !strings.Contains(app.Error(), f) {
			t.Fatalf("TApplicationException %q lacks %q", app.Error(), f)
		}
	}
}

func adI16(v int16) *int16 { return &v }
func adBool(v bool) *bool  { return &v }

func adapterRows() []e2eutil.AdapterRow {
	rows := append(baseAdapterRows(), hive4ClientAdapterRows()...) // the latter: hive4client_test.go
	return append(rows, e2eutil.HiveServer2AdapterRows()...)       // hiveserver2_test.go
}

func baseAdapterRows() []e2eutil.AdapterRow {
	return append([]e2eutil.AdapterRow{
		// ---- upgrades: positional reads served by a Hive 4.1 backend ----
		{Name: "get_table", Method: "get_table", Hive4: true, Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e2eutil.MkTable(t, e.Direct, e.Db, "t1")
			tb, err := e.C3.GetTable(e2eutil.Ctx(t), e.Ext(), "t1")
			if err != nil || tb.TableName != "t1" || tb.DbName != e.Ext() || len(tb.Sd.Cols) != 1 || tb.Sd.Cols[0].Name != "id" {
				t.Fatalf("get_table through the proxy: %+v %v", tb, err)
			}
			calls := e.BackendSaw(t, e.Tap2, "get_table", e.Db, "get_table_req")
			if got := adAt(&calls[0].Args, 1, 1).String(); got != e.Db { // GetTableRequest.dbName
				t.Fatalf("get_table_req.dbName = %q, want %q", got, e.Db)
			}
			if got := adAt(&calls[0].Args, 1, 2).String(); got != "t1" {
				t.Fatalf("get_table_req.tblName = %q", got)
			}
		}},
		{Name: "get_table_objects_by_name", Method: "get_table_objects_by_name", Hive4: true, Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e2eutil.MkTable(t, e.Direct, e.Db, "t1")
			e2eutil.MkTable(t, e.Direct, e.Db, "t2")
			tbs, err := e.C3.GetTableObjectsByName(e2eutil.Ctx(t), e.Ext(), []string{"t1", "t2", "missing"})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tb := range tbs {
				if tb.DbName != e.Ext() {
					t.Fatalf("table %s answered with database %q, want %q", tb.TableName, tb.DbName, e.Ext())
				}
				names = append(names, tb.TableName)
			}
			adSame(t, "tables", names, []string{"t1", "t2"})
			calls := e.BackendSaw(t, e.Tap2, "get_table_objects_by_name", e.Db, "get_table_objects_by_name_req")
			adSame(t, "GetTablesRequest.tblNames", adStrList(adAt(&calls[0].Args, 1, 2)), []string{"t1", "t2", "missing"})
		}},

		// ---- downgrades: Hive 4 wrappers served by a Hive 3.1.3 backend ----
		{Name: "get_database_req", Method: "get_database_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			name := e.Ext()
			db, err := e.C4.GetDatabaseReq(e2eutil.Ctx(t), &thriftgen.GetDatabaseRequest{Name: &name})
			if err != nil || db.Name != e.Ext() || db.Description != "e2e" {
				t.Fatalf("get_database_req: %+v %v", db, err)
			}
			calls := e.BackendSaw(t, e.Tap2, "get_database_req", e.Db, "get_database")
			if got := adAt(&calls[0].Args, 1).String(); got != e.Db {
				t.Fatalf("get_database(name=%q), want %q", got, e.Db)
			}
			missing := "catalog2__" + e2eutil.Uniq("nope")
			if _, err := e.C4.GetDatabaseReq(e2eutil.Ctx(t), &thriftgen.GetDatabaseRequest{Name: &missing}); !e2eutil.IsNotFound(err) {
				t.Fatalf("a missing database must stay NoSuchObjectException, got %v", err)
			}
		}},
		{Name: "create_table_req", Method: "create_table_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			err := e.C4.CreateTableReq(e2eutil.Ctx(t), &thriftgen.CreateTableRequest{Table: e2eutil.Table(e.Ext(), "t1"),
				EnvContext: &thriftgen.EnvironmentContext{Properties: map[string]string{"e2e.marker": "yes"}}})
			if err != nil {
				t.Fatal(err)
			}
			if tb, err := e.Direct.GetTable(e2eutil.Ctx(t), e.Db, "t1"); err != nil || tb.DbName != e.Db {
				t.Fatalf("the backend does not hold %s.t1: %+v %v", e.Db, tb, err)
			}
			calls := e.BackendSaw(t, e.Tap2, "create_table_req", e.Db, "create_table_with_environment_context")
			if got := adAt(&calls[0].Args, 1, 2).String(); got != e.Db { // Table.dbName
				t.Fatalf("create_table_with_environment_context: Table.dbName = %q", got)
			}
			if env := adAt(&calls[0].Args, 2, 1); env == nil || !e2eutil.AdContains(e2eutil.AdStrings(env), "e2e.marker") {
				t.Fatal("the environment context did not reach the backend")
			}
		}},
		{Name: "create_table_req with constraints", Method: "create_table_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			err := e.C4.CreateTableReq(e2eutil.Ctx(t), &thriftgen.CreateTableRequest{Table: e2eutil.Table(e.Ext(), "t1"),
				PrimaryKeys: []*thriftgen.SQLPrimaryKey{{TableDb: e.Ext(), TableName: "t1", ColumnName: "id", KeySeq: 1, PkName: "pk_t1"}}})
			if err != nil {
				t.Fatal(err)
			}
			pks, err := e.Direct.GetPrimaryKeys(e2eutil.Ctx(t), &thriftgen.PrimaryKeysRequest{DbName: e.Db, TblName: "t1"})
			if err != nil || len(pks.PrimaryKeys) != 1 || pks.PrimaryKeys[0].PkName != "pk_t1" {
				t.Fatalf("the backend lacks the primary key: %+v %v", pks, err)
			}
			calls := e.BackendSaw(t, e.Tap2, "create_table_req", e.Db, "create_table_with_constraints")
			if got := adAt(&calls[0].Args, 2).Elems; len(got) != 1 || adAt(&got[0], 1).String() != e.Db {
				t.Fatalf("create_table_with_constraints: primary keys %+v", got)
			}
		}},
		{Name: "create_table_req with constraints and a context", Method: "create_table_req", Refusal: true, Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			err := e.C4.CreateTableReq(e2eutil.Ctx(t), &thriftgen.CreateTableRequest{Table: e2eutil.Table(e.Ext(), "t1"),
				EnvContext:  &thriftgen.EnvironmentContext{Properties: map[string]string{"k": "v"}},
				PrimaryKeys: []*thriftgen.SQLPrimaryKey{{TableDb: e.Ext(), TableName: "t1", ColumnName: "id", KeySeq: 1, PkName: "pk"}}})
			e.Refused(t, err, "create_table_req", "environment context")
		}},
		{Name: "alter_table_req", Method: "alter_table_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e2eutil.MkTable(t, e.Direct, e.Db, "t1")
			tb, err := e.Direct.GetTable(e2eutil.Ctx(t), e.Db, "t1")
			if err != nil {
				t.Fatal(err)
			}
			tb.DbName = e.Ext()
			tb.Parameters["altered"] = "through-the-proxy"
			if _, err := e.C4.AlterTableReq(e2eutil.Ctx(t), &thriftgen.AlterTableRequest{DbName: e.Ext(), TableName: "t1", Table: tb}); err != nil {
				t.Fatal(err)
			}
			if got, err := e.Direct.GetTable(e2eutil.Ctx(t), e.Db, "t1"); err != nil || got.Parameters["altered"] != "through-the-proxy" {
				t.Fatalf("the backend's table was not altered: %v %v", got.Parameters, err)
			}
			// The Iceberg pointer guard (on by default) reads the record
			// first; the table is no Iceberg table, so the alter goes as sent.
			calls := e.BackendSaw(t, e.Tap2, "alter_table_req", e.Db, "get_table_req", "alter_table_with_environment_context")
			if adAt(&calls[1].Args, 1).String() != e.Db || adAt(&calls[1].Args, 2).String() != "t1" || adAt(&calls[1].Args, 3, 2).String() != e.Db {
				t.Fatalf("alter_table_with_environment_context args: %q", e2eutil.AdStrings(&calls[1].Args))
			}
		}},
		{Name: "alter_table_req with expectedParameterKey", Method: "alter_table_req", Refusal: true, Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e2eutil.MkTable(t, e.Direct, e.Db, "t1")
			tb := e2eutil.Table(e.Ext(), "t1")
			tb.Parameters["altered"] = "yes"
			_, err := e.C4.AlterTableReq(e2eutil.Ctx(t), &thriftgen.AlterTableRequest{DbName: e.Ext(), TableName: "t1", Table: tb,
				ExpectedParameterKey: e2eutil.Strp("owner_lock"), ExpectedParameterValue: e2eutil.Strp("1")})
			e.Refused(t, err, "alter_table_req", "expectedParameterKey")
			if got, _ := e.Direct.GetTable(e2eutil.Ctx(t), e.Db, "t1"); got == nil || got.Parameters["altered"] != "" {
				t.Fatal("a refused conditional alter changed the table")
			}
		}},
		{Name: "alter_table_req with a writeId", Method: "alter_table_req", Refusal: true, Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			_, err := e.C4.AlterTableReq(e2eutil.Ctx(t), &thriftgen.AlterTableRequest{DbName: e.Ext(), TableName: "t1", Table: e2eutil.Table(e.Ext(), "t1"), WriteId: e2eutil.AdI64(7)})
			e.Refused(t, err, "alter_table_req", "writeId")
		}},
		{Name: "get_partitions_by_names_req", Method: "get_partitions_by_names_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e.Partitioned(t, "pt", "1", "2", "3")
			res, err := e.C4.GetPartitionsByNamesReq(e2eutil.Ctx(t), &thriftgen.GetPartitionsByNamesRequest{DbName: e.Ext(), TblName: "pt", Names: []string{"p=1", "p=3"}})
			if err != nil {
				t.Fatal(err)
			}
			want, err := e.Direct.GetPartitionsByNames(e2eutil.Ctx(t), e.Db, "pt", []string{"p=1", "p=3"})
			if err != nil {
				t.Fatal(err)
			}
			adSame(t, "partitions", adPartVals(res.Partitions), adPartVals(want))
			adSame(t, "partitions", adPartVals(res.Partitions), []string{"1", "3"})
			for _, p := range res.Partitions {
				if p.DbName != e.Ext() {
					t.Fatalf("partition answered with database %q, want %q", p.DbName, e.Ext())
				}
			}
			calls := e.BackendSaw(t, e.Tap2, "get_partitions_by_names_req", e.Db, "get_partitions_by_names")
			if adAt(&calls[0].Args, 1).String() != e.Db || adAt(&calls[0].Args, 2).String() != "pt" {
				t.Fatalf("get_partitions_by_names args %q", e2eutil.AdStrings(&calls[0].Args))
			}
			adSame(t, "get_partitions_by_names names", adStrList(adAt(&calls[0].Args, 3)), []string{"p=1", "p=3"})
		}},
		{Name: "get_partitions_by_names_req with get_col_stats", Method: "get_partitions_by_names_req", Refusal: true, Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			_, err := e.C4.GetPartitionsByNamesReq(e2eutil.Ctx(t), &thriftgen.GetPartitionsByNamesRequest{DbName: e.Ext(), TblName: "pt",
				Names: []string{"p=1"}, GetColStats: adBool(true)})
			e.Refused(t, err, "get_col_stats")
		}},
		{Name: "get_partition_req", Method: "get_partition_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e.Partitioned(t, "pt", "1", "2")
			res, err := e.C4.GetPartitionReq(e2eutil.Ctx(t), &thriftgen.GetPartitionRequest{DbName: e.Ext(), TblName: "pt", PartVals: []string{"2"}})
			if err != nil || res.Partition == nil || strings.Join(res.Partition.Values, ",") != "2" || res.Partition.DbName != e.Ext() {
				t.Fatalf("get_partition_req: %+v %v", res, err)
			}
			calls := e.BackendSaw(t, e.Tap2, "get_partition_req", e.Db, "get_partition")
			adSame(t, "get_partition part_vals", adStrList(adAt(&calls[0].Args, 3)), []string{"2"})
			if _, err := e.C4.GetPartitionReq(e2eutil.Ctx(t), &thriftgen.GetPartitionRequest{DbName: e.Ext(), TblName: "pt", PartVals: []string{"9"}}); !e2eutil.IsNotFound(err) {
				t.Fatalf("a missing partition must stay NoSuchObjectException, got %v", err)
			}
		}},
		{Name: "get_partitions_req", Method: "get_partitions_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e.Partitioned(t, "pt", "1", "2", "3")
			res, err := e.C4.GetPartitionsReq(e2eutil.Ctx(t), &thriftgen.PartitionsRequest{DbName: e.Ext(), TblName: "pt"})
			if err != nil {
				t.Fatal(err)
			}
			adSame(t, "partitions", adPartVals(res.Partitions), []string{"1", "2", "3"})
			e.BackendSaw(t, e.Tap2, "get_partitions_req", e.Db, "get_partitions")
			e.Tap2.Reset()
			res, err = e.C4.GetPartitionsReq(e2eutil.Ctx(t), &thriftgen.PartitionsRequest{DbName: e.Ext(), TblName: "pt", MaxParts: adI16(2)})
			if err != nil || len(res.Partitions) != 2 {
				t.Fatalf("maxParts=2: %v %v", res, err)
			}
			calls := e.BackendSaw(t, e.Tap2, "get_partitions_req", e.Db, "get_partitions")
			if mp := adAt(&calls[0].Args, 3); mp == nil || mp.Int != 2 {
				t.Fatalf("get_partitions max_parts = %+v, want 2", mp)
			}
		}},
		{Name: "fetch_partition_names_req", Method: "fetch_partition_names_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e.Partitioned(t, "pt", "1", "2", "3")
			names, err := e.C4.FetchPartitionNamesReq(e2eutil.Ctx(t), &thriftgen.PartitionsRequest{DbName: e.Ext(), TblName: "pt"})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := e.Direct.GetPartitionNames(e2eutil.Ctx(t), e.Db, "pt", -1)
			adSame(t, "partition names", names, want)
			adSame(t, "partition names", names, []string{"p=1", "p=2", "p=3"})
			e.BackendSaw(t, e.Tap2, "fetch_partition_names_req", e.Db, "get_partition_names")
		}},
		{Name: "get_partition_names_ps_req", Method: "get_partition_names_ps_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e.Partitioned(t, "pt", "1", "2")
			res, err := e.C4.GetPartitionNamesPsReq(e2eutil.Ctx(t), &thriftgen.GetPartitionNamesPsRequest{DbName: e.Ext(), TblName: "pt", PartValues: []string{"2"}})
			if err != nil {
				t.Fatal(err)
			}
			adSame(t, "partition names", res.Names, []string{"p=2"})
			calls := e.BackendSaw(t, e.Tap2, "get_partition_names_ps_req", e.Db, "get_partition_names_ps")
			adSame(t, "get_partition_names_ps part_vals", adStrList(adAt(&calls[0].Args, 3)), []string{"2"})
		}},
		{Name: "get_partitions_ps_with_auth_req", Method: "get_partitions_ps_with_auth_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e.Partitioned(t, "pt", "1", "2")
			res, err := e.C4.GetPartitionsPsWithAuthReq(e2eutil.Ctx(t), &thriftgen.GetPartitionsPsWithAuthRequest{DbName: e.Ext(), TblName: "pt",
				PartVals: []string{"1"}, UserName: e2eutil.Strp("alice"), GroupNames: []string{"analysts"}})
			if err != nil {
				t.Fatal(err)
			}
			adSame(t, "partitions", adPartVals(res.Partitions), []string{"1"})
			calls := e.BackendSaw(t, e.Tap2, "get_partitions_ps_with_auth_req", e.Db, "get_partitions_ps_with_auth")
			if adAt(&calls[0].Args, 5).String() != "alice" || !reflect.DeepEqual(adStrList(adAt(&calls[0].Args, 6)), []string{"analysts"}) {
				t.Fatalf("get_partitions_ps_with_auth lost user/groups: %q", e2eutil.AdStrings(&calls[0].Args))
			}
		}},
		{Name: "get_partitions_ps_with_auth_req with partNames", Method: "get_partitions_ps_with_auth_req", Refusal: true, Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			_, err := e.C4.GetPartitionsPsWithAuthReq(e2eutil.Ctx(t), &thriftgen.GetPartitionsPsWithAuthRequest{DbName: e.Ext(), TblName: "pt", PartNames: []string{"p=1"}})
			e.Refused(t, err, "partNames")
		}},
		{Name: "get_partitions_by_filter_req", Method: "get_partitions_by_filter_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e.Partitioned(t, "pt", "1", "2", "3")
			ps, err := e.C4.GetPartitionsByFilterReq(e2eutil.Ctx(t), &thriftgen.GetPartitionsByFilterRequest{DbName: e.Ext(), TblName: "pt", Filter: `p = "3"`})
			if err != nil {
				t.Fatal(err)
			}
			adSame(t, "partitions", adPartVals(ps), []string{"3"})
			calls := e.BackendSaw(t, e.Tap2, "get_partitions_by_filter_req", e.Db, "get_partitions_by_filter")
			if adAt(&calls[0].Args, 3).String() != `p = "3"` {
				t.Fatalf("get_partitions_by_filter filter = %q", adAt(&calls[0].Args, 3).String())
			}
		}},
		{Name: "drop_table_req", Method: "drop_table_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e2eutil.MkTable(t, e.Direct, e.Db, "t1")
			if err := e.C4.DropTableReq(e2eutil.Ctx(t), &thriftgen.DropTableRequest{DbName: e.Ext(), TableName: "t1", DeleteData: adBool(false)}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Direct.GetTable(e2eutil.Ctx(t), e.Db, "t1"); !e2eutil.IsNotFound(err) {
				t.Fatalf("the backend still holds the table: %v", err)
			}
			calls := e.BackendSaw(t, e.Tap2, "drop_table_req", e.Db, "drop_table_with_environment_context")
			if adAt(&calls[0].Args, 2).String() != "t1" || adAt(&calls[0].Args, 3) == nil || adAt(&calls[0].Args, 3).Int != 0 {
				t.Fatalf("drop_table_with_environment_context args %+v", calls[0].Args)
			}
		}},
		{Name: "truncate_table_req", Method: "truncate_table_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			dir := filepath.Join(t.TempDir(), "managed")
			tb := e2eutil.Table(e.Db, "tm")
			tb.TableType, tb.Parameters = "MANAGED_TABLE", map[string]string{}
			tb.Sd.Location = "file://" + dir
			if err := e.Direct.CreateTable(e2eutil.Ctx(t), tb); err != nil {
				t.Fatal(err)
			}
			data := filepath.Join(dir, "000000_0")
			if err := os.WriteFile(data, []byte("1\n2\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := e.C4.TruncateTableReq(e2eutil.Ctx(t), &thriftgen.TruncateTableRequest{DbName: e.Ext(), TableName: "tm"}); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(data); !os.IsNotExist(err) {
				t.Fatalf("the backend did not truncate: %s still exists (%v)", data, err)
			}
			e.BackendSaw(t, e.Tap2, "truncate_table_req", e.Db, "truncate_table")
		}},
		{Name: "truncate_table_req with a writeId", Method: "truncate_table_req", Refusal: true, Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			_, err := e.C4.TruncateTableReq(e2eutil.Ctx(t), &thriftgen.TruncateTableRequest{DbName: e.Ext(), TableName: "tm", WriteId: e2eutil.AdI64(3)})
			e.Refused(t, err, "writeId")
		}},
		{Name: "rename_partition_req", Method: "rename_partition_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e.Partitioned(t, "pt", "1", "2")
			part, err := e.Direct.GetPartition(e2eutil.Ctx(t), e.Db, "pt", []string{"1"})
			if err != nil {
				t.Fatal(err)
			}
			part.DbName, part.Values = e.Ext(), []string{"9"}
			if _, err := e.C4.RenamePartitionReq(e2eutil.Ctx(t), &thriftgen.RenamePartitionRequest{DbName: e.Ext(), TableName: "pt", PartVals: []string{"1"}, NewPart: part}); err != nil {
				t.Fatal(err)
			}
			names, _ := e.Direct.GetPartitionNames(e2eutil.Ctx(t), e.Db, "pt", -1)
			adSame(t, "partitions after rename", names, []string{"p=2", "p=9"})
			calls := e.BackendSaw(t, e.Tap2, "rename_partition_req", e.Db, "rename_partition")
			adSame(t, "rename_partition part_vals", adStrList(adAt(&calls[0].Args, 3)), []string{"1"})
			if adAt(&calls[0].Args, 4, 2).String() != e.Db {
				t.Fatalf("rename_partition new_part.dbName = %q", adAt(&calls[0].Args, 4, 2).String())
			}
		}},
		{Name: "alter_partitions_req", Method: "alter_partitions_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e.Partitioned(t, "pt", "1", "2")
			part, err := e.Direct.GetPartition(e2eutil.Ctx(t), e.Db, "pt", []string{"2"})
			if err != nil {
				t.Fatal(err)
			}
			part.DbName = e.Ext()
			part.Parameters["altered"] = "yes"
			if _, err := e.C4.AlterPartitionsReq(e2eutil.Ctx(t), &thriftgen.AlterPartitionsRequest{DbName: e.Ext(), TableName: "pt", Partitions: []*thriftgen.Partition{part}}); err != nil {
				t.Fatal(err)
			}
			if got, err := e.Direct.GetPartition(e2eutil.Ctx(t), e.Db, "pt", []string{"2"}); err != nil || got.Parameters["altered"] != "yes" {
				t.Fatalf("the backend's partition was not altered: %+v %v", got, err)
			}
			e.BackendSaw(t, e.Tap2, "alter_partitions_req", e.Db, "alter_partitions_with_environment_context")
		}},
		{Name: "alter_partitions_req with a writeId", Method: "alter_partitions_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			// a transactional table's statistics: kept without COLUMN_STATS_ACCURATE, as a Hive 4.1
			// metastore without transactional statistics keeps them
			e.Partitioned(t, "pt", "1")
			part, err := e.Direct.GetPartition(e2eutil.Ctx(t), e.Db, "pt", []string{"1"})
			if err != nil {
				t.Fatal(err)
			}
			part.DbName, part.Parameters = e.Ext(), map[string]string{"numRows": "5", "COLUMN_STATS_ACCURATE": `{"BASIC_STATS":"true"}`}
			if _, err := e.C4.AlterPartitionsReq(e2eutil.Ctx(t), &thriftgen.AlterPartitionsRequest{DbName: e.Ext(), TableName: "pt",
				Partitions: []*thriftgen.Partition{part}, WriteId: e2eutil.AdI64(4), ValidWriteIdList: e2eutil.Strp(e.Db + ".pt:4:9223372036854775807::")}); err != nil {
				t.Fatal(err)
			}
			e.BackendSaw(t, e.Tap2, "alter_partitions_req", e.Db, "alter_partitions_with_environment_context")
			got, err := e.Direct.GetPartition(e2eutil.Ctx(t), e.Db, "pt", []string{"1"})
			if err != nil || got.Parameters["numRows"] != "5" || got.Parameters["COLUMN_STATS_ACCURATE"] != "" {
				t.Fatalf("the partition's statistics must be stored, not marked accurate: %+v %v", got, err)
			}
		}},
		{Name: "append_partition_req by values", Method: "append_partition_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e.Partitioned(t, "pt")
			p, err := e.C4.AppendPartitionReq(e2eutil.Ctx(t), &thriftgen.AppendPartitionsRequest{DbName: e.Ext(), TableName: "pt", PartVals: []string{"7"}})
			if err != nil || strings.Join(p.Values, ",") != "7" || p.DbName != e.Ext() {
				t.Fatalf("append_partition_req: %+v %v", p, err)
			}
			if _, err := e.Direct.GetPartition(e2eutil.Ctx(t), e.Db, "pt", []string{"7"}); err != nil {
				t.Fatalf("the backend lacks the appended partition: %v", err)
			}
			calls := e.BackendSaw(t, e.Tap2, "append_partition_req", e.Db, "append_partition_with_environment_context")
			adSame(t, "part_vals", adStrList(adAt(&calls[0].Args, 3)), []string{"7"})
		}},
		{Name: "append_partition_req by name", Method: "append_partition_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e.Partitioned(t, "pt")
			p, err := e.C4.AppendPartitionReq(e2eutil.Ctx(t), &thriftgen.AppendPartitionsRequest{DbName: e.Ext(), TableName: "pt", Name: e2eutil.Strp("p=8")})
			if err != nil || strings.Join(p.Values, ",") != "8" {
				t.Fatalf("append_partition_req by name: %+v %v", p, err)
			}
			calls := e.BackendSaw(t, e.Tap2, "append_partition_req", e.Db, "append_partition_by_name_with_environment_context")
			if adAt(&calls[0].Args, 3).String() != "p=8" {
				t.Fatalf("part_name = %q", adAt(&calls[0].Args, 3).String())
			}
		}},
		{Name: "drop_partition_req by values", Method: "drop_partition_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e.Partitioned(t, "pt", "1", "2")
			ok, err := e.C4.DropPartitionReq(e2eutil.Ctx(t), &thriftgen.DropPartitionRequest{DbName: e.Ext(), TblName: "pt", PartVals: []string{"2"}, DeleteData: adBool(false)})
			if err != nil || !ok {
				t.Fatalf("drop_partition_req: %v %v", ok, err)
			}
			names, _ := e.Direct.GetPartitionNames(e2eutil.Ctx(t), e.Db, "pt", -1)
			adSame(t, "partitions left", names, []string{"p=1"})
			e.BackendSaw(t, e.Tap2, "drop_partition_req", e.Db, "drop_partition_with_environment_context")
		}},
		{Name: "drop_partition_req by name", Method: "drop_partition_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e.Partitioned(t, "pt", "1", "2")
			ok, err := e.C4.DropPartitionReq(e2eutil.Ctx(t), &thriftgen.DropPartitionRequest{DbName: e.Ext(), TblName: "pt", PartName: e2eutil.Strp("p=1"), DeleteData: adBool(false)})
			if err != nil || !ok {
				t.Fatalf("drop_partition_req by name: %v %v", ok, err)
			}
			names, _ := e.Direct.GetPartitionNames(e2eutil.Ctx(t), e.Db, "pt", -1)
			adSame(t, "partitions left", names, []string{"p=2"})
			e.BackendSaw(t, e.Tap2, "drop_partition_req", e.Db, "drop_partition_by_name_with_environment_context")
		}},
	}, moreAdapterRows()...)
}

func adLongStats(db, tbl, part string, ndv int64) *thriftgen.ColumnStatistics {
	desc := &thriftgen.ColumnStatisticsDesc{IsTblLevel: part == "", DbName: db, TableName: tbl}
	if part != "" {
		desc.PartName = &part
	}
	return &thriftgen.ColumnStatistics{StatsDesc: desc, StatsObj: []*thriftgen.ColumnStatisticsObj{{ColName: "id", ColType: "bigint",
		StatsData: &thriftgen.ColumnStatisticsData{LongStats: &thriftgen.LongColumnStatsData{LowValue: e2eutil.AdI64(0), HighValue: e2eutil.AdI64(100), NumNulls: 1, NumDVs: ndv}}}}}
}

// The table must prove every adapter: a new adapter without a row fails here.
func TestAdapterTableCoversEveryAdapter(t *testing.T) {
	adapters := map[string]bool{}
	ads, err := compat.NewAdapters()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range ads.All() {
		adapters[a.Method] = true
	}
	proven := map[string]bool{}
	for _, r := range adapterRows() {
		if !adapters[r.Method] {
			t.Errorf("row %q names %s, which is not an adapter", r.Name, r.Method)
		}
		if !r.Refusal {
			proven[r.Method] = true
		}
	}
	var missing []string
	for m := range adapters {
		if !proven[m] {
			missing = append(missing, m)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("adapters without a row proving the backend received the adapted call: %s", strings.Join(missing, ", "))
	}
}

func TestAdapterAgainstRealMetastores(t *testing.T) {
	e2eutil.NeedHive(t)
	for _, r := range adapterRows() {
		t.Run(strings.ReplaceAll(r.Name, " ", "_"), func(t *testing.T) {
			r.Run(t, newAdapterEnv(t, r.Hive4))
		})
	}
}

// Hive 4-only methods with no safe mapping answer UNKNOWN_METHOD naming the
// catalog and its runtime; nothing reaches a backend.
func TestAdapterlessHive4MethodsAnswerUnknownMethod(t *testing.T) {
	e2eutil.NeedHive(t)
	e := newAdapterEnv(t, false)
	_, err := e.C4.GetDataconnectors(e2eutil.Ctx(t))
	adAppErr(t, err, thrift.UNKNOWN_METHOD, "get_dataconnectors", "catalog1", "APACHE_3_1_3")
	err = e.C4.CreateStoredProcedure(e2eutil.Ctx(t), &thriftgen.StoredProcedure{Name: "p1", DbName: e.Ext(), CatName: "hive", OwnerName: "e2e", Source: "begin end"})
	adAppErr(t, err, thrift.UNKNOWN_METHOD, "create_stored_procedure", "catalog2", "APACHE_3_1_3")
	_, err = e.C4.GetAllPackages(e2eutil.Ctx(t), &thriftgen.ListPackageRequest{CatName: "hive", DbName: e2eutil.Strp(e.Ext())})
	adAppErr(t, err, thrift.UNKNOWN_METHOD, "get_all_packages", "catalog2", "APACHE_3_1_3")
	e.NoBackendCall(t, "Hive 4-only methods without an adapter")
}

// Hortonworks-only methods reach only Hortonworks (or Hive 4) runtimes.
func TestAdapterHortonworksOnlyMethodsRefusedOnApacheBackend(t *testing.T) {
	e2eutil.NeedHive(t)
	e := newAdapterEnv(t, false)
	_, err := e.C4.AddWriteNotificationLog(e2eutil.Ctx(t), &thriftgen.WriteNotificationLogRequest{TxnId: 1, WriteId: 1, Db: e.Ext(), Table: "t1",
		FileInfo: &thriftgen.InsertEventRequestData{FilesAdded: []string{"file:///tmp/f"}}})
	// add_write_notification_log declares no exception: TApplicationException.
	adAppErr(t, err, thrift.INTERNAL_ERROR, "add_write_notification_log needs a backend runtime that has it", "catalog2", "APACHE_3_1_3")
	_, err = e.C4.GetTablesExt(e2eutil.Ctx(t), &thriftgen.GetTablesExtRequest{Catalog: "hive", Database: e.Ext(), TableNamePattern: "*", RequestedFields: 1})
	e2eutil.MetaErr(t, err, "get_tables_ext needs a backend runtime that has it", "catalog2", "APACHE_3_1_3")
	e.NoBackendCall(t, "Hortonworks-only methods")
}

// A read-only service API the backend turns out not to have (it answers
// UNKNOWN_METHOD) gets an empty compatibility answer, counted; other reads
// and other failures reach the client as errors.
//
// A real 3.1.3 backend declared APACHE_3_1_3 can never produce this: that
// profile's method set is the 3.1.3 jar's own, so the proxy never sends it a
// method it lacks (Plan says Unsupported first). It happens when a catalog
// declares a newer runtime than its metastore runs, which is what this test
// sets up: catalog1 declared APACHE_4_1_0, served by a real Hive 3.1.3.
func TestAdapterEmptyCompatFallbackOnUnknownMethod(t *testing.T) {
	e2eutil.NeedHive(t)
	tap := proxytest.NewTap(t, e2eutil.HMS1.URI)
	p := proxytest.Start(t, e2eutil.WithHive4Frontend(t, map[string]string{
		"catalogs": "catalog1", "routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": tap.URI(),
		"catalog.catalog1.runtime-profile":          "APACHE_4_1_0",
	}))
	c := proxytest.Client(t, p.URI("hive4"))

	names, err := c.GetDataconnectors(e2eutil.Ctx(t))
	if err != nil || len(names) != 0 {
		t.Fatalf("get_dataconnectors: want an empty answer, got %v %v", names, err)
	}
	calls := tap.Calls()
	if len(calls) != 1 || calls[0].Method != "get_dataconnectors" {
		t.Fatalf("the backend received %v", tap.Methods())
	}
	if typ, _, ok := calls[0].Reply.AppException(); !ok || typ != wire.AppUnknownMethod {
		t.Fatalf("the real 3.1.3 backend was expected to answer UNKNOWN_METHOD, answered %+v", calls[0].Reply)
	}
	if n := p.Metric(t, "hms_proxy_backend_fallback_total", "method", "get_dataconnectors", "to_api", "empty_unknown_method"); n != 1 {
		t.Fatalf("hms_proxy_backend_fallback_total{method=get_dataconnectors,to_api=empty_unknown_method} = %v", n)
	}

	// A metadata read is not a service API: UNKNOWN_METHOD reaches the client.
	tap.Reset()
	_, err = c.GetDatabaseReq(e2eutil.Ctx(t), &thriftgen.GetDatabaseRequest{Name: e2eutil.Strp("default")})
	adAppErr(t, err, thrift.UNKNOWN_METHOD, "get_database_req")
	if m := tap.Methods(); len(m) != 1 || m[0] != "get_database_req" {
		t.Fatalf("the backend received %v", m)
	}

	// Another failure of a service read is an error, not an empty answer.
	tap.Reset()
	tap.HangUp(true)
	_, err = c.GetDataconnectors(e2eutil.Ctx(t))
	e2eutil.MetaErr(t, err, "catalog1", "get_dataconnectors")
	if m := tap.Methods(); len(m) == 0 || m[0] != "get_dataconnectors" {
		t.Fatalf("the backend was expected to see the call before it died: %v", m)
	}
}

// get_runtime_stats, get_all_resource_plans and get_active_resource_plan
// carry optional data: any backend failure answers empty, counted.
func TestAdapterOptionalReadsAnswerEmptyWhenTheBackendFails(t *testing.T) {
	e2eutil.NeedHive(t)
	optional := func(t *testing.T, c *thriftgen.Client) {
		t.Helper()
		stats, err := c.GetRuntimeStats(e2eutil.Ctx(t), &thriftgen.GetRuntimeStatsRequest{MaxWeight: 10, MaxCreateTime: 0})
		if err != nil || len(stats) != 0 {
			t.Fatalf("get_runtime_stats: %v %v", stats, err)
		}
		plans, err := c.GetAllResourcePlans(e2eutil.Ctx(t), &thriftgen.WMGetAllResourcePlanRequest{})
		if err != nil || len(plans.ResourcePlans) != 0 {
			t.Fatalf("get_all_resource_plans: %+v %v", plans, err)
		}
		active, err := c.GetActiveResourcePlan(e2eutil.Ctx(t), &thriftgen.WMGetActiveResourcePlanRequest{})
		if err != nil || active.ResourcePlan != nil {
			t.Fatalf("get_active_resource_plan: %+v %v", active, err)
		}
	}
	optionalMethods := []string{"get_runtime_stats", "get_all_resource_plans", "get_active_resource_plan"}
	counted := func(t *testing.T, p *proxytest.Proxy) {
		t.Helper()
		for _, m := range optionalMethods {
			if n := p.Metric(t, "hms_proxy_backend_fallback_total", "method", m, "to_api", "empty_error"); n != 1 {
				t.Errorf("hms_proxy_backend_fallback_total{method=%s,to_api=empty_error} = %v", m, n)
			}
		}
	}

	t.Run("backend dies mid-call", func(t *testing.T) {
		tap := proxytest.NewTap(t, e2eutil.HMS1.URI)
		p := proxytest.Start(t, e2eutil.WithHive4Frontend(t, map[string]string{
			"catalogs": "catalog1", "routing.default-catalog": "catalog1",
			"catalog.catalog1.conf.hive.metastore.uris": tap.URI(),
		}))
		c := proxytest.Client(t, p.URI("hive4"))
		// Healthy backend: served natively (empty here: no plans, no stats).
		optional(t, c)
		if m := tap.Methods(); !reflect.DeepEqual(m, optionalMethods) {
			t.Fatalf("the backend received %v", m)
		}
		for _, call := range tap.Calls() {
			if call.Reply == nil || call.Reply.Type != wire.Reply {
				t.Fatalf("%s was not answered normally by the backend: %+v", call.Method, call.Reply)
			}
		}
		if n := p.Metric(t, "hms_proxy_backend_fallback_total"); n != 0 {
			t.Fatalf("no fallback expected with a healthy backend, counted %v", n)
		}
		tap.Reset()
		tap.HangUp(true)
		optional(t, c)
		for _, call := range tap.Calls() {
			if !call.HungUp {
				t.Fatalf("%s reached the backend", call.Method)
			}
		}
		counted(t, p)
	})
	t.Run("metastore stopped", func(t *testing.T) {
		// Nothing listens on the catalog's port.
		p := proxytest.Start(t, e2eutil.WithHive4Frontend(t, map[string]string{
			"catalogs": "catalog1", "routing.default-catalog": "catalog1",
			"catalog.catalog1.conf.hive.metastore.uris": "thrift://127.0.0.1:" + strconv.Itoa(proxytest.FreePort(t)),
		}))
		optional(t, proxytest.Client(t, p.URI("hive4")))
		counted(t, p)
		// A read that is not optional fails as an error.
		if _, err := proxytest.Client(t, p.URI("hive4")).GetAllFunctions(e2eutil.Ctx(t)); err == nil {
			t.Fatal("get_all_functions with the metastore down must fail")
		}
	})
}
