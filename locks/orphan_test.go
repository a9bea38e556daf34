package locks

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// severable dials ZooKeeper through connections the test can cut, refusing
// every later dial: what a SIGKILLed instance looks like to the server (the
// kernel closes its sockets; the server keeps its session until the session
// timeout, then expires it and deletes its ephemeral nodes).
type severable struct {
	mu    sync.Mutex
	conns []net.Conn
	dead  bool
}

func (s *severable) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return nil, errors.New("this instance is dead")
	}
	c, err := net.DialTimeout(network, address, timeout)
	if err == nil {
		s.conns = append(s.conns, c)
	}
	return c, err
}

func (s *severable) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dead = true
	for _, c := range s.conns {
		c.Close()
	}
}

// Issue 20, item 7: instance A dies (its ZooKeeper connection cut, no clean
// close) in the middle of lock calls. A lock nobody got the answer of (A
// would have answered after more work, AnswerLater) or that A held for
// itself (AnswerNever) must not stall the object's writers until the lock
// timeout (300 s here, no sweep running): B grants the next writer as soon
// as ZooKeeper has expired A's session, and its sweep removes an orphan
// nobody waits for. A lock whose client had its answer (AnswerNow) belongs
// to that client and outlives A: B tells it from the orphan, serves its
// check and unlock (a handoff), and only then grants its waiter.
func TestOrphanOfADeadInstanceEndsWithItsSession(t *testing.T) {
	if testing.Short() {
		t.Skip("needs ZooKeeper")
	}
	addr := zooKeeperAddr(t)
	o := zkOptions(t, addr)
	o.SessionTimeout = 4 * time.Second // the server's minimum (2 ticks of 2 s)
	sev := &severable{}
	oa := o
	oa.Dialer = sev.Dial
	stA, stB := newZKStore(t, oa), newZKStore(t, o)
	metrics, _ := newTestMetrics()
	a := newShim(t, stA, RulesHive3, withInstance("a"))
	b := newShim(t, stB, RulesHive3, withInstance("b"), withMetrics(metrics))
	ctx := context.Background()
	excl := func(table string) Request {
		return part("catalog2", lockReq(0, comp(thriftgen.LockType_EXCLUSIVE, thriftgen.DataOperationType_UPDATE, "db1", table, "")))
	}

	answered := mustLock(t, a, excl("t1")) // a client has this answer
	unanswered, err := a.LockAs(ctx, AnswerLater, nil, excl("t2"))
	if err != nil || unanswered.State != thriftgen.LockState_ACQUIRED {
		t.Fatalf("A's lock on t2: %v %v", unanswered, err)
	}
	own, err := a.LockAs(ctx, AnswerNever, nil, excl("t3"))
	if err != nil || own.State != thriftgen.LockState_ACQUIRED {
		t.Fatalf("A's own lock on t3: %v %v", own, err)
	}
	for id, want := range map[int64]bool{answered.Lockid: false, unanswered.Lockid: true, own.Lockid: true} {
		r, err := stB.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if orphan, err := stB.Orphaned(ctx, r); r.Pending != want || orphan || err != nil {
			t.Fatalf("lock %d: pending %v (want %v), orphan %v %v while A lives", id, r.Pending, want, orphan, err)
		}
	}
	w1, w2 := mustLock(t, b, excl("t1")), mustLock(t, b, excl("t2"))
	if w1.State != thriftgen.LockState_WAITING || w2.State != thriftgen.LockState_WAITING {
		t.Fatalf("B's writers while A holds t1 and t2: %v %v", w1.State, w2.State)
	}
	// While A lives its unanswered lock is a live lock.
	if st := mustCheck(t, b, w2.Lockid); st != thriftgen.LockState_WAITING {
		t.Fatalf("B's writer of t2 while A lives: %v", st)
	}

	sev.kill()
	killed := time.Now()
	bound := o.SessionTimeout + 10*time.Second
	for mustCheck(t, b, w2.Lockid) != thriftgen.LockState_ACQUIRED {
		if time.Since(killed) > bound {
			t.Fatalf("B's writer of t2 still waits %v after A died (session timeout %v)", time.Since(killed).Round(time.Millisecond), o.SessionTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the writer of t2 was granted %v after A died (session timeout %v, lock timeout %v)",
		time.Since(killed).Round(time.Millisecond), o.SessionTimeout, DefaultTxnTimeout)
	if n := testutil.ToFloat64(metrics.events.WithLabelValues(OpCleanup, "catalog2", labelZooKeeper, ResultOrphan)); n != 1 {
		t.Errorf("orphans removed by B's check: %v, want 1", n)
	}

	// The answered lock is its client's: still held, checked and released
	// through B.
	if st := mustCheck(t, b, w1.Lockid); st != thriftgen.LockState_WAITING {
		t.Fatalf("B's writer of t1 behind a lock whose client had its answer: %v", st)
	}
	if st := mustCheck(t, b, answered.Lockid); st != thriftgen.LockState_ACQUIRED {
		t.Fatalf("the answered lock of the dead instance, checked through B: %v", st)
	}
	if err := b.Unlock(ctx, answered.Lockid); err != nil {
		t.Fatal(err)
	}
	if st := mustCheck(t, b, w1.Lockid); st != thriftgen.LockState_ACQUIRED {
		t.Fatalf("B's writer of t1 after the unlock: %v", st)
	}

	// The sweep removes the orphan nobody waited for.
	res, err := b.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Orphans) != 1 || res.Orphans[0].ID != own.Lockid || len(res.Expired) != 0 {
		t.Fatalf("sweep after A died: orphans %v, expired %v; want A's own lock on t3 only", res.Orphans, res.Expired)
	}
	if _, err := b.CheckLock(ctx, own.Lockid); err == nil {
		t.Fatal("A's own lock is still there after the sweep")
	}
}

// The pending state ends with the answer: a lock call answered at once
// (AnswerNow) leaves no marker, and Answered ends an AnswerLater lock's;
// unlocking a pending lock removes its marker with it.
func TestPendingMarkersFollowTheAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs ZooKeeper")
	}
	st := newZKStore(t, zkOptions(t, zooKeeperAddr(t)))
	s := newShim(t, st, RulesHive3)
	ctx := context.Background()
	markers := func() int {
		t.Helper()
		names, _, err := st.conn.Children(st.pendingPath)
		if err != nil {
			t.Fatal(err)
		}
		return len(names)
	}
	excl := func(table string) Request {
		return part("catalog2", lockReq(0, comp(thriftgen.LockType_EXCLUSIVE, thriftgen.DataOperationType_UPDATE, "db1", table, "")))
	}
	now := mustLock(t, s, excl("t1"))
	if n := markers(); n != 0 {
		t.Fatalf("%d markers after a lock answered at once", n)
	}
	later, err := s.LockAs(ctx, AnswerLater, nil, excl("t2"))
	if err != nil {
		t.Fatal(err)
	}
	if n := markers(); n != 1 {
		t.Fatalf("%d markers while a lock waits for its answer, want 1", n)
	}
	// A check (a heartbeat) keeps it pending.
	if st := mustCheck(t, s, later.Lockid); st != thriftgen.LockState_ACQUIRED || markers() != 1 {
		t.Fatalf("check of the pending lock: %v, %d markers", st, markers())
	}
	if err := s.Answered(ctx, later.Lockid); err != nil {
		t.Fatal(err)
	}
	r, err := st.Get(ctx, later.Lockid)
	if err != nil || r.Pending || markers() != 0 {
		t.Fatalf("after Answered: %+v %v, %d markers", r, err, markers())
	}
	own, err := s.LockAs(ctx, AnswerNever, nil, excl("t3"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Unlock(ctx, own.Lockid); err != nil || markers() != 0 {
		t.Fatalf("unlock of a pending lock: %v, %d markers", err, markers())
	}
	for _, id := range []int64{now.Lockid, later.Lockid} {
		if err := s.Unlock(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Answered(ctx, later.Lockid); err == nil {
		t.Fatal("Answered of an unlocked lock succeeded")
	}
}
