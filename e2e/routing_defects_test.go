package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/locks"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Issue 10, part A: defects found with real clients, each against real
// Hive 3.1.3 metastores.

// auditOf returns the audit records of method, waiting (bounded) for the
// writer to have written one.
func auditOf(t *testing.T, p *proxytest.Proxy, method string) []map[string]any {
	t.Helper()
	var out []map[string]any
	deadline := time.Now().Add(time.Minute)
	for {
		out = out[:0]
		b, err := os.ReadFile(p.AuditFile)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["method"] == method {
				out = append(out, rec)
			}
		}
		if len(out) > 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A2: a valid-write-ids request or exchange over a prefixed and an
// unprefixed name is refused (it used to run in the prefixed catalog alone); a
// lock is split by catalog instead (issue 11), its catalog2 part held by the
// synthetic lock shim.
func TestDefectMixedNamesAreRefusedNotGuessed(t *testing.T) {
	needHive(t)
	tap := proxytest.NewTap(t, hms2.URI)
	p := proxytest.Start(t, twoCatalogs("catalog.catalog2.conf.hive.metastore.uris="+tap.URI()))
	c := proxytest.Client(t, p.URI("primary"))
	lock, err := c.Lock(ctx(t), &thriftgen.LockRequest{User: "u", Hostname: "h", Component: []*thriftgen.LockComponent{
		{Type: thriftgen.LockType_SHARED_READ, Level: thriftgen.LockLevel_TABLE, Dbname: "default", Tablename: strp("orders")},
		{Type: thriftgen.LockType_SHARED_READ, Level: thriftgen.LockLevel_TABLE, Dbname: "catalog2__default", Tablename: strp("x")},
	}})
	if err != nil || lock.State != thriftgen.LockState_ACQUIRED || !locks.IsShimLockID(lock.Lockid) {
		t.Fatalf("a lock over catalog1 and catalog2: want one granted shim lock, got %+v %v", lock, err)
	}
	if err := c.Unlock(ctx(t), &thriftgen.UnlockRequest{Lockid: lock.Lockid}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetValidWriteIds(ctx(t), &thriftgen.GetValidWriteIdsRequest{
		FullTableNames: []string{"default.orders", "catalog2__default.x"}, ValidTxnList: strp("1:1::")})
	metaErr(t, err, "ambiguous")
	_, err = c.ExchangePartition(ctx(t), map[string]string{"p": "1"}, "default", "t", "catalog2__default", "t")
	metaErr(t, err, "ambiguous")
	if got := tap.Methods(); len(got) != 0 {
		t.Fatalf("refused calls reached catalog2: %v", got)
	}
	if n := p.Metric(t, "hms_proxy_routing_ambiguous_total"); n != 2 {
		t.Fatalf("hms_proxy_routing_ambiguous_total = %v, want 2", n)
	}
}

// A3: a rename that would move a table between catalogs answers
// InvalidOperationException naming both (it used to succeed and do nothing);
// a rename across databases of one catalog works.
func TestDefectRenamesAcrossCatalogsAreRefused(t *testing.T) {
	needHive(t)
	p := proxytest.Start(t, twoCatalogs())
	c := proxytest.Client(t, p.URI("primary"))
	direct2 := proxytest.Client(t, hms2.URI)
	db, other := uniq("ren"), uniq("ren2")
	mkDB(t, direct2, db)
	mkDB(t, direct2, other)
	mkTable(t, direct2, db, "t")
	err := c.AlterTable(ctx(t), "catalog2__"+db, "t", table(db, "t"))
	var io *thriftgen.InvalidOperationException
	if !errors.As(err, &io) || !strings.Contains(io.Message, "catalog2") || !strings.Contains(io.Message, "catalog1") {
		t.Fatalf("a move from catalog2 to catalog1: want InvalidOperationException naming both, got %v", err)
	}
	moved, err := c.GetTable(ctx(t), "catalog2__"+db, "t")
	if err != nil {
		t.Fatal(err)
	}
	moved.DbName, moved.TableName = "catalog2__"+other, "moved"
	if err := c.AlterTable(ctx(t), "catalog2__"+db, "t", moved); err != nil {
		t.Fatalf("a rename across databases of catalog2: %v", err)
	}
	if _, err := direct2.GetTable(ctx(t), other, "moved"); err != nil {
		t.Fatalf("the renamed table is not in catalog2's %s: %v", other, err)
	}
}

// A4: each '|' alternative of a database pattern routes by its own prefix.
func TestDefectPatternAlternativesAreAllAnswered(t *testing.T) {
	needHive(t)
	p := proxytest.Start(t, map[string]string{
		"catalogs":                "catalog1,catalog2,catalog3",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": hms1.URI,
		"catalog.catalog2.conf.hive.metastore.uris": hms2.URI,
		"catalog.catalog3.conf.hive.metastore.uris": hms4.URI,
		"catalog.catalog3.runtime-profile":          "APACHE_4_1_0",
	})
	c := proxytest.Client(t, p.URI("primary"))
	direct2, direct4 := proxytest.Client(t, hms2.URI), proxytest.Client(t, hms4.URI)
	a, b, x := uniq("alt_a"), uniq("alt_b"), uniq("alt_x")
	mkDB(t, direct2, a)
	mkDB(t, direct2, b)
	mkDB(t, direct4, x)
	got, err := c.GetDatabases(ctx(t), "catalog2__"+a+"|catalog2__"+b)
	if err != nil || strings.Join(got, ",") != "catalog2__"+a+",catalog2__"+b {
		t.Fatalf("two catalog2 alternatives: %v %v", got, err)
	}
	got, err = c.GetDatabases(ctx(t), "catalog2__"+a+"|catalog3__"+x)
	if err != nil || strings.Join(got, ",") != "catalog2__"+a+",catalog3__"+x {
		t.Fatalf("alternatives of two catalogs: %v %v", got, err)
	}
}

// A5: a backend exception on an RPC whose result carries no names is an
// error in metrics and audit (it used to be counted "ok").
func TestDefectFailuresAreCountedAsErrors(t *testing.T) {
	needHive(t)
	p := proxytest.Start(t, twoCatalogs())
	c := proxytest.Client(t, p.URI("primary"))
	direct2 := proxytest.Client(t, hms2.URI)
	full := uniq("full")
	mkDB(t, direct2, full)
	mkTable(t, direct2, full, "t")
	var ae *thriftgen.AlreadyExistsException
	if err := c.CreateDatabase(ctx(t), &thriftgen.Database{Name: "catalog2__" + full}); !errors.As(err, &ae) {
		t.Fatalf("create_database of an existing database: %v", err)
	}
	if err := c.DropDatabase(ctx(t), "catalog2__"+full, false, false); err == nil {
		t.Fatal("drop_database of a non-empty database must fail")
	}
	if _, err := c.CheckLock(ctx(t), &thriftgen.CheckLockRequest{Lockid: 987654321}); err == nil {
		t.Fatal("check_lock of an unknown id must fail")
	}
	for _, m := range []string{"create_database", "drop_database", "check_lock"} {
		recs := auditOf(t, p, m)
		if len(recs) == 0 || recs[len(recs)-1]["status"] != "error" {
			t.Errorf("%s failed but is audited %v", m, recs)
		}
		if n := p.Metric(t, "hms_proxy_requests_total", "method", m, "status", "error"); n != 1 {
			t.Errorf("hms_proxy_requests_total{method=%s,status=error} = %v", m, n)
		}
	}
}

// A6: exception texts of a call routed to a non-default catalog name its
// objects by their external names.
func TestDefectErrorTextsUseExternalNames(t *testing.T) {
	needHive(t)
	p := proxytest.Start(t, twoCatalogs())
	c := proxytest.Client(t, p.URI("primary"))
	direct2 := proxytest.Client(t, hms2.URI)
	e1 := uniq("e1")
	mkDB(t, direct2, e1)
	mkTable(t, direct2, e1, "t")
	err := c.DropDatabase(ctx(t), "catalog2__"+e1, false, false)
	if err == nil || !strings.Contains(err.Error(), "catalog2__"+e1) {
		t.Fatalf("drop of a non-empty catalog2 database: the message must name catalog2__%s, got %v", e1, err)
	}
	_, err = c.GetTable(ctx(t), "catalog2__"+e1, "nope_1")
	var nso *thriftgen.NoSuchObjectException
	if !errors.As(err, &nso) || !strings.Contains(nso.Message, "catalog2__"+e1+".nope_1") || strings.Contains(nso.Message, "hive.") {
		t.Fatalf("a missing catalog2 table: want its external name in the message, got %v", err)
	}
}

// A refusal of an RPC that declares no MetaException reaches the client as a
// TApplicationException carrying the same text (Hive's clients show its
// message), and the operator's log has one WARN line per kind of refusal
// naming method, catalog and reason. add_dynamic_partitions declares only
// the transaction exceptions and is write-id business of the default
// catalog; a lock component marked transactional inside a transaction is an
// ACID write, and lock declares no MetaException.
func TestRefusalsOfRPCsWithoutMetaExceptionAreApplicationExceptions(t *testing.T) {
	needHive(t)
	p := proxytest.Start(t, twoCatalogs())
	c := proxytest.Client(t, p.URI("primary"))
	calls := map[string]func() error{
		"add_dynamic_partitions": func() error {
			return c.AddDynamicPartitions(ctx(t), &thriftgen.AddDynamicPartitions{Txnid: 1, Writeid: 1, Dbname: "catalog2__sales", Tablename: "t", Partitionnames: []string{"p=1"}})
		},
	}
	calls["lock"] = func() error {
		txns, err := c.OpenTxns(ctx(t), &thriftgen.OpenTxnRequest{NumTxns: 1, User: "u", Hostname: "h"})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.AbortTxn(ctx(t), &thriftgen.AbortTxnRequest{Txnid: txns.TxnIds[0]}) }()
		tx := true
		_, err = c.Lock(ctx(t), &thriftgen.LockRequest{Txnid: &txns.TxnIds[0], User: "u", Hostname: "h", Component: []*thriftgen.LockComponent{
			{Type: thriftgen.LockType_SHARED_WRITE, Level: thriftgen.LockLevel_TABLE, Dbname: "catalog2__sales", Tablename: strp("t"), IsTransactional: &tx}}})
		return err
	}
	for method, call := range calls {
		for i := 0; i < 3; i++ {
			err := call()
			var ae thrift.TApplicationException
			if !errors.As(err, &ae) || !strings.Contains(ae.Error(), "catalog2") {
				t.Fatalf("%s on catalog2: want a TApplicationException naming catalog2, got %T %v", method, err, err)
			}
			if i == 0 {
				t.Logf("%s: %v", method, err)
			}
		}
		if l := p.LogLines("level=WARN", `msg="request refused"`, "method="+method, "catalog=catalog2"); len(l) != 1 {
			t.Fatalf("%s refused 3 times within a second: want one WARN line, got %d: %q", method, len(l), l)
		}
	}
	// The connection still serves.
	if _, err := c.GetAllDatabases(ctx(t)); err != nil {
		t.Fatal(err)
	}
	// The reverse (A7): fb303's shutdown, which HiveServer2 sends as it
	// closes each client, is expected and answered locally: no WARN line,
	// and the connection goes on serving.
	a := dialRaw(t, p.URI("primary"))
	for i := int32(0); i < 5; i++ {
		a.send(wire.AppendMessage(nil, wire.Header{Name: "shutdown", Type: wire.Oneway, SeqID: i}, &wire.Value{Type: wire.TStruct}))
	}
	a.send(callBytes("get_all_databases", 9, wire.Struct()))
	if m, err := a.recv(); err != nil || m.Type != wire.Reply || m.SeqID != 9 {
		t.Fatalf("after five oneway shutdowns: %+v %v, want the reply to get_all_databases", m, err)
	}
	if l := p.LogLines("level=WARN", "shutdown"); len(l) != 0 {
		t.Fatalf("fb303 shutdown logged at WARN: %q", l)
	}
}
