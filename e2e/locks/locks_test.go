package locks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/apache/thrift/lib/go/thrift"
	"github.com/go-zookeeper/zk"

	"github.com/hms-proxy/hms-proxy/app"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/locks"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Issue 11: transactions and locks across catalogs, against real Hive
// metastores (catalog1 = hms1, the default; catalog2 = hms2), a real
// ZooKeeper and two proxy replicas sharing it, as behind one TCP load
// balancer.

// lockEnv is two replicas (a, b) of one proxy configuration whose synthetic
// lock stores share a znode, plus direct clients of both metastores and a
// database on each.
type lockEnv struct {
	a, b             *proxytest.Proxy
	ca, cb           *thriftgen.Client
	direct1, direct2 *thriftgen.Client
	znode            string
	db1, db2         string // backend names on hms1 and hms2
}

func (e *lockEnv) ext2() string { return "catalog2__" + e.db2 }

func newLockEnv(t *testing.T, zkAddr string, hooks app.TestHooks, extra ...string) *lockEnv {
	t.Helper()
	return newLockEnvOn(t, e2eutil.HMS2, zkAddr, hooks, extra...)
}

// newLockEnvOn is newLockEnv with catalog2 on the given metastore (hms2, or
// hms4 with runtime-profile APACHE_4_1_0 in extra).
func newLockEnvOn(t *testing.T, catalog2 *testbed.Metastore, zkAddr string, hooks app.TestHooks, extra ...string) *lockEnv {
	t.Helper()
	e := &lockEnv{znode: "/e2e-locks/" + e2eutil.Uniq(strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_"))),
		db1: e2eutil.Uniq("lk1"), db2: e2eutil.Uniq("lk2")}
	props := e2eutil.TwoCatalogs(append([]string{
		"synthetic-read-lock.store.mode=ZOOKEEPER",
		"synthetic-read-lock.store.zookeeper.connect-string=" + zkAddr,
		"synthetic-read-lock.store.zookeeper.znode=" + e.znode,
		"synthetic-read-lock.store.zookeeper.connection-timeout-ms=5000",
		"synthetic-read-lock.store.zookeeper.session-timeout-ms=20000",
		"synthetic-read-lock.store.zookeeper.base-sleep-ms=100",
		"synthetic-read-lock.store.zookeeper.max-retries=1",
		"catalog.catalog2.conf.hive.metastore.uris=" + catalog2.URI,
	}, extra...)...)
	e.a = proxytest.StartWith(t, props, hooks)
	e.b = proxytest.StartWith(t, props, hooks)
	e.ca, e.cb = proxytest.Client(t, e.a.URI("primary")), proxytest.Client(t, e.b.URI("primary"))
	e.direct1, e.direct2 = proxytest.Client(t, e2eutil.HMS1.URI), proxytest.Client(t, catalog2.URI)
	e2eutil.MkDB(t, e.direct1, e.db1)
	e2eutil.MkDB(t, e.direct2, e.db2)
	return e
}

func ptrTo[T any](v T) *T { return &v }

func checkState(t *testing.T, c *thriftgen.Client, id int64) thriftgen.LockState {
	t.Helper()
	resp, err := c.CheckLock(e2eutil.Ctx(t), &thriftgen.CheckLockRequest{Lockid: id})
	if err != nil {
		t.Fatalf("check_lock %d: %v", id, err)
	}
	return resp.State
}

func openTxn(t *testing.T, c *thriftgen.Client, user string) int64 {
	t.Helper()
	resp, err := c.OpenTxns(e2eutil.Ctx(t), &thriftgen.OpenTxnRequest{NumTxns: 1, User: user, Hostname: "localhost"})
	if err != nil || len(resp.TxnIds) != 1 {
		t.Fatalf("open_txns: %+v %v", resp, err)
	}
	return resp.TxnIds[0]
}

func isNoSuchLock(err error) bool {
	var nsl *thriftgen.NoSuchLockException
	return errors.As(err, &nsl)
}

// The life cycle of synthetic locks of catalog2 through two replicas: taken
// through one, checked, heart-beaten and released through the other; in a
// transaction, a second writer waits until commit_txn of the first releases
// it. The default catalog's own locks pass through untouched.
func TestSyntheticLockLifecycleThroughTwoReplicas(t *testing.T) {
	e := newLockEnv(t, e2eutil.ZooKeeper(t), app.TestHooks{})
	e2eutil.MkTable(t, e.direct2, e.db2, "orders")
	e2eutil.MkTable(t, e.direct1, e.db1, "facts")

	// A SELECT's SHARED_READ on catalog2, without a transaction.
	read := e2eutil.MustLockState(t, e.ca, e2eutil.LockRequest(0, e2eutil.Comp(thriftgen.LockType_SHARED_READ, thriftgen.DataOperationType_SELECT, e.ext2(), "orders")),
		thriftgen.LockState_ACQUIRED)
	if !locks.IsShimLockID(read.Lockid) {
		t.Fatalf("catalog2's lock got id %d, not a shim id", read.Lockid)
	}
	if st := checkState(t, e.cb, read.Lockid); st != thriftgen.LockState_ACQUIRED {
		t.Fatalf("check_lock through the other replica: %v", st)
	}
	if err := e.cb.Heartbeat(e2eutil.Ctx(t), &thriftgen.HeartbeatRequest{Lockid: &read.Lockid}); err != nil {
		t.Fatalf("heartbeat through the other replica: %v", err)
	}
	if err := e.cb.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: read.Lockid}); err != nil {
		t.Fatalf("unlock through the other replica: %v", err)
	}
	if _, err := e.ca.CheckLock(e2eutil.Ctx(t), &thriftgen.CheckLockRequest{Lockid: read.Lockid}); !isNoSuchLock(err) {
		t.Fatalf("check_lock after unlock: %v, want NoSuchLockException", err)
	}
	if held := e2eutil.BackendLocks(t, e.direct2, e.db2); len(held) != 0 {
		t.Fatalf("catalog2's metastore holds locks it was never asked for: %+v", held)
	}

	// HiveServer2's INSERT into a non-ACID table: inside a transaction of
	// the default catalog, EXCLUSIVE (strict locking), released by commit_txn.
	insert := func(txn int64) *thriftgen.LockRequest {
		return e2eutil.LockRequest(txn, e2eutil.Comp(thriftgen.LockType_EXCLUSIVE, thriftgen.DataOperationType_INSERT, e.ext2(), "orders"),
			e2eutil.Comp(thriftgen.LockType_SHARED_READ, thriftgen.DataOperationType_SELECT, "_dummy_database", "_dummy_table"))
	}
	t1, t2 := openTxn(t, e.ca, "alice"), openTxn(t, e.cb, "bob")
	l1 := e2eutil.MustLockState(t, e.ca, insert(t1), thriftgen.LockState_ACQUIRED)
	l2 := e2eutil.MustLockState(t, e.cb, insert(t2), thriftgen.LockState_WAITING)
	if st := checkState(t, e.ca, l2.Lockid); st != thriftgen.LockState_WAITING {
		t.Fatalf("the second writer through the other replica: %v, want WAITING", st)
	}
	if err := e.cb.Heartbeat(e2eutil.Ctx(t), &thriftgen.HeartbeatRequest{Txnid: &t1}); err != nil {
		t.Fatalf("a transaction heartbeat through the other replica: %v", err)
	}
	var open *thriftgen.TxnOpenException
	if err := e.cb.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: l1.Lockid}); !errors.As(err, &open) {
		t.Fatalf("unlock of a granted lock of a transaction: %v, want TxnOpenException", err)
	}
	if err := e.cb.CommitTxn(e2eutil.Ctx(t), &thriftgen.CommitTxnRequest{Txnid: t1}); err != nil {
		t.Fatalf("commit_txn of the first writer through the other replica: %v", err)
	}
	if st := checkState(t, e.ca, l2.Lockid); st != thriftgen.LockState_ACQUIRED {
		t.Fatalf("the second writer after the first committed: %v, want ACQUIRED", st)
	}
	if _, err := e.ca.CheckLock(e2eutil.Ctx(t), &thriftgen.CheckLockRequest{Lockid: l1.Lockid}); !isNoSuchLock(err) {
		t.Fatalf("the committed writer's lock: %v, want NoSuchLockException", err)
	}
	if err := e.ca.AbortTxn(e2eutil.Ctx(t), &thriftgen.AbortTxnRequest{Txnid: t2}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cb.CheckLock(e2eutil.Ctx(t), &thriftgen.CheckLockRequest{Lockid: l2.Lockid}); !isNoSuchLock(err) {
		t.Fatalf("the aborted writer's lock: %v, want NoSuchLockException", err)
	}

	// The default catalog's lock is its metastore's, checked and released
	// through the other replica.
	own := e2eutil.MustLockState(t, e.ca, e2eutil.LockRequest(0, e2eutil.Comp(thriftgen.LockType_EXCLUSIVE, thriftgen.DataOperationType_NO_TXN, e.db1, "facts")),
		thriftgen.LockState_ACQUIRED)
	if locks.IsShimLockID(own.Lockid) || len(e2eutil.BackendLocks(t, e.direct1, e.db1)) != 1 {
		t.Fatalf("the default catalog's lock %d is not its metastore's: %+v", own.Lockid, e2eutil.BackendLocks(t, e.direct1, e.db1))
	}
	if st := checkState(t, e.cb, own.Lockid); st != thriftgen.LockState_ACQUIRED {
		t.Fatal(st)
	}
	if err := e.cb.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: own.Lockid}); err != nil {
		t.Fatal(err)
	}
	if held := e2eutil.BackendLocks(t, e.direct1, e.db1); len(held) != 0 {
		t.Fatalf("the default catalog still holds %+v", held)
	}

	// Handoffs: locks taken through a and served through b, and back.
	handoffs := e.a.Metric(t, locks.MetricHandoffs, "catalog", "catalog2", "store_mode", "zookeeper") +
		e.b.Metric(t, locks.MetricHandoffs, "catalog", "catalog2", "store_mode", "zookeeper")
	if handoffs < 5 {
		t.Fatalf("%s = %v, want the check, heartbeat, unlock and commit served by the other replica counted", locks.MetricHandoffs, handoffs)
	}
	if n := e.b.Metric(t, "hms_proxy_requests_total", "method", "check_lock", "backend", "synthetic_lock"); n < 1 {
		t.Fatalf("check_lock served by the shim is not counted with backend=synthetic_lock: %v", n)
	}
	if n := e.a.Metric(t, locks.MetricEvents, "operation", "acquire", "catalog", "catalog2", "result", "acquired"); n < 2 {
		t.Fatalf("acquire events on a: %v", n)
	}
}

// The defect of the issue: a lock id one metastore issued lined up with
// another's, and unlock through the proxy released someone else's lock. Shim
// ids cannot line up with a metastore's, an id nobody issued answers
// NoSuchLockException, and catalog2's metastore never sees lock calls.
func TestLockIDOfOneClientNeverReleasesAnothers(t *testing.T) {
	e2eutil.NeedHive(t)
	tap2 := proxytest.NewTap(t, e2eutil.HMS2.URI)
	p := proxytest.Start(t, e2eutil.TwoCatalogs("catalog.catalog2.conf.hive.metastore.uris="+tap2.URI()))
	alice, bob := proxytest.Client(t, p.URI("primary")), proxytest.Client(t, p.URI("primary"))
	direct1, direct2 := proxytest.Client(t, e2eutil.HMS1.URI), proxytest.Client(t, e2eutil.HMS2.URI)
	db1, db2 := e2eutil.Uniq("ids1"), e2eutil.Uniq("ids2")
	e2eutil.MkDB(t, direct1, db1)
	e2eutil.MkDB(t, direct2, db2)
	tap2.Reset()

	// Bob's lock on the default catalog, Alice's on catalog2, several times
	// over, so the metastores' own counters advance.
	var bobs []int64
	for i := 0; i < 3; i++ {
		b := e2eutil.MustLockState(t, bob, e2eutil.LockRequest(0, e2eutil.Comp(thriftgen.LockType_EXCLUSIVE, thriftgen.DataOperationType_NO_TXN, db1, fmt.Sprintf("t%d", i))),
			thriftgen.LockState_ACQUIRED)
		bobs = append(bobs, b.Lockid)
		a := e2eutil.MustLockState(t, alice, e2eutil.LockRequest(0, e2eutil.Comp(thriftgen.LockType_EXCLUSIVE, thriftgen.DataOperationType_NO_TXN, "catalog2__"+db2, fmt.Sprintf("t%d", i))),
			thriftgen.LockState_ACQUIRED)
		for _, id := range bobs {
			if a.Lockid == id {
				t.Fatalf("alice's catalog2 lock and bob's default-catalog lock have the same id %d", id)
			}
		}
		if err := alice.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: a.Lockid}); err != nil {
			t.Fatal(err)
		}
		// An id Alice makes up in the shim's form answers NoSuchLock.
		if err := alice.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: a.Lockid + 1000}); !isNoSuchLock(err) {
			t.Fatalf("unlock of a shim id nobody issued: %v, want NoSuchLockException", err)
		}
	}
	// Bob's locks are all still held by the default catalog's metastore.
	for _, id := range bobs {
		if st := checkState(t, bob, id); st != thriftgen.LockState_ACQUIRED {
			t.Fatalf("bob's lock %d after alice's unlocks: %v", id, st)
		}
	}
	if held := e2eutil.BackendLocks(t, direct1, db1); len(held) != len(bobs) {
		t.Fatalf("the default catalog holds %d of bob's %d locks", len(held), len(bobs))
	}
	for _, m := range tap2.Methods() {
		if m == "lock" || m == "check_lock" || m == "unlock" || m == "heartbeat" {
			t.Fatalf("catalog2's metastore received %s: %v", m, tap2.Methods())
		}
	}
	for _, id := range bobs {
		if err := bob.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: id}); err != nil {
			t.Fatal(err)
		}
	}
}

// A SELECT joining a default-catalog table and a catalog2 table inside one
// HiveServer2 transaction asks one lock over both: it is split (counted), the
// client gets one id, and check_lock, heartbeat and unlock of that id reach
// both parts. The default catalog's part is taken only once the shim's part is
// granted, and the combined lock waits while either part waits.
func TestCombinedLockOverTwoCatalogs(t *testing.T) {
	e := newLockEnv(t, e2eutil.ZooKeeper(t), app.TestHooks{})
	e2eutil.MkTable(t, e.direct1, e.db1, "dim")
	e2eutil.MkTable(t, e.direct2, e.db2, "fact")
	join := func(txn int64) *thriftgen.LockRequest {
		return e2eutil.LockRequest(txn, e2eutil.Comp(thriftgen.LockType_SHARED_READ, thriftgen.DataOperationType_SELECT, e.db1, "dim"),
			e2eutil.Comp(thriftgen.LockType_SHARED_READ, thriftgen.DataOperationType_SELECT, e.ext2(), "fact"))
	}
	txn := openTxn(t, e.ca, "carol")
	l := e2eutil.MustLockState(t, e.ca, join(txn), thriftgen.LockState_ACQUIRED)
	if !locks.IsShimLockID(l.Lockid) {
		t.Fatalf("the combined lock's id %d is not the shim's", l.Lockid)
	}
	held := e2eutil.BackendLocks(t, e.direct1, e.db1)
	if len(held) != 1 || held[0].Type != thriftgen.LockType_SHARED_READ || held[0].Tablename == nil || *held[0].Tablename != "dim" {
		t.Fatalf("the default catalog's part: %+v, want one SHARED_READ on %s.dim", held, e.db1)
	}
	if st := checkState(t, e.cb, l.Lockid); st != thriftgen.LockState_ACQUIRED {
		t.Fatalf("check_lock of the combined lock through the other replica: %v", st)
	}
	if err := e.cb.Heartbeat(e2eutil.Ctx(t), &thriftgen.HeartbeatRequest{Txnid: &txn, Lockid: &l.Lockid}); err != nil {
		t.Fatalf("heartbeat of the combined lock: %v", err)
	}
	if n := e.a.Metric(t, locks.MetricLockRequestSplit, "catalog", "catalog1"); n != 1 {
		t.Fatalf("%s{catalog1} = %v, want 1", locks.MetricLockRequestSplit, n)
	}
	if err := e.cb.CommitTxn(e2eutil.Ctx(t), &thriftgen.CommitTxnRequest{Txnid: txn}); err != nil {
		t.Fatal(err)
	}
	if held := e2eutil.BackendLocks(t, e.direct1, e.db1); len(held) != 0 {
		t.Fatalf("the default catalog's part outlived commit_txn: %+v", held)
	}
	if _, err := e.ca.CheckLock(e2eutil.Ctx(t), &thriftgen.CheckLockRequest{Lockid: l.Lockid}); !isNoSuchLock(err) {
		t.Fatalf("the combined lock after commit: %v", err)
	}

	// The default catalog's part waits behind an exclusive lock there: the
	// combined lock answers WAITING until it is released.
	blocker := e2eutil.MustLockState(t, e.direct1, e2eutil.LockRequest(0, e2eutil.Comp(thriftgen.LockType_EXCLUSIVE, thriftgen.DataOperationType_NO_TXN, e.db1, "dim")),
		thriftgen.LockState_ACQUIRED)
	w := e2eutil.MustLockState(t, e.cb, join(0), thriftgen.LockState_WAITING)
	if st := checkState(t, e.ca, w.Lockid); st != thriftgen.LockState_WAITING {
		t.Fatalf("combined lock while the default catalog's part waits: %v", st)
	}
	// The shim's part is granted (another reader of catalog2 is not blocked
	// by it, a writer is).
	writer := e2eutil.MustLockState(t, e.ca, e2eutil.LockRequest(0, e2eutil.Comp(thriftgen.LockType_EXCLUSIVE, thriftgen.DataOperationType_NO_TXN, e.ext2(), "fact")),
		thriftgen.LockState_WAITING)
	if err := e.direct1.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: blocker.Lockid}); err != nil {
		t.Fatal(err)
	}
	if st := checkState(t, e.ca, w.Lockid); st != thriftgen.LockState_ACQUIRED {
		t.Fatalf("combined lock after the blocker left: %v", st)
	}
	if err := e.cb.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: w.Lockid}); err != nil {
		t.Fatalf("unlock of the combined lock: %v", err)
	}
	if held := e2eutil.BackendLocks(t, e.direct1, e.db1); len(held) != 0 {
		t.Fatalf("unlock left the default catalog's part: %+v", held)
	}
	if st := checkState(t, e.cb, writer.Lockid); st != thriftgen.LockState_ACQUIRED {
		t.Fatalf("the catalog2 writer after the combined lock was released: %v", st)
	}
	if err := e.ca.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: writer.Lockid}); err != nil {
		t.Fatal(err)
	}
}

// What a lock through the shim may not be: an ACID write of a non-default
// catalog, or a write on a READ_ONLY catalog (whether or not its component
// survived the split). Transactional tables and write ids stay in the default
// catalog.
func TestACIDPolicyOnNonDefaultCatalogs(t *testing.T) {
	e2eutil.NeedHive(t)
	p := proxytest.Start(t, e2eutil.TwoCatalogs("catalog.catalog2.access-mode=READ_ONLY"))
	c := proxytest.Client(t, p.URI("primary"))
	direct1, direct2 := proxytest.Client(t, e2eutil.HMS1.URI), proxytest.Client(t, e2eutil.HMS2.URI)
	db1, db2 := e2eutil.Uniq("acid1"), e2eutil.Uniq("acid2")
	e2eutil.MkDB(t, direct1, db1)
	e2eutil.MkDB(t, direct2, db2)
	ext := "catalog2__" + db2

	txn := openTxn(t, c, "dave")
	defer func() { _ = c.AbortTxn(context.Background(), &thriftgen.AbortTxnRequest{Txnid: txn}) }()
	// A SELECT of an ACID table (a read: the access mode lets it pass).
	acid := e2eutil.Comp(thriftgen.LockType_SHARED_READ, thriftgen.DataOperationType_SELECT, ext, "t")
	acid.IsTransactional = ptrTo(true)
	// Refused inside a transaction, the lock aborts it (so HiveServer2 shows
	// the reason and leaves nothing open) and answers the exception lock
	// declares for that; the checks below run in a fresh transaction.
	_, err := c.Lock(e2eutil.Ctx(t), e2eutil.LockRequest(txn, acid))
	var aborted *thriftgen.TxnAbortedException
	if !errors.As(err, &aborted) || !strings.Contains(aborted.Message, "catalog2") || !strings.Contains(aborted.Message, "transactional") {
		t.Fatalf("an ACID lock on catalog2: %v, want a TxnAbortedException naming catalog2 and why", err)
	}
	txn = openTxn(t, c, "dave")
	// A write lock on a READ_ONLY catalog, alone or next to the default
	// catalog's components.
	write := e2eutil.Comp(thriftgen.LockType_EXCLUSIVE, thriftgen.DataOperationType_INSERT, ext, "t")
	for _, req := range []*thriftgen.LockRequest{e2eutil.LockRequest(txn, write),
		e2eutil.LockRequest(txn, e2eutil.Comp(thriftgen.LockType_SHARED_READ, thriftgen.DataOperationType_SELECT, db1, "src"), write)} {
		if _, err := c.Lock(e2eutil.Ctx(t), req); err == nil || !strings.Contains(err.Error(), "READ_ONLY") {
			t.Fatalf("a write lock on READ_ONLY catalog2 (%s): %v", e2eutil.DescribeLock(req), err)
		}
	}
	if held := e2eutil.BackendLocks(t, direct1, db1); len(held) != 0 {
		t.Fatalf("a refused split lock left a lock in the default catalog: %+v", held)
	}

	// Transactional tables and write ids, on a proxy where catalog2 is
	// writable (on the READ_ONLY one the access mode refuses any create
	// first).
	w := proxytest.Client(t, proxytest.Start(t, e2eutil.TwoCatalogs()).URI("primary"))
	tbl := e2eutil.Table(ext, "acid")
	tbl.TableType, tbl.Parameters = "MANAGED_TABLE", map[string]string{"transactional": "true"}
	e2eutil.MetaErr(t, w.CreateTable(e2eutil.Ctx(t), tbl), "create_table", "catalog2", "transactional=true", "default catalog catalog1")
	tbl.Parameters = map[string]string{"transactional": "true", "transactional_properties": "insert_only"}
	e2eutil.MetaErr(t, w.CreateTableWithEnvironmentContext(e2eutil.Ctx(t), tbl, &thriftgen.EnvironmentContext{}), "catalog2", "transactional")
	e2eutil.MetaErr(t, c.CreateTable(e2eutil.Ctx(t), tbl), "catalog2 is READ_ONLY")
	if tables, _ := direct2.GetAllTables(e2eutil.Ctx(t), db2); len(tables) != 0 {
		t.Fatalf("a refused create reached catalog2: %v", tables)
	}
	_, err = c.AllocateTableWriteIds(e2eutil.Ctx(t), &thriftgen.AllocateTableWriteIdsRequest{DbName: ext, TableName: "t", TxnIds: []int64{txn}})
	e2eutil.MetaErr(t, err, "allocate_table_write_ids", "catalog2", "write ids")
	_, err = c.GetValidWriteIds(e2eutil.Ctx(t), &thriftgen.GetValidWriteIdsRequest{FullTableNames: []string{ext + ".t"}, ValidTxnList: e2eutil.Strp("1:1::")})
	e2eutil.MetaErr(t, err, "get_valid_write_ids", "catalog2")

	// Id-only lifecycle goes to the default catalog, whose metastore answers
	// for ids it never issued with its own exceptions, as a direct client sees.
	const unknown = int64(987654321)
	var nst *thriftgen.NoSuchTxnException
	if err := c.CommitTxn(e2eutil.Ctx(t), &thriftgen.CommitTxnRequest{Txnid: unknown}); !errors.As(err, &nst) || !strings.Contains(nst.Message, "987654321") {
		t.Fatalf("commit_txn of a transaction no metastore issued: want NoSuchTxnException naming it, got %T %v", err, err)
	}
	if err := c.AbortTxn(e2eutil.Ctx(t), &thriftgen.AbortTxnRequest{Txnid: unknown}); !errors.As(err, &nst) || !strings.Contains(nst.Message, "987654321") {
		t.Fatalf("abort_txn of a transaction no metastore issued: want NoSuchTxnException naming it, got %T %v", err, err)
	}
	var nsl *thriftgen.NoSuchLockException
	if _, err := c.CheckLock(e2eutil.Ctx(t), &thriftgen.CheckLockRequest{Lockid: unknown}); !errors.As(err, &nsl) {
		t.Fatalf("check_lock of a lock no metastore issued: want NoSuchLockException, got %T %v", err, err)
	}
	// Hive's unlock of an unknown id succeeds (its TxnHandler makes unlock
	// idempotent); through the proxy it must answer the same, not a shim error.
	if err := direct1.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: unknown}); err != nil {
		t.Fatalf("direct unlock of an unknown lock id: %v", err)
	}
	if err := c.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: unknown}); err != nil {
		t.Fatalf("unlock of an unknown lock id: the metastore answers success directly, the proxy %v", err)
	}
}

// The isolation test: N committers following Iceberg's commit protocol
// (lock(EXCLUSIVE, TABLE) → get_table → alter_table with a new
// metadata_location and previous_metadata_location = the one read → unlock)
// on one table of catalog2, spread over both replicas. Every committed
// location must be reachable from the final one through previous pointers;
// with the Java proxy's grant-at-once shim (a test hook) commits are lost.
func TestIcebergCommitsOnANonDefaultCatalogAreIsolated(t *testing.T) {
	addr := e2eutil.ZooKeeper(t)
	for _, tc := range []struct {
		name     string
		hooks    app.TestHooks
		wantLoss bool
	}{{"isolated", app.TestHooks{}, false}, {"grant at once (the Java proxy's shim)", app.TestHooks{LockGrantAtOnce: true}, true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newLockEnv(t, addr, tc.hooks)
			committed, chain := icebergCommitters(t, e, 6, 3)
			t.Logf("%d commits, %d reachable through previous_metadata_location", committed, chain)
			switch {
			case !tc.wantLoss && chain != committed:
				t.Fatalf("%d of %d commits lost with isolation", committed-chain, committed)
			case tc.wantLoss && chain == committed:
				t.Fatalf("without isolation no commit was lost (%d commits): the test cannot show what isolation prevents", committed)
			}
		})
	}
}

// icebergCommitters runs workers × commits Iceberg-style commits and returns
// how many succeeded and how many of them the final metadata_location reaches.
func icebergCommitters(t *testing.T, e *lockEnv, workers, commits int) (committed, reachable int) {
	t.Helper()
	const initial = "file:/warehouse/ice/metadata/00000.metadata.json"
	tb := e2eutil.Table(e.db2, "ice")
	tb.Parameters = map[string]string{"EXTERNAL": "TRUE", "table_type": "ICEBERG", "metadata_location": initial}
	if err := e.direct2.CreateTable(e2eutil.Ctx(t), tb); err != nil {
		t.Fatal(err)
	}
	bg, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var mu sync.Mutex
	previous := map[string]string{} // what each commit wrote: its location → the one it read
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		uri := e.a.URI("primary")
		if w%2 == 1 {
			uri = e.b.URI("primary")
		}
		c := proxytest.Client(t, uri)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for k := 0; k < commits; k++ {
				loc := fmt.Sprintf("file:/warehouse/ice/metadata/w%d-%d.metadata.json", w, k)
				prev, err := icebergCommit(bg, c, e.ext2(), "ice", loc)
				if err != nil {
					errs <- fmt.Errorf("committer %d, commit %d: %w", w, k, err)
					return
				}
				mu.Lock()
				previous[loc] = prev
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	final, err := e.direct2.GetTable(e2eutil.Ctx(t), e.db2, "ice")
	if err != nil {
		t.Fatal(err)
	}
	for loc := final.Parameters["metadata_location"]; loc != initial; reachable++ {
		prev, ok := previous[loc]
		if !ok || reachable > len(previous) {
			t.Fatalf("metadata_location chain broken at %q", loc)
		}
		loc = prev
	}
	return len(previous), reachable
}

// icebergCommit is one commit of Iceberg's HiveTableOperations: an exclusive
// table lock without a transaction, polled until granted, the read of the
// current pointer, the swap, the unlock.
func icebergCommit(ctx context.Context, c *thriftgen.Client, db, tbl, loc string) (string, error) {
	lock, err := c.Lock(ctx, &thriftgen.LockRequest{User: "iceberg", Hostname: "localhost", Component: []*thriftgen.LockComponent{
		{Type: thriftgen.LockType_EXCLUSIVE, Level: thriftgen.LockLevel_TABLE, Dbname: db, Tablename: &tbl,
			OperationType: ptrTo(thriftgen.DataOperationType_NO_TXN)}}})
	if err != nil {
		return "", fmt.Errorf("lock: %w", err)
	}
	defer func() { _ = c.Unlock(ctx, &thriftgen.UnlockRequest{Lockid: lock.Lockid}) }()
	for lock.State == thriftgen.LockState_WAITING {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if lock, err = c.CheckLock(ctx, &thriftgen.CheckLockRequest{Lockid: lock.Lockid}); err != nil {
			return "", fmt.Errorf("check_lock: %w", err)
		}
	}
	if lock.State != thriftgen.LockState_ACQUIRED {
		return "", fmt.Errorf("lock %v", lock.State)
	}
	t, err := c.GetTable(ctx, db, tbl)
	if err != nil {
		return "", fmt.Errorf("get_table: %w", err)
	}
	prev := t.Parameters["metadata_location"]
	time.Sleep(30 * time.Millisecond) // the client writes its new metadata file
	t.Parameters["metadata_location"], t.Parameters["previous_metadata_location"] = loc, prev
	if err := c.AlterTable(ctx, db, tbl, t); err != nil {
		return "", fmt.Errorf("alter_table: %w", err)
	}
	return prev, nil
}

// ZooKeeper stopped mid-test: lock calls of catalog2 fail with a
// TApplicationException naming the store, the default catalog keeps working,
// /readyz shows the store unreachable (and stays READY), everything recovers
// when ZooKeeper is back, and nothing is left behind: the sweep removes
// expired locks, their index entries and empty transaction folders.
func TestLockStoreOutage(t *testing.T) {
	e2eutil.NeedHive(t)
	z := testbed.StartZooKeeperT(t)
	e := newLockEnv(t, z.Addr, app.TestHooks{}, "catalog.catalog1.conf.hive.txn.timeout=3s", "management.readiness-cache-ms=0")
	e2eutil.MkTable(t, e.direct2, e.db2, "t")
	held := e2eutil.MustLockState(t, e.ca, e2eutil.LockRequest(0, e2eutil.Comp(thriftgen.LockType_EXCLUSIVE, thriftgen.DataOperationType_NO_TXN, e.ext2(), "t")),
		thriftgen.LockState_ACQUIRED)

	if err := z.Stop(); err != nil {
		t.Fatal(err)
	}
	storeErr := func(what string, err error) {
		t.Helper()
		var ae thrift.TApplicationException
		if !errors.As(err, &ae) || !strings.Contains(ae.Error(), "ZOOKEEPER store "+z.Addr) || !strings.Contains(ae.Error(), e.znode) {
			t.Fatalf("%s with ZooKeeper down: %v, want a TApplicationException naming the store", what, err)
		}
	}
	began := time.Now()
	_, err := e.cb.Lock(e2eutil.Ctx(t), e2eutil.LockRequest(0, e2eutil.Comp(thriftgen.LockType_SHARED_READ, thriftgen.DataOperationType_SELECT, e.ext2(), "t")))
	storeErr("lock", err)
	_, err = e.ca.CheckLock(e2eutil.Ctx(t), &thriftgen.CheckLockRequest{Lockid: held.Lockid})
	storeErr("check_lock", err)
	storeErr("unlock", e.cb.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: held.Lockid}))
	if d := time.Since(began); d > 90*time.Second {
		t.Fatalf("three failing lock calls took %v", d)
	}
	// The default catalog does not need the store: its locks and
	// transactions work (the release of a transaction's synthetic locks is
	// logged and left to the sweep).
	own := e2eutil.MustLockState(t, e.ca, e2eutil.LockRequest(0, e2eutil.Comp(thriftgen.LockType_SHARED_READ, thriftgen.DataOperationType_SELECT, e.db1, "x")),
		thriftgen.LockState_ACQUIRED)
	if err := e.ca.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: own.Lockid}); err != nil {
		t.Fatal(err)
	}
	txn := openTxn(t, e.ca, "erin")
	if err := e.ca.CommitTxn(e2eutil.Ctx(t), &thriftgen.CommitTxnRequest{Txnid: txn}); err != nil {
		t.Fatalf("commit_txn of a default-catalog transaction with the store down: %v", err)
	}
	ready := readyz(t, e.a)
	if ready.Status != "READY" || ready.LockStore == nil || ready.LockStore.Reachable || ready.LockStore.Mode != "ZOOKEEPER" ||
		!strings.Contains(ready.LockStore.LastError, "ZOOKEEPER store") {
		t.Fatalf("/readyz with ZooKeeper down: %+v %+v", ready, ready.LockStore)
	}
	if n := e.a.Metric(t, locks.MetricStoreFailures, "store_mode", "zookeeper") + e.b.Metric(t, locks.MetricStoreFailures, "store_mode", "zookeeper"); n < 3 {
		t.Fatalf("%s = %v, want the failed calls counted", locks.MetricStoreFailures, n)
	}

	if err := z.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		_, err := e.cb.CheckLock(e2eutil.Ctx(t), &thriftgen.CheckLockRequest{Lockid: held.Lockid})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("check_lock did not recover after ZooKeeper came back: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if r := readyz(t, e.b); r.LockStore == nil || !r.LockStore.Reachable {
		t.Fatalf("/readyz after ZooKeeper came back: %+v", r.LockStore)
	}
	if err := e.cb.Unlock(e2eutil.Ctx(t), &thriftgen.UnlockRequest{Lockid: held.Lockid}); err != nil {
		t.Fatal(err)
	}

	// A transaction whose client went away: its lock expires (txn timeout
	// 3s) and the sweep leaves no lock, index entry or transaction folder.
	gone := openTxn(t, e.ca, "frank")
	defer func() { _ = e.direct1.AbortTxn(context.Background(), &thriftgen.AbortTxnRequest{Txnid: gone}) }()
	e2eutil.MustLockState(t, e.ca, e2eutil.LockRequest(gone, e2eutil.Comp(thriftgen.LockType_EXCLUSIVE, thriftgen.DataOperationType_INSERT, e.ext2(), "t")),
		thriftgen.LockState_ACQUIRED)
	conn := zkConn(t, z.Addr)
	if kids := zkChildren(t, conn, e.znode+"/txns"); len(kids) != 1 {
		t.Fatalf("txns/ before the sweep: %v", kids)
	}
	time.Sleep(4 * time.Second)
	res, err := e.a.Locks.Sweep(e2eutil.Ctx(t))
	if err != nil || len(res.Expired) != 1 {
		t.Fatalf("sweep: %+v %v, want the abandoned lock expired", res, err)
	}
	if kids := zkChildren(t, conn, e.znode+"/locks"); len(kids) != 0 {
		t.Fatalf("locks/ after the sweep: %v", kids)
	}
	if kids := zkChildren(t, conn, e.znode+"/txns"); len(kids) != 0 {
		t.Fatalf("txns/ after the sweep: %v", kids)
	}
	if n := e.a.Metric(t, locks.MetricActive, "store_mode", "zookeeper"); n != 0 {
		t.Fatalf("%s after the sweep = %v", locks.MetricActive, n)
	}
}

type readyzJSON struct {
	Status    string `json:"status"`
	LockStore *struct {
		Mode      string `json:"mode"`
		Store     string `json:"store"`
		Reachable bool   `json:"reachable"`
		LastError string `json:"lastError"`
	} `json:"syntheticLockStore"`
}

func readyz(t *testing.T, p *proxytest.Proxy) readyzJSON {
	t.Helper()
	resp, err := http.Get(p.ManagementURL() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r readyzJSON
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

func zkConn(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 20*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func zkChildren(t *testing.T, c *zk.Conn, path string) []string {
	t.Helper()
	var kids []string
	var err error
	for i := 0; i < 20; i++ {
		if kids, _, err = c.Children(path); err == nil || errors.Is(err, zk.ErrNoNode) {
			return kids
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("ZooKeeper children of %s: %v", path, err)
	return nil
}

// HiveServer2's INSERT into a non-ACID table of catalog2, made by a real Hive
// 3.1.3 HiveMetaStoreClient (testdata/Hs2Insert.java: open_txns, lock with the
// _dummy_database source, check_lock, heartbeat, add_partition, commit_txn)
// through two replicas: the lock is the shim's, a second writer through the
// other replica waits until commit_txn releases the first.
func TestHiveServer2InsertIntoANonDefaultCatalogWithTheJavaClient(t *testing.T) {
	e := newLockEnv(t, e2eutil.ZooKeeper(t), app.TestHooks{})
	e2eutil.AdPartitioned(t, e.direct2, e.db2, "sales")
	lines := e2eutil.RunJavaFile(t, testbed.Hive313, nil, "Hs2Insert.java", e.a.URI("primary"), e.b.URI("primary"), e.ext2(), "sales")
	var steps []string
	for _, l := range lines {
		if strings.HasPrefix(l, "step ") || strings.HasPrefix(l, "unexpected ") {
			steps = append(steps, l)
		}
	}
	if len(steps) == 0 || steps[len(steps)-1] != "step done ok" {
		t.Fatalf("Java client:\n%s", strings.Join(steps, "\n"))
	}
	t.Logf("Java client steps:\n%s", strings.Join(steps, "\n"))
	var lockID int64
	for _, s := range steps {
		if v, ok := strings.CutPrefix(s, "step lockid "); ok {
			lockID, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if !locks.IsShimLockID(lockID) {
		t.Fatalf("the INSERT's lock id %d is not the shim's", lockID)
	}
	if parts, err := e.direct2.GetPartitionNames(e2eutil.Ctx(t), e.db2, "sales", -1); err != nil || strings.Join(parts, ",") != "p=1" {
		t.Fatalf("catalog2's metastore has partitions %v %v, want p=1", parts, err)
	}
	if held := e2eutil.BackendLocks(t, e.direct2, e.db2); len(held) != 0 {
		t.Fatalf("catalog2's metastore holds locks: %+v", held)
	}
	if n := e.b.Metric(t, locks.MetricEvents, "operation", "release_txn", "catalog", "catalog2", "result", "ok") +
		e.a.Metric(t, locks.MetricEvents, "operation", "release_txn", "catalog", "catalog2", "result", "ok"); n != 2 {
		t.Fatalf("release_txn events = %v, want 2 (commit of the writer, abort of the second)", n)
	}
}

// A real Iceberg client: PyIceberg's Hive catalog creates a table in catalog2
// through the proxy, commits three appends (each under its EXCLUSIVE table
// lock, which PyIceberg sends with isTransactional=true and no transaction:
// a plain lock for the shim) and reads every row back; catalog2 is a Hive
// 3.1.3 metastore, then a Hive 4.1 one. PyIceberg's Table is Hive 4's, with
// writeId=-1 (its IDL default) set: the compatibility guard drops it for the
// 3.1.3 backend, which has no such field, and nothing is lost.
func TestPyIcebergCommitsToANonDefaultCatalog(t *testing.T) {
	py := e2eutil.PyIceberg(t)
	for _, backend := range []struct {
		name  string
		ms    *testbed.Metastore
		extra []string
	}{{"hive-3.1.3", e2eutil.HMS2, nil}, {"hive-4.1.0", e2eutil.HMS4, []string{"catalog.catalog2.runtime-profile=APACHE_4_1_0"}}} {
		t.Run(backend.name, func(t *testing.T) {
			pyIcebergCommits(t, py, newLockEnvOn(t, backend.ms, e2eutil.ZooKeeper(t), app.TestHooks{}, backend.extra...))
		})
	}
}

func pyIcebergCommits(t *testing.T, py string, e *lockEnv) {
	warehouse := "file://" + t.TempDir()
	run, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(run, py, e2eutil.Testdata("pyiceberg_commits.py"), e.a.URI("primary"), e.ext2(), warehouse, "3")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var steps []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var s map[string]any
		if json.Unmarshal([]byte(l), &s) == nil {
			steps = append(steps, s)
		}
	}
	if err != nil || len(steps) == 0 || steps[len(steps)-1]["step"] != "done" {
		tail := stderr.String()
		if len(tail) > 3000 {
			tail = tail[len(tail)-3000:]
		}
		t.Fatalf("PyIceberg: %v\n%s\nstderr tail:\n%s", err, out, tail)
	}
	t.Logf("PyIceberg steps:\n%s", out)
	read := steps[len(steps)-2]
	if fmt.Sprint(read["ids"]) != "[1 2 11 12 21 22]" || read["snapshots"] != float64(3) {
		t.Fatalf("read back %v in %v snapshots, want the six rows of three commits", read["ids"], read["snapshots"])
	}
	got, err := e.direct2.GetTableReq(e2eutil.Ctx(t), &thriftgen.GetTableRequest{DbName: e.db2, TblName: "events"}) // Hive 4 has no positional get_table; 3.1.3 has both
	if err != nil {
		t.Fatal(err)
	}
	if p := got.Table.Parameters; p["metadata_location"] != read["metadata_location"] || p["previous_metadata_location"] == "" {
		t.Fatalf("catalog2's metastore has %+v", p)
	}
	if n := e.a.Metric(t, locks.MetricEvents, "operation", "unlock", "catalog", "catalog2", "result", "ok"); n < 3 {
		t.Fatalf("the commits' locks were not the shim's: %v unlocks", n)
	}
	if held := e2eutil.BackendLocks(t, e.direct2, e.db2); len(held) != 0 {
		t.Fatalf("catalog2's metastore holds locks: %+v", held)
	}
}
