package compat

// HDP behaviour of the proxy, end to end. No HDP metastore can be had from the
// public registries, so an HDP backend here is the TEST DOUBLE of
// compat/hdptest: it speaks the HDP method set and the HDP 3.1.5 Table
// dialect as the public HDP IDLs define them, and records what it received.
// The Apache backends are the real Hive 3.1.3 metastores of TestMain.

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/compat/hdptest"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

const (
	hdp315 = "HORTONWORKS_3_1_0_3_1_5_6150_1"
	hdp78  = "HORTONWORKS_3_1_0_3_1_0_78"
)

// hdpCtx makes the generated client an HDP 3.1.5 client: it writes and reads
// Table in HDP's field ids.
func hdpCtx(t *testing.T) context.Context {
	return thriftgen.WithWireProfile(e2eutil.Ctx(t), thriftgen.ProfileHDP315)
}

// withFrontend adds a loopback listener of the given profile.
func withFrontend(t *testing.T, p map[string]string, name, profile string) map[string]string {
	p["additional-frontends"] = strings.Trim(p["additional-frontends"]+","+name, ",")
	p["additional-frontends."+name+".port"] = strconv.Itoa(proxytest.FreePort(t))
	p["additional-frontends."+name+".bind-host"] = "127.0.0.1"
	p["additional-frontends."+name+".frontend-profile"] = profile
	return p
}

// capTable is a table carrying the fields HDP 3.1.5 and Hive 4 number
// differently: accessType and the two capability lists (distinct contents,
// so a swap shows).
func capTable(db, name string) *thriftgen.Table {
	t := e2eutil.Table(db, name)
	access := int8(8) // ACCESSTYPE_READWRITE
	t.AccessType = &access
	t.RequiredReadCapabilities = []string{"HIVEFULLACIDREAD", "CONNECTORREAD"}
	t.RequiredWriteCapabilities = []string{"HIVEFULLACIDWRITE"}
	return t
}

// capsOf renders the three capability fields for comparison.
func capsOf(t *thriftgen.Table) string {
	if t == nil {
		return "<no table>"
	}
	a := "nil"
	if t.AccessType != nil {
		a = strconv.Itoa(int(*t.AccessType))
	}
	return "accessType=" + a + " read=" + strings.Join(t.RequiredReadCapabilities, ",") + " write=" + strings.Join(t.RequiredWriteCapabilities, ",")
}

func sameCaps(t *testing.T, what string, got, want *thriftgen.Table) {
	t.Helper()
	if capsOf(got) != capsOf(want) {
		t.Fatalf("%s: %s, want %s", what, capsOf(got), capsOf(want))
	}
}

func fallbacks(t *testing.T, p *proxytest.Proxy, from, to string) {
	t.Helper()
	if n := p.Metric(t, "hms_proxy_backend_fallback_total", "from_api", from, "to_api", to); n == 0 {
		t.Errorf("%s was not served by %s (hms_proxy_backend_fallback_total is 0)", from, to)
	}
}

// 1. An HDP 3.1.5 client, through a HORTONWORKS_3_1_0_3_1_5_6150_1 listener,
// against a real Apache Hive 3.1.3 metastore: the listener shows HDP's
// identity and HDP's method set, and the spec's mapped HDP wrappers are
// served by 3.1.3's positional methods (each checked on the backend).
func TestHDP315ClientOnApache313Backend(t *testing.T) {
	e2eutil.NeedHive(t)
	p := proxytest.Start(t, e2eutil.TwoCatalogs("compatibility.frontend-profile="+hdp315))
	c := proxytest.Client(t, p.URI("primary"))
	hctx := hdpCtx(t)
	direct := proxytest.Client(t, e2eutil.HMS2.URI)

	if v, err := c.GetVersion(hctx); err != nil || v != "3.1.0.3.1.5.6150-1" {
		t.Fatalf("getVersion at the HDP 3.1.5 listener = %q, %v", v, err)
	}
	// HDP's method set: a Hive 4-only family is not there.
	_, err := c.GetDataconnectors(hctx)
	e2eutil.AppErr(t, err, thrift.UNKNOWN_METHOD, "get_dataconnectors")

	db := e2eutil.Uniq("hdpc")
	ext := "catalog2__" + db
	if err := c.CreateDatabase(hctx, &thriftgen.Database{Name: ext, Description: "hdp e2e"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = direct.DropDatabase(e2eutil.Ctx(t), db, true, true) })

	// get_database_req -> get_database
	d, err := c.GetDatabaseReq(hctx, &thriftgen.GetDatabaseRequest{Name: &ext})
	if err != nil || d.Name != ext || d.Description != "hdp e2e" {
		t.Fatalf("get_database_req: %+v %v", d, err)
	}
	fallbacks(t, p, "get_database_req", "get_database")

	// create_table_req -> create_table_with_environment_context, with the
	// HDP 3.1.5 Table fields 3.1.3 does not have.
	sent := capTable(ext, "t")
	sent.TableType, sent.Parameters = "MANAGED_TABLE", nil
	sent.PartitionKeys = []*thriftgen.FieldSchema{{Name: "p", Type: "string"}}
	// 3.1.3's Table ends at field 18: it cannot hold accessType or the
	// capability lists, so a table carrying them is refused, naming the
	// field, instead of being stored without them.
	e2eutil.MetaErr(t, c.CreateTableReq(hctx, &thriftgen.CreateTableRequest{Table: sent}), "Table.accessType", "APACHE_3_1_3")
	if _, err := direct.GetTable(e2eutil.Ctx(t), db, "t"); !e2eutil.IsNotFound(err) {
		t.Fatalf("a refused create_table_req reached the backend: %v", err)
	}
	sent.AccessType, sent.RequiredReadCapabilities, sent.RequiredWriteCapabilities = nil, nil, nil
	if err := c.CreateTableReq(hctx, &thriftgen.CreateTableRequest{Table: sent}); err != nil {
		t.Fatalf("create_table_req: %v", err)
	}
	fallbacks(t, p, "create_table_req", "create_table_with_environment_context")
	onBackend, err := direct.GetTable(e2eutil.Ctx(t), db, "t")
	if err != nil || len(onBackend.PartitionKeys) != 1 || onBackend.TableType != "MANAGED_TABLE" {
		t.Fatalf("the 3.1.3 backend lacks the table created by create_table_req: %+v %v", onBackend, err)
	}
	back, err := c.GetTable(hctx, ext, "t")
	if err != nil || back.DbName != ext {
		t.Fatalf("get_table through the HDP listener: %+v %v", back, err)
	}
	if back.AccessType != nil || back.RequiredReadCapabilities != nil || back.RequiredWriteCapabilities != nil {
		t.Fatalf("capabilities appeared from nowhere: %s", capsOf(back))
	}

	// alter_table_req -> alter_table_with_environment_context
	back.Parameters = map[string]string{"hdp_alter": "yes"}
	if _, err := c.AlterTableReq(hctx, &thriftgen.AlterTableRequest{DbName: ext, TableName: "t", Table: back}); err != nil {
		t.Fatalf("alter_table_req: %v", err)
	}
	fallbacks(t, p, "alter_table_req", "alter_table_with_environment_context")
	if tb, err := direct.GetTable(e2eutil.Ctx(t), db, "t"); err != nil || tb.Parameters["hdp_alter"] != "yes" {
		t.Fatalf("alter_table_req did not reach the backend: %v %v", tb, err)
	}

	// A partition to work on (add_partition is common to every profile).
	sd := *onBackend.Sd
	sd.Location = ""
	if _, err := c.AddPartition(hctx, &thriftgen.Partition{Values: []string{"1"}, DbName: ext, TableName: "t", Sd: &sd}); err != nil {
		t.Fatalf("add_partition: %v", err)
	}

	// get_partitions_by_names_req -> get_partitions_by_names
	parts, err := c.GetPartitionsByNamesReq(hctx, &thriftgen.GetPartitionsByNamesRequest{DbName: ext, TblName: "t", Names: []string{"p=1"}})
	if err != nil || len(parts.Partitions) != 1 || parts.Partitions[0].DbName != ext || parts.Partitions[0].Values[0] != "1" {
		t.Fatalf("get_partitions_by_names_req: %+v %v", parts, err)
	}
	fallbacks(t, p, "get_partitions_by_names_req", "get_partitions_by_names")

	// alter_partitions_req -> alter_partitions_with_environment_context
	part := parts.Partitions[0]
	part.Parameters["hdp_alter"] = "part"
	if _, err := c.AlterPartitionsReq(hctx, &thriftgen.AlterPartitionsRequest{DbName: ext, TableName: "t", Partitions: []*thriftgen.Partition{part}}); err != nil {
		t.Fatalf("alter_partitions_req: %v", err)
	}
	fallbacks(t, p, "alter_partitions_req", "alter_partitions_with_environment_context")
	if bp, err := direct.GetPartition(e2eutil.Ctx(t), db, "t", []string{"1"}); err != nil || bp.Parameters["hdp_alter"] != "part" {
		t.Fatalf("alter_partitions_req did not reach the backend: %+v %v", bp, err)
	}

	// rename_partition_req -> rename_partition
	renamed := *part
	renamed.Values = []string{"2"}
	if _, err := c.RenamePartitionReq(hctx, &thriftgen.RenamePartitionRequest{DbName: ext, TableName: "t", PartVals: []string{"1"}, NewPart: &renamed}); err != nil {
		t.Fatalf("rename_partition_req: %v", err)
	}
	fallbacks(t, p, "rename_partition_req", "rename_partition")
	if names, err := direct.GetPartitionNames(e2eutil.Ctx(t), db, "t", -1); err != nil || !reflect.DeepEqual(names, []string{"p=2"}) {
		t.Fatalf("rename_partition_req did not reach the backend: %v %v", names, err)
	}

	// update_table/partition_column_statistics_req -> update_table/partition_column_statistics
	stats := func(tableLevel bool, partName *string, ndv int64) *thriftgen.SetPartitionsStatsRequest {
		lo, hi := int64(1), int64(100)
		return &thriftgen.SetPartitionsStatsRequest{ColStats: []*thriftgen.ColumnStatistics{{
			StatsDesc: &thriftgen.ColumnStatisticsDesc{IsTblLevel: tableLevel, DbName: ext, TableName: "t", PartName: partName},
			StatsObj: []*thriftgen.ColumnStatisticsObj{{ColName: "id", ColType: "bigint",
				StatsData: &thriftgen.ColumnStatisticsData{LongStats: &thriftgen.LongColumnStatsData{LowValue: &lo, HighValue: &hi, NumNulls: 1, NumDVs: ndv}}}},
		}}}
	}
	if r, err := c.UpdateTableColumnStatisticsReq(hctx, stats(true, nil, 11)); err != nil || !r.Result {
		t.Fatalf("update_table_column_statistics_req: %+v %v", r, err)
	}
	fallbacks(t, p, "update_table_column_statistics_req", "update_table_column_statistics")
	if cs, err := direct.GetTableColumnStatistics(e2eutil.Ctx(t), db, "t", "id"); err != nil || cs.StatsObj[0].StatsData.LongStats.NumDVs != 11 {
		t.Fatalf("table statistics did not reach the backend: %+v %v", cs, err)
	}
	p2 := "p=2"
	if r, err := c.UpdatePartitionColumnStatisticsReq(hctx, stats(false, &p2, 22)); err != nil || !r.Result {
		t.Fatalf("update_partition_column_statistics_req: %+v %v", r, err)
	}
	fallbacks(t, p, "update_partition_column_statistics_req", "update_partition_column_statistics")
	if cs, err := direct.GetPartitionColumnStatistics(e2eutil.Ctx(t), db, "t", "p=2", "id"); err != nil || cs.StatsObj[0].StatsData.LongStats.NumDVs != 22 {
		t.Fatalf("partition statistics did not reach the backend: %+v %v", cs, err)
	}

	// truncate_table_req -> truncate_table: the backend empties the table's
	// folder (the test bed's warehouse is a local directory).
	tr := e2eutil.Table(ext, "tr")
	tr.TableType, tr.Parameters = "MANAGED_TABLE", nil
	if err := c.CreateTableReq(hctx, &thriftgen.CreateTableRequest{Table: tr}); err != nil {
		t.Fatal(err)
	}
	trb, err := direct.GetTable(e2eutil.Ctx(t), db, "tr")
	if err != nil || !strings.HasPrefix(trb.Sd.Location, "file:") {
		t.Fatalf("the table needs a local location: %+v %v", trb, err)
	}
	dataFile := filepath.Join(strings.TrimPrefix(trb.Sd.Location, "file:"), "000000_0")
	if err := os.WriteFile(dataFile, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TruncateTableReq(hctx, &thriftgen.TruncateTableRequest{DbName: ext, TableName: "tr"}); err != nil {
		t.Fatalf("truncate_table_req: %v", err)
	}
	fallbacks(t, p, "truncate_table_req", "truncate_table")
	if _, err := os.Stat(dataFile); !os.IsNotExist(err) {
		t.Fatalf("truncate_table_req did not reach the backend: %s still there (%v)", dataFile, err)
	}
}

// 2. Both edges map the HDP 3.1.5 Table dialect: a Hive 4 client (Apache 4
// ids) and an HDP 3.1.5 client (HDP ids) create and read tables on an HDP
// 3.1.5 backend (the test double); accessType and both capability lists land
// in HDP's own fields, come back identical to either client, and Hive 4's
// Table.id is never delivered to the HDP side.
func TestHDP315TableDialectMappedAtBothEdges(t *testing.T) {
	e2eutil.NeedHive(t)
	dbl := hdptest.Start(t, thriftgen.ProfileHDP315)
	props := map[string]string{
		"catalogs":                "catalog1,hdp",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": e2eutil.HMS1.URI,
		"catalog.hdp.conf.hive.metastore.uris":      dbl.URI(),
		"catalog.hdp.runtime-profile":               hdp315,
		"compatibility.frontend-profile":            "APACHE_4_1_0",
	}
	p := proxytest.Start(t, withFrontend(t, props, "hdp", hdp315))
	h4 := proxytest.Client(t, p.URI("primary"))
	hc := proxytest.Client(t, p.URI("hdp"))
	c4, hctx := e2eutil.Ctx(t), hdpCtx(t)

	if err := h4.CreateDatabase(c4, &thriftgen.Database{Name: "hdp__sales"}); err != nil {
		t.Fatal(err)
	}
	if dbl.Database("sales") == nil {
		t.Fatal("the database must reach the HDP backend under its internal name 'sales'")
	}

	// Hive 4 client: create_table_req with accessType, both lists and id.
	sent := capTable("hdp__sales", "t4")
	id := int64(4242)
	sent.Id = &id
	// Table.id (Hive 4 only) has no slot in HDP 3.1.5: refused, not dropped.
	e2eutil.MetaErr(t, h4.CreateTableReq(c4, &thriftgen.CreateTableRequest{Table: sent}), "Table.id", "HORTONWORKS_3_1_0_3_1_5_6150_1")
	if len(dbl.Calls("create_table_req")) != 0 {
		t.Fatal("a refused create_table_req reached the HDP backend")
	}
	sent.Id = nil
	if err := h4.CreateTableReq(c4, &thriftgen.CreateTableRequest{Table: sent}); err != nil {
		t.Fatalf("create_table_req (Hive 4 client): %v", err)
	}
	calls := dbl.Calls("create_table_req")
	if len(calls) != 1 {
		t.Fatalf("the HDP backend must receive create_table_req natively, got %v", dbl.Methods())
	}
	if s := calls[0].SkippedIn("Table"); len(s) != 0 {
		t.Fatalf("the HDP backend received Table fields it cannot read (would be dropped): %v", calls[0].Skipped)
	}
	stored := dbl.Table("sales", "t4")
	sameCaps(t, "stored on the HDP backend (Hive 4 client)", stored, sent)
	if stored.DbName != "sales" || stored.Id != nil {
		t.Fatalf("stored: db=%q id=%v", stored.DbName, stored.Id)
	}
	got, err := h4.GetTableReq(c4, &thriftgen.GetTableRequest{DbName: "hdp__sales", TblName: "t4"})
	if err != nil {
		t.Fatal(err)
	}
	sameCaps(t, "get_table_req back to the Hive 4 client", got.Table, sent)
	if got.Table.DbName != "hdp__sales" || got.Table.Id != nil {
		t.Fatalf("get_table_req: db=%q id=%v (HDP has no Table.id to give back)", got.Table.DbName, got.Table.Id)
	}
	objs, err := h4.GetTableObjectsByNameReq(c4, &thriftgen.GetTablesRequest{DbName: "hdp__sales", TblNames: []string{"t4"}})
	if err != nil || len(objs.Tables) != 1 {
		t.Fatalf("get_table_objects_by_name_req: %+v %v", objs, err)
	}
	sameCaps(t, "get_table_objects_by_name_req", objs.Tables[0], sent)

	// alter_table_req (HDP has it): the new values land in the right fields.
	altered := got.Table
	write := int8(4) // ACCESSTYPE_READONLY… any other value
	altered.AccessType = &write
	altered.RequiredReadCapabilities = []string{"HIVEMANAGEDINSERTREAD"}
	altered.RequiredWriteCapabilities = []string{"HIVEMANAGEDINSERTWRITE", "HIVEMANAGESTATS"}
	if _, err := h4.AlterTableReq(c4, &thriftgen.AlterTableRequest{DbName: "hdp__sales", TableName: "t4", Table: altered}); err != nil {
		t.Fatalf("alter_table_req: %v", err)
	}
	if c := dbl.Calls("alter_table_req"); len(c) != 1 || len(c[0].SkippedIn("Table")) != 0 {
		t.Fatalf("alter_table_req at the HDP backend: %+v", c)
	}
	sameCaps(t, "stored after alter_table_req", dbl.Table("sales", "t4"), altered)

	// HDP 3.1.5 client: its own ids in, HDP ids on the backend, its own out.
	hsent := capTable("hdp__sales", "t5")
	if err := hc.CreateTableReq(hctx, &thriftgen.CreateTableRequest{Table: hsent}); err != nil {
		t.Fatalf("create_table_req (HDP client): %v", err)
	}
	if c := dbl.Calls("create_table_req"); len(c) != 2 || len(c[1].SkippedIn("Table")) != 0 {
		t.Fatalf("create_table_req from the HDP client at the HDP backend: %+v", c)
	}
	sameCaps(t, "stored on the HDP backend (HDP client)", dbl.Table("sales", "t5"), hsent)
	hback, err := hc.GetTable(hctx, "hdp__sales", "t5")
	if err != nil || hback.DbName != "hdp__sales" {
		t.Fatalf("get_table (HDP client): %+v %v", hback, err)
	}
	sameCaps(t, "get_table back to the HDP client", hback, hsent)

	// Across the two populations: each reads the other's table unchanged.
	cross, err := hc.GetTable(hctx, "hdp__sales", "t4")
	if err != nil {
		t.Fatal(err)
	}
	sameCaps(t, "the Hive 4 client's table read by the HDP client", cross, altered)
	cross4, err := h4.GetTableReq(c4, &thriftgen.GetTableRequest{DbName: "hdp__sales", TblName: "t5"})
	if err != nil {
		t.Fatal(err)
	}
	sameCaps(t, "the HDP client's table read by the Hive 4 client", cross4.Table, hsent)
}

// 3. add_write_notification_log, get_tables_ext and
// get_all_materialized_view_objects_for_rewriting pass through to an HDP
// catalog only; aimed at an Apache 3.1.3 catalog they fail with "requires a
// Hortonworks backend runtime" and never reach it. "probe" is a 3.1.3 test
// double that shows what reaches a 3.1.3 backend.
func TestHDPOnlyMethodsPassThroughOnlyToHortonworksBackends(t *testing.T) {
	e2eutil.NeedHive(t)
	dbl := hdptest.Start(t, thriftgen.ProfileHDP315)
	probe := hdptest.Start(t, thriftgen.ProfileApache313)
	for _, d := range []string{"sales"} {
		if err := dbl.PutDatabase(&thriftgen.Database{Name: d}); err != nil {
			t.Fatal(err)
		}
	}
	if err := probe.PutDatabase(&thriftgen.Database{Name: "sales"}); err != nil {
		t.Fatal(err)
	}
	if err := dbl.PutTable(capTable("sales", "orders")); err != nil {
		t.Fatal(err)
	}
	rewrite := true
	mv := e2eutil.Table("sales", "mv_orders")
	mv.TableType, mv.RewriteEnabled, mv.Parameters = "MATERIALIZED_VIEW", &rewrite, nil
	mv.ViewOriginalText = "select id from sales.orders"
	mv.ViewExpandedText = "select `orders`.`id` from `sales`.`orders`"
	if err := dbl.PutTable(mv); err != nil {
		t.Fatal(err)
	}
	start := func(def string) (*thriftgen.Client, context.Context) {
		p := proxytest.Start(t, map[string]string{
			"catalogs":                "apache,hdp,probe",
			"routing.default-catalog": def,
			"catalog.apache.conf.hive.metastore.uris": e2eutil.HMS1.URI,
			"catalog.hdp.conf.hive.metastore.uris":    dbl.URI(),
			"catalog.hdp.runtime-profile":             hdp315,
			"catalog.probe.conf.hive.metastore.uris":  probe.URI(),
			"compatibility.frontend-profile":          hdp315,
		})
		return proxytest.Client(t, p.URI("primary")), hdpCtx(t)
	}
	hdpOnly := []string{"add_write_notification_log", "get_tables_ext", "get_all_materialized_view_objects_for_rewriting"}
	notification := func(db string) *thriftgen.WriteNotificationLogRequest {
		return &thriftgen.WriteNotificationLogRequest{TxnId: 11, WriteId: 3, Db: db, Table: "orders",
			FileInfo: &thriftgen.InsertEventRequestData{FilesAdded: []string{"hdfs://nn/warehouse/sales.db/orders/delta_3_3/bucket_0"}}}
	}
	ext := func(cat, db string) *thriftgen.GetTablesExtRequest {
		return &thriftgen.GetTablesExtRequest{Catalog: cat, Database: db, TableNamePattern: "*",
			RequestedFields: int32(thriftgen.GetTablesExtRequestFields_ALL)}
	}

	c, hctx := start("apache")
	// To the HDP catalog: through, with names made internal.
	if _, err := c.AddWriteNotificationLog(hctx, notification("hdp__sales")); err != nil {
		t.Fatalf("add_write_notification_log to the HDP catalog: %v", err)
	}
	if n := dbl.Calls("add_write_notification_log"); len(n) != 1 ||
		n[0].Args.(*thriftgen.AddWriteNotificationLogArgs).Rqst.Db != "sales" || n[0].Args.(*thriftgen.AddWriteNotificationLogArgs).Rqst.TxnId != 11 {
		t.Fatalf("the HDP backend must receive the notification for its database 'sales': %+v", n)
	}
	infos, err := c.GetTablesExt(hctx, ext("hdp", "hdp__sales"))
	if err != nil {
		t.Fatalf("get_tables_ext to the HDP catalog: %v", err)
	}
	if len(infos) != 2 || infos[1].TblName != "orders" || infos[1].AccessType == nil || *infos[1].AccessType != 8 ||
		!slices.Equal(infos[1].RequiredReadCapabilities, []string{"HIVEFULLACIDREAD", "CONNECTORREAD"}) ||
		!slices.Equal(infos[1].RequiredWriteCapabilities, []string{"HIVEFULLACIDWRITE"}) {
		t.Fatalf("get_tables_ext answer: %+v", infos)
	}
	if n := dbl.Calls("get_tables_ext"); len(n) != 1 {
		t.Fatalf("get_tables_ext did not reach the HDP backend: %v", dbl.Methods())
	} else if r := n[0].Args.(*thriftgen.GetTablesExtArgs).Req; r.Database != "sales" || r.Catalog != "hive" {
		t.Fatalf("get_tables_ext reached the HDP backend as catalog %q database %q, want hive/sales", r.Catalog, r.Database)
	}
	// To the real 3.1.3 catalog and to the 3.1.3 probe: refused before the backend.
	for _, cat := range []string{"apache", "probe"} {
		_, err := c.GetTablesExt(hctx, ext(cat, cat+"__sales"))
		e2eutil.MetaErr(t, err, "get_tables_ext needs a backend runtime that has it", cat)
		// add_write_notification_log declares no exception: the refusal is a
		// TApplicationException carrying the same text.
		_, err = c.AddWriteNotificationLog(hctx, notification(cat+"__sales"))
		e2eutil.AppErr(t, err, thrift.INTERNAL_ERROR, "add_write_notification_log needs a backend runtime that has it", cat)
	}
	// Namespace-less: routing.default-catalog, here the real 3.1.3 one.
	_, err = c.GetAllMaterializedViewObjectsForRewriting(hctx)
	e2eutil.MetaErr(t, err, "get_all_materialized_view_objects_for_rewriting needs a backend runtime that has it", "apache")

	c, hctx = start("probe")
	_, err = c.GetAllMaterializedViewObjectsForRewriting(hctx)
	e2eutil.MetaErr(t, err, "needs a backend runtime that has it", "probe")

	c, hctx = start("hdp")
	views, err := c.GetAllMaterializedViewObjectsForRewriting(hctx)
	if err != nil || len(views) != 1 || views[0].TableName != "mv_orders" || views[0].DbName != "sales" {
		t.Fatalf("get_all_materialized_view_objects_for_rewriting via the default HDP catalog: %+v %v", views, err)
	}
	if n := dbl.Calls("get_all_materialized_view_objects_for_rewriting"); len(n) != 1 {
		t.Fatalf("the HDP backend did not receive get_all_materialized_view_objects_for_rewriting: %v", dbl.Methods())
	}
	for _, m := range hdpOnly {
		if n := probe.Calls(m); len(n) != 0 {
			t.Errorf("%s reached the Apache 3.1.3 backend %d times", m, len(n))
		}
	}
}

// 4. An HDP 3.1.0.0-78 backend (test double): a Hive 4 client's Table reaches
// it with HDP-78's fields (up to 20) intact and nothing of fields 21-28
// kept; create_table_req, which HDP-78 lacks, is served by
// create_table_with_environment_context; HDP 3.1.5-only calls are refused.
func TestHDP78BackendFromHive4Client(t *testing.T) {
	e2eutil.NeedHive(t)
	dbl := hdptest.Start(t, thriftgen.ProfileHDP78)
	p := proxytest.Start(t, withFrontend(t, map[string]string{
		"catalogs":                "catalog1,hdp78",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": e2eutil.HMS1.URI,
		"catalog.hdp78.conf.hive.metastore.uris":    dbl.URI(),
		"catalog.hdp78.runtime-profile":             hdp78,
		"compatibility.frontend-profile":            "APACHE_4_1_0",
	}, "hdp78", hdp78))
	c, c4 := proxytest.Client(t, p.URI("primary")), e2eutil.Ctx(t)
	if err := c.CreateDatabase(c4, &thriftgen.Database{Name: "hdp78__ops"}); err != nil {
		t.Fatal(err)
	}
	sent := capTable("hdp78__ops", "t")
	wid, id, txn := int64(5), int64(99), int64(77)
	compliant := true
	sent.WriteId, sent.IsStatsCompliant, sent.Id, sent.TxnId = &wid, &compliant, &id, &txn
	// HDP-78's Table ends at field 20: fields 21-28 would be dropped there.
	e2eutil.MetaErr(t, c.CreateTableReq(c4, &thriftgen.CreateTableRequest{Table: sent}), "HORTONWORKS_3_1_0_3_1_0_78")
	if len(dbl.Calls("create_table_with_environment_context")) != 0 {
		t.Fatal("a refused create_table_req reached HDP-78")
	}
	sent.AccessType, sent.RequiredReadCapabilities, sent.RequiredWriteCapabilities, sent.Id, sent.TxnId = nil, nil, nil, nil, nil
	if err := c.CreateTableReq(c4, &thriftgen.CreateTableRequest{Table: sent}); err != nil {
		t.Fatalf("create_table_req on HDP-78: %v", err)
	}
	fallbacks(t, p, "create_table_req", "create_table_with_environment_context")
	if n := dbl.Calls("create_table_req"); len(n) != 0 {
		t.Fatal("create_table_req reached HDP-78, which does not have it")
	}
	calls := dbl.Calls("create_table_with_environment_context")
	if len(calls) != 1 {
		t.Fatalf("HDP-78 must receive create_table_with_environment_context, got %v", dbl.Methods())
	}
	stored := dbl.Table("ops", "t")
	if stored == nil || stored.Owner != "e2e" || stored.TableType != "EXTERNAL_TABLE" || stored.Parameters["EXTERNAL"] != "TRUE" ||
		len(stored.Sd.Cols) != 1 || stored.WriteId == nil || *stored.WriteId != 5 || stored.IsStatsCompliant == nil || !*stored.IsStatsCompliant {
		t.Fatalf("HDP-78 must hold Table fields 1-20 as sent: %+v", stored)
	}
	if stored.AccessType != nil || stored.RequiredReadCapabilities != nil || stored.RequiredWriteCapabilities != nil || stored.Id != nil || stored.TxnId != nil {
		t.Fatalf("HDP-78's Table ends at 20: %+v", stored)
	}
	if s := calls[0].Skipped; len(s) > 0 {
		t.Fatalf("the proxy forwarded fields HDP-78 does not have (it would drop them): %v", s)
	}
	got, err := c.GetTableReq(c4, &thriftgen.GetTableRequest{DbName: "hdp78__ops", TblName: "t"})
	if err != nil || got.Table.DbName != "hdp78__ops" || got.Table.WriteId == nil || *got.Table.WriteId != 5 || got.Table.AccessType != nil {
		t.Fatalf("get_table_req from HDP-78: %+v %v", got, err)
	}

	// An HDP-78 client at an HDP-78 listener: HDP-78's identity and method
	// set (no create_table_req there), and the same table through get_table.
	h78 := proxytest.Client(t, p.URI("hdp78"))
	if v, err := h78.GetVersion(c4); err != nil || v != "3.1.0.3.1.0.0-78" {
		t.Fatalf("getVersion at the HDP-78 listener = %q, %v", v, err)
	}
	err = h78.CreateTableReq(c4, &thriftgen.CreateTableRequest{Table: e2eutil.Table("hdp78__ops", "nope")})
	e2eutil.AppErr(t, err, thrift.UNKNOWN_METHOD, "create_table_req")
	if dbl.Table("ops", "nope") != nil {
		t.Fatal("a call refused by the HDP-78 listener reached the backend")
	}
	old, err := h78.GetTable(c4, "hdp78__ops", "t")
	if err != nil || old.DbName != "hdp78__ops" || old.WriteId == nil || *old.WriteId != 5 {
		t.Fatalf("get_table at the HDP-78 listener: %+v %v", old, err)
	}

	// get_tables_ext is HDP 3.1.5's: refused for HDP-78 without reaching it.
	_, err = c.GetTablesExt(c4, &thriftgen.GetTablesExtRequest{Catalog: "hdp78", Database: "hdp78__ops", TableNamePattern: "*",
		RequestedFields: int32(thriftgen.GetTablesExtRequestFields_ALL)})
	e2eutil.MetaErr(t, err, "get_tables_ext", hdp78)
	if n := dbl.Calls("get_tables_ext"); len(n) != 0 {
		t.Fatal("get_tables_ext reached HDP-78")
	}
	// add_write_notification_log is HDP-78's own: it passes.
	if _, err := c.AddWriteNotificationLog(c4, &thriftgen.WriteNotificationLogRequest{TxnId: 1, WriteId: 1, Db: "hdp78__ops", Table: "t",
		FileInfo: &thriftgen.InsertEventRequestData{FilesAdded: []string{"f"}}}); err != nil {
		t.Fatalf("add_write_notification_log to HDP-78: %v", err)
	}
	if n := dbl.Calls("add_write_notification_log"); len(n) != 1 || n[0].Args.(*thriftgen.AddWriteNotificationLogArgs).Rqst.Db != "ops" {
		t.Fatalf("add_write_notification_log at HDP-78: %+v", n)
	}
}

// A Hive 4 alter_table_req with expectedParameterKey/Value is conditional; an
// HDP runtime has alter_table_req but not those fields, so forwarding it
// would make the alter unconditional. It is refused instead.
func TestHDPConditionalAlterIsNotMadeUnconditional(t *testing.T) {
	e2eutil.NeedHive(t)
	for _, prof := range []thriftgen.ProfileSet{thriftgen.ProfileHDP78, thriftgen.ProfileHDP315} {
		dbl := hdptest.Start(t, prof)
		name := prof.Names()[0]
		p := proxytest.Start(t, map[string]string{
			"catalogs":                "catalog1,hdp",
			"routing.default-catalog": "catalog1",
			"catalog.catalog1.conf.hive.metastore.uris": e2eutil.HMS1.URI,
			"catalog.hdp.conf.hive.metastore.uris":      dbl.URI(),
			"catalog.hdp.runtime-profile":               name,
			"compatibility.frontend-profile":            "APACHE_4_1_0",
		})
		c := proxytest.Client(t, p.URI("primary"))
		if err := c.CreateDatabase(e2eutil.Ctx(t), &thriftgen.Database{Name: "hdp__db"}); err != nil {
			t.Fatal(err)
		}
		key, val := "metadata_location", "s3://old"
		_, err := c.AlterTableReq(e2eutil.Ctx(t), &thriftgen.AlterTableRequest{DbName: "hdp__db", TableName: "t",
			Table: e2eutil.Table("hdp__db", "t"), ExpectedParameterKey: &key, ExpectedParameterValue: &val})
		e2eutil.MetaErr(t, err, "expectedParameterKey", name)
		if calls := dbl.Calls("alter_table_req"); len(calls) != 0 {
			t.Fatalf("%s: the conditional alter reached the backend unconditionally", name)
		}
	}
}
