package clients

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
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
	// HiveServer2 finds the partitions to drop by a serialized Hive 4
	// expression that 3.1.3 cannot read (get_partitions_spec_by_expr).
	"DROP PARTITION":              {errorHas: []string{"get_partitions_spec_by_expr", "catalog1", "APACHE_3_1_3"}, why: "no safe mapping"},
	"SHOW PARTITIONS after drop":  {detail: "ds=2024-01-01; ds=2024-01-02; ds=2024-01-03", why: "the refused DROP PARTITION dropped nothing"},
	"SELECT after DROP PARTITION": {detail: "1|2024-01-01; 2|2024-01-02; 3|2024-01-02", why: "the refused DROP PARTITION dropped nothing"},
	// Under an exclusive write lock HiveServer2 asks which transaction last
	// wrote what it is about to change (get_latest_txnid_in_conflict), which
	// no 3.1.3 call can answer: UPDATE and DELETE fail while taking their
	// locks, with the MetaException saying why, before they write.
	"UPDATE ACID": {errorHas: []string{"get_latest_txnid_in_conflict", "catalog1", "APACHE_3_1_3", "committed write set"}, why: "no 3.1.3 call reads the write set"},
	"DELETE ACID": {errorHas: []string{"get_latest_txnid_in_conflict", "catalog1", "APACHE_3_1_3", "committed write set"}, why: "no 3.1.3 call reads the write set"},
	// The full ACID INSERT's rows, which the refused UPDATE and DELETE left
	// as they were.
	"SELECT ACID": {detail: "1|a; 2|b", why: "the refused UPDATE and DELETE changed nothing"},
}

// hs2Reference are the answers of the scenario's reads and listings directly
// on Hive 4.1.0, written down: the direct run must give them before the
// others are compared with it. A test bed in which HiveServer2 itself reads
// wrong then fails here, instead of two runs agreeing on a wrong answer. (It
// happened: with the cache under a checkout's .cache, every transactional
// table read back empty in all three runs, because Hive's ACID reader leaves
// out data under any path with a component that starts with "." or "_"; the
// test bed keeps its run directories elsewhere since, see
// testbed.runRootFor.)
var hs2Reference = map[string]string{
	"SELECT managed":                    "1|a; 2|b; 3|c",
	"COUNT managed from statistics":     "3",
	"COUNT external":                    "2",
	"SELECT partition":                  "2|p2|2024-01-02; 3|p3|2024-01-02",
	"COUNT partitioned from statistics": "3",
	"SELECT ctas":                       "2|b; 3|c",
	"SELECT after DROP PARTITION":       "2|2024-01-02; 3|2024-01-02",
	"SELECT view":                       "1; 2",
	"JOIN":                              "2|b; 3|c",
	"SELECT after default locks INSERT": "9|z",
	"DbTxnManager SELECT":               "1|a|NULL; 2|b|NULL; 3|c|NULL; 4|d|e; 9|z|z",
	"SELECT insert-only":                "1; 2",
	"SELECT ACID":                       "1|c",
	// and the metadata HiveServer2 lists
	"SHOW DATABASES LIKE":        "$DB",
	"SHOW TABLES":                "ext; managed; part",
	"SHOW PARTITIONS":            "ds=2024-01-01; ds=2024-01-02",
	"DESCRIBE":                   "extra|string|; id|int|; name|string|",
	"SHOW PARTITIONS after drop": "ds=2024-01-02; ds=2024-01-03",
	"SHOW TABLES again":          "ctas; ext; managed; part; v",
	"SHOW TABLES after drops":    "(no rows)",
	"SHOW DATABASES after drop":  "(no rows)",
}

func TestHiveServer2FourSQLOnHive313AndHive410(t *testing.T) {
	e2eutil.NeedHive(t)
	direct := runHS2(t, "direct to Hive 4.1.0", e2eutil.HMS4.URI, e2eutil.HMS4, e2eutil.Uniq("hs2d"))

	p3 := proxytest.Start(t, e2eutil.WithHive4Frontend(t, e2eutil.TwoCatalogs()))
	before := openTxnIDs(t, e2eutil.HMS1.URI)
	via313 := runHS2(t, "proxy to Hive 3.1.3 catalogs", p3.URI("hive4"), e2eutil.HMS1, e2eutil.Uniq("hs2p"))
	p4 := proxytest.Start(t, e2eutil.WithHive4Frontend(t, map[string]string{
		"catalogs": "catalog1", "routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": e2eutil.HMS4.URI, "catalog.catalog1.runtime-profile": "APACHE_4_1_0"}))
	before4 := openTxnIDs(t, e2eutil.HMS4.URI)
	via410 := runHS2(t, "proxy to a Hive 4.1.0 catalog", p4.URI("hive4"), e2eutil.HMS4, e2eutil.Uniq("hs2q"))

	if n := passed(direct.steps); n != len(direct.steps) {
		direct.explain(t)
		t.Fatalf("directly to Hive 4.1.0 only %d of %d statements passed (the reference run must pass whole)", n, len(direct.steps))
	}
	checkReference(t, direct)
	compareHS2(t, "Hive 3.1.3 catalogs", direct, via313, hs2On313)
	compareHS2(t, "a Hive 4.1.0 catalog", direct, via410, nil)
	t.Logf("HiveServer2 4.x SQL scenario: direct to Hive 4.1.0 %d/%d; through hms-proxy to Hive 3.1.3 catalogs %d/%d (%d refused before writing, as listed); to a Hive 4.1.0 catalog %d/%d",
		passed(direct.steps), len(direct.steps), passed(via313.steps), len(via313.steps), len(via313.steps)-passed(via313.steps),
		passed(via410.steps), len(via410.steps))

	// Nothing left open on the backends: the scenario's transactions are
	// committed or aborted, its locks released.
	for _, b := range []struct {
		uri    string
		before map[int64]bool
	}{{e2eutil.HMS1.URI, before}, {e2eutil.HMS4.URI, before4}} {
		for id, x := range openTxns(t, b.uri) {
			if !b.before[id] {
				agent := ""
				if x.AgentInfo != nil {
					agent = *x.AgentInfo
				}
				t.Errorf("transaction %d is still open on %s after the scenario (user %s, host %s, agent %q)",
					id, b.uri, x.User, x.Hostname, agent)
			}
		}
	}
	for _, uri := range []string{e2eutil.HMS1.URI, e2eutil.HMS4.URI} {
		locks, err := proxytest.Client(t, uri).ShowLocks(e2eutil.Ctx(t), &thriftgen.ShowLocksRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range locks.Locks {
			if strings.HasPrefix(l.Dbname, "hs2") {
				t.Errorf("lock %d on %s.%v is still held on %s after the scenario", l.Lockid, l.Dbname, l.Tablename, uri)
			}
		}
	}
}

// Scheduled queries and runtime statistics, which HiveServer2 4.x's
// services use, on Hive 3.1.3 catalogs: a 3.1.3 runtime has no scheduled
// queries, which the proxy says instead of "Invalid method name";
// add_runtime_stats, which names no namespace, goes to the catalog of a
// one-catalog deployment and is refused, naming the catalogs, in a
// two-catalog one.
func TestScheduledQueryReadsOnHive313(t *testing.T) {
	e2eutil.NeedHive(t)
	tap := proxytest.NewTap(t, e2eutil.HMS1.URI)
	one := proxytest.Start(t, e2eutil.WithHive4Frontend(t, map[string]string{"catalogs": "catalog1", "routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": tap.URI()}))
	c := proxytest.Client(t, one.URI("hive4"))
	_, err := c.GetScheduledQuery(e2eutil.Ctx(t), &thriftgen.ScheduledQueryKey{ScheduleName: "nightly", ClusterNamespace: "hive"})
	var nso *thriftgen.NoSuchObjectException
	if !errors.As(err, &nso) || !strings.Contains(nso.Message, "nightly") || !strings.Contains(nso.Message, "APACHE_3_1_3 has no scheduled queries") {
		t.Fatalf("get_scheduled_query on a 3.1.3 catalog: want NoSuchObjectException saying it has no scheduled queries, got %v", err)
	}
	poll, err := c.ScheduledQueryPoll(e2eutil.Ctx(t), &thriftgen.ScheduledQueryPollRequest{ClusterNamespace: "hive"})
	if err != nil || poll.ScheduleKey != nil || poll.Query != nil {
		t.Fatalf("scheduled_query_poll on a 3.1.3 catalog: want an empty answer (nothing is due), got %+v %v", poll, err)
	}
	tru := true
	err = c.ScheduledQueryMaintenance(e2eutil.Ctx(t), &thriftgen.ScheduledQueryMaintenanceRequest{Type: thriftgen.ScheduledQueryMaintenanceRequestType_CREATE,
		ScheduledQuery: &thriftgen.ScheduledQuery{ScheduleKey: &thriftgen.ScheduledQueryKey{ScheduleName: "nightly", ClusterNamespace: "hive"}, Enabled: &tru}})
	e2eutil.AppErr(t, err, thrift.UNKNOWN_METHOD, "scheduled_query_maintenance", "catalog1", "APACHE_3_1_3")
	for _, m := range tap.Methods() {
		if strings.Contains(m, "scheduled") {
			t.Fatalf("a scheduled-query call reached the 3.1.3 backend: %v", tap.Methods())
		}
	}
	// add_runtime_stats: forwarded in one catalog, where the backend keeps it
	payload := []byte(e2eutil.Uniq("runtime-stat"))
	if err := c.AddRuntimeStats(e2eutil.Ctx(t), &thriftgen.RuntimeStat{Weight: 1, Payload: payload}); err != nil {
		t.Fatalf("add_runtime_stats in a one-catalog deployment must be forwarded: %v", err)
	}
	stats, err := proxytest.Client(t, e2eutil.HMS1.URI).GetRuntimeStats(e2eutil.Ctx(t), &thriftgen.GetRuntimeStatsRequest{MaxWeight: 1 << 20, MaxCreateTime: -1})
	found := false
	for _, s := range stats {
		found = found || string(s.Payload) == string(payload)
	}
	if err != nil || !found {
		t.Fatalf("the runtime statistics did not reach the backend: %d read, %v", len(stats), err)
	}
	two := proxytest.Start(t, e2eutil.WithHive4Frontend(t, e2eutil.TwoCatalogs()))
	err = proxytest.Client(t, two.URI("hive4")).AddRuntimeStats(e2eutil.Ctx(t), &thriftgen.RuntimeStat{Weight: 1, Payload: payload})
	e2eutil.MetaErr(t, err, "add_runtime_stats is a namespace-less write", "names no catalog or database", "2 catalogs (catalog1, catalog2)")
}

// hs2Run is one run of the scenario: its steps and the HiveServer2 that
// served them (stopped; its directory is kept while the test runs).
type hs2Run struct {
	name  string
	steps []testbed.Step
	hs2   *testbed.HiveServer2
}

// explain logs what HiveServer2 did with the run's statements: their
// transactions, write ids, the write-id snapshots of reads and the files
// they read, so that a run that answered differently says why in the test
// log itself.
func (r hs2Run) explain(t *testing.T) {
	t.Helper()
	t.Logf("[%s] HiveServer2's statements, transactions and reads (from %s/hiveserver2.log):\n%s", r.name, r.hs2.Dir, r.hs2.Transcript(400))
}

// runHS2 starts HiveServer2 on uri (sharing ms's warehouse) and runs the
// scenario in database db.
func runHS2(t *testing.T, name, uri string, ms *testbed.Metastore, db string) hs2Run {
	t.Helper()
	o := testbed.HiveServer2Options{MetastoreURI: uri}
	if ms.Version == testbed.Hive410 {
		o.ExternalWarehouse = ms.Dir + "/external"
	}
	hs2 := testbed.StartHiveServer2T(t, o)
	t.Logf("[%s] HiveServer2 in %s (kept when the test fails)", name, hs2.Dir)
	args := []string{"--jdbc", hs2.JDBC, "--db", db}
	if ms.Version == testbed.Hive313 {
		// A database a 3.1.3 metastore creates has no managed location:
		// HiveServer2 places a CTAS target under its own warehouse root, so
		// the database is made there (testbed.HiveServer2Options).
		args = append(args, "--db-location", filepath.Join(hs2.Dir, "warehouse", db+".db"))
	}
	steps, err := testbed.RunScenario(testbed.Hive410, uri, "hs2sql", args...)
	for _, s := range steps {
		t.Logf("[%s] %s", name, s)
	}
	if err != nil && len(steps) == 0 {
		t.Fatalf("%s: %v", name, err)
	}
	if err != nil {
		// failed steps are compared below; a driver that died or timed out
		// says so here
		t.Logf("[%s] %v", name, err)
	}
	if err := hs2.Stop(); err != nil {
		t.Error(err)
	}
	return hs2Run{name: name, steps: steps, hs2: hs2}
}

// checkReference holds the direct run to hs2Reference: every read listed
// there ran and answered as written.
func checkReference(t *testing.T, direct hs2Run) {
	t.Helper()
	seen := map[string]bool{}
	var wrong []string
	logOf := statementLogs(direct)
	for i, s := range direct.steps {
		want, ok := hs2Reference[s.Step]
		if !ok {
			continue
		}
		seen[s.Step] = true
		if s.Detail != want {
			wrong = append(wrong, fmt.Sprintf("%q answered %q, want %q\n%s", s.Step, s.Detail, want, logOf(i)))
		}
	}
	for step := range hs2Reference {
		if !seen[step] {
			wrong = append(wrong, fmt.Sprintf("%q did not run", step))
		}
	}
	if len(wrong) > 0 {
		direct.explain(t)
		t.Fatalf("directly to Hive 4.1.0 the reference run read wrong, so the test bed is broken, not the proxy:\n%s", strings.Join(wrong, "\n"))
	}
}

// statementLogs gives what HiveServer2 logged of a run's i-th statement
// (testbed.HiveServer2.StatementTranscripts), indented; the scenario runs
// one statement per step.
func statementLogs(r hs2Run) func(i int) string {
	parts, err := r.hs2.StatementTranscripts()
	return func(i int) string {
		switch {
		case err != nil:
			return "    " + err.Error()
		case len(parts) != len(r.steps):
			return fmt.Sprintf("    (HiveServer2 logged %d statements for %d steps: see the whole transcript above)", len(parts), len(r.steps))
		}
		return "    " + strings.ReplaceAll(parts[i], "\n", "\n    ")
	}
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

// compareHS2 holds a run to the direct one, step by step. A run that
// differs is explained from HiveServer2's logs (its own and the direct
// run's), and the differences are reported after that, as the last lines.
func compareHS2(t *testing.T, target string, directRun, run hs2Run, dev map[string]hs2Deviation) {
	t.Helper()
	direct, got := directRun.steps, run.steps
	var diffs []string
	errorf := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	// A step that differs carries what HiveServer2 logged of its statement
	// in both runs, so the message alone says why (a CI log may keep only
	// the last lines of a test's output).
	ownLog, directLog := statementLogs(run), statementLogs(directRun)
	differs := func(i int, format string, args ...any) {
		errorf("%s\n  [%s] HiveServer2 on this statement:\n%s\n  [%s] HiveServer2 on this statement:\n%s",
			fmt.Sprintf(format, args...), run.name, ownLog(i), directRun.name, directLog(i))
	}
	defer func() {
		if len(diffs) > 0 {
			directRun.explain(t)
			run.explain(t)
		}
		for _, d := range diffs {
			t.Error(d)
		}
	}()
	if len(got) != len(direct) {
		errorf("on %s the scenario ran %d steps, directly %d", target, len(got), len(direct))
		return
	}
	for i, d := range direct {
		g := got[i]
		if g.Step != d.Step {
			errorf("on %s step %d is %q, directly %q", target, i, g.Step, d.Step)
			continue
		}
		x, listed := dev[d.Step]
		switch {
		case listed && len(x.errorHas) > 0:
			if g.OK {
				differs(i, "on %s %q passed, but is listed as refused (%s): update the list", target, d.Step, x.why)
				continue
			}
			for _, f := range x.errorHas {
				if !strings.Contains(g.Error, f) {
					differs(i, "on %s %q failed with %q, which does not name %q (%s)", target, d.Step, g.Error, f, x.why)
				}
			}
		case listed:
			if !g.OK || g.Detail != x.detail {
				differs(i, "on %s %q answered %q (error %q), want %q (%s)", target, d.Step, g.Detail, g.Error, x.detail, x.why)
			}
		case !g.OK:
			differs(i, "on %s %q failed: %s (directly it answered %q)", target, d.Step, g.Error, d.Detail)
		case g.Detail != d.Detail:
			differs(i, "on %s %q answered %q, directly %q", target, d.Step, g.Detail, d.Detail)
		}
	}
}

// openTxnIDs are the transactions open on a metastore.
func openTxnIDs(t *testing.T, uri string) map[int64]bool {
	t.Helper()
	out := map[int64]bool{}
	for id := range openTxns(t, uri) {
		out[id] = true
	}
	return out
}

// openTxns are the transactions open on a metastore, by id.
func openTxns(t *testing.T, uri string) map[int64]*thriftgen.TxnInfo {
	t.Helper()
	info, err := proxytest.Client(t, uri).GetOpenTxnsInfo(e2eutil.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]*thriftgen.TxnInfo{}
	for _, x := range info.OpenTxns {
		if x.State == thriftgen.TxnState_OPEN {
			out[x.Id] = x
		}
	}
	return out
}

// The stock Hive 4.1.0 client's own builders (DatabaseBuilder always sets
// createTime, 0 when not given, and the database type NATIVE) create a
// database, a partitioned table and a partition on 3.1.3 catalogs through
// the proxy as they do on a Hive 4.1.0 metastore; the 3.1.3 backend never
// receives a field it does not know.
func TestHive4DatabaseBuilderOn313(t *testing.T) {
	e2eutil.NeedHive(t)
	testbed.RunScenarioT(t, testbed.Hive410, e2eutil.HMS4.URI, "builder", "--db", e2eutil.Uniq("b4"))
	e := e2eutil.NewHive4Env(t)
	testbed.RunScenarioT(t, testbed.Hive410, e.P.URI("hive4"), "builder", "--db", e2eutil.Uniq("bp"))
	testbed.RunScenarioT(t, testbed.Hive410, e.P.URI("hive4"), "builder", "--db", "catalog2__"+e2eutil.Uniq("bq"))
	e2eutil.Only313(t, e.Tap1, e.Tap2)
	e2eutil.Counted(t, e.P, "method", "create_database_req", "to_api", "dropped_default:CreateDatabaseRequest.createTime")
}
