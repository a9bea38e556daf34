package router

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// encode writes a whole message the way a Java peer does (TBinaryProtocol,
// strict envelope) with the generated Go types.
func encode(t testing.TB, name string, typ thrift.TMessageType, body thrift.TStruct) []byte {
	t.Helper()
	ctx := context.Background()
	buf := thrift.NewTMemoryBuffer()
	p := thrift.NewTBinaryProtocolConf(buf, &thrift.TConfiguration{})
	if err := p.WriteMessageBegin(ctx, name, typ, 7); err != nil {
		t.Fatal(err)
	}
	if err := body.Write(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteMessageEnd(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func cols(n int) []*thriftgen.FieldSchema {
	var out []*thriftgen.FieldSchema
	for i := 0; i < n; i++ {
		out = append(out, &thriftgen.FieldSchema{Name: fmt.Sprintf("c%d", i), Type: "string"})
	}
	return out
}

func sd(loc string) *thriftgen.StorageDescriptor {
	return &thriftgen.StorageDescriptor{Cols: cols(3), Location: loc,
		InputFormat:  "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
		OutputFormat: "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
		SerdeInfo:    &thriftgen.SerDeInfo{Name: "orc", SerializationLib: "org.apache.hadoop.hive.ql.io.orc.OrcSerde"},
		Parameters:   map[string]string{}}
}

func partitions(n int, withSD bool) []*thriftgen.Partition {
	var out []*thriftgen.Partition
	for i := 0; i < n; i++ {
		p := &thriftgen.Partition{Values: []string{fmt.Sprintf("2024-01-%02d", i%31+1)}, DbName: "sales", TableName: "orders",
			CreateTime: 1700000000, Parameters: map[string]string{}}
		if withSD {
			p.Sd = sd(fmt.Sprintf("hdfs://nn:8020/warehouse/sales.db/orders/ds=%d", i))
		}
		out = append(out, p)
	}
	return out
}

func render(t testing.TB, raw []byte, lim TraceLimits) string {
	t.Helper()
	out := RenderRaw(raw, lim)
	if !utf8.ValidString(out) {
		t.Fatalf("rendering is not valid UTF-8: %q", out)
	}
	return out
}

func TestTraceRendersCallWithSchemaNames(t *testing.T) {
	raw := encode(t, "get_table", thrift.CALL, &thriftgen.GetTableArgs{Dbname: "catalog2__sales", TblName: "orders"})
	got := render(t, raw, DefaultTraceLimits)
	if want := "get_table(dbname='catalog2__sales', tbl_name='orders')"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestTraceBoundsElementsPerCollection(t *testing.T) {
	raw := encode(t, "get_partitions", thrift.REPLY, &thriftgen.GetPartitionsResult{Success: partitions(25, false)})
	got := render(t, raw, DefaultTraceLimits)
	if !strings.HasPrefix(got, "get_partitions -> success=[Partition{values=['2024-01-01'], dbName='sales', tableName='orders', createTime=1700000000") {
		t.Fatalf("unexpected rendering start: %.300s", got)
	}
	if n := strings.Count(got, "Partition{"); n != 10 {
		t.Errorf("%d partitions shown, want 10: %s", n, got)
	}
	if !strings.HasSuffix(got, ", … +15 more]") {
		t.Errorf("the 15 partitions not shown are not counted at the end: …%s", got[max(0, len(got)-80):])
	}
	if strings.Contains(got, "truncated") || len(got) > 4000 {
		t.Errorf("a small answer was truncated (%d chars)", len(got))
	}
	// The same bound for maps: 12 parameters, 10 shown.
	params := map[string]string{}
	for i := 0; i < 12; i++ {
		params[fmt.Sprintf("k%02d", i)] = "v"
	}
	raw = encode(t, "get_table", thrift.REPLY, &thriftgen.GetTableMethodResult{Success: &thriftgen.Table{TableName: "t", Parameters: params}})
	got = render(t, raw, DefaultTraceLimits)
	if n := strings.Count(got, "='v'") + strings.Count(got, ": 'v'"); n != 10 || !strings.Contains(got, ", … +2 more}") {
		t.Errorf("map: %d entries shown, want 10 and '… +2 more': %s", n, got)
	}
}

func TestTraceBoundsDepth(t *testing.T) {
	tbl := &thriftgen.Table{TableName: "orders", DbName: "sales", Owner: "alice", Sd: sd("hdfs://nn/w/orders"),
		PartitionKeys: cols(1), Parameters: map[string]string{"numFiles": "3"}, TableType: "MANAGED_TABLE",
		OwnerType: ptr(thriftgen.PrincipalType_USER)}
	raw := encode(t, "get_table", thrift.REPLY, &thriftgen.GetTableMethodResult{Success: tbl})
	got := render(t, raw, DefaultTraceLimits)
	for _, want := range []string{
		"get_table -> success=Table{tableName='orders', dbName='sales', owner='alice'",
		// level 1 is the table, level 2 its storage descriptor, level 3 the
		// descriptor's column list and serde: the columns (level 4) are elided
		"sd=StorageDescriptor{cols=[FieldSchema{…}, FieldSchema{…}, FieldSchema{…}], location='hdfs://nn/w/orders'",
		"serdeInfo=SerDeInfo{name='orc', serializationLib='org.apache.hadoop.hive.ql.io.orc.OrcSerde'}",
		"partitionKeys=[FieldSchema{name='c0', type='string'}]",
		"parameters={'numFiles': '3'}",
		"ownerType=USER", // enums by name
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}

	// A partition list goes one level deeper: list → Partition → sd → its
	// containers and structs are elided with their sizes.
	raw = encode(t, "get_partitions", thrift.REPLY, &thriftgen.GetPartitionsResult{Success: partitions(1, true)})
	got = render(t, raw, DefaultTraceLimits)
	for _, want := range []string{"sd=StorageDescriptor{cols=[… 3 elements], location='hdfs://", "serdeInfo=SerDeInfo{…}"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "c0") {
		t.Errorf("a value below depth 3 was rendered: %s", got)
	}
}

func TestTraceBoundsRecordSize(t *testing.T) {
	raw := encode(t, "get_partitions", thrift.REPLY, &thriftgen.GetPartitionsResult{Success: partitions(2000, true)})
	if len(raw) < 400_000 {
		t.Fatalf("test answer only %d bytes", len(raw))
	}
	got := render(t, raw, DefaultTraceLimits)
	marker := " … [truncated: trace record limit of 4000 characters]"
	if !strings.HasSuffix(got, marker) {
		t.Fatalf("no truncation marker: …%s", got[max(0, len(got)-100):])
	}
	if body := len(got) - len(marker); body > 4000 || body < 3500 {
		t.Errorf("truncated rendering holds %d characters before the marker, want about 4000", body)
	}
	if !strings.HasPrefix(got, "get_partitions -> success=[Partition{") {
		t.Errorf("start: %.200s", got)
	}

	// Cost does not grow with the answer: rendering 2000 partitions
	// allocates no more than rendering 20.
	small := encode(t, "get_partitions", thrift.REPLY, &thriftgen.GetPartitionsResult{Success: partitions(20, true)})
	aSmall := testing.AllocsPerRun(20, func() { RenderRaw(small, DefaultTraceLimits) })
	aBig := testing.AllocsPerRun(20, func() { RenderRaw(raw, DefaultTraceLimits) })
	if aBig > aSmall+4 {
		t.Errorf("rendering 2000 partitions allocates %.0f times, 20 partitions %.0f: not bounded", aBig, aSmall)
	}
}

func TestTraceEscapesAndCutsStrings(t *testing.T) {
	hostile := "a'b\\c\nd\re\x00f\x1bg\x7fh ünï 日本 \u2028 \xff"
	raw := encode(t, "get_database", thrift.CALL, &thriftgen.GetDatabaseArgs{Name: hostile})
	got := render(t, raw, DefaultTraceLimits)
	want := `get_database(name='a\'b\\c\nd\re\x00f\x1bg\x7fh ünï 日本 \u2028 \xff')`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if strings.ContainsAny(got, "\n\r\x00\x1b") {
		t.Errorf("raw control characters in the rendering: %q", got)
	}
	long := strings.Repeat("x", 300) + "日本"
	raw = encode(t, "get_database", thrift.CALL, &thriftgen.GetDatabaseArgs{Name: long})
	got = render(t, raw, DefaultTraceLimits)
	if want := "get_database(name='" + strings.Repeat("x", 256) + "'…(+50 bytes))"; got != want {
		t.Errorf("long string: got %s", got)
	}
	// The cut never splits a character.
	raw = encode(t, "get_database", thrift.CALL, &thriftgen.GetDatabaseArgs{Name: strings.Repeat("x", 255) + "日本"})
	got = render(t, raw, DefaultTraceLimits)
	if want := "get_database(name='" + strings.Repeat("x", 255) + "'…(+6 bytes))"; got != want {
		t.Errorf("cut inside a character: got %s", got)
	}
}

func TestTraceExceptionsAndUnknowns(t *testing.T) {
	raw := encode(t, "get_table", thrift.REPLY, &thriftgen.GetTableMethodResult{O2: &thriftgen.NoSuchObjectException{Message: "sales.orders table not found"}})
	if got, want := render(t, raw, DefaultTraceLimits), "get_table -> o2=NoSuchObjectException{message='sales.orders table not found'}"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	app := wire.AppException("get_table", 3, wire.AppUnknownMethod, "Invalid method name: 'get_table'")
	if got, want := render(t, app, DefaultTraceLimits), "get_table -> TApplicationException{type=UNKNOWN_METHOD, message='Invalid method name: \\'get_table\\''}"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// A method the schema does not know: fields by id, types from the wire.
	body := wire.Struct(wire.Field{ID: 1, V: wire.Str("x")}, wire.Field{ID: 4, V: wire.List(wire.TI64, wire.I64(1), wire.I64(2))})
	raw = wire.AppendMessage(nil, wire.Header{Name: "no_such_rpc", Type: wire.Call, SeqID: 1}, &body)
	if got, want := render(t, raw, DefaultTraceLimits), "no_such_rpc(#1='x', #4=[1, 2])"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// A known method with an unknown field and a field of the wrong type.
	body = wire.Struct(wire.Field{ID: 1, V: wire.I32(5)}, wire.Field{ID: 2, V: wire.Str("t")}, wire.Field{ID: 99, V: wire.Bool(true)})
	raw = wire.AppendMessage(nil, wire.Header{Name: "get_table", Type: wire.Call, SeqID: 1}, &body)
	if got, want := render(t, raw, DefaultTraceLimits), "get_table(#1=5, tbl_name='t', #99=true)"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// Void result.
	raw = wire.AppendMessage(nil, wire.Header{Name: "create_database", Type: wire.Reply, SeqID: 1}, ptr(wire.Struct()))
	if got := render(t, raw, DefaultTraceLimits); got != "create_database -> void" {
		t.Errorf("void reply: %s", got)
	}
}

func TestTraceNeverFailsOnBadInput(t *testing.T) {
	good := encode(t, "get_partitions", thrift.REPLY, &thriftgen.GetPartitionsResult{Success: partitions(3, true)})
	if got := RenderRaw(good[:len(good)/2], DefaultTraceLimits); !strings.HasPrefix(got, "<unreadable message of ") {
		t.Errorf("truncated message: %s", got)
	}
	// A message whose envelope parses but whose body lies about a length.
	m, err := wire.ParseMessage(good, 0)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), good...)
	bad[m.BodyOff+3+1] = 0x7f // element count of the success list: huge
	got := RenderMessage(&wire.Message{Header: m.Header, Raw: bad, BodyOff: m.BodyOff}, DefaultTraceLimits)
	if !strings.Contains(got, "<undecodable: ") || len(got) > 4200 {
		t.Errorf("corrupt body: %.300s", got)
	}
	// Every prefix of a real message renders without panicking.
	for i := 0; i < len(good); i += 7 {
		_ = RenderRaw(good[:i], DefaultTraceLimits)
		_ = RenderMessage(&wire.Message{Header: m.Header, Raw: good[:max(i, m.BodyOff)], BodyOff: m.BodyOff}, DefaultTraceLimits)
	}
}

// capture is a DEBUG logger writing JSON lines into a buffer.
func capture(level slog.Level) (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: level})), &buf
}

func TestLogTracerStages(t *testing.T) {
	log, buf := capture(slog.LevelDebug)
	tr := NewTracer(log)
	in := encode(t, "get_table", thrift.CALL, &thriftgen.GetTableArgs{Dbname: "catalog2__sales", TblName: "orders"})
	msg, err := wire.ParseMessage(in, 0)
	if err != nil {
		t.Fatal(err)
	}
	req := encode(t, "get_table", thrift.CALL, &thriftgen.GetTableArgs{Dbname: "sales", TblName: "orders"})
	rep := encode(t, "get_table", thrift.REPLY, &thriftgen.GetTableMethodResult{Success: &thriftgen.Table{TableName: "orders", DbName: "sales"}})
	repMsg, _ := wire.ParseMessage(rep, 0)
	out := encode(t, "get_table", thrift.REPLY, &thriftgen.GetTableMethodResult{Success: &thriftgen.Table{TableName: "orders", DbName: "catalog2__sales"}})

	conn := &ConnInfo{Remote: "127.0.0.1:5555", Frontend: &planner.Frontend{Name: "primary"}}
	tr.Incoming(42, conn, msg)
	tr.Backend(42, "catalog2", req)
	tr.BackendReply(42, "catalog2", repMsg, nil)
	tr.ClientReply(42, out)
	tr.BackendReply(43, "catalog2", nil, fmt.Errorf("dial tcp 127.0.0.1:1: connection refused"))

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []struct{ stage, key, value string }{
		{StageClientRequest, "call", "get_table(dbname='catalog2__sales', tbl_name='orders')"},
		{StageBackendSelected, "catalog", "catalog2"},
		{StageBackendRequest, "call", "get_table(dbname='sales', tbl_name='orders')"},
		{StageBackendResponse, "reply", "dbName='sales'"},
		{StageClientResponse, "reply", "dbName='catalog2__sales'"},
		{StageBackendResponse, "error", "connection refused"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d records, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, w := range want {
		var rec map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &rec); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if rec["level"] != "DEBUG" || rec["msg"] != "trace" || rec["stage"] != w.stage {
			t.Errorf("record %d: %v, want stage %s at DEBUG", i, rec, w.stage)
		}
		id := float64(42)
		if i == 5 {
			id = 43
		}
		if rec["requestId"] != id {
			t.Errorf("record %d: requestId %v", i, rec["requestId"])
		}
		if v, _ := rec[w.key].(string); !strings.Contains(v, w.value) {
			t.Errorf("record %d (%s): %s=%q, want it to contain %q", i, w.stage, w.key, v, w.value)
		}
	}

	// Off at INFO: nothing is written and nothing rendered.
	log, buf = capture(slog.LevelInfo)
	tr = NewTracer(log)
	allocs := testing.AllocsPerRun(50, func() {
		tr.Incoming(1, conn, msg)
		tr.Backend(1, "catalog2", req)
		tr.BackendReply(1, "catalog2", repMsg, nil)
		tr.ClientReply(1, out)
	})
	if buf.Len() != 0 || allocs != 0 {
		t.Errorf("tracer at INFO wrote %q and allocated %.0f times per request", buf.String(), allocs)
	}
}

// The router hands every plan to the tracer, between the client's request
// and whatever the plan does: a target, a local answer, a split lock
// (catalog2's and catalog3's parts are the shim's), a refusal with its
// reason. The test router's metastores do not exist, so get_table fails
// after its plan.
func TestRouterTracesThePlanOfEachRequest(t *testing.T) {
	log, buf := capture(slog.LevelDebug)
	r := testRouterWith(t, testOptions{Options: Options{Tracer: NewTracer(log)}})
	conn := &ConnInfo{Remote: "127.0.0.1:5555", Frontend: &planner.Frontend{Name: "primary"}}
	calls := []struct {
		method string
		args   wire.Value
		plan   string
	}{
		{"get_table", wire.Struct(wire.Field{ID: 1, V: wire.Str("catalog2__sales")}, wire.Field{ID: 2, V: wire.Str("orders")}),
			""}, // dialled, fails: the plan is traced before
		{"get_catalogs", wire.Struct(), "get_catalogs"},
		{"lock", wire.Struct(wire.Field{ID: 1, V: wire.Struct(
			wire.Field{ID: 1, V: wire.List(wire.TStruct,
				wire.Struct(wire.Field{ID: 1, V: wire.I32(3)}, wire.Field{ID: 2, V: wire.I32(2)}, wire.Field{ID: 3, V: wire.Str("catalog2__a")}),
				wire.Struct(wire.Field{ID: 1, V: wire.I32(3)}, wire.Field{ID: 2, V: wire.I32(2)}, wire.Field{ID: 3, V: wire.Str("catalog3__b")}))},
			wire.Field{ID: 2, V: wire.I64(7)}, wire.Field{ID: 3, V: wire.Str("u")}, wire.Field{ID: 4, V: wire.Str("h")})}),
			"split-lock"},
		{"add_partitions", wire.Struct(wire.Field{ID: 1, V: wire.List(wire.TStruct,
			wire.Struct(wire.Field{ID: 2, V: wire.Str("catalog2__a")}, wire.Field{ID: 3, V: wire.Str("t")}),
			wire.Struct(wire.Field{ID: 2, V: wire.Str("catalog3__a")}, wire.Field{ID: 3, V: wire.Str("t")}))}),
			"refuse ambiguous"},
	}
	for i, c := range calls {
		raw := wire.AppendMessage(nil, wire.Header{Name: c.method, Type: wire.Call, SeqID: int32(i + 1)}, &c.args)
		m, err := wire.ParseMessage(raw, 0)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r.Handle(ctx, conn, m, nil)
		cancel()
	}
	var plans []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if rec["stage"] == StagePlan {
			plans = append(plans, rec)
		}
	}
	if len(plans) != len(calls) {
		t.Fatalf("%d plan records for %d requests:\n%s", len(plans), len(calls), buf.String())
	}
	want := []string{"single catalog2", "get_catalogs", "catalog1", "catalog2 and catalog3"}
	for i, rec := range plans {
		text := fmt.Sprint(rec["plan"])
		if !strings.Contains(text, want[i]) {
			t.Errorf("plan record %d (%s): %q, want it to contain %q", i, calls[i].method, text, want[i])
		}
		if c := calls[i].plan; c != "" && !strings.Contains(strings.ToLower(text), c) {
			t.Errorf("plan record %d (%s): %q, want it to contain %q", i, calls[i].method, text, c)
		}
	}
}
