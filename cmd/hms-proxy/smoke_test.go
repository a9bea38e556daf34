package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/locks"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

func TestSmokeHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"smoke", "--help"}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "hms-proxy smoke txn|lock|notification") || !strings.Contains(out.String(), "--close-txn") {
		t.Fatalf("smoke --help: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run([]string{"smoke"}, &out, &errb); code != 2 || !strings.Contains(out.String(), "modes:") {
		t.Fatalf("smoke without a mode: exit %d\n%s", code, out.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"smoke", "lock", "--help"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "-lock-type") {
		t.Fatalf("smoke lock --help: exit %d\n%s%s", code, out.String(), errb.String())
	}
	if code := run([]string{"smoke", "bogus"}, &out, &errb); code != 2 {
		t.Fatalf("smoke bogus: exit %d", code)
	}
}

// The real binary's smoke client against a real Hive 3.1.3 metastore and
// against the real binary serving two catalogs on it (catalog2's databases are
// the same metastore's, under catalog2__ names): the lock mode through the
// synthetic lock shim, the txn mode on the default catalog, and the refusal of
// write ids on catalog2.
func TestSmokeAgainstAMetastoreAndTheProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Hive metastore")
	}
	ms := testbed.StartMetastoreT(t, testbed.Hive313)
	if err := smokeTables(ms.URI); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "hms-proxy")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	port := freePort(t)
	cfg := fmt.Sprintf(`server.bind-host=127.0.0.1
server.port=%d
management.port=%d
catalogs=catalog1,catalog2
routing.default-catalog=catalog1
catalog.catalog1.conf.hive.metastore.uris=%s
catalog.catalog2.conf.hive.metastore.uris=%s
synthetic-read-lock.store.mode=IN_MEMORY
audit.file=%s
`, port, freePort(t), ms.URI, ms.URI, filepath.Join(t.TempDir(), "audit.log"))
	var logs bytes.Buffer
	proxy := exec.Command(bin, writeFile(t, cfg))
	proxy.Stderr = &logs
	proxy.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Process.Signal(syscall.SIGTERM); _ = proxy.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("proxy did not listen:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "IN_MEMORY") {
		t.Fatalf("no start-up WARN about the in-memory lock store:\n%s", logs.String())
	}
	proxyURI := "thrift://127.0.0.1:" + strconv.Itoa(port)

	smoke := func(args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"smoke"}, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		t.Logf("hms-proxy smoke %s → exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
		return code, out.String()
	}
	stepsOf := func(out string) string {
		var s []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				if f[0] == "FAIL" {
					f[1] = "!" + f[1]
				}
				s = append(s, f[1])
			}
		}
		return strings.Join(s, " ")
	}

	// Straight to the metastore: a CREATE TABLE style database lock.
	if code, out := smoke("lock", "--uri", ms.URI, "--db", "smoke_db", "--heartbeat"); code != 0 ||
		stepsOf(out) != "set_ugi open_txns lock check_lock heartbeat commit_txn" {
		t.Fatalf("lock against the metastore: exit %d\n%s", code, out)
	}
	// Through the proxy on catalog2: a partition drop style lock, held by the shim.
	code, out := smoke("lock", "--uri", proxyURI, "--db", "catalog2__smoke_db", "--table", "smoke_plain_tbl",
		"--partition", "p=2026-04-01", "--lock-type", "EXCLUSIVE", "--lock-level", "PARTITION", "--operation-type", "NO_TXN", "--heartbeat")
	if code != 0 || stepsOf(out) != "set_ugi open_txns lock check_lock heartbeat commit_txn" {
		t.Fatalf("lock through the proxy on catalog2: exit %d\n%s", code, out)
	}
	if id := lockIDOf(out); !locks.IsShimLockID(id) {
		t.Fatalf("catalog2's lock id %d is not the shim's:\n%s", id, out)
	}
	// Without a transaction, unlocked.
	if code, out := smoke("lock", "--uri", proxyURI, "--db", "catalog2__smoke_db", "--table", "smoke_plain_tbl",
		"--lock-type", "EXCLUSIVE", "--lock-in-txn=false", "--unlock", "--close-txn", "none"); code != 0 ||
		stepsOf(out) != "set_ugi open_txns lock check_lock unlock close_txn" {
		t.Fatalf("an Iceberg-style lock through the proxy: exit %d\n%s", code, out)
	}
	// The txn mode on the default catalog's ACID table.
	if code, out := smoke("txn", "--uri", proxyURI, "--db", "smoke_db", "--table", "smoke_txn_tbl"); code != 0 ||
		stepsOf(out) != "set_ugi open_txns allocate_table_write_ids lock check_lock get_open_txns get_valid_write_ids commit_txn" {
		t.Fatalf("txn through the proxy on the default catalog: exit %d\n%s", code, out)
	}
	// Write ids do not exist outside the default catalog: refused, and the
	// transaction aborted.
	code, out = smoke("txn", "--uri", proxyURI, "--db", "catalog2__smoke_db", "--table", "smoke_txn_tbl")
	if code != 1 || stepsOf(out) != "set_ugi open_txns !allocate_table_write_ids abort_txn" ||
		!strings.Contains(out, "MetaException") || !strings.Contains(out, "catalog2") {
		t.Fatalf("txn through the proxy on catalog2: exit %d\n%s", code, out)
	}
}

// lockIDOf finds the lock id in the "lock" step line ("lockid N STATE ...").
func lockIDOf(out string) int64 {
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		for i := 0; i+1 < len(f); i++ {
			if len(f) > 1 && f[1] == "lock" && f[i] == "lockid" {
				id, _ := strconv.ParseInt(f[i+1], 10, 64)
				return id
			}
		}
	}
	return 0
}

// smokeTables creates smoke_db with an insert-only ACID table (the standalone
// 3.1.3 metastore cannot load ORC's output format, which full ACID needs) and
// a plain partitioned one.
func smokeTables(uri string) error {
	cfg := &thrift.TConfiguration{ConnectTimeout: 10 * time.Second, SocketTimeout: time.Minute}
	trans := thrift.NewTBufferedTransport(thrift.NewTSocketConf(strings.TrimPrefix(uri, "thrift://"), cfg), 64<<10)
	if err := trans.Open(); err != nil {
		return err
	}
	defer trans.Close()
	proto := thrift.NewTBinaryProtocolConf(trans, cfg)
	c := thriftgen.NewClient(thrift.NewTStandardClient(proto, proto))
	ctx := context.Background()
	if err := c.CreateDatabase(ctx, &thriftgen.Database{Name: "smoke_db"}); err != nil {
		return err
	}
	mk := func(name string, params map[string]string) *thriftgen.Table {
		return &thriftgen.Table{DbName: "smoke_db", TableName: name, Owner: "hive", TableType: "MANAGED_TABLE", Parameters: params,
			Sd: &thriftgen.StorageDescriptor{Cols: []*thriftgen.FieldSchema{{Name: "id", Type: "int"}},
				InputFormat:  "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
				OutputFormat: "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
				SerdeInfo:    &thriftgen.SerDeInfo{SerializationLib: "org.apache.hadoop.hive.ql.io.orc.OrcSerde"}},
			PartitionKeys: []*thriftgen.FieldSchema{{Name: "p", Type: "string"}}}
	}
	if err := c.CreateTable(ctx, mk("smoke_txn_tbl", map[string]string{"transactional": "true", "transactional_properties": "insert_only"})); err != nil {
		return err
	}
	return c.CreateTable(ctx, mk("smoke_plain_tbl", map[string]string{"transactional": "false"}))
}
