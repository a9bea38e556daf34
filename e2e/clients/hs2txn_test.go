package clients

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// hs2Txn is a HiveServer2 JDBC session with DbTxnManager, as HiveServer2 4
// runs SQL on ACID-enabled deployments (every statement in a transaction).
const hs2Txn = "hive.support.concurrency=true;hive.txn.manager=org.apache.hadoop.hive.ql.lockmgr.DbTxnManager"

// hs2Statements runs SQL statements through HiveServer2 over Hive JDBC 4.1.0
// (testdata/Hs2Steps.java), one connection with the session settings conf,
// and returns one answer per statement: "ok", "ok <rows>" or "error <message>".
func hs2Statements(t *testing.T, hs2 *testbed.HiveServer2, conf string, stmts ...string) []string {
	t.Helper()
	return e2eutil.RunJDBC(t, e2eutil.Testdata("Hs2Steps.java"), "", []string{hs2.JDBC + "?" + conf}, stmts...)
}

// answered asserts one answer of hs2Statements: want is "ok [rows]", or
// "error" followed by what the message must name.
func answered(t *testing.T, stmt, got string, want string, errorHas ...string) {
	t.Helper()
	if want == "error" {
		if !strings.HasPrefix(got, "error ") {
			t.Errorf("%s: want an error naming %q, got %q", stmt, errorHas, got)
			return
		}
		for _, h := range errorHas {
			if !strings.Contains(got, h) {
				t.Errorf("%s: the error does not name %q: %s", stmt, h, got)
			}
		}
		return
	}
	if got != want {
		t.Errorf("%s: got %q, want %q", stmt, got, want)
	}
}

// refusedWith asserts that the proxy logged a refusal with every fragment.
func refusedWith(t *testing.T, p *proxytest.Proxy, fragments ...string) {
	t.Helper()
	if len(p.LogLines(append([]string{"request refused"}, fragments...)...)) == 0 {
		t.Errorf("the proxy logged no refusal with %q: %q", fragments, p.LogLines("request refused"))
	}
}

// filesUnder lists the files under dir (relative paths), sorted.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !info.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// nothingLeftOpen asserts that no transaction opened since before is still
// open on the metastore at uri, and no lock on a database of dbs is held.
func nothingLeftOpen(t *testing.T, uri string, before map[int64]bool, dbs ...string) {
	t.Helper()
	for id := range openTxnIDs(t, uri) {
		if !before[id] {
			t.Errorf("transaction %d is still open on %s", id, uri)
		}
	}
	locks, err := proxytest.Client(t, uri).ShowLocks(e2eutil.Ctx(t), &thriftgen.ShowLocksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range locks.Locks {
		for _, db := range dbs {
			if strings.EqualFold(l.Dbname, db) {
				t.Errorf("lock %d on %s.%v is still held on %s", l.Lockid, l.Dbname, l.Tablename, uri)
			}
		}
	}
}

// writeLocks lists the lock components with more than a shared read that
// reached the backend through tap.
func writeLocks(tap *proxytest.Tap) []string {
	var out []string
	for _, c := range tap.Calls() {
		if c.Method != "lock" {
			continue
		}
		req := c.Args.Field(1)
		if req == nil || req.Field(1) == nil {
			continue
		}
		for _, comp := range req.Field(1).Elems {
			if typ := comp.Field(1); typ == nil || typ.Int != int64(thriftgen.LockType_SHARED_READ) {
				out = append(out, comp.Field(3).String()+"."+comp.Field(4).String())
			}
		}
	}
	return out
}

// called reports whether tap forwarded a call of method.
func called(tap *proxytest.Tap, method string) bool {
	for _, m := range tap.Methods() {
		if m == method {
			return true
		}
	}
	return false
}

// HiveServer2 4 with DbTxnManager through the APACHE_4_1_0 front door to a
// default catalog (Hive 3.1.3) whose access mode is READ_ONLY: a statement
// on a transactional table runs in a metastore transaction, so a SELECT
// opens one, locks (SHARED_READ), reads its snapshot and commits; an INSERT
// is refused when it asks for its write id, before anything is written,
// and HiveServer2 aborts its transaction. Under READ_WRITE_DB_WHITELIST the
// same holds for a database outside the whitelist, and an INSERT into a
// listed one commits. Checked on the backend: the refused tables' files are
// unchanged, no transaction or lock is left, no write reached it. The
// tables are made and filled first through a proxy without an access mode.
func TestHiveServer2TransactionsOnReadOnlyDefaultCatalog(t *testing.T) {
	e2eutil.NeedHive(t)
	ro, wl := e2eutil.Uniq("hs2ro"), e2eutil.Uniq("hs2wl")
	roDir, wlDir := filepath.Join(t.TempDir(), ro+".db"), filepath.Join(t.TempDir(), wl+".db")
	oneCatalog := func(uri string, extra ...string) map[string]string {
		p := map[string]string{"catalogs": "catalog1", "routing.default-catalog": "catalog1",
			"catalog.catalog1.conf.hive.metastore.uris": uri}
		for i := 0; i+1 < len(extra); i += 2 {
			p[extra[i]] = extra[i+1]
		}
		return e2eutil.WithHive4Frontend(t, p)
	}
	// DbTxnManager with exclusive write locks, as a Hive 4 deployment with
	// ACID tables on 3.1.3 catalogs is configured (README, HiveServer2 4).
	conf := hs2Txn + ";hive.txn.xlock.write=true"
	// run starts HiveServer2 on p, runs stmts and stops it once its
	// scheduled-query executor (which polls the metastore when it starts)
	// has been answered at least once; pollerLog is what HiveServer2 logged
	// from that executor at WARN or ERROR.
	var pollerLog []string
	run := func(t *testing.T, p *proxytest.Proxy, stmts ...string) []string {
		t.Helper()
		hs2 := testbed.StartHiveServer2T(t, testbed.HiveServer2Options{MetastoreURI: p.URI("hive4")})
		got := hs2Statements(t, hs2, conf, stmts...)
		for deadline := time.Now().Add(3 * time.Minute); p.Metric(t, "hms_proxy_backend_fallback_total", "method", "scheduled_query_poll") < 1 &&
			len(p.LogLines("method=scheduled_query_poll")) == 0; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("HiveServer2's scheduled-query executor did not poll within 3 minutes")
			}
		}
		if err := hs2.Stop(); err != nil {
			t.Error(err)
		}
		log, _ := os.ReadFile(filepath.Join(hs2.Dir, "hiveserver2.log"))
		pollerLog = nil
		for _, l := range strings.Split(string(log), "\n") {
			if strings.Contains(l, "[Scheduled Query Poller]") && (strings.Contains(l, " ERROR ") || strings.Contains(l, " WARN ")) {
				pollerLog = append(pollerLog, l)
			}
		}
		return got
	}
	// quietPoller: on a catalog that refuses writes, HiveServer2 4's
	// scheduled-query executor hears "nothing is due" (counted), not a
	// refusal it logs on every poll.
	quietPoller := func(t *testing.T, p *proxytest.Proxy) {
		t.Helper()
		if l := p.LogLines("request refused", "method=scheduled_query_poll"); len(l) > 0 {
			t.Errorf("scheduled_query_poll was refused: %q", l)
		}
		if n := p.Metric(t, "hms_proxy_backend_fallback_total", "method", "scheduled_query_poll", "to_api", "empty_access_mode"); n < 1 {
			t.Errorf("scheduled_query_poll was not answered \"nothing is due\" (counted %v)", n)
		}
		if len(pollerLog) > 0 {
			t.Errorf("HiveServer2's scheduled-query executor logged: %q", pollerLog)
		}
	}
	// The databases as a 3.1.3 client makes them (HiveServer2 4 would give
	// them a managed location, which 3.1.3 has not).
	direct := proxytest.Client(t, e2eutil.HMS1.URI)
	for db, dir := range map[string]string{ro: roDir, wl: wlDir} {
		if err := direct.CreateDatabase(e2eutil.Ctx(t), &thriftgen.Database{Name: db, LocationUri: "file://" + dir}); err != nil {
			t.Fatal(err)
		}
	}
	setup := []string{
		"CREATE TABLE " + ro + ".acid (id int, v string) STORED AS ORC TBLPROPERTIES ('transactional'='true')",
		"CREATE TABLE " + wl + ".acid (id int, v string) STORED AS ORC TBLPROPERTIES ('transactional'='true')",
		"INSERT INTO " + ro + ".acid VALUES (1, 'a'), (2, 'b')",
		"INSERT INTO " + wl + ".acid VALUES (1, 'a')",
	}
	for i, got := range run(t, proxytest.Start(t, oneCatalog(e2eutil.HMS1.URI)), setup...) {
		answered(t, setup[i], got, "ok")
	}
	t.Cleanup(func() {
		c := proxytest.Client(t, e2eutil.HMS1.URI)
		_ = c.DropDatabase(e2eutil.Ctx(t), ro, true, true)
		_ = c.DropDatabase(e2eutil.Ctx(t), wl, true, true)
	})
	if t.Failed() {
		t.FailNow()
	}
	roFiles := filesUnder(t, roDir)
	unchanged := func(t *testing.T) {
		t.Helper()
		if now := filesUnder(t, roDir); strings.Join(now, ",") != strings.Join(roFiles, ",") {
			t.Errorf("a refused INSERT wrote files: %v, before %v", now, roFiles)
		}
	}
	// noWrites: what reached the backend was reads and the transactions'
	// own lifecycle (a SHARED_READ lock, the commit of a reader, the abort
	// of the refused writer).
	noWrites := func(t *testing.T, tap *proxytest.Tap, allowedDB string) {
		t.Helper()
		for _, w := range writeLocks(tap) {
			if allowedDB == "" || !strings.HasPrefix(w, allowedDB+".") {
				t.Errorf("a write lock reached the metastore: %s", w)
			}
		}
		for _, c := range tap.Calls() {
			if c.Method == "allocate_table_write_ids" && (allowedDB == "" || c.Args.Field(1).Field(1).String() != allowedDB) {
				t.Errorf("allocate_table_write_ids for %s reached the metastore", c.Args.Field(1).Field(1).String())
			}
		}
		for _, m := range []string{"open_txns", "commit_txn", "abort_txn"} {
			if !called(tap, m) {
				t.Errorf("%s never reached the metastore: the SELECTs' transactions are committed, the refused INSERT's aborted (%v)", m, tap.Methods())
			}
		}
	}

	t.Run("READ_ONLY", func(t *testing.T) {
		tap := proxytest.NewTap(t, e2eutil.HMS1.URI)
		p := proxytest.Start(t, oneCatalog(tap.URI(), "catalog.catalog1.access-mode", "READ_ONLY"))
		before := openTxnIDs(t, e2eutil.HMS1.URI)
		stmts := []string{
			"SELECT id, v FROM " + ro + ".acid",
			"INSERT INTO " + ro + ".acid VALUES (3, 'c')",
			"SELECT id, v FROM " + ro + ".acid",
			"DROP TABLE " + ro + ".acid",
			"SELECT id, v FROM " + ro + ".acid",
		}
		got := run(t, p, stmts...)
		answered(t, stmts[0], got[0], "ok 1|a; 2|b")
		// HiveServer2 answers its own words ("Failed to allocate write Id");
		// the proxy's refusal is in its log
		answered(t, stmts[1], got[1], "error", "allocate write Id")
		refusedWith(t, p, "method=allocate_table_write_ids", "catalog catalog1 is READ_ONLY (catalog.catalog1.access-mode)")
		answered(t, stmts[2], got[2], "ok 1|a; 2|b")
		// DROP TABLE is refused at its exclusive lock: the user reads the
		// reason, not "Error communicating with the metastore"
		answered(t, stmts[3], got[3], "error", "aborted the transaction", "hms-proxy refused the lock", "catalog catalog1 is READ_ONLY")
		answered(t, stmts[4], got[4], "ok 1|a; 2|b")
		quietPoller(t, p)
		noWrites(t, tap, "")
		unchanged(t)
		nothingLeftOpen(t, e2eutil.HMS1.URI, before, ro, wl)
	})

	t.Run("READ_WRITE_DB_WHITELIST", func(t *testing.T) {
		tap := proxytest.NewTap(t, e2eutil.HMS1.URI)
		p := proxytest.Start(t, oneCatalog(tap.URI(), "catalog.catalog1.access-mode", "READ_WRITE_DB_WHITELIST",
			"catalog.catalog1.write-db-whitelist", wl))
		before := openTxnIDs(t, e2eutil.HMS1.URI)
		stmts := []string{
			"SELECT id, v FROM " + ro + ".acid",
			"INSERT INTO " + ro + ".acid VALUES (3, 'c')",
			"INSERT INTO " + wl + ".acid VALUES (2, 'b')",
			"SELECT id, v FROM " + wl + ".acid",
			"SELECT id, v FROM " + ro + ".acid",
		}
		got := run(t, p, stmts...)
		answered(t, stmts[0], got[0], "ok 1|a; 2|b")
		answered(t, stmts[1], got[1], "error", "allocate write Id")
		refusedWith(t, p, "method=allocate_table_write_ids", "catalog.catalog1.write-db-whitelist; database "+ro+" is not listed")
		answered(t, stmts[2], got[2], "ok")
		answered(t, stmts[3], got[3], "ok 1|a; 2|b")
		answered(t, stmts[4], got[4], "ok 1|a; 2|b")
		noWrites(t, tap, wl)
		quietPoller(t, p)
		unchanged(t)
		nothingLeftOpen(t, e2eutil.HMS1.URI, before, ro, wl)
	})
}
