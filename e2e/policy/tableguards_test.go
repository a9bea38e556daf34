package policy

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

const (
	icebergHandler = "org.apache.iceberg.mr.hive.HiveIcebergStorageHandler"
	icebergInput   = "org.apache.iceberg.mr.hive.HiveIcebergInputFormat"
	icebergOutput  = "org.apache.iceberg.mr.hive.HiveIcebergOutputFormat"
	icebergSerde   = "org.apache.iceberg.mr.hive.HiveIcebergSerDe"
)

// icebergRecord is the record Iceberg's HiveTableOperations writes for a
// table (Hive engine on).
func icebergRecord(db, name, loc, pointer string) *thriftgen.Table {
	return &thriftgen.Table{DbName: db, TableName: name, Owner: "iceberg", TableType: "EXTERNAL_TABLE", PartitionKeys: []*thriftgen.FieldSchema{},
		Parameters: map[string]string{"EXTERNAL": "TRUE", "table_type": "ICEBERG", "metadata_location": pointer,
			"storage_handler": icebergHandler, "uuid": "7d1c0e9e-0000-4000-8000-000000000002"},
		Sd: &thriftgen.StorageDescriptor{Location: loc, InputFormat: icebergInput, OutputFormat: icebergOutput,
			Cols:      []*thriftgen.FieldSchema{{Name: "id", Type: "bigint"}},
			SerdeInfo: &thriftgen.SerDeInfo{SerializationLib: icebergSerde, Parameters: map[string]string{}}}}
}

// hs2Insert is the Table HiveServer2 3.1 sends with its
// alter_table_with_environment_context after an INSERT into that table: the
// object compiled without Iceberg's handler, so no Iceberg key and the
// abstract descriptor.
func hs2Insert(db, name, loc string) *thriftgen.Table {
	return &thriftgen.Table{DbName: db, TableName: name, Owner: "iceberg", TableType: "EXTERNAL_TABLE", PartitionKeys: []*thriftgen.FieldSchema{},
		Parameters: map[string]string{"EXTERNAL": "TRUE", "last_insert_by": "hs2"},
		Sd: &thriftgen.StorageDescriptor{Location: loc, InputFormat: "org.apache.hadoop.mapred.FileInputFormat",
			OutputFormat: "org.apache.hadoop.mapred.FileOutputFormat",
			Cols:         []*thriftgen.FieldSchema{{Name: "id", Type: "bigint"}},
			SerdeInfo:    &thriftgen.SerDeInfo{SerializationLib: "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", Parameters: map[string]string{}}}}
}

// readTable reads a record straight from a metastore with get_table_req,
// which Hive 3.1.3 and 4.1 both serve, declaring the insert-only tables
// capability (Hive 3.1.3 hides such tables from clients that do not).
func readTable(t *testing.T, c *thriftgen.Client, db, name string) (*thriftgen.Table, error) {
	t.Helper()
	r, err := c.GetTableReq(e2eutil.Ctx(t), &thriftgen.GetTableRequest{DbName: db, TblName: name,
		Capabilities: &thriftgen.ClientCapabilities{Values: []thriftgen.ClientCapability{thriftgen.ClientCapability_INSERT_ONLY_TABLES}}})
	if err != nil {
		return nil, err
	}
	return r.Table, nil
}

func noStats() *thriftgen.EnvironmentContext {
	return &thriftgen.EnvironmentContext{Properties: map[string]string{"DO_NOT_UPDATE_STATS": "true"}}
}

// envProps reads the EnvironmentContext properties of a recorded
// alter_table_with_environment_context call.
func envProps(c proxytest.TapCall) map[string]string {
	out := map[string]string{}
	env := c.Args.Field(4)
	if env == nil {
		return out
	}
	props := env.Field(1)
	if props == nil {
		return out
	}
	for i := 0; i+1 < len(props.Elems); i += 2 {
		out[string(props.Elems[i].Str)] = string(props.Elems[i+1].Str)
	}
	return out
}

// The Iceberg pointer guard through the proxy, on the default catalog (a
// table lock of its metastore), a non-default Hive 3.1.3 catalog (a lock of
// the shim) and a Hive 4.1 catalog (a lock of the shim and compare-and-set): HiveServer2's alter that would erase the
// pointer is merged over the record and counted; a genuine Iceberg commit
// passes untouched; a plain table costs one read, then none.
func TestIcebergPointerGuardThroughTheProxy(t *testing.T) {
	e2eutil.NeedHive(t)
	tap1, tap2, tap4 := proxytest.NewTap(t, e2eutil.HMS1.URI), proxytest.NewTap(t, e2eutil.HMS2.URI), proxytest.NewTap(t, e2eutil.HMS4.URI)
	p := proxytest.Start(t, e2eutil.WithHive4Frontend(t, map[string]string{
		"catalogs":                "catalog1,catalog2,catalog4",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": tap1.URI(),
		"catalog.catalog2.conf.hive.metastore.uris": tap2.URI(),
		"catalog.catalog4.conf.hive.metastore.uris": tap4.URI(),
		"catalog.catalog4.runtime-profile":          "APACHE_4_1_0",
	}))
	c, c4 := proxytest.Client(t, p.URI("primary")), proxytest.Client(t, p.URI("hive4"))
	for _, cs := range []struct {
		cat    string
		ms     string
		tap    *proxytest.Tap
		prefix string
		repair []string // backend calls of a repair
	}{
		{"catalog1", e2eutil.HMS1.URI, tap1, "", []string{"get_table_req", "lock", "get_table_req", "alter_table_with_environment_context", "unlock"}},
		// The other catalogs' table locks are the shim's: the metastore sees
		// only the read, the re-read under the lock and the alter.
		{"catalog2", e2eutil.HMS2.URI, tap2, "catalog2__", []string{"get_table_req", "get_table_req", "alter_table_with_environment_context"}},
		{"catalog4", e2eutil.HMS4.URI, tap4, "catalog4__", []string{"get_table_req", "get_table_req", "alter_table_with_environment_context"}},
	} {
		t.Run(cs.cat, func(t *testing.T) {
			direct := proxytest.Client(t, cs.ms)
			db := e2eutil.Uniq("ice")
			e2eutil.MkDB(t, direct, db)
			ext := cs.prefix + db
			loc := "file://" + t.TempDir()
			pointer := loc + "/metadata/00001-a.metadata.json"
			if err := direct.CreateTable(e2eutil.Ctx(t), icebergRecord(db, "ev", loc, pointer)); err != nil {
				t.Fatal(err)
			}
			metric := func(outcome string) float64 {
				return p.Metric(t, "hms_proxy_iceberg_pointer_guard_events_total", "catalog", cs.cat, "outcome", outcome)
			}

			// HiveServer2's alter after an INSERT: repaired.
			cs.tap.Reset()
			if err := c.AlterTableWithEnvironmentContext(e2eutil.Ctx(t), ext, "ev", hs2Insert(ext, "ev", loc), noStats()); err != nil {
				t.Fatalf("HiveServer2's alter: %v", err)
			}
			rec, err := readTable(t, direct, db, "ev")
			if err != nil {
				t.Fatal(err)
			}
			if rec.Parameters["metadata_location"] != pointer || rec.Parameters["table_type"] != "ICEBERG" ||
				rec.Parameters["storage_handler"] != icebergHandler || rec.Parameters["last_insert_by"] != "hs2" ||
				rec.Sd.InputFormat != icebergInput || rec.Sd.OutputFormat != icebergOutput || rec.Sd.SerdeInfo.SerializationLib != icebergSerde {
				t.Fatalf("after HiveServer2's alter the record lost Iceberg state or the alter's own change: params %v, formats %s %s %s",
					rec.Parameters, rec.Sd.InputFormat, rec.Sd.OutputFormat, rec.Sd.SerdeInfo.SerializationLib)
			}
			if got := cs.tap.Methods(); !reflect.DeepEqual(got, cs.repair) {
				t.Fatalf("a repair sent %v to the metastore, want %v", got, cs.repair)
			}
			for _, call := range cs.tap.Calls() {
				if call.Method != "alter_table_with_environment_context" {
					continue
				}
				env := envProps(call)
				if cs.cat == "catalog4" && (env["expected_parameter_key"] != "metadata_location" || env["expected_parameter_value"] != pointer) {
					t.Errorf("the repaired alter on a Hive 4 metastore is not conditional on the pointer read: %v", env)
				}
				if cs.cat != "catalog4" && env["expected_parameter_key"] != "" {
					t.Errorf("a Hive 3.1.3 metastore got a compare-and-set it does not honour: %v", env)
				}
				if env["DO_NOT_UPDATE_STATS"] != "true" {
					t.Errorf("the client's environment context was lost: %v", env)
				}
			}
			if n := metric("repaired"); n != 1 {
				t.Errorf("repairs counted: %v, want 1", n)
			}
			if cs.cat == "catalog1" {
				locks, err := direct.ShowLocks(e2eutil.Ctx(t), &thriftgen.ShowLocksRequest{Dbname: e2eutil.Strp(db)})
				if err != nil {
					t.Fatal(err)
				}
				if len(locks.Locks) != 0 {
					t.Errorf("the repair left locks behind: %+v", locks.Locks)
				}
			}

			// A genuine Iceberg commit: built on the current pointer.
			cs.tap.Reset()
			next := loc + "/metadata/00002-b.metadata.json"
			commit := icebergRecord(ext, "ev", loc, next)
			commit.Parameters["previous_metadata_location"] = pointer
			if err := c.AlterTableWithEnvironmentContext(e2eutil.Ctx(t), ext, "ev", commit, noStats()); err != nil {
				t.Fatalf("Iceberg's commit: %v", err)
			}
			if rec, err = readTable(t, direct, db, "ev"); err != nil {
				t.Fatal(err)
			}
			if rec.Parameters["metadata_location"] != next || rec.Parameters["previous_metadata_location"] != pointer || rec.Parameters["last_insert_by"] != "" {
				t.Errorf("Iceberg's commit did not land as sent: %v", rec.Parameters)
			}
			if got := cs.tap.Methods(); !reflect.DeepEqual(got, []string{"get_table_req", "alter_table_with_environment_context"}) {
				t.Errorf("a genuine commit sent %v", got)
			} else if env := envProps(cs.tap.Calls()[1]); env["expected_parameter_key"] != "" {
				t.Errorf("a genuine commit was changed: %v", env)
			}
			if n := metric("forward_commit"); n != 1 {
				t.Errorf("forwarded commits counted: %v, want 1", n)
			}

			// The Hive 4 client's alter_table_req (served by the adapter on
			// Hive 3.1.3 catalogs) is repaired as well.
			cs.tap.Reset()
			if _, err := c4.AlterTableReq(e2eutil.Ctx(t), &thriftgen.AlterTableRequest{DbName: ext, TableName: "ev", Table: hs2Insert(ext, "ev", loc)}); err != nil {
				t.Fatalf("alter_table_req: %v", err)
			}
			if rec, err = readTable(t, direct, db, "ev"); err != nil {
				t.Fatal(err)
			}
			if rec.Parameters["metadata_location"] != next || rec.Sd.InputFormat != icebergInput {
				t.Errorf("alter_table_req erased Iceberg state: %v %s", rec.Parameters, rec.Sd.InputFormat)
			}
			if n := metric("repaired"); n != 2 {
				t.Errorf("repairs counted after alter_table_req: %v, want 2", n)
			}

			if cs.cat == "catalog4" {
				// Plain alter_table carries no environment context: on a
				// Hive 4 metastore the repair goes out as
				// alter_table_with_environment_context with the
				// compare-and-set, answered as the client's alter_table.
				cs.tap.Reset()
				if err := c.AlterTable(e2eutil.Ctx(t), ext, "ev", hs2Insert(ext, "ev", loc)); err != nil {
					t.Fatalf("alter_table: %v", err)
				}
				calls := cs.tap.Calls()
				if got := cs.tap.Methods(); !reflect.DeepEqual(got, []string{"get_table_req", "get_table_req", "alter_table_with_environment_context"}) {
					t.Fatalf("a repaired alter_table on Hive 4 sent %v", got)
				}
				if env := envProps(calls[2]); env["expected_parameter_key"] != "metadata_location" || env["expected_parameter_value"] != next {
					t.Errorf("compare-and-set of the repaired alter_table: %v", env)
				}
				if rec, err = readTable(t, direct, db, "ev"); err != nil || rec.Parameters["metadata_location"] != next {
					t.Errorf("after alter_table: %v %v", rec, err)
				}
				if n := metric("repaired"); n != 3 {
					t.Errorf("repairs counted after alter_table: %v, want 3", n)
				}
			}

			// A plain table: one read, remembered, then none.
			e2eutil.MkTable(t, direct, db, "plain")
			for i := 0; i < 2; i++ {
				cs.tap.Reset()
				tb, err := readTable(t, direct, db, "plain")
				if err != nil {
					t.Fatal(err)
				}
				cs.tap.Reset()
				tb.DbName = ext
				tb.Parameters["round"] = string(rune('0' + i))
				if err := c.AlterTable(e2eutil.Ctx(t), ext, "plain", tb); err != nil {
					t.Fatal(err)
				}
				want := []string{"get_table_req", "alter_table"}
				if i == 1 {
					want = []string{"alter_table"}
				}
				if got := cs.tap.Methods(); !reflect.DeepEqual(got, want) {
					t.Errorf("alter %d of a plain table sent %v, want %v", i, got, want)
				}
			}
			if metric("not_iceberg") != 1 || metric("cache_suppressed") != 1 {
				t.Errorf("not_iceberg %v, cache_suppressed %v: want 1 and 1", metric("not_iceberg"), metric("cache_suppressed"))
			}
		})
	}
}

func transactionalTable(db, name string, props ...string) *thriftgen.Table {
	tb := e2eutil.Table(db, name)
	tb.TableType = "MANAGED_TABLE"
	tb.Parameters = map[string]string{}
	for i := 0; i+1 < len(props); i += 2 {
		tb.Parameters[props[i]] = props[i+1]
	}
	return tb
}

// The transactional DDL guard through the proxy, on the RPCs real clients
// send: create_table_with_environment_context (HiveMetaStoreClient.createTable
// of Hive 3 and Spark's Hive client), Hive 4's create_table_req, alter_table.
func TestTransactionalDDLGuardThroughTheProxy(t *testing.T) {
	e2eutil.NeedHive(t)
	direct := proxytest.Client(t, e2eutil.HMS2.URI)
	db := e2eutil.Uniq("txg")
	e2eutil.MkDB(t, direct, db)
	ext := "catalog2__" + db
	insertOnly := []string{"transactional", "true", "transactional_properties", "insert_only"}

	t.Run("reject", func(t *testing.T) {
		p := proxytest.Start(t, e2eutil.WithHive4Frontend(t, e2eutil.TwoCatalogs("guard.transactional-ddl.mode=REJECT_TRANSACTIONAL")))
		c, c4 := proxytest.Client(t, p.URI("primary")), proxytest.Client(t, p.URI("hive4"))
		err := c.CreateTableWithEnvironmentContext(e2eutil.Ctx(t), transactionalTable(ext, "r1", insertOnly...), &thriftgen.EnvironmentContext{})
		e2eutil.MetaErr(t, err, "create_table_with_environment_context of "+db+".r1 refused by guard.transactional-ddl.mode=REJECT_TRANSACTIONAL", "transactional=true")
		err = c4.CreateTableReq(e2eutil.Ctx(t), &thriftgen.CreateTableRequest{Table: transactionalTable(ext, "r2", "TRANSACTIONAL", "TRUE")})
		e2eutil.MetaErr(t, err, "create_table_req of "+db+".r2 refused", "transactional=TRUE")
		for _, n := range []string{"r1", "r2"} {
			if _, err := direct.GetTable(e2eutil.Ctx(t), db, n); !e2eutil.IsNotFound(err) {
				t.Errorf("the refused table %s reached the metastore: %v", n, err)
			}
		}
		// A managed table may be created; making it transactional is refused.
		if err := c.CreateTable(e2eutil.Ctx(t), transactionalTable(ext, "r3")); err != nil {
			t.Fatal(err)
		}
		err = c.AlterTable(e2eutil.Ctx(t), ext, "r3", transactionalTable(ext, "r3", insertOnly...))
		e2eutil.MetaErr(t, err, "alter_table of "+db+".r3 refused")
		if tb, err := direct.GetTable(e2eutil.Ctx(t), db, "r3"); err != nil || tb.Parameters["transactional"] != "" {
			t.Errorf("the refused alter reached the metastore: %v %v", tb, err)
		}
	})
	t.Run("client-addresses", func(t *testing.T) {
		// The guard applies to 10.0.0.0/8 only: this client (127.0.0.1)
		// creates its insert-only transactional table in the default
		// catalog. In catalog2 the ACID policy still refuses it (ACID
		// tables live where their transactions are), with its own reason.
		direct1 := proxytest.Client(t, e2eutil.HMS1.URI)
		e2eutil.MkDB(t, direct1, db)
		p := proxytest.Start(t, e2eutil.TwoCatalogs("guard.transactional-ddl.mode=REJECT_TRANSACTIONAL",
			"guard.transactional-ddl.client-addresses=10.0.0.0/8,2001:db8::/64"))
		c := proxytest.Client(t, p.URI("primary"))
		if err := c.CreateTableWithEnvironmentContext(e2eutil.Ctx(t), transactionalTable(db, "a1", insertOnly...), &thriftgen.EnvironmentContext{}); err != nil {
			t.Fatalf("a client outside the guard's addresses: %v", err)
		}
		tb, err := readTable(t, direct1, db, "a1")
		if err != nil || tb.TableType != "MANAGED_TABLE" || tb.Parameters["transactional"] != "true" {
			t.Fatalf("the metastore stored %+v %v, want the transactional managed table as sent", tb, err)
		}
		err = c.CreateTableWithEnvironmentContext(e2eutil.Ctx(t), transactionalTable(ext, "a1", insertOnly...), &thriftgen.EnvironmentContext{})
		e2eutil.MetaErr(t, err, "create_table_with_environment_context of table "+ext+".a1 refused on catalog catalog2",
			"ACID tables can exist only in the default catalog catalog1")
		p2 := proxytest.Start(t, e2eutil.TwoCatalogs("guard.transactional-ddl.mode=REJECT_TRANSACTIONAL",
			"guard.transactional-ddl.client-addresses=10.0.0.0/8,127.0.0.0/24"))
		err = proxytest.Client(t, p2.URI("primary")).CreateTableWithEnvironmentContext(e2eutil.Ctx(t), transactionalTable(ext, "a2", insertOnly...), &thriftgen.EnvironmentContext{})
		e2eutil.MetaErr(t, err, "refused by guard.transactional-ddl.mode=REJECT_TRANSACTIONAL")
	})
	t.Run("rewrite", func(t *testing.T) {
		p := proxytest.Start(t, e2eutil.TwoCatalogs("guard.transactional-ddl.mode=REWRITE_TRANSACTIONAL_TO_EXTERNAL"))
		c := proxytest.Client(t, p.URI("primary"))
		if err := c.CreateTableWithEnvironmentContext(e2eutil.Ctx(t), transactionalTable(ext, "w1", insertOnly...), &thriftgen.EnvironmentContext{}); err != nil {
			t.Fatal(err)
		}
		tb, err := direct.GetTable(e2eutil.Ctx(t), db, "w1")
		if err != nil {
			t.Fatal(err)
		}
		if tb.TableType != "EXTERNAL_TABLE" || tb.Parameters["EXTERNAL"] != "TRUE" || tb.Parameters["external.table.purge"] != "true" ||
			tb.Parameters["transactional"] != "" || tb.Parameters["transactional_properties"] != "" {
			t.Errorf("rewritten table as stored: %s %v", tb.TableType, tb.Parameters)
		}
	})
}

// extTable is an external table at loc; purge sets external.table.purge.
func extTable(db, name, loc string, purge bool) *thriftgen.Table {
	tb := e2eutil.Table(db, name)
	tb.Sd.Location = "file://" + loc
	if purge {
		tb.Parameters["external.table.purge"] = "true"
	}
	return tb
}

// dataDir makes a table directory with a file and a nested directory.
func dataDir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "p=1"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"part-0", "p=1/part-1"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// waitGone waits for a purge to delete dir.
func waitGone(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for exists(dir) {
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists 30 s after its table was dropped", dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The external table drop purge against a real Hive 3.1.3 metastore: it
// deletes exactly the allow-listed table directory (a symlink inside it is
// removed, not followed), nothing outside the allow-list, nothing of a
// table without external.table.purge=true or a drop without deleteData,
// and nothing when the drop itself fails; drop_table_req of a Hive 4 client
// (served by the adapter) is purged too.
func TestExternalTableDropPurgeThroughTheProxy(t *testing.T) {
	e2eutil.NeedHive(t)
	direct := proxytest.Client(t, e2eutil.HMS2.URI)
	tap := proxytest.NewTap(t, e2eutil.HMS2.URI)
	allowed, outside := t.TempDir(), t.TempDir()
	p := proxytest.Start(t, e2eutil.WithHive4Frontend(t, e2eutil.TwoCatalogs(
		"catalog.catalog2.conf.hive.metastore.uris="+tap.URI(),
		"federation.external-table-drop-purge.mode=BEST_EFFORT",
		"catalog.catalog2.conf.hms.proxy.external-table-drop-purge.allowed-prefixes=file://"+allowed)))
	c, c4 := proxytest.Client(t, p.URI("primary")), proxytest.Client(t, p.URI("hive4"))
	db := e2eutil.Uniq("pg")
	e2eutil.MkDB(t, direct, db)
	ext := "catalog2__" + db
	mk := func(name, loc string, purge bool) {
		t.Helper()
		dataDir(t, loc)
		if err := direct.CreateTable(e2eutil.Ctx(t), extTable(db, name, loc, purge)); err != nil {
			t.Fatal(err)
		}
	}
	metric := func(result string) float64 {
		return p.Metric(t, "hms_proxy_external_table_purge_total", "catalog", "catalog2", "result", result)
	}

	// Purged: the table's own directory, with a symlink to a file outside.
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	mk("p1", filepath.Join(allowed, "p1"), true)
	if err := os.Symlink(secret, filepath.Join(allowed, "p1", "link")); err != nil {
		t.Fatal(err)
	}
	mk("p2", filepath.Join(allowed, "p2"), false)   // no external.table.purge
	mk("p3", filepath.Join(outside, "p3"), true)    // outside the allow-list
	mk("p4", filepath.Join(allowed, "p4"), true)    // dropped without deleteData
	mk("p5", filepath.Join(allowed, "p5"), true)    // its first drop fails
	mk("p6", filepath.Join(allowed, "p6"), true)    // dropped by a Hive 4 client
	sibling := filepath.Join(allowed, "p1-sibling") // shares p1's name as a prefix
	if err := os.MkdirAll(sibling, 0o755); err != nil {
		t.Fatal(err)
	}

	if err := c.DropTable(e2eutil.Ctx(t), ext, "p1", true); err != nil {
		t.Fatal(err)
	}
	waitGone(t, filepath.Join(allowed, "p1"))
	if !exists(secret) || !exists(sibling) || !exists(allowed) {
		t.Fatalf("the purge of p1 removed more than p1's directory: secret %v, sibling %v, prefix %v", exists(secret), exists(sibling), exists(allowed))
	}
	for _, n := range []string{"p2", "p3"} {
		if err := c.DropTableWithEnvironmentContext(e2eutil.Ctx(t), ext, n, true, &thriftgen.EnvironmentContext{Properties: map[string]string{"ifPurge": "TRUE"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.DropTable(e2eutil.Ctx(t), ext, "p4", false); err != nil {
		t.Fatal(err)
	}

	// A drop that fails at the metastore's connection deletes nothing.
	tap.HangUpOn("drop_table")
	if err := c.DropTable(e2eutil.Ctx(t), ext, "p5", true); err == nil {
		t.Fatal("the drop through a connection that hangs up succeeded")
	}
	tap.HangUpOn()
	if _, err := direct.GetTable(e2eutil.Ctx(t), db, "p5"); err != nil {
		t.Fatalf("p5's metadata after its failed drop: %v", err)
	}
	var pre []string
	for _, call := range tap.Calls() {
		pre = append(pre, call.Method)
	}
	if err := c4.DropTableReq(e2eutil.Ctx(t), &thriftgen.DropTableRequest{DbName: ext, TableName: "p6", DeleteData: boolp(true)}); err != nil {
		t.Fatalf("drop_table_req: %v", err)
	}
	waitGone(t, filepath.Join(allowed, "p6"))
	// Every purge queued so far is done (one worker queue, p6 came last
	// but two workers run: wait for the counters to settle).
	time.Sleep(500 * time.Millisecond)
	for _, n := range []string{"p2", "p3", "p4", "p5"} {
		dir := filepath.Join(allowed, n)
		if n == "p3" {
			dir = filepath.Join(outside, n)
		}
		if !exists(filepath.Join(dir, "p=1", "part-1")) {
			t.Errorf("%s's data was deleted", n)
		}
	}
	if metric("deleted") != 2 || metric("not_allowed") != 1 || metric("failed") != 0 {
		t.Errorf("purge results: deleted %v, not_allowed %v, failed %v; want 2, 1, 0", metric("deleted"), metric("not_allowed"), metric("failed"))
	}
	if !e2eutil.Contains(pre, "get_table_req") {
		t.Errorf("the table was not read before the drop: %v", pre)
	}
	// The same drop, now answered: purged.
	if err := c.DropTable(e2eutil.Ctx(t), ext, "p5", true); err != nil {
		t.Fatal(err)
	}
	waitGone(t, filepath.Join(allowed, "p5"))
	if n := metric("deleted"); n != 3 {
		t.Errorf("deleted %v, want 3", n)
	}
}

func boolp(b bool) *bool { return &b }

// On a non-default catalog the pointer guard's repair takes its table lock
// from the lock shim, where Iceberg clients take theirs: while an Iceberg
// committer holds the EXCLUSIVE table lock, HiveServer2's alter waits; once
// the committer has moved the pointer and unlocked, the repair re-reads the
// record under its own lock and merges onto the committed pointer instead of
// putting back the one it read before (which would erase the commit).
func TestIcebergPointerGuardRepairWaitsForIcebergsLockOnANonDefaultCatalog(t *testing.T) {
	e2eutil.NeedHive(t)
	p := proxytest.Start(t, e2eutil.TwoCatalogs("synthetic-read-lock.store.mode=IN_MEMORY",
		"routing.iceberg-pointer-guard.lock-acquire-timeout-ms=30000"))
	c := proxytest.Client(t, p.URI("primary"))
	direct := proxytest.Client(t, e2eutil.HMS2.URI)
	db := e2eutil.Uniq("icelk")
	e2eutil.MkDB(t, direct, db)
	ext := "catalog2__" + db
	loc := "file://" + t.TempDir()
	first, next := loc+"/metadata/00001-a.metadata.json", loc+"/metadata/00002-b.metadata.json"
	if err := direct.CreateTable(e2eutil.Ctx(t), icebergRecord(db, "ev", loc, first)); err != nil {
		t.Fatal(err)
	}

	// The Iceberg committer (HiveTableOperations): EXCLUSIVE table lock, no
	// transaction.
	lk := e2eutil.Comp(thriftgen.LockType_EXCLUSIVE, thriftgen.DataOperationType_NO_TXN, ext, "ev")
	held := e2eutil.MustLockState(t, c, e2eutil.LockRequest(0, lk), thriftgen.LockState_ACQUIRED)

	hs2 := proxytest.Client(t, p.URI("primary"))
	done := make(chan error, 1)
	go func() {
		done <- hs2.AlterTableWithEnvironmentContext(e2eutil.Ctx(t), ext, "ev", hs2Insert(ext, "ev", loc), noStats())
	}()
	select {
	case err := <-done:
		t.Fatalf("HiveServer2's alter finished while the committer held the table lock: %v", err)
	case <-time.After(2 * time.Second):
	}
	commit := icebergRecord(ext, "ev", loc, next)
	commit.Parameters["previous_metadata_location"] = first
	if err := c.AlterTableWithEnvironmentContext(e2eutil.Ctx(t), ext, "ev", commit, noStats()); err != nil {
		t.Fatalf("the committer's alter under its lock: %v", err)
	}
	if err := c.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: held.Lockid}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("HiveServer2's alter after the unlock: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("HiveServer2's alter did not finish within 60 s of the unlock")
	}
	rec, err := readTable(t, direct, db, "ev")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Parameters["metadata_location"] != next || rec.Parameters["previous_metadata_location"] != first || rec.Parameters["last_insert_by"] != "hs2" {
		t.Fatalf("after the commit and the repaired alter: %v; want the committed pointer kept and HiveServer2's change applied", rec.Parameters)
	}
	if n := p.Metric(t, "hms_proxy_iceberg_pointer_guard_events_total", "catalog", "catalog2", "outcome", "repaired"); n != 1 {
		t.Errorf("repairs counted: %v, want 1", n)
	}
}
