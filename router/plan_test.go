package router

import (
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/locks"
	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// The planner is tested without a backend: a router over three catalogs
// whose metastores are never dialled (catalog3 runs Hive 4.1).
func testRouter(t *testing.T, extra ...string) *Router {
	t.Helper()
	return testRouterWith(t, testOptions{}, extra...)
}

// testOptions are a test router's options: the router's (Namespace, Lanes
// and Locks are set here) and every lane's backend dialer (nil: TCP).
type testOptions struct {
	Options
	Dial Dial
}

// testRouterWith is testRouter with more options; an extra "-key" leaves a
// key of the three catalogs out. Its lanes are built from the keys as app
// builds them, without security, breakers or the purge.
func testRouterWith(t *testing.T, o testOptions, extra ...string) *Router {
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
	opt := o.Options
	opt.Locks, opt.MaxMessage = shim, int(cfg.Server.MaxMessageSize)
	if opt.Namespace, err = NamespaceFor(cfg); err != nil {
		t.Fatal(err)
	}
	for i, c := range opt.Namespace.Catalogs() {
		lo, err := LaneOptionsFor(cfg.Catalogs[i], c)
		if err != nil {
			t.Fatal(err)
		}
		lo.Backend.Dial = o.Dial
		l, err := NewLane(lo)
		if err != nil {
			t.Fatal(err)
		}
		opt.Lanes = append(opt.Lanes, l)
	}
	r, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// planOf plans one call with the given arguments.
func planOf(t *testing.T, r *Router, method string, args wire.Value) *planner.Plan {
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
// one element (sampleNamed with table "t").
func sample(t *thriftgen.Type, owner string, f *thriftgen.Field, db string, depth int) (wire.Value, bool) {
	return sampleNamed(t, owner, f, db, "t", depth)
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
		hasDB := planOf(t, r, m.Name, sampleArgs(m, "MARK")).Kind == planner.PlanSingle && len(rawDBs(t, r, m)) > 0
		switch {
		case spec.Special == methods.RefuseAlways:
			// The sample leaves catalog names out: dropping or altering a
			// catalog that does not exist is the metastore's "not found".
			want := "catalog_registry"
			if m.Name == "drop_catalog" || m.Name == "alter_catalog" {
				want = "no_such_catalog"
			}
			expectRefusal(t, m.Name, p, want)
		case spec.Special == methods.DropOneway || spec.Special == methods.LocalSetUGI || spec.Special == methods.LocalCatalogs:
			if p.Kind != planner.PlanLocal {
				t.Errorf("%s: want a local answer, got %s", m.Name, p)
			}
		case spec.Special == methods.FanOutDatabases || spec.Special == methods.FanOutTableMeta:
			if p.Kind != planner.PlanFanOut || len(p.Legs) == 0 {
				t.Errorf("%s: want a fan-out, got %s", m.Name, p)
			}
			for _, l := range p.Legs {
				if m.Name != "get_all_databases" && l.Cat != c2 {
					t.Errorf("%s with a catalog2 pattern asked %s", m.Name, l.Cat.Name)
				}
			}
		case p.Kind == planner.PlanRefuse:
			// The only other refusals: a runtime that cannot serve the
			// method (HDP-only methods on catalog2's 3.1.3), or a
			// namespace-less write.
			switch p.Refusal.Reason {
			case "hortonworks_only", "unsupported":
				if mode, _ := r.adapters.Plan(r.lane(c2).runtime, m.Name); mode != compat.HortonworksOnly && mode != compat.Unsupported {
					t.Errorf("%s refused as %s, but catalog2's runtime serves it", m.Name, p.Refusal.Reason)
				}
			case "namespace_less":
				if spec.Unrouted != methods.Refuse || hasDB {
					t.Errorf("%s refused as namespace-less: %s", m.Name, p.Refusal.Message)
				}
			case "non_default_acid": // write ids exist only in the default catalog (acid.go)
				if !writeIDs[m.Name] && !pinned[m.Name] {
					t.Errorf("%s refused as an ACID call on catalog2: %s", m.Name, p.Refusal.Message)
				}

			default:
				t.Errorf("%s: unexpected refusal %s", m.Name, p)
			}
		case p.Kind == planner.PlanSingle:
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
		if s.Role == methods.RoleDB || s.Role == methods.RoleFullTable || s.Role == methods.RoleDBPattern {
			out = append(out, string(s.Val))
		}
		return nil
	})
	return out
}

func expectRefusal(t *testing.T, method string, p *planner.Plan, reason string, fragments ...string) {
	t.Helper()
	if p.Kind != planner.PlanRefuse || p.Refusal.Reason != reason {
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
	if p := planOf(t, r, "lock", lockReq([2]string{"sales", "orders"}, [2]string{"catalog2__sales", "x"})); p.Kind != planner.PlanSingle ||
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
	if p.Kind != planner.PlanSingle || p.Target.Name != "catalog2" {
		t.Fatalf("a lock on catalog2__sales.t with the dummy source: %s", p)
	}
	// A catalog field names the catalog: plain names are that catalog's
	// (Hive 3 clients send catName with backend database names).
	tbl := wire.Struct(wire.Field{ID: 1, V: wire.Struct(wire.Field{ID: 1, V: wire.Str("sales")}, wire.Field{ID: 2, V: wire.Str("t")},
		wire.Field{ID: 4, V: wire.Str("catalog2")})})
	if p := planOf(t, r, "get_table_req", tbl); p.Kind != planner.PlanSingle || p.Target.Name != "catalog2" || p.DefaultRouted {
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
		if p := planOf(t, r, method, within); p.Kind != planner.PlanSingle || p.Target.Name != "catalog2" {
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
	legs := func(pattern string) map[string]planner.Leg {
		p := planOf(t, r, "get_databases", wire.Struct(wire.Field{ID: 1, V: wire.Str(pattern)}))
		if p.Kind != planner.PlanFanOut {
			t.Fatalf("get_databases(%q): %s", pattern, p)
		}
		out := map[string]planner.Leg{}
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
	if len(tm.Legs) != 2 || legPattern(t, tm.Legs[0]) != "a" || legPattern(t, tm.Legs[1]) != "b" {
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
		if p := planOf(t, one, m, args); p.Kind != planner.PlanSingle || p.Target.Name != "catalog1" {
			t.Fatalf("%s in a one-catalog deployment: want it forwarded to catalog1, got %s", m, p)
		}
	}
}

// Catalogs are the proxy's configuration: create/drop/alter_catalog never
// reach a metastore. Dropping or altering one that does not exist answers as
// the client's metastore version does (the e2e test compares with real
// ones): NoSuchObjectException, or for a Hive 4.1 client's drop, whose
// ifExists is true unless it says false, nothing to do.
func TestCatalogRegistryCallsAnswerAsTheMetastore(t *testing.T) {
	r := testRouter(t)
	drop := func(name string, ifExists *bool) wire.Value {
		rq := wire.Struct(wire.Field{ID: 1, V: wire.Str(name)})
		if ifExists != nil {
			rq.Set(2, wire.Bool(*ifExists))
		}
		return wire.Struct(wire.Field{ID: 1, V: rq})
	}
	yes, no := true, false
	h3 := &planner.Frontend{Name: "primary", Profile: thriftgen.ProfileApache313}
	h4 := &planner.Frontend{Name: "hive4", Profile: thriftgen.ProfileApache410}
	plan := func(fe *planner.Frontend, method string, args wire.Value) *planner.Plan {
		raw := wire.AppendMessage(nil, wire.Header{Name: method, Type: wire.Call, SeqID: 1}, &args)
		m, err := wire.ParseMessage(raw, 0)
		if err != nil {
			t.Fatal(err)
		}
		req := &request{msg: m, conn: &ConnInfo{Frontend: fe}, status: "ok"}
		r.plan(req)
		return &req.plan
	}
	expectRefusal(t, "drop_catalog of a configured catalog", plan(h3, "drop_catalog", drop("catalog2", nil)), "catalog_registry")
	expectRefusal(t, "drop_catalog of a configured catalog (4.1)", plan(h4, "drop_catalog", drop("Catalog2", &yes)), "catalog_registry")
	for _, c := range []struct {
		what     string
		fe       *planner.Frontend
		ifExists *bool
		empty    bool
	}{
		{"a 3.1.3 client", h3, nil, false},
		{"a 3.1.3 client with 4.1's ifExists (read as Hive 3.1.3 reads it: not at all)", h3, &yes, false},
		{"a 4.1 client without ifExists", h4, nil, true},
		{"a 4.1 client with ifExists=true", h4, &yes, true},
		{"a 4.1 client with ifExists=false", h4, &no, false},
	} {
		p := plan(c.fe, "drop_catalog", drop("nosuchcatalog", c.ifExists))
		if c.empty {
			if p.Kind != planner.PlanLocal || p.Local != planner.AnswerEmpty {
				t.Errorf("drop_catalog of a missing catalog by %s: want the empty success, got %s", c.what, p)
			}
			continue
		}
		expectRefusal(t, "drop_catalog of a missing catalog by "+c.what, p, "no_such_catalog", "No catalog nosuchcatalog", "catalog1, catalog2, catalog3")
		if p.Refusal.Kind != planner.RefuseNoSuchObject {
			t.Errorf("%s: refusal kind %d, want NoSuchObjectException", c.what, p.Refusal.Kind)
		}
	}
	alter := wire.Struct(wire.Field{ID: 1, V: wire.Struct(wire.Field{ID: 1, V: wire.Str("nosuchcatalog")})})
	p := plan(h4, "alter_catalog", alter)
	expectRefusal(t, "alter_catalog of a missing catalog", p, "no_such_catalog")
	expectRefusal(t, "create_catalog", plan(h3, "create_catalog", wire.Struct()), "catalog_registry")
}

// Database patterns that name nothing any metastore has answer the empty
// list without a backend call, as a metastore answers them; "@hive#" (every
// database of the client's catalog) still asks every catalog.
func TestDatabasePatternsThatNameNothingAnswerEmpty(t *testing.T) {
	r := testRouter(t)
	for _, method := range []string{"get_table_meta", "get_databases"} {
		for _, pattern := range []string{"", "@hive#!", "@catalog2#!", "@nosuchcatalog#*", "@h*#*", "@nosuchcatalog#"} {
			p := planOf(t, r, method, wire.Struct(wire.Field{ID: 1, V: wire.Str(pattern)}, wire.Field{ID: 2, V: wire.Str("*")}))
			if p.Kind != planner.PlanLocal || p.Local != planner.AnswerEmpty {
				t.Errorf("%s(%q): want the empty answer, got %s", method, pattern, p)
			}
		}
		for pattern, legs := range map[string]int{"*": 3, "@hive#": 3, "@HIVE#*": 3, "@catalog2#": 1, "catalog2__*": 1} {
			p := planOf(t, r, method, wire.Struct(wire.Field{ID: 1, V: wire.Str(pattern)}, wire.Field{ID: 2, V: wire.Str("*")}))
			if p.Kind != planner.PlanFanOut || len(p.Legs) != legs {
				t.Errorf("%s(%q): want a fan-out over %d catalogs, got %s", method, pattern, legs, p)
			}
		}
	}
}

// A catalog field in the metastore's own form ("hive": what Hive clients
// fill in, and what federation.preserve-backend-catalog-name=true answers)
// names the default catalog when nothing else names a catalog or database,
// with the key on or off; a prefixed database still decides.
func TestABackendCatalogNameRoutesAsTheDefaultCatalogWithEitherPreserveSetting(t *testing.T) {
	for _, preserve := range []string{"false", "true"} {
		r := testRouter(t, "federation.preserve-backend-catalog-name="+preserve)
		for _, c := range []struct {
			method string
			args   wire.Value
			want   string
		}{
			{"create_database", wire.Struct(wire.Field{ID: 1, V: wire.Struct(wire.Field{ID: 1, V: wire.Str("")}, wire.Field{ID: 8, V: wire.Str("hive")})}), "catalog1"},
			{"create_table", wire.Struct(wire.Field{ID: 1, V: wire.Struct(wire.Field{ID: 1, V: wire.Str("t")}, wire.Field{ID: 17, V: wire.Str("hive")})}), "catalog1"},
			{"create_function", wire.Struct(wire.Field{ID: 1, V: wire.Struct(wire.Field{ID: 1, V: wire.Str("f")}, wire.Field{ID: 9, V: wire.Str("HIVE")})}), "catalog1"},
			{"create_table", wire.Struct(wire.Field{ID: 1, V: wire.Struct(wire.Field{ID: 1, V: wire.Str("t")}, wire.Field{ID: 2, V: wire.Str("catalog2__s")}, wire.Field{ID: 17, V: wire.Str("hive")})}), "catalog2"},
			{"create_table", wire.Struct(wire.Field{ID: 1, V: wire.Struct(wire.Field{ID: 1, V: wire.Str("t")}, wire.Field{ID: 17, V: wire.Str("catalog3")})}), "catalog3"},
		} {
			p := planOf(t, r, c.method, c.args)
			if p.Kind != planner.PlanSingle || p.Target.Name != c.want {
				t.Errorf("preserve=%s %s: want %s, got %s", preserve, c.method, c.want, p)
			}
		}
		// Still namespace-less: no catalog field at all, or one no
		// metastore behind the proxy has.
		for _, cat := range []string{"", "spark"} {
			db := wire.Struct(wire.Field{ID: 1, V: wire.Str("")})
			if cat != "" {
				db.Set(8, wire.Str(cat))
			}
			expectRefusal(t, "create_database naming catalog "+cat, planOf(t, r, "create_database", wire.Struct(wire.Field{ID: 1, V: db})), "namespace_less")
		}
	}
}

// Issue 20, item 5: a rename from a prefixed database to a plain one moves
// the table to the default catalog's database, which no metastore can do,
// in every alter_table form and however the request carries catalogs: the
// new Table's catName echoing the catalog the client read it from (Trino's
// rename of the Table it got, the Java client's alter_table), Hive 3's
// "@hive#" or "@catalog2#" marker on the source, AlterTableRequest.catName.
// Names that carry their catalog, or plain names in a request whose catalog
// field names the catalog, stay within it.
func TestPlannerRenameToAPlainDatabaseIsTheDefaultCatalogs(t *testing.T) {
	r := testRouter(t)
	newTbl := func(db, cat string) wire.Value {
		v := wire.Struct(wire.Field{ID: 1, V: wire.Str("moved")}, wire.Field{ID: 2, V: wire.Str(db)})
		if cat != "" {
			v.Set(17, wire.Str(cat))
		}
		return v
	}
	positional := func(method, src string, tbl wire.Value) wire.Value {
		a := wire.Struct(wire.Field{ID: 1, V: wire.Str(src)}, wire.Field{ID: 2, V: wire.Str("t")}, wire.Field{ID: 3, V: tbl})
		if method == "alter_table_with_cascade" {
			a.Set(4, wire.Bool(true))
		}
		return a
	}
	req := func(cat, src string, tbl wire.Value) wire.Value {
		rq := wire.Struct(wire.Field{ID: 2, V: wire.Str(src)}, wire.Field{ID: 3, V: wire.Str("t")}, wire.Field{ID: 4, V: tbl})
		if cat != "" {
			rq.Set(1, wire.Str(cat))
		}
		return wire.Struct(wire.Field{ID: 1, V: rq})
	}
	for _, method := range []string{"alter_table", "alter_table_with_environment_context", "alter_table_with_cascade"} {
		for _, c := range []struct{ src, cat string }{
			{"catalog2__sales", ""}, {"catalog2__sales", "catalog2"}, {"@hive#catalog2__sales", "catalog2"},
			{"@catalog2#catalog2__sales", "catalog2"}, {"@catalog2#catalog2__sales", "hive"},
		} {
			p := planOf(t, r, method, positional(method, c.src, newTbl("sales", c.cat)))
			expectRefusal(t, method+" from "+c.src+" with catName "+c.cat, p, "cross_catalog_rename", "catalog2", "catalog1", "sales")
		}
		for _, c := range []struct{ src, db, cat string }{
			{"catalog2__sales", "catalog2__s1", "catalog2"}, // prefixed on both sides
			{"@catalog2#sales", "s1", "catalog2"},           // Hive 3: plain names, catalog fields
			{"@catalog2#sales", "catalog2__s1", ""},         // a marker carries the source's catalog
			{"sales", "s1", ""},                             // the default catalog's
		} {
			p := planOf(t, r, method, positional(method, c.src, newTbl(c.db, c.cat)))
			want := "catalog2"
			if c.src == "sales" {
				want = "catalog1"
			}
			if p.Kind != planner.PlanSingle || p.Target.Name != want {
				t.Errorf("%s from %s to %s (catName %q): want %s, got %s", method, c.src, c.db, c.cat, want, p)
			}
		}
	}
	for _, cat := range []string{"", "catalog2", "hive"} {
		p := planOf(t, r, "alter_table_req", req(cat, "catalog2__sales", newTbl("sales", cat)))
		expectRefusal(t, "alter_table_req with catName "+cat, p, "cross_catalog_rename", "catalog2", "catalog1")
	}
	if p := planOf(t, r, "alter_table_req", req("catalog2", "sales", newTbl("s1", "catalog2"))); p.Kind != planner.PlanSingle || p.Target.Name != "catalog2" {
		t.Errorf("alter_table_req within catalog2 by plain names and catName: %s", p)
	}
}

// writeIDs and pinned are the planner's sets of calls that belong to the
// default catalog's transactions.
var writeIDs, pinned = nameSet(planner.WriteIDMethods()...), nameSet(planner.PinnedMethods()...)

// legPattern is the database pattern a get_table_meta leg sends.
func legPattern(t *testing.T, l planner.Leg) string {
	t.Helper()
	v, err := wire.DecodeStruct(l.Args)
	if err != nil {
		t.Fatal(err)
	}
	return v.Field(1).String()
}
