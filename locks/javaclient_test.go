package locks

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// lockFront is a test harness standing where the router will call the shim:
// a Thrift listener that sends the lock calls of catalog cat2 (databases
// cat2__<db>) to a Shim and every transaction call to a real Hive metastore,
// the default catalog "hive", releasing the shim's locks of a transaction
// after the metastore committed or aborted it. It serves only the calls the
// scenario makes and answers any other with UNKNOWN_METHOD.
type lockFront struct {
	shim    *Shim
	backend string // host:port of the default catalog's metastore
	ln      net.Listener
	wg      sync.WaitGroup
}

func startLockFront(t *testing.T, shim *Shim, backendURI string) *lockFront {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &lockFront{shim: shim, backend: strings.TrimPrefix(backendURI, "thrift://"), ln: ln}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				f.serve(c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); f.wg.Wait() })
	return f
}

func (f *lockFront) uri() string { return "thrift://" + f.ln.Addr().String() }

func frontResolver(db string) (string, string, bool) {
	if rest, ok := strings.CutPrefix(strings.ToLower(db), "cat2__"); ok {
		return "cat2", db[len(db)-len(rest):], true
	}
	return "hive", db, true
}

func (f *lockFront) serve(conn net.Conn) {
	defer conn.Close()
	cfg := &thrift.TConfiguration{}
	trans := thrift.NewTBufferedTransport(thrift.NewTSocketFromConnConf(conn, cfg), 64<<10)
	proto := thrift.NewTBinaryProtocolConf(trans, cfg)
	bsock := thrift.NewTSocketConf(f.backend, &thrift.TConfiguration{ConnectTimeout: 10 * time.Second, SocketTimeout: time.Minute})
	btrans := thrift.NewTBufferedTransport(bsock, 64<<10)
	if err := btrans.Open(); err != nil {
		return
	}
	defer btrans.Close()
	bproto := thrift.NewTBinaryProtocolConf(btrans, cfg)
	backend := thriftgen.NewClient(thrift.NewTStandardClient(bproto, bproto))
	ctx := context.Background()
	for {
		name, _, seq, err := proto.ReadMessageBegin(ctx)
		if err != nil {
			return
		}
		args := thriftgen.NewStruct(name + "_args")
		if args == nil {
			args = thriftgen.NewStruct(name + "_method_args")
		}
		var result thrift.TStruct
		var appErr error
		if args == nil {
			_ = proto.Skip(ctx, thrift.STRUCT)
			appErr = thrift.NewTApplicationException(thrift.UNKNOWN_METHOD, "unknown method "+name)
		} else if err := args.Read(ctx, proto); err != nil {
			return
		} else {
			result, appErr = f.handle(ctx, backend, name, args)
		}
		if err := proto.ReadMessageEnd(ctx); err != nil {
			return
		}
		if appErr != nil {
			var ae thrift.TApplicationException
			if !errors.As(appErr, &ae) {
				ae = thrift.NewTApplicationException(thrift.INTERNAL_ERROR, appErr.Error())
			}
			_ = proto.WriteMessageBegin(ctx, name, thrift.EXCEPTION, seq)
			_ = ae.Write(ctx, proto)
		} else {
			_ = proto.WriteMessageBegin(ctx, name, thrift.REPLY, seq)
			if err := result.Write(ctx, proto); err != nil {
				return
			}
		}
		if proto.WriteMessageEnd(ctx) != nil || proto.Flush(ctx) != nil {
			return
		}
	}
}

// handle answers one call: the declared exceptions go into the result, anything else becomes a TApplicationException.
func (f *lockFront) handle(ctx context.Context, backend *thriftgen.Client, name string, args thrift.TStruct) (thrift.TStruct, error) {
	var nsl *thriftgen.NoSuchLockException
	var nst *thriftgen.NoSuchTxnException
	var ta *thriftgen.TxnAbortedException
	var to *thriftgen.TxnOpenException
	switch a := args.(type) {
	case *thriftgen.SetUgiArgs:
		groups, err := backend.SetUgi(ctx, a.UserName, a.GroupNames)
		return &thriftgen.SetUgiResult{Success: groups}, err
	case *thriftgen.OpenTxnsArgs:
		resp, err := backend.OpenTxns(ctx, a.Rqst)
		return &thriftgen.OpenTxnsResult{Success: resp}, err
	case *thriftgen.CommitTxnArgs:
		err := backend.CommitTxn(ctx, a.Rqst)
		r := &thriftgen.CommitTxnResult{}
		switch {
		case errors.As(err, &nst):
			r.O1 = nst
		case errors.As(err, &ta):
			r.O2 = ta
		case err != nil:
			return nil, err
		default:
			if err := f.shim.ReleaseTxn(ctx, a.Rqst.Txnid); err != nil {
				return nil, err
			}
		}
		return r, nil
	case *thriftgen.LockArgs:
		split, err := Split(a.Rqst, "hive", frontResolver)
		if err != nil {
			return nil, err
		}
		if split.Default != nil {
			if len(split.Shim) > 0 {
				return nil, errors.New("lock front: a lock over the default catalog and cat2 is the router's business")
			}
			resp, err := backend.Lock(ctx, split.Default)
			return &thriftgen.LockResult{Success: resp}, err
		}
		if err := Eligible(split.Shim...); err != nil {
			return nil, err
		}
		resp, err := f.shim.Lock(ctx, split.Shim...)
		return &thriftgen.LockResult{Success: resp}, err
	case *thriftgen.CheckLockArgs:
		if !IsShimLockID(a.Rqst.Lockid) {
			resp, err := backend.CheckLock(ctx, a.Rqst)
			return &thriftgen.CheckLockResult{Success: resp}, err
		}
		resp, err := f.shim.CheckLock(ctx, a.Rqst.Lockid)
		if errors.As(err, &nsl) {
			return &thriftgen.CheckLockResult{O3: nsl}, nil
		}
		return &thriftgen.CheckLockResult{Success: resp}, err
	case *thriftgen.UnlockArgs:
		if !IsShimLockID(a.Rqst.Lockid) {
			return &thriftgen.UnlockResult{}, backend.Unlock(ctx, a.Rqst)
		}
		err := f.shim.Unlock(ctx, a.Rqst.Lockid)
		switch {
		case errors.As(err, &nsl):
			return &thriftgen.UnlockResult{O1: nsl}, nil
		case errors.As(err, &to):
			return &thriftgen.UnlockResult{O2: to}, nil
		}
		return &thriftgen.UnlockResult{}, err
	case *thriftgen.HeartbeatArgs:
		var lockID, txnID int64
		if a.Ids.Lockid != nil {
			lockID = *a.Ids.Lockid
		}
		if a.Ids.Txnid != nil {
			txnID = *a.Ids.Txnid
		}
		if txnID != 0 || (lockID != 0 && !IsShimLockID(lockID)) {
			fwd := &thriftgen.HeartbeatRequest{Txnid: a.Ids.Txnid}
			if !IsShimLockID(lockID) {
				fwd.Lockid = a.Ids.Lockid
			}
			if err := backend.Heartbeat(ctx, fwd); err != nil {
				return nil, err
			}
		}
		err := f.shim.Heartbeat(ctx, lockID, txnID)
		if errors.As(err, &nsl) {
			return &thriftgen.HeartbeatResult{O1: nsl}, nil
		}
		return &thriftgen.HeartbeatResult{}, err
	}
	return nil, thrift.NewTApplicationException(thrift.UNKNOWN_METHOD, "lock front: "+name+" is not served here")
}

// TestRealHiveClientThroughTwoReplicas runs a real Hive 3.1.3 HiveMetaStoreClient
// (testdata/ShimClient.java) against two fronts whose shims share one ZooKeeper
// znode, with the transactions in a real Hive 3.1.3 metastore: HiveServer2-style
// writers in transactions are serialized across the replicas and released by
// commit_txn; an Iceberg-style lock without transaction is taken through one
// replica and checked and unlocked through the other.
func TestRealHiveClientThroughTwoReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real metastore, ZooKeeper and a Java client")
	}
	addr := zooKeeperAddr(t)
	ms := testbed.StartMetastoreT(t, testbed.Hive313)
	lib, err := filepath.EvalSymlinks(filepath.Join(testbed.Cache(), "lib", string(testbed.Hive313)))
	if err != nil {
		t.Fatal(err)
	}
	o := zkOptions(t, addr)
	m, _ := newTestMetrics()
	a := newShim(t, newZKStore(t, o), RulesHive3, withInstance("replica-a"), withMetrics(m))
	b := newShim(t, newZKStore(t, o), RulesHive3, withInstance("replica-b"), withMetrics(m))
	fa, fb := startLockFront(t, a, ms.URI), startLockFront(t, b, ms.URI)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-D"+testbed.RunProperty+"="+testbed.RunID(), "-cp", filepath.Join(lib, "*"),
		filepath.Join("testdata", "ShimClient.java"), fa.uri(), fb.uri(), "cat2__sales", "orders")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var steps []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "step ") || strings.HasPrefix(l, "unexpected ") {
			steps = append(steps, l)
		}
	}
	if err != nil || len(steps) == 0 || steps[len(steps)-1] != "step done ok" {
		tail := stderr.String()
		if len(tail) > 3000 {
			tail = tail[len(tail)-3000:]
		}
		t.Fatalf("Java client: %v\n%s\nstderr tail:\n%s", err, strings.Join(steps, "\n"), tail)
	}
	t.Logf("Java client steps:\n%s", strings.Join(steps, "\n"))
	for _, want := range []string{"step lock2 WAITING", "step check2-after-commit ACQUIRED", "step iceberg-check-via-a ACQUIRED"} {
		if !containsLine(steps, want) {
			t.Fatalf("missing %q", want)
		}
	}
	if got := handoffs(m, OpCheckLock) + handoffs(m, OpUnlock); got < 2 {
		t.Fatalf("handoffs counted: %v, want at least the check and unlock of the Iceberg lock through the other replica", got)
	}
	left, err := a.store.List(context.Background(), 0)
	if err != nil || len(left) != 0 {
		t.Fatalf("locks left in ZooKeeper: %v %v", left, err)
	}
}

func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

func handoffs(m *Metrics, op string) float64 {
	return testutil.ToFloat64(m.handoffs.WithLabelValues(op, "cat2", labelZooKeeper))
}
