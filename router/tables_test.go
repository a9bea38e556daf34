package router

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// The table policies' field ids are the canonical schema's.
func TestTablePolicyFieldIDs(t *testing.T) {
	for _, c := range []struct {
		st, field string
		id        int16
	}{
		{"Table", "tableName", tableFieldName}, {"Table", "dbName", tableFieldDB}, {"Table", "sd", tableFieldSD},
		{"Table", "parameters", tableFieldParams}, {"Table", "tableType", tableFieldType},
		{"GetTableRequest", "dbName", getTableReqDB}, {"GetTableRequest", "tblName", getTableReqTable},
		{"GetTableResult", "table", getTableResultTable},
		{"drop_table_args", "dbname", dropArgsDB}, {"drop_table_args", "name", dropArgsTable}, {"drop_table_args", "deleteData", dropArgsDeleteData},
		{"drop_table_with_environment_context_args", "dbname", dropArgsDB}, {"drop_table_with_environment_context_args", "name", dropArgsTable},
		{"drop_table_with_environment_context_args", "deleteData", dropArgsDeleteData},
		{"DropTableRequest", "dbName", dropReqDB}, {"DropTableRequest", "tableName", dropReqTable}, {"DropTableRequest", "deleteData", dropReqDeleteData},
		{"LockComponent", "tablename", 4}, {"LockRequest", "agentInfo", 5}, {"LockResponse", "state", 2}, {"CheckLockRequest", "lockid", 1},
	} {
		f := thriftgen.LookupStruct(c.st).FieldByName(c.field)
		if f == nil || f.ID != c.id {
			t.Errorf("%s.%s: want id %d, schema has %+v", c.st, c.field, c.id, f)
		}
	}
}

// Which methods the policies serve is derived from the schema: every
// create/alter form with a Table (the *_req ones too), the three drops, and
// every answer that can carry a Table.
func TestTablePolicyMethodsFromSchema(t *testing.T) {
	r := testRouter(t)
	tp, err := newTablePolicy(r, TablePolicies{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]tableOp{
		"create_table": tableOpCreate, "create_table_with_environment_context": tableOpCreate,
		"create_table_with_constraints": tableOpCreate, "create_table_req": tableOpCreate,
		"alter_table": tableOpAlter, "alter_table_with_environment_context": tableOpAlter,
		"alter_table_with_cascade": tableOpAlter, "alter_table_req": tableOpAlter,
		"drop_table": tableOpDrop, "drop_table_with_environment_context": tableOpDrop, "drop_table_req": tableOpDrop,
	}
	for name, op := range want {
		if m := tp.methods[name]; m == nil || m.op != op {
			t.Errorf("%s: want op %d, got %+v", name, op, m)
		}
	}
	for name, m := range tp.methods {
		if m.op != tableOpNone && want[name] != m.op {
			t.Errorf("%s has op %d, which no test expects", name, m.op)
		}
	}
	for _, name := range []string{"get_table", "get_table_req", "get_table_objects_by_name", "get_table_objects_by_name_req",
		"get_all_materialized_view_objects_for_rewriting", "translate_table_dryrun"} {
		if m := tp.methods[name]; m == nil || m.result == "" {
			t.Errorf("%s: its answer carries a Table, but no outward view rewrite is planned", name)
		}
	}
	for _, name := range []string{"get_database", "get_tables", "get_table_meta", "get_partitions"} {
		if m := tp.methods[name]; m != nil && m.result != "" {
			t.Errorf("%s: its answer carries no Table, yet an outward rewrite is planned (%s)", name, m.result)
		}
	}
}

func viewTable(db, name, text string) wire.Value {
	return wire.Struct(
		wire.Field{ID: tableFieldName, V: wire.Str(name)},
		wire.Field{ID: tableFieldDB, V: wire.Str(db)},
		wire.Field{ID: 10, V: wire.Str(text)},
		wire.Field{ID: 11, V: wire.Str(text)},
		wire.Field{ID: tableFieldType, V: wire.Str(virtualView)})
}

func plainTable(db, name string) wire.Value {
	return wire.Struct(wire.Field{ID: tableFieldName, V: wire.Str(name)}, wire.Field{ID: tableFieldDB, V: wire.Str(db)},
		wire.Field{ID: tableFieldType, V: wire.Str("MANAGED_TABLE")})
}

// Outward: a view inside a list inside a result struct is found and its SQL
// named for the client; a body without a view comes back as it is.
func TestTablePolicyOutward(t *testing.T) {
	r := testRouter(t)
	tp, err := newTablePolicy(r, TablePolicies{})
	if err != nil {
		t.Fatal(err)
	}
	list := wire.List(wire.TStruct, plainTable("sales", "t"), viewTable("sales", "v", "select `t`.`id` from `sales`.`t`"))
	body := wire.Struct(wire.Field{ID: 0, V: wire.Struct(wire.Field{ID: 1, V: list})})
	raw := body.Encode()
	out, err := tp.outward("catalog2", "get_table_objects_by_name_req_result", raw)
	if err != nil {
		t.Fatal(err)
	}
	got, err := wire.DecodeStruct(out)
	if err != nil {
		t.Fatal(err)
	}
	tbls := got.Field(0).Field(1).Elems
	if s := tbls[1].Field(11).String(); s != "select `t`.`id` from `catalog2__sales`.`t`" {
		t.Errorf("view text outward: %q", s)
	}
	if s := tbls[0].Field(tableFieldDB).String(); s != "sales" {
		t.Errorf("the table's own dbName is the router's role rewrite, not the view rewrite's: %q", s)
	}
	plainBody := wire.Struct(wire.Field{ID: 0, V: plainTable("sales", "t")})
	plain := plainBody.Encode()
	same, err := tp.outward("catalog2", "get_table_result", plain)
	if err != nil || &same[0] != &plain[0] {
		t.Errorf("a body without a view must pass as it is (err %v)", err)
	}
}

// exchangeFor builds a single-catalog exchange for args of method, planned
// as the router plans it.
func exchangeFor(t *testing.T, r *Router, method string, args wire.Value, remote string) *Exchange {
	t.Helper()
	raw := wire.AppendMessage(nil, wire.Header{Name: method, Type: wire.Call, SeqID: 1}, &args)
	m, err := wire.ParseMessage(raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	req := &request{msg: m, conn: &ConnInfo{Remote: remote}, status: "ok"}
	r.plan(req)
	if req.plan.Kind != planner.PlanSingle {
		t.Fatalf("%s: plan %s", method, &req.plan)
	}
	req.x = Exchange{req: req, Cat: req.plan.Target, lane: r.lane(req.plan.Target)}
	return &req.x
}

// Inward: a view created in catalog2 is sent with backend names; one that
// names another catalog's table is refused before the backend.
func TestTablePolicyInward(t *testing.T) {
	r := testRouter(t)
	tp, err := newTablePolicy(r, TablePolicies{})
	if err != nil {
		t.Fatal(err)
	}
	var sent []byte
	next := func(_ context.Context, x *Exchange) error { sent = x.Args(); return nil }
	h := tp.middleware(next)
	args := wire.Struct(wire.Field{ID: 1, V: viewTable("catalog2__sales", "v", "SELECT id FROM catalog2__sales.t JOIN catalog2__dim.d ON t.k = d.k")})
	if err := h(context.Background(), exchangeFor(t, r, "create_table", args, "127.0.0.1:5")); err != nil {
		t.Fatal(err)
	}
	v, _ := wire.DecodeStruct(sent)
	if s := v.Field(1).Field(11).String(); s != "SELECT id FROM sales.t JOIN dim.d ON t.k = d.k" {
		t.Errorf("inward view text: %q", s)
	}
	if s := v.Field(1).Field(tableFieldDB).String(); s != "sales" {
		t.Errorf("dbName: %q", s)
	}
	sent = nil
	cross := wire.Struct(wire.Field{ID: 1, V: viewTable("catalog2__sales", "v", "SELECT id FROM catalog2__sales.t JOIN catalog3__x.y ON true")})
	err = h(context.Background(), exchangeFor(t, r, "create_table", cross, "127.0.0.1:5"))
	var ref *planner.Refusal
	if !errors.As(err, &ref) || ref.Reason != "view_cross_catalog" || !strings.Contains(ref.Message, "catalog3__x.y") ||
		!strings.Contains(ref.Message, "catalog2__sales.v") {
		t.Fatalf("cross-catalog view: want a refusal naming the reference and the view, got %v", err)
	}
	if sent != nil {
		t.Fatal("a refused view reached the backend")
	}
	// A plain table costs no decode: the arguments are the planner's.
	plain := wire.Struct(wire.Field{ID: 1, V: plainTable("catalog2__sales", "t")})
	x := exchangeFor(t, r, "create_table", plain, "127.0.0.1:5")
	if err := tp.middleware(func(_ context.Context, x *Exchange) error { return nil })(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	if x.args != nil {
		t.Errorf("a non-view create materialised its arguments")
	}
	if !bytes.Equal(wire.Apply(nil, x.req.msg.Body(), x.req.plan.Patches), x.Args()) {
		t.Error("Args")
	}
}
