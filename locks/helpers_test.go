package locks

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// One ZooKeeper server for the tests of this package that do not stop it; each
// test takes its own znode. Tests that stop or pause ZooKeeper start their own.
type sharedZooKeeper struct {
	once sync.Once
	zk   *testbed.ZooKeeper
	err  error
}

var testZK sharedZooKeeper

func TestMain(m *testing.M) {
	code := m.Run()
	if testZK.zk != nil {
		_ = testZK.zk.Stop()
		_ = os.RemoveAll(testZK.zk.Dir)
	}
	os.Exit(code)
}

func zooKeeperAddr(t *testing.T) string {
	t.Helper()
	if os.Getenv("HMS_PROXY_SKIP_REAL_HIVE") == "1" {
		t.Skip("HMS_PROXY_SKIP_REAL_HIVE=1")
	}
	testZK.once.Do(func() {
		testZK.zk, testZK.err = testbed.StartZooKeeper()
		if testZK.err == nil {
			testZK.err = warmUp(testZK.zk.Addr)
		}
	})
	if testZK.err != nil {
		t.Fatal(testZK.err)
	}
	return testZK.zk.Addr
}

// warmUp waits for a freshly started server's first session and write (ZooKeeper
// preallocates its transaction log then, which can take seconds on a busy machine).
func warmUp(addr string) error {
	o := DefaultZooKeeperOptions(addr)
	o.Znode = "/locks-test"
	o.ConnectionTimeout = time.Minute
	st, err := NewZooKeeperStore(o)
	if err != nil {
		return err
	}
	defer st.Close()
	_, err = st.init(context.Background())
	return err
}

var znodeCounter atomic.Int64

// zkOptions gives a store on the shared server under a znode of its own, with short timeouts.
func zkOptions(t *testing.T, addr string) ZooKeeperOptions {
	o := DefaultZooKeeperOptions(addr)
	o.Znode = fmt.Sprintf("/locks-test/%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "_"), os.Getpid(), znodeCounter.Add(1))
	o.ConnectionTimeout = 3 * time.Second
	o.SessionTimeout = 8 * time.Second
	o.BaseSleep = 100 * time.Millisecond
	o.MaxRetries = 2
	return o
}

func newZKStore(t *testing.T, o ZooKeeperOptions) *ZooKeeperStore {
	t.Helper()
	st, err := NewZooKeeperStore(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type shimOpts func(*Options)

func newShim(t *testing.T, st Store, rules Rules, more ...shimOpts) *Shim {
	t.Helper()
	o := Options{Store: st, Rules: rules, SweepInterval: -1}
	for _, f := range more {
		f(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func withClock(c *fakeClock) shimOpts      { return func(o *Options) { o.Now = c.Now } }
func withMetrics(m *Metrics) shimOpts      { return func(o *Options) { o.Metrics = m } }
func withInstance(id string) shimOpts      { return func(o *Options) { o.InstanceID = id } }
func withTimeout(d time.Duration) shimOpts { return func(o *Options) { o.TxnTimeout = d } }
func grantAtOnce() shimOpts                { return func(o *Options) { o.GrantAtOnce = true } }

func ptr[T any](v T) *T { return &v }

// comp builds a lock component: level from what is named, isTransactional false (a non-ACID table).
func comp(t thriftgen.LockType, op thriftgen.DataOperationType, db, table, partition string) *thriftgen.LockComponent {
	c := &thriftgen.LockComponent{Type: t, Level: thriftgen.LockLevel_DB, Dbname: db, OperationType: ptr(op),
		IsTransactional: ptr(false)}
	if table != "" {
		c.Level, c.Tablename = thriftgen.LockLevel_TABLE, ptr(table)
	}
	if partition != "" {
		c.Level, c.Partitionname = thriftgen.LockLevel_PARTITION, ptr(partition)
	}
	return c
}

func lockReq(txn int64, comps ...*thriftgen.LockComponent) *thriftgen.LockRequest {
	r := &thriftgen.LockRequest{Component: comps, User: "hive", Hostname: "hs2-1.example.com", AgentInfo: ptr("test")}
	if txn != 0 {
		r.Txnid = ptr(txn)
	}
	return r
}

func part(catalog string, req *thriftgen.LockRequest) Request {
	return Request{Catalog: catalog, Lock: req}
}

func mustLock(t *testing.T, s *Shim, parts ...Request) *thriftgen.LockResponse {
	t.Helper()
	resp, err := s.Lock(context.Background(), parts...)
	if err != nil {
		t.Fatalf("lock: %v", err)
	}
	return resp
}

func mustCheck(t *testing.T, s *Shim, id int64) thriftgen.LockState {
	t.Helper()
	resp, err := s.CheckLock(context.Background(), id)
	if err != nil {
		t.Fatalf("check_lock %d: %v", id, err)
	}
	if resp.Lockid != id {
		t.Fatalf("check_lock %d answered lock id %d", id, resp.Lockid)
	}
	return resp.State
}

func newTestMetrics() (*Metrics, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		panic(err)
	}
	return m, reg
}

// stores gives each store kind to run a test against: in memory, and two ZooKeeper stores on one znode (two replicas).
type storePair struct {
	name string
	a, b Store
}

func storePairs(t *testing.T) []storePair {
	mem := NewMemoryStore()
	pairs := []storePair{{name: "in_memory", a: mem, b: mem}}
	if testing.Short() {
		return pairs
	}
	addr := zooKeeperAddr(t)
	o := zkOptions(t, addr)
	pairs = append(pairs, storePair{name: "zookeeper", a: newZKStore(t, o), b: newZKStore(t, o)})
	return pairs
}
