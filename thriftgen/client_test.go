package thriftgen

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"
)

// replyClient returns a Client whose peer answers with the given reply (written in advance into the input
// buffer), and the buffer the Client writes its call into.
func replyClient(t *testing.T, method string, mt thrift.TMessageType, reply thrift.TStruct) (*Client, *thrift.TMemoryBuffer) {
	t.Helper()
	ctx := context.Background()
	in, out := thrift.NewTMemoryBuffer(), thrift.NewTMemoryBuffer()
	ip := thrift.NewTBinaryProtocolConf(in, nil)
	if reply != nil {
		if err := ip.WriteMessageBegin(ctx, method, mt, 1); err != nil {
			t.Fatal(err)
		}
		if err := reply.Write(ctx, ip); err != nil {
			t.Fatal(err)
		}
		if err := ip.WriteMessageEnd(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return NewClient(thrift.NewTStandardClient(ip, thrift.NewTBinaryProtocolConf(out, nil))), out
}

// sentCall decodes the call the client wrote.
func sentCall(t *testing.T, out *thrift.TMemoryBuffer, args thrift.TStruct) (string, thrift.TMessageType) {
	t.Helper()
	ctx := context.Background()
	p := thrift.NewTBinaryProtocolConf(out, nil)
	name, mt, _, err := p.ReadMessageBegin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := args.Read(ctx, p); err != nil {
		t.Fatal(err)
	}
	return name, mt
}

func TestClientSuccessAndArgs(t *testing.T) {
	c, out := replyClient(t, "get_table", thrift.REPLY, &GetTableMethodResult{Success: &Table{TableName: "t", DbName: "d"}})
	tbl, err := c.GetTable(context.Background(), "d", "t")
	if err != nil || tbl.TableName != "t" || tbl.DbName != "d" {
		t.Fatalf("GetTable = %+v, %v", tbl, err)
	}
	var args GetTableArgs
	if name, mt := sentCall(t, out, &args); name != "get_table" || mt != thrift.CALL || args.Dbname != "d" || args.TblName != "t" {
		t.Fatalf("sent %s %v %+v", name, mt, args)
	}
}

func TestClientSendsEmptyStringArguments(t *testing.T) {
	c, out := replyClient(t, "get_all_tables", thrift.REPLY, &GetAllTablesResult{Success: []string{}})
	tables, err := c.GetAllTables(context.Background(), "")
	if err != nil || tables == nil || len(tables) != 0 {
		t.Fatalf("GetAllTables = %#v, %v", tables, err)
	}
	p := thrift.NewTBinaryProtocolConf(out, nil)
	if _, _, _, err := p.ReadMessageBegin(context.Background()); err != nil {
		t.Fatal(err)
	}
	// db_name "" is still sent, as a Java client sends a non-null empty string
	if got := topFields(t, out.Bytes()); len(got) != 1 || got[0] != (wireField{1, thrift.STRING}) {
		t.Fatalf("get_all_tables args fields %v, want [1:string]", got)
	}
}

func TestClientDeclaredExceptionIsTyped(t *testing.T) {
	c, _ := replyClient(t, "get_table", thrift.REPLY, &GetTableMethodResult{O2: &NoSuchObjectException{Message: "sales.orders table not found"}})
	_, err := c.GetTable(context.Background(), "sales", "orders")
	var nso *NoSuchObjectException
	if !errors.As(err, &nso) || nso.Message != "sales.orders table not found" {
		t.Fatalf("err = %v (%T), want *NoSuchObjectException", err, err)
	}
}

func TestClientVoidMethodException(t *testing.T) {
	c, _ := replyClient(t, "drop_table", thrift.REPLY, &DropTableResult{O3: &MetaException{Message: "denied"}})
	err := c.DropTable(context.Background(), "d", "t", true)
	var me *MetaException
	if !errors.As(err, &me) {
		t.Fatalf("err = %v, want *MetaException", err)
	}
	c, _ = replyClient(t, "drop_table", thrift.REPLY, &DropTableResult{})
	if err := c.DropTable(context.Background(), "d", "t", true); err != nil {
		t.Fatalf("void success: %v", err)
	}
}

func TestClientMissingResultAndUnknownMethod(t *testing.T) {
	c, _ := replyClient(t, "get_table", thrift.REPLY, &GetTableMethodResult{})
	_, err := c.GetTable(context.Background(), "d", "t")
	var ae thrift.TApplicationException
	if !errors.As(err, &ae) || ae.TypeId() != thrift.MISSING_RESULT {
		t.Fatalf("err = %v, want MISSING_RESULT", err)
	}
	c, _ = replyClient(t, "get_table", thrift.EXCEPTION,
		thrift.NewTApplicationException(thrift.UNKNOWN_METHOD, "Invalid method name: 'get_table'"))
	_, err = c.GetTable(context.Background(), "d", "t")
	if !errors.As(err, &ae) || ae.TypeId() != thrift.UNKNOWN_METHOD {
		t.Fatalf("err = %v, want UNKNOWN_METHOD", err)
	}
}

func TestClientScalarResultAndOneway(t *testing.T) {
	v := "3.1.3"
	c, _ := replyClient(t, "getVersion", thrift.REPLY, &GetVersionResult{Success: &v})
	if got, err := c.GetVersion(context.Background()); err != nil || got != "3.1.3" {
		t.Fatalf("GetVersion = %q, %v", got, err)
	}
	c, out := replyClient(t, "shutdown", 0, nil)
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatalf("oneway shutdown: %v", err)
	}
	if name, _ := sentCall(t, out, &ShutdownArgs{}); name != "shutdown" {
		t.Fatalf("sent %s", name)
	}
}

func TestClientUsesWireProfile(t *testing.T) {
	at := int8(8)
	hdp := WithWireProfile(context.Background(), ProfileHDP315)
	// the reply as an HDP 3.1.5 server writes it
	in, out := thrift.NewTMemoryBuffer(), thrift.NewTMemoryBuffer()
	ip := thrift.NewTBinaryProtocolConf(in, nil)
	_ = ip.WriteMessageBegin(hdp, "get_table", thrift.REPLY, 1)
	_ = (&GetTableMethodResult{Success: &Table{TableName: "t", AccessType: &at}}).Write(hdp, ip)
	_ = ip.WriteMessageEnd(hdp)
	c := NewClient(thrift.NewTStandardClient(ip, thrift.NewTBinaryProtocolConf(out, nil)))
	tbl, err := c.GetTable(hdp, "d", "t")
	if err != nil || tbl.AccessType == nil || *tbl.AccessType != 8 {
		t.Fatalf("GetTable over HDP 3.1.5 = %+v, %v", tbl, err)
	}
}
