package compat

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Adapter serves one canonical method on a runtime that lacks it (or, for a
// few, on a runtime that has it but needs the call changed).
type Adapter struct {
	Method string // the canonical (client) method
	To     string // the backend method it mainly calls (metrics: to_api); "" = none
	Why    string
	// Run maps the client's *_args to the client's *_result, calling the
	// backend through c. Declared exceptions of backend calls come back in
	// the client's result (same exception type, else MetaException).
	Run func(c Caller, args *wire.Value) (wire.Value, error)
	// Runtimes are the runtimes the adapter serves.
	Runtimes thriftgen.ProfileSet
	// keyed adapters apply even where the runtime has the method (the lock
	// downgrade); the others only where it lacks it.
	keyed bool
}

// ToAPI is the to_api label of the adapter's fallback count: the backend
// method it mainly calls, or "answered_by_proxy" when it calls none.
func (a *Adapter) ToAPI() string {
	if a.To == "" {
		return "answered_by_proxy"
	}
	return a.To
}

// Adapters is the set of compatibility adapters. NewAdapters builds it, and
// whoever plans calls (the router, the generated docs) is handed it.
type Adapters struct {
	byRuntime map[key]*Adapter
	list      []*Adapter
}

type key struct {
	p      thriftgen.ProfileSet
	method string
}

// NewAdapters builds every adapter for the runtimes of the profile
// registry. An adapter naming a method outside the canonical schema is an
// error, not a panic.
func NewAdapters() (*Adapters, error) {
	s := &Adapters{byRuntime: map[key]*Adapter{}}
	b := &builder{s: s}
	b.standard()
	if len(b.errs) > 0 {
		return nil, fmt.Errorf("compat: %s", strings.Join(b.errs, "; "))
	}
	sort.Slice(s.list, func(i, j int) bool { return s.list[i].Method < s.list[j].Method })
	return s, nil
}

// builder registers adapters into a set, checking their names.
type builder struct {
	s    *Adapters
	errs []string
}

// lacking registers a for every runtime in only (0: every runtime) that
// lacks its method.
func (b *builder) lacking(only thriftgen.ProfileSet, a *Adapter) {
	if b.check(a) {
		var set thriftgen.ProfileSet
		m := thriftgen.LookupMethod(a.Method)
		for _, r := range Runtimes() {
			if !m.Profiles.Has(r.Bit) && (only == 0 || only.Has(r.Bit)) {
				set |= r.Bit
			}
		}
		b.add(set, a)
	}
}

// always registers a for the runtimes in set, whether they have the method
// or not.
func (b *builder) always(set thriftgen.ProfileSet, a *Adapter) {
	if b.check(a) {
		a.keyed = true
		b.add(set, a)
	}
}

func (b *builder) check(a *Adapter) bool {
	for _, m := range []string{a.Method, a.To} {
		if m == a.To && m == "" {
			continue // answered without a backend call
		}
		if thriftgen.LookupMethod(m) == nil {
			b.errs = append(b.errs, fmt.Sprintf("adapter %s names %q, which is not a method of the canonical schema", a.Method, m))
			return false
		}
	}
	return true
}

func (b *builder) add(set thriftgen.ProfileSet, a *Adapter) {
	if set == 0 {
		b.errs = append(b.errs, fmt.Sprintf("adapter %s applies to no runtime", a.Method))
		return
	}
	a.Runtimes = set
	for _, r := range Runtimes() {
		if !set.Has(r.Bit) {
			continue
		}
		k := key{r.Bit, a.Method}
		if b.s.byRuntime[k] != nil {
			b.errs = append(b.errs, fmt.Sprintf("two adapters for %s on %s", a.Method, r.Name))
			continue
		}
		b.s.byRuntime[k] = a
	}
	b.s.list = append(b.s.list, a)
}

// All lists every adapter, by method (docs, tests).
func (s *Adapters) All() []*Adapter { return append([]*Adapter(nil), s.list...) }

// Plan says how method reaches runtime r, with the adapter when Adapted.
func (s *Adapters) Plan(r *Runtime, method string) (Mode, *Adapter) {
	a := s.byRuntime[key{r.Bit, method}]
	if a != nil && a.keyed {
		return Adapted, a
	}
	if r.Has(method) {
		return Native, nil
	}
	if a != nil {
		return Adapted, a
	}
	if hortonworksOnly[method] {
		return HortonworksOnly, nil
	}
	return Unsupported, nil
}

// Runtime predicates the adapters are registered with (from the registry,
// not from a list of profile names).
var (
	beforeHive4 = runtimesWhere(func(r *Runtime) bool { return !r.Hive4 })
	hive4       = runtimesWhere(func(r *Runtime) bool { return r.Hive4 })
	// runtimes whose LockType lacks EXCL_WRITE
	noExclWrite = runtimesWhere(func(r *Runtime) bool {
		return !thriftgen.LookupEnum("LockType").ValueByName("EXCL_WRITE").Profiles.Has(r.Bit)
	})
	// runtimes that require GetValidWriteIdsRequest.validTxnList (3.1.3) or
	// read it in the pre-Hive 4 format (no ranges)
	oldTxnListFormat = beforeHive4
)

// ---- helpers over the generic value tree --------------------------------

// fid is the id of a named field of a struct in the canonical schema.
func fid(structName, field string) int16 {
	s := thriftgen.LookupStruct(structName)
	if s == nil {
		panic("compat: no struct " + structName)
	}
	f := s.FieldByName(field)
	if f == nil {
		panic("compat: no field " + structName + "." + field)
	}
	return f.ID
}

// move builds a struct from fields of src: pairs of (src id, dst id).
func move(src *wire.Value, pairs ...int16) wire.Value {
	out := wire.Struct()
	for i := 0; i+1 < len(pairs); i += 2 {
		if f := src.Field(pairs[i]); f != nil {
			out.Fields = append(out.Fields, wire.Field{ID: pairs[i+1], V: *f})
		}
	}
	return out
}

// request is the request struct of a *_req call (field 1 of its args) as an
// adapter reads it: move records which fields reach the backend, and
// leftover hands the others to the guard's rule (writes only), so a field
// the positional form has no place for is dropped only at a value the
// runtime implies, and refused otherwise.
type request struct {
	*wire.Value
	method, structName string
	moved              map[int16]bool
}

func newRequest(method string, args *wire.Value) *request {
	r := &request{Value: arg1(args), method: method, moved: map[int16]bool{}}
	if f := thriftgen.LookupMethod(method).Args.FieldByID(1); f != nil && f.Type.Kind == thriftgen.KindStruct {
		r.structName = f.Type.Name
	}
	return r
}

// move builds a struct from fields of the request (pairs of request id,
// target id) and records them as carried.
func (r *request) move(pairs ...int16) wire.Value {
	for i := 0; i+1 < len(pairs); i += 2 {
		r.moved[pairs[i]] = true
	}
	return move(r.Value, pairs...)
}

// carry records fields the adapter carries to the backend by other means.
func (r *request) carry(ids ...int16) {
	for _, id := range ids {
		r.moved[id] = true
	}
}

func (r *request) leftover(c Caller) error {
	return c.Leftover(r.method, r.Value, r.structName, func(id int16) bool { return r.moved[id] })
}

func arg1(args *wire.Value) *wire.Value {
	if a := args.Field(1); a != nil && a.Type == wire.TStruct {
		return a
	}
	return &wire.Value{Type: wire.TStruct}
}

func isTrue(v *wire.Value) bool   { return v != nil && v.Int != 0 }
func isSet(v *wire.Value) bool    { return v != nil && (v.Type != wire.TString || len(v.Str) > 0) }
func positive(v *wire.Value) bool { return v != nil && v.Int > 0 }

// result is the backend answer with the client's view of its exceptions.
type result struct {
	v      wire.Value
	failed bool
}

// callInto calls the backend and, when it answered a declared exception,
// returns the client result carrying that exception.
func callInto(c Caller, client, backend string, args wire.Value) (result, error) {
	v, err := c.Call(backend, args)
	if err != nil {
		return result{}, err
	}
	for _, f := range v.Fields {
		if f.ID != 0 {
			mapped, err := mapException(client, backend, f)
			return result{v: mapped, failed: true}, err
		}
	}
	return result{v: v}, nil
}

// mapException places a backend exception into the client's result: the
// field of the same exception type, else the client's MetaException with
// the original type named in the message.
func mapException(client, backend string, f wire.Field) (wire.Value, error) {
	cm, bm := thriftgen.LookupMethod(client), thriftgen.LookupMethod(backend)
	typ := ""
	if bf := bm.Result.FieldByID(f.ID); bf != nil {
		typ = bf.Type.Name
	}
	var meta int16 = -1
	for _, cf := range cm.Result.Fields {
		if cf.ID == 0 || cf.Type.Kind != thriftgen.KindStruct {
			continue
		}
		if cf.Type.Name == typ {
			return wire.Struct(wire.Field{ID: cf.ID, V: f.V}), nil
		}
		if cf.Type.Name == "MetaException" {
			meta = cf.ID
		}
	}
	msg := typ + ": " + f.V.Field(1).String()
	if meta < 0 {
		// The client method declares neither that exception nor a
		// MetaException: the router answers a TApplicationException.
		return wire.Value{}, fmt.Errorf("backend %s failed: %s", backend, msg)
	}
	return wire.Struct(wire.Field{ID: meta, V: wire.Struct(wire.Field{ID: 1, V: wire.Str(msg)})}), nil
}

// success wraps a value as field 0 of a result.
func success(v *wire.Value) wire.Value {
	if v == nil {
		return wire.Struct()
	}
	return wire.Struct(wire.Field{ID: 0, V: *v})
}

// simple builds the common adapter: positional args from the request
// struct, one backend call, the backend's success wrapped (or not) back.
func simple(method, to, why string, build func(req *request) (wire.Value, error), wrap func(s *wire.Value) wire.Value) *Adapter {
	return &Adapter{Method: method, To: to, Why: why, Run: func(c Caller, args *wire.Value) (wire.Value, error) {
		req := newRequest(method, args)
		a, err := build(req)
		if err != nil {
			return wire.Value{}, err
		}
		if err := req.leftover(c); err != nil {
			return wire.Value{}, err
		}
		r, err := callInto(c, method, to, a)
		if err != nil || r.failed {
			return r.v, err
		}
		if wrap == nil {
			return r.v, nil
		}
		return success(ptr(wrap(r.v.Field(0)))), nil
	}}
}

func ptr(v wire.Value) *wire.Value { return &v }

// inStruct wraps the backend success as field id of a response struct.
func inStruct(id int16) func(s *wire.Value) wire.Value {
	return func(s *wire.Value) wire.Value {
		if s == nil {
			return wire.Struct()
		}
		return wire.Struct(wire.Field{ID: id, V: *s})
	}
}

// emptyStruct answers a void backend call with an empty response struct.
func emptyStruct(*wire.Value) wire.Value { return wire.Struct() }

// fields picks fields of the request struct as positional arguments.
func fields(pairs ...int16) func(r *request) (wire.Value, error) {
	return func(r *request) (wire.Value, error) { return r.move(pairs...), nil }
}

// ---- the adapters --------------------------------------------------------

func (b *builder) standard() {
	// Upgrades: Hive 4 servers no longer have these two positional reads,
	// which Hive 2/3 and Spark clients still call.
	b.lacking(hive4, &Adapter{Method: "get_table", To: "get_table_req",
		Why: "removed in Hive 4; served by get_table_req",
		Run: func(c Caller, args *wire.Value) (wire.Value, error) {
			req := move(args, 1, fid("GetTableRequest", "dbName"), 2, fid("GetTableRequest", "tblName"))
			r, err := callInto(c, "get_table", "get_table_req", wire.Struct(wire.Field{ID: 1, V: req}))
			if err != nil || r.failed {
				return r.v, err
			}
			return success(r.v.Field(0).Field(fid("GetTableResult", "table"))), nil
		}})
	b.lacking(hive4, &Adapter{Method: "get_table_objects_by_name", To: "get_table_objects_by_name_req",
		Why: "removed in Hive 4; served by get_table_objects_by_name_req",
		Run: func(c Caller, args *wire.Value) (wire.Value, error) {
			req := move(args, 1, fid("GetTablesRequest", "dbName"), 2, fid("GetTablesRequest", "tblNames"))
			r, err := callInto(c, "get_table_objects_by_name", "get_table_objects_by_name_req", wire.Struct(wire.Field{ID: 1, V: req}))
			if err != nil || r.failed {
				return r.v, err
			}
			tables := r.v.Field(0).Field(fid("GetTablesResult", "tables"))
			if tables == nil {
				tables = ptr(wire.List(wire.TStruct))
			}
			return success(tables), nil
		}})

	// Downgrades: Hive 4 (and HDP) request wrappers served by the positional
	// methods of Apache 3.1.3 / HDP runtimes.
	b.lacking(0, simple("get_database_req", "get_database", "Hive 4 wrapper; 3.1.3 has get_database(name)",
		fields(fid("GetDatabaseRequest", "name"), 1), nil))
	b.lacking(0, &Adapter{Method: "create_table_req", To: "create_table_with_environment_context",
		Why: "Hive 4 wrapper; 3.1.3 has create_table_with_constraints / _with_environment_context",
		Run: createTableReq})
	b.lacking(0, simple("alter_table_req", "alter_table_with_environment_context",
		"Hive 4 wrapper; 3.1.3 has alter_table_with_environment_context",
		func(r *request) (wire.Value, error) {
			if isSet(r.Field(fid("AlterTableRequest", "expectedParameterKey"))) {
				return wire.Value{}, refused("alter_table_req with expectedParameterKey needs a Hive 4 backend: the older runtime cannot make the alter conditional")
			}
			tbl := r.Field(fid("AlterTableRequest", "table"))
			if txnStats(r, tbl, fid("AlterTableRequest", "writeId"), fid("AlterTableRequest", "validWriteIdList")) {
				untrustStats(tbl, fid("Table", "parameters"), fid("Table", "writeId"))
			} else if w := r.Field(fid("AlterTableRequest", "writeId")); positive(w) {
				return wire.Value{}, refused("AlterTableRequest.writeId = %d on a table that is not transactional: the older runtime has no write ids to tie its statistics to", w.Int)
			}
			return r.move(fid("AlterTableRequest", "dbName"), 1, fid("AlterTableRequest", "tableName"), 2,
				fid("AlterTableRequest", "table"), 3, fid("AlterTableRequest", "environmentContext"), 4), nil
		}, emptyStruct))
	b.lacking(0, simple("get_partitions_by_names_req", "get_partitions_by_names",
		"Hive 4 wrapper; 3.1.3 has get_partitions_by_names",
		func(r *request) (wire.Value, error) {
			if isTrue(r.Field(fid("GetPartitionsByNamesRequest", "get_col_stats"))) {
				return wire.Value{}, refused("get_partitions_by_names_req with get_col_stats=true needs a Hive 4 backend")
			}
			return r.move(1, 1, 2, 2, 3, 3), nil
		}, inStruct(fid("GetPartitionsByNamesResult", "partitions"))))
	b.lacking(0, simple("get_partition_req", "get_partition", "Hive 4 wrapper; 3.1.3 has get_partition",
		fields(fid("GetPartitionRequest", "dbName"), 1, fid("GetPartitionRequest", "tblName"), 2, fid("GetPartitionRequest", "partVals"), 3),
		inStruct(fid("GetPartitionResponse", "partition"))))
	b.lacking(0, simple("get_partitions_req", "get_partitions", "Hive 4 wrapper; 3.1.3 has get_partitions",
		fields(fid("PartitionsRequest", "dbName"), 1, fid("PartitionsRequest", "tblName"), 2, fid("PartitionsRequest", "maxParts"), 3),
		inStruct(fid("PartitionsResponse", "partitions"))))
	b.lacking(0, simple("fetch_partition_names_req", "get_partition_names", "Hive 4 wrapper; 3.1.3 has get_partition_names",
		fields(fid("PartitionsRequest", "dbName"), 1, fid("PartitionsRequest", "tblName"), 2, fid("PartitionsRequest", "maxParts"), 3), nil))
	b.lacking(0, simple("get_partition_names_ps_req", "get_partition_names_ps", "Hive 4 wrapper; 3.1.3 has get_partition_names_ps",
		fields(fid("GetPartitionNamesPsRequest", "dbName"), 1, fid("GetPartitionNamesPsRequest", "tblName"), 2,
			fid("GetPartitionNamesPsRequest", "partValues"), 3, fid("GetPartitionNamesPsRequest", "maxParts"), 4),
		inStruct(fid("GetPartitionNamesPsResponse", "names"))))
	b.lacking(0, simple("get_partitions_ps_with_auth_req", "get_partitions_ps_with_auth", "Hive 4 wrapper; 3.1.3 has get_partitions_ps_with_auth",
		func(r *request) (wire.Value, error) {
			if isSet(r.Field(fid("GetPartitionsPsWithAuthRequest", "partNames"))) {
				return wire.Value{}, refused("get_partitions_ps_with_auth_req with partNames needs a Hive 4 backend")
			}
			return r.move(fid("GetPartitionsPsWithAuthRequest", "dbName"), 1, fid("GetPartitionsPsWithAuthRequest", "tblName"), 2,
				fid("GetPartitionsPsWithAuthRequest", "partVals"), 3, fid("GetPartitionsPsWithAuthRequest", "maxParts"), 4,
				fid("GetPartitionsPsWithAuthRequest", "userName"), 5, fid("GetPartitionsPsWithAuthRequest", "groupNames"), 6), nil
		}, inStruct(fid("GetPartitionsPsWithAuthResponse", "partitions"))))
	b.lacking(0, simple("get_partitions_by_filter_req", "get_partitions_by_filter", "Hive 4 wrapper; 3.1.3 has get_partitions_by_filter",
		fields(fid("GetPartitionsByFilterRequest", "dbName"), 1, fid("GetPartitionsByFilterRequest", "tblName"), 2,
			fid("GetPartitionsByFilterRequest", "filter"), 3, fid("GetPartitionsByFilterRequest", "maxParts"), 4), nil))
	b.lacking(0, simple("drop_table_req", "drop_table_with_environment_context", "Hive 4 wrapper; 3.1.3 has drop_table_with_environment_context",
		fields(fid("DropTableRequest", "dbName"), 1, fid("DropTableRequest", "tableName"), 2,
			fid("DropTableRequest", "deleteData"), 3, fid("DropTableRequest", "envContext"), 4), nil))
	b.lacking(0, simple("truncate_table_req", "truncate_table", "Hive 4/HDP wrapper; 3.1.3 has truncate_table",
		func(r *request) (wire.Value, error) {
			if positive(r.Field(fid("TruncateTableRequest", "writeId"))) {
				return wire.Value{}, refused("truncate_table_req with a writeId (transactional truncate) needs a Hive 4 or Hortonworks backend")
			}
			return r.move(1, 1, 2, 2, 3, 3), nil
		}, emptyStruct))
	b.lacking(0, simple("rename_partition_req", "rename_partition", "Hive 4/HDP wrapper; 3.1.3 has rename_partition",
		fields(fid("RenamePartitionRequest", "dbName"), 1, fid("RenamePartitionRequest", "tableName"), 2,
			fid("RenamePartitionRequest", "partVals"), 3, fid("RenamePartitionRequest", "newPart"), 4), emptyStruct))
	b.lacking(0, simple("alter_partitions_req", "alter_partitions_with_environment_context",
		"Hive 4/HDP wrapper; 3.1.3 has alter_partitions_with_environment_context",
		func(r *request) (wire.Value, error) {
			if w := r.Field(fid("AlterPartitionsRequest", "writeId")); positive(w) || isSet(r.Field(fid("AlterPartitionsRequest", "validWriteIdList"))) {
				// Only a transactional table's partitions get write ids: their
				// statistics are kept, not trusted (see txnStats).
				r.carry(fid("AlterPartitionsRequest", "writeId"), fid("AlterPartitionsRequest", "validWriteIdList"))
				if parts := r.Field(fid("AlterPartitionsRequest", "partitions")); parts != nil {
					for i := range parts.Elems {
						untrustStats(&parts.Elems[i], fid("Partition", "parameters"), fid("Partition", "writeId"))
					}
				}
			}
			return r.move(fid("AlterPartitionsRequest", "dbName"), 1, fid("AlterPartitionsRequest", "tableName"), 2,
				fid("AlterPartitionsRequest", "partitions"), 3, fid("AlterPartitionsRequest", "environmentContext"), 4), nil
		}, emptyStruct))
	b.lacking(0, &Adapter{Method: "append_partition_req", To: "append_partition_with_environment_context",
		Why: "Hive 4 wrapper; 3.1.3 has append_partition(_by_name)_with_environment_context", Run: appendPartitionReq})
	b.lacking(0, &Adapter{Method: "drop_partition_req", To: "drop_partition_with_environment_context",
		Why: "Hive 4 wrapper; 3.1.3 has drop_partition(_by_name)_with_environment_context", Run: dropPartitionReq})
	b.lacking(0, simple("get_fields_req", "get_fields_with_environment_context", "Hive 4 wrapper",
		fields(fid("GetFieldsRequest", "dbName"), 1, fid("GetFieldsRequest", "tblName"), 2, fid("GetFieldsRequest", "envContext"), 3),
		inStruct(fid("GetFieldsResponse", "fields"))))
	b.lacking(0, simple("get_schema_req", "get_schema_with_environment_context", "Hive 4 wrapper",
		fields(fid("GetSchemaRequest", "dbName"), 1, fid("GetSchemaRequest", "tblName"), 2, fid("GetSchemaRequest", "envContext"), 3),
		inStruct(fid("GetSchemaResponse", "fields"))))
	b.lacking(0, simple("create_database_req", "create_database", "Hive 4 wrapper; 3.1.3 has create_database(Database)",
		func(r *request) (wire.Value, error) {
			for _, f := range []string{"managedLocationUri", "dataConnectorName", "remote_dbname"} {
				if isSet(r.Field(fid("CreateDatabaseRequest", f))) {
					return wire.Value{}, refused("create_database_req with %s needs a Hive 4 backend: the older runtime's Database has no such field", f)
				}
			}
			if t := r.Field(fid("CreateDatabaseRequest", "type")); t != nil && t.Int != 1 { // DatabaseType.NATIVE=1
				return wire.Value{}, refused("create_database_req of a REMOTE database needs a Hive 4 backend")
			}
			db := r.move(1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8)
			return wire.Struct(wire.Field{ID: 1, V: db}), nil
		}, emptyStruct))
	b.lacking(0, &Adapter{Method: "drop_database_req", To: "drop_database", Why: "Hive 4 wrapper; 3.1.3 has drop_database(name, deleteData, cascade)",
		Run: dropDatabaseReq})
	b.lacking(0, simple("alter_database_req", "alter_database", "Hive 4 wrapper; 3.1.3 has alter_database(dbname, db)",
		fields(1, 1, 2, 2), emptyStruct))
	b.lacking(0, &Adapter{Method: "get_functions_req", To: "get_functions", Why: "Hive 4 wrapper; 3.1.3 has get_functions + get_function",
		Run: getFunctionsReq})
	b.txn()
	b.statistics()
	b.hiveServer2()
	b.lacking(0, &Adapter{Method: "get_all_table_constraints", To: "get_primary_keys",
		Why: "Hive 4 only; 3.1.3 answers the six constraint kinds one call each", Run: allTableConstraints})
	b.lacking(0, &Adapter{Method: "get_max_allocated_table_write_id", To: "get_valid_write_ids",
		Why: "Hive 4 only; the write-id high-water mark of get_valid_write_ids is the max allocated write id", Run: maxAllocatedWriteID})

	// LockType.EXCL_WRITE (Hive 4) does not exist before Hive 4: the closest
	// lock that is at least as strong is EXCLUSIVE.
	b.always(beforeHive4, &Adapter{Method: "get_table_names_by_filter", To: "get_tables",
		Why: "Hive 4 table-name/type filter keys are unknown before Hive 4", Run: tableNamesByFilter})
	b.always(noExclWrite, &Adapter{Method: "lock", To: "lock", Why: "EXCL_WRITE lock type is Hive 4 only; EXCLUSIVE is at least as strong",
		Run: lockDowngrade})
}

// Transactional statistics (Hive 4's write ids on alter_table_req and
// alter_partitions_req) tie a table's statistics to a snapshot. A Hive 4.1
// metastore without them (metastore.txn.stats.enabled=false, the only way
// an older runtime can be) accepts such an alter of a transactional table,
// ignores the write id and the write-id list, and stores the statistics
// without trusting them: ObjectStore.alterTable calls
// StatsSetupConst.setBasicStatsState(parameters, "false"), which removes
// COLUMN_STATS_ACCURATE. The older runtime is given the same.
