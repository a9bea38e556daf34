package compat

import (
	"reflect"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// moreAdapterRows are the adapter rows of fields and schemas, databases,
// functions, transactions, statistics, constraints, write ids, table filters
// and locks (baseAdapterRows has the tables and partitions).
func moreAdapterRows() []e2eutil.AdapterRow {
	return []e2eutil.AdapterRow{
		{Name: "get_fields_req", Method: "get_fields_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e.Partitioned(t, "pt")
			res, err := e.C4.GetFieldsReq(e2eutil.Ctx(t), &thriftgen.GetFieldsRequest{DbName: e.Ext(), TblName: "pt"})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := e.Direct.GetFields(e2eutil.Ctx(t), e.Db, "pt")
			if !reflect.DeepEqual(res.Fields, want) || len(want) != 1 {
				t.Fatalf("get_fields_req answered %+v, the backend holds %+v", res.Fields, want)
			}
			e.BackendSaw(t, e.Tap2, "get_fields_req", e.Db, "get_fields_with_environment_context")
		}},
		{Name: "get_schema_req", Method: "get_schema_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e.Partitioned(t, "pt")
			res, err := e.C4.GetSchemaReq(e2eutil.Ctx(t), &thriftgen.GetSchemaRequest{DbName: e.Ext(), TblName: "pt"})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := e.Direct.GetSchema(e2eutil.Ctx(t), e.Db, "pt")
			if !reflect.DeepEqual(res.Fields, want) || len(want) != 2 { // id and the partition key p
				t.Fatalf("get_schema_req answered %+v, the backend holds %+v", res.Fields, want)
			}
			e.BackendSaw(t, e.Tap2, "get_schema_req", e.Db, "get_schema_with_environment_context")
		}},
		{Name: "create_database_req", Method: "create_database_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			name := e2eutil.Uniq("adc")
			t.Cleanup(func() { _ = e.Direct.DropDatabase(e2eutil.Ctx(t), name, true, true) })
			err := e.C4.CreateDatabaseReq(e2eutil.Ctx(t), &thriftgen.CreateDatabaseRequest{DatabaseName: "catalog2__" + name,
				Description: e2eutil.Strp("made by a Hive 4 client"), Parameters: map[string]string{"team": "e2e"}})
			if err != nil {
				t.Fatal(err)
			}
			db, err := e.Direct.GetDatabase(e2eutil.Ctx(t), name)
			if err != nil || db.Description != "made by a Hive 4 client" || db.Parameters["team"] != "e2e" {
				t.Fatalf("the backend holds %+v %v", db, err)
			}
			calls := e.BackendSaw(t, e.Tap2, "create_database_req", name, "create_database")
			if adAt(&calls[0].Args, 1, 1).String() != name {
				t.Fatalf("create_database Database.name = %q", adAt(&calls[0].Args, 1, 1).String())
			}
		}},
		{Name: "create_database_req with managedLocationUri", Method: "create_database_req", Refusal: true, Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			name := e2eutil.Uniq("adm")
			err := e.C4.CreateDatabaseReq(e2eutil.Ctx(t), &thriftgen.CreateDatabaseRequest{DatabaseName: "catalog2__" + name, ManagedLocationUri: e2eutil.Strp("file:///tmp/m")})
			e.Refused(t, err, "managedLocationUri")
			if _, err := e.Direct.GetDatabase(e2eutil.Ctx(t), name); !e2eutil.IsNotFound(err) {
				t.Fatalf("a refused create reached the backend: %v", err)
			}
		}},
		{Name: "drop_database_req", Method: "drop_database_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			name := e2eutil.Uniq("add")
			e2eutil.MkDB(t, e.Direct, name)
			e2eutil.MkTable(t, e.Direct, name, "t1")
			if err := e.C4.DropDatabaseReq(e2eutil.Ctx(t), &thriftgen.DropDatabaseRequest{Name: "catalog2__" + name, Cascade: true}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Direct.GetDatabase(e2eutil.Ctx(t), name); !e2eutil.IsNotFound(err) {
				t.Fatalf("the backend still holds %s: %v", name, err)
			}
			// get_database first (3.1.3 answers a missing database's drop
			// with a wrapped NullPointerException), then the drop.
			calls := e.BackendSaw(t, e.Tap2, "drop_database_req", name, "get_database", "drop_database")
			if c := adAt(&calls[1].Args, 3); c == nil || c.Int != 1 {
				t.Fatal("drop_database lost cascade=true")
			}
		}},
		{Name: "drop_database_req on a missing database", Method: "drop_database_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			// A real Hive 4.1 server is the reference: it answers
			// NoSuchObjectException for a missing database (ignoreUnknownDb
			// is applied by Hive 4's client, which checks with get_database
			// first); the adapter may also answer ok when the flag is set.
			name := e2eutil.Uniq("adgone")
			hive4 := proxytest.Client(t, e2eutil.HMS4.URI)
			want := []string{
				adOutcome(hive4.DropDatabaseReq(e2eutil.Ctx(t), &thriftgen.DropDatabaseRequest{Name: name, IgnoreUnknownDb: true})),
				adOutcome(hive4.DropDatabaseReq(e2eutil.Ctx(t), &thriftgen.DropDatabaseRequest{Name: name})),
			}
			errIgnore := e.C4.DropDatabaseReq(e2eutil.Ctx(t), &thriftgen.DropDatabaseRequest{Name: "catalog2__" + name, IgnoreUnknownDb: true})
			errStrict := e.C4.DropDatabaseReq(e2eutil.Ctx(t), &thriftgen.DropDatabaseRequest{Name: "catalog2__" + name})
			got := []string{adOutcome(errIgnore), adOutcome(errStrict)}
			if (got[0] != want[0] && got[0] != "ok") || got[1] != want[1] {
				t.Errorf("drop_database_req of a missing database with ignoreUnknownDb=true/false: the proxy answers %v (%v / %v), Hive 4.1 answers %v; "+
					"a real 3.1.3 answers drop_database of a missing database with %v",
					got, errIgnore, errStrict, want, e.Direct.DropDatabase(e2eutil.Ctx(t), name, false, false))
			}
			for _, c := range e.Tap2.Calls() {
				if !e2eutil.AdContains(e2eutil.AdStrings(&c.Args), name) {
					t.Errorf("backend call %s does not name %s: %q", c.Method, name, e2eutil.AdStrings(&c.Args))
				}
			}
		}},
		{Name: "drop_database_req softDelete", Method: "drop_database_req", Refusal: true, Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			err := e.C4.DropDatabaseReq(e2eutil.Ctx(t), &thriftgen.DropDatabaseRequest{Name: e.Ext(), Cascade: true, SoftDelete: adBool(true)})
			e.Refused(t, err, "softDelete")
			if _, err := e.Direct.GetDatabase(e2eutil.Ctx(t), e.Db); err != nil {
				t.Fatalf("a refused drop reached the backend: %v", err)
			}
		}},
		{Name: "alter_database_req", Method: "alter_database_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			db, err := e.Direct.GetDatabase(e2eutil.Ctx(t), e.Db)
			if err != nil {
				t.Fatal(err)
			}
			db.Name = e.Ext()
			db.Parameters = map[string]string{"altered": "yes"}
			if err := e.C4.AlterDatabaseReq(e2eutil.Ctx(t), &thriftgen.AlterDatabaseRequest{OldDbName: e.Ext(), NewDb: db}); err != nil {
				t.Fatal(err)
			}
			if got, err := e.Direct.GetDatabase(e2eutil.Ctx(t), e.Db); err != nil || got.Parameters["altered"] != "yes" {
				t.Fatalf("the backend's database was not altered: %+v %v", got, err)
			}
			calls := e.BackendSaw(t, e.Tap2, "alter_database_req", e.Db, "alter_database")
			if adAt(&calls[0].Args, 1).String() != e.Db || adAt(&calls[0].Args, 2, 1).String() != e.Db {
				t.Fatalf("alter_database args %q", e2eutil.AdStrings(&calls[0].Args))
			}
		}},
		{Name: "get_functions_req", Method: "get_functions_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			fn := &thriftgen.Function{FunctionName: "f1", DbName: e.Db, ClassName: "org.example.F1", OwnerName: "e2e",
				OwnerType: thriftgen.PrincipalType_USER, FunctionType: thriftgen.FunctionType_JAVA, ResourceUris: []*thriftgen.ResourceUri{}}
			if err := e.Direct.CreateFunction(e2eutil.Ctx(t), fn); err != nil {
				t.Fatal(err)
			}
			res, err := e.C4.GetFunctionsReq(e2eutil.Ctx(t), &thriftgen.GetFunctionsRequest{DbName: e.Ext(), Pattern: e2eutil.Strp("f*")})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Functions) != 1 || res.Functions[0].FunctionName != "f1" || res.Functions[0].ClassName != "org.example.F1" || res.Functions[0].DbName != e.Ext() {
				t.Fatalf("get_functions_req answered %+v", res)
			}
			calls := e.BackendSaw(t, e.Tap2, "get_functions_req", e.Db, "get_functions", "get_function")
			if adAt(&calls[0].Args, 2).String() != "f*" || adAt(&calls[1].Args, 2).String() != "f1" {
				t.Fatalf("backend calls %q / %q", e2eutil.AdStrings(&calls[0].Args), e2eutil.AdStrings(&calls[1].Args))
			}
			e.Tap2.Reset()
			res, err = e.C4.GetFunctionsReq(e2eutil.Ctx(t), &thriftgen.GetFunctionsRequest{DbName: e.Ext(), ReturnNames: adBool(true)})
			if err != nil || !reflect.DeepEqual(res.FunctionNames, []string{"f1"}) || len(res.Functions) != 0 {
				t.Fatalf("returnNames: %+v %v", res, err)
			}
			e.BackendSaw(t, e.Tap2, "get_functions_req", e.Db, "get_functions")
		}},
		{Name: "get_open_txns_req", Method: "get_open_txns_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			// No database in the request: it goes to the default catalog.
			open, err := e.Direct1.OpenTxns(e2eutil.Ctx(t), &thriftgen.OpenTxnRequest{NumTxns: 1, User: "e2e", Hostname: "localhost"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Direct1.AbortTxns(e2eutil.Ctx(t), &thriftgen.AbortTxnsRequest{TxnIds: open.TxnIds}) })
			res, err := e.C4.GetOpenTxnsReq(e2eutil.Ctx(t), &thriftgen.GetOpenTxnsRequest{})
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
			e.BackendSaw(t, e.Tap1, "get_open_txns_req", "", "get_open_txns")
			if m := e.Tap2.Methods(); len(m) != 0 {
				t.Fatalf("catalog2 received %v", m)
			}
		}},
		{Name: "get_open_txns_req excluding REPL_CREATED", Method: "get_open_txns_req", Refusal: true, Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			// 3.1.3 lists replication-created transactions with the others.
			_, err := e.C4.GetOpenTxnsReq(e2eutil.Ctx(t), &thriftgen.GetOpenTxnsRequest{ExcludeTxnTypes: []thriftgen.TxnType{thriftgen.TxnType_READ_ONLY, thriftgen.TxnType_REPL_CREATED}})
			// get_open_txns_req declares no exception: the refusal is a TApplicationException.
			adAppErr(t, err, thrift.INTERNAL_ERROR, "catalog1", "REPL_CREATED")
			e.NoBackendCall(t, "a refused get_open_txns_req")
		}},
		{Name: "update_table_column_statistics_req", Method: "update_table_column_statistics_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e2eutil.MkTable(t, e.Direct, e.Db, "t1")
			res, err := e.C4.UpdateTableColumnStatisticsReq(e2eutil.Ctx(t), &thriftgen.SetPartitionsStatsRequest{ColStats: []*thriftgen.ColumnStatistics{
				adLongStats(e.Ext(), "t1", "", 42)}})
			if err != nil || !res.Result {
				t.Fatalf("update_table_column_statistics_req: %+v %v", res, err)
			}
			cs, err := e.Direct.GetTableColumnStatistics(e2eutil.Ctx(t), e.Db, "t1", "id")
			if err != nil || len(cs.StatsObj) != 1 || cs.StatsObj[0].StatsData.LongStats.NumDVs != 42 {
				t.Fatalf("the backend holds %+v %v", cs, err)
			}
			calls := e.BackendSaw(t, e.Tap2, "update_table_column_statistics_req", e.Db, "update_table_column_statistics")
			if d := adAt(&calls[0].Args, 1, 1); d == nil || adAt(d, 2).String() != e.Db {
				t.Fatal("update_table_column_statistics did not carry the statistics with the internal database name")
			}
		}},
		{Name: "update_table_column_statistics_req with a writeId", Method: "update_table_column_statistics_req", Refusal: true, Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			_, err := e.C4.UpdateTableColumnStatisticsReq(e2eutil.Ctx(t), &thriftgen.SetPartitionsStatsRequest{ColStats: []*thriftgen.ColumnStatistics{
				adLongStats(e.Ext(), "t1", "", 1)}, WriteId: e2eutil.AdI64(5)})
			e.Refused(t, err, "writeId")
		}},
		{Name: "update_partition_column_statistics_req", Method: "update_partition_column_statistics_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e.Partitioned(t, "pt", "1")
			res, err := e.C4.UpdatePartitionColumnStatisticsReq(e2eutil.Ctx(t), &thriftgen.SetPartitionsStatsRequest{ColStats: []*thriftgen.ColumnStatistics{
				adLongStats(e.Ext(), "pt", "p=1", 17)}})
			if err != nil || !res.Result {
				t.Fatalf("update_partition_column_statistics_req: %+v %v", res, err)
			}
			cs, err := e.Direct.GetPartitionColumnStatistics(e2eutil.Ctx(t), e.Db, "pt", "p=1", "id")
			if err != nil || len(cs.StatsObj) != 1 || cs.StatsObj[0].StatsData.LongStats.NumDVs != 17 {
				t.Fatalf("the backend holds %+v %v", cs, err)
			}
			e.BackendSaw(t, e.Tap2, "update_partition_column_statistics_req", e.Db, "update_partition_column_statistics")
		}},
		{Name: "get_all_table_constraints", Method: "get_all_table_constraints", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			tb := e2eutil.Table(e.Db, "tc")
			err := e.Direct.CreateTableWithConstraints(e2eutil.Ctx(t), tb,
				[]*thriftgen.SQLPrimaryKey{{TableDb: e.Db, TableName: "tc", ColumnName: "id", KeySeq: 1, PkName: "pk_tc"}},
				[]*thriftgen.SQLForeignKey{}, []*thriftgen.SQLUniqueConstraint{},
				[]*thriftgen.SQLNotNullConstraint{{CatName: "hive", TableDb: e.Db, TableName: "tc", ColumnName: "id", NnName: "nn_tc"}},
				[]*thriftgen.SQLDefaultConstraint{}, []*thriftgen.SQLCheckConstraint{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.C4.GetAllTableConstraints(e2eutil.Ctx(t), &thriftgen.AllTableConstraintsRequest{DbName: e.Ext(), TblName: "tc", CatName: "hive"})
			if err != nil {
				t.Fatal(err)
			}
			all := res.AllTableConstraints
			if len(all.PrimaryKeys) != 1 || all.PrimaryKeys[0].PkName != "pk_tc" || all.PrimaryKeys[0].TableDb != e.Ext() ||
				len(all.NotNullConstraints) != 1 || all.NotNullConstraints[0].NnName != "nn_tc" || all.NotNullConstraints[0].TableDb != e.Ext() ||
				len(all.ForeignKeys)+len(all.UniqueConstraints)+len(all.DefaultConstraints)+len(all.CheckConstraints) != 0 {
				t.Fatalf("get_all_table_constraints answered %+v", all)
			}
			e.BackendSaw(t, e.Tap2, "get_all_table_constraints", e.Db, "get_primary_keys", "get_foreign_keys",
				"get_unique_constraints", "get_not_null_constraints", "get_default_constraints", "get_check_constraints")
		}},
		{Name: "delete_column_statistics_req table level", Method: "delete_column_statistics_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e2eutil.MkTable(t, e.Direct, e.Db, "t1")
			if _, err := e.Direct.UpdateTableColumnStatistics(e2eutil.Ctx(t), adLongStats(e.Db, "t1", "", 5)); err != nil {
				t.Fatal(err)
			}
			ok, err := e.C4.DeleteColumnStatisticsReq(e2eutil.Ctx(t), &thriftgen.DeleteColumnStatisticsRequest{DbName: e.Ext(), TblName: "t1",
				ColNames: []string{"id"}, TableLevel: adBool(true)})
			if err != nil || !ok {
				t.Fatalf("delete_column_statistics_req: %v %v", ok, err)
			}
			if cs, err := e.Direct.GetTableColumnStatistics(e2eutil.Ctx(t), e.Db, "t1", "id"); err == nil && len(cs.StatsObj) > 0 {
				t.Fatalf("the backend still holds table statistics %+v", cs)
			}
			calls := e.BackendSaw(t, e.Tap2, "delete_column_statistics_req", e.Db, "delete_table_column_statistics")
			if adAt(&calls[0].Args, 3).String() != "id" {
				t.Fatalf("delete_table_column_statistics col_name = %q", adAt(&calls[0].Args, 3).String())
			}
		}},
		{Name: "delete_column_statistics_req partition level as Hive 4 reads it", Method: "delete_column_statistics_req", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			// tableLevel is absent (Hive 4.1: default false) and part_names
			// names p=1 of a partitioned table. The same request sent to a
			// real Hive 4.1 server is the reference for which statistics go.
			req := func(db string) *thriftgen.DeleteColumnStatisticsRequest {
				return &thriftgen.DeleteColumnStatisticsRequest{DbName: db, TblName: "pt", PartNames: []string{"p=1"}, ColNames: []string{"id"}}
			}
			scenario := func(c *thriftgen.Client, db string, engine *string) {
				e2eutil.AdPartitioned(t, c, db, "pt", "1", "2")
				for _, cs := range []*thriftgen.ColumnStatistics{adLongStats(db, "pt", "p=1", 9), adLongStats(db, "pt", "", 8)} {
					cs.Engine = engine
					var err error
					if cs.StatsDesc.IsTblLevel {
						_, err = c.UpdateTableColumnStatistics(e2eutil.Ctx(t), cs)
					} else {
						_, err = c.UpdatePartitionColumnStatistics(e2eutil.Ctx(t), cs)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			left := func(c *thriftgen.Client, db string) (partition, table bool) {
				cs, err := c.GetPartitionColumnStatistics(e2eutil.Ctx(t), db, "pt", "p=1", "id")
				partition = err == nil && len(cs.StatsObj) > 0
				cs, err = c.GetTableColumnStatistics(e2eutil.Ctx(t), db, "pt", "id")
				table = err == nil && len(cs.StatsObj) > 0
				return
			}
			// Both sides must hold both statistics before the delete: two
			// sides that never stored them would agree on "nothing left".
			stored := func(c *thriftgen.Client, where string) {
				if p, tb := left(c, e.Db); !p || !tb {
					t.Fatalf("%s: statistics stored before the delete (partition p=1, table): %v, %v; want both", where, p, tb)
				}
			}
			hive4 := proxytest.Client(t, e2eutil.HMS4.URI)
			e2eutil.MkDB(t, hive4, e.Db)
			scenario(hive4, e.Db, e2eutil.Strp("hive"))
			stored(hive4, "Hive 4.1")
			if ok, err := hive4.DeleteColumnStatisticsReq(e2eutil.Ctx(t), req(e.Db)); err != nil || !ok {
				t.Fatalf("Hive 4.1 itself: %v %v", ok, err)
			}
			wantPart, wantTable := left(hive4, e.Db)
			if wantPart || !wantTable {
				t.Fatalf("Hive 4.1 left (partition p=1, table) %v, %v; the reference is p=1's statistics deleted, the table's kept", wantPart, wantTable)
			}

			scenario(e.Direct, e.Db, nil)
			stored(e.Direct, "the 3.1.3 backend")
			if ok, err := e.C4.DeleteColumnStatisticsReq(e2eutil.Ctx(t), req(e.Ext())); err != nil || !ok {
				t.Fatalf("delete_column_statistics_req: %v %v", ok, err)
			}
			gotPart, gotTable := left(e.Direct, e.Db)
			if gotPart != wantPart || gotTable != wantTable {
				t.Errorf("statistics left (partition p=1, table): through the proxy %v, %v; Hive 4.1 leaves %v, %v (backend calls %v)",
					gotPart, gotTable, wantPart, wantTable, e.Tap2.Methods())
			}
			// get_table first: whether the table is partitioned decides what
			// "not table level" means.
			e.BackendSaw(t, e.Tap2, "delete_column_statistics_req", e.Db, "get_table_req", "delete_partition_column_statistics")
		}},
		{Name: "get_max_allocated_table_write_id", Method: "get_max_allocated_table_write_id", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			// Write ids exist only in the default catalog (issue 11): the
			// downgrade is the default catalog's, a Hive 3.1.3 metastore here.
			db1 := e2eutil.Uniq("ad1")
			e2eutil.MkDB(t, e.Direct1, db1)
			e2eutil.MkTable(t, e.Direct1, db1, "t1")
			open, err := e.Direct1.OpenTxns(e2eutil.Ctx(t), &thriftgen.OpenTxnRequest{NumTxns: 2, User: "e2e", Hostname: "localhost"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Direct1.AbortTxns(e2eutil.Ctx(t), &thriftgen.AbortTxnsRequest{TxnIds: open.TxnIds}) })
			alloc, err := e.Direct1.AllocateTableWriteIds(e2eutil.Ctx(t), &thriftgen.AllocateTableWriteIdsRequest{DbName: db1, TableName: "t1", TxnIds: open.TxnIds})
			if err != nil || len(alloc.TxnToWriteIds) != 2 {
				t.Fatalf("allocate_table_write_ids: %+v %v", alloc, err)
			}
			var max int64
			for _, w := range alloc.TxnToWriteIds {
				if w.WriteId > max {
					max = w.WriteId
				}
			}
			e.Tap1.Reset()
			res, err := e.C4.GetMaxAllocatedTableWriteId(e2eutil.Ctx(t), &thriftgen.MaxAllocatedTableWriteIdRequest{DbName: db1, TableName: "t1"})
			if err != nil || res.MaxWriteId != max {
				t.Fatalf("get_max_allocated_table_write_id = %+v %v, the backend allocated up to %d", res, err, max)
			}
			calls := e.BackendSaw(t, e.Tap1, "get_max_allocated_table_write_id", "", "get_valid_write_ids")
			adSame(t, "fullTableNames", adStrList(adAt(&calls[0].Args, 1, 1)), []string{db1 + ".t1"})
			// On catalog2 the call is refused, naming the catalog.
			_, err = e.C4.GetMaxAllocatedTableWriteId(e2eutil.Ctx(t), &thriftgen.MaxAllocatedTableWriteIdRequest{DbName: e.Ext(), TableName: "t1"})
			e2eutil.MetaErr(t, err, "get_max_allocated_table_write_id", "catalog2", "write ids")
		}},
		{Name: "get_table_names_by_filter with Hive 4 name filter", Method: "get_table_names_by_filter", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			for _, n := range []string{"t_a", "t_b", "other"} {
				e2eutil.MkTable(t, e.Direct, e.Db, n)
			}
			names, err := e.C4.GetTableNamesByFilter(e2eutil.Ctx(t), e.Ext(), `hive_filter_field_tableName__ like "t_.*"`, -1)
			if err != nil {
				t.Fatal(err)
			}
			adSame(t, "tables", names, []string{"t_a", "t_b"})
			calls := e.BackendSaw(t, e.Tap2, "get_table_names_by_filter", e.Db, "get_tables")
			if adAt(&calls[0].Args, 2).String() != "*" {
				t.Fatalf("get_tables pattern = %q", adAt(&calls[0].Args, 2).String())
			}
		}},
		{Name: "get_table_names_by_filter with Hive 4 name and type filter", Method: "get_table_names_by_filter", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e2eutil.MkTable(t, e.Direct, e.Db, "t_ext")
			m := e2eutil.Table(e.Db, "t_man")
			m.TableType, m.Parameters = "MANAGED_TABLE", map[string]string{}
			if err := e.Direct.CreateTable(e2eutil.Ctx(t), m); err != nil {
				t.Fatal(err)
			}
			names, err := e.C4.GetTableNamesByFilter(e2eutil.Ctx(t), e.Ext(),
				`hive_filter_field_tableName__ like "t_.*" and hive_filter_field_tableType__ = "MANAGED_TABLE"`, -1)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := e.Direct.GetTablesByType(e2eutil.Ctx(t), e.Db, "t_*", "MANAGED_TABLE")
			adSame(t, "tables", names, want)
			adSame(t, "tables", names, []string{"t_man"})
			calls := e.BackendSaw(t, e.Tap2, "get_table_names_by_filter", e.Db, "get_tables_by_type")
			if adAt(&calls[0].Args, 3).String() != "MANAGED_TABLE" {
				t.Fatalf("get_tables_by_type type = %q", adAt(&calls[0].Args, 3).String())
			}
		}},
		{Name: "get_table_names_by_filter with a Hive 3 filter", Method: "get_table_names_by_filter", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			e2eutil.MkTable(t, e.Direct, e.Db, "t1")
			other := e2eutil.Table(e.Db, "t2")
			other.Owner = "someone_else"
			if err := e.Direct.CreateTable(e2eutil.Ctx(t), other); err != nil {
				t.Fatal(err)
			}
			// (a parameter filter, hive_filter_field_params__, fails on 3.1.3
			// with Derby itself: PARAM_VALUE is a CLOB there)
			filter := `hive_filter_field_owner__ = "e2e"`
			names, err := e.C4.GetTableNamesByFilter(e2eutil.Ctx(t), e.Ext(), filter, -1)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := e.Direct.GetTableNamesByFilter(e2eutil.Ctx(t), e.Db, filter, -1)
			adSame(t, "tables", names, want)
			adSame(t, "tables", names, []string{"t1"})
			calls := e.BackendSaw(t, e.Tap2, "get_table_names_by_filter", e.Db, "get_table_names_by_filter")
			if adAt(&calls[0].Args, 2).String() != filter {
				t.Fatalf("a filter the backend understands must pass as it is, got %q", adAt(&calls[0].Args, 2).String())
			}
		}},
		{Name: "get_table_names_by_filter with an unmappable Hive 4 filter", Method: "get_table_names_by_filter", Refusal: true, Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			_, err := e.C4.GetTableNamesByFilter(e2eutil.Ctx(t), e.Ext(), `hive_filter_field_tableName__ = "t1"`, -1)
			e.Refused(t, err, "hive_filter_field_tableName__")
		}},
		{Name: "lock EXCL_WRITE", Method: "lock", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			// Locks of non-default catalogs are the synthetic lock shim's
			// (issue 11): the downgrade is the default catalog's, a Hive
			// 3.1.3 metastore here.
			db1 := e2eutil.Uniq("ad1")
			e2eutil.MkDB(t, e.Direct1, db1)
			e2eutil.MkTable(t, e.Direct1, db1, "t1")
			e.Tap1.Reset()
			res, err := e.C4.Lock(e2eutil.Ctx(t), &thriftgen.LockRequest{User: "e2e", Hostname: "localhost", Component: []*thriftgen.LockComponent{
				{Type: thriftgen.LockType_EXCL_WRITE, Level: thriftgen.LockLevel_TABLE, Dbname: db1, Tablename: e2eutil.Strp("t1")}}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Direct1.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: res.Lockid}) })
			if res.State != thriftgen.LockState_ACQUIRED {
				t.Fatalf("lock state %v", res.State)
			}
			locks, err := e.Direct1.ShowLocks(e2eutil.Ctx(t), &thriftgen.ShowLocksRequest{Dbname: &db1})
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
			calls := e.BackendSaw(t, e.Tap1, "lock", db1, "lock")
			comp := adAt(&calls[0].Args, 1, 1)
			if comp == nil || len(comp.Elems) != 1 || adAt(&comp.Elems[0], 1).Int != int64(thriftgen.LockType_EXCLUSIVE) {
				t.Fatalf("the backend received lock components %+v, want type EXCLUSIVE", comp)
			}
		}},
	}
}
