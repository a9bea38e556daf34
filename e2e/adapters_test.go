package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

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

// adapterEnv is one row's deployment: catalog1 (default, Hive 3.1.3) and
// catalog2 (Hive 3.1.3, or Hive 4.1 for the upgrade adapters), each behind a
// Tap, with the primary APACHE_3_1_3 listener and an APACHE_4_1_0 one.
type adapterEnv struct {
	p          *proxytest.Proxy
	tap1, tap2 *proxytest.Tap
	direct     *thriftgen.Client // catalog2's metastore itself
	direct1    *thriftgen.Client // catalog1's metastore itself
	c3, c4     *thriftgen.Client // through the APACHE_3_1_3 and APACHE_4_1_0 listeners
	db         string            // a database on catalog2's metastore (internal name)
}

// ext is the database as clients of the proxy name it.
func (e *adapterEnv) ext() string { return "catalog2__" + e.db }

func newAdapterEnv(t *testing.T, hive4 bool) *adapterEnv {
	t.Helper()
	backend, runtime := hms2, "APACHE_3_1_3"
	if hive4 {
		backend, runtime = hms4, "APACHE_4_1_0"
	}
	e := &adapterEnv{db: uniq("ad")}
	e.direct = proxytest.Client(t, backend.URI)
	e.direct1 = proxytest.Client(t, hms1.URI)
	e.tap1, e.tap2 = proxytest.NewTap(t, hms1.URI), proxytest.NewTap(t, backend.URI)
	e.p = proxytest.Start(t, withHive4Frontend(t, twoCatalogs(
		"catalog.catalog1.conf.hive.metastore.uris="+e.tap1.URI(),
		"catalog.catalog2.conf.hive.metastore.uris="+e.tap2.URI(),
		"catalog.catalog2.runtime-profile="+runtime)))
	e.c3 = proxytest.Client(t, e.p.URI("primary"))
	e.c4 = proxytest.Client(t, e.p.URI("hive4"))
	mkDB(t, e.direct, e.db)
	return e
}

// partitioned creates db.name on catalog2's metastore, partitioned by p,
// with partitions p=<vals>.
func (e *adapterEnv) partitioned(t *testing.T, name string, vals ...string) *thriftgen.Table {
	t.Helper()
	return adPartitioned(t, e.direct, e.db, name, vals...)
}

func adPartitioned(t *testing.T, c *thriftgen.Client, db, name string, vals ...string) *thriftgen.Table {
	t.Helper()
	tb := table(db, name)
	tb.PartitionKeys = []*thriftgen.FieldSchema{{Name: "p", Type: "string"}}
	if err := c.CreateTable(ctx(t), tb); err != nil {
		t.Fatalf("create partitioned table %s.%s: %v", db, name, err)
	}
	for _, v := range vals {
		if _, err := c.AddPartition(ctx(t), &thriftgen.Partition{Values: []string{v}, DbName: db, TableName: name,
			Sd: tb.Sd, Parameters: map[string]string{}}); err != nil {
			t.Fatalf("add partition p=%s: %v", v, err)
		}
	}
	return tb
}

// adOutcome classifies an answer for comparing the proxy with a real Hive 4.1
// server: ok, NoSuchObjectException, MetaException or other.
func adOutcome(err error) string {
	var me *thriftgen.MetaException
	switch {
	case err == nil:
		return "ok"
	case isNotFound(err):
		return "NoSuchObjectException"
	case errors.As(err, &me):
		return "MetaException"
	}
	return "other: " + err.Error()
}

// backendSaw asserts that the tap recorded exactly the backend methods want,
// in order, each answered; that the client's own method never reached the
// backend (unless the adapter keeps the name); that every call names the
// internal database and no external ("catalog2__") name; and that the
// adapter was counted. It returns the calls.
func (e *adapterEnv) backendSaw(t *testing.T, tap *proxytest.Tap, clientMethod, internalDB string, want ...string) []proxytest.TapCall {
	t.Helper()
	calls := tap.Calls()
	got := tap.Methods()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: the backend received %v, want %v", clientMethod, got, want)
	}
	for _, c := range calls {
		if c.Method == clientMethod && !adContains(want, clientMethod) {
			t.Fatalf("%s reached the backend unadapted", clientMethod)
		}
		if c.HungUp || c.Reply == nil {
			t.Fatalf("%s: backend call %s got no answer", clientMethod, c.Method)
		}
		if typ, msg, ok := c.Reply.AppException(); ok {
			t.Fatalf("%s: the backend answered %s with TApplicationException %d: %s", clientMethod, c.Method, typ, msg)
		}
		strs := adStrings(&c.Args)
		if internalDB != "" && !adContains(strs, internalDB) {
			t.Fatalf("%s: backend call %s does not name database %s: %q", clientMethod, c.Method, internalDB, strs)
		}
		for _, s := range strs {
			if strings.Contains(s, "catalog2__") {
				t.Fatalf("%s: backend call %s carries the external name %q", clientMethod, c.Method, s)
			}
		}
	}
	if n := e.p.Metric(t, "hms_proxy_backend_fallback_total", "method", clientMethod, "from_api", clientMethod); n < 1 {
		t.Fatalf("hms_proxy_backend_fallback_total{method=%s} = %v: the adapter was not counted", clientMethod, n)
	}
	return calls
}

// noBackendCall asserts that neither metastore received anything.
func (e *adapterEnv) noBackendCall(t *testing.T, what string) {
	t.Helper()
	if m := append(e.tap1.Methods(), e.tap2.Methods()...); len(m) != 0 {
		t.Fatalf("%s: a backend received %v", what, m)
	}
}

// refused asserts a MetaException naming the catalog, its runtime and the
// reason, and that no backend saw the call.
func (e *adapterEnv) refused(t *testing.T, err error, fragments ...string) {
	t.Helper()
	metaErr(t, err, append([]string{"catalog2", "APACHE_3_1_3"}, fragments...)...)
	e.noBackendCall(t, "a refused call")
}

func adContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// wireStrings lists every string in a value tree.
func adStrings(v *wire.Value) []string {
	var out []string
	var walk func(v *wire.Value)
	walk = func(v *wire.Value) {
		if v.Type == wire.TString {
			out = append(out, string(v.Str))
		}
		for i := range v.Fields {
			walk(&v.Fields[i].V)
		}
		for i := range v.Elems {
			walk(&v.Elems[i])
		}
	}
	walk(v)
	return out
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
func adI64(v int64) *int64 { return &v }
func adBool(v bool) *bool  { return &v }

// adapterRow proves one adapter (method) against a real backend. refusal
// rows show what the adapter will not carry; every adapter needs at least
// one row that is not a refusal.
type adapterRow struct {
	name    string
	method  string
	hive4   bool // catalog2 is the Hive 4.1 metastore (upgrade adapters)
	refusal bool
	run     func(t *testing.T, e *adapterEnv)
}

func adapterRows() []adapterRow {
	rows := append(baseAdapterRows(), hive4ClientAdapterRows()...) // the latter: hive4client_test.go
	return append(rows, hiveServer2AdapterRows()...)               // hiveserver2_test.go
}

func baseAdapterRows() []adapterRow {
	return []adapterRow{
		// ---- upgrades: positional reads served by a Hive 4.1 backend ----
		{name: "get_table", method: "get_table", hive4: true, run: func(t *testing.T, e *adapterEnv) {
			mkTable(t, e.direct, e.db, "t1")
			tb, err := e.c3.GetTable(ctx(t), e.ext(), "t1")
			if err != nil || tb.TableName != "t1" || tb.DbName != e.ext() || len(tb.Sd.Cols) != 1 || tb.Sd.Cols[0].Name != "id" {
				t.Fatalf("get_table through the proxy: %+v %v", tb, err)
			}
			calls := e.backendSaw(t, e.tap2, "get_table", e.db, "get_table_req")
			if got := adAt(&calls[0].Args, 1, 1).String(); got != e.db { // GetTableRequest.dbName
				t.Fatalf("get_table_req.dbName = %q, want %q", got, e.db)
			}
			if got := adAt(&calls[0].Args, 1, 2).String(); got != "t1" {
				t.Fatalf("get_table_req.tblName = %q", got)
			}
		}},
		{name: "get_table_objects_by_name", method: "get_table_objects_by_name", hive4: true, run: func(t *testing.T, e *adapterEnv) {
			mkTable(t, e.direct, e.db, "t1")
			mkTable(t, e.direct, e.db, "t2")
			tbs, err := e.c3.GetTableObjectsByName(ctx(t), e.ext(), []string{"t1", "t2", "missing"})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tb := range tbs {
				if tb.DbName != e.ext() {
					t.Fatalf("table %s answered with database %q, want %q", tb.TableName, tb.DbName, e.ext())
				}
				names = append(names, tb.TableName)
			}
			adSame(t, "tables", names, []string{"t1", "t2"})
			calls := e.backendSaw(t, e.tap2, "get_table_objects_by_name", e.db, "get_table_objects_by_name_req")
			adSame(t, "GetTablesRequest.tblNames", adStrList(adAt(&calls[0].Args, 1, 2)), []string{"t1", "t2", "missing"})
		}},

		// ---- downgrades: Hive 4 wrappers served by a Hive 3.1.3 backend ----
		{name: "get_database_req", method: "get_database_req", run: func(t *testing.T, e *adapterEnv) {
			name := e.ext()
			db, err := e.c4.GetDatabaseReq(ctx(t), &thriftgen.GetDatabaseRequest{Name: &name})
			if err != nil || db.Name != e.ext() || db.Description != "e2e" {
				t.Fatalf("get_database_req: %+v %v", db, err)
			}
			calls := e.backendSaw(t, e.tap2, "get_database_req", e.db, "get_database")
			if got := adAt(&calls[0].Args, 1).String(); got != e.db {
				t.Fatalf("get_database(name=%q), want %q", got, e.db)
			}
			missing := "catalog2__" + uniq("nope")
			if _, err := e.c4.GetDatabaseReq(ctx(t), &thriftgen.GetDatabaseRequest{Name: &missing}); !isNotFound(err) {
				t.Fatalf("a missing database must stay NoSuchObjectException, got %v", err)
			}
		}},
		{name: "create_table_req", method: "create_table_req", run: func(t *testing.T, e *adapterEnv) {
			err := e.c4.CreateTableReq(ctx(t), &thriftgen.CreateTableRequest{Table: table(e.ext(), "t1"),
				EnvContext: &thriftgen.EnvironmentContext{Properties: map[string]string{"e2e.marker": "yes"}}})
			if err != nil {
				t.Fatal(err)
			}
			if tb, err := e.direct.GetTable(ctx(t), e.db, "t1"); err != nil || tb.DbName != e.db {
				t.Fatalf("the backend does not hold %s.t1: %+v %v", e.db, tb, err)
			}
			calls := e.backendSaw(t, e.tap2, "create_table_req", e.db, "create_table_with_environment_context")
			if got := adAt(&calls[0].Args, 1, 2).String(); got != e.db { // Table.dbName
				t.Fatalf("create_table_with_environment_context: Table.dbName = %q", got)
			}
			if env := adAt(&calls[0].Args, 2, 1); env == nil || !adContains(adStrings(env), "e2e.marker") {
				t.Fatal("the environment context did not reach the backend")
			}
		}},
		{name: "create_table_req with constraints", method: "create_table_req", run: func(t *testing.T, e *adapterEnv) {
			err := e.c4.CreateTableReq(ctx(t), &thriftgen.CreateTableRequest{Table: table(e.ext(), "t1"),
				PrimaryKeys: []*thriftgen.SQLPrimaryKey{{TableDb: e.ext(), TableName: "t1", ColumnName: "id", KeySeq: 1, PkName: "pk_t1"}}})
			if err != nil {
				t.Fatal(err)
			}
			pks, err := e.direct.GetPrimaryKeys(ctx(t), &thriftgen.PrimaryKeysRequest{DbName: e.db, TblName: "t1"})
			if err != nil || len(pks.PrimaryKeys) != 1 || pks.PrimaryKeys[0].PkName != "pk_t1" {
				t.Fatalf("the backend lacks the primary key: %+v %v", pks, err)
			}
			calls := e.backendSaw(t, e.tap2, "create_table_req", e.db, "create_table_with_constraints")
			if got := adAt(&calls[0].Args, 2).Elems; len(got) != 1 || adAt(&got[0], 1).String() != e.db {
				t.Fatalf("create_table_with_constraints: primary keys %+v", got)
			}
		}},
		{name: "create_table_req with constraints and a context", method: "create_table_req", refusal: true, run: func(t *testing.T, e *adapterEnv) {
			err := e.c4.CreateTableReq(ctx(t), &thriftgen.CreateTableRequest{Table: table(e.ext(), "t1"),
				EnvContext:  &thriftgen.EnvironmentContext{Properties: map[string]string{"k": "v"}},
				PrimaryKeys: []*thriftgen.SQLPrimaryKey{{TableDb: e.ext(), TableName: "t1", ColumnName: "id", KeySeq: 1, PkName: "pk"}}})
			e.refused(t, err, "create_table_req", "environment context")
		}},
		{name: "alter_table_req", method: "alter_table_req", run: func(t *testing.T, e *adapterEnv) {
			mkTable(t, e.direct, e.db, "t1")
			tb, err := e.direct.GetTable(ctx(t), e.db, "t1")
			if err != nil {
				t.Fatal(err)
			}
			tb.DbName = e.ext()
			tb.Parameters["altered"] = "through-the-proxy"
			if _, err := e.c4.AlterTableReq(ctx(t), &thriftgen.AlterTableRequest{DbName: e.ext(), TableName: "t1", Table: tb}); err != nil {
				t.Fatal(err)
			}
			if got, err := e.direct.GetTable(ctx(t), e.db, "t1"); err != nil || got.Parameters["altered"] != "through-the-proxy" {
				t.Fatalf("the backend's table was not altered: %v %v", got.Parameters, err)
			}
			// The Iceberg pointer guard (on by default) reads the record
			// first; the table is no Iceberg table, so the alter goes as sent.
			calls := e.backendSaw(t, e.tap2, "alter_table_req", e.db, "get_table_req", "alter_table_with_environment_context")
			if adAt(&calls[1].Args, 1).String() != e.db || adAt(&calls[1].Args, 2).String() != "t1" || adAt(&calls[1].Args, 3, 2).String() != e.db {
				t.Fatalf("alter_table_with_environment_context args: %q", adStrings(&calls[1].Args))
			}
		}},
		{name: "alter_table_req with expectedParameterKey", method: "alter_table_req", refusal: true, run: func(t *testing.T, e *adapterEnv) {
			mkTable(t, e.direct, e.db, "t1")
			tb := table(e.ext(), "t1")
			tb.Parameters["altered"] = "yes"
			_, err := e.c4.AlterTableReq(ctx(t), &thriftgen.AlterTableRequest{DbName: e.ext(), TableName: "t1", Table: tb,
				ExpectedParameterKey: strp("owner_lock"), ExpectedParameterValue: strp("1")})
			e.refused(t, err, "alter_table_req", "expectedParameterKey")
			if got, _ := e.direct.GetTable(ctx(t), e.db, "t1"); got == nil || got.Parameters["altered"] != "" {
				t.Fatal("a refused conditional alter changed the table")
			}
		}},
		{name: "alter_table_req with a writeId", method: "alter_table_req", refusal: true, run: func(t *testing.T, e *adapterEnv) {
			_, err := e.c4.AlterTableReq(ctx(t), &thriftgen.AlterTableRequest{DbName: e.ext(), TableName: "t1", Table: table(e.ext(), "t1"), WriteId: adI64(7)})
			e.refused(t, err, "alter_table_req", "writeId")
		}},
		{name: "get_partitions_by_names_req", method: "get_partitions_by_names_req", run: func(t *testing.T, e *adapterEnv) {
			e.partitioned(t, "pt", "1", "2", "3")
			res, err := e.c4.GetPartitionsByNamesReq(ctx(t), &thriftgen.GetPartitionsByNamesRequest{DbName: e.ext(), TblName: "pt", Names: []string{"p=1", "p=3"}})
			if err != nil {
				t.Fatal(err)
			}
			want, err := e.direct.GetPartitionsByNames(ctx(t), e.db, "pt", []string{"p=1", "p=3"})
			if err != nil {
				t.Fatal(err)
			}
			adSame(t, "partitions", adPartVals(res.Partitions), adPartVals(want))
			adSame(t, "partitions", adPartVals(res.Partitions), []string{"1", "3"})
			for _, p := range res.Partitions {
				if p.DbName != e.ext() {
					t.Fatalf("partition answered with database %q, want %q", p.DbName, e.ext())
				}
			}
			calls := e.backendSaw(t, e.tap2, "get_partitions_by_names_req", e.db, "get_partitions_by_names")
			if adAt(&calls[0].Args, 1).String() != e.db || adAt(&calls[0].Args, 2).String() != "pt" {
				t.Fatalf("get_partitions_by_names args %q", adStrings(&calls[0].Args))
			}
			adSame(t, "get_partitions_by_names names", adStrList(adAt(&calls[0].Args, 3)), []string{"p=1", "p=3"})
		}},
		{name: "get_partitions_by_names_req with get_col_stats", method: "get_partitions_by_names_req", refusal: true, run: func(t *testing.T, e *adapterEnv) {
			_, err := e.c4.GetPartitionsByNamesReq(ctx(t), &thriftgen.GetPartitionsByNamesRequest{DbName: e.ext(), TblName: "pt",
				Names: []string{"p=1"}, GetColStats: adBool(true)})
			e.refused(t, err, "get_col_stats")
		}},
		{name: "get_partition_req", method: "get_partition_req", run: func(t *testing.T, e *adapterEnv) {
			e.partitioned(t, "pt", "1", "2")
			res, err := e.c4.GetPartitionReq(ctx(t), &thriftgen.GetPartitionRequest{DbName: e.ext(), TblName: "pt", PartVals: []string{"2"}})
			if err != nil || res.Partition == nil || strings.Join(res.Partition.Values, ",") != "2" || res.Partition.DbName != e.ext() {
				t.Fatalf("get_partition_req: %+v %v", res, err)
			}
			calls := e.backendSaw(t, e.tap2, "get_partition_req", e.db, "get_partition")
			adSame(t, "get_partition part_vals", adStrList(adAt(&calls[0].Args, 3)), []string{"2"})
			if _, err := e.c4.GetPartitionReq(ctx(t), &thriftgen.GetPartitionRequest{DbName: e.ext(), TblName: "pt", PartVals: []string{"9"}}); !isNotFound(err) {
				t.Fatalf("a missing partition must stay NoSuchObjectException, got %v", err)
			}
		}},
		{name: "get_partitions_req", method: "get_partitions_req", run: func(t *testing.T, e *adapterEnv) {
			e.partitioned(t, "pt", "1", "2", "3")
			res, err := e.c4.GetPartitionsReq(ctx(t), &thriftgen.PartitionsRequest{DbName: e.ext(), TblName: "pt"})
			if err != nil {
				t.Fatal(err)
			}
			adSame(t, "partitions", adPartVals(res.Partitions), []string{"1", "2", "3"})
			e.backendSaw(t, e.tap2, "get_partitions_req", e.db, "get_partitions")
			e.tap2.Reset()
			res, err = e.c4.GetPartitionsReq(ctx(t), &thriftgen.PartitionsRequest{DbName: e.ext(), TblName: "pt", MaxParts: adI16(2)})
			if err != nil || len(res.Partitions) != 2 {
				t.Fatalf("maxParts=2: %v %v", res, err)
			}
			calls := e.backendSaw(t, e.tap2, "get_partitions_req", e.db, "get_partitions")
			if mp := adAt(&calls[0].Args, 3); mp == nil || mp.Int != 2 {
				t.Fatalf("get_partitions max_parts = %+v, want 2", mp)
			}
		}},
		{name: "fetch_partition_names_req", method: "fetch_partition_names_req", run: func(t *testing.T, e *adapterEnv) {
			e.partitioned(t, "pt", "1", "2", "3")
			names, err := e.c4.FetchPartitionNamesReq(ctx(t), &thriftgen.PartitionsRequest{DbName: e.ext(), TblName: "pt"})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := e.direct.GetPartitionNames(ctx(t), e.db, "pt", -1)
			adSame(t, "partition names", names, want)
			adSame(t, "partition names", names, []string{"p=1", "p=2", "p=3"})
			e.backendSaw(t, e.tap2, "fetch_partition_names_req", e.db, "get_partition_names")
		}},
		{name: "get_partition_names_ps_req", method: "get_partition_names_ps_req", run: func(t *testing.T, e *adapterEnv) {
			e.partitioned(t, "pt", "1", "2")
			res, err := e.c4.GetPartitionNamesPsReq(ctx(t), &thriftgen.GetPartitionNamesPsRequest{DbName: e.ext(), TblName: "pt", PartValues: []string{"2"}})
			if err != nil {
				t.Fatal(err)
			}
			adSame(t, "partition names", res.Names, []string{"p=2"})
			calls := e.backendSaw(t, e.tap2, "get_partition_names_ps_req", e.db, "get_partition_names_ps")
			adSame(t, "get_partition_names_ps part_vals", adStrList(adAt(&calls[0].Args, 3)), []string{"2"})
		}},
		{name: "get_partitions_ps_with_auth_req", method: "get_partitions_ps_with_auth_req", run: func(t *testing.T, e *adapterEnv) {
			e.partitioned(t, "pt", "1", "2")
			res, err := e.c4.GetPartitionsPsWithAuthReq(ctx(t), &thriftgen.GetPartitionsPsWithAuthRequest{DbName: e.ext(), TblName: "pt",
				PartVals: []string{"1"}, UserName: strp("alice"), GroupNames: []string{"analysts"}})
			if err != nil {
				t.Fatal(err)
			}
			adSame(t, "partitions", adPartVals(res.Partitions), []string{"1"})
			calls := e.backendSaw(t, e.tap2, "get_partitions_ps_with_auth_req", e.db, "get_partitions_ps_with_auth")
			if adAt(&calls[0].Args, 5).String() != "alice" || !reflect.DeepEqual(adStrList(adAt(&calls[0].Args, 6)), []string{"analysts"}) {
				t.Fatalf("get_partitions_ps_with_auth lost user/groups: %q", adStrings(&calls[0].Args))
			}
		}},
		{name: "get_partitions_ps_with_auth_req with partNames", method: "get_partitions_ps_with_auth_req", refusal: true, run: func(t *testing.T, e *adapterEnv) {
			_, err := e.c4.GetPartitionsPsWithAuthReq(ctx(t), &thriftgen.GetPartitionsPsWithAuthRequest{DbName: e.ext(), TblName: "pt", PartNames: []string{"p=1"}})
			e.refused(t, err, "partNames")
		}},
		{name: "get_partitions_by_filter_req", method: "get_partitions_by_filter_req", run: func(t *testing.T, e *adapterEnv) {
			e.partitioned(t, "pt", "1", "2", "3")
			ps, err := e.c4.GetPartitionsByFilterReq(ctx(t), &thriftgen.GetPartitionsByFilterRequest{DbName: e.ext(), TblName: "pt", Filter: `p = "3"`})
			if err != nil {
				t.Fatal(err)
			}
			adSame(t, "partitions", adPartVals(ps), []string{"3"})
			calls := e.backendSaw(t, e.tap2, "get_partitions_by_filter_req", e.db, "get_partitions_by_filter")
			if adAt(&calls[0].Args, 3).String() != `p = "3"` {
				t.Fatalf("get_partitions_by_filter filter = %q", adAt(&calls[0].Args, 3).String())
			}
		}},
		{name: "drop_table_req", method: "drop_table_req", run: func(t *testing.T, e *adapterEnv) {
			mkTable(t, e.direct, e.db, "t1")
			if err := e.c4.DropTableReq(ctx(t), &thriftgen.DropTableRequest{DbName: e.ext(), TableName: "t1", DeleteData: adBool(false)}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.direct.GetTable(ctx(t), e.db, "t1"); !isNotFound(err) {
				t.Fatalf("the backend still holds the table: %v", err)
			}
			calls := e.backendSaw(t, e.tap2, "drop_table_req", e.db, "drop_table_with_environment_context")
			if adAt(&calls[0].Args, 2).String() != "t1" || adAt(&calls[0].Args, 3) == nil || adAt(&calls[0].Args, 3).Int != 0 {
				t.Fatalf("drop_table_with_environment_context args %+v", calls[0].Args)
			}
		}},
		{name: "truncate_table_req", method: "truncate_table_req", run: func(t *testing.T, e *adapterEnv) {
			dir := filepath.Join(t.TempDir(), "managed")
			tb := table(e.db, "tm")
			tb.TableType, tb.Parameters = "MANAGED_TABLE", map[string]string{}
			tb.Sd.Location = "file://" + dir
			if err := e.direct.CreateTable(ctx(t), tb); err != nil {
				t.Fatal(err)
			}
			data := filepath.Join(dir, "000000_0")
			if err := os.WriteFile(data, []byte("1\n2\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := e.c4.TruncateTableReq(ctx(t), &thriftgen.TruncateTableRequest{DbName: e.ext(), TableName: "tm"}); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(data); !os.IsNotExist(err) {
				t.Fatalf("the backend did not truncate: %s still exists (%v)", data, err)
			}
			e.backendSaw(t, e.tap2, "truncate_table_req", e.db, "truncate_table")
		}},
		{name: "truncate_table_req with a writeId", method: "truncate_table_req", refusal: true, run: func(t *testing.T, e *adapterEnv) {
			_, err := e.c4.TruncateTableReq(ctx(t), &thriftgen.TruncateTableRequest{DbName: e.ext(), TableName: "tm", WriteId: adI64(3)})
			e.refused(t, err, "writeId")
		}},
		{name: "rename_partition_req", method: "rename_partition_req", run: func(t *testing.T, e *adapterEnv) {
			e.partitioned(t, "pt", "1", "2")
			part, err := e.direct.GetPartition(ctx(t), e.db, "pt", []string{"1"})
			if err != nil {
				t.Fatal(err)
			}
			part.DbName, part.Values = e.ext(), []string{"9"}
			if _, err := e.c4.RenamePartitionReq(ctx(t), &thriftgen.RenamePartitionRequest{DbName: e.ext(), TableName: "pt", PartVals: []string{"1"}, NewPart: part}); err != nil {
				t.Fatal(err)
			}
			names, _ := e.direct.GetPartitionNames(ctx(t), e.db, "pt", -1)
			adSame(t, "partitions after rename", names, []string{"p=2", "p=9"})
			calls := e.backendSaw(t, e.tap2, "rename_partition_req", e.db, "rename_partition")
			adSame(t, "rename_partition part_vals", adStrList(adAt(&calls[0].Args, 3)), []string{"1"})
			if adAt(&calls[0].Args, 4, 2).String() != e.db {
				t.Fatalf("rename_partition new_part.dbName = %q", adAt(&calls[0].Args, 4, 2).String())
			}
		}},
		{name: "alter_partitions_req", method: "alter_partitions_req", run: func(t *testing.T, e *adapterEnv) {
			e.partitioned(t, "pt", "1", "2")
			part, err := e.direct.GetPartition(ctx(t), e.db, "pt", []string{"2"})
			if err != nil {
				t.Fatal(err)
			}
			part.DbName = e.ext()
			part.Parameters["altered"] = "yes"
			if _, err := e.c4.AlterPartitionsReq(ctx(t), &thriftgen.AlterPartitionsRequest{DbName: e.ext(), TableName: "pt", Partitions: []*thriftgen.Partition{part}}); err != nil {
				t.Fatal(err)
			}
			if got, err := e.direct.GetPartition(ctx(t), e.db, "pt", []string{"2"}); err != nil || got.Parameters["altered"] != "yes" {
				t.Fatalf("the backend's partition was not altered: %+v %v", got, err)
			}
			e.backendSaw(t, e.tap2, "alter_partitions_req", e.db, "alter_partitions_with_environment_context")
		}},
		{name: "alter_partitions_req with a writeId", method: "alter_partitions_req", run: func(t *testing.T, e *adapterEnv) {
			// a transactional table's statistics: kept without COLUMN_STATS_ACCURATE, as a Hive 4.1
			// metastore without transactional statistics keeps them
			e.partitioned(t, "pt", "1")
			part, err := e.direct.GetPartition(ctx(t), e.db, "pt", []string{"1"})
			if err != nil {
				t.Fatal(err)
			}
			part.DbName, part.Parameters = e.ext(), map[string]string{"numRows": "5", "COLUMN_STATS_ACCURATE": `{"BASIC_STATS":"true"}`}
			if _, err := e.c4.AlterPartitionsReq(ctx(t), &thriftgen.AlterPartitionsRequest{DbName: e.ext(), TableName: "pt",
				Partitions: []*thriftgen.Partition{part}, WriteId: adI64(4), ValidWriteIdList: strp(e.db + ".pt:4:9223372036854775807::")}); err != nil {
				t.Fatal(err)
			}
			e.backendSaw(t, e.tap2, "alter_partitions_req", e.db, "alter_partitions_with_environment_context")
			got, err := e.direct.GetPartition(ctx(t), e.db, "pt", []string{"1"})
			if err != nil || got.Parameters["numRows"] != "5" || got.Parameters["COLUMN_STATS_ACCURATE"] != "" {
				t.Fatalf("the partition's statistics must be stored, not marked accurate: %+v %v", got, err)
			}
		}},
		{name: "append_partition_req by values", method: "append_partition_req", run: func(t *testing.T, e *adapterEnv) {
			e.partitioned(t, "pt")
			p, err := e.c4.AppendPartitionReq(ctx(t), &thriftgen.AppendPartitionsRequest{DbName: e.ext(), TableName: "pt", PartVals: []string{"7"}})
			if err != nil || strings.Join(p.Values, ",") != "7" || p.DbName != e.ext() {
				t.Fatalf("append_partition_req: %+v %v", p, err)
			}
			if _, err := e.direct.GetPartition(ctx(t), e.db, "pt", []string{"7"}); err != nil {
				t.Fatalf("the backend lacks the appended partition: %v", err)
			}
			calls := e.backendSaw(t, e.tap2, "append_partition_req", e.db, "append_partition_with_environment_context")
			adSame(t, "part_vals", adStrList(adAt(&calls[0].Args, 3)), []string{"7"})
		}},
		{name: "append_partition_req by name", method: "append_partition_req", run: func(t *testing.T, e *adapterEnv) {
			e.partitioned(t, "pt")
			p, err := e.c4.AppendPartitionReq(ctx(t), &thriftgen.AppendPartitionsRequest{DbName: e.ext(), TableName: "pt", Name: strp("p=8")})
			if err != nil || strings.Join(p.Values, ",") != "8" {
				t.Fatalf("append_partition_req by name: %+v %v", p, err)
			}
			calls := e.backendSaw(t, e.tap2, "append_partition_req", e.db, "append_partition_by_name_with_environment_context")
			if adAt(&calls[0].Args, 3).String() != "p=8" {
				t.Fatalf("part_name = %q", adAt(&calls[0].Args, 3).String())
			}
		}},
		{name: "drop_partition_req by values", method: "drop_partition_req", run: func(t *testing.T, e *adapterEnv) {
			e.partitioned(t, "pt", "1", "2")
			ok, err := e.c4.DropPartitionReq(ctx(t), &thriftgen.DropPartitionRequest{DbName: e.ext(), TblName: "pt", PartVals: []string{"2"}, DeleteData: adBool(false)})
			if err != nil || !ok {
				t.Fatalf("drop_partition_req: %v %v", ok, err)
			}
			names, _ := e.direct.GetPartitionNames(ctx(t), e.db, "pt", -1)
			adSame(t, "partitions left", names, []string{"p=1"})
			e.backendSaw(t, e.tap2, "drop_partition_req", e.db, "drop_partition_with_environment_context")
		}},
		{name: "drop_partition_req by name", method: "drop_partition_req", run: func(t *testing.T, e *adapterEnv) {
			e.partitioned(t, "pt", "1", "2")
			ok, err := e.c4.DropPartitionReq(ctx(t), &thriftgen.DropPartitionRequest{DbName: e.ext(), TblName: "pt", PartName: strp("p=1"), DeleteData: adBool(false)})
			if err != nil || !ok {
				t.Fatalf("drop_partition_req by name: %v %v", ok, err)
			}
			names, _ := e.direct.GetPartitionNames(ctx(t), e.db, "pt", -1)
			adSame(t, "partitions left", names, []string{"p=2"})
			e.backendSaw(t, e.tap2, "drop_partition_req", e.db, "drop_partition_by_name_with_environment_context")
		}},
		{name: "get_fields_req", method: "get_fields_req", run: func(t *testing.T, e *adapterEnv) {
			e.partitioned(t, "pt")
			res, err := e.c4.GetFieldsReq(ctx(t), &thriftgen.GetFieldsRequest{DbName: e.ext(), TblName: "pt"})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := e.direct.GetFields(ctx(t), e.db, "pt")
			if !reflect.DeepEqual(res.Fields, want) || len(want) != 1 {
				t.Fatalf("get_fields_req answered %+v, the backend holds %+v", res.Fields, want)
			}
			e.backendSaw(t, e.tap2, "get_fields_req", e.db, "get_fields_with_environment_context")
		}},
		{name: "get_schema_req", method: "get_schema_req", run: func(t *testing.T, e *adapterEnv) {
			e.partitioned(t, "pt")
			res, err := e.c4.GetSchemaReq(ctx(t), &thriftgen.GetSchemaRequest{DbName: e.ext(), TblName: "pt"})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := e.direct.GetSchema(ctx(t), e.db, "pt")
			if !reflect.DeepEqual(res.Fields, want) || len(want) != 2 { // id and the partition key p
				t.Fatalf("get_schema_req answered %+v, the backend holds %+v", res.Fields, want)
			}
			e.backendSaw(t, e.tap2, "get_schema_req", e.db, "get_schema_with_environment_context")
		}},
		{name: "create_database_req", method: "create_database_req", run: func(t *testing.T, e *adapterEnv) {
			name := uniq("adc")
			t.Cleanup(func() { _ = e.direct.DropDatabase(ctx(t), name, true, true) })
			err := e.c4.CreateDatabaseReq(ctx(t), &thriftgen.CreateDatabaseRequest{DatabaseName: "catalog2__" + name,
				Description: strp("made by a Hive 4 client"), Parameters: map[string]string{"team": "e2e"}})
			if err != nil {
				t.Fatal(err)
			}
			db, err := e.direct.GetDatabase(ctx(t), name)
			if err != nil || db.Description != "made by a Hive 4 client" || db.Parameters["team"] != "e2e" {
				t.Fatalf("the backend holds %+v %v", db, err)
			}
			calls := e.backendSaw(t, e.tap2, "create_database_req", name, "create_database")
			if adAt(&calls[0].Args, 1, 1).String() != name {
				t.Fatalf("create_database Database.name = %q", adAt(&calls[0].Args, 1, 1).String())
			}
		}},
		{name: "create_database_req with managedLocationUri", method: "create_database_req", refusal: true, run: func(t *testing.T, e *adapterEnv) {
			name := uniq("adm")
			err := e.c4.CreateDatabaseReq(ctx(t), &thriftgen.CreateDatabaseRequest{DatabaseName: "catalog2__" + name, ManagedLocationUri: strp("file:///tmp/m")})
			e.refused(t, err, "managedLocationUri")
			if _, err := e.direct.GetDatabase(ctx(t), name); !isNotFound(err) {
				t.Fatalf("a refused create reached the backend: %v", err)
			}
		}},
		{name: "drop_database_req", method: "drop_database_req", run: func(t *testing.T, e *adapterEnv) {
			name := uniq("add")
			mkDB(t, e.direct, name)
			mkTable(t, e.direct, name, "t1")
			if err := e.c4.DropDatabaseReq(ctx(t), &thriftgen.DropDatabaseRequest{Name: "catalog2__" + name, Cascade: true}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.direct.GetDatabase(ctx(t), name); !isNotFound(err) {
				t.Fatalf("the backend still holds %s: %v", name, err)
			}
			// get_database first (3.1.3 answers a missing database's drop
			// with a wrapped NullPointerException), then the drop.
			calls := e.backendSaw(t, e.tap2, "drop_database_req", name, "get_database", "drop_database")
			if c := adAt(&calls[1].Args, 3); c == nil || c.Int != 1 {
				t.Fatal("drop_database lost cascade=true")
			}
		}},
		{name: "drop_database_req on a missing database", method: "drop_database_req", run: func(t *testing.T, e *adapterEnv) {
			// A real Hive 4.1 server is the reference: it answers
			// NoSuchObjectException for a missing database (ignoreUnknownDb
			// is applied by Hive 4's client, which checks with get_database
			// first); the adapter may also answer ok when the flag is set.
			name := uniq("adgone")
			hive4 := proxytest.Client(t, hms4.URI)
			want := []string{
				adOutcome(hive4.DropDatabaseReq(ctx(t), &thriftgen.DropDatabaseRequest{Name: name, IgnoreUnknownDb: true})),
				adOutcome(hive4.DropDatabaseReq(ctx(t), &thriftgen.DropDatabaseRequest{Name: name})),
			}
			errIgnore := e.c4.DropDatabaseReq(ctx(t), &thriftgen.DropDatabaseRequest{Name: "catalog2__" + name, IgnoreUnknownDb: true})
			errStrict := e.c4.DropDatabaseReq(ctx(t), &thriftgen.DropDatabaseRequest{Name: "catalog2__" + name})
			got := []string{adOutcome(errIgnore), adOutcome(errStrict)}
			if (got[0] != want[0] && got[0] != "ok") || got[1] != want[1] {
				t.Errorf("drop_database_req of a missing database with ignoreUnknownDb=true/false: the proxy answers %v (%v / %v), Hive 4.1 answers %v; "+
					"a real 3.1.3 answers drop_database of a missing database with %v",
					got, errIgnore, errStrict, want, e.direct.DropDatabase(ctx(t), name, false, false))
			}
			for _, c := range e.tap2.Calls() {
				if !adContains(adStrings(&c.Args), name) {
					t.Errorf("backend call %s does not name %s: %q", c.Method, name, adStrings(&c.Args))
				}
			}
		}},
		{name: "drop_database_req softDelete", method: "drop_database_req", refusal: true, run: func(t *testing.T, e *adapterEnv) {
			err := e.c4.DropDatabaseReq(ctx(t), &thriftgen.DropDatabaseRequest{Name: e.ext(), Cascade: true, SoftDelete: adBool(true)})
			e.refused(t, err, "softDelete")
			if _, err := e.direct.GetDatabase(ctx(t), e.db); err != nil {
				t.Fatalf("a refused drop reached the backend: %v", err)
			}
		}},
		{name: "alter_database_req", method: "alter_database_req", run: func(t *testing.T, e *adapterEnv) {
			db, err := e.direct.GetDatabase(ctx(t), e.db)
			if err != nil {
				t.Fatal(err)
			}
			db.Name = e.ext()
			db.Parameters = map[string]string{"altered": "yes"}
			if err := e.c4.AlterDatabaseReq(ctx(t), &thriftgen.AlterDatabaseRequest{OldDbName: e.ext(), NewDb: db}); err != nil {
				t.Fatal(err)
			}
			if got, err := e.direct.GetDatabase(ctx(t), e.db); err != nil || got.Parameters["altered"] != "yes" {
				t.Fatalf("the backend's database was not altered: %+v %v", got, err)
			}
			calls := e.backendSaw(t, e.tap2, "alter_database_req", e.db, "alter_database")
			if adAt(&calls[0].Args, 1).String() != e.db || adAt(&calls[0].Args, 2, 1).String() != e.db {
				t.Fatalf("alter_database args %q", adStrings(&calls[0].Args))
			}
		}},
		{name: "get_functions_req", method: "get_functions_req", run: func(t *testing.T, e *adapterEnv) {
			fn := &thriftgen.Function{FunctionName: "f1", DbName: e.db, ClassName: "org.example.F1", OwnerName: "e2e",
				OwnerType: thriftgen.PrincipalType_USER, FunctionType: thriftgen.FunctionType_JAVA, ResourceUris: []*thriftgen.ResourceUri{}}
			if err := e.direct.CreateFunction(ctx(t), fn); err != nil {
				t.Fatal(err)
			}
			res, err := e.c4.GetFunctionsReq(ctx(t), &thriftgen.GetFunctionsRequest{DbName: e.ext(), Pattern: strp("f*")})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Functions) != 1 || res.Functions[0].FunctionName != "f1" || res.Functions[0].ClassName != "org.example.F1" || res.Functions[0].DbName != e.ext() {
				t.Fatalf("get_functions_req answered %+v", res)
			}
			calls := e.backendSaw(t, e.tap2, "get_functions_req", e.db, "get_functions", "get_function")
			if adAt(&calls[0].Args, 2).String() != "f*" || adAt(&calls[1].Args, 2).String() != "f1" {
				t.Fatalf("backend calls %q / %q", adStrings(&calls[0].Args), adStrings(&calls[1].Args))
			}
			e.tap2.Reset()
			res, err = e.c4.GetFunctionsReq(ctx(t), &thriftgen.GetFunctionsRequest{DbName: e.ext(), ReturnNames: adBool(true)})
			if err != nil || !reflect.DeepEqual(res.FunctionNames, []string{"f1"}) || len(res.Functions) != 0 {
				t.Fatalf("returnNames: %+v %v", res, err)
			}
			e.backendSaw(t, e.tap2, "get_functions_req", e.db, "get_functions")
		}},
		{name: "get_open_txns_req", method: "get_open_txns_req", run: func(t *testing.T, e *adapterEnv) {
			// No database in the request: it goes to the default catalog.
			open, err := e.direct1.OpenTxns(ctx(t), &thriftgen.OpenTxnRequest{NumTxns: 1, User: "e2e", Hostname: "localhost"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.direct1.AbortTxns(ctx(t), &thriftgen.AbortTxnsRequest{TxnIds: open.TxnIds}) })
			res, err := e.c4.GetOpenTxnsReq(ctx(t), &thriftgen.GetOpenTxnsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, id := range res.OpenTxns {
				found = found || id == open.TxnIds[0]
			}
			if !found || res.TxnHighWaterMark < open.TxnIds[0] {
				t.Fatalf("open transaction %d missing from %+v", open.TxnIds[0], res)
			}
			e.backendSaw(t, e.tap1, "get_open_txns_req", "", "get_open_txns")
			if m := e.tap2.Methods(); len(m) != 0 {
				t.Fatalf("catalog2 received %v", m)
			}
		}},
		{name: "get_open_txns_req excluding REPL_CREATED", method: "get_open_txns_req", refusal: true, run: func(t *testing.T, e *adapterEnv) {
			// 3.1.3 lists replication-created transactions with the others.
			_, err := e.c4.GetOpenTxnsReq(ctx(t), &thriftgen.GetOpenTxnsRequest{ExcludeTxnTypes: []thriftgen.TxnType{thriftgen.TxnType_READ_ONLY, thriftgen.TxnType_REPL_CREATED}})
			// get_open_txns_req declares no exception: the refusal is a TApplicationException.
			adAppErr(t, err, thrift.INTERNAL_ERROR, "catalog1", "REPL_CREATED")
			e.noBackendCall(t, "a refused get_open_txns_req")
		}},
		{name: "update_table_column_statistics_req", method: "update_table_column_statistics_req", run: func(t *testing.T, e *adapterEnv) {
			mkTable(t, e.direct, e.db, "t1")
			res, err := e.c4.UpdateTableColumnStatisticsReq(ctx(t), &thriftgen.SetPartitionsStatsRequest{ColStats: []*thriftgen.ColumnStatistics{
				adLongStats(e.ext(), "t1", "", 42)}})
			if err != nil || !res.Result {
				t.Fatalf("update_table_column_statistics_req: %+v %v", res, err)
			}
			cs, err := e.direct.GetTableColumnStatistics(ctx(t), e.db, "t1", "id")
			if err != nil || len(cs.StatsObj) != 1 || cs.StatsObj[0].StatsData.LongStats.NumDVs != 42 {
				t.Fatalf("the backend holds %+v %v", cs, err)
			}
			calls := e.backendSaw(t, e.tap2, "update_table_column_statistics_req", e.db, "update_table_column_statistics")
			if d := adAt(&calls[0].Args, 1, 1); d == nil || adAt(d, 2).String() != e.db {
				t.Fatal("update_table_column_statistics did not carry the statistics with the internal database name")
			}
		}},
		{name: "update_table_column_statistics_req with a writeId", method: "update_table_column_statistics_req", refusal: true, run: func(t *testing.T, e *adapterEnv) {
			_, err := e.c4.UpdateTableColumnStatisticsReq(ctx(t), &thriftgen.SetPartitionsStatsRequest{ColStats: []*thriftgen.ColumnStatistics{
				adLongStats(e.ext(), "t1", "", 1)}, WriteId: adI64(5)})
			e.refused(t, err, "writeId")
		}},
		{name: "update_partition_column_statistics_req", method: "update_partition_column_statistics_req", run: func(t *testing.T, e *adapterEnv) {
			e.partitioned(t, "pt", "1")
			res, err := e.c4.UpdatePartitionColumnStatisticsReq(ctx(t), &thriftgen.SetPartitionsStatsRequest{ColStats: []*thriftgen.ColumnStatistics{
				adLongStats(e.ext(), "pt", "p=1", 17)}})
			if err != nil || !res.Result {
				t.Fatalf("update_partition_column_statistics_req: %+v %v", res, err)
			}
			cs, err := e.direct.GetPartitionColumnStatistics(ctx(t), e.db, "pt", "p=1", "id")
			if err != nil || len(cs.StatsObj) != 1 || cs.StatsObj[0].StatsData.LongStats.NumDVs != 17 {
				t.Fatalf("the backend holds %+v %v", cs, err)
			}
			e.backendSaw(t, e.tap2, "update_partition_column_statistics_req", e.db, "update_partition_column_statistics")
		}},
		{name: "get_all_table_constraints", method: "get_all_table_constraints", run: func(t *testing.T, e *adapterEnv) {
			tb := table(e.db, "tc")
			err := e.direct.CreateTableWithConstraints(ctx(t), tb,
				[]*thriftgen.SQLPrimaryKey{{TableDb: e.db, TableName: "tc", ColumnName: "id", KeySeq: 1, PkName: "pk_tc"}},
				[]*thriftgen.SQLForeignKey{}, []*thriftgen.SQLUniqueConstraint{},
				[]*thriftgen.SQLNotNullConstraint{{CatName: "hive", TableDb: e.db, TableName: "tc", ColumnName: "id", NnName: "nn_tc"}},
				[]*thriftgen.SQLDefaultConstraint{}, []*thriftgen.SQLCheckConstraint{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.c4.GetAllTableConstraints(ctx(t), &thriftgen.AllTableConstraintsRequest{DbName: e.ext(), TblName: "tc", CatName: "hive"})
			if err != nil {
				t.Fatal(err)
			}
			all := res.AllTableConstraints
			if len(all.PrimaryKeys) != 1 || all.PrimaryKeys[0].PkName != "pk_tc" || all.PrimaryKeys[0].TableDb != e.ext() ||
				len(all.NotNullConstraints) != 1 || all.NotNullConstraints[0].NnName != "nn_tc" || all.NotNullConstraints[0].TableDb != e.ext() ||
				len(all.ForeignKeys)+len(all.UniqueConstraints)+len(all.DefaultConstraints)+len(all.CheckConstraints) != 0 {
				t.Fatalf("get_all_table_constraints answered %+v", all)
			}
			e.backendSaw(t, e.tap2, "get_all_table_constraints", e.db, "get_primary_keys", "get_foreign_keys",
				"get_unique_constraints", "get_not_null_constraints", "get_default_constraints", "get_check_constraints")
		}},
		{name: "delete_column_statistics_req table level", method: "delete_column_statistics_req", run: func(t *testing.T, e *adapterEnv) {
			mkTable(t, e.direct, e.db, "t1")
			if _, err := e.direct.UpdateTableColumnStatistics(ctx(t), adLongStats(e.db, "t1", "", 5)); err != nil {
				t.Fatal(err)
			}
			ok, err := e.c4.DeleteColumnStatisticsReq(ctx(t), &thriftgen.DeleteColumnStatisticsRequest{DbName: e.ext(), TblName: "t1",
				ColNames: []string{"id"}, TableLevel: adBool(true)})
			if err != nil || !ok {
				t.Fatalf("delete_column_statistics_req: %v %v", ok, err)
			}
			if cs, err := e.direct.GetTableColumnStatistics(ctx(t), e.db, "t1", "id"); err == nil && len(cs.StatsObj) > 0 {
				t.Fatalf("the backend still holds table statistics %+v", cs)
			}
			calls := e.backendSaw(t, e.tap2, "delete_column_statistics_req", e.db, "delete_table_column_statistics")
			if adAt(&calls[0].Args, 3).String() != "id" {
				t.Fatalf("delete_table_column_statistics col_name = %q", adAt(&calls[0].Args, 3).String())
			}
		}},
		{name: "delete_column_statistics_req partition level as Hive 4 reads it", method: "delete_column_statistics_req", run: func(t *testing.T, e *adapterEnv) {
			// tableLevel is absent (Hive 4.1: default false) and part_names
			// names p=1 of a partitioned table. The same request sent to a
			// real Hive 4.1 server is the reference for which statistics go.
			req := func(db string) *thriftgen.DeleteColumnStatisticsRequest {
				return &thriftgen.DeleteColumnStatisticsRequest{DbName: db, TblName: "pt", PartNames: []string{"p=1"}, ColNames: []string{"id"}}
			}
			scenario := func(c *thriftgen.Client, db string, engine *string) {
				adPartitioned(t, c, db, "pt", "1", "2")
				for _, cs := range []*thriftgen.ColumnStatistics{adLongStats(db, "pt", "p=1", 9), adLongStats(db, "pt", "", 8)} {
					cs.Engine = engine
					var err error
					if cs.StatsDesc.IsTblLevel {
						_, err = c.UpdateTableColumnStatistics(ctx(t), cs)
					} else {
						_, err = c.UpdatePartitionColumnStatistics(ctx(t), cs)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			left := func(c *thriftgen.Client, db string) (partition, table bool) {
				cs, err := c.GetPartitionColumnStatistics(ctx(t), db, "pt", "p=1", "id")
				partition = err == nil && len(cs.StatsObj) > 0
				cs, err = c.GetTableColumnStatistics(ctx(t), db, "pt", "id")
				table = err == nil && len(cs.StatsObj) > 0
				return
			}
			hive4 := proxytest.Client(t, hms4.URI)
			mkDB(t, hive4, e.db)
			scenario(hive4, e.db, strp("hive"))
			if ok, err := hive4.DeleteColumnStatisticsReq(ctx(t), req(e.db)); err != nil || !ok {
				t.Fatalf("Hive 4.1 itself: %v %v", ok, err)
			}
			wantPart, wantTable := left(hive4, e.db)

			scenario(e.direct, e.db, nil)
			if ok, err := e.c4.DeleteColumnStatisticsReq(ctx(t), req(e.ext())); err != nil || !ok {
				t.Fatalf("delete_column_statistics_req: %v %v", ok, err)
			}
			gotPart, gotTable := left(e.direct, e.db)
			if gotPart != wantPart || gotTable != wantTable {
				t.Errorf("statistics left (partition p=1, table): through the proxy %v, %v; Hive 4.1 leaves %v, %v (backend calls %v)",
					gotPart, gotTable, wantPart, wantTable, e.tap2.Methods())
			}
			if !wantPart && wantTable {
				// get_table first: whether the table is partitioned decides
				// what "not table level" means.
				e.backendSaw(t, e.tap2, "delete_column_statistics_req", e.db, "get_table_req", "delete_partition_column_statistics")
			}
		}},
		{name: "get_max_allocated_table_write_id", method: "get_max_allocated_table_write_id", run: func(t *testing.T, e *adapterEnv) {
			// Write ids exist only in the default catalog (issue 11): the
			// downgrade is the default catalog's, a Hive 3.1.3 metastore here.
			db1 := uniq("ad1")
			mkDB(t, e.direct1, db1)
			mkTable(t, e.direct1, db1, "t1")
			open, err := e.direct1.OpenTxns(ctx(t), &thriftgen.OpenTxnRequest{NumTxns: 2, User: "e2e", Hostname: "localhost"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.direct1.AbortTxns(ctx(t), &thriftgen.AbortTxnsRequest{TxnIds: open.TxnIds}) })
			alloc, err := e.direct1.AllocateTableWriteIds(ctx(t), &thriftgen.AllocateTableWriteIdsRequest{DbName: db1, TableName: "t1", TxnIds: open.TxnIds})
			if err != nil || len(alloc.TxnToWriteIds) != 2 {
				t.Fatalf("allocate_table_write_ids: %+v %v", alloc, err)
			}
			var max int64
			for _, w := range alloc.TxnToWriteIds {
				if w.WriteId > max {
					max = w.WriteId
				}
			}
			e.tap1.Reset()
			res, err := e.c4.GetMaxAllocatedTableWriteId(ctx(t), &thriftgen.MaxAllocatedTableWriteIdRequest{DbName: db1, TableName: "t1"})
			if err != nil || res.MaxWriteId != max {
				t.Fatalf("get_max_allocated_table_write_id = %+v %v, the backend allocated up to %d", res, err, max)
			}
			calls := e.backendSaw(t, e.tap1, "get_max_allocated_table_write_id", "", "get_valid_write_ids")
			adSame(t, "fullTableNames", adStrList(adAt(&calls[0].Args, 1, 1)), []string{db1 + ".t1"})
			// On catalog2 the call is refused, naming the catalog.
			_, err = e.c4.GetMaxAllocatedTableWriteId(ctx(t), &thriftgen.MaxAllocatedTableWriteIdRequest{DbName: e.ext(), TableName: "t1"})
			metaErr(t, err, "get_max_allocated_table_write_id", "catalog2", "write ids")
		}},
		{name: "get_table_names_by_filter with Hive 4 name filter", method: "get_table_names_by_filter", run: func(t *testing.T, e *adapterEnv) {
			for _, n := range []string{"t_a", "t_b", "other"} {
				mkTable(t, e.direct, e.db, n)
			}
			names, err := e.c4.GetTableNamesByFilter(ctx(t), e.ext(), `hive_filter_field_tableName__ like "t_.*"`, -1)
			if err != nil {
				t.Fatal(err)
			}
			adSame(t, "tables", names, []string{"t_a", "t_b"})
			calls := e.backendSaw(t, e.tap2, "get_table_names_by_filter", e.db, "get_tables")
			if adAt(&calls[0].Args, 2).String() != "*" {
				t.Fatalf("get_tables pattern = %q", adAt(&calls[0].Args, 2).String())
			}
		}},
		{name: "get_table_names_by_filter with Hive 4 name and type filter", method: "get_table_names_by_filter", run: func(t *testing.T, e *adapterEnv) {
			mkTable(t, e.direct, e.db, "t_ext")
			m := table(e.db, "t_man")
			m.TableType, m.Parameters = "MANAGED_TABLE", map[string]string{}
			if err := e.direct.CreateTable(ctx(t), m); err != nil {
				t.Fatal(err)
			}
			names, err := e.c4.GetTableNamesByFilter(ctx(t), e.ext(),
				`hive_filter_field_tableName__ like "t_.*" and hive_filter_field_tableType__ = "MANAGED_TABLE"`, -1)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := e.direct.GetTablesByType(ctx(t), e.db, "t_*", "MANAGED_TABLE")
			adSame(t, "tables", names, want)
			adSame(t, "tables", names, []string{"t_man"})
			calls := e.backendSaw(t, e.tap2, "get_table_names_by_filter", e.db, "get_tables_by_type")
			if adAt(&calls[0].Args, 3).String() != "MANAGED_TABLE" {
				t.Fatalf("get_tables_by_type type = %q", adAt(&calls[0].Args, 3).String())
			}
		}},
		{name: "get_table_names_by_filter with a Hive 3 filter", method: "get_table_names_by_filter", run: func(t *testing.T, e *adapterEnv) {
			mkTable(t, e.direct, e.db, "t1")
			other := table(e.db, "t2")
			other.Owner = "someone_else"
			if err := e.direct.CreateTable(ctx(t), other); err != nil {
				t.Fatal(err)
			}
			// (a parameter filter, hive_filter_field_params__, fails on 3.1.3
			// with Derby itself: PARAM_VALUE is a CLOB there)
			filter := `hive_filter_field_owner__ = "e2e"`
			names, err := e.c4.GetTableNamesByFilter(ctx(t), e.ext(), filter, -1)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := e.direct.GetTableNamesByFilter(ctx(t), e.db, filter, -1)
			adSame(t, "tables", names, want)
			adSame(t, "tables", names, []string{"t1"})
			calls := e.backendSaw(t, e.tap2, "get_table_names_by_filter", e.db, "get_table_names_by_filter")
			if adAt(&calls[0].Args, 2).String() != filter {
				t.Fatalf("a filter the backend understands must pass as it is, got %q", adAt(&calls[0].Args, 2).String())
			}
		}},
		{name: "get_table_names_by_filter with an unmappable Hive 4 filter", method: "get_table_names_by_filter", refusal: true, run: func(t *testing.T, e *adapterEnv) {
			_, err := e.c4.GetTableNamesByFilter(ctx(t), e.ext(), `hive_filter_field_tableName__ = "t1"`, -1)
			e.refused(t, err, "hive_filter_field_tableName__")
		}},
		{name: "lock EXCL_WRITE", method: "lock", run: func(t *testing.T, e *adapterEnv) {
			// Locks of non-default catalogs are the synthetic lock shim's
			// (issue 11): the downgrade is the default catalog's, a Hive
			// 3.1.3 metastore here.
			db1 := uniq("ad1")
			mkDB(t, e.direct1, db1)
			mkTable(t, e.direct1, db1, "t1")
			e.tap1.Reset()
			res, err := e.c4.Lock(ctx(t), &thriftgen.LockRequest{User: "e2e", Hostname: "localhost", Component: []*thriftgen.LockComponent{
				{Type: thriftgen.LockType_EXCL_WRITE, Level: thriftgen.LockLevel_TABLE, Dbname: db1, Tablename: strp("t1")}}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.direct1.Unlock(ctx(t), &thriftgen.UnlockRequest{Lockid: res.Lockid}) })
			if res.State != thriftgen.LockState_ACQUIRED {
				t.Fatalf("lock state %v", res.State)
			}
			locks, err := e.direct1.ShowLocks(ctx(t), &thriftgen.ShowLocksRequest{Dbname: &db1})
			if err != nil {
				t.Fatal(err)
			}
			var mine []*thriftgen.ShowLocksResponseElement
			for _, l := range locks.Locks {
				if l.Lockid == res.Lockid {
					mine = append(mine, l)
				}
			}
			if len(mine) != 1 || mine[0].Type != thriftgen.LockType_EXCLUSIVE || mine[0].Dbname != db1 {
				t.Fatalf("the backend holds lock %d as %+v, want one EXCLUSIVE lock on %s", res.Lockid, mine, db1)
			}
			calls := e.backendSaw(t, e.tap1, "lock", db1, "lock")
			comp := adAt(&calls[0].Args, 1, 1)
			if comp == nil || len(comp.Elems) != 1 || adAt(&comp.Elems[0], 1).Int != int64(thriftgen.LockType_EXCLUSIVE) {
				t.Fatalf("the backend received lock components %+v, want type EXCLUSIVE", comp)
			}
		}},
	}
}

func adLongStats(db, tbl, part string, ndv int64) *thriftgen.ColumnStatistics {
	desc := &thriftgen.ColumnStatisticsDesc{IsTblLevel: part == "", DbName: db, TableName: tbl}
	if part != "" {
		desc.PartName = &part
	}
	return &thriftgen.ColumnStatistics{StatsDesc: desc, StatsObj: []*thriftgen.ColumnStatisticsObj{{ColName: "id", ColType: "bigint",
		StatsData: &thriftgen.ColumnStatisticsData{LongStats: &thriftgen.LongColumnStatsData{LowValue: adI64(0), HighValue: adI64(100), NumNulls: 1, NumDVs: ndv}}}}}
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
		if !adapters[r.method] {
			t.Errorf("row %q names %s, which is not an adapter", r.name, r.method)
		}
		if !r.refusal {
			proven[r.method] = true
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
	needHive(t)
	for _, r := range adapterRows() {
		t.Run(strings.ReplaceAll(r.name, " ", "_"), func(t *testing.T) {
			r.run(t, newAdapterEnv(t, r.hive4))
		})
	}
}

// Hive 4-only methods with no safe mapping answer UNKNOWN_METHOD naming the
// catalog and its runtime; nothing reaches a backend.
func TestAdapterlessHive4MethodsAnswerUnknownMethod(t *testing.T) {
	needHive(t)
	e := newAdapterEnv(t, false)
	_, err := e.c4.GetDataconnectors(ctx(t))
	adAppErr(t, err, thrift.UNKNOWN_METHOD, "get_dataconnectors", "catalog1", "APACHE_3_1_3")
	err = e.c4.CreateStoredProcedure(ctx(t), &thriftgen.StoredProcedure{Name: "p1", DbName: e.ext(), CatName: "hive", OwnerName: "e2e", Source: "begin end"})
	adAppErr(t, err, thrift.UNKNOWN_METHOD, "create_stored_procedure", "catalog2", "APACHE_3_1_3")
	_, err = e.c4.GetAllPackages(ctx(t), &thriftgen.ListPackageRequest{CatName: "hive", DbName: strp(e.ext())})
	adAppErr(t, err, thrift.UNKNOWN_METHOD, "get_all_packages", "catalog2", "APACHE_3_1_3")
	e.noBackendCall(t, "Hive 4-only methods without an adapter")
}

// Hortonworks-only methods reach only Hortonworks (or Hive 4) runtimes.
func TestAdapterHortonworksOnlyMethodsRefusedOnApacheBackend(t *testing.T) {
	needHive(t)
	e := newAdapterEnv(t, false)
	_, err := e.c4.AddWriteNotificationLog(ctx(t), &thriftgen.WriteNotificationLogRequest{TxnId: 1, WriteId: 1, Db: e.ext(), Table: "t1",
		FileInfo: &thriftgen.InsertEventRequestData{FilesAdded: []string{"file:///tmp/f"}}})
	// add_write_notification_log declares no exception: TApplicationException.
	adAppErr(t, err, thrift.INTERNAL_ERROR, "add_write_notification_log needs a backend runtime that has it", "catalog2", "APACHE_3_1_3")
	_, err = e.c4.GetTablesExt(ctx(t), &thriftgen.GetTablesExtRequest{Catalog: "hive", Database: e.ext(), TableNamePattern: "*", RequestedFields: 1})
	metaErr(t, err, "get_tables_ext needs a backend runtime that has it", "catalog2", "APACHE_3_1_3")
	e.noBackendCall(t, "Hortonworks-only methods")
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
	needHive(t)
	tap := proxytest.NewTap(t, hms1.URI)
	p := proxytest.Start(t, withHive4Frontend(t, map[string]string{
		"catalogs": "catalog1", "routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": tap.URI(),
		"catalog.catalog1.runtime-profile":          "APACHE_4_1_0",
	}))
	c := proxytest.Client(t, p.URI("hive4"))

	names, err := c.GetDataconnectors(ctx(t))
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
	_, err = c.GetDatabaseReq(ctx(t), &thriftgen.GetDatabaseRequest{Name: strp("default")})
	adAppErr(t, err, thrift.UNKNOWN_METHOD, "get_database_req")
	if m := tap.Methods(); len(m) != 1 || m[0] != "get_database_req" {
		t.Fatalf("the backend received %v", m)
	}

	// Another failure of a service read is an error, not an empty answer.
	tap.Reset()
	tap.HangUp(true)
	_, err = c.GetDataconnectors(ctx(t))
	metaErr(t, err, "catalog1", "get_dataconnectors")
	if m := tap.Methods(); len(m) == 0 || m[0] != "get_dataconnectors" {
		t.Fatalf("the backend was expected to see the call before it died: %v", m)
	}
}

// get_runtime_stats, get_all_resource_plans and get_active_resource_plan
// carry optional data: any backend failure answers empty, counted.
func TestAdapterOptionalReadsAnswerEmptyWhenTheBackendFails(t *testing.T) {
	needHive(t)
	optional := func(t *testing.T, c *thriftgen.Client) {
		t.Helper()
		stats, err := c.GetRuntimeStats(ctx(t), &thriftgen.GetRuntimeStatsRequest{MaxWeight: 10, MaxCreateTime: 0})
		if err != nil || len(stats) != 0 {
			t.Fatalf("get_runtime_stats: %v %v", stats, err)
		}
		plans, err := c.GetAllResourcePlans(ctx(t), &thriftgen.WMGetAllResourcePlanRequest{})
		if err != nil || len(plans.ResourcePlans) != 0 {
			t.Fatalf("get_all_resource_plans: %+v %v", plans, err)
		}
		active, err := c.GetActiveResourcePlan(ctx(t), &thriftgen.WMGetActiveResourcePlanRequest{})
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
		tap := proxytest.NewTap(t, hms1.URI)
		p := proxytest.Start(t, withHive4Frontend(t, map[string]string{
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
		p := proxytest.Start(t, withHive4Frontend(t, map[string]string{
			"catalogs": "catalog1", "routing.default-catalog": "catalog1",
			"catalog.catalog1.conf.hive.metastore.uris": "thrift://127.0.0.1:" + strconv.Itoa(proxytest.FreePort(t)),
		}))
		optional(t, proxytest.Client(t, p.URI("hive4")))
		counted(t, p)
		// A read that is not optional fails as an error.
		if _, err := proxytest.Client(t, p.URI("hive4")).GetAllFunctions(ctx(t)); err == nil {
			t.Fatal("get_all_functions with the metastore down must fail")
		}
	})
}
