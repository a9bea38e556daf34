package compat

import (
	"bytes"
	"context"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

func runtime(t *testing.T, name string) *Runtime {
	t.Helper()
	r, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func guardOf(t *testing.T, name string) *Guard {
	t.Helper()
	g, err := NewGuard(runtime(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func i64p(v int64) *int64 { return &v }
func boolp(v bool) *bool  { return &v }
func strp(v string) *string {
	return &v
}

// checkDrops runs the 3.1.3 guard on sent (the args as a Hive 4 client
// encodes them) and wants exactly the named fields dropped: the patched
// bytes must be what the client would have sent without them (want), byte
// for byte, and each drop reported under its to_api label.
func checkDrops(t *testing.T, method string, sent, want thrift.TStruct, fields ...string) {
	t.Helper()
	g := guardOf(t, "APACHE_3_1_3")
	body := encode(t, context.Background(), sent)
	v, err := g.Check(method, body)
	if err != nil {
		t.Fatalf("%s: a field at its implied value must be dropped, not refused: %v", method, err)
	}
	got := wire.Apply(nil, body, v.Patches)
	if exp := encode(t, context.Background(), want); !bytes.Equal(got, exp) {
		t.Fatalf("%s: after the drop the backend gets\n%x\nwant (the same call without %v)\n%x", method, got, fields, exp)
	}
	var apis []string
	for _, d := range v.Dropped {
		apis = append(apis, d.API())
	}
	var wantAPIs []string
	for _, f := range fields {
		wantAPIs = append(wantAPIs, "dropped_default:"+f)
	}
	if strings.Join(apis, ",") != strings.Join(wantAPIs, ",") {
		t.Fatalf("%s: reported drops %v, want %v", method, apis, wantAPIs)
	}
}

func checkRefused(t *testing.T, runtimeName, method string, sent thrift.TStruct, fragments ...string) {
	t.Helper()
	g := guardOf(t, runtimeName)
	_, err := g.Check(method, encode(t, context.Background(), sent))
	if err == nil {
		t.Fatalf("%s toward %s must be refused", method, runtimeName)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Fatalf("%s: refusal %q does not name %q", method, err, f)
		}
	}
}

// The calls the stock Hive 4.1 client makes toward a 3.1.3 catalog carry
// 4.x-only fields at the value 3.1.3 behaves as: each is dropped (and
// reported) so the call is served, and every other byte is kept.
func TestGuardDropsFieldsAtTheirImpliedValue(t *testing.T) {
	openTxn := func(tt *thriftgen.TxnType) *thriftgen.OpenTxnsArgs {
		return &thriftgen.OpenTxnsArgs{Rqst: &thriftgen.OpenTxnRequest{NumTxns: 1, User: "hive", Hostname: "hs2", AgentInfo: strp("Unknown"), TxnType: tt}}
	}
	def := thriftgen.TxnType_DEFAULT
	checkDrops(t, "open_txns", openTxn(&def), openTxn(nil), "OpenTxnRequest.txn_type")

	alloc := func(re *bool) *thriftgen.AllocateTableWriteIdsArgs {
		return &thriftgen.AllocateTableWriteIdsArgs{Rqst: &thriftgen.AllocateTableWriteIdsRequest{DbName: "db", TableName: "t", TxnIds: []int64{7}, Reallocate: re}}
	}
	checkDrops(t, "allocate_table_write_ids", alloc(boolp(false)), alloc(nil), "AllocateTableWriteIdsRequest.reallocate")

	// Iceberg's Hive catalog on Hive 4 bindings: Table.writeId = -1.
	tbl := func(w *int64) *thriftgen.CreateTableArgs {
		return &thriftgen.CreateTableArgs{Tbl: &thriftgen.Table{TableName: "t", DbName: "db", Owner: "o", WriteId: w,
			Sd: &thriftgen.StorageDescriptor{Location: "file:/w/t"}, Parameters: map[string]string{"table_type": "ICEBERG"}}}
	}
	checkDrops(t, "create_table", tbl(i64p(-1)), tbl(nil), "Table.writeId")

	// Nested in a list: each partition's writeId, and the request's own flag.
	parts := func(w *int64, skip *bool) *thriftgen.AddPartitionsReqArgs {
		var ps []*thriftgen.Partition
		for _, v := range []string{"1", "2"} {
			ps = append(ps, &thriftgen.Partition{Values: []string{v}, DbName: "db", TableName: "t", WriteId: w})
		}
		return &thriftgen.AddPartitionsReqArgs{Request: &thriftgen.AddPartitionsRequest{DbName: "db", TblName: "t", Parts: ps,
			IfNotExists: true, NeedResult: boolp(true), SkipColumnSchemaForPartition: skip}}
	}
	checkDrops(t, "add_partitions_req", parts(i64p(-1), boolp(false)), parts(nil, nil),
		"Partition.writeId", "AddPartitionsRequest.skipColumnSchemaForPartition")

	// Column statistics carry engine "hive", the default.
	stats := func(e *string) *thriftgen.UpdateTableColumnStatisticsArgs {
		return &thriftgen.UpdateTableColumnStatisticsArgs{StatsObj: &thriftgen.ColumnStatistics{
			StatsDesc: &thriftgen.ColumnStatisticsDesc{IsTblLevel: true, DbName: "db", TableName: "t"},
			StatsObj:  []*thriftgen.ColumnStatisticsObj{}, Engine: e}}
	}
	checkDrops(t, "update_table_column_statistics", stats(strp("hive")), stats(nil), "ColumnStatistics.engine")

	// Iceberg locks: zeroWaitReadEnabled and exclusiveCTAS false.
	lock := func(z, x *bool) *thriftgen.LockArgs {
		return &thriftgen.LockArgs{Rqst: &thriftgen.LockRequest{User: "u", Hostname: "h", Component: []*thriftgen.LockComponent{
			{Type: thriftgen.LockType_EXCLUSIVE, Level: thriftgen.LockLevel_TABLE, Dbname: "db", Tablename: strp("t")}},
			ZeroWaitReadEnabled: z, ExclusiveCTAS: x}}
	}
	checkDrops(t, "lock", lock(boolp(false), boolp(false)), lock(nil, nil), "LockRequest.zeroWaitReadEnabled", "LockRequest.exclusiveCTAS")

	// exclWriteEnabled: HiveServer2's default false and the IDL default true
	// both ask for what 3.1.3 does.
	commit := func(x *bool) *thriftgen.CommitTxnArgs {
		return &thriftgen.CommitTxnArgs{Rqst: &thriftgen.CommitTxnRequest{Txnid: 9, ExclWriteEnabled: x}}
	}
	checkDrops(t, "commit_txn", commit(boolp(false)), commit(nil), "CommitTxnRequest.exclWriteEnabled")
	checkDrops(t, "commit_txn", commit(boolp(true)), commit(nil), "CommitTxnRequest.exclWriteEnabled")

	// HiveServer2 4.x rolling back: the reason code goes, the abort stays.
	abort := func(code *int64) *thriftgen.AbortTxnArgs {
		return &thriftgen.AbortTxnArgs{Rqst: &thriftgen.AbortTxnRequest{Txnid: 3, ErrorCode: code}}
	}
	checkDrops(t, "abort_txn", abort(i64p(50005)), abort(nil), "AbortTxnRequest.errorCode")
	plain := thriftgen.TxnType_DEFAULT
	typed := &thriftgen.AbortTxnArgs{Rqst: &thriftgen.AbortTxnRequest{Txnid: 3, ErrorCode: i64p(50005), TxnType: &plain}}
	checkDrops(t, "abort_txn", typed, abort(nil), "AbortTxnRequest.txn_type", "AbortTxnRequest.errorCode")
	aborts := func(code *int64) *thriftgen.AbortTxnsArgs {
		return &thriftgen.AbortTxnsArgs{Rqst: &thriftgen.AbortTxnsRequest{TxnIds: []int64{3, 4}, ErrorCode: code}}
	}
	checkDrops(t, "abort_txns", aborts(i64p(50005)), aborts(nil), "AbortTxnsRequest.errorCode")

	// Column statistics of a non-transactional table after an INSERT or
	// ANALYZE: writeId 0 (no write id).
	aggr := func(w *int64) *thriftgen.SetAggrStatsForArgs {
		return &thriftgen.SetAggrStatsForArgs{Request: &thriftgen.SetPartitionsStatsRequest{ColStats: []*thriftgen.ColumnStatistics{}, WriteId: w}}
	}
	checkDrops(t, "set_aggr_stats_for", aggr(i64p(0)), aggr(nil), "SetPartitionsStatsRequest.writeId")

	// Hive 4's DatabaseBuilder: a NATIVE database with createTime 0.
	native := thriftgen.DatabaseType_NATIVE
	zero := int32(0)
	db := func(typ *thriftgen.DatabaseType, ct *int32) *thriftgen.CreateDatabaseArgs {
		return &thriftgen.CreateDatabaseArgs{Database: &thriftgen.Database{Name: "d", LocationUri: "file:/w/d.db", Type: typ, CreateTime: ct}}
	}
	checkDrops(t, "create_database", db(&native, &zero), db(nil, nil), "Database.createTime", "Database.type")

	// A new transactional table: Table.writeId 0.
	checkDrops(t, "create_table", tbl(i64p(0)), tbl(nil), "Table.writeId")
}

// Table.dictionary of HiveServer2 4.x's CREATE TABLE is translated into the
// parameters HiveServer2 3.1.3 writes for a new table; elsewhere (a Hive 4
// metastore reads it only on create) it is left out; an entry with no
// older form is refused.
func TestGuardTranslatesTableDictionary(t *testing.T) {
	g := guardOf(t, "APACHE_3_1_3")
	setup := func(enabled bool, cols ...string) map[string][][]byte {
		js := `{"enabled":` + strconv.FormatBool(enabled) + `,"isIcebergTable":false,"columnNames":[`
		for i, c := range cols {
			if i > 0 {
				js += ","
			}
			js += strconv.Quote(c)
		}
		return map[string][][]byte{"setStatsStateForCreateTable": {[]byte(js + "]}")}}
	}
	table := func(loc string, params map[string]string, dict map[string][][]byte) *thriftgen.Table {
		t := &thriftgen.Table{TableName: "t", DbName: "db", Owner: "hive", Parameters: params,
			Sd: &thriftgen.StorageDescriptor{Location: loc, Cols: []*thriftgen.FieldSchema{{Name: "name", Type: "string"}, {Name: "id", Type: "int"}}}}
		if dict != nil {
			t.Dictionary = &thriftgen.ObjectDictionary{Values: dict}
		}
		return t
	}
	decodeTable := func(body []byte, v Verdict) *thriftgen.Table {
		var args thriftgen.CreateTableArgs
		if err := decode(t, wire.Apply(nil, body, v.Patches), &args); err != nil {
			t.Fatal(err)
		}
		return args.Tbl
	}
	// a new table without a location, the setup naming its columns: what 3.1.3's client writes
	body := encode(t, context.Background(), &thriftgen.CreateTableArgs{Tbl: table("", map[string]string{"k": "v"}, setup(true, "id", "name"))})
	v, err := g.Check("create_table", body)
	if err != nil {
		t.Fatal(err)
	}
	got := decodeTable(body, v)
	want := map[string]string{"k": "v", "numFiles": "0", "numRows": "0", "totalSize": "0", "rawDataSize": "0",
		"COLUMN_STATS_ACCURATE": `{"BASIC_STATS":"true","COLUMN_STATS":{"id":"true","name":"true"}}`}
	if got.Dictionary != nil || !reflect.DeepEqual(got.Parameters, want) {
		t.Fatalf("create_table: dictionary %v, parameters %v; want no dictionary and %v", got.Dictionary, got.Parameters, want)
	}
	if len(v.Dropped) != 1 || v.Dropped[0].API() != "translated:Table.dictionary" {
		t.Fatalf("the translation must be reported: %+v", v.Dropped)
	}
	// no column names in the setup: the table's columns
	body = encode(t, context.Background(), &thriftgen.CreateTableArgs{Tbl: table("", nil, setup(true))})
	v, err = g.Check("create_table", body)
	if err != nil || decodeTable(body, v).Parameters["COLUMN_STATS_ACCURATE"] != `{"BASIC_STATS":"true","COLUMN_STATS":{"id":"true","name":"true"}}` {
		t.Fatalf("columns from the table: %v %v", decodeTable(body, v).Parameters, err)
	}
	// a location (its directory may hold files) or a disabled setup: parameters unchanged
	for _, tb := range []*thriftgen.Table{table("file:/w/t", map[string]string{"k": "v"}, setup(true, "id")), table("", map[string]string{"k": "v"}, setup(false))} {
		body = encode(t, context.Background(), &thriftgen.CreateTableArgs{Tbl: tb})
		v, err = g.Check("create_table", body)
		if got := decodeTable(body, v); err != nil || got.Dictionary != nil || !reflect.DeepEqual(got.Parameters, map[string]string{"k": "v"}) {
			t.Fatalf("parameters must stay as sent: %+v %v", got, err)
		}
	}
	// alter: read by no Hive 4 metastore, left out
	alter := encode(t, context.Background(), &thriftgen.AlterTableArgs{Dbname: "db", TblName: "t", NewTbl: table("", map[string]string{"k": "v"}, setup(true, "id"))})
	v, err = g.Check("alter_table", alter)
	var aargs thriftgen.AlterTableArgs
	if err != nil || decode(t, wire.Apply(nil, alter, v.Patches), &aargs) != nil || aargs.NewTbl.Dictionary != nil ||
		!reflect.DeepEqual(aargs.NewTbl.Parameters, map[string]string{"k": "v"}) {
		t.Fatalf("alter_table: %+v %v", aargs.NewTbl, err)
	}
	// an entry nobody can keep
	checkRefused(t, "APACHE_3_1_3", "create_table", &thriftgen.CreateTableArgs{Tbl: table("", nil, map[string][][]byte{"somethingElse": {[]byte("x")}})},
		`the entry "somethingElse" of Table.dictionary`)
	// the creating transaction of a transactional table: left out, unless
	// it names a soft-delete directory the older runtime cannot make
	txn := func(params map[string]string) *thriftgen.CreateTableArgs {
		return &thriftgen.CreateTableArgs{Tbl: &thriftgen.Table{TableName: "t", DbName: "db", Parameters: params, TxnId: i64p(12)}}
	}
	body2 := encode(t, context.Background(), txn(map[string]string{"transactional": "true"}))
	if v, err := g.Check("create_table", body2); err != nil || decodeTable(body2, v).TxnId != nil || v.Dropped[0].API() != "translated:Table.txnId" {
		t.Fatalf("Table.txnId without soft_delete: %+v %v", v, err)
	}
	checkRefused(t, "APACHE_3_1_3", "create_table", txn(map[string]string{"transactional": "true", "soft_delete": "true"}),
		"Table.txnId = 12 with soft_delete=true", "hive.acid.createtable.softdelete=false")
	// Hive 4 has the field: untouched
	if v, err := guardOf(t, "APACHE_4_1_0").Check("create_table", body); err != nil || len(v.Patches) != 0 {
		t.Fatalf("a Hive 4 backend gets the dictionary: %+v %v", v, err)
	}
}

// A value that asks for something 3.1.3 cannot do is refused, naming the
// field and the value.
func TestGuardRefusesMeaningfulValues(t *testing.T) {
	ro := thriftgen.TxnType_READ_ONLY
	checkRefused(t, "APACHE_3_1_3", "open_txns", &thriftgen.OpenTxnsArgs{Rqst: &thriftgen.OpenTxnRequest{NumTxns: 1, User: "u", Hostname: "h", TxnType: &ro}},
		"OpenTxnRequest.txn_type = READ_ONLY(2)", "APACHE_3_1_3", "DEFAULT(0)")
	checkRefused(t, "APACHE_3_1_3", "allocate_table_write_ids", &thriftgen.AllocateTableWriteIdsArgs{Rqst: &thriftgen.AllocateTableWriteIdsRequest{
		DbName: "db", TableName: "t", TxnIds: []int64{1}, Reallocate: boolp(true)}}, "AllocateTableWriteIdsRequest.reallocate = true")
	checkRefused(t, "APACHE_3_1_3", "create_table", &thriftgen.CreateTableArgs{Tbl: &thriftgen.Table{TableName: "t", DbName: "db", WriteId: i64p(7)}},
		"Table.writeId = 7", "-1 (its IDL default)")
	checkRefused(t, "APACHE_3_1_3", "update_table_column_statistics", &thriftgen.UpdateTableColumnStatisticsArgs{StatsObj: &thriftgen.ColumnStatistics{
		StatsDesc: &thriftgen.ColumnStatisticsDesc{IsTblLevel: true, DbName: "db", TableName: "t"}, StatsObj: []*thriftgen.ColumnStatisticsObj{}, Engine: strp("impala")}},
		`ColumnStatistics.engine = "impala"`)
	checkRefused(t, "APACHE_3_1_3", "lock", &thriftgen.LockArgs{Rqst: &thriftgen.LockRequest{User: "u", Hostname: "h",
		Component:           []*thriftgen.LockComponent{{Type: thriftgen.LockType_SHARED_WRITE, Level: thriftgen.LockLevel_TABLE, Dbname: "db"}},
		ZeroWaitReadEnabled: boolp(true)}}, "LockRequest.zeroWaitReadEnabled = true", "hive.txn.xlock.write=true")
	// Statistics tied to a transaction's write id: 3.1.3 cannot tie them.
	checkRefused(t, "APACHE_3_1_3", "set_aggr_stats_for", &thriftgen.SetAggrStatsForArgs{Request: &thriftgen.SetPartitionsStatsRequest{
		ColStats: []*thriftgen.ColumnStatistics{}, WriteId: i64p(7)}}, "SetPartitionsStatsRequest.writeId = 7", "-1 (its IDL default) or 0")
	remote := thriftgen.DatabaseType_REMOTE
	checkRefused(t, "APACHE_3_1_3", "create_database", &thriftgen.CreateDatabaseArgs{Database: &thriftgen.Database{Name: "d", Type: &remote}},
		"Database.type = REMOTE(2)", "NATIVE(1)")
	checkRefused(t, "APACHE_3_1_3", "add_partitions_req", &thriftgen.AddPartitionsReqArgs{Request: &thriftgen.AddPartitionsRequest{
		DbName: "db", TblName: "t", Parts: []*thriftgen.Partition{}, SkipColumnSchemaForPartition: boolp(true)}},
		"AddPartitionsRequest.skipColumnSchemaForPartition = true")
	// A field with neither a default nor a documented value: only unset.
	checkRefused(t, "APACHE_3_1_3", "create_database", &thriftgen.CreateDatabaseArgs{Database: &thriftgen.Database{Name: "d", ManagedLocationUri: strp("/m")}},
		`Database.managedLocationUri = "/m"`)
}

// An enum value an older runtime does not know is refused for writes
// rather than coerced (CompactionType.REBALANCE is Hive 4 only), even where
// the runtime has the field; a Hive 4 runtime has everything.
func TestGuardRefusesUnknownEnumValues(t *testing.T) {
	compact := func(typ thriftgen.CompactionType) *thriftgen.Compact2Args {
		return &thriftgen.Compact2Args{Rqst: &thriftgen.CompactionRequest{Dbname: "db", Tablename: "t", Type: typ}}
	}
	g := guardOf(t, "APACHE_3_1_3")
	if _, err := g.Check("compact2", encode(t, context.Background(), compact(thriftgen.CompactionType_MAJOR))); err != nil {
		t.Fatalf("MAJOR must pass: %v", err)
	}
	checkRefused(t, "APACHE_3_1_3", "compact2", compact(thriftgen.CompactionType_REBALANCE), "CompactionRequest.type = REBALANCE (3)", "APACHE_3_1_3")
	// HDP 3.1.5 has LockType but not EXCL_WRITE.
	checkRefused(t, "HORTONWORKS_3_1_0_3_1_5_6150_1", "lock", &thriftgen.LockArgs{Rqst: &thriftgen.LockRequest{User: "u", Hostname: "h",
		Component: []*thriftgen.LockComponent{{Type: thriftgen.LockType_EXCL_WRITE, Level: thriftgen.LockLevel_DB, Dbname: "db"}}}},
		"LockComponent.type = EXCL_WRITE (4)")
	g4 := guardOf(t, "APACHE_4_1_0")
	for _, s := range []thrift.TStruct{compact(thriftgen.CompactionType_REBALANCE)} {
		if v, err := g4.Check("compact2", encode(t, context.Background(), s)); err != nil || len(v.Patches) > 0 {
			t.Fatalf("Hive 4 knows everything: %+v %v", v, err)
		}
	}
}

// Leftover holds the request fields an adapter leaves behind to the same
// rule; reads (no guard) are not checked.
func TestGuardLeftoverOfAdaptedRequests(t *testing.T) {
	g := guardOf(t, "APACHE_3_1_3")
	req := wire.Struct(
		wire.Field{ID: fid("SetPartitionsStatsRequest", "colStats"), V: wire.List(wire.TStruct)},
		wire.Field{ID: fid("SetPartitionsStatsRequest", "engine"), V: wire.Str("hive")},
		wire.Field{ID: fid("SetPartitionsStatsRequest", "writeId"), V: wire.I64(-1)})
	carried := func(id int16) bool { return id == fid("SetPartitionsStatsRequest", "colStats") }
	drops, err := g.Leftover("update_table_column_statistics_req", &req, "SetPartitionsStatsRequest", carried)
	if err != nil || len(drops) != 2 || drops[0].API() != "dropped_default:SetPartitionsStatsRequest.engine" {
		t.Fatalf("engine \"hive\" and writeId -1 must be dropped: %+v %v", drops, err)
	}
	req.Set(fid("SetPartitionsStatsRequest", "validWriteIdList"), wire.Str("db.t:5:9223372036854775807::"))
	if _, err := g.Leftover("update_table_column_statistics_req", &req, "SetPartitionsStatsRequest", carried); err == nil ||
		!strings.Contains(err.Error(), "SetPartitionsStatsRequest.validWriteIdList") || !strings.Contains(err.Error(), "update_table_column_statistics_req") {
		t.Fatalf("a write-id list cannot be carried by the positional call: %v", err)
	}
	var none *Guard
	if d, err := none.Leftover("x", &req, "SetPartitionsStatsRequest", carried); d != nil || err != nil {
		t.Fatalf("a read checks nothing: %v %v", d, err)
	}
}

// Reads are trimmed: implied fields go (GetTableRequest.engine "hive"),
// anything else stays as the hint it is, and nothing is refused.
func TestGuardTrimsReads(t *testing.T) {
	g := guardOf(t, "APACHE_3_1_3")
	get := func(engine *string, caps []string) *thriftgen.GetTableReqArgs {
		return &thriftgen.GetTableReqArgs{Req: &thriftgen.GetTableRequest{DbName: "db", TblName: "t", Engine: engine, ProcessorCapabilities: caps}}
	}
	body := encode(t, context.Background(), get(strp("hive"), nil))
	v, err := g.Trim("get_table_req", body)
	if err != nil || len(v.Dropped) != 1 || !bytes.Equal(wire.Apply(nil, body, v.Patches), encode(t, context.Background(), get(nil, nil))) {
		t.Fatalf("engine \"hive\" must be trimmed from a read: %+v %v", v, err)
	}
	body = encode(t, context.Background(), get(strp("impala"), nil))
	if v, err := g.Trim("get_table_req", body); err != nil || len(v.Patches) != 0 {
		t.Fatalf("another engine is a hint on a read, passed on: %+v %v", v, err)
	}
	if _, err := g.Check("get_table_req", body); err == nil {
		t.Fatal("the same value in a write would be refused")
	}
}
