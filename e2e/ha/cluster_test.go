package ha

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/locks"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/testbed/cluster"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// proxyBinary builds cmd/hms-proxy once per test binary.
func proxyBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hms-proxy-ha-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath, binErr = cluster.Build(".", dir)
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// startCluster starts 3 replicas of the real binary behind HAProxy, sharing
// a real ZooKeeper, over catalog1 (hms1) and catalog2 (hms2).
func startCluster(t *testing.T, zk *testbed.ZooKeeper, props map[string]string) *cluster.Cluster {
	t.Helper()
	return startClusterOf(t, zk, props, cluster.Catalog{Name: "catalog1", URI: hms1.URI}, cluster.Catalog{Name: "catalog2", URI: hms2.URI})
}

// startClusterOf is startCluster over other catalogs (the first is the
// default catalog).
func startClusterOf(t *testing.T, zk *testbed.ZooKeeper, props map[string]string, cats ...cluster.Catalog) *cluster.Cluster {
	t.Helper()
	c, err := cluster.Start(cluster.Options{Binary: proxyBinary(t), Dir: t.TempDir(), Replicas: 3,
		Catalogs: cats, ZooKeeper: zk.Addr, LockZnode: "/" + uniq("locks"), Props: props})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range c.Replicas {
				t.Logf("replica %s log tail:\n%s", r.Name, r.LogTail(15))
			}
		}
		c.Stop()
	})
	return c
}

// javaClients runs testdata/RetryingClients.java (the real Hive 3.1.3
// RetryingMetaStoreClient) against uri; lines arrive on the channel.
type javaClients struct {
	cmd       *exec.Cmd
	lines     chan string
	all       []string
	mu        sync.Mutex
	go_, stop string
	done      chan error
	stderr    strings.Builder
}

func startJava(t *testing.T, uri string, threads int, lockDB, lockTable string) *javaClients {
	t.Helper()
	lib, err := filepath.EvalSymlinks(filepath.Join(testbed.Cache(), "lib", string(testbed.Hive313)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	j := &javaClients{lines: make(chan string, 1000), go_: filepath.Join(dir, "go"), stop: filepath.Join(dir, "stop"),
		done: make(chan error, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	t.Cleanup(cancel)
	j.cmd = exec.CommandContext(ctx, "java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-D"+testbed.RunProperty+"="+testbed.RunID(), "-cp", filepath.Join(lib, "*"),
		filepath.Join("testdata", "RetryingClients.java"), uri, fmt.Sprint(threads), lockDB, lockTable, j.go_, j.stop)
	j.cmd.Stderr = &j.stderr
	out, err := j.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l := sc.Text()
			if !strings.HasPrefix(l, "step ") {
				continue
			}
			j.mu.Lock()
			j.all = append(j.all, l)
			j.mu.Unlock()
			select {
			case j.lines <- l:
			default:
			}
		}
		j.done <- j.cmd.Wait()
	}()
	t.Cleanup(func() { _ = os.WriteFile(j.stop, nil, 0o644); _ = os.WriteFile(j.go_, nil, 0o644) })
	return j
}

// expect waits for a line with the prefix and returns it.
func (j *javaClients) expect(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(4 * time.Minute)
	for {
		select {
		case l := <-j.lines:
			if strings.HasPrefix(l, "step "+prefix) {
				return l
			}
			if strings.HasPrefix(l, "step failure") {
				t.Errorf("Java client: %s", l)
			}
		case err := <-j.done:
			t.Fatalf("the Java clients exited (%v) before %q:\n%s\nstderr tail:\n%s", err, prefix, j.steps(), tail(j.stderr.String(), 3000))
		case <-timeout:
			t.Fatalf("no %q from the Java clients within 4 minutes:\n%s", prefix, j.steps())
		}
	}
}

func (j *javaClients) steps() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return strings.Join(j.all, "\n")
}

// finish releases the lock step, stops the readers and checks that no call
// failed.
func (j *javaClients) finish(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(j.go_, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if l := j.expect(t, "check_lock"); l != "step check_lock ACQUIRED" {
		t.Errorf("the lock taken before the failure: %s", l)
	}
	j.expect(t, "unlock ok")
	if err := os.WriteFile(j.stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	summary := j.expect(t, "calls ")
	select {
	case err := <-j.done:
		if err != nil {
			t.Errorf("Java clients: %v\n%s", err, tail(j.stderr.String(), 3000))
		}
	case <-time.After(time.Minute):
		t.Fatal("the Java clients did not exit")
	}
	if !strings.Contains(j.steps(), "step done ok") {
		t.Fatalf("the Java clients lost calls: %s\n%s", summary, j.steps())
	}
	t.Logf("Java RetryingMetaStoreClient threads: %s", strings.TrimPrefix(summary, "step "))
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// lockTable creates catalog2's database and table the lock is taken on.
func lockTable(t *testing.T) (externalDB, table string) {
	t.Helper()
	db, tbl := uniq("ha"), "events"
	direct := proxytest.Client(t, hms2.URI)
	if err := direct.CreateDatabase(ctx(t), &thriftgen.Database{Name: db}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = direct.DropDatabase(context.Background(), db, true, true) })
	err := direct.CreateTable(ctx(t), &thriftgen.Table{TableName: tbl, DbName: db, TableType: "EXTERNAL_TABLE",
		Parameters: map[string]string{"EXTERNAL": "TRUE"},
		Sd: &thriftgen.StorageDescriptor{Cols: []*thriftgen.FieldSchema{{Name: "id", Type: "bigint"}},
			InputFormat:  "org.apache.hadoop.mapred.TextInputFormat",
			OutputFormat: "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
			SerdeInfo:    &thriftgen.SerDeInfo{SerializationLib: "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"}}})
	if err != nil {
		t.Fatal(err)
	}
	return "catalog2__" + db, tbl
}

// lockHolder is the replica that served the lock's acquire.
func lockHolder(t *testing.T, c *cluster.Cluster) *cluster.Replica {
	t.Helper()
	var holder *cluster.Replica
	for _, r := range c.Replicas {
		n, err := r.Metric(locks.MetricEvents, "operation", "acquire", "catalog", "catalog2")
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			if holder != nil {
				t.Fatalf("both %s and %s served an acquire", holder.Name, r.Name)
			}
			holder = r
		}
	}
	if holder == nil {
		t.Fatal("no replica served the lock's acquire")
	}
	return holder
}

func handoffs(t *testing.T, c *cluster.Cluster) float64 {
	t.Helper()
	sum := 0.0
	for _, r := range c.Replicas {
		if !r.Running() {
			continue
		}
		n, err := r.Metric(locks.MetricHandoffs)
		if err != nil {
			t.Fatal(err)
		}
		sum += n
	}
	return sum
}

// One replica is SIGKILLed while Hive's retrying clients run through the
// balancer: no call reaches the caller as a failure, the lock taken through
// the dead replica is checked, heart-beaten and unlocked through the others
// (the lock store is ZooKeeper), and HAProxy takes the replica out on
// /readyz, then back in once it is restarted.
func TestReplicaKilledMidTraffic(t *testing.T) {
	needHive(t)
	zk := zooKeeper(t)
	c := startCluster(t, zk, nil)
	db, tbl := lockTable(t)
	j := startJava(t, c.URI(), 6, db, tbl)
	j.expect(t, "lockid")
	j.expect(t, "ready")
	victim := lockHolder(t, c)
	time.Sleep(2 * time.Second) // traffic on every replica
	for _, r := range c.Replicas {
		if s, _ := c.HAProxy.State(r.Name); s.TotalSessions == 0 {
			t.Errorf("HAProxy sent no connection to %s before the kill: %+v", r.Name, s)
		}
	}
	killed := time.Now()
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.HAProxy.WaitState(victim.Name, "DOWN", 15*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("HAProxy took %s out %v after SIGKILL", victim.Name, time.Since(killed).Round(time.Millisecond))
	time.Sleep(2 * time.Second) // traffic on the survivors only
	before := handoffs(t, c)
	j.finish(t)
	if after := handoffs(t, c); after < before+3 {
		t.Errorf("handoffs of the survivors went from %v to %v: check_lock, heartbeat and unlock of %s's lock should be 3", before, after, victim.Name)
	}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.HAProxy.WaitState(victim.Name, "UP", 60*time.Second); err != nil {
		t.Fatal(err)
	}
}

// A rolling restart: each replica in turn is SIGTERMed (it fails /readyz at
// once and drains), exits 0, is started again and taken back by HAProxy,
// while Hive's retrying clients run through the balancer and lose no call.
func TestRollingRestartLosesNoCall(t *testing.T) {
	needHive(t)
	zk := zooKeeper(t)
	c := startCluster(t, zk, nil)
	db, tbl := lockTable(t)
	j := startJava(t, c.URI(), 6, db, tbl)
	j.expect(t, "lockid")
	j.expect(t, "ready")
	for _, r := range c.Replicas {
		time.Sleep(1500 * time.Millisecond)
		start := time.Now()
		if err := r.Terminate(30 * time.Second); err != nil {
			t.Fatalf("%s after SIGTERM: %v\n%s", r.Name, err, r.LogTail(20))
		}
		drained := time.Since(start)
		if !strings.Contains(r.LogTail(40), "shutting down") {
			t.Errorf("%s did not log its drain:\n%s", r.Name, r.LogTail(20))
		}
		if err := c.HAProxy.WaitState(r.Name, "DOWN", 15*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := r.Start(); err != nil {
			t.Fatal(err)
		}
		if err := c.HAProxy.WaitState(r.Name, "UP", 60*time.Second); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: drained and exited 0 in %v, back UP in HAProxy %v after SIGTERM", r.Name,
			drained.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	}
	j.finish(t)
}

// The drain order in one process: SIGTERM's shutdown makes /readyz answer
// 503 at once, while a call in flight (held by a frozen metastore) still
// runs; that call then completes, and new connections are refused.
func TestShutdownFailsReadinessBeforeTheCallsInFlightFinish(t *testing.T) {
	needHive(t)
	p := proxytest.Start(t, catalogProps("catalog1", "catalog2"))
	c := proxytest.Client(t, p.URI("primary"))
	if _, err := c.GetAllDatabases(ctx(t)); err != nil { // both backends connected
		t.Fatal(err)
	}
	if code := readyz(t, p.ManagementURL()); code != http.StatusOK {
		t.Fatalf("/readyz before the shutdown: %d", code)
	}
	resume := pause(t, hms2)
	call := make(chan error, 1)
	go func() {
		_, err := c.GetDatabase(context.Background(), "catalog2__default")
		call <- err
	}()
	p.WaitInFlight(t, "primary", 1) // the call is served, held by the frozen metastore
	shut := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shut <- p.Shutdown(sctx)
	}()
	deadline := time.Now().Add(time.Minute)
	for readyz(t, p.ManagementURL()) != http.StatusServiceUnavailable {
		if time.Now().After(deadline) {
			t.Fatal("/readyz still answers 200 a minute after the shutdown began")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-call:
		t.Fatalf("the call in flight ended before the metastore was resumed: %v", err)
	default:
	}
	// The listener stops accepting right after readiness failed.
	for {
		conn, err := net.DialTimeout("tcp", p.Listener("primary").Addr().String(), time.Second)
		if err != nil {
			break
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatal("new connections are still accepted a minute after the shutdown began")
		}
		time.Sleep(20 * time.Millisecond)
	}
	resume()
	if err := <-call; err != nil {
		t.Fatalf("the call in flight during the drain: %v", err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

func readyz(t *testing.T, base string) int {
	t.Helper()
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(base + "/readyz")
	if err != nil {
		var ue interface{ Timeout() bool }
		if errors.As(err, &ue) {
			return 0
		}
		return -1
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Issue 20, item 8, on a real proxy and metastores: a connection that is
// idle when SIGTERM's drain begins, then sends an alter_table. The drain is
// held open by a call in flight on a frozen metastore, so a call nobody
// answers would wait until the proxy exits: the alter must come back while
// the drain still runs, either answered (and applied) or failed as a
// transport error (and not applied, read back directly from the metastore).
func TestDrainAnswersOrClosesAnIdleConnectionNeverBoth(t *testing.T) {
	needHive(t)
	db := uniq("drain")
	direct := proxytest.Client(t, hms1.URI)
	if err := direct.CreateDatabase(ctx(t), &thriftgen.Database{Name: db}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = direct.DropDatabase(context.Background(), db, true, true) })
	tbl := &thriftgen.Table{TableName: "t", DbName: db, TableType: "EXTERNAL_TABLE",
		Parameters: map[string]string{"EXTERNAL": "TRUE"},
		Sd: &thriftgen.StorageDescriptor{Cols: []*thriftgen.FieldSchema{{Name: "id", Type: "bigint"}},
			InputFormat:  "org.apache.hadoop.mapred.TextInputFormat",
			OutputFormat: "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
			SerdeInfo:    &thriftgen.SerDeInfo{SerializationLib: "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"}}}
	if err := direct.CreateTable(ctx(t), tbl); err != nil {
		t.Fatal(err)
	}
	p := proxytest.Start(t, catalogProps("catalog1", "catalog2"))
	idle := proxytest.Client(t, p.URI("primary"))
	got, err := idle.GetTable(ctx(t), db, "t") // a call; the connection is idle after it
	if err != nil {
		t.Fatal(err)
	}
	busy := proxytest.Client(t, p.URI("primary"))
	if _, err := busy.GetDatabase(ctx(t), "catalog2__default"); err != nil {
		t.Fatal(err)
	}
	resume := pause(t, hms2)
	inFlight := make(chan error, 1)
	go func() { _, err := busy.GetDatabase(context.Background(), "catalog2__default"); inFlight <- err }()
	p.WaitInFlight(t, "primary", 1)
	shut := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shut <- p.Shutdown(sctx)
	}()
	for deadline := time.Now().Add(time.Minute); p.Listener("primary").Serving(); {
		if time.Now().After(deadline) {
			t.Fatal("the drain did not begin within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	got.Parameters["drained"] = "yes"
	alter := make(chan error, 1)
	go func() { alter <- idle.AlterTable(context.Background(), db, "t", got) }()
	var alterErr error
	select {
	case alterErr = <-alter:
	case err := <-shut:
		t.Fatalf("the drain ended (%v) while the call in flight still waited on the frozen metastore", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("alter_table on a connection idle at the drain's start is still waiting 2 minutes later: nobody answers it")
	}
	resume()
	if err := <-inFlight; err != nil {
		t.Errorf("the call in flight during the drain: %v", err)
	}
	if err := <-shut; err != nil {
		t.Errorf("shutdown: %v", err)
	}
	after, err := direct.GetTable(ctx(t), db, "t")
	if err != nil {
		t.Fatal(err)
	}
	applied := after.Parameters["drained"] == "yes"
	var te thrift.TTransportException
	switch {
	case alterErr == nil && applied:
		t.Log("the alter's bytes were already in the socket when the drain reached the connection: answered and applied")
	case alterErr != nil && !applied && errors.As(alterErr, &te):
		t.Logf("the drain closed the idle connection before reading the alter: %v (not applied)", alterErr)
	default:
		t.Fatalf("alter_table during the drain: error %v, applied %v: want answered and applied, or a transport error and not applied", alterErr, applied)
	}
}
