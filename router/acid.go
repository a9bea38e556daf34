package router

import (
	"context"
	"fmt"
	"strings"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/router/planner"

	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// The ACID policy's table half (acidTables); the planner's half, by method
// name, is router/planner's acid.go.

// acidTables is the ACID policy's table half, a middleware inside the table
// policies: a create_table* or alter_table* whose Table would be
// transactional is refused on a catalog other than the default. It runs
// after the transactional DDL guard, which may already have made the table
// external (REWRITE_TRANSACTIONAL_TO_EXTERNAL) or refused it with its own
// message (REJECT_TRANSACTIONAL); this refusal is for what is left.
func (r *Router) acidTables(next Handler) Handler {
	return func(ctx context.Context, x *Exchange) error {
		if x.Cat.Default || x.Leg != nil {
			return next(ctx, x)
		}
		paths := r.tablePaths[x.Method()]
		if len(paths) == 0 {
			return next(ctx, x)
		}
		args, err := wire.DecodeStruct(x.Args())
		if err != nil {
			return planner.NewRefusal(planner.RefuseProtocol, "bad_arguments", "%s: cannot read arguments: %v", x.Method(), err)
		}
		for _, path := range paths {
			tbl := structAt(&args, path)
			if tbl == nil {
				continue
			}
			if why := transactionalTable(tbl); why != "" {
				// The names are the backend's here: say the client's.
				return planner.NewRefusal(planner.RefuseMeta, "non_default_acid",
					"%s of table %s.%s refused on catalog %s: the table would be transactional (%s); ACID tables can exist only in the default catalog %s, whose metastore issues their transaction and write ids; create it there, or without transactional/transactional_properties",
					x.Method(), r.ns.ExternalDB(x.Cat, tbl.Field(tableDBField).String()), tbl.Field(tableNameField).String(), x.Cat.Name, why, r.ns.Default().Name)
			}
		}
		return next(ctx, x)
	}
}

// Field ids of Table (checked against the schema by a test).
const (
	tableNameField   int16 = 1
	tableDBField     int16 = 2
	tableParamsField int16 = 9
)

// transactionalTable says why a Table is transactional ("" when it is not).
func transactionalTable(tbl *wire.Value) string { return compat.TransactionalTable(tbl) }

// ddlTablePaths maps every create_table* and alter_table* RPC of the schema to
// the paths (field ids from its args struct) of the Table structs it carries,
// directly or one struct deeper: [1] for create_table's tbl, [3] for
// alter_table's new_tbl, [1 1] for create_table_req's request.table. (The
// guards package derives the same paths; the router cannot import it, whose
// tests start a proxy.)
func ddlTablePaths() map[string][][]int16 {
	out := map[string][][]int16{}
	for _, m := range thriftgen.AllMethods() {
		if m.Args == nil || !(strings.HasPrefix(m.Name, "create_table") || strings.HasPrefix(m.Name, "alter_table")) {
			continue
		}
		var paths [][]int16
		for _, f := range m.Args.Fields {
			if f.Type.Kind != thriftgen.KindStruct {
				continue
			}
			if f.Type.Name == "Table" {
				paths = append(paths, []int16{f.ID})
				continue
			}
			if st := thriftgen.LookupStruct(f.Type.Name); st != nil {
				for _, g := range st.Fields {
					if g.Type.Kind == thriftgen.KindStruct && g.Type.Name == "Table" {
						paths = append(paths, []int16{f.ID, g.ID})
					}
				}
			}
		}
		if len(paths) > 0 {
			out[m.Name] = paths
		}
	}
	return out
}

// structAt follows a path of field ids from v; nil when a step is absent or
// not a struct.
func structAt(v *wire.Value, path []int16) *wire.Value {
	for _, id := range path {
		if v == nil || v.Type != wire.TStruct {
			return nil
		}
		v = v.Field(id)
	}
	if v == nil || v.Type != wire.TStruct {
		return nil
	}
	return v
}

// tableFieldIDs checks the Table field ids above against the schema.
func tableFieldIDs() error {
	s := thriftgen.LookupStruct("Table")
	if s == nil {
		return fmt.Errorf("schema has no Table struct")
	}
	want := map[string]int16{"tableName": tableNameField, "dbName": tableDBField, "parameters": tableParamsField}
	for _, f := range s.Fields {
		if id, ok := want[f.Name]; ok && id != f.ID {
			return fmt.Errorf("schema: field %s of Table has id %d, the router assumes %d", f.Name, f.ID, id)
		}
	}
	if l := thriftgen.LookupStruct("LockRequest"); l == nil || l.FieldByName("txnid") == nil || l.FieldByName("txnid").ID != lockRequestTxnID {
		return fmt.Errorf("schema: field txnid of LockRequest is not id %d, which the router assumes", lockRequestTxnID)
	}
	return nil
}

// lockRequestTxnID is the id of LockRequest.txnid (checked by tableFieldIDs).
const lockRequestTxnID int16 = 2
