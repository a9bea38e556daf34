package ha

import (
	"context"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/locks"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Issue 20, item 7: a replica SIGKILLed in the middle of a lock call. The
// call is a HiveServer2-style combined lock (one transaction, a component
// of the default catalog and the EXCLUSIVE lock of a catalog2 table): the
// shim part is taken in ZooKeeper, then the replica waits for the default
// catalog's part at catalog1's metastore, which the test has frozen, so the
// replica is killed at a known point: its lock is in the store and its
// client never got the answer. Another writer of the catalog2 table (an
// Iceberg commit lock, no transaction) through the balancer must be granted
// once ZooKeeper has expired the dead replica's session, not after the lock
// timeout (hive.txn.timeout, 300 s here): the stall is bounded by the session
// timeout plus a few seconds (before: 39-45 s with a 30 s lock timeout).
func TestLockOfAReplicaKilledMidCallEndsWithItsSession(t *testing.T) {
	needHive(t)
	const session = 6 * time.Second
	zk := zooKeeper(t)
	c := startCluster(t, zk, map[string]string{
		"synthetic-read-lock.store.zookeeper.session-timeout-ms": "6000",
	})
	db2, tbl2 := lockTable(t) // catalog2__<db>.events
	db1 := uniq("midlock")
	direct1 := proxytest.Client(t, hms1.URI)
	if err := direct1.CreateDatabase(ctx(t), &thriftgen.Database{Name: db1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = direct1.DropDatabase(context.Background(), db1, true, true) })

	victim := c.Replicas[0]
	hs2 := proxytest.Client(t, victim.URI())
	txn, err := hs2.OpenTxns(ctx(t), &thriftgen.OpenTxnRequest{NumTxns: 1, User: "hive", Hostname: "hs2.example.com"})
	if err != nil || len(txn.TxnIds) != 1 {
		t.Fatalf("open_txns: %v %v", txn, err)
	}
	txnID := txn.TxnIds[0]
	t.Cleanup(func() { _ = direct1.AbortTxn(context.Background(), &thriftgen.AbortTxnRequest{Txnid: txnID}) })
	f := false
	table2 := tbl2
	combined := &thriftgen.LockRequest{User: "hive", Hostname: "hs2.example.com", Txnid: &txnID, Component: []*thriftgen.LockComponent{
		{Type: thriftgen.LockType_SHARED_READ, Level: thriftgen.LockLevel_DB, Dbname: db1, IsTransactional: &f},
		{Type: thriftgen.LockType_EXCLUSIVE, Level: thriftgen.LockLevel_TABLE, Dbname: db2, Tablename: &table2, IsTransactional: &f},
	}}
	acquired := func(r interface {
		Metric(string, ...string) (float64, error)
	}) float64 {
		n, err := r.Metric(locks.MetricEvents, "operation", locks.OpAcquire, "catalog", "catalog2", "result", locks.ResultAcquired)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	resume := pause(t, hms1)
	go func() { _, _ = hs2.Lock(context.Background(), combined) }() // never answered
	// The event: the victim has taken the shim part (it counts the
	// acquire before it asks catalog1's frozen metastore for the rest).
	for deadline := time.Now().Add(time.Minute); acquired(victim) < 1; {
		if time.Now().After(deadline) {
			t.Fatal("the victim did not take the shim part of the combined lock within a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	resume()

	// An Iceberg commit's lock of the same table through the balancer.
	iceberg := proxytest.Client(t, c.URI())
	commit := &thriftgen.LockRequest{User: "spark", Hostname: "spark.example.com", Component: []*thriftgen.LockComponent{
		{Type: thriftgen.LockType_EXCLUSIVE, Level: thriftgen.LockLevel_TABLE, Dbname: db2, Tablename: &table2, IsTransactional: &f}}}
	resp, err := iceberg.Lock(ctx(t), commit)
	if err != nil {
		t.Fatalf("the second writer's lock: %v", err)
	}
	bound := session + 15*time.Second
	for resp.State != thriftgen.LockState_ACQUIRED {
		if resp.State != thriftgen.LockState_WAITING {
			t.Fatalf("the second writer's lock: %v", resp)
		}
		if time.Since(killed) > bound {
			t.Fatalf("the writer of %s.%s still waits %v after the replica holding an unanswered lock was killed (session timeout %v)",
				db2, tbl2, time.Since(killed).Round(time.Millisecond), session)
		}
		time.Sleep(250 * time.Millisecond) // a client's poll of check_lock
		if resp, err = iceberg.CheckLock(ctx(t), &thriftgen.CheckLockRequest{Lockid: resp.Lockid}); err != nil {
			t.Fatalf("check_lock: %v", err)
		}
	}
	t.Logf("the second writer was granted %v after SIGKILL of the replica mid-lock (ZooKeeper session timeout %v, lock timeout 300 s)",
		time.Since(killed).Round(time.Millisecond), session)
	orphans := 0.0
	for _, r := range c.Replicas[1:] {
		n, err := r.Metric(locks.MetricEvents, "operation", locks.OpCleanup, "result", locks.ResultOrphan)
		if err != nil {
			t.Fatal(err)
		}
		orphans += n
	}
	if orphans != 1 {
		t.Errorf("the survivors removed %v orphan locks, want 1 (the victim's)", orphans)
	}
	if err := iceberg.Unlock(ctx(t), &thriftgen.UnlockRequest{Lockid: resp.Lockid}); err != nil {
		t.Fatal(err)
	}
}
