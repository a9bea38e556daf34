package router

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// The exposure boundary over the whole canonical API, without a metastore:
// every catalog hides database bd_secret and, in bd_pub, every table but
// vis_*. catalog1 (default) runs Hive 4.1, catalog2 HDP 3.1.5, catalog3
// Hive 3.1.3, so every RPC of the schema is served by one of them (the ACID
// ones by the default catalog).
var exposureProps = []string{
	"catalog.catalog1.runtime-profile=APACHE_4_1_0",
	"catalog.catalog2.runtime-profile=HORTONWORKS_3_1_0_3_1_5_6150_1",
	"catalog.catalog3.runtime-profile=APACHE_3_1_3",
}

func init() {
	for _, c := range []string{"catalog1", "catalog2", "catalog3"} {
		exposureProps = append(exposureProps,
			"catalog."+c+".expose-mode=DENY_BY_DEFAULT",
			"catalog."+c+".expose-db-patterns=bd_pub",
			"catalog."+c+".expose-table-patterns.bd_pub=vis_.*",
			"catalog."+c+".conf.hive.metastore.connect.retries=0")
	}
}

// exposureRouter is the test router with exposureProps.
func exposureRouter(t *testing.T, extra ...string) (r *Router, reached, dialed *atomic.Int64) {
	return recordingRouter(t, append(append([]string{}, exposureProps...), extra...)...)
}

// recordingRouter is a test router whose reached counts the exchanges that
// got past every policy to the executor (an Inner middleware answers them),
// and dialed the backend connections something tried to open.
func recordingRouter(t *testing.T, props ...string) (r *Router, reached, dialed *atomic.Int64) {
	reached, dialed = new(atomic.Int64), new(atomic.Int64)
	opt := testOptions{Options: Options{
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Inner: []Middleware{func(Handler) Handler {
			return func(context.Context, *Exchange) error {
				reached.Add(1)
				return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "test", Message: "reached the executor"}
			}
		}}},
		Dial: func(context.Context, string, string) (net.Conn, error) {
			dialed.Add(1)
			return nil, errors.New("no metastore in this test")
		},
	}
	return testRouterWith(t, opt, props...), reached, dialed
}

// sampleNamed builds a value of a schema type naming database db and table
// tbl wherever the schema has a database, "db.table" or table field; a
// catalog field is left out, other strings are "x", containers hold one
// element, nesting stops at depth 6.
func sampleNamed(t *thriftgen.Type, owner string, f *thriftgen.Field, db, tbl string, depth int) (wire.Value, bool) {
	switch t.Kind {
	case thriftgen.KindString, thriftgen.KindBinary:
		if f != nil && t.Kind == thriftgen.KindString {
			switch methods.RoleOfObject(owner, f) {
			case methods.RoleDB, methods.RoleDBPattern:
				return wire.Str(db), true
			case methods.RoleFullTable:
				return wire.Str(db + "." + tbl), true
			case methods.RoleTable:
				return wire.Str(tbl), true
			case methods.RoleCatalog:
				return wire.Value{}, false
			}
		}
		return wire.Str("x"), true
	case thriftgen.KindBool:
		return wire.Bool(false), true
	case thriftgen.KindByte:
		return wire.Value{Type: wire.TByte}, true
	case thriftgen.KindI16:
		return wire.Value{Type: wire.TI16, Int: 1}, true
	case thriftgen.KindI32, thriftgen.KindEnum:
		return wire.I32(1), true
	case thriftgen.KindI64:
		return wire.I64(1), true
	case thriftgen.KindDouble:
		return wire.Value{Type: wire.TDouble, Dbl: 1}, true
	case thriftgen.KindStruct:
		if depth > 6 {
			return wire.Value{}, false
		}
		st := thriftgen.LookupStruct(t.Name)
		v := wire.Struct()
		for _, sf := range st.Fields {
			if x, ok := sampleNamed(sf.Type, st.Name, sf, db, tbl, depth+1); ok {
				v.Fields = append(v.Fields, wire.Field{ID: sf.ID, V: x})
			}
		}
		return v, true
	case thriftgen.KindList, thriftgen.KindSet:
		v := wire.Value{Type: wire.WireType(t), ElemType: wire.WireType(t.Elem)}
		if x, ok := sampleNamed(t.Elem, owner, f, db, tbl, depth+1); ok {
			v.Elems = append(v.Elems, x)
		}
		return v, true
	case thriftgen.KindMap:
		return wire.Value{Type: wire.TMap, KeyType: wire.WireType(t.Key), ElemType: wire.WireType(t.Value)}, true
	}
	return wire.Value{}, false
}

func sampleArgsNamed(m *thriftgen.Method, db, tbl string) wire.Value {
	v, _ := sampleNamed(&thriftgen.Type{Kind: thriftgen.KindStruct, Name: m.Args.Name}, "", nil, db, tbl, 0)
	return v
}

// serveCall runs one call through the router and returns the reply.
func serveCall(t *testing.T, r *Router, method string, args wire.Value) *wire.Message {
	t.Helper()
	raw := wire.AppendMessage(nil, wire.Header{Name: method, Type: wire.Call, SeqID: 7}, &args)
	m, err := wire.ParseMessage(raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := r.Handle(context.Background(), &ConnInfo{}, m, nil)
	if len(out) == 0 {
		return nil
	}
	reply, err := wire.ParseMessage(out, 0)
	if err != nil {
		t.Fatalf("%s: unreadable reply: %v", method, err)
	}
	return reply
}

// replyError is the exception a reply carries: its result field id (-1 for
// a TApplicationException, 0 for none) and message.
func replyError(t *testing.T, m *wire.Message) (int16, string) {
	t.Helper()
	if m == nil {
		return 0, ""
	}
	if m.Type == wire.Exception {
		_, msg, _ := wire.ParseAppException(m.Body())
		return -1, msg
	}
	v, err := wire.DecodeStruct(m.Body())
	if err != nil {
		t.Fatalf("%s: %v", m.Name, err)
	}
	for _, f := range v.Fields {
		if f.ID != 0 {
			return f.ID, f.V.Field(1).String()
		}
	}
	return 0, ""
}

// namesObjects reports whether a method's sample arguments carry a name the
// exposure rules judge: a database, a "db.table", or a table with its
// database.
func namesObjects(t *testing.T, r *Router, m *thriftgen.Method) bool {
	spec := r.table.Lookup(m.Name)
	if spec.Objects == nil {
		return false
	}
	var c nameCollector
	args := sampleArgsNamed(m, "d", "t")
	if err := wire.WalkVisitor(args.Encode(), spec.Objects, 0, &c); err != nil {
		t.Fatal(err)
	}
	for _, s := range c.spans {
		if s.role == methods.RoleDB || s.role == methods.RoleFullTable {
			return true
		}
	}
	return false
}

// Every RPC of the canonical schema whose arguments name a database or a
// table, in any struct and any *_req form, is refused when the name is
// hidden (a hidden database; a hidden table of a visible database), with
// the RPC's declared not-found exception and the client's name, before
// anything is sent; the same call naming visible objects passes the rules.
// A new RPC is covered by construction, and this test says so.
func TestExposureRefusesEveryRPCNamingAHiddenObject(t *testing.T) {
	r, reached, dialed := exposureRouter(t)
	covered := 0
	for _, m := range thriftgen.AllMethods() {
		spec := r.table.Lookup(m.Name)
		if spec.Special != methods.None || !namesObjects(t, r, m) {
			continue
		}
		covered++
		for _, kind := range []struct {
			what, db, tbl, name string
		}{
			{"database", "bd_secret", "vis_a", "bd_secret"},
			{"table", "bd_pub", "hid_x", "bd_pub.hid_x"},
		} {
			if kind.what == "table" && !namesTable(t, r, m) {
				continue
			}
			refused := 0
			for _, prefix := range []string{"", "catalog2__", "catalog3__"} {
				before, dials := reached.Load(), dialed.Load()
				reply := serveCall(t, r, m.Name, noLockTxn(m, sampleArgsNamed(m, prefix+kind.db, kind.tbl)))
				if reached.Load() != before || dialed.Load() != dials {
					t.Errorf("%s naming hidden %s %s%s reached the metastore", m.Name, kind.what, prefix, kind.name)
					continue
				}
				field, msg := replyError(t, reply)
				if !strings.Contains(msg, "not found") && !strings.Contains(msg, "hidden by the exposure rules") {
					continue // refused by the planner before the exposure rules (an ACID call on another catalog, a runtime without the RPC)
				}
				refused++
				if want := prefix + kind.name; !strings.Contains(msg, want) {
					t.Errorf("%s: refusal %q does not name %s as the client does", m.Name, msg, want)
				}
				want := spec.NotFoundField(kind.what == "table")
				if strings.Contains(msg, "hidden by the exposure rules") {
					want = spec.MetaExcField // a definition of the hidden object: a policy refusal
				}
				if want >= 0 && field != want || want < 0 && field != -1 {
					t.Errorf("%s: refusal in result field %d, want the declared not-found exception in field %d", m.Name, field, want)
				}
			}
			if refused == 0 {
				t.Errorf("%s naming a hidden %s was refused by no catalog's exposure rules", m.Name, kind.what)
			}
		}
		// The same call naming visible objects passes the rules.
		for _, prefix := range []string{"", "catalog2__", "catalog3__"} {
			_, msg := replyError(t, serveCall(t, r, m.Name, sampleArgsNamed(m, prefix+"bd_pub", "vis_a")))
			if strings.Contains(msg, "bd_pub") && (strings.Contains(msg, " not found") || strings.Contains(msg, "hidden by the exposure")) {
				t.Errorf("%s naming visible objects was refused: %s", m.Name, msg)
			}
		}
	}
	if covered < 150 {
		t.Fatalf("only %d RPCs name objects: the sample arguments lost their names", covered)
	}
	if reached.Load() == 0 {
		t.Fatal("no call with visible names reached the executor: the test cannot tell a refusal from a pass")
	}
}

// namesTable reports whether the sample arguments name a table of a
// database (a table field with its partner, or "db.table").
func namesTable(t *testing.T, r *Router, m *thriftgen.Method) bool {
	spec := r.table.Lookup(m.Name)
	var c nameCollector
	args := sampleArgsNamed(m, "d", "t")
	if err := wire.WalkVisitor(args.Encode(), spec.Objects, 0, &c); err != nil {
		t.Fatal(err)
	}
	groupByOwner(c.spans)
	for _, s := range c.spans {
		if s.role == methods.RoleFullTable {
			return true
		}
		if s.role == methods.RoleTable {
			return true // paired with its struct's database, or with the request's
		}
	}
	return false
}

// Every table field of the schema pairs with the database of its own struct
// (or, in structs with two, with the one tablePartnerOverrides names); the
// few structs with table names and no database field are answers whose
// database is the request's.
func TestEveryTableFieldHasItsDatabase(t *testing.T) {
	table, err := methods.BuildTable()
	if err != nil {
		t.Fatal(err)
	}
	var alone []string
	for _, st := range thriftgen.AllStructs() {
		for _, f := range st.Fields {
			if methods.RoleOfObject(st.Name, f) != methods.RoleTable {
				continue
			}
			if _, ok := table.Partner(st.Name, f.ID); !ok {
				alone = append(alone, st.Name+"."+f.Name)
			}
		}
	}
	sort.Strings(alone)
	if got := strings.Join(alone, " "); got != "ExtendedTableInfo.tblName" {
		t.Fatalf("table fields without a database in their struct: %s", got)
	}
}

// Every string field whose name says it holds a table is one the exposure
// walks read, or is listed here as something else (a pattern, a type).
func TestEveryTableNameFieldIsJudged(t *testing.T) {
	notTables := map[string]bool{
		"Table.tableType": true, "TableMeta.tableType": true, "get_tables_by_type_args.tableType": true,
		"GetTablesExtRequest.tableNamePattern": true, "GetTablesRequest.tablesPattern": true,
		"get_table_meta_args.tbl_patterns": true,
		"WriteEventInfo.tableObj":          true, // the table serialized as JSON, next to WriteEventInfo.table
	}
	for _, st := range thriftgen.AllStructs() {
		for _, f := range st.Fields {
			n := strings.ToLower(f.Name)
			if f.Type.Kind != thriftgen.KindString || !(strings.Contains(n, "tbl") || strings.Contains(n, "table")) {
				continue
			}
			if methods.RoleOfObject(st.Name, f) == wire.RoleNone && !notTables[st.Name+"."+f.Name] {
				t.Errorf("%s.%s looks like a table name but no exposure walk reads it", st.Name, f.Name)
			}
		}
	}
}

// Every answer that can name objects is filtered: for each RPC, an answer
// naming only hidden objects loses them (or, when the answer is about one,
// becomes the not-found refusal), and an answer naming only visible ones
// passes byte for byte.
func TestExposureFiltersEveryAnswerNamingObjects(t *testing.T) {
	r, _, _ := exposureRouter(t)
	filtered := 0
	for _, m := range thriftgen.AllMethods() {
		spec := r.table.Lookup(m.Name)
		if m.Result == nil || spec.Special != methods.None || spec.ResultObjects == nil && !tableNameLists[m.Name] {
			continue
		}
		x := sampleExchange(t, r, m, "catalog2__bd_pub")
		if x == nil {
			continue
		}
		visible := sampleResult(m, "bd_pub", "vis_a")
		vb := visible.Encode()
		got, err := r.filterAnswer(x, vb)
		if err != nil || !bytes.Equal(got, vb) {
			t.Errorf("%s: an answer naming visible objects changed (%v)", m.Name, err)
		}
		for _, names := range [][2]string{{"bd_secret", "vis_a"}, {"bd_pub", "hid_x"}} {
			hidden := sampleResult(m, names[0], names[1])
			hb := hidden.Encode()
			got, err := r.filterAnswer(x, hb)
			var ref *planner.Refusal
			switch {
			case errors.As(err, &ref):
				if ref.Reason != "exposure" || !strings.Contains(ref.Message, "bd_secret") && !strings.Contains(ref.Message, "hid_x") {
					t.Errorf("%s: refusal %v", m.Name, ref)
				}
				filtered++
			case err != nil:
				t.Errorf("%s: %v", m.Name, err)
			case bytes.Equal(got, hb):
				// nothing hidden in it: the sample names no object of its own
				var c nameCollector
				if spec.ResultObjects != nil {
					_ = wire.WalkVisitor(hb, spec.ResultObjects, 0, &c)
				}
				// (a list of table names is of the request's database, bd_pub)
				if tableNameLists[m.Name] && names[1] == "hid_x" || r.namesHidden(x.Cat, c.spans, "bd_pub", r.hiddenOf) {
					t.Errorf("%s: an answer naming hidden objects passed unchanged", m.Name)
				}
			default:
				var c nameCollector
				if spec.ResultObjects != nil {
					if err := wire.WalkVisitor(got, spec.ResultObjects, 0, &c); err != nil {
						t.Fatalf("%s: %v", m.Name, err)
					}
					if r.namesHidden(x.Cat, c.spans, "bd_pub", r.hiddenOf) {
						t.Errorf("%s: the filtered answer still names a hidden object", m.Name)
					}
				}
				filtered++
			}
		}
	}
	if filtered < 50 {
		t.Fatalf("only %d answers were filtered", filtered)
	}
}

// sampleResult is a success result of m naming database db and table tbl
// (a list of table names holds tbl).
func sampleResult(m *thriftgen.Method, db, tbl string) wire.Value {
	if tableNameLists[m.Name] {
		return wire.Struct(wire.Field{ID: 0, V: wire.List(wire.TString, wire.Str(tbl))})
	}
	v, _ := sampleNamed(&thriftgen.Type{Kind: thriftgen.KindStruct, Name: m.Result.Name}, "", nil, db, tbl, 0)
	kept := v.Fields[:0] // a result holds one field: the success value
	for _, f := range v.Fields {
		if f.ID == 0 {
			kept = append(kept, f)
		}
	}
	v.Fields = kept
	return v
}

// sampleExchange plans a call of m naming db and returns its exchange (nil
// when it is not a single-catalog plan).
func sampleExchange(t *testing.T, r *Router, m *thriftgen.Method, db string) *Exchange {
	t.Helper()
	args := sampleArgsNamed(m, db, "vis_a")
	raw := wire.AppendMessage(nil, wire.Header{Name: m.Name, Type: wire.Call, SeqID: 1}, &args)
	msg, err := wire.ParseMessage(raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	req := &request{msg: msg, conn: &ConnInfo{}, status: "ok"}
	r.plan(req)
	if req.plan.Kind != planner.PlanSingle {
		return nil
	}
	req.x = Exchange{req: req, Cat: req.plan.Target, lane: r.lane(req.plan.Target)}
	return &req.x
}

// A lock naming two catalogs is split by the lock shim; each of its names
// is judged by its own catalog's rules, before any part is taken.
func TestExposureJudgesEachPartOfASplitLock(t *testing.T) {
	r, reached, dialed := exposureRouter(t)
	for _, c := range []struct {
		comps [][2]string
		want  string
	}{
		{[][2]string{{"bd_pub", "vis_a"}, {"catalog2__bd_secret", "vis_a"}}, "database catalog2__bd_secret not found"},
		{[][2]string{{"bd_secret", "vis_a"}, {"catalog2__bd_pub", "vis_a"}}, "database bd_secret not found"},
		{[][2]string{{"bd_pub", "vis_a"}, {"catalog3__bd_pub", "hid_x"}}, "table catalog3__bd_pub.hid_x not found"},
		{[][2]string{{"catalog2__bd_pub", "vis_a"}, {"catalog3__bd_pub", "vis_b"}}, ""},
	} {
		if p := planOf(t, r, "lock", lockReq(c.comps...)); !p.SplitLock {
			t.Fatalf("%v: not a split lock: %s", c.comps, p)
		}
		before, dials := reached.Load(), dialed.Load()
		_, msg := replyError(t, serveCall(t, r, "lock", lockReq(c.comps...)))
		if c.want == "" {
			if strings.Contains(msg, "not found") {
				t.Errorf("%v: visible names refused: %s", c.comps, msg)
			}
			continue
		}
		if msg != c.want {
			t.Errorf("%v: answered %q, want %q", c.comps, msg, c.want)
		}
		if reached.Load() != before || dialed.Load() != dials {
			t.Errorf("%v: a part reached a metastore", c.comps)
		}
	}
}

// Lists of names without their databases cannot be filtered: without a
// database they are refused; with one, the database is judged.
func TestExposureRefusesUnattributedLists(t *testing.T) {
	r, reached, _ := exposureRouter(t)
	for m := range unattributedLists {
		method := thriftgen.LookupMethod(m)
		all := sampleArgsNamed(method, "", "t")
		all.Field(1).Del(2) // no dbName
		if _, msg := replyError(t, serveCall(t, r, m, all)); !strings.Contains(msg, "name the database") {
			t.Errorf("%s without a database: %q", m, msg)
		}
		if _, msg := replyError(t, serveCall(t, r, m, sampleArgsNamed(method, "bd_secret", "t"))); msg != "database bd_secret not found" {
			t.Errorf("%s of a hidden database: %q", m, msg)
		}
		before := reached.Load()
		serveCall(t, r, m, sampleArgsNamed(method, "bd_pub", "t"))
		if reached.Load() != before+1 {
			t.Errorf("%s of a visible database did not reach the executor", m)
		}
	}
}
