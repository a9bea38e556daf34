package compat

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// The stock Hive 4.1 HiveMetaStoreClient, and Iceberg's Hive catalog on
// Hive 4.1 bindings, against Hive 3.1.3 catalogs through an APACHE_4_1_0
// listener: the 4.x-only fields these clients fill with their defaults are
// dropped (and counted) instead of refused, the calls a 3.1.3 metastore
// lacks are adapted, and the 3.1.3 backend never receives a field it does
// not know.

// fallbacks lists the hms_proxy_backend_fallback_total series (method
// from_api to_api = n) for the test log.
func fallbacksOf(t *testing.T, p *proxytest.Proxy) []string {
	t.Helper()
	families, err := p.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		if f.GetName() != "hms_proxy_backend_fallback_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, x := range m.GetLabel() {
				l[x.GetName()] = x.GetValue()
			}
			out = append(out, fmt.Sprintf("%s %s -> %s = %v", l["method"], l["from_api"], l["to_api"], m.GetCounter().GetValue()))
		}
	}
	return out
}

// The Hive 4.1 client's txn, stats, addparts and hs2 scenarios: first the
// reference runs of each release's client against its own metastore, then
// the Hive 4.1 client through the proxy to the 3.1.3 catalogs. Transactions
// carry no namespace (they live on the default catalog), so txn and hs2 use
// a default-catalog database; stats and addparts use catalog2.
func TestHive4ClientTransactionsStatisticsPartitionsOn313(t *testing.T) {
	e2eutil.NeedHive(t)
	scenarios := []struct{ name, prefix string }{{"txn", ""}, {"stats", "catalog2__"}, {"addparts", "catalog2__"}, {"hs2", ""}}
	for _, s := range scenarios {
		t.Run("reference/"+s.name, func(t *testing.T) {
			testbed.RunScenarioT(t, testbed.Hive410, e2eutil.HMS4.URI, s.name, "--db", e2eutil.Uniq("r4"+s.name))
			testbed.RunScenarioT(t, testbed.Hive313, e2eutil.HMS1.URI, s.name, "--db", e2eutil.Uniq("r3"+s.name))
		})
	}
	e := e2eutil.NewHive4Env(t)
	for _, s := range scenarios {
		t.Run("proxy/"+s.name, func(t *testing.T) {
			testbed.RunScenarioT(t, testbed.Hive410, e.P.URI("hive4"), s.name, "--db", s.prefix+e2eutil.Uniq("h4"+s.name))
		})
	}
	e2eutil.Only313(t, e.Tap1, e.Tap2)
	// The txn scenario's six open transactions in a row make Hive 4 write a
	// range (a-b) into validTxnList; 3.1.3 must get the single ids.
	ranges := 0
	for _, c := range e.Tap1.Calls() {
		if c.Method == "get_valid_write_ids" {
			if l := adAt(&c.Args, 1, 2).String(); strings.Contains(l, "-") {
				t.Errorf("the 3.1.3 backend got validTxnList %q with a range it cannot parse", l)
			} else if strings.Count(l, ",") >= 5 {
				ranges++
			}
		}
	}
	if ranges == 0 {
		t.Error("no get_valid_write_ids reached the backend with the six open transactions spelled out")
	}
	for _, l := range [][]string{
		{"from_api", "open_txns", "to_api", "dropped_default:OpenTxnRequest.txn_type"},
		{"from_api", "allocate_table_write_ids", "to_api", "dropped_default:AllocateTableWriteIdsRequest.reallocate"},
		{"from_api", "commit_txn", "to_api", "dropped_default:CommitTxnRequest.exclWriteEnabled"},
		{"method", "get_open_txns_req", "to_api", "get_open_txns"},
		{"method", "get_valid_write_ids", "to_api", "get_valid_write_ids"},
		{"from_api", "update_table_column_statistics", "to_api", "dropped_default:ColumnStatistics.engine"},
		{"method", "update_partition_column_statistics_req", "to_api", "update_partition_column_statistics"},
		{"from_api", "set_aggr_stats_for", "to_api", "dropped_default:SetPartitionsStatsRequest.engine"},
		{"method", "delete_column_statistics_req", "to_api", "dropped_default:DeleteColumnStatisticsRequest.engine"},
		{"from_api", "add_partitions_req", "to_api", "dropped_default:AddPartitionsRequest.skipColumnSchemaForPartition"},
		{"from_api", "lock", "to_api", "dropped_default:LockRequest.zeroWaitReadEnabled"},
		{"method", "alter_partitions_req", "to_api", "dropped_default:AlterPartitionsRequest.writeId"},
	} {
		e2eutil.Counted(t, e.P, l...)
	}
}

// HiveServer2 4.x's default lock request (hive.txn.xlock.write=false sends
// zeroWaitReadEnabled=true) asks 3.1.3 to fail a read lock instead of
// waiting, which it cannot: refused naming field, value and the setting
// that avoids it; nothing reaches the backend.
func TestHive4ZeroWaitWriteLockRefusedOn313(t *testing.T) {
	e2eutil.NeedHive(t)
	e := e2eutil.NewHive4Env(t)
	c := proxytest.Client(t, e.P.URI("hive4"))
	tru := true
	_, err := c.Lock(e2eutil.Ctx(t), &thriftgen.LockRequest{User: "hive", Hostname: "hs2", ZeroWaitReadEnabled: &tru,
		Component: []*thriftgen.LockComponent{{Type: thriftgen.LockType_EXCLUSIVE, Level: thriftgen.LockLevel_DB, Dbname: "default"}}})
	if err == nil || !strings.Contains(err.Error(), "LockRequest.zeroWaitReadEnabled = true") ||
		!strings.Contains(err.Error(), "hive.txn.xlock.write=true") {
		t.Fatalf("want a MetaException naming zeroWaitReadEnabled and the HiveServer2 setting, got %v", err)
	}
	if m := append(e.Tap1.Methods(), e.Tap2.Methods()...); len(m) != 0 {
		t.Fatalf("a refused lock reached a backend: %v", m)
	}
}

// Iceberg's own Hive catalog on Hive 4.1 bindings creates a table, commits
// twice and reads every row back, on the default catalog (3.1.3) through
// the proxy, as it does against a Hive 4.1 metastore and (on Hive 3.1.3
// bindings) against a 3.1.3 one.
func TestIcebergHiveCatalogOnDefault313Catalog(t *testing.T) {
	e2eutil.NeedHive(t)
	wh := t.TempDir()
	t.Run("reference", func(t *testing.T) {
		testbed.RunScenarioT(t, testbed.Hive410, e2eutil.HMS4.URI, "iceberg", "--db", e2eutil.Uniq("ice4"), "--warehouse", filepath.Join(wh, "r4"))
		// Avro files on the 3.1.3 build: its Hadoop 3.1.0 is older than Parquet 1.16 reads with.
		testbed.RunScenarioT(t, testbed.Hive313, e2eutil.HMS1.URI, "iceberg", "--db", e2eutil.Uniq("ice3"), "--warehouse", filepath.Join(wh, "r3"), "--format", "avro")
	})
	e := e2eutil.NewHive4Env(t)
	testbed.RunScenarioT(t, testbed.Hive410, e.P.URI("hive4"), "iceberg", "--db", e2eutil.Uniq("iceh4"), "--warehouse", filepath.Join(wh, "p4"))
	e2eutil.Only313(t, e.Tap1, e.Tap2)
	for _, f := range fallbacksOf(t, e.P) {
		t.Logf("fallback: %s", f)
	}
	// Iceberg's commits reach 3.1.3 as adapted wrappers.
	e2eutil.Counted(t, e.P, "method", "create_table_req", "to_api", "create_table_with_environment_context")
	e2eutil.Counted(t, e.P, "method", "alter_table_req", "to_api", "alter_table_with_environment_context")
	e2eutil.Counted(t, e.P, "method", "create_database_req", "to_api", "create_database")
}

// Rows of the adapter table (adapters_test.go) for the adapters added for
// Hive 4 clients on 3.1.3.
func hive4ClientAdapterRows() []e2eutil.AdapterRow {
	return []e2eutil.AdapterRow{
		{Name: "get_valid_write_ids without validTxnList", Method: "get_valid_write_ids", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			open, err := e.Direct1.OpenTxns(e2eutil.Ctx(t), &thriftgen.OpenTxnRequest{NumTxns: 1, User: "e2e", Hostname: "localhost"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Direct1.AbortTxns(e2eutil.Ctx(t), &thriftgen.AbortTxnsRequest{TxnIds: open.TxnIds}) })
			db := e2eutil.Uniq("vw")
			if _, err := e.Direct1.AllocateTableWriteIds(e2eutil.Ctx(t), &thriftgen.AllocateTableWriteIdsRequest{DbName: db, TableName: "t", TxnIds: open.TxnIds}); err != nil {
				t.Fatal(err)
			}
			res, err := e.C4.GetValidWriteIds(e2eutil.Ctx(t), &thriftgen.GetValidWriteIdsRequest{FullTableNames: []string{db + ".t"}})
			if err != nil || len(res.TblValidWriteIds) != 1 {
				t.Fatalf("get_valid_write_ids: %+v %v", res, err)
			}
			w := res.TblValidWriteIds[0]
			if w.WriteIdHighWaterMark != 1 || len(w.InvalidWriteIds) != 1 || w.InvalidWriteIds[0] != 1 {
				t.Fatalf("write id 1 of the open txn must be invalid: %+v", w)
			}
			calls := e.BackendSaw(t, e.Tap1, "get_valid_write_ids", "", "get_open_txns", "get_valid_write_ids")
			list := adAt(&calls[1].Args, 1, 2).String()
			if !strings.Contains(list, fmt.Sprint(open.TxnIds[0])) {
				t.Fatalf("the backend got validTxnList %q, which does not name the open txn %d", list, open.TxnIds[0])
			}
		}},
		{Name: "get_valid_write_ids with a Hive 4 range", Method: "get_valid_write_ids", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			res, err := e.C4.GetValidWriteIds(e2eutil.Ctx(t), &thriftgen.GetValidWriteIdsRequest{FullTableNames: []string{e2eutil.Uniq("vr") + ".t"},
				ValidTxnList: e2eutil.Strp("20:3:3-5:")})
			if err != nil || len(res.TblValidWriteIds) != 1 {
				t.Fatalf("get_valid_write_ids: %+v %v", res, err)
			}
			calls := e.BackendSaw(t, e.Tap1, "get_valid_write_ids", "", "get_valid_write_ids")
			if got := adAt(&calls[0].Args, 1, 2).String(); got != "20:3:3,4,5:" {
				t.Fatalf("the backend got validTxnList %q, want 20:3:3,4,5:", got)
			}
		}},
		{Name: "add_write_ids_to_min_history", Method: "add_write_ids_to_min_history", Run: func(t *testing.T, e *e2eutil.AdapterEnv) {
			if err := e.C4.AddWriteIdsToMinHistory(e2eutil.Ctx(t), 5, map[string]int64{e.Ext() + ".t": 1}); err != nil {
				t.Fatal(err)
			}
			e.NoBackendCall(t, "add_write_ids_to_min_history")
			e2eutil.Counted(t, e.P, "method", "add_write_ids_to_min_history", "to_api", "answered_by_proxy")
		}},
	}
}
