package hdptest

import (
	"bufio"
	"context"
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// These tests check the test double itself: that it speaks the HDP wire as
// the public HDP IDLs define it, independently of the proxy, so that the
// proxy's end-to-end HDP tests (e2e/hdp_test.go) can fail.

func client(t *testing.T, s *Server) *thriftgen.Client {
	t.Helper()
	sock := thrift.NewTSocketConf(strings.TrimPrefix(s.URI(), "thrift://"), &thrift.TConfiguration{ConnectTimeout: 5 * time.Second, SocketTimeout: 30 * time.Second})
	trans := thrift.NewTBufferedTransport(sock, 8<<10)
	if err := trans.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { trans.Close() })
	proto := thrift.NewTBinaryProtocolConf(trans, nil)
	return thriftgen.NewClient(thrift.NewTStandardClient(proto, proto))
}

// raw sends one hand-built message and returns the reply.
func raw(t *testing.T, s *Server, name string, args wire.Value) *wire.Message {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(s.URI(), "thrift://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write(wire.AppendMessage(nil, wire.Header{Name: name, Type: wire.Call, SeqID: 7}, &args)); err != nil {
		t.Fatal(err)
	}
	m, err := wire.ReadMessage(bufio.NewReader(conn), wire.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.SeqID != 7 || m.Name != name {
		t.Fatalf("reply header %+v does not answer %s seq 7", m.Header, name)
	}
	return m
}

func strList(v ...string) wire.Value {
	l := wire.List(wire.TString)
	for _, s := range v {
		l.Elems = append(l.Elems, wire.Str(s))
	}
	return l
}

func seedDB(t *testing.T, s *Server, name string) {
	t.Helper()
	if err := s.PutDatabase(&thriftgen.Database{Name: name}); err != nil {
		t.Fatal(err)
	}
}

func TestHDPDoubleAnswersOnlyItsProfilesMethods(t *testing.T) {
	ctx := context.Background()
	h78 := Start(t, thriftgen.ProfileHDP78)
	var app thrift.TApplicationException
	// HDP-78 has no create_table_req (HDP 3.1.5 and Hive 4 do).
	err := client(t, h78).CreateTableReq(ctx, &thriftgen.CreateTableRequest{Table: &thriftgen.Table{TableName: "t", DbName: "d"}})
	if !errors.As(err, &app) || app.TypeId() != thrift.UNKNOWN_METHOD || app.Error() != "Invalid method name: 'create_table_req'" {
		t.Fatalf("HDP-78 must not know create_table_req: %v", err)
	}
	if got := h78.Calls("create_table_req"); len(got) != 1 || got[0].Args != nil {
		t.Fatalf("the refused call must be recorded without arguments: %+v", got)
	}
	h315 := Start(t, thriftgen.ProfileHDP315)
	c := client(t, h315)
	// A Hive 4-only method (data connectors) is no HDP method.
	if _, err := c.GetDataconnectors(ctx); !errors.As(err, &app) || app.TypeId() != thrift.UNKNOWN_METHOD {
		t.Fatalf("HDP 3.1.5 must not know get_dataconnectors: %v", err)
	}
	// A method of the profile the double does not implement is refused, not faked.
	var me *thriftgen.MetaException
	if _, err := c.GetFunctions(ctx, "default", "*"); !errors.As(err, &me) || me.Message != "test double does not implement get_functions" {
		t.Fatalf("an unimplemented method must answer a MetaException: %v", err)
	}
	if v, err := c.GetVersion(ctx); err != nil || v != "3.1.0.3.1.5.6150-1" {
		t.Fatalf("getVersion = %q, %v", v, err)
	}
	if v, err := client(t, h78).GetVersion(ctx); err != nil || v != "3.1.0.3.1.0.0-78" {
		t.Fatalf("HDP-78 getVersion = %q, %v", v, err)
	}
}

// The HDP 3.1.5 IDL numbers Table's accessType 23, requiredReadCapabilities
// 24 and requiredWriteCapabilities 25 (Apache 4: 22, 23, 24, and 25 is i64
// id). A create_table built by hand from those ids, without thriftgen's
// dialect tables, is stored and answered exactly so.
func TestHDPDoubleSpeaksTheHDP315TableOfTheIDL(t *testing.T) {
	s := Start(t, thriftgen.ProfileHDP315)
	seedDB(t, s, "db")
	tbl := wire.Struct(
		wire.Field{ID: 1, V: wire.Str("t")},
		wire.Field{ID: 2, V: wire.Str("db")},
		wire.Field{ID: 12, V: wire.Str("MANAGED_TABLE")},
		wire.Field{ID: 23, V: wire.Value{Type: wire.TByte, Int: 8}},
		wire.Field{ID: 24, V: strList("HIVEFULLACIDREAD")},
		wire.Field{ID: 25, V: strList("HIVEFULLACIDWRITE", "HIVEMANAGESTATS")},
	)
	m := raw(t, s, "create_table", wire.Struct(wire.Field{ID: 1, V: tbl}))
	if m.Type != wire.Reply || len(m.Body()) != 1 || m.Body()[0] != wire.TStop {
		t.Fatalf("create_table must succeed with an empty result, got type %d body %x", m.Type, m.Body())
	}
	if c := s.Calls("create_table"); len(c) != 1 || len(c[0].Skipped) != 0 {
		t.Fatalf("nothing of an HDP Table may be skipped: %+v", c)
	}
	got := s.Table("db", "t")
	if got.AccessType == nil || *got.AccessType != 8 ||
		!reflect.DeepEqual(got.RequiredReadCapabilities, []string{"HIVEFULLACIDREAD"}) ||
		!reflect.DeepEqual(got.RequiredWriteCapabilities, []string{"HIVEFULLACIDWRITE", "HIVEMANAGESTATS"}) {
		t.Fatalf("stored table has accessType=%v read=%v write=%v", got.AccessType, got.RequiredReadCapabilities, got.RequiredWriteCapabilities)
	}
	m = raw(t, s, "get_table", wire.Struct(wire.Field{ID: 1, V: wire.Str("db")}, wire.Field{ID: 2, V: wire.Str("t")}))
	res, err := wire.DecodeStruct(m.Body())
	if err != nil || m.Type != wire.Reply {
		t.Fatalf("get_table reply: %v", err)
	}
	back := res.Field(0)
	if back == nil {
		t.Fatalf("get_table answered no table: %+v", res)
	}
	if back.Field(22) != nil {
		t.Fatal("HDP 3.1.5 has no Table field 22")
	}
	if f := back.Field(23); f == nil || f.Type != wire.TByte || f.Int != 8 {
		t.Fatalf("Table 23 must be byte accessType 8: %+v", f)
	}
	if f := back.Field(24); f == nil || len(f.Elems) != 1 || string(f.Elems[0].Str) != "HIVEFULLACIDREAD" {
		t.Fatalf("Table 24 must be the read capabilities: %+v", f)
	}
	if f := back.Field(25); f == nil || f.Type != wire.TList || len(f.Elems) != 2 || string(f.Elems[0].Str) != "HIVEFULLACIDWRITE" {
		t.Fatalf("Table 25 must be the write capabilities: %+v", f)
	}
}

// What a real HDP 3.1.5 server makes of a Table sent in Apache 4 ids, which
// is what a proxy that forgot the dialect would send: accessType is lost,
// the write capabilities become read capabilities, the id is dropped. The
// double shows it (so a test through the proxy catches it) and lists what
// was skipped.
func TestHDPDoubleRevealsAnUnmappedApache4Table(t *testing.T) {
	s := Start(t, thriftgen.ProfileHDP315)
	seedDB(t, s, "db")
	access, id := int8(8), int64(42)
	canonical := context.Background() // Apache 4 ids
	err := client(t, s).CreateTable(canonical, &thriftgen.Table{TableName: "t", DbName: "db", AccessType: &access,
		RequiredReadCapabilities: []string{"R"}, RequiredWriteCapabilities: []string{"W"}, Id: &id})
	if err != nil {
		t.Fatal(err)
	}
	got := s.Table("db", "t")
	if got.AccessType != nil || !reflect.DeepEqual(got.RequiredReadCapabilities, []string{"W"}) || got.RequiredWriteCapabilities != nil {
		t.Fatalf("expected the HDP reading of Apache 4 ids (no accessType, write caps as read caps), got accessType=%v read=%v write=%v",
			got.AccessType, got.RequiredReadCapabilities, got.RequiredWriteCapabilities)
	}
	want := []string{"Table.22", "Table.23 (list, expected byte)", "Table.25 (i64, expected list)"}
	if c := s.Calls("create_table"); len(c) != 1 || !reflect.DeepEqual(c[0].Skipped, want) {
		t.Fatalf("skipped fields: got %+v, want %v", c, want)
	}
	if ids := s.Calls("create_table")[0].SkippedIn("Table"); !reflect.DeepEqual(ids, []int16{22, 23, 25}) {
		t.Fatalf("SkippedIn = %v", ids)
	}
}

// HDP-78's Table ends at field 20: a Hive 4 Table reaches it cut there.
func TestHDPDouble78KeepsTableFieldsUpTo20(t *testing.T) {
	s := Start(t, thriftgen.ProfileHDP78)
	seedDB(t, s, "db")
	access, id, txn, wid := int8(8), int64(42), int64(7), int64(5)
	stats := true
	err := client(t, s).CreateTable(context.Background(), &thriftgen.Table{TableName: "t", DbName: "db",
		WriteId: &wid, IsStatsCompliant: &stats, AccessType: &access,
		RequiredReadCapabilities: []string{"R"}, RequiredWriteCapabilities: []string{"W"}, Id: &id, TxnId: &txn})
	if err != nil {
		t.Fatal(err)
	}
	got := s.Table("db", "t")
	if got.WriteId == nil || *got.WriteId != 5 || got.IsStatsCompliant == nil || !*got.IsStatsCompliant {
		t.Fatalf("fields 19 and 20 are HDP-78's: %+v", got)
	}
	if got.AccessType != nil || got.RequiredReadCapabilities != nil || got.RequiredWriteCapabilities != nil || got.Id != nil || got.TxnId != nil {
		t.Fatalf("fields past 20 must not be stored by HDP-78: %+v", got)
	}
	if ids := s.Calls("create_table")[0].SkippedIn("Table"); !reflect.DeepEqual(ids, []int16{22, 23, 24, 25, 28}) {
		t.Fatalf("skipped Table ids = %v", ids)
	}
}

func TestHDPDoubleStopsWithTheTest(t *testing.T) {
	s, err := Listen(thriftgen.ProfileHDP315)
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, s)
	if _, err := c.GetAllDatabases(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return while a client connection was open")
	}
	if conn, err := net.DialTimeout("tcp", strings.TrimPrefix(s.URI(), "thrift://"), time.Second); err == nil {
		conn.Close()
		t.Fatal("the double still accepts connections after Close")
	}
	if _, err := Listen(thriftgen.ProfileHDP315 | thriftgen.ProfileHDP78); err == nil {
		t.Fatal("a double needs exactly one profile")
	}
}
