package e2eutil

import (
	"strings"
	"sync"
	"testing"

	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// One ZooKeeper server for the tests that do not stop it; each test takes a
// znode of its own. Stopped by TestMain.
var sharedZK struct {
	once sync.Once
	zk   *testbed.ZooKeeper
	err  error
}

func ZooKeeper(t *testing.T) string {
	t.Helper()
	NeedHive(t)
	sharedZK.once.Do(func() { sharedZK.zk, sharedZK.err = testbed.StartZooKeeper() })
	if sharedZK.err != nil {
		t.Fatal(sharedZK.err)
	}
	return sharedZK.zk.Addr
}

func StopSharedZooKeeper() {
	if sharedZK.zk != nil {
		_ = sharedZK.zk.Stop()
	}
}

func Comp(typ thriftgen.LockType, op thriftgen.DataOperationType, db, table string) *thriftgen.LockComponent {
	c := &thriftgen.LockComponent{Type: typ, Level: thriftgen.LockLevel_DB, Dbname: db, OperationType: &op, IsTransactional: new(bool)}
	if table != "" {
		c.Level, c.Tablename = thriftgen.LockLevel_TABLE, &table
	}
	return c
}

func LockRequest(txn int64, comps ...*thriftgen.LockComponent) *thriftgen.LockRequest {
	r := &thriftgen.LockRequest{Component: comps, User: "e2e", Hostname: "localhost", AgentInfo: Strp("e2e")}
	if txn != 0 {
		r.Txnid = &txn
	}
	return r
}

func MustLockState(t *testing.T, c *thriftgen.Client, req *thriftgen.LockRequest, want thriftgen.LockState) *thriftgen.LockResponse {
	t.Helper()
	resp, err := c.Lock(Ctx(t), req)
	if err != nil {
		t.Fatalf("lock %v: %v", DescribeLock(req), err)
	}
	if resp.State != want {
		t.Fatalf("lock %v: %v, want %v", DescribeLock(req), resp.State, want)
	}
	return resp
}

func DescribeLock(req *thriftgen.LockRequest) string {
	var parts []string
	for _, c := range req.Component {
		s := c.Type.String() + " " + c.Dbname
		if c.Tablename != nil {
			s += "." + *c.Tablename
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// BackendLocks lists what a metastore itself holds on database db.
func BackendLocks(t *testing.T, c *thriftgen.Client, db string) []*thriftgen.ShowLocksResponseElement {
	t.Helper()
	resp, err := c.ShowLocks(Ctx(t), &thriftgen.ShowLocksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*thriftgen.ShowLocksResponseElement
	for _, l := range resp.Locks {
		if strings.EqualFold(l.Dbname, db) {
			out = append(out, l)
		}
	}
	return out
}

// PyIceberg returns the interpreter of the PyIceberg virtualenv
// (testbed.PyIcebergPackages, with the Hive catalog), building it when
// missing.
func PyIceberg(t *testing.T) string {
	return testbed.PythonT(t, "pyiceberg", testbed.PyIcebergPackages...)
}
