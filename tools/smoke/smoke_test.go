package smoke

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "name a mode first"},
		{[]string{"bogus"}, `unknown mode "bogus"`},
		{[]string{"txn"}, "--uri is required"},
		{[]string{"txn", "--uri", "thrift://127.0.0.1:1"}, "txn needs --db and --table"},
		{[]string{"lock", "--uri", "thrift://127.0.0.1:1", "--db", "d", "--close-txn", "later"}, `--close-txn "later"`},
		{[]string{"lock", "--uri", "thrift://127.0.0.1:1", "--db", "d", "--auth", "kerberos"}, "--auth kerberos needs --server-principal, --client-principal, --keytab"},
		{[]string{"lock", "--uri", "thrift://127.0.0.1:1", "--db", "d", "--auth", "kerberos", "--server-principal", "h/x@R", "--client-principal", "u@R", "--keytab", "/k",
			"--conf", "hive.metastore.thrift.framed.transport.enabled=true"}, "never framed"},
		{[]string{"lock", "--uri", "thrift://127.0.0.1:1", "--db", "d", "--auth", "kerberos", "--server-principal", "h/x@R", "--client-principal", "u@R", "--keytab", "/k",
			"--conf", "hadoop.rpc.protection=secret"}, `unknown value "secret"`},
		{[]string{"lock", "--uri", "thrift://127.0.0.1:1", "--db", "d", "--conf", "hadoop.rpc.protection=privacy"}, "need --auth kerberos"},
		{[]string{"lock", "--uri", "thrift://127.0.0.1:1", "--db", "d", "--keytab", "/k"}, "need --auth kerberos"},
		{[]string{"lock", "--uri", "thrift://127.0.0.1:1", "--db", "d", "--conf", "hive.exec.foo=1"}, "does not use that setting"},
		{[]string{"lock", "--uri", "thrift://127.0.0.1:1", "--db", "d", "--conf", "hive.metastore.client.socket.timeout=1.5s"}, "not a Hive duration"},
		{[]string{"notification", "--uri", "thrift://127.0.0.1:1", "--db", "d"}, "notification needs"},
	} {
		code, _, stderr := run(tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, ExitUsage, tc.want)
		}
	}
	if d, err := hiveDuration("10m"); err != nil || d != 10*time.Minute {
		t.Errorf("10m: %v %v", d, err)
	}
}

// One Hive 3.1.3 metastore for the tests of this package.
type bed struct {
	once sync.Once
	ms   *testbed.Metastore
	err  error
}

var shared bed

func metastore(t *testing.T) *testbed.Metastore {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real Hive metastore")
	}
	shared.once.Do(func() {
		shared.ms, shared.err = testbed.StartMetastore(testbed.Hive313)
		if shared.err == nil {
			shared.err = createTables(shared.ms.URI)
		}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.ms
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.ms != nil {
		_ = shared.ms.Stop()
	}
	os.Exit(code)
}

func client(uri string) (*thriftgen.Client, func(), error) {
	o := &options{uri: uri, timeout: time.Minute}
	return connect(o)
}

// createTables makes smoke_db with a transactional (ACID) table and a plain one, as an operator would with Hive DDL.
func createTables(uri string) error {
	c, closeFn, err := client(uri)
	if err != nil {
		return err
	}
	defer closeFn()
	ctx := context.Background()
	if err := c.CreateDatabase(ctx, &thriftgen.Database{Name: "smoke_db", Description: "smoke client tests"}); err != nil {
		return err
	}
	cols := []*thriftgen.FieldSchema{{Name: "id", Type: "int"}, {Name: "v", Type: "string"}}
	orc := func(name string, params map[string]string) *thriftgen.Table {
		return &thriftgen.Table{DbName: "smoke_db", TableName: name, Owner: "hive", TableType: "MANAGED_TABLE",
			Parameters: params,
			Sd: &thriftgen.StorageDescriptor{Cols: cols,
				InputFormat:  "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
				OutputFormat: "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
				SerdeInfo:    &thriftgen.SerDeInfo{SerializationLib: "org.apache.hadoop.hive.ql.io.orc.OrcSerde"}},
			PartitionKeys: []*thriftgen.FieldSchema{{Name: "p", Type: "string"}}}
	}
	// The standalone 3.1.3 metastore cannot load hive-exec's OrcOutputFormat, so its
	// TransactionalValidationListener refuses a full-ACID table; an insert-only ACID table (the other kind of
	// transactional=true table) has no format requirement.
	if err := c.CreateTable(ctx, orc("smoke_txn_tbl", map[string]string{"transactional": "true",
		"transactional_properties": "insert_only"})); err != nil {
		return err
	}
	if err := c.CreateTable(ctx, orc("smoke_plain_tbl", map[string]string{"transactional": "false"})); err != nil {
		return err
	}
	return nil
}

type line struct {
	ok   bool
	step string
	rest string
}

func parseLines(t *testing.T, out string) []line {
	t.Helper()
	var ls []line
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || (f[0] != "ok" && f[0] != "FAIL") {
			t.Fatalf("output line %q is not a step line", l)
		}
		ls = append(ls, line{ok: f[0] == "ok", step: f[1], rest: l})
	}
	return ls
}

func steps(ls []line) []string {
	var s []string
	for _, l := range ls {
		mark := ""
		if !l.ok {
			mark = "!"
		}
		s = append(s, mark+l.step)
	}
	return s
}

func openTxnIDs(t *testing.T, uri string) []int64 {
	t.Helper()
	c, closeFn, err := client(uri)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	resp, err := c.GetOpenTxns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var open []int64 // get_open_txns also lists aborted transactions, marked in abortedBits
	for i, id := range resp.OpenTxns {
		if i/8 >= len(resp.AbortedBits) || resp.AbortedBits[i/8]&(1<<(uint(i)%8)) == 0 {
			open = append(open, id)
		}
	}
	return open
}

func TestTxnAgainstHive313(t *testing.T) {
	ms := metastore(t)
	code, out, stderr := run("txn", "--uri", ms.URI, "--db", "smoke_db", "--table", "smoke_txn_tbl")
	ls := parseLines(t, out)
	want := "set_ugi open_txns allocate_table_write_ids lock check_lock get_open_txns get_valid_write_ids commit_txn"
	if code != ExitOK || strings.Join(steps(ls), " ") != want {
		t.Fatalf("exit %d, steps %v (want %s)\n%s%s", code, steps(ls), want, out, stderr)
	}
	if !strings.Contains(ls[2].rest, "writeid ") || !strings.Contains(ls[4].rest, "ACQUIRED") ||
		!strings.Contains(ls[6].rest, "smoke_db.smoke_txn_tbl high watermark 1") {
		t.Fatalf("unexpected details:\n%s", out)
	}
	if open := openTxnIDs(t, ms.URI); len(open) != 0 {
		t.Fatalf("transactions left open: %v", open)
	}
}

func TestTxnFailureAbortsTheTransaction(t *testing.T) {
	ms := metastore(t)
	// a lock the metastore refuses (a partition lock without a partition): fails after open_txns and allocate
	code, out, _ := run("txn", "--uri", ms.URI, "--db", "smoke_db", "--table", "smoke_txn_tbl", "--lock-level", "PARTITION")
	ls := parseLines(t, out)
	got := strings.Join(steps(ls), " ")
	if code != ExitFail || !strings.HasPrefix(got, "set_ugi open_txns ") || !strings.HasSuffix(got, " abort_txn") {
		t.Fatalf("exit %d, steps %s\n%s", code, got, out)
	}
	if !ls[len(ls)-1].ok {
		t.Fatalf("the cleanup abort failed:\n%s", out)
	}
	if open := openTxnIDs(t, ms.URI); len(open) != 0 {
		t.Fatalf("the failed run left transactions open: %v", open)
	}
}

func TestLockAgainstHive313(t *testing.T) {
	ms := metastore(t)
	cases := []struct {
		name  string
		args  []string
		code  int
		steps string
	}{
		{"CREATE TABLE style database lock", []string{"--db", "smoke_db", "--lock-type", "SHARED_READ", "--lock-level", "DB",
			"--operation-type", "NO_TXN", "--transactional", "false", "--heartbeat"},
			ExitOK, "set_ugi open_txns lock check_lock heartbeat commit_txn"},
		{"partition drop style lock, aborted", []string{"--db", "smoke_db", "--table", "smoke_plain_tbl",
			"--partition", "p=2026-04-01", "--lock-type", "EXCLUSIVE", "--lock-level", "PARTITION", "--close-txn", "abort"},
			ExitOK, "set_ugi open_txns lock check_lock abort_txn"},
		{"Hive refuses to unlock a granted lock of a transaction", []string{"--db", "smoke_db", "--table", "smoke_plain_tbl",
			"--lock-type", "EXCLUSIVE", "--operation-type", "INSERT", "--unlock"},
			ExitFail, "set_ugi open_txns lock check_lock !unlock abort_txn"},
		{"a lock without transaction is unlocked", []string{"--db", "smoke_db", "--table", "smoke_plain_tbl",
			"--lock-type", "EXCLUSIVE", "--lock-in-txn=false", "--unlock", "--close-txn", "none"},
			ExitOK, "set_ugi open_txns lock check_lock unlock close_txn"},
		{"a bad level fails after open_txns and aborts", []string{"--db", "smoke_db", "--lock-level", "PARTITION"},
			ExitFail, "set_ugi open_txns !lock abort_txn"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := run(append([]string{"lock", "--uri", ms.URI}, tc.args...)...)
			ls := parseLines(t, out)
			if got := strings.Join(steps(ls), " "); code != tc.code || got != tc.steps {
				t.Fatalf("exit %d, steps %s; want %d, %s\n%s%s", code, got, tc.code, tc.steps, out, stderr)
			}
			if tc.name == "Hive refuses to unlock a granted lock of a transaction" && !strings.Contains(out, "TxnOpenException") {
				t.Fatalf("the unlock failure does not name Hive's TxnOpenException:\n%s", out)
			}
		})
	}
	// --close-txn none left one transaction open on purpose; nothing else may be
	if open := openTxnIDs(t, ms.URI); len(open) != 1 {
		t.Fatalf("open transactions: %v, want exactly the one left by --close-txn none", open)
	}
}

func TestNotificationNeedsAHive4OrHDPMetastore(t *testing.T) {
	ms := metastore(t)
	code, out, _ := run("notification", "--uri", ms.URI, "--db", "smoke_db", "--table", "smoke_txn_tbl",
		"--txn-id", "1", "--write-id", "1", "--files-added", "file:///tmp/x/delta_1_1/bucket_00000")
	ls := parseLines(t, out)
	if code != ExitFail || strings.Join(steps(ls), " ") != "set_ugi !add_write_notification_log" ||
		!strings.Contains(out, "TApplicationException") || !strings.Contains(out, "add_write_notification_log") {
		t.Fatalf("Hive 3.1.3 has no add_write_notification_log; exit %d\n%s", code, out)
	}
}

func TestConnectFailureIsAStep(t *testing.T) {
	port, err := testbed.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := run("lock", "--uri", "thrift://127.0.0.1:"+strconv.Itoa(port), "--db", "x", "--timeout", "2s")
	if code != ExitFail || !strings.HasPrefix(out, "FAIL connect") {
		t.Fatalf("exit %d, output %q", code, out)
	}
}

// Hive 4.1 has add_write_notification_log: the notification mode passes
// against a real 4.1 metastore, after a txn round took the transaction and
// write ids it reports (smoke_txn_tbl is partitioned by p, so the partition
// values are required: Hive 4.1 fails with an internal error without them).
func TestNotificationOnAHive4Metastore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Hive metastore")
	}
	ms := testbed.StartMetastoreT(t, testbed.Hive410)
	if err := createTables(ms.URI); err != nil {
		t.Fatal(err)
	}
	c, closeFn, err := client(ms.URI)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	res, err := c.GetTableReq(context.Background(), &thriftgen.GetTableRequest{DbName: "smoke_db", TblName: "smoke_txn_tbl",
		Capabilities: &thriftgen.ClientCapabilities{Values: []thriftgen.ClientCapability{thriftgen.ClientCapability_INSERT_ONLY_TABLES}}})
	if err != nil {
		t.Fatal(err)
	}
	tbl := res.Table
	sd := *tbl.Sd
	sd.Location = tbl.Sd.Location + "/p=2026-12-01"
	if _, err := c.AddPartition(context.Background(), &thriftgen.Partition{DbName: "smoke_db", TableName: "smoke_txn_tbl",
		Values: []string{"2026-12-01"}, Sd: &sd, Parameters: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	code, out, _ := run("txn", "--uri", ms.URI, "--db", "smoke_db", "--table", "smoke_txn_tbl")
	if code != ExitOK {
		t.Fatalf("txn on Hive 4.1: exit %d\n%s", code, out)
	}
	var txn, write string
	for _, l := range parseLines(t, out) {
		f := strings.Fields(l.rest)
		switch {
		case l.step == "open_txns" && len(f) >= 2:
			txn = f[len(f)-1]
		case l.step == "allocate_table_write_ids" && len(f) >= 2:
			write = f[len(f)-1]
		}
	}
	if txn == "" || write == "" {
		t.Fatalf("no txn or write id in the txn output:\n%s", out)
	}
	code, out, _ = run("notification", "--uri", ms.URI, "--db", "smoke_db", "--table", "smoke_txn_tbl",
		"--txn-id", txn, "--write-id", write, "--partition-vals", "2026-12-01",
		"--files-added", "file:///tmp/smoke/p=2026-12-01/delta_"+write+"_"+write+"/bucket_00000")
	if code != ExitOK || strings.Join(steps(parseLines(t, out)), " ") != "set_ugi add_write_notification_log" {
		t.Fatalf("notification on Hive 4.1: exit %d\n%s", code, out)
	}
}
