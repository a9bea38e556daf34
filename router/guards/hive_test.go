package guards

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// metastoreClient opens a generated client straight to a metastore, as
// Hive's own client speaks (TBinaryProtocol over a buffered socket). The
// router's proxytest helper cannot be used here: the router imports this
// package.
func metastoreClient(t *testing.T, uri string) *thriftgen.Client {
	t.Helper()
	cfg := &thrift.TConfiguration{ConnectTimeout: 10 * time.Second, SocketTimeout: 120 * time.Second}
	trans := thrift.NewTBufferedTransport(thrift.NewTSocketConf(strings.TrimPrefix(uri, "thrift://"), cfg), 64<<10)
	if err := trans.Open(); err != nil {
		t.Fatalf("connect %s: %v", uri, err)
	}
	t.Cleanup(func() { trans.Close() })
	proto := thrift.NewTBinaryProtocolConf(trans, cfg)
	return thriftgen.NewClient(thrift.NewTStandardClient(proto, proto))
}

// thriftBackend is the test's Backend: a tiny adapter over the generated
// client to a real metastore (the router plugs its own executor in).
type thriftBackend struct {
	c     *thriftgen.Client
	calls []string
}

func toValue(t thrift.TStruct) (*wire.Value, error) {
	buf := thrift.NewTMemoryBuffer()
	p := thrift.NewTBinaryProtocolConf(buf, nil)
	if err := t.Write(context.Background(), p); err != nil {
		return nil, err
	}
	v, err := wire.DecodeStruct(buf.Bytes())
	return &v, err
}

func fromValue(v *wire.Value, into thrift.TStruct) error {
	buf := thrift.NewTMemoryBuffer()
	buf.Write(v.Encode())
	return into.Read(context.Background(), thrift.NewTBinaryProtocolConf(buf, nil))
}

func (b *thriftBackend) GetTable(ctx context.Context, db, table string) (*wire.Value, error) {
	b.calls = append(b.calls, "get_table")
	t, err := b.c.GetTable(ctx, db, table)
	if err != nil {
		return nil, err
	}
	return toValue(t)
}

// icebergLock is the request org.apache.iceberg.hive.MetastoreLock sends.
func icebergLock(db, table string) *thriftgen.LockRequest {
	host, _ := os.Hostname()
	agent := "hms-proxy-iceberg-pointer-guard"
	return &thriftgen.LockRequest{Component: []*thriftgen.LockComponent{{Type: thriftgen.LockType_EXCLUSIVE,
		Level: thriftgen.LockLevel_TABLE, Dbname: db, Tablename: &table}}, User: "hms-proxy", Hostname: host, AgentInfo: &agent}
}

func (b *thriftBackend) Lock(ctx context.Context, db, table string) (int64, LockState, error) {
	b.calls = append(b.calls, "lock")
	r, err := b.c.Lock(ctx, icebergLock(db, table))
	if err != nil {
		return 0, 0, err
	}
	return r.Lockid, LockState(r.State), nil
}

func (b *thriftBackend) CheckLock(ctx context.Context, id int64) (LockState, error) {
	b.calls = append(b.calls, "check_lock")
	r, err := b.c.CheckLock(ctx, &thriftgen.CheckLockRequest{Lockid: id})
	if err != nil {
		return 0, err
	}
	return LockState(r.State), nil
}

func (b *thriftBackend) Unlock(ctx context.Context, id int64) error {
	b.calls = append(b.calls, "unlock")
	return b.c.Unlock(ctx, &thriftgen.UnlockRequest{Lockid: id})
}

func (b *thriftBackend) Alter(ctx context.Context, method string, args *wire.Value) error {
	b.calls = append(b.calls, method)
	if method != "alter_table_with_environment_context" {
		return fmt.Errorf("test adapter sends alter_table_with_environment_context only, not %s", method)
	}
	var a thriftgen.AlterTableWithEnvironmentContextArgs
	if err := fromValue(args, &a); err != nil {
		return err
	}
	return b.c.AlterTableWithEnvironmentContext(ctx, a.Dbname, a.TblName, a.NewTbl, a.EnvironmentContext)
}

const (
	icebergHandler = "org.apache.iceberg.mr.hive.HiveIcebergStorageHandler"
	icebergInput   = "org.apache.iceberg.mr.hive.HiveIcebergInputFormat"
	icebergOutput  = "org.apache.iceberg.mr.hive.HiveIcebergOutputFormat"
	icebergSerde   = "org.apache.iceberg.mr.hive.HiveIcebergSerDe"
)

// icebergTable is the record Iceberg's HiveTableOperations writes for a
// table with the Hive engine on.
func icebergTable(db, name, loc, pointer string) *thriftgen.Table {
	return &thriftgen.Table{DbName: db, TableName: name, Owner: "iceberg", TableType: ExternalTable, PartitionKeys: []*thriftgen.FieldSchema{},
		Parameters: map[string]string{"EXTERNAL": "TRUE", KeyTableType: IcebergTableType, KeyMetadataLocation: pointer,
			KeyStorageHandler: icebergHandler, "uuid": "7d1c0e9e-0000-4000-8000-000000000001"},
		Sd: &thriftgen.StorageDescriptor{Location: loc, InputFormat: icebergInput, OutputFormat: icebergOutput,
			Cols:      []*thriftgen.FieldSchema{{Name: "id", Type: "bigint"}, {Name: "v", Type: "string"}},
			SerdeInfo: &thriftgen.SerDeInfo{SerializationLib: icebergSerde, Parameters: map[string]string{}}}}
}

// hs2InsertTable is the Table HiveServer2 3.1 sends on INSERT into that
// table: the compile-time object of a Hive that has no Iceberg handler, so no
// Iceberg key and the abstract descriptor, plus the statistics it updates.
func hs2InsertTable(db, name, loc string) *thriftgen.Table {
	return &thriftgen.Table{DbName: db, TableName: name, Owner: "iceberg", TableType: ExternalTable, PartitionKeys: []*thriftgen.FieldSchema{},
		Parameters: map[string]string{"EXTERNAL": "TRUE", "last_insert_by": "hs2"},
		Sd: &thriftgen.StorageDescriptor{Location: loc, InputFormat: abstractInputFormat, OutputFormat: abstractOutputFormat,
			Cols:      []*thriftgen.FieldSchema{{Name: "id", Type: "bigint"}, {Name: "v", Type: "string"}},
			SerdeInfo: &thriftgen.SerDeInfo{SerializationLib: abstractSerde, Parameters: map[string]string{}}}}
}

func alterArgs(t *testing.T, db, name string, tbl *thriftgen.Table, env map[string]string) *wire.Value {
	t.Helper()
	v, err := toValue(&thriftgen.AlterTableWithEnvironmentContextArgs{Dbname: db, TblName: name, NewTbl: tbl,
		EnvironmentContext: &thriftgen.EnvironmentContext{Properties: env}})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestPointerGuardAgainstHive313(t *testing.T) {
	ms := testbed.StartMetastoreT(t, testbed.Hive313)
	c := metastoreClient(t, ms.URI)
	other := metastoreClient(t, ms.URI) // a second client: "another writer"
	ctx := context.Background()
	dir := t.TempDir()
	db := "iceguard"
	if err := c.CreateDatabase(ctx, &thriftgen.Database{Name: db, LocationUri: "file://" + dir + "/db"}); err != nil {
		t.Fatal(err)
	}
	mk := func(name string) string {
		loc := "file://" + dir + "/" + name
		if err := c.CreateTable(ctx, icebergTable(db, name, loc, loc+"/metadata/00001.metadata.json")); err != nil {
			t.Fatal(err)
		}
		return loc
	}

	// Control: the metastore itself erases the pointer when HS2's Table is
	// forwarded as it is.
	cl := mk("control")
	if err := c.AlterTableWithEnvironmentContext(ctx, db, "control", hs2InsertTable(db, "control", cl), &thriftgen.EnvironmentContext{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.GetTable(ctx, db, "control"); got.Parameters[KeyMetadataLocation] != "" {
		t.Fatalf("control: the metastore kept metadata_location (%v); the scenario proves nothing", got.Parameters)
	}

	m := NewIcebergMetrics(nil)
	opts := DefaultIcebergOptions()
	opts.Metrics = m
	opts.LockAcquireTimeout = 2 * time.Second
	var logs []string
	opts.Log = func(s string) { logs = append(logs, s) }
	g, err := NewIcebergGuard(opts)
	if err != nil {
		t.Fatal(err)
	}
	be := &thriftBackend{c: c}

	// 1. HS2 INSERT: repaired under the table lock; pointer and descriptor kept.
	loc := mk("orders")
	res, err := g.Handle(ctx, be, AlterCall{Catalog: "c1", Lockable: true, Method: "alter_table_with_environment_context",
		Args: alterArgs(t, db, "orders", hs2InsertTable(db, "orders", loc), nil)})
	if err != nil || res.Outcome != OutcomeRepaired || !res.Sent {
		t.Fatalf("HS2 insert: %+v %v", res, err)
	}
	if strings.Join(be.calls, ",") != "get_table,lock,get_table,alter_table_with_environment_context,unlock" {
		t.Errorf("backend calls %v", be.calls)
	}
	got, err := c.GetTable(ctx, db, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if got.Parameters[KeyMetadataLocation] != loc+"/metadata/00001.metadata.json" || got.Parameters[KeyTableType] != IcebergTableType ||
		got.Parameters[KeyStorageHandler] != icebergHandler || got.Parameters["last_insert_by"] != "hs2" {
		t.Errorf("after the repaired alter: %v", got.Parameters)
	}
	if got.Sd.InputFormat != icebergInput || got.Sd.OutputFormat != icebergOutput || got.Sd.SerdeInfo.SerializationLib != icebergSerde {
		t.Errorf("descriptor not kept: %s %s %v", got.Sd.InputFormat, got.Sd.OutputFormat, got.Sd.SerdeInfo.SerializationLib)
	}
	// The lock was released: another writer gets it at once.
	if r, err := other.Lock(ctx, icebergLock(db, "orders")); err != nil || r.State != thriftgen.LockState_ACQUIRED {
		t.Fatalf("lock after the repair: %+v %v", r, err)
	} else if err := other.Unlock(ctx, &thriftgen.UnlockRequest{Lockid: r.Lockid}); err != nil {
		t.Fatal(err)
	}

	// 2. What Iceberg's HiveTableOperations sends on commit: the new pointer,
	// the previous one, and expected_parameter_* in the environment. It is
	// conditional on the pointer it read: forwarded without a read.
	commit := icebergTable(db, "orders", loc, loc+"/metadata/00002.metadata.json")
	commit.Parameters[KeyPreviousMetadataLocation] = loc + "/metadata/00001.metadata.json"
	env := map[string]string{EnvExpectedParameterKey: KeyMetadataLocation, EnvExpectedParameterValue: loc + "/metadata/00001.metadata.json"}
	be.calls = nil
	res, err = g.Handle(ctx, be, AlterCall{Catalog: "c1", Lockable: true, Method: "alter_table_with_environment_context",
		Args: alterArgs(t, db, "orders", commit, env)})
	if err != nil || res.Outcome != OutcomeForwardCommit || res.Sent {
		t.Fatalf("Iceberg commit: %+v %v", res, err)
	}
	if len(be.calls) != 0 {
		t.Errorf("a commit conditional on the pointer it read cost %v", be.calls)
	}

	// 3. Another writer holds the table lock (an Iceberg commit in flight):
	// the repair waits lock-acquire-timeout-ms, then goes out unprotected.
	held, err := other.Lock(ctx, icebergLock(db, "orders"))
	if err != nil || held.State != thriftgen.LockState_ACQUIRED {
		t.Fatalf("holding the lock: %+v %v", held, err)
	}
	opts.LockAcquireTimeout = 300 * time.Millisecond
	g2, _ := NewIcebergGuard(opts)
	start := time.Now()
	res, err = g2.Handle(ctx, be, AlterCall{Catalog: "c1", Lockable: true, Method: "alter_table_with_environment_context",
		Args: alterArgs(t, db, "orders", hs2InsertTable(db, "orders", loc), nil)})
	if err != nil || res.Outcome != OutcomeRepairLockTimeout || !res.Sent {
		t.Fatalf("lock held elsewhere: %+v %v", res, err)
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Errorf("gave up after %v, before the timeout", el)
	}
	if got, _ := c.GetTable(ctx, db, "orders"); got.Parameters[KeyMetadataLocation] == "" {
		t.Errorf("unprotected repair lost the pointer: %v", got.Parameters)
	}
	if err := other.Unlock(ctx, &thriftgen.UnlockRequest{Lockid: held.Lockid}); err != nil {
		t.Fatal(err)
	}
	// Our abandoned waiting lock was released: the table is free again.
	if r, err := other.Lock(ctx, icebergLock(db, "orders")); err != nil || r.State != thriftgen.LockState_ACQUIRED {
		t.Fatalf("lock after the timeout: %+v %v", r, err)
	} else {
		other.Unlock(ctx, &thriftgen.UnlockRequest{Lockid: r.Lockid})
	}

	// 4. A plain Hive table: one read, then remembered.
	plain := &thriftgen.Table{DbName: db, TableName: "plain", TableType: ManagedTable, PartitionKeys: []*thriftgen.FieldSchema{}, Parameters: map[string]string{},
		Sd: &thriftgen.StorageDescriptor{Location: "file://" + dir + "/plain", InputFormat: "org.apache.hadoop.mapred.TextInputFormat",
			OutputFormat: "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
			SerdeInfo:    &thriftgen.SerDeInfo{SerializationLib: abstractSerde}, Cols: []*thriftgen.FieldSchema{{Name: "a", Type: "int"}}}}
	if err := c.CreateTable(ctx, plain); err != nil {
		t.Fatal(err)
	}
	for i, want := range []Outcome{OutcomeNotIceberg, OutcomeCacheSuppressed} {
		be.calls = nil
		res, err = g.Handle(ctx, be, AlterCall{Catalog: "c1", Lockable: true, Method: "alter_table_with_environment_context",
			Args: alterArgs(t, db, "plain", plain, nil)})
		if err != nil || res.Outcome != want || res.Sent {
			t.Fatalf("plain %d: %+v %v", i, res, err)
		}
	}
	if len(be.calls) != 0 {
		t.Errorf("a cached answer cost %v", be.calls)
	}

	// 5. A table that does not exist: read_failed, passed through.
	res, err = g.Handle(ctx, be, AlterCall{Catalog: "c1", Method: "alter_table_with_environment_context",
		Args: alterArgs(t, db, "missing", plain, nil)})
	var nso *thriftgen.NoSuchObjectException
	if err != nil || res.Outcome != OutcomeReadFailed || res.Sent {
		t.Fatalf("missing: %+v %v", res, err)
	}
	if _, gerr := c.GetTable(ctx, db, "missing"); !errors.As(gerr, &nso) {
		t.Fatalf("get_table of a missing table: %v", gerr)
	}

	for o, n := range map[Outcome]float64{OutcomeRepaired: 1, OutcomeForwardCommit: 1, OutcomeRepairLockTimeout: 1,
		OutcomeNotIceberg: 1, OutcomeCacheSuppressed: 1, OutcomeReadFailed: 1} {
		if got := testutil.ToFloat64(m.events.WithLabelValues("c1", string(o))); got != n {
			t.Errorf("%s counted %v, want %v", o, got, n)
		}
	}
	if len(logs) == 0 {
		t.Error("nothing logged")
	}
}
