// The adapters whose Run is more than a field move (b.standard wires them):
// they read the client's request, call the runtime's form, and build the
// client's answer.

package compat

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

func createTableReq(c Caller, args *wire.Value) (wire.Value, error) {
	r := newRequest("create_table_req", args)
	constraints := false
	for _, n := range []string{"primaryKeys", "foreignKeys", "uniqueConstraints", "notNullConstraints", "defaultConstraints", "checkConstraints"} {
		if f := r.Field(fid("CreateTableRequest", n)); f != nil && len(f.Elems) > 0 {
			constraints = true
		}
	}
	tbl, env := fid("CreateTableRequest", "table"), fid("CreateTableRequest", "envContext")
	if constraints {
		if isSet(r.Field(env)) {
			return wire.Value{}, refused("create_table_req with both constraints and an environment context needs a Hive 4 backend: 3.1.3 has no call taking both")
		}
		a := r.move(tbl, 1, 3, 2, 4, 3, 5, 4, 6, 5, 7, 6, 8, 7)
		for id := int16(2); id <= 7; id++ { // 3.1.3 reads every constraint list; send empty ones
			if a.Field(id) == nil {
				a.Set(id, wire.List(wire.TStruct))
			}
		}
		r.carry(env) // absent or empty (checked above)
		if err := r.leftover(c); err != nil {
			return wire.Value{}, err
		}
		res, err := callInto(c, "create_table_req", "create_table_with_constraints", a)
		return res.v, err
	}
	a := r.move(tbl, 1, env, 2)
	for _, n := range []string{"primaryKeys", "foreignKeys", "uniqueConstraints", "notNullConstraints", "defaultConstraints", "checkConstraints"} {
		r.carry(fid("CreateTableRequest", n)) // empty lists: nothing to carry
	}
	if err := r.leftover(c); err != nil {
		return wire.Value{}, err
	}
	res, err := callInto(c, "create_table_req", "create_table_with_environment_context", a)
	return res.v, err
}

func appendPartitionReq(c Caller, args *wire.Value) (wire.Value, error) {
	r := newRequest("append_partition_req", args)
	db, tb := fid("AppendPartitionsRequest", "dbName"), fid("AppendPartitionsRequest", "tableName")
	name, vals, env := fid("AppendPartitionsRequest", "name"), fid("AppendPartitionsRequest", "partVals"), fid("AppendPartitionsRequest", "environmentContext")
	method, a := "append_partition_with_environment_context", wire.Value{}
	if isSet(r.Field(name)) {
		method, a = "append_partition_by_name_with_environment_context", r.move(db, 1, tb, 2, name, 3, env, 4)
		r.carry(vals) // the name says it
	} else {
		a = r.move(db, 1, tb, 2, vals, 3, env, 4)
	}
	if err := r.leftover(c); err != nil {
		return wire.Value{}, err
	}
	res, err := callInto(c, "append_partition_req", method, a)
	return res.v, err
}

func dropPartitionReq(c Caller, args *wire.Value) (wire.Value, error) {
	r := newRequest("drop_partition_req", args)
	db, tb := fid("DropPartitionRequest", "dbName"), fid("DropPartitionRequest", "tblName")
	name, vals := fid("DropPartitionRequest", "partName"), fid("DropPartitionRequest", "partVals")
	del, env := fid("DropPartitionRequest", "deleteData"), fid("DropPartitionRequest", "environmentContext")
	method, a := "drop_partition_with_environment_context", wire.Value{}
	if isSet(r.Field(name)) {
		method, a = "drop_partition_by_name_with_environment_context", r.move(db, 1, tb, 2, name, 3, del, 4, env, 5)
		r.carry(vals)
	} else {
		a = r.move(db, 1, tb, 2, vals, 3, del, 4, env, 5)
	}
	if err := r.leftover(c); err != nil {
		return wire.Value{}, err
	}
	res, err := callInto(c, "drop_partition_req", method, a)
	return res.v, err
}

func dropDatabaseReq(c Caller, args *wire.Value) (wire.Value, error) {
	r := newRequest("drop_database_req", args)
	if isTrue(r.Field(fid("DropDatabaseRequest", "softDelete"))) {
		return wire.Value{}, refused("drop_database_req with softDelete=true needs a Hive 4 backend")
	}
	name := r.Field(fid("DropDatabaseRequest", "name"))
	if name == nil {
		return wire.Value{}, refused("drop_database_req needs a database name")
	}
	// Ask first, as Hive's own client does: a 3.1.3 drop_database of a
	// missing database answers a MetaException wrapping a
	// NullPointerException rather than NoSuchObjectException.
	got, err := callInto(c, "drop_database_req", "get_database", wire.Struct(wire.Field{ID: 1, V: *name}))
	if err != nil {
		return got.v, err
	}
	if got.failed {
		if got.v.Field(fid2("drop_database_req_result", "NoSuchObjectException")) != nil &&
			isTrue(r.Field(fid("DropDatabaseRequest", "ignoreUnknownDb"))) {
			return wire.Struct(), nil
		}
		return got.v, nil
	}
	a := r.move(fid("DropDatabaseRequest", "name"), 1, fid("DropDatabaseRequest", "deleteData"), 2, fid("DropDatabaseRequest", "cascade"), 3)
	r.carry(fid("DropDatabaseRequest", "ignoreUnknownDb"), fid("DropDatabaseRequest", "softDelete")) // both handled above
	if err := r.leftover(c); err != nil {
		return wire.Value{}, err
	}
	res, err := callInto(c, "drop_database_req", "drop_database", a)
	return res.v, err
}

// fid2 finds the result field of an exception type.
func fid2(resultStruct, excType string) int16 {
	for _, f := range thriftgen.LookupStruct(resultStruct).Fields {
		if f.Type.Kind == thriftgen.KindStruct && f.Type.Name == excType {
			return f.ID
		}
	}
	return -1
}

func getFunctionsReq(c Caller, args *wire.Value) (wire.Value, error) {
	r := arg1(args)
	db, pat := fid("GetFunctionsRequest", "dbName"), fid("GetFunctionsRequest", "pattern")
	a := move(r, db, 1, pat, 2)
	if a.Field(2) == nil {
		a.Set(2, wire.Str("*"))
	}
	res, err := callInto(c, "get_functions_req", "get_functions", a)
	if err != nil || res.failed {
		return res.v, err
	}
	names := res.v.Field(0)
	if names == nil {
		names = ptr(wire.List(wire.TString))
	}
	out := wire.Struct()
	if isTrue(r.Field(fid("GetFunctionsRequest", "returnNames"))) {
		out.Set(fid("GetFunctionsResponse", "function_names"), *names)
		return success(&out), nil
	}
	fns := wire.List(wire.TStruct)
	for _, n := range names.Elems {
		fr, err := callInto(c, "get_functions_req", "get_function", wire.Struct(wire.Field{ID: 1, V: *r.Field(db)}, wire.Field{ID: 2, V: n}))
		if err != nil || fr.failed {
			return fr.v, err
		}
		if f := fr.v.Field(0); f != nil {
			fns.Elems = append(fns.Elems, *f)
		}
	}
	out.Set(fid("GetFunctionsResponse", "functions"), fns)
	return success(&out), nil
}

func allTableConstraints(c Caller, args *wire.Value) (wire.Value, error) {
	r := arg1(args)
	db, tb, cat := r.Field(fid("AllTableConstraintsRequest", "dbName")), r.Field(fid("AllTableConstraintsRequest", "tblName")), r.Field(fid("AllTableConstraintsRequest", "catName"))
	if db == nil || tb == nil {
		return wire.Value{}, refused("get_all_table_constraints needs dbName and tblName")
	}
	catV := wire.Str("hive")
	if cat != nil {
		catV = *cat
	}
	type part struct {
		method, reqStruct, respStruct, list, all string
		req                                      wire.Value
	}
	std := func(method, reqS, respS, list, all string) part {
		req := wire.Struct(wire.Field{ID: fid(reqS, "catName"), V: catV}, wire.Field{ID: fid(reqS, "db_name"), V: *db}, wire.Field{ID: fid(reqS, "tbl_name"), V: *tb})
		return part{method, reqS, respS, list, all, req}
	}
	parts := []part{
		{"get_primary_keys", "PrimaryKeysRequest", "PrimaryKeysResponse", "primaryKeys", "primaryKeys",
			wire.Struct(wire.Field{ID: fid("PrimaryKeysRequest", "db_name"), V: *db}, wire.Field{ID: fid("PrimaryKeysRequest", "tbl_name"), V: *tb}, wire.Field{ID: fid("PrimaryKeysRequest", "catName"), V: catV})},
		{"get_foreign_keys", "ForeignKeysRequest", "ForeignKeysResponse", "foreignKeys", "foreignKeys",
			wire.Struct(wire.Field{ID: fid("ForeignKeysRequest", "foreign_db_name"), V: *db}, wire.Field{ID: fid("ForeignKeysRequest", "foreign_tbl_name"), V: *tb}, wire.Field{ID: fid("ForeignKeysRequest", "catName"), V: catV})},
		std("get_unique_constraints", "UniqueConstraintsRequest", "UniqueConstraintsResponse", "uniqueConstraints", "uniqueConstraints"),
		std("get_not_null_constraints", "NotNullConstraintsRequest", "NotNullConstraintsResponse", "notNullConstraints", "notNullConstraints"),
		std("get_default_constraints", "DefaultConstraintsRequest", "DefaultConstraintsResponse", "defaultConstraints", "defaultConstraints"),
		std("get_check_constraints", "CheckConstraintsRequest", "CheckConstraintsResponse", "checkConstraints", "checkConstraints"),
	}
	all := wire.Struct()
	for _, p := range parts {
		res, err := callInto(c, "get_all_table_constraints", p.method, wire.Struct(wire.Field{ID: 1, V: p.req}))
		if err != nil || res.failed {
			return res.v, err
		}
		if l := res.v.Field(0).Field(fid(p.respStruct, p.list)); l != nil {
			all.Set(fid("SQLAllTableConstraints", p.all), *l)
		}
	}
	resp := wire.Struct(wire.Field{ID: fid("AllTableConstraintsResponse", "allTableConstraints"), V: all})
	return success(&resp), nil
}

// deleteColumnStatisticsReq reads the request as Hive 4 does: tableLevel
// absent means false, and false on a partitioned table deletes the named
// partitions' statistics (every partition's when none are named), leaving
// the table's own; on an unpartitioned table it deletes the table's.
func deleteColumnStatisticsReq(c Caller, args *wire.Value) (wire.Value, error) {
	const m = "delete_column_statistics_req"
	r := newRequest(m, args)
	db, tb := r.Field(fid("DeleteColumnStatisticsRequest", "db_name")), r.Field(fid("DeleteColumnStatisticsRequest", "tbl_name"))
	if db == nil || tb == nil {
		return wire.Value{}, refused("delete_column_statistics_req needs db_name and tbl_name")
	}
	// engine is the guard's: "hive" (the default) is what the older
	// positional calls delete, any other engine is refused there.
	r.carry(fid("DeleteColumnStatisticsRequest", "db_name"), fid("DeleteColumnStatisticsRequest", "tbl_name"),
		fid("DeleteColumnStatisticsRequest", "col_names"), fid("DeleteColumnStatisticsRequest", "part_names"),
		fid("DeleteColumnStatisticsRequest", "tableLevel"))
	if err := r.leftover(c); err != nil {
		return wire.Value{}, err
	}
	cols := []wire.Value{{}} // zero Value: every column (argument left out)
	if l := r.Field(fid("DeleteColumnStatisticsRequest", "col_names")); l != nil && len(l.Elems) > 0 {
		cols = l.Elems
	}
	var parts []wire.Value
	if !isTrue(r.Field(fid("DeleteColumnStatisticsRequest", "tableLevel"))) {
		tbl, err := getTable(c, m, *db, *tb)
		if err != nil || tbl.failed {
			return tbl.v, err
		}
		if keys := tbl.v.Field(0).Field(fid("Table", "partitionKeys")); keys != nil && len(keys.Elems) > 0 {
			if l := r.Field(fid("DeleteColumnStatisticsRequest", "part_names")); l != nil && len(l.Elems) > 0 {
				parts = l.Elems
			} else {
				names, err := callInto(c, m, "get_partition_names", wire.Struct(wire.Field{ID: 1, V: *db}, wire.Field{ID: 2, V: *tb},
					wire.Field{ID: 3, V: wire.Value{Type: wire.TI16, Int: -1}}))
				if err != nil || names.failed {
					return names.v, err
				}
				if l := names.v.Field(0); l != nil {
					parts = l.Elems
				}
			}
			if len(parts) == 0 {
				return success(ptr(wire.Bool(true))), nil
			}
		}
	}
	ok := true
	call := func(method string, a wire.Value) (wire.Value, bool, error) {
		res, err := callInto(c, m, method, a)
		if err != nil || res.failed {
			return res.v, true, err
		}
		ok = ok && isTrue(res.v.Field(0))
		return wire.Value{}, false, nil
	}
	for _, col := range cols {
		if parts == nil {
			a := wire.Struct(wire.Field{ID: 1, V: *db}, wire.Field{ID: 2, V: *tb})
			if col.Type != 0 {
				a.Set(3, col)
			}
			if v, stop, err := call("delete_table_column_statistics", a); stop {
				return v, err
			}
			continue
		}
		for _, p := range parts {
			a := wire.Struct(wire.Field{ID: 1, V: *db}, wire.Field{ID: 2, V: *tb}, wire.Field{ID: 3, V: p})
			if col.Type != 0 {
				a.Set(4, col)
			}
			if v, stop, err := call("delete_partition_column_statistics", a); stop {
				return v, err
			}
		}
	}
	return success(ptr(wire.Bool(ok))), nil
}

func maxAllocatedWriteID(c Caller, args *wire.Value) (wire.Value, error) {
	r := arg1(args)
	db, tb := r.Field(fid("MaxAllocatedTableWriteIdRequest", "dbName")), r.Field(fid("MaxAllocatedTableWriteIdRequest", "tableName"))
	if db == nil || tb == nil {
		return wire.Value{}, refused("get_max_allocated_table_write_id needs dbName and tableName")
	}
	full := string(db.Str) + "." + string(tb.Str)
	// A snapshot with every transaction committed: the high-water mark of
	// the answer is then the highest write id ever allocated.
	snapshot := fmt.Sprintf("%d:%d::", int64(math.MaxInt64), int64(math.MaxInt64))
	req := wire.Struct(wire.Field{ID: fid("GetValidWriteIdsRequest", "fullTableNames"), V: wire.List(wire.TString, wire.Str(full))},
		wire.Field{ID: fid("GetValidWriteIdsRequest", "validTxnList"), V: wire.Str(snapshot)})
	res, err := callInto(c, "get_max_allocated_table_write_id", "get_valid_write_ids", wire.Struct(wire.Field{ID: 1, V: req}))
	if err != nil || res.failed {
		return res.v, err
	}
	var hwm int64
	if l := res.v.Field(0).Field(fid("GetValidWriteIdsResponse", "tblValidWriteIds")); l != nil {
		for _, t := range l.Elems {
			if strings.EqualFold(t.Field(fid("TableValidWriteIds", "fullTableName")).String(), full) {
				hwm = t.Field(fid("TableValidWriteIds", "writeIdHighWaterMark")).Int
			}
		}
	}
	resp := wire.Struct(wire.Field{ID: fid("MaxAllocatedTableWriteIdResponse", "maxWriteId"), V: wire.I64(hwm)})
	return success(&resp), nil
}

const lockTypeExclWrite, lockTypeExclusive = 4, 3

func lockDowngrade(c Caller, args *wire.Value) (wire.Value, error) {
	req := arg1(args)
	if comps := req.Field(fid("LockRequest", "component")); comps != nil {
		for i := range comps.Elems {
			if t := comps.Elems[i].Field(fid("LockComponent", "type")); t != nil && t.Int == lockTypeExclWrite {
				t.Int = lockTypeExclusive
			}
		}
	}
	res, err := callInto(c, "lock", "lock", *args)
	return res.v, err
}

// Hive 4 clients list tables with get_table_names_by_filter and the filter
// keys hive_filter_field_tableName__ / hive_filter_field_tableType__, which
// older metastores reject ("Invalid key name in filter"). The two forms
// Hive 4's client builds map onto get_tables / get_tables_by_type; any other
// filter goes to the backend as it is.
var hive4NameFilter = regexp.MustCompile(`(?i)^\s*hive_filter_field_tableName__\s+like\s+"([^"]*)"\s*(?:and\s+hive_filter_field_tableType__\s*=\s*"([^"]*)"\s*)?$`)

func tableNamesByFilter(c Caller, args *wire.Value) (wire.Value, error) {
	filter := args.Field(2).String()
	if !strings.Contains(strings.ToLower(filter), "hive_filter_field_table") {
		res, err := callInto(c, "get_table_names_by_filter", "get_table_names_by_filter", *args)
		return res.v, err
	}
	m := hive4NameFilter.FindStringSubmatch(filter)
	if m == nil {
		return wire.Value{}, refused("get_table_names_by_filter: filter %q uses Hive 4 filter keys in a form the older runtime cannot be given", filter)
	}
	// Hive 4 matches tableName "like" as a (Java) regex over the whole name.
	re, err := regexp.Compile("^(?:" + m[1] + ")$")
	if err != nil {
		return wire.Value{}, refused("get_table_names_by_filter: table-name pattern %q is not a regex hms-proxy can evaluate: %v", m[1], err)
	}
	a := wire.Struct(wire.Field{ID: 1, V: *args.Field(1)}, wire.Field{ID: 2, V: wire.Str("*")})
	method := "get_tables"
	if m[2] != "" {
		method = "get_tables_by_type"
		a.Set(3, wire.Str(m[2]))
	}
	res, err := callInto(c, "get_table_names_by_filter", method, a)
	if err != nil || res.failed {
		return res.v, err
	}
	limit := -1
	if mx := args.Field(3); mx != nil {
		limit = int(mx.Int)
	}
	names := wire.List(wire.TString)
	if l := res.v.Field(0); l != nil {
		for _, n := range l.Elems {
			if limit >= 0 && len(names.Elems) >= limit {
				break
			}
			if re.Match(n.Str) {
				names.Elems = append(names.Elems, n)
			}
		}
	}
	return success(&names), nil
}

// txnStats reports whether r (with the write-id fields writeID and list)
// asks for transactional statistics of tbl, a transactional table, and
// marks those fields carried.
func txnStats(r *request, tbl *wire.Value, writeID, list int16) bool {
	if tbl == nil || TransactionalTable(tbl) == "" {
		return false
	}
	r.carry(writeID, list)
	return positive(r.Field(writeID)) || isSet(r.Field(list))
}

// untrustStats removes COLUMN_STATS_ACCURATE from the parameters (field id)
// of a Table or Partition, and the write id its statistics were tied to
// (field writeID).
func untrustStats(obj *wire.Value, id, writeID int16) {
	obj.Del(writeID)
	params := obj.Field(id)
	if params == nil {
		return
	}
	kept := params.Elems[:0]
	for i := 0; i+1 < len(params.Elems); i += 2 {
		if string(params.Elems[i].Str) != "COLUMN_STATS_ACCURATE" {
			kept = append(kept, params.Elems[i], params.Elems[i+1])
		}
	}
	params.Elems = kept
}

// TransactionalTable says why a Table is transactional ("" when it is not):
// transactional=true, or any transactional_properties (keys compared
// ignoring case, as Hive's TransactionalValidationListener does).
func TransactionalTable(tbl *wire.Value) string {
	params := tbl.Field(fid("Table", "parameters"))
	if params == nil || params.Type != wire.TMap {
		return ""
	}
	for i := 0; i+1 < len(params.Elems); i += 2 {
		k, v := string(params.Elems[i].Str), strings.TrimSpace(string(params.Elems[i+1].Str))
		switch {
		case strings.EqualFold(k, "transactional") && strings.EqualFold(v, "true"):
			return "transactional=" + v
		case strings.EqualFold(k, "transactional_properties") && v != "":
			return "transactional_properties=" + v
		}
	}
	return ""
}

// getTable reads a table for an adapter with get_table_req, declaring the
// capability every Hive 3.1.3 and 4 client declares (INSERT_ONLY_TABLES):
// 3.1.3 refuses an insert-only table to a caller without it, which the
// positional get_table is. The table is field 0 of the result, as
// get_table's.
func getTable(c Caller, client string, db, tbl wire.Value) (result, error) {
	caps := wire.Struct(wire.Field{ID: fid("ClientCapabilities", "values"), V: wire.List(wire.TI32, wire.I32(clientCapabilityInsertOnly))})
	req := wire.Struct(wire.Field{ID: fid("GetTableRequest", "dbName"), V: db}, wire.Field{ID: fid("GetTableRequest", "tblName"), V: tbl},
		wire.Field{ID: fid("GetTableRequest", "capabilities"), V: caps})
	r, err := callInto(c, client, "get_table_req", wire.Struct(wire.Field{ID: 1, V: req}))
	if err != nil || r.failed {
		return r, err
	}
	if t := r.v.Field(0).Field(fid("GetTableResult", "table")); t != nil {
		return result{v: success(t)}, nil
	}
	return result{}, refused("%s: get_table_req answered no table", client)
}

// clientCapabilityInsertOnly is ClientCapability.INSERT_ONLY_TABLES.
const clientCapabilityInsertOnly = 2
