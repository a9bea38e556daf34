package locks

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

func TestZooKeeperOptionsAreChecked(t *testing.T) {
	for cs, want := range map[string]string{
		"":                        "connect-string is empty",
		"zk1":                     `server "zk1" is not host:port`,
		"zk1:2181,zk2":            `server "zk2" is not host:port`,
		"zk1:99999":               "no valid port",
		"zk1:2181/chroot/":        "chroot",
		"zk1:2181,zk2:2181/a//b":  "chroot",
		"zk1:2181/ok,zk2:2181/no": "chroot",
	} {
		_, err := NewZooKeeperStore(ZooKeeperOptions{ConnectString: cs})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("connect string %q: %v, want an error containing %q", cs, err, want)
		}
	}
	for _, bad := range []ZooKeeperOptions{
		{ConnectString: "127.0.0.1:1", Znode: "relative"},
		{ConnectString: "127.0.0.1:1", Znode: "/trailing/"},
		{ConnectString: "127.0.0.1:1", MaxRetries: -1},
		{ConnectString: "127.0.0.1:1", BaseSleep: -time.Second},
		{ConnectString: "127.0.0.1:1", SessionTimeout: -time.Second},
	} {
		if _, err := NewZooKeeperStore(bad); err == nil || !strings.Contains(err.Error(), "synthetic-read-lock.store.zookeeper.") {
			t.Errorf("%+v: %v, want an error naming the key", bad, err)
		}
	}
}

// TestZooKeeperOutage stops and pauses a real ZooKeeper under a shim: calls fail
// with an error naming the store, recover when it is back, and leave nothing behind.
func TestZooKeeperOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts its own ZooKeeper")
	}
	z := testbed.StartZooKeeperT(t)
	if err := warmUp(z.Addr); err != nil {
		t.Fatal(err)
	}
	goroutines := runtime.NumGoroutine()
	o := zkOptions(t, z.Addr)
	o.ConnectionTimeout = 2 * time.Second
	st, err := NewZooKeeperStore(o)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := newTestMetrics()
	s, err := New(Options{Store: st, Rules: RulesHive4, SweepInterval: -1, Metrics: m, TxnTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	write := func() *thriftgen.LockRequest { return lockReq(0, comp(EX, opInsert, "sales", "orders", "")) }
	held := mustLock(t, s, part("cat2", write()))
	if held.State != thriftgen.LockState_ACQUIRED {
		t.Fatal(held.State)
	}
	wantStoreError := func(what string, err error, within time.Duration, started time.Time) {
		t.Helper()
		var se *StoreError
		if !errors.As(err, &se) {
			t.Fatalf("%s with ZooKeeper down: %v (%T), want a *StoreError", what, err, err)
		}
		if !strings.Contains(err.Error(), "ZOOKEEPER store "+z.Addr) || !strings.Contains(err.Error(), o.Znode) {
			t.Fatalf("%s: error %q does not name the store", what, err)
		}
		if d := time.Since(started); d > within {
			t.Fatalf("%s took %v to fail, want at most %v", what, d, within)
		}
	}

	// stopped: nothing listens
	if err := z.Stop(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	_, err = s.Lock(ctx, part("cat2", write()))
	wantStoreError("lock", err, 20*time.Second, began)
	began = time.Now()
	_, err = s.CheckLock(ctx, held.Lockid)
	wantStoreError("check_lock", err, 20*time.Second, began)
	began = time.Now()
	wantStoreError("unlock", s.Unlock(ctx, held.Lockid), 20*time.Second, began)
	began = time.Now()
	wantStoreError("ping", s.Ping(ctx), 10*time.Second, began)
	if got := testutil.ToFloat64(m.failures.WithLabelValues(OpAcquire, labelZooKeeper, "ConnectionLossException")); got != 1 {
		t.Fatalf("store failures{acquire, ConnectionLossException} = %v, want 1", got)
	}

	// back, with its data: the held lock is still there and still exclusive
	if err := z.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "check_lock after ZooKeeper came back", func() error {
		_, err := s.CheckLock(ctx, held.Lockid)
		return err
	})
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("ping after ZooKeeper came back: %v", err)
	}
	waiter := mustLock(t, s, part("cat2", write()))
	if waiter.State != thriftgen.LockState_WAITING {
		t.Fatalf("a second writer after the restart: %v, want WAITING behind the lock taken before", waiter.State)
	}
	if err := s.Unlock(ctx, held.Lockid); err != nil {
		t.Fatal(err)
	}
	if st := mustCheck(t, s, waiter.Lockid); st != thriftgen.LockState_ACQUIRED {
		t.Fatal(st)
	}
	if err := s.Unlock(ctx, waiter.Lockid); err != nil {
		t.Fatal(err)
	}

	// paused: connections stay open and nothing answers
	if err := z.Pause(); err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	_, err = s.Lock(ctx, part("cat2", write()))
	wantStoreError("lock while paused", err, 15*time.Second, began)
	if !strings.Contains(err.Error(), "connection-timeout-ms") {
		t.Fatalf("error %q does not say it timed out", err)
	}
	if err := z.Resume(); err != nil {
		t.Fatal(err)
	}
	var again *thriftgen.LockResponse
	waitFor(t, time.Minute, "lock after ZooKeeper resumed", func() error {
		var err error
		again, err = s.Lock(ctx, part("cat2", write()))
		return err
	})
	if again.State != thriftgen.LockState_ACQUIRED {
		t.Fatalf("lock after resume: %v: the lock given up on while paused still blocks", again.State)
	}
	if err := s.Unlock(ctx, again.Lockid); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "no lock node left", func() error {
		if _, err := s.Sweep(ctx); err != nil {
			return err
		}
		left, err := st.List(ctx, 0)
		if err != nil {
			return err
		}
		if len(left) != 0 {
			return fmt.Errorf("%d lock nodes left, first %s", len(left), left[0].describe())
		}
		return nil
	})
	_ = s.Close()
	_ = st.Close()
	waitFor(t, 30*time.Second, "goroutines back to where they were", func() error {
		if n := runtime.NumGoroutine(); n > goroutines+2 {
			return fmt.Errorf("%d goroutines, %d before the store was opened", n, goroutines)
		}
		return nil
	})
}

func waitFor(t *testing.T, limit time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %v: %v", what, limit, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestZooKeeperSweepTidies: the sweep removes index entries whose lock is gone,
// empty transaction folders and expired nodes it cannot read (an older proxy's
// format), and keeps what is alive.
func TestZooKeeperSweepTidies(t *testing.T) {
	if testing.Short() {
		t.Skip("needs ZooKeeper")
	}
	addr := zooKeeperAddr(t)
	o := zkOptions(t, addr)
	st := newZKStore(t, o)
	s := newShim(t, st, RulesHive3, withTimeout(time.Second))
	ctx := context.Background()
	live := mustLock(t, s, part("cat2", lockReq(77, comp(SR, opSelect, "sales", "orders", ""))))

	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkLogger{st.log}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	epoch, _, _ := splitID(live.Lockid)
	acl := zk.WorldACL(zk.PermAll)
	mustCreate := func(p string, data []byte) {
		if _, err := conn.Create(p, data, 0, acl); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	mustCreate(st.txnsPath+"/555", nil)
	mustCreate(st.txnsPath+fmt.Sprintf("/555/%d", makeID(epoch, 123456)), nil)   // its lock is gone
	mustCreate(st.txnsPath+"/556", nil)                                          // empty
	mustCreate(st.locksPath+"/lock-0000999999", []byte(`lockId=5;db=x;table=y`)) // not our format
	ids, err := st.TxnLocks(ctx, 555)
	if err != nil || len(ids) != 1 {
		t.Fatalf("index of 555 before the sweep: %v %v", ids, err)
	}
	time.Sleep(1500 * time.Millisecond)
	if err := s.Heartbeat(ctx, 0, 77); err != nil { // the live lock's transaction heartbeats
		t.Fatal(err)
	}
	res, err := s.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Expired) != 0 || res.Foreign != 1 || res.OrphanIndex != 1 || res.EmptyTxns != 2 || res.Active != 1 {
		t.Fatalf("sweep: %+v; want 0 expired, 1 foreign, 1 orphan index entry, 2 empty txn folders, 1 active", res)
	}
	for _, p := range []string{st.txnsPath + "/555", st.txnsPath + "/556", st.locksPath + "/lock-0000999999"} {
		if ok, _, err := conn.Exists(p); err != nil || ok {
			t.Fatalf("%s still there after the sweep (%v)", p, err)
		}
	}
	if ok, _, _ := conn.Exists(st.indexPath(77, live.Lockid)); !ok {
		t.Fatal("the live lock's index entry was removed")
	}
	// a commit of a txn that took no shim lock costs one getChildren answering NoNode
	if ids, err := st.TxnLocks(ctx, 4242); err != nil || ids != nil {
		t.Fatalf("txn without locks: %v %v", ids, err)
	}
}

// TestZooKeeperLayout checks the znodes a lock leaves, under a chroot of the connect string.
func TestZooKeeperLayout(t *testing.T) {
	if testing.Short() {
		t.Skip("needs ZooKeeper")
	}
	addr := zooKeeperAddr(t)
	chroot := fmt.Sprintf("/locks-test/chroot-%d", znodeCounter.Add(1))
	o := DefaultZooKeeperOptions(addr + chroot)
	o.ConnectionTimeout = 10 * time.Second
	st := newZKStore(t, o)
	s := newShim(t, st, RulesHive3)
	resp := mustLock(t, s, part("cat2", lockReq(31, comp(SR, opNoTxn, "sales", "", ""))))
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkLogger{st.log}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	base := chroot + DefaultZnode
	locks, _, err := conn.Children(base + "/locks")
	if err != nil || len(locks) != 1 || !strings.HasPrefix(locks[0], "lock-") || len(locks[0]) != len("lock-")+10 {
		t.Fatalf("%s/locks: %v %v, want one lock-<10 digits>", base, locks, err)
	}
	data, _, err := conn.Get(base + "/locks/" + locks[0])
	if err != nil || !strings.Contains(string(data), `"db":"sales"`) || !strings.Contains(string(data), `"txnid":31`) {
		t.Fatalf("lock record %s: %s %v", locks[0], data, err)
	}
	entries, _, err := conn.Children(base + "/txns/31")
	if err != nil || len(entries) != 1 || entries[0] != fmt.Sprint(resp.Lockid) {
		t.Fatalf("%s/txns/31: %v %v, want [%d]", base, entries, err, resp.Lockid)
	}
	if err := s.ReleaseTxn(context.Background(), 31); err != nil {
		t.Fatal(err)
	}
	if locks, _, _ := conn.Children(base + "/locks"); len(locks) != 0 {
		t.Fatalf("after release: %v", locks)
	}
}
