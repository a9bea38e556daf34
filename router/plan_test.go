package router

import (
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/locks"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// The planner is tested without a backend: a router over three catalogs
// whose metastores are never dialled (catalog3 runs Hive 4.1).
func testRouter(t *testing.T, extra ...string) *Router {
	t.Helper()
	return testRouterWith(t, Options{}, extra...)
}

// testRouterWith is testRouter with more options (Config and Locks are set
// here).
func testRouterWith(t *testing.T, opt Options, extra ...string) *Router {
	t.Helper()
	props := map[string]string{
		"catalogs":                "catalog1,catalog2,catalog3",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": "thrift://127.0.0.1:1",
		"catalog.catalog2.conf.hive.metastore.uris": "thrift://127.0.0.1:2",
		"catalog.catalog3.conf.hive.metastore.uris": "thrift://127.0.0.1:3",
		"catalog.catalog3.runtime-profile":          "APACHE_4_1_0",
		"synthetic-read-lock.store.mode":            "IN_MEMORY",
	}
	for _, kv := range extra {
		if k, ok := strings.CutPrefix(kv, "-"); ok { // "-key": leave the key out
			delete(props, k)
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		props[k] = v
	}
	cfg, err := configs.Parse(props)
	if err != nil {
		t.Fatal(err)
	}
	// As app builds it with several catalogs: the synthetic lock shim serves
	// the locks of non-default catalogs (in memory here).
	shim, err := locks.New(locks.Options{Store: locks.NewMemoryStore(), Rules: locks.RulesHive3, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shim.Close() })
	opt.Config, opt.Locks = cfg, shim
	r, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// planOf plans one call with the given arguments.
func planOf(t *testing.T, r *Router, method string, args wire.Value) *Plan {
	t.Helper()
	raw := wire.AppendMessage(nil, wire.Header{Name: method, Type: wire.Call, SeqID: 1}, &args)
	m, err := wire.ParseMessage(raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	req := &request{msg: m, conn: &ConnInfo{}, status: "ok"}
	r.plan(req)
	return &req.plan
}

// sample builds a representative value of a schema type: every database
// field names db (its role decides), every catalog field is left out (it
// would be a hint of its own), strings elsewhere are "x", containers hold
// one element, nesting stops at depth 4.
func sample(t *thriftgen.Type, owner string, f *thriftgen.Field, db string, depth int) (wire.Value, bool) {
	switch t.Kind {
	case thriftgen.KindString, thriftgen.KindBinary:
		if f != nil {
			switch roleOfArgs(owner, f) {
			case RoleDB, RoleDBPattern:
				return wire.Str(db), true
			case RoleFullTable:
				return wire.Str(db + ".t"), true
			case RoleCatalog:
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
		if depth > 4 {
			return wire.Value{}, false
		}
		st := thriftgen.LookupStruct(t.Name)
		v := wire.Struct()
		for _, sf := range st.Fields {
			if x, ok := sample(sf.Type, st.Name, sf, db, depth+1); ok {
				v.Fields = append(v.Fields, wire.Field{ID: sf.ID, V: x})
			}
		}
		return v, true
	case thriftgen.KindList, thriftgen.KindSet:
		v := wire.Value{Type: wire.WireType(t), ElemType: wire.WireType(t.Elem)}
		if x, ok := sample(t.Elem, owner, f, db, depth+1); ok {
			v.Elems = append(v.Elems, x)
		}
		return v, true
	case thriftgen.KindMap:
		return wire.Value{Type: wire.TMap, KeyType: wire.WireType(t.Key), ElemType: wire.WireType(t.Value)}, true
	}
	return wire.Value{}, false
}

func sampleArgs(m *thriftgen.Method, db string) wire.Value {
	v, _ := sample(&thriftgen.Type{Kind: thriftgen.KindStruct, Name: m.Args.Name}, "", nil, db, 0)
	return v
}

// Every row of the method table, planned for a representative request that
// names catalog2's database "sales", lands where the routing model says:
// on catalog2 with the name rewritten, fanned out, answered locally, or
// refused for the row's reason.
func TestPlannerOverEveryMethodRow(t *testing.T) {
	r := testRouter(t)
	c2 := r.ns.Lookup("catalog2")
	for _, m := range thriftgen.AllMethods() {
		spec := r.table.Lookup(m.Name)
		p := planOf(t, r, m.Name, sampleArgs(m, "catalog2__sales"))
		hasDB := planOf(t, r, m.Name, sampleArgs(m, "MARK")).Kind == PlanSingle && len(rawDBs(t, r, m)) > 0
		switch {
		case spec.Special == RefuseAlways:
			expectRefusal(t, m.Name, p, "catalog_registry")
		case spec.Special == DropOneway || spec.Special == LocalSetUGI || spec.Special == LocalCatalogs:
			if p.Kind != PlanLocal {
				t.Errorf("%s: want a local answer, got %s", m.Name, p)
			}
		case spec.Special == FanOutDatabases || spec.Special == FanOutTableMeta:
			if p.Kind != PlanFanOut || len(p.Legs) == 0 {
				t.Errorf("%s: want a fan-out, got %s", m.Name, p)
			}
			for _, l := range p.Legs {
				if m.Name != "get_all_databases" && l.Cat != c2 {
					t.Errorf("%s with a catalog2 pattern asked %s", m.Name, l.Cat.Name)
				}
			}
		case p.Kind == PlanRefuse:
			// The only other refusals: a runtime that cannot serve the
			// method (HDP-only methods on catalog2's 3.1.3), or a
			// namespace-less write.
			switch p.Refusal.Reason {
			case "hortonworks_only", "unsupported":
				if mode, _ := r.adapters.Plan(r.runtimes[c2], m.Name); mode != compat.HortonworksOnly && mode != compat.Unsupported {
					t.Errorf("%s refused as %s, but catalog2's runtime serves it", m.Name, p.Refusal.Reason)
				}
			case "namespace_less":
				if spec.Unrouted != Refuse || hasDB {
					t.Errorf("%s refused as namespace-less: %s", m.Name, p.Refusal.Message)
				}
			case "non_default_acid": // write ids exist only in the default catalog (acid.go)
				if !writeIDMethods[m.Name] && !pinnedMethods[m.Name] {
					t.Errorf("%s refused as an ACID call on catalog2: %s", m.Name, p.Refusal.Message)
				}

			default:
				t.Errorf("%s: unexpected refusal %s", m.Name, p)
			}
		case p.Kind == PlanSingle:
			if len(rawDBs(t, r, m)) > 0 {
				if p.Target != c2 || p.DefaultRouted {
					t.Errorf("%s names catalog2__sales but is planned %s", m.Name, p)
				}
				for _, db := range p.DBs {
					if db != "sales" {
						t.Errorf("%s: database %q not rewritten to the backend name", m.Name, db)
					}
				}
			} else if p.Target != r.ns.Default() || !p.DefaultRouted {
				t.Errorf("%s names no database and must go to the default catalog: %s", m.Name, p)
			}
			if p.Writes && !spec.IsWrite() {
				t.Errorf("%s: a read planned as a write", m.Name)
			}
		default:
			t.Errorf("%s: unexpected plan %s", m.Name, p)
		}
	}
}

// rawDBs lists the database-role strings the method's sample arguments carry.
func rawDBs(t *testing.T, r *Router, m *thriftgen.Method) []string {
	t.Helper()
	spec := r.table.Lookup(m.Name)
	if spec.Args == nil {
		return nil
	}
	args := sampleArgs(m, "catalog2__sales")
	var out []string
	_ = wire.Walk(args.Encode(), spec.Args, 0, func(s *wire.Span) error {
		if s.Role == RoleDB || s.Role == RoleFullTable || s.Role == RoleDBPattern {
			out = append(out, string(s.Val))
		}
		return nil
	})
	return out
}

func expectRefusal(t *testing.T, method string, p *Plan, reason string, fragments ...string) {
	t.Helper()
	if p.Kind != PlanRefuse || p.Refusal.Reason != reason {
		t.Fatalf("%s: want a %s refusal, got %s", method, reason, p)
	}
	for _, f := range fragments {
		if !strings.Contains(p.Refusal.Message, f) {
			t.Fatalf("%s: refusal %q lacks %q", method, p.Refusal.Message, f)
		}
	}
}

func lockReq(comps ...[2]string) wire.Value {
	list := wire.List(wire.TStruct)
	for _, c := range comps {
		comp := wire.Struct(wire.Field{ID: 1, V: wire.I32(3)}, wire.Field{ID: 2, V: wire.I32(2)}, wire.Field{ID: 3, V: wire.Str(c[0])})
		if c[1] != "" {
			comp.Fields = append(comp.Fields, wire.Field{ID: 4, V: wire.Str(c[1])})
		}
		list.Elems = append(list.Elems, comp)
	}
	return wire.Struct(wire.Field{ID: 1, V: wire.Struct(wire.Field{ID: 1, V: list}, wire.Field{ID: 3, V: wire.Str("u")}, wire.Field{ID: 4, V: wire.Str("h")})})
}

// Issue 10, A2: a name without a catalog prefix is a hint for the default
// catalog; names resolving to two catalogs are refused, not routed to the
// one that happened to be prefixed. A lock is the exception (issue 11): it is
// split by catalog.
func TestPlannerRefusesNamesOfTwoCatalogs(t *testing.T) {
	r := testRouter(t)
	if p := planOf(t, r, "lock", lockReq([2]string{"sales", "orders"}, [2]string{"catalog2__sales", "x"})); p.Kind != PlanSingle ||
		!p.SplitLock || p.Target != r.ns.Default() || p.Writes || len(p.DBs) != 0 {
		t.Fatalf("a lock over catalog1 and catalog2: want a split lock, got %s", p)
	}
	gv := wire.Struct(wire.Field{ID: 1, V: wire.Struct(wire.Field{ID: 1, V: wire.List(wire.TString, wire.Str("sales.orders"), wire.Str("catalog2__sales.x"))})})
	expectRefusal(t, "get_valid_write_ids", planOf(t, r, "get_valid_write_ids", gv), "ambiguous")
	ex := wire.Struct(wire.Field{ID: 1, V: wire.Value{Type: wire.TMap, KeyType: wire.TString, ElemType: wire.TString}},
		wire.Field{ID: 2, V: wire.Str("sales")}, wire.Field{ID: 3, V: wire.Str("t")},
		wire.Field{ID: 4, V: wire.Str("catalog2__sales")}, wire.Field{ID: 5, V: wire.Str("t")})
	expectRefusal(t, "exchange_partition", planOf(t, r, "exchange_partition", ex), "ambiguous")

	// Hive's INSERT … VALUES placeholder belongs to no catalog.
	p := planOf(t, r, "lock", lockReq([2]string{"catalog2__sales", "t"}, [2]string{"_dummy_database", "_dummy_table"}))
	if p.Kind != PlanSingle || p.Target.Name != "catalog2" {
		t.Fatalf("a lock on catalog2__sales.t with the dummy source: %s", p)
	}
	// A catalog field names the catalog: plain names are that catalog's
	// (Hive 3 clients send catName with backend database names).
	tbl := wire.Struct(wire.Field{ID: 1, V: wire.Struct(wire.Field{ID: 1, V: wire.Str("sales")}, wire.Field{ID: 2, V: wire.Str("t")},
		wire.Field{ID: 4, V: wire.Str("catalog2")})})
	if p := planOf(t, r, "get_table_req", tbl); p.Kind != PlanSingle || p.Target.Name != "catalog2" || p.DefaultRouted {
		t.Fatalf("get_table_req with catName=catalog2 and dbName=sales: %s", p)
	}
}

// Issue 10, A3: alter_table forms resolve the source and the new table's
// database separately.
func TestPlannerRenamesStayInTheirCatalog(t *testing.T) {
	r := testRouter(t)
	newTbl := func(db string) wire.Value {
		return wire.Struct(wire.Field{ID: 1, V: wire.Str("t2")}, wire.Field{ID: 2, V: wire.Str(db)})
	}
	for _, method := range []string{"alter_table", "alter_table_with_environment_context", "alter_table_with_cascade"} {
		args := wire.Struct(wire.Field{ID: 1, V: wire.Str("catalog2__db")}, wire.Field{ID: 2, V: wire.Str("t")}, wire.Field{ID: 3, V: newTbl("db")})
		expectRefusal(t, method, planOf(t, r, method, args), "cross_catalog_rename", "catalog2", "catalog1")
		within := wire.Struct(wire.Field{ID: 1, V: wire.Str("catalog2__db")}, wire.Field{ID: 2, V: wire.Str("t")}, wire.Field{ID: 3, V: newTbl("catalog2__other")})
		if p := planOf(t, r, method, within); p.Kind != PlanSingle || p.Target.Name != "catalog2" {
			t.Fatalf("%s: a rename across databases of catalog2 must pass: %s", method, p)
		}
	}
	req := wire.Struct(wire.Field{ID: 1, V: wire.Struct(wire.Field{ID: 2, V: wire.Str("catalog2__db")}, wire.Field{ID: 3, V: wire.Str("t")},
		wire.Field{ID: 4, V: newTbl("catalog3__db")})})
	expectRefusal(t, "alter_table_req", planOf(t, r, "alter_table_req", req), "cross_catalog_rename", "catalog2", "catalog3")
	if r.table.Lookup("alter_table").InvalidOperationField < 0 {
		t.Fatal("alter_table declares InvalidOperationException; the refusal must use it")
	}
}

// Issue 10, A4: every '|' alternative of a database pattern routes by its own
// prefix.
func TestPlannerPatternAlternatives(t *testing.T) {
	r := testRouter(t)
	legs := func(pattern string) map[string]Leg {
		p := planOf(t, r, "get_databases", wire.Struct(wire.Field{ID: 1, V: wire.Str(pattern)}))
		if p.Kind != PlanFanOut {
			t.Fatalf("get_databases(%q): %s", pattern, p)
		}
		out := map[string]Leg{}
		for _, l := range p.Legs {
			out[l.Cat.Name] = l
		}
		return out
	}
	l := legs("catalog2__sales_2024|catalog2__marketing_7")
	if len(l) != 1 || l["catalog2"].BackendPattern != "sales_2024|marketing_7" {
		t.Fatalf("two catalog2 alternatives: %+v", l)
	}
	l = legs("catalog2__a|catalog3__b")
	if len(l) != 2 || l["catalog2"].BackendPattern != "a" || l["catalog3"].BackendPattern != "b" {
		t.Fatalf("alternatives of two catalogs: %+v", l)
	}
	l = legs("sales*|catalog2__x")
	if l["catalog1"].BackendPattern != "sales*" || l["catalog2"].Match == nil || !l["catalog2"].Match.MatchString("catalog2__x") ||
		l["catalog3"].Match == nil || l["catalog3"].Match.MatchString("catalog3__x") {
		t.Fatalf("an unprefixed and a prefixed alternative: %+v", l)
	}
	tm := planOf(t, r, "get_table_meta", wire.Struct(wire.Field{ID: 1, V: wire.Str("catalog2__a|catalog3__b")},
		wire.Field{ID: 2, V: wire.Str("*")}, wire.Field{ID: 3, V: wire.List(wire.TString)}))
	if len(tm.Legs) != 2 || tm.Legs[0].Args.Field(1).String() != "a" || tm.Legs[1].Args.Field(1).String() != "b" {
		t.Fatalf("get_table_meta alternatives: %s", tm)
	}
}

func TestRewriteErrTextNamesOnlyTheCallsDatabases(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Database e1 is not empty. One or more tables exist.", "Database catalog2__e1 is not empty. One or more tables exist."},
		{"hive.sales_2024.nope_1 table not found", "catalog2.catalog2__sales_2024.nope_1 table not found"},
		{"sales_2024.nope_1 table not found", "catalog2__sales_2024.nope_1 table not found"},
		{"Table `sales_2024` … hive.metastore.warehouse.dir is set", "Table `catalog2__sales_2024` … hive.metastore.warehouse.dir is set"},
		{"sales_2024 is a word here, and e1 too", "sales_2024 is a word here, and e1 too"},
	}
	for _, c := range cases {
		if got := rewriteErrText(c.in, "hive", "catalog2", "__", []string{"e1", "sales_2024"}); got != c.want {
			t.Errorf("rewrite(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A write that names no namespace is refused only where there is a choice:
// in several catalogs, naming them; with one catalog it is that catalog's.
func TestNamespaceLessWritesInOneAndSeveralCatalogs(t *testing.T) {
	stat := wire.Struct(wire.Field{ID: 1, V: wire.Struct(wire.Field{ID: 2, V: wire.I32(1)}, wire.Field{ID: 3, V: wire.Str("x")})})
	emptyParts := wire.Struct(wire.Field{ID: 1, V: wire.List(wire.TStruct)})
	several := testRouter(t)
	for _, c := range []struct {
		method string
		args   wire.Value
	}{{"add_runtime_stats", stat}, {"add_partitions", emptyParts}} {
		expectRefusal(t, c.method, planOf(t, several, c.method, c.args), "namespace_less",
			"names no catalog or database", "3 catalogs (catalog1, catalog2, catalog3)")
	}
	one := testRouter(t, "catalogs=catalog1", "-catalog.catalog2.conf.hive.metastore.uris", "-catalog.catalog3.conf.hive.metastore.uris",
		"-catalog.catalog3.runtime-profile")
	for _, m := range []string{"add_runtime_stats", "add_partitions"} {
		args := stat
		if m == "add_partitions" {
			args = emptyParts
		}
		if p := planOf(t, one, m, args); p.Kind != PlanSingle || p.Target.Name != "catalog1" {
			t.Fatalf("%s in a one-catalog deployment: want it forwarded to catalog1, got %s", m, p)
		}
	}
}
