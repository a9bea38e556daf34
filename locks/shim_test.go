package locks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

const (
	SR = thriftgen.LockType_SHARED_READ
	SW = thriftgen.LockType_SHARED_WRITE
	EW = thriftgen.LockType_EXCL_WRITE
	EX = thriftgen.LockType_EXCLUSIVE

	opSelect = thriftgen.DataOperationType_SELECT
	opInsert = thriftgen.DataOperationType_INSERT
	opNoTxn  = thriftgen.DataOperationType_NO_TXN
)

// TestCompatibility takes a first lock, then a second one, and checks the
// second's answer against TxnHandler's table in both Hive variants.
func TestCompatibility(t *testing.T) {
	type c = *thriftgen.LockComponent
	tbl := func(lt thriftgen.LockType, db, table string) c { return comp(lt, opInsert, db, table, "") }
	prt := func(lt thriftgen.LockType, p string) c { return comp(lt, opNoTxn, "sales", "orders", p) }
	dbl := func(lt thriftgen.LockType, db string) c { return comp(lt, opNoTxn, db, "", "") }
	const (
		A = thriftgen.LockState_ACQUIRED
		W = thriftgen.LockState_WAITING
	)
	cases := []struct {
		name          string
		first, second c
		catalog2      string // catalog of the second lock ("" = cat2)
		sameTxn       bool
		hive3, hive4  thriftgen.LockState
	}{
		{"two reads of a table share", tbl(SR, "sales", "orders"), tbl(SR, "sales", "orders"), "", false, A, A},
		{"a read waits for an exclusive table lock", tbl(EX, "sales", "orders"), tbl(SR, "sales", "orders"), "", false, W, W},
		{"an exclusive lock waits for a read", tbl(SR, "sales", "orders"), tbl(EX, "sales", "orders"), "", false, W, W},
		{"two exclusive locks of a table", tbl(EX, "sales", "orders"), tbl(EX, "sales", "orders"), "", false, W, W},
		{"database read passes a table's exclusive lock", tbl(EX, "sales", "orders"), dbl(SR, "sales"), "", false, A, A},
		{"table exclusive passes a database read (CREATE TABLE's lock)", dbl(SR, "sales"), tbl(EX, "sales", "orders"), "", false, A, A},
		{"partition exclusive passes a database read", dbl(SR, "sales"), prt(EX, "d=1"), "", false, A, A},
		{"exclusive on another partition", prt(EX, "d=1"), prt(EX, "d=2"), "", false, A, A},
		{"exclusive on the same partition", prt(EX, "d=1"), prt(EX, "d=1"), "", false, W, W},
		{"table read waits for a partition's exclusive lock", prt(EX, "d=1"), tbl(SR, "sales", "orders"), "", false, W, W},
		{"a table read waits for a database exclusive lock", dbl(EX, "sales"), tbl(SR, "sales", "orders"), "", false, W, W},
		{"DROP DATABASE waits for a table read", tbl(SR, "sales", "orders"), dbl(EX, "sales"), "", false, W, W},
		{"another table", tbl(EX, "sales", "orders"), tbl(EX, "sales", "items"), "", false, A, A},
		{"another database", tbl(EX, "sales", "orders"), tbl(EX, "hr", "orders"), "", false, A, A},
		{"same names in another catalog", tbl(EX, "sales", "orders"), tbl(EX, "sales", "orders"), "cat3", false, A, A},
		{"names compare as Hive stores them (lower case)", tbl(EX, "Sales", "ORDERS"), tbl(SR, "sales", "orders"), "", false, W, W},
		{"locks of one transaction do not conflict", tbl(EX, "sales", "orders"), tbl(EX, "sales", "orders"), "", true, A, A},
		{"two shared writes: Hive 3 serializes, Hive 4 shares", tbl(SW, "sales", "orders"), tbl(SW, "sales", "orders"), "", false, W, A},
		{"shared write and read share", tbl(SW, "sales", "orders"), tbl(SR, "sales", "orders"), "", false, A, A},
		{"shared write waits for exclusive", tbl(EX, "sales", "orders"), tbl(SW, "sales", "orders"), "", false, W, W},
		{"excl_write after a read: Hive 4 shares, Hive 3 holds it as exclusive", tbl(SR, "sales", "orders"), tbl(EW, "sales", "orders"), "", false, W, A},
		{"excl_write waits for a shared write", tbl(SW, "sales", "orders"), tbl(EW, "sales", "orders"), "", false, W, W},
		{"shared write waits for excl_write", tbl(EW, "sales", "orders"), tbl(SW, "sales", "orders"), "", false, W, W},
	}
	for _, rules := range []Rules{RulesHive3, RulesHive4} {
		for _, tc := range cases {
			t.Run(rules.String()+"/"+tc.name, func(t *testing.T) {
				s := newShim(t, NewMemoryStore(), rules)
				first := mustLock(t, s, part("cat2", lockReq(10, tc.first)))
				if first.State != thriftgen.LockState_ACQUIRED {
					t.Fatalf("first lock: %v, want ACQUIRED", first.State)
				}
				txn, cat := int64(11), "cat2"
				if tc.sameTxn {
					txn = 10
				}
				if tc.catalog2 != "" {
					cat = tc.catalog2
				}
				second := mustLock(t, s, part(cat, lockReq(txn, tc.second)))
				want := tc.hive4
				if rules == RulesHive3 {
					want = tc.hive3
				}
				if second.State != want {
					t.Fatalf("second lock: %v, want %v", second.State, want)
				}
				if want == thriftgen.LockState_WAITING {
					// granted once the first is gone, on the next check_lock
					if err := s.ReleaseTxn(context.Background(), 10); err != nil {
						t.Fatal(err)
					}
					if st := mustCheck(t, s, second.Lockid); st != thriftgen.LockState_ACQUIRED {
						t.Fatalf("after the first lock's transaction ended: %v, want ACQUIRED", st)
					}
				}
			})
		}
	}
}

// TestArrivalOrder: a waiting writer is not overtaken by later readers, and
// waiters are granted in the order they came.
func TestArrivalOrder(t *testing.T) {
	for _, sp := range storePairs(t) {
		t.Run(sp.name, func(t *testing.T) {
			a := newShim(t, sp.a, RulesHive4, withInstance("a"))
			b := newShim(t, sp.b, RulesHive4, withInstance("b"))
			read := func() *thriftgen.LockRequest { return lockReq(0, comp(SR, opSelect, "sales", "orders", "")) }
			write := lockReq(0, comp(EX, opInsert, "sales", "orders", ""))
			r1 := mustLock(t, a, part("cat2", read()))
			w := mustLock(t, b, part("cat2", write))
			r2 := mustLock(t, a, part("cat2", read()))
			if r1.State != thriftgen.LockState_ACQUIRED || w.State != thriftgen.LockState_WAITING ||
				r2.State != thriftgen.LockState_WAITING {
				t.Fatalf("read, write, read: %v %v %v; want ACQUIRED WAITING WAITING (the second read queues behind the writer)",
					r1.State, w.State, r2.State)
			}
			if !(r1.Lockid < w.Lockid && w.Lockid < r2.Lockid) {
				t.Fatalf("ids do not follow arrival: %d %d %d", r1.Lockid, w.Lockid, r2.Lockid)
			}
			if err := b.Unlock(context.Background(), r1.Lockid); err != nil {
				t.Fatal(err)
			}
			if st := mustCheck(t, a, r2.Lockid); st != thriftgen.LockState_WAITING {
				t.Fatalf("second read checked before the writer: %v, want WAITING", st)
			}
			if st := mustCheck(t, a, w.Lockid); st != thriftgen.LockState_ACQUIRED {
				t.Fatalf("writer: %v, want ACQUIRED", st)
			}
			if st := mustCheck(t, b, r2.Lockid); st != thriftgen.LockState_WAITING {
				t.Fatalf("second read while the writer holds: %v, want WAITING", st)
			}
			if err := a.Unlock(context.Background(), w.Lockid); err != nil {
				t.Fatal(err)
			}
			if st := mustCheck(t, b, r2.Lockid); st != thriftgen.LockState_ACQUIRED {
				t.Fatalf("second read after the writer: %v, want ACQUIRED", st)
			}
		})
	}
}

// TestLifecycle walks lock → check → heartbeat → unlock / release through two
// shim instances (the same store in memory; two ZooKeeper clients on one znode).
func TestLifecycle(t *testing.T) {
	for _, sp := range storePairs(t) {
		t.Run(sp.name, func(t *testing.T) {
			ctx := context.Background()
			m, _ := newTestMetrics()
			a := newShim(t, sp.a, RulesHive3, withInstance("proxy-a"), withMetrics(m))
			b := newShim(t, sp.b, RulesHive3, withInstance("proxy-b"), withMetrics(m))
			mode := a.mode

			// HiveServer2's INSERT into a non-ACID table of catalog cat2, in txn 101
			ins := mustLock(t, a, part("cat2", lockReq(101, comp(EX, opInsert, "sales", "orders", ""))))
			if ins.State != thriftgen.LockState_ACQUIRED || !a.Owns(ins.Lockid) || !b.Owns(ins.Lockid) {
				t.Fatalf("insert lock: %+v (owned: %v)", ins, a.Owns(ins.Lockid))
			}
			if a.Owns(12345) {
				t.Fatal("a backend lock id is claimed by the shim")
			}
			// the next statement reaches replica b
			if st := mustCheck(t, b, ins.Lockid); st != thriftgen.LockState_ACQUIRED {
				t.Fatalf("check through b: %v", st)
			}
			sel := mustLock(t, b, part("cat2", lockReq(102, comp(SR, opSelect, "sales", "orders", ""))))
			if sel.State != thriftgen.LockState_WAITING {
				t.Fatalf("select during the insert: %v, want WAITING", sel.State)
			}
			if err := a.Heartbeat(ctx, 0, 101); err != nil { // HiveServer2 heartbeats the txn with lockid 0
				t.Fatal(err)
			}
			if err := b.Heartbeat(ctx, ins.Lockid, 101); err != nil {
				t.Fatal(err)
			}
			var txnOpen *thriftgen.TxnOpenException
			if err := b.Unlock(ctx, ins.Lockid); !errors.As(err, &txnOpen) {
				t.Fatalf("unlock of a granted txn lock: %v, want TxnOpenException", err)
			}
			if err := b.ReleaseTxn(ctx, 101); err != nil { // commit_txn 101 succeeded in the default catalog
				t.Fatal(err)
			}
			var nsl *thriftgen.NoSuchLockException
			if _, err := a.CheckLock(ctx, ins.Lockid); !errors.As(err, &nsl) {
				t.Fatalf("check of a released lock: %v, want NoSuchLockException", err)
			}
			if st := mustCheck(t, a, sel.Lockid); st != thriftgen.LockState_ACQUIRED {
				t.Fatalf("select after the commit: %v", st)
			}
			// Iceberg-style lock without a transaction: waits, then is unlocked while waiting
			ice := mustLock(t, a, part("cat2", lockReq(0, comp(EX, opNoTxn, "sales", "orders", ""))))
			if ice.State != thriftgen.LockState_WAITING {
				t.Fatalf("exclusive lock during the select: %v", ice.State)
			}
			if err := b.Unlock(ctx, ice.Lockid); err != nil {
				t.Fatalf("unlock of a waiting lock: %v", err)
			}
			if err := a.ReleaseTxn(ctx, 102); err != nil {
				t.Fatal(err)
			}
			if err := a.ReleaseTxn(ctx, 999); err != nil {
				t.Fatalf("release of a txn without shim locks: %v", err)
			}
			left, err := sp.a.List(ctx, 0)
			if err != nil || len(left) != 0 {
				t.Fatalf("locks left: %v %v", left, err)
			}
			ids, err := sp.b.TxnLocks(ctx, 101)
			if err != nil || len(ids) != 0 {
				t.Fatalf("txn index of 101 after release: %v %v", ids, err)
			}
			if got := testutil.ToFloat64(m.active.WithLabelValues(mode)); got != 0 {
				t.Fatalf("%s = %v after every lock was released, want 0", MetricActive, got)
			}
			if got := testutil.ToFloat64(m.handoffs.WithLabelValues(OpCheckLock, "cat2", mode)); got != 2 {
				t.Fatalf("check_lock handoffs = %v, want 2 (b checked a's lock, a checked b's)", got)
			}
			if got := testutil.ToFloat64(m.handoffs.WithLabelValues(OpReleaseTxn, "cat2", mode)); got != 2 {
				t.Fatalf("release_txn handoffs = %v, want 2 (each released the other's lock)", got)
			}
			if got := testutil.ToFloat64(m.events.WithLabelValues(OpAcquire, "cat2", mode, ResultWaiting)); got != 2 {
				t.Fatalf("acquire/waiting events = %v, want 2", got)
			}
			if got := testutil.ToFloat64(m.events.WithLabelValues(OpUnlock, "cat2", mode, ResultTxnOpen)); got != 1 {
				t.Fatalf("unlock/txn_open events = %v, want 1", got)
			}
			if got := testutil.ToFloat64(m.info.WithLabelValues(mode)); got != 1 {
				t.Fatalf("%s{store_mode=%q} = %v", MetricStoreInfo, mode, got)
			}
		})
	}
}

// TestUnknownIDs: an id nobody issued is NoSuchLockException, never another client's lock.
func TestUnknownIDs(t *testing.T) {
	for _, sp := range storePairs(t) {
		t.Run(sp.name, func(t *testing.T) {
			ctx := context.Background()
			s := newShim(t, sp.a, RulesHive4)
			mine := mustLock(t, s, part("cat2", lockReq(0, comp(SR, opSelect, "sales", "orders", ""))))
			epoch, seq, _ := splitID(mine.Lockid)
			others := []int64{
				makeID(epoch^1, seq),   // same sequence, another store's (or an earlier start's) epoch
				makeID(epoch, seq+1),   // not issued yet
				makeID(epoch, 1<<31+5), // beyond any ZooKeeper sequence
				idFlag | 7,
			}
			for _, id := range others {
				var nsl *thriftgen.NoSuchLockException
				if _, err := s.CheckLock(ctx, id); !errors.As(err, &nsl) {
					t.Fatalf("check_lock %d: %v, want NoSuchLockException", id, err)
				}
				if !strings.Contains(nsl.Message, "lockid:") {
					t.Fatalf("message %q does not name the lock", nsl.Message)
				}
				if err := s.Unlock(ctx, id); !errors.As(err, &nsl) {
					t.Fatalf("unlock %d: %v, want NoSuchLockException", id, err)
				}
				if err := s.Heartbeat(ctx, id, 0); !errors.As(err, &nsl) {
					t.Fatalf("heartbeat %d: %v, want NoSuchLockException", id, err)
				}
			}
			if err := s.Heartbeat(ctx, 42, 0); err != nil {
				t.Fatalf("heartbeat of a backend lock id: %v (the shim has nothing to say about it)", err)
			}
			if st := mustCheck(t, s, mine.Lockid); st != thriftgen.LockState_ACQUIRED {
				t.Fatalf("own lock after the probes: %v", st)
			}
		})
	}
}

// TestExpiry: heartbeats (of the lock, of its transaction, check_lock) keep
// locks alive; the sweep removes the rest, after which their waiters are granted.
func TestExpiry(t *testing.T) {
	for _, sp := range storePairs(t) {
		t.Run(sp.name, func(t *testing.T) {
			ctx := context.Background()
			clock := newFakeClock()
			m, _ := newTestMetrics()
			a := newShim(t, sp.a, RulesHive4, withClock(clock), withTimeout(10*time.Minute), withMetrics(m))
			b := newShim(t, sp.b, RulesHive4, withClock(clock), withTimeout(10*time.Minute), withMetrics(m))
			viaLock := mustLock(t, a, part("cat2", lockReq(0, comp(SR, opSelect, "sales", "a", ""))))
			viaTxn := mustLock(t, a, part("cat2", lockReq(7, comp(SR, opSelect, "sales", "b", ""))))
			viaCheck := mustLock(t, a, part("cat2", lockReq(0, comp(SR, opSelect, "sales", "c", ""))))
			dead := mustLock(t, a, part("cat2", lockReq(8, comp(EX, opInsert, "sales", "d", ""))))
			waiter := mustLock(t, b, part("cat2", lockReq(9, comp(EX, opInsert, "sales", "d", ""))))
			if waiter.State != thriftgen.LockState_WAITING {
				t.Fatalf("waiter: %v", waiter.State)
			}
			for step := 0; step < 3; step++ {
				clock.Advance(6 * time.Minute)
				if err := b.Heartbeat(ctx, viaLock.Lockid, 0); err != nil {
					t.Fatal(err)
				}
				if err := b.Heartbeat(ctx, 0, 7); err != nil {
					t.Fatal(err)
				}
				if st := mustCheck(t, b, viaCheck.Lockid); st != thriftgen.LockState_ACQUIRED {
					t.Fatal(st)
				}
				wantWaiter := thriftgen.LockState_WAITING // the dead lock is not swept yet
				if step == 2 {
					wantWaiter = thriftgen.LockState_ACQUIRED
				}
				if st := mustCheck(t, b, waiter.Lockid); st != wantWaiter {
					t.Fatalf("step %d: waiter %v, want %v", step, st, wantWaiter)
				}
				res, err := a.Sweep(ctx)
				if err != nil {
					t.Fatal(err)
				}
				wantExpired := 0
				if step == 1 {
					wantExpired = 1 // dead: 12 minutes without heartbeat
				}
				if len(res.Expired) != wantExpired || res.Active != 5-boolInt(step >= 1) {
					t.Fatalf("step %d sweep: expired %d active %d", step, len(res.Expired), res.Active)
				}
				if step == 1 && res.Expired[0].ID != dead.Lockid {
					t.Fatalf("expired %s, want lockid:%d", res.Expired[0].describe(), dead.Lockid)
				}
				if step >= 1 {
					if st := mustCheck(t, a, waiter.Lockid); st != thriftgen.LockState_ACQUIRED {
						t.Fatalf("waiter after the dead lock expired: %v", st)
					}
				}
			}
			if _, err := sp.b.Get(ctx, viaTxn.Lockid); err != nil {
				t.Fatalf("the lock kept alive by its transaction's heartbeats: %v", err)
			}
			var nsl *thriftgen.NoSuchLockException
			if err := b.Heartbeat(ctx, dead.Lockid, 8); !errors.As(err, &nsl) {
				t.Fatalf("heartbeat of an expired lock: %v, want NoSuchLockException", err)
			}
			ids, err := sp.a.TxnLocks(ctx, 8)
			if err != nil || len(ids) != 0 {
				t.Fatalf("index of the expired lock's txn: %v %v", ids, err)
			}
			clock.Advance(11 * time.Minute) // nobody heartbeats any more
			res, err := b.Sweep(ctx)
			if err != nil || len(res.Expired) != 4 || res.Active != 0 {
				t.Fatalf("final sweep: %+v %v", res, err)
			}
			if got := testutil.ToFloat64(m.events.WithLabelValues(OpCleanup, "cat2", a.mode, ResultExpired)); got != 5 {
				t.Fatalf("cleanup/expired events = %v, want 5", got)
			}
			if got := testutil.ToFloat64(m.active.WithLabelValues(a.mode)); got != 0 {
				t.Fatalf("active gauge after the sweep = %v", got)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestHive4ZeroWait: Hive 4's zero-wait reads and exclusive CTAS are refused
// at once instead of queueing; Hive 3 has neither and queues them.
func TestHive4ZeroWait(t *testing.T) {
	ctx := context.Background()
	for _, rules := range []Rules{RulesHive3, RulesHive4} {
		t.Run(rules.String(), func(t *testing.T) {
			s := newShim(t, NewMemoryStore(), rules)
			mustLock(t, s, part("cat2", lockReq(1, comp(EX, opInsert, "sales", "orders", ""))))
			zw := lockReq(2, comp(SR, opSelect, "sales", "orders", ""))
			zw.ZeroWaitReadEnabled = ptr(true)
			ctas := lockReq(3, comp(EX, opNoTxn, "sales", "orders", ""))
			ctas.ExclusiveCTAS = ptr(true)
			for name, req := range map[string]*thriftgen.LockRequest{"zero-wait read": zw, "exclusive CTAS": ctas} {
				resp := mustLock(t, s, part("cat2", req))
				if rules == RulesHive3 {
					if resp.State != thriftgen.LockState_WAITING {
						t.Fatalf("%s under Hive 3: %v, want WAITING", name, resp.State)
					}
					continue
				}
				if resp.State != thriftgen.LockState_NOT_ACQUIRED || resp.ErrorMessage == nil ||
					!strings.Contains(*resp.ErrorMessage, "lockid:") {
					t.Fatalf("%s under Hive 4: %+v, want NOT_ACQUIRED naming the blocking lock", name, resp)
				}
				var nsl *thriftgen.NoSuchLockException
				if _, err := s.CheckLock(ctx, resp.Lockid); !errors.As(err, &nsl) {
					t.Fatalf("%s: the refused lock still exists: %v", name, err)
				}
			}
		})
	}
}

func TestGrantAtOnceIsTheJavaShim(t *testing.T) {
	s := newShim(t, NewMemoryStore(), RulesHive3, grantAtOnce())
	for i := 0; i < 2; i++ {
		if r := mustLock(t, s, part("cat2", lockReq(int64(i+1), comp(EX, opInsert, "sales", "orders", "")))); r.State != thriftgen.LockState_ACQUIRED {
			t.Fatalf("lock %d: %v, want ACQUIRED without isolation", i, r.State)
		}
	}
}

func TestBadRequests(t *testing.T) {
	s := newShim(t, NewMemoryStore(), RulesHive3)
	ctx := context.Background()
	tx := comp(SR, opSelect, "sales", "orders", "")
	tx.IsTransactional = ptr(true)
	noTable := comp(EX, opNoTxn, "sales", "", "")
	noTable.Partitionname = ptr("d=1")
	cases := map[string][]Request{
		"transactional":          {part("cat2", lockReq(1, tx))},
		"unknown lock type":      {part("cat2", lockReq(1, comp(thriftgen.LockType(99), opSelect, "sales", "t", "")))},
		"partition and no table": {part("cat2", lockReq(1, noTable))},
		"no components":          {part("cat2", lockReq(1))},
		"no catalog":             {part("", lockReq(1, comp(SR, opSelect, "sales", "t", "")))},
		"two transactions": {part("cat2", lockReq(1, comp(SR, opSelect, "a", "t", ""))),
			part("cat3", lockReq(2, comp(SR, opSelect, "b", "t", "")))},
		"no database": {part("cat2", lockReq(1, comp(SR, opSelect, "", "t", "")))},
	}
	for name, parts := range cases {
		var me *thriftgen.MetaException
		if _, err := s.Lock(ctx, parts...); !errors.As(err, &me) {
			t.Errorf("%s: %v, want MetaException", name, err)
		}
	}
	if _, err := New(Options{Rules: RulesHive3}); err == nil || !strings.Contains(err.Error(), "Options.Store") {
		t.Errorf("no store: %v", err)
	}
	if _, err := New(Options{Store: NewMemoryStore()}); err == nil || !strings.Contains(err.Error(), "Options.Rules") {
		t.Errorf("no rules: %v", err)
	}
	if _, err := New(Options{Store: NewMemoryStore(), Rules: RulesHive4, TxnTimeout: -time.Second}); err == nil {
		t.Error("negative timeout accepted")
	}
	// a transactional component without a transaction is a plain lock (PyIceberg sends it)
	if r := mustLock(t, s, part("cat2", lockReq(0, tx))); r.State != thriftgen.LockState_ACQUIRED {
		t.Fatal(r.State)
	}
	// EXCL_WRITE under Hive 3 is held as EXCLUSIVE, not refused
	if r := mustLock(t, s, part("cat2", lockReq(5, comp(EW, opInsert, "x", "y", "")))); r.State != thriftgen.LockState_ACQUIRED {
		t.Fatal(r.State)
	}
}

func TestEligible(t *testing.T) {
	tx := comp(SW, opInsert, "sales", "acid_tbl", "")
	tx.IsTransactional = ptr(true)
	noFlag := comp(SR, opSelect, "sales", "orders", "")
	noFlag.IsTransactional = nil // old clients do not send it: Java's default is false
	dummy := comp(SR, opSelect, DummyDatabase, DummyTable, "")
	icebergPy := comp(EX, opNoTxn, "sales", "ice", "")
	icebergPy.OperationType, icebergPy.IsTransactional = nil, ptr(true)
	for name, tc := range map[string]struct {
		parts []Request
		ok    bool
	}{
		"non-ACID select":        {[]Request{part("cat2", lockReq(1, comp(SR, opSelect, "s", "t", "")))}, true},
		"CREATE TABLE's db lock": {[]Request{part("cat2", lockReq(1, comp(SR, opNoTxn, "s", "", "")))}, true},
		"partition drop":         {[]Request{part("cat2", lockReq(1, comp(EX, opNoTxn, "s", "t", "p=1")))}, true},
		"non-ACID insert":        {[]Request{part("cat2", lockReq(1, dummy, comp(EX, opInsert, "s", "t", "")))}, true},
		"isTransactional absent": {[]Request{part("cat2", lockReq(1, noFlag))}, true},
		"ACID write":             {[]Request{part("cat2", lockReq(1, tx))}, false},
		// PyIceberg's commit lock: EXCLUSIVE, TABLE, isTransactional=true, no transaction
		"transactional flag without a transaction": {[]Request{part("cat2", lockReq(0, icebergPy))}, true},
		"ACID part of a two-catalog read": {[]Request{part("cat2", lockReq(1, comp(SR, opSelect, "s", "t", ""))),
			part("cat3", lockReq(1, tx))}, false},
		"only the placeholder": {[]Request{part("cat2", lockReq(1, dummy))}, false},
	} {
		err := Eligible(tc.parts...)
		if (err == nil) != tc.ok {
			t.Errorf("%s: eligible error %v, want ok=%v", name, err, tc.ok)
		}
		if err != nil && name == "ACID write" && !strings.Contains(err.Error(), "sales.acid_tbl") {
			t.Errorf("%s: error %q does not name the table", name, err)
		}
	}
}

func TestIDs(t *testing.T) {
	id := makeID(epochMask, 1<<32-1)
	if !IsShimLockID(id) || id <= 0 {
		t.Fatalf("largest id %d is not a positive shim id", id)
	}
	if e, s, ok := splitID(id); !ok || e != epochMask || s != 1<<32-1 {
		t.Fatalf("split: %d %d %v", e, s, ok)
	}
	for _, backend := range []int64{0, 1, 1 << 40, 1<<62 - 1, -5} {
		if IsShimLockID(backend) {
			t.Fatalf("backend id %d taken for a shim id", backend)
		}
	}
}
