package router

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/locks"
	"github.com/hms-proxy/hms-proxy/router/guards"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/router/purge"
	"github.com/hms-proxy/hms-proxy/router/viewsql"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// TablePolicies are the policies over Table objects the router runs in its
// chain (after access mode and exposure, before Options.Inner):
//
//   - view SQL rewrite (federation.view-text-rewrite.*): inward on every
//     create_table*/alter_table* of a view, outward on every answer that
//     carries a Table of a non-default catalog;
//   - the transactional DDL guard (guard.transactional-ddl.*) on every
//     create_table*/alter_table*;
//   - the Iceberg pointer guard (routing.iceberg-pointer-guard.*) on every
//     alter_table*;
//   - the external table drop purge (federation.external-table-drop-purge.*)
//     after a successful drop_table*.
//
// The zero value rewrites view SQL (the specification's default) and runs
// nothing else.
type TablePolicies struct {
	Views   viewsql.TableOptions // Mode zero is REWRITE
	Txn     *guards.TxnGuard     // nil or not Enabled: off
	Iceberg *guards.IcebergGuard // nil or not Enabled: off
	Purge   *purge.Purger        // nil: off; it serves the lanes built with DropPurge
}

// tableOp is what a method does with Table objects.
type tableOp uint8

const (
	tableOpNone tableOp = iota
	tableOpCreate
	tableOpAlter
	tableOpDrop
)

// tableMethod is one method's row: what it does with Tables, where its
// arguments carry them, and whether its answer can carry one.
type tableMethod struct {
	op     tableOp
	paths  [][]int16 // Tables in the *_args struct (create/alter)
	result string    // the *_result struct when it can carry a Table, else ""
	drop   dropShape
}

// dropShape says where a drop names its table.
type dropShape struct {
	req bool // drop_table_req: DropTableRequest in field 1
}

// tablePolicy is the router's part of TablePolicies.
type tablePolicy struct {
	r        *Router
	views    *viewsql.TableRewriter // nil: view SQL passes unchanged
	txn      *guards.TxnGuard
	iceberg  *guards.IcebergGuard
	purge    *purge.Purger
	methods  map[string]*tableMethod
	reaches  map[string]bool // struct names that can hold a Table
	findings *logLimiter     // view references left unchanged, once per hour each
	host     string
}

// Hive's table types of views.
const (
	virtualView      = "VIRTUAL_VIEW"
	materializedView = "MATERIALIZED_VIEW"
)

// Field ids of the canonical schema used here (checked by a test).
const (
	tableFieldDB        int16 = 2
	tableFieldName      int16 = 1
	tableFieldSD        int16 = 7
	tableFieldParams    int16 = 9
	tableFieldType      int16 = 12
	getTableReqDB       int16 = 1
	getTableReqTable    int16 = 2
	getTableResultTable int16 = 1
	dropArgsDB          int16 = 1
	dropArgsTable       int16 = 2
	dropArgsDeleteData  int16 = 3
	dropReqDB           int16 = 2
	dropReqTable        int16 = 3
	dropReqDeleteData   int16 = 4
)

func newTablePolicy(r *Router, o TablePolicies) (*tablePolicy, error) {
	t := &tablePolicy{r: r, txn: o.Txn, iceberg: o.Iceberg, purge: o.Purge,
		methods: map[string]*tableMethod{}, findings: newLogLimiter(r.log, time.Hour)}
	t.host, _ = os.Hostname()
	if o.Views.Mode != viewsql.ModeDisabled && len(r.ns.Catalogs()) > 1 {
		var cats []viewsql.Catalog
		for _, c := range r.ns.Catalogs() {
			cats = append(cats, viewsql.Catalog{Name: c.Name, BackendName: c.BackendName})
		}
		rw, err := viewsql.New(viewsql.Options{Separator: r.ns.Separator(), DefaultCatalog: r.ns.Default().Name,
			Catalogs: cats, QualifyUnqualified: true, Report: t.report})
		if err != nil {
			return nil, fmt.Errorf("federation.view-text-rewrite: %v", err)
		}
		t.views = viewsql.NewTableRewriter(rw, o.Views)
	}
	t.reaches = structsReaching("Table")
	for _, name := range guards.DDLMethods() {
		op := tableOpCreate
		if strings.HasPrefix(name, "alter_table") {
			op = tableOpAlter
		}
		t.row(name).op, t.row(name).paths = op, guards.TablePaths(name)
	}
	for _, name := range []string{"drop_table", "drop_table_with_environment_context", "drop_table_req"} {
		if thriftgen.LookupMethod(name) == nil {
			return nil, fmt.Errorf("table policies: %s is not in the canonical schema", name)
		}
		t.row(name).op, t.row(name).drop = tableOpDrop, dropShape{req: name == "drop_table_req"}
	}
	for _, m := range thriftgen.AllMethods() {
		if m.Result != nil && t.reaches[m.Result.Name] {
			t.row(m.Name).result = m.Result.Name
		}
	}
	return t, nil
}

func (t *tablePolicy) row(name string) *tableMethod {
	m := t.methods[name]
	if m == nil {
		m = &tableMethod{}
		t.methods[name] = m
	}
	return m
}

// structsReaching lists the structs of the schema that hold a struct named
// target, directly or through fields, lists, sets and map values.
func structsReaching(target string) map[string]bool {
	out := map[string]bool{target: true}
	var all []*thriftgen.Struct
	for _, m := range thriftgen.AllMethods() {
		all = append(all, m.Args)
		if m.Result != nil {
			all = append(all, m.Result)
		}
	}
	seen := map[string]bool{}
	var collect func(ty *thriftgen.Type)
	collect = func(ty *thriftgen.Type) {
		switch ty.Kind {
		case thriftgen.KindStruct:
			if s := thriftgen.LookupStruct(ty.Name); s != nil && !seen[s.Name] {
				seen[s.Name] = true
				all = append(all, s)
				for _, f := range s.Fields {
					collect(f.Type)
				}
			}
		case thriftgen.KindList, thriftgen.KindSet:
			collect(ty.Elem)
		case thriftgen.KindMap:
			collect(ty.Key)
			collect(ty.Value)
		}
	}
	for _, s := range append([]*thriftgen.Struct(nil), all...) {
		for _, f := range s.Fields {
			collect(f.Type)
		}
	}
	for changed := true; changed; {
		changed = false
		for _, s := range all {
			if out[s.Name] {
				continue
			}
			for _, f := range s.Fields {
				if typeReaches(f.Type, out) {
					out[s.Name], changed = true, true
					break
				}
			}
		}
	}
	return out
}

func typeReaches(ty *thriftgen.Type, set map[string]bool) bool {
	switch ty.Kind {
	case thriftgen.KindStruct:
		return set[ty.Name]
	case thriftgen.KindList, thriftgen.KindSet:
		return typeReaches(ty.Elem, set)
	case thriftgen.KindMap:
		return typeReaches(ty.Value, set)
	}
	return false
}

// eachTable calls fn for every Table inside v, a value of struct type name.
func (t *tablePolicy) eachTable(v *wire.Value, name string, fn func(*wire.Value) error) error {
	if name == "Table" {
		return fn(v)
	}
	s := thriftgen.LookupStruct(name)
	if s == nil || v.Type != wire.TStruct {
		return nil
	}
	for i := range v.Fields {
		f := s.FieldByID(v.Fields[i].ID)
		if f == nil || !typeReaches(f.Type, t.reaches) {
			continue
		}
		if err := t.eachIn(&v.Fields[i].V, f.Type, fn); err != nil {
			return err
		}
	}
	return nil
}

func (t *tablePolicy) eachIn(v *wire.Value, ty *thriftgen.Type, fn func(*wire.Value) error) error {
	switch ty.Kind {
	case thriftgen.KindStruct:
		if v.Type == wire.TStruct {
			return t.eachTable(v, ty.Name, fn)
		}
	case thriftgen.KindList, thriftgen.KindSet:
		if v.Type == wire.TList || v.Type == wire.TSet {
			for i := range v.Elems {
				if err := t.eachIn(&v.Elems[i], ty.Elem, fn); err != nil {
					return err
				}
			}
		}
	case thriftgen.KindMap:
		if v.Type == wire.TMap {
			for i := 1; i < len(v.Elems); i += 2 {
				if err := t.eachIn(&v.Elems[i], ty.Value, fn); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// mayHoldView is the cheap first check: the bytes of a view's table type
// appear somewhere in the message.
func mayHoldView(b []byte) bool {
	return bytes.Contains(b, []byte(virtualView)) || bytes.Contains(b, []byte(materializedView))
}

// mayHoldPointer: the bytes of an Iceberg key appear in the message.
func mayHoldPointer(b []byte) bool {
	return bytes.Contains(b, []byte(guards.KeyMetadataLocation)) || bytes.Contains(b, []byte(guards.KeyTableType))
}

func isView(tbl *wire.Value) bool {
	typ := tbl.Field(tableFieldType).String()
	return strings.EqualFold(typ, virtualView) || strings.EqualFold(typ, materializedView)
}

// report logs a view reference the rewrite left unchanged, once an hour per
// catalog, direction and reference.
func (t *tablePolicy) report(f viewsql.Finding) {
	key := "view|" + f.Catalog + "|" + f.Direction.String() + "|" + f.Ref
	if ok, _ := t.findings.allow(key); ok {
		t.r.log.Info("view SQL reference left unchanged", "catalog", f.Catalog, "direction", f.Direction.String(),
			"reason", f.Reason.String(), "reference", f.Ref, "offset", f.Offset, "why", f.Detail)
	}
}

// middleware runs the table policies for single-catalog calls (fan-out legs
// carry no Table).
func (t *tablePolicy) middleware(next Handler) Handler {
	return func(ctx context.Context, x *Exchange) error {
		if x.Leg != nil {
			return next(ctx, x)
		}
		m := t.methods[x.Method()]
		if m == nil {
			return next(ctx, x)
		}
		if m.result != "" && t.views != nil && !x.Cat.Default {
			cat, result := x.Cat.Name, m.result
			x.OnReply(func(body []byte) ([]byte, error) { return t.outward(cat, result, body) })
		}
		switch m.op {
		case tableOpCreate, tableOpAlter:
			return t.write(ctx, x, next, m)
		case tableOpDrop:
			return t.drop(ctx, x, next, m)
		}
		return next(ctx, x)
	}
}

// outward rewrites the view SQL of every view in a result body (backend
// names) to external names. A body without a view's table type costs one
// byte scan.
func (t *tablePolicy) outward(cat, result string, body []byte) ([]byte, error) {
	if !mayHoldView(body) {
		return body, nil
	}
	v, err := wire.DecodeStruct(body)
	if err != nil {
		return nil, fmt.Errorf("view SQL rewrite: %w", err)
	}
	changed := 0
	err = t.eachTable(&v, result, func(tbl *wire.Value) error {
		if !isView(tbl) {
			return nil
		}
		res, err := t.views.Rewrite(viewsql.Outward, cat, tbl)
		changed += res.Changed
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("view SQL rewrite: %w", err)
	}
	if changed == 0 {
		return body, nil
	}
	return v.Encode(), nil
}

// clientAddr is the client's IP address (the zero Addr when the remote is
// not an IP endpoint).
func clientAddr(remote string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr()
	}
	a, _ := netip.ParseAddr(remote)
	return a
}

// write serves create_table* and alter_table*: the transactional DDL guard,
// the inward view rewrite, the Iceberg guard's memory, and for alters the
// Iceberg pointer guard.
func (t *tablePolicy) write(ctx context.Context, x *Exchange, next Handler, m *tableMethod) error {
	// The cheap checks read the bytes as they are (the inward name
	// rewrites do not touch table types or parameter keys).
	raw := x.args
	if raw == nil {
		raw = x.req.msg.Body()
	}
	addr := clientAddr(x.Remote())
	txn := t.txn.Enabled() && t.txn.Applies(addr)
	views := t.views != nil && mayHoldView(raw)
	ice := t.iceberg.Enabled() && (m.op == tableOpAlter || mayHoldPointer(raw))
	if !txn && !views && !ice {
		return next(ctx, x)
	}
	v, err := wire.DecodeStruct(x.Args())
	if err != nil {
		return &planner.Refusal{Kind: planner.RefuseProtocol, Reason: "bad_arguments", Message: fmt.Sprintf("%s: cannot read arguments: %v", x.Method(), err)}
	}
	changed := false
	if txn {
		act, err := t.txn.Check(x.Method(), addr, &v)
		switch act {
		case guards.TxnRefused:
			return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "transactional_ddl", Message: err.Error()}
		case guards.TxnRewritten:
			changed = true
			t.r.log.Info("transactional table rewritten to an external table (guard.transactional-ddl.mode=REWRITE_TRANSACTIONAL_TO_EXTERNAL)",
				"method", x.Method(), "catalog", x.Cat.Name, "remote", x.Remote())
		}
	}
	for _, path := range m.paths {
		tbl := guards.At(&v, path)
		if tbl == nil {
			continue
		}
		if views && isView(tbl) {
			res, err := t.views.Rewrite(viewsql.Inward, x.Cat.Name, tbl)
			if err != nil {
				return fmt.Errorf("view SQL rewrite: %w", err)
			}
			if err := res.Err(); err != nil {
				return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "view_cross_catalog",
					Message: fmt.Sprintf("%s of view %s.%s refused: %v", x.Method(), t.r.ns.ExternalDB(x.Cat, tbl.Field(tableFieldDB).String()),
						tbl.Field(tableFieldName).String(), err)}
			}
			changed = changed || res.Changed > 0
		}
		if t.iceberg.Enabled() && guards.CarriesPointer(tbl) {
			// A create or alter that sets a pointer: the name (the new one
			// of a rename too) is no longer known not to be Iceberg.
			t.iceberg.Forget(x.Cat.Name, tbl.Field(tableFieldDB).String(), tbl.Field(tableFieldName).String())
		}
	}
	if changed {
		x.SetArgs(v.Encode())
	}
	if m.op != tableOpAlter || !t.iceberg.Enabled() {
		return next(ctx, x)
	}
	be := &guardBackend{t: t, x: x, next: next}
	res, err := t.iceberg.Handle(ctx, be, guards.AlterCall{Catalog: x.Cat.Name, Lockable: x.Cat.Default || t.r.shim != nil,
		CompareAndSet: x.lane.runtime.CompareAndSwap, Method: x.Method(), Args: &v})
	if res.Sent {
		// The guard sent the repaired alter; its answer is the client's.
		if err == nil {
			err = be.err
		}
		return err
	}
	return next(ctx, x)
}

// drop serves drop_table*: with the purge on for the catalog, the table is
// read before the drop and, once the metastore answered the drop without an
// exception, handed to the purge.
func (t *tablePolicy) drop(ctx context.Context, x *Exchange, next Handler, m *tableMethod) error {
	if t.purge == nil || !x.lane.purge {
		return next(ctx, x)
	}
	v, err := wire.DecodeStruct(x.Args())
	if err != nil {
		return &planner.Refusal{Kind: planner.RefuseProtocol, Reason: "bad_arguments", Message: fmt.Sprintf("%s: cannot read arguments: %v", x.Method(), err)}
	}
	args := &v
	dbID, tblID, delID := dropArgsDB, dropArgsTable, dropArgsDeleteData
	if m.drop.req {
		if args = v.Field(1); args == nil {
			return next(ctx, x)
		}
		dbID, tblID, delID = dropReqDB, dropReqTable, dropReqDeleteData
	}
	db, name := args.Field(dbID).String(), args.Field(tblID).String()
	// The metastore itself deletes the data of a table only when the
	// client asks for it (deleteData); the purge follows the same rule.
	if del := args.Field(delID); del != nil && del.Type == wire.TBool && del.Int == 0 {
		return next(ctx, x)
	}
	tbl, err := t.readTable(ctx, x, db, name)
	if err != nil {
		t.r.log.Info("external table purge: the table could not be read before the drop; nothing will be purged",
			"method", x.Method(), "catalog", x.Cat.Name, "table", db+"."+name, "err", err)
		return next(ctx, x)
	}
	candidate := strings.EqualFold(tbl.Field(tableFieldType).String(), guards.ExternalTable) &&
		strings.EqualFold(stringParam(tbl.Field(tableFieldParams), "external.table.purge"), "true")
	if err := next(ctx, x); err != nil || !candidate {
		return err
	}
	if x.req.status != "ok" {
		return nil // the metastore answered with an exception: nothing was dropped
	}
	if _, err := t.purge.Submit(x.Cat.Name, db+"."+name, x.Identity().Name(), tbl); err != nil {
		t.r.log.Warn("external table purge not queued", "catalog", x.Cat.Name, "table", db+"."+name, "err", err)
	}
	return nil
}

func stringParam(m *wire.Value, key string) string {
	if m == nil || m.Type != wire.TMap {
		return ""
	}
	for i := 0; i+1 < len(m.Elems); i += 2 {
		if string(m.Elems[i].Str) == key {
			return string(m.Elems[i+1].Str)
		}
	}
	return ""
}

// call sends one call of the proxy's own to the exchange's catalog (backend
// names), through the catalog's compat adapter when its runtime needs one.
func (t *tablePolicy) call(ctx context.Context, x *Exchange, method string, args wire.Value) (wire.Value, error) {
	r, cat := t.r, x.Cat
	b, err := r.lane(cat).backendFor(ctx)
	if err != nil {
		return wire.Value{}, err
	}
	bc := &backendCaller{ctx: ctx, b: b, rt: r.lane(cat).runtime, dialect: r.lane(cat).dialect, trace: r.trace, id: x.req.info.ID,
		guard: r.lane(cat).guard}
	mode, ad := r.adapters.Plan(r.lane(cat).runtime, method)
	switch mode {
	case compat.Native:
		return bc.Call(method, args)
	case compat.Adapted:
		return ad.Run(bc, &args)
	}
	return wire.Value{}, fmt.Errorf("catalog %s (%s) cannot serve %s", cat.Name, r.lane(cat).runtime.Name, method)
}

// resultError turns a declared exception of a *_result struct into an error.
func resultError(method string, res *wire.Value) error {
	for _, f := range res.Fields {
		if f.ID != 0 && f.V.Type == wire.TStruct {
			return fmt.Errorf("%s: %s", method, f.V.Field(1).String())
		}
	}
	return nil
}

// readTable reads a table's record (get_table_req, which every runtime has).
func (t *tablePolicy) readTable(ctx context.Context, x *Exchange, db, table string) (*wire.Value, error) {
	args := wire.Struct(wire.Field{ID: 1, V: wire.Struct(
		wire.Field{ID: getTableReqDB, V: wire.Str(db)}, wire.Field{ID: getTableReqTable, V: wire.Str(table)})})
	res, err := t.call(ctx, x, "get_table_req", args)
	if err != nil {
		return nil, err
	}
	if err := resultError("get_table_req", &res); err != nil {
		return nil, err
	}
	tbl := res.Field(0)
	if tbl != nil {
		tbl = tbl.Field(getTableResultTable)
	}
	if tbl == nil || tbl.Type != wire.TStruct {
		return nil, fmt.Errorf("get_table_req: no table in the answer")
	}
	return tbl, nil
}

// guardBackend is the Iceberg pointer guard's view of the exchange's
// catalog.
type guardBackend struct {
	t    *tablePolicy
	x    *Exchange
	next Handler
	err  error // the chain's answer to the repaired alter
}

func (b *guardBackend) GetTable(ctx context.Context, db, table string) (*wire.Value, error) {
	return b.t.readTable(ctx, b.x, db, table)
}

// Lock asks for the lock org.apache.iceberg.hive.MetastoreLock takes: one
// EXCLUSIVE component at TABLE level, no transaction. On a non-default
// catalog the lock shim holds the locks Iceberg clients take there, so the
// guard takes its lock from the shim too (the catalog's own metastore locks
// would not exclude those clients).
func (b *guardBackend) Lock(ctx context.Context, db, table string) (int64, guards.LockState, error) {
	user := b.x.Identity().Name()
	if user == "" {
		user = "hms-proxy"
	}
	if b.shimmed() {
		tbl := table
		// The guard holds the lock for itself (no client ever has its id):
		// it ends with this instance at the latest (locks.AnswerNever).
		resp, err := b.t.r.shim.LockAs(ctx, locks.AnswerNever, nil, locks.Request{Catalog: b.x.Cat.Name, Lock: &thriftgen.LockRequest{
			Component: []*thriftgen.LockComponent{{Type: thriftgen.LockType_EXCLUSIVE, Level: thriftgen.LockLevel_TABLE,
				Dbname: db, Tablename: &tbl}},
			User: user, Hostname: b.t.host, AgentInfo: ptr("hms-proxy-iceberg-pointer-guard")}})
		if err != nil {
			return 0, 0, shimError("lock", err)
		}
		return resp.Lockid, guards.LockState(resp.State), nil
	}
	comp := wire.Struct(
		wire.Field{ID: 1, V: wire.I32(int32(thriftgen.LockType_EXCLUSIVE))},
		wire.Field{ID: 2, V: wire.I32(int32(thriftgen.LockLevel_TABLE))},
		wire.Field{ID: 3, V: wire.Str(db)},
		wire.Field{ID: 4, V: wire.Str(table)})
	req := wire.Struct(
		wire.Field{ID: 1, V: wire.List(wire.TStruct, comp)},
		wire.Field{ID: 3, V: wire.Str(user)},
		wire.Field{ID: 4, V: wire.Str(b.t.host)},
		wire.Field{ID: 5, V: wire.Str("hms-proxy-iceberg-pointer-guard")})
	res, err := b.t.call(ctx, b.x, "lock", wire.Struct(wire.Field{ID: 1, V: req}))
	if err != nil {
		return 0, 0, err
	}
	if err := resultError("lock", &res); err != nil {
		return 0, 0, err
	}
	resp := res.Field(0)
	if resp == nil {
		return 0, 0, errors.New("lock: empty answer")
	}
	return resp.Field(1).Int, guards.LockState(resp.Field(2).Int), nil
}

// shimmed: the exchange's catalog has its locks in the lock shim.
func (b *guardBackend) shimmed() bool { return !b.x.Cat.Default && b.t.r.shim != nil }

func (b *guardBackend) CheckLock(ctx context.Context, id int64) (guards.LockState, error) {
	if b.shimmed() {
		resp, _, err := b.t.r.shim.Check(ctx, id)
		if err != nil {
			return 0, shimError("check_lock", err)
		}
		return guards.LockState(resp.State), nil
	}
	res, err := b.t.call(ctx, b.x, "check_lock", wire.Struct(wire.Field{ID: 1, V: wire.Struct(wire.Field{ID: 1, V: wire.I64(id)})}))
	if err != nil {
		return 0, err
	}
	if err := resultError("check_lock", &res); err != nil {
		return 0, err
	}
	resp := res.Field(0)
	if resp == nil {
		return 0, errors.New("check_lock: empty answer")
	}
	return guards.LockState(resp.Field(2).Int), nil
}

func (b *guardBackend) Unlock(ctx context.Context, id int64) error {
	if b.shimmed() {
		if err := b.t.r.shim.Unlock(ctx, id); err != nil {
			return shimError("unlock", err)
		}
		return nil
	}
	res, err := b.t.call(ctx, b.x, "unlock", wire.Struct(wire.Field{ID: 1, V: wire.Struct(wire.Field{ID: 1, V: wire.I64(id)})}))
	if err != nil {
		return err
	}
	return resultError("unlock", &res)
}

// Alter sends the repaired alter. The client's own method goes on through
// the rest of the chain and the executor with the repaired arguments (its
// adapter, dialect and lossless checks included), which answers the client;
// the compare-and-set form of a Hive 4 backend is sent as
// alter_table_with_environment_context and relayed as the client's answer
// (both results declare the same exceptions). The error the guard sees is
// only the call's failure, never the metastore's declared exception, which
// reaches the client as it is.
func (b *guardBackend) Alter(ctx context.Context, method string, args *wire.Value) error {
	x := b.x
	if method == x.Method() {
		x.SetArgs(args.Encode())
		b.err = b.next(ctx, x)
		return nil
	}
	b.err = b.t.r.relayAs(ctx, x, method, args.Encode())
	return nil
}

// relayAs sends the exchange as another method with the same result shape
// (natively served by the catalog's runtime) and writes the answer as the
// client's.
func (r *Router) relayAs(ctx context.Context, x *Exchange, method string, body []byte) error {
	req, cat := x.req, x.Cat
	if mode, _ := r.adapters.Plan(r.lane(cat).runtime, method); mode != compat.Native {
		return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "adapter", Message: fmt.Sprintf("%s on catalog %s: %s is not served natively by %s", x.Method(), cat.Name, method, r.lane(cat).runtime.Name)}
	}
	body, err := r.guardCall(req, cat, body, true)
	if err != nil {
		return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "lossless", Message: fmt.Sprintf("%s on catalog %s refused: %v", x.Method(), cat.Name, err)}
	}
	buf := wire.AppendHeader(nil, wire.Header{Name: method, Type: wire.Call, SeqID: req.msg.SeqID})
	buf = append(buf, body...)
	dialect := r.lane(cat).dialect
	if dialect.Touches(method, false) {
		if buf, err = remapMessage(buf, dialect.ToWire, false); err != nil {
			return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "dialect", Message: err.Error()}
		}
	}
	if r.trace != nil {
		r.trace.Backend(req.info.ID, cat.Name, buf)
	}
	pool, err := r.lane(cat).backendFor(ctx)
	if err != nil {
		return &backendError{cat: cat, err: err}
	}
	reply, done, err := pool.Call(ctx, buf, false)
	if r.trace != nil {
		r.trace.BackendReply(req.info.ID, cat.Name, reply, err)
	}
	if err != nil {
		return &backendError{cat: cat, err: err}
	}
	defer done()
	if reply.Type == wire.Reply && dialect.Touches(method, true) {
		raw, err := remapMessage(reply.Raw, dialect.ToCanonical, true)
		if err != nil {
			return &backendError{cat: cat, err: err}
		}
		reply = &wire.Message{Header: reply.Header, Raw: raw, BodyOff: reply.BodyOff}
	}
	return r.replyOutward(x, reply, nil)
}

func ptr[T any](v T) *T { return &v }
