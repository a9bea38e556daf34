package router

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Issue 11, item 1: namespace-bound ACID calls route by their payload (in
// their Hive 3 and Hive 4 forms); those about write ids, which only ACID tables
// have, are refused on catalogs other than the default.
func TestPlannerACIDCallsRouteByPayload(t *testing.T) {
	r := testRouter(t)
	// on routes to cat with backend database sales, or is refused by cat's
	// runtime (a Hive 4 form on a Hive 3 catalog): routed there either way.
	on := func(name string, p *planner.Plan, cat *naming.Catalog) {
		t.Helper()
		if p.Kind == planner.PlanRefuse && (p.Refusal.Reason == "unsupported" || p.Refusal.Reason == "hortonworks_only") {
			if mode, _ := r.adapters.Plan(r.lane(cat).runtime, name); mode != compat.Unsupported && mode != compat.HortonworksOnly {
				t.Errorf("%s refused by the runtime of %s, which serves it: %s", name, cat.Name, p)
			}
			if !strings.Contains(p.Refusal.Message, "catalog "+cat.Name) {
				t.Errorf("%s: refusal does not name catalog %s: %s", name, cat.Name, p)
			}
			return
		}
		if p.Kind != planner.PlanSingle || p.Target != cat || len(p.DBs) == 0 || p.DBs[0] != "sales" {
			t.Errorf("%s: want catalog %s with database sales, got %s", name, cat.Name, p)
		}
	}
	for _, name := range []string{"get_valid_write_ids", "allocate_table_write_ids", "compact", "compact2",
		"add_dynamic_partitions", "fire_listener_event", "repl_tbl_writeid_state", "get_max_allocated_table_write_id",
		"seed_write_id", "get_all_write_event_info", "add_write_notification_log", "add_write_notification_log_in_batch"} {
		m := thriftgen.LookupMethod(name)
		if m == nil {
			t.Fatalf("%s is not in the schema", name)
		}
		if len(rawDBs(t, r, m)) == 0 {
			t.Errorf("%s: the method table finds no database in its arguments, so it cannot route by payload", name)
			continue
		}
		on(name, planOf(t, r, name, sampleArgs(m, "sales")), r.ns.Default())
		for _, c := range []string{"catalog2", "catalog3"} { // Hive 3.1.3 and Hive 4.1
			p := planOf(t, r, name, sampleArgs(m, c+"__sales"))
			if writeIDs[name] {
				expectRefusal(t, name, p, "non_default_acid", c, "default catalog catalog1", name)
				continue
			}
			on(name, p, r.ns.Lookup(c))
		}
	}
	// The id-only lifecycle goes to the default catalog; Hive 4's commit_txn
	// naming another catalog's database (replication write events) is refused.
	for name := range pinned {
		m := thriftgen.LookupMethod(name)
		p := planOf(t, r, name, sampleArgs(m, "sales"))
		if p.Kind != planner.PlanSingle || p.Target != r.ns.Default() || !p.DefaultRouted {
			t.Errorf("%s: want the default catalog, got %s", name, p)
		}
		if len(rawDBs(t, r, m)) > 0 {
			expectRefusal(t, name, planOf(t, r, name, sampleArgs(m, "catalog2__sales")), "non_default_acid", "catalog2", "default catalog catalog1")
		}
	}
}

// Issue 11, item 1: a table definition that would be transactional is refused
// on a non-default catalog, in every create_table and alter_table form, by
// the ACID middleware (it runs after the transactional DDL guard, which may
// have made the table external).
func TestACIDPolicyRefusesTransactionalTablesOutsideTheDefaultCatalog(t *testing.T) {
	r := testRouter(t)
	props := func(kv ...string) wire.Value {
		m := wire.Value{Type: wire.TMap, KeyType: wire.TString, ElemType: wire.TString}
		for _, s := range kv {
			k, v, _ := strings.Cut(s, "=")
			m.Elems = append(m.Elems, wire.Str(k), wire.Str(v))
		}
		return m
	}
	sent := 0
	h := r.acidTables(func(context.Context, *Exchange) error { sent++; return nil })
	// run plans the call and passes it through the middleware: the
	// middleware's error, or errSkip for a plan refused before it.
	errSkip := errors.New("refused by the planner")
	run := func(name string, args wire.Value) error {
		raw := wire.AppendMessage(nil, wire.Header{Name: name, Type: wire.Call, SeqID: 1}, &args)
		m, err := wire.ParseMessage(raw, 0)
		if err != nil {
			t.Fatal(err)
		}
		req := &request{msg: m, conn: &ConnInfo{Remote: "127.0.0.1:5"}, status: "ok"}
		r.plan(req)
		if req.plan.Kind == planner.PlanRefuse && req.plan.Refusal.Reason == "cross_catalog_rename" {
			return errSkip // not this test's business
		}
		if req.plan.Kind != planner.PlanSingle {
			t.Fatalf("%s: plan %s", name, &req.plan)
		}
		req.x = Exchange{req: req, Cat: req.plan.Target, lane: r.lane(req.plan.Target)}
		return h(context.Background(), &req.x)
	}
	forms := 0
	for name, paths := range r.tablePaths {
		if r.table.Lookup(name) == nil {
			continue
		}
		forms++
		withParams := func(db string, params wire.Value) wire.Value {
			args := sampleArgs(thriftgen.LookupMethod(name), db)
			for _, path := range paths {
				tbl := structAt(&args, path)
				if tbl == nil {
					t.Fatalf("%s: no Table at %v in the sample arguments", name, path)
				}
				tbl.Set(tableParamsField, params)
			}
			return args
		}
		for _, bad := range []wire.Value{props("transactional=true"), props("TRANSACTIONAL=True", "x=y"),
			props("transactional_properties=insert_only")} {
			before := sent
			err := run(name, withParams("catalog2__sales", bad))
			if err == errSkip {
				continue
			}
			var ref *planner.Refusal
			if !errors.As(err, &ref) || ref.Reason != "non_default_acid" {
				t.Errorf("%s: want a non_default_acid refusal, got %v", name, err)
				continue
			}
			for _, frag := range []string{"catalog2", "transactional", "default catalog catalog1", "catalog2__sales."} {
				if !strings.Contains(ref.Message, frag) {
					t.Errorf("%s: refusal %q lacks %q", name, ref.Message, frag)
				}
			}
			if sent != before {
				t.Errorf("%s: a refused table definition went on to the backend", name)
			}
		}
		for _, ok := range []wire.Value{props("transactional=false"), props("EXTERNAL=TRUE"), props()} {
			if err := run(name, withParams("catalog2__sales", ok)); err != nil && err != errSkip {
				t.Errorf("%s: a non-transactional table refused: %v", name, err)
			}
		}
		if err := run(name, withParams("sales", props("transactional=true"))); err != nil {
			t.Errorf("%s: a transactional table of the default catalog: %v", name, err)
		}
	}
	for _, want := range []string{"create_table", "create_table_with_environment_context", "create_table_with_constraints",
		"create_table_req", "alter_table", "alter_table_req"} {
		if r.tablePaths[want] == nil {
			t.Errorf("%s is not among the checked forms", want)
		}
	}
	if forms < 6 {
		t.Fatalf("only %d create/alter forms checked", forms)
	}
	if err := tableFieldIDs(); err != nil {
		t.Fatal(err)
	}
}
