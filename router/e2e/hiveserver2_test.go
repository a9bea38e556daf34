package e2e

import (
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/router/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// HiveServer2 4.x itself (testbed.HiveServer2: Hive 4.1.0's engine and
// metastore client, local MapReduce) runs a user's SQL session over Hive
// JDBC 4.1.0 (the hs2sql driver scenario): directly against a Hive 4.1.0
// metastore, then through hms-proxy's APACHE_4_1_0 front door to Hive 3.1.3
// catalogs (the operator who upgrades HiveServer2 before the metastores) and
// to a Hive 4.1.0 catalog. Every statement answers as it does directly, or
// fails before it changes anything — the read after it shows nothing
// changed — for a reason listed below; no transaction or lock is left on a
// backend.

// hs2Deviation is how a step may differ from the direct run on a backend
// runtime, and why.
type hs2Deviation struct {
	errorHas []string // the step fails, its message naming these
	detail   string   // the step answers this instead (a read showing that nothing changed)
	why      string
}

// hs2On313 are the differences on Hive 3.1.3 catalogs, each a statement
// refused before it wrote anything and the reads that show it.
var hs2On313 = map[string]hs2Deviation{
	// HiveServer2's default locks ask 3.1.3 to fail a read lock instead of
	// waiting (LockRequest.zeroWaitReadEnabled), refused before the INSERT
	// runs; HiveServer2 reports it as a lock failure. hive.txn.xlock.write=true
	// (the ACID session below) avoids it.
	"default locks INSERT":              {errorHas: []string{"acquiring locks"}, why: "LockRequest.zeroWaitReadEnabled refused"},
	"SELECT after default locks INSERT": {detail: "0", why: "the refused INSERT wrote nothing"},
	// HiveServer2 finds the partitions to drop by a serialized Hive 4
	// expression that 3.1.3 cannot read (get_partitions_spec_by_expr).
	"DROP PARTITION":              {errorHas: []string{"get_partitions_spec_by_expr", "catalog1", "APACHE_3_1_3"}, why: "no safe mapping"},
	"SHOW PARTITIONS after drop":  {detail: "ds=2024-01-01; ds=2024-01-02; ds=2024-01-03", why: "the refused DROP PARTITION dropped nothing"},
	"SELECT after DROP PARTITION": {detail: "1|2024-01-01; 2|2024-01-02; 3|2024-01-02", why: "the refused DROP PARTITION dropped nothing"},
}

func TestHiveServer2FourSQLOnHive313AndHive410(t *testing.T) {
	needHive(t)
	direct := runHS2(t, "direct to Hive 4.1.0", hms4.URI, hms4, uniq("hs2d"))

	p3 := proxytest.Start(t, withHive4Frontend(t, twoCatalogs()))
	before := openTxnIDs(t, hms1.URI)
	via313 := runHS2(t, "proxy to Hive 3.1.3 catalogs", p3.URI("hive4"), hms1, uniq("hs2p"))
	p4 := proxytest.Start(t, withHive4Frontend(t, map[string]string{
		"catalogs": "catalog1", "routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": hms4.URI, "catalog.catalog1.runtime-profile": "APACHE_4_1_0"}))
	before4 := openTxnIDs(t, hms4.URI)
	via410 := runHS2(t, "proxy to a Hive 4.1.0 catalog", p4.URI("hive4"), hms4, uniq("hs2q"))

	if n := passed(direct); n != len(direct) {
		t.Fatalf("directly to Hive 4.1.0 only %d of %d statements passed (the reference run must pass whole)", n, len(direct))
	}
	compareHS2(t, "Hive 3.1.3 catalogs", direct, via313, hs2On313)
	compareHS2(t, "a Hive 4.1.0 catalog", direct, via410, nil)
	t.Logf("HiveServer2 4.x SQL scenario: direct to Hive 4.1.0 %d/%d; through hms-proxy to Hive 3.1.3 catalogs %d/%d (%d refused before writing, as listed); to a Hive 4.1.0 catalog %d/%d",
		passed(direct), len(direct), passed(via313), len(via313), len(via313)-passed(via313), passed(via410), len(via410))

	// Nothing left open on the backends: the scenario's transactions are
	// committed or aborted, its locks released.
	for _, b := range []struct {
		uri    string
		before map[int64]bool
	}{{hms1.URI, before}, {hms4.URI, before4}} {
		for id := range openTxnIDs(t, b.uri) {
			if !b.before[id] {
				t.Errorf("transaction %d is still open on %s after the scenario", id, b.uri)
			}
		}
	}
	for _, uri := range []string{hms1.URI, hms4.URI} {
		locks, err := proxytest.Client(t, uri).ShowLocks(ctx(t), &thriftgen.ShowLocksRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range locks.Locks {
			if strings.HasPrefix(l.Dbname, "hs2") {
				t.Errorf("lock %d on %s.%v is still held on %s after the scenario", l.Lockid, l.Dbname, l.Tablename, uri)
			}
		}
	}
	// Through the one-catalog 4.1.0 deployment, the namespace-less writes
	// HiveServer2 makes are forwarded, not refused.
	if n := p4.Metric(t, "hms_proxy_requests_total", "method", "add_runtime_stats", "status", "error"); n > 0 {
		t.Errorf("add_runtime_stats failed %v times in a one-catalog deployment", n)
	}
}

// runHS2 starts HiveServer2 on uri (sharing ms's warehouse) and runs the
// scenario in database db.
func runHS2(t *testing.T, name, uri string, ms *testbed.Metastore, db string) []testbed.Step {
	t.Helper()
	o := testbed.HiveServer2Options{MetastoreURI: uri, Warehouse: ms.Dir + "/warehouse"}
	if ms.Version == testbed.Hive410 {
		o.ExternalWarehouse = ms.Dir + "/external"
	}
	hs2 := testbed.StartHiveServer2T(t, o)
	steps, err := testbed.RunScenario(testbed.Hive410, uri, "hs2sql", "--jdbc", hs2.JDBC, "--db", db)
	for _, s := range steps {
		t.Logf("[%s] %s", name, s)
	}
	if err != nil && len(steps) == 0 {
		t.Fatalf("%s: %v", name, err)
	}
	if err := hs2.Stop(); err != nil {
		t.Error(err)
	}
	return steps
}

func passed(steps []testbed.Step) int {
	n := 0
	for _, s := range steps {
		if s.OK {
			n++
		}
	}
	return n
}

// compareHS2 holds a run to the direct one, step by step.
func compareHS2(t *testing.T, target string, direct, got []testbed.Step, dev map[string]hs2Deviation) {
	t.Helper()
	if len(got) != len(direct) {
		t.Errorf("on %s the scenario ran %d steps, directly %d", target, len(got), len(direct))
		return
	}
	for i, d := range direct {
		g := got[i]
		if g.Step != d.Step {
			t.Errorf("on %s step %d is %q, directly %q", target, i, g.Step, d.Step)
			continue
		}
		x, listed := dev[d.Step]
		switch {
		case listed && len(x.errorHas) > 0:
			if g.OK {
				t.Errorf("on %s %q passed, but is listed as refused (%s): update the list", target, d.Step, x.why)
				continue
			}
			for _, f := range x.errorHas {
				if !strings.Contains(g.Error, f) {
					t.Errorf("on %s %q failed with %q, which does not name %q (%s)", target, d.Step, g.Error, f, x.why)
				}
			}
		case listed:
			if !g.OK || g.Detail != x.detail {
				t.Errorf("on %s %q answered %q (error %q), want %q (%s)", target, d.Step, g.Detail, g.Error, x.detail, x.why)
			}
		case !g.OK:
			t.Errorf("on %s %q failed: %s (directly it answered %q)", target, d.Step, g.Error, d.Detail)
		case g.Detail != d.Detail:
			t.Errorf("on %s %q answered %q, directly %q", target, d.Step, g.Detail, d.Detail)
		}
	}
}

// openTxnIDs are the transactions open on a metastore.
func openTxnIDs(t *testing.T, uri string) map[int64]bool {
	t.Helper()
	info, err := proxytest.Client(t, uri).GetOpenTxnsInfo(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]bool{}
	for _, x := range info.OpenTxns {
		if x.State == thriftgen.TxnState_OPEN {
			out[x.Id] = true
		}
	}
	return out
}
