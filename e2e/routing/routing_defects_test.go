package routing

import (
	"errors"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/locks"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Issue 10, part A: defects found with real clients, each against real
// Hive 3.1.3 metastores.

// A2: a valid-write-ids request or exchange over a prefixed and an
// unprefixed name is refused (it used to run in the prefixed catalog alone); a
// lock is split by catalog instead (issue 11), its catalog2 part held by the
// synthetic lock shim.
func TestDefectMixedNamesAreRefusedNotGuessed(t *testing.T) {
	e2eutil.NeedHive(t)
	tap := proxytest.NewTap(t, e2eutil.HMS2.URI)
	p := proxytest.Start(t, e2eutil.TwoCatalogs("catalog.catalog2.conf.hive.metastore.uris="+tap.URI()))
	c := proxytest.Client(t, p.URI("primary"))
	lock, err := c.Lock(e2eutil.Ctx(t), &thriftgen.LockRequest{User: "u", Hostname: "h", Component: []*thriftgen.LockComponent{
		{Type: thriftgen.LockType_SHARED_READ, Level: thriftgen.LockLevel_TABLE, Dbname: "default", Tablename: e2eutil.Strp("orders")},
		{Type: thriftgen.LockType_SHARED_READ, Level: thriftgen.LockLevel_TABLE, Dbname: "catalog2__default", Tablename: e2eutil.Strp("x")},
	}})
	if err != nil || lock.State != thriftgen.LockState_ACQUIRED || !locks.IsShimLockID(lock.Lockid) {
		t.Fatalf("a lock over catalog1 and catalog2: want one granted shim lock, got %+v %v", lock, err)
	}
	if err := c.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: lock.Lockid}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetValidWriteIds(e2eutil.Ctx(t), &thriftgen.GetValidWriteIdsRequest{
		FullTableNames: []string{"default.orders", "catalog2__default.x"}, ValidTxnList: e2eutil.Strp("1:1::")})
	e2eutil.MetaErr(t, err, "ambiguous")
	_, err = c.ExchangePartition(e2eutil.Ctx(t), map[string]string{"p": "1"}, "default", "t", "catalog2__default", "t")
	e2eutil.MetaErr(t, err, "ambiguous")
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
	e2eutil.NeedHive(t)
	p := proxytest.Start(t, e2eutil.TwoCatalogs())
	c := proxytest.Client(t, p.URI("primary"))
	direct2 := proxytest.Client(t, e2eutil.HMS2.URI)
	db, other := e2eutil.Uniq("ren"), e2eutil.Uniq("ren2")
	e2eutil.MkDB(t, direct2, db)
	e2eutil.MkDB(t, direct2, other)
	e2eutil.MkTable(t, direct2, db, "t")
	err := c.AlterTable(e2eutil.Ctx(t), "catalog2__"+db, "t", e2eutil.Table(db, "t"))
	var io *thriftgen.InvalidOperationException
	if !errors.As(err, &io) || !strings.Contains(io.Message, "catalog2") || !strings.Contains(io.Message, "catalog1") {
		t.Fatalf("a move from catalog2 to catalog1: want InvalidOperationException naming both, got %v", err)
	}
	moved, err := c.GetTable(e2eutil.Ctx(t), "catalog2__"+db, "t")
	if err != nil {
		t.Fatal(err)
	}
	moved.DbName, moved.TableName = "catalog2__"+other, "moved"
	if err := c.AlterTable(e2eutil.Ctx(t), "catalog2__"+db, "t", moved); err != nil {
		t.Fatalf("a rename across databases of catalog2: %v", err)
	}
	if _, err := direct2.GetTable(e2eutil.Ctx(t), other, "moved"); err != nil {
		t.Fatalf("the renamed table is not in catalog2's %s: %v", other, err)
	}
}

// A4: each '|' alternative of a database pattern routes by its own prefix.
func TestDefectPatternAlternativesAreAllAnswered(t *testing.T) {
	e2eutil.NeedHive(t)
	p := proxytest.Start(t, map[string]string{
		"catalogs":                "catalog1,catalog2,catalog3",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": e2eutil.HMS1.URI,
		"catalog.catalog2.conf.hive.metastore.uris": e2eutil.HMS2.URI,
		"catalog.catalog3.conf.hive.metastore.uris": e2eutil.HMS4.URI,
		"catalog.catalog3.runtime-profile":          "APACHE_4_1_0",
	})
	c := proxytest.Client(t, p.URI("primary"))
	direct2, direct4 := proxytest.Client(t, e2eutil.HMS2.URI), proxytest.Client(t, e2eutil.HMS4.URI)
	a, b, x := e2eutil.Uniq("alt_a"), e2eutil.Uniq("alt_b"), e2eutil.Uniq("alt_x")
	e2eutil.MkDB(t, direct2, a)
	e2eutil.MkDB(t, direct2, b)
	e2eutil.MkDB(t, direct4, x)
	got, err := c.GetDatabases(e2eutil.Ctx(t), "catalog2__"+a+"|catalog2__"+b)
	if err != nil || strings.Join(got, ",") != "catalog2__"+a+",catalog2__"+b {
		t.Fatalf("two catalog2 alternatives: %v %v", got, err)
	}
	got, err = c.GetDatabases(e2eutil.Ctx(t), "catalog2__"+a+"|catalog3__"+x)
	if err != nil || strings.Join(got, ",") != "catalog2__"+a+",catalog3__"+x {
		t.Fatalf("alternatives of two catalogs: %v %v", got, err)
	}
}

// A5: a backend exception on an RPC whose result carries no names is an
// error in metrics and audit (it used to be counted "ok").
func TestDefectFailuresAreCountedAsErrors(t *testing.T) {
	e2eutil.NeedHive(t)
	p := proxytest.Start(t, e2eutil.TwoCatalogs())
	c := proxytest.Client(t, p.URI("primary"))
	direct2 := proxytest.Client(t, e2eutil.HMS2.URI)
	full := e2eutil.Uniq("full")
	e2eutil.MkDB(t, direct2, full)
	e2eutil.MkTable(t, direct2, full, "t")
	var ae *thriftgen.AlreadyExistsException
	if err := c.CreateDatabase(e2eutil.Ctx(t), &thriftgen.Database{Name: "catalog2__" + full}); !errors.As(err, &ae) {
		t.Fatalf("create_database of an existing database: %v", err)
	}
	if err := c.DropDatabase(e2eutil.Ctx(t), "catalog2__"+full, false, false); err == nil {
		t.Fatal("drop_database of a non-empty database must fail")
	}
	if _, err := c.CheckLock(e2eutil.Ctx(t), &thriftgen.CheckLockRequest{Lockid: 987654321}); err == nil {
		t.Fatal("check_lock of an unknown id must fail")
	}
	for _, m := range []string{"create_database", "drop_database", "check_lock"} {
		recs := e2eutil.AuditOf(t, p, m)
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
	e2eutil.NeedHive(t)
	p := proxytest.Start(t, e2eutil.TwoCatalogs())
	c := proxytest.Client(t, p.URI("primary"))
	direct2 := proxytest.Client(t, e2eutil.HMS2.URI)
	e1 := e2eutil.Uniq("e1")
	e2eutil.MkDB(t, direct2, e1)
	e2eutil.MkTable(t, direct2, e1, "t")
	err := c.DropDatabase(e2eutil.Ctx(t), "catalog2__"+e1, false, false)
	if err == nil || !strings.Contains(err.Error(), "catalog2__"+e1) {
		t.Fatalf("drop of a non-empty catalog2 database: the message must name catalog2__%s, got %v", e1, err)
	}
	_, err = c.GetTable(e2eutil.Ctx(t), "catalog2__"+e1, "nope_1")
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
// catalog. A lock component marked transactional inside a transaction is an
// ACID write, and lock declares no MetaException: its refusal aborts the
// client's transaction (HiveServer2 would otherwise leave it open) and
// answers the TxnAbortedException lock declares, with the same text.
func TestRefusalsOfRPCsWithoutMetaExceptionAreApplicationExceptions(t *testing.T) {
	e2eutil.NeedHive(t)
	p := proxytest.Start(t, e2eutil.TwoCatalogs())
	c := proxytest.Client(t, p.URI("primary"))
	calls := map[string]func() error{
		"add_dynamic_partitions": func() error {
			return c.AddDynamicPartitions(e2eutil.Ctx(t), &thriftgen.AddDynamicPartitions{Txnid: 1, Writeid: 1, Dbname: "catalog2__sales", Tablename: "t", Partitionnames: []string{"p=1"}})
		},
	}
	calls["lock"] = func() error {
		txns, err := c.OpenTxns(e2eutil.Ctx(t), &thriftgen.OpenTxnRequest{NumTxns: 1, User: "u", Hostname: "h"})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.AbortTxn(e2eutil.Ctx(t), &thriftgen.AbortTxnRequest{Txnid: txns.TxnIds[0]}) }()
		tx := true
		_, err = c.Lock(e2eutil.Ctx(t), &thriftgen.LockRequest{Txnid: &txns.TxnIds[0], User: "u", Hostname: "h", Component: []*thriftgen.LockComponent{
			{Type: thriftgen.LockType_SHARED_WRITE, Level: thriftgen.LockLevel_TABLE, Dbname: "catalog2__sales", Tablename: e2eutil.Strp("t"), IsTransactional: &tx}}})
		return err
	}
	for method, call := range calls {
		for i := 0; i < 3; i++ {
			err := call()
			var ae thrift.TApplicationException
			var aborted *thriftgen.TxnAbortedException
			switch {
			case method == "lock":
				if !errors.As(err, &aborted) || !strings.Contains(aborted.Message, "catalog2") {
					t.Fatalf("lock on catalog2 inside a transaction: want a TxnAbortedException naming catalog2, got %T %v", err, err)
				}
			case !errors.As(err, &ae) || !strings.Contains(ae.Error(), "catalog2"):
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
	if _, err := c.GetAllDatabases(e2eutil.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	// The reverse (A7): fb303's shutdown, which HiveServer2 sends as it
	// closes each client, is expected and answered locally: no WARN line,
	// and the connection goes on serving.
	a := e2eutil.DialRaw(t, p.URI("primary"))
	for i := int32(0); i < 5; i++ {
		a.Send(wire.AppendMessage(nil, wire.Header{Name: "shutdown", Type: wire.Oneway, SeqID: i}, &wire.Value{Type: wire.TStruct}))
	}
	a.Send(e2eutil.CallBytes("get_all_databases", 9, wire.Struct()))
	if m, err := a.Recv(); err != nil || m.Type != wire.Reply || m.SeqID != 9 {
		t.Fatalf("after five oneway shutdowns: %+v %v, want the reply to get_all_databases", m, err)
	}
	if l := p.LogLines("level=WARN", "shutdown"); len(l) != 0 {
		t.Fatalf("fb303 shutdown logged at WARN: %q", l)
	}
}
