package compat

import (
	"fmt"

	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Calls HiveServer2 4.x makes for SQL statements (CTAS, DROP PARTITION,
// scheduled queries) on runtimes before Hive 4.

func (b *builder) hiveServer2() {
	// HiveServer2 4.x asks the metastore where and how a CTAS target will
	// be created before it writes the data. A Hive 4 metastore without a
	// metadata transformer (metastore.metadata.transformer.class empty)
	// answers the table as it was sent; an older runtime has no
	// transformer, so the proxy answers the same.
	b.lacking(0, &Adapter{Method: "translate_table_dryrun", To: "",
		Why: "answered without a backend call: the table unchanged, as a Hive 4 metastore without a metadata transformer answers",
		Run: func(_ Caller, args *wire.Value) (wire.Value, error) {
			tbl := arg1(args).Field(fid("CreateTableRequest", "table"))
			if tbl == nil {
				return wire.Value{}, refused("translate_table_dryrun needs CreateTableRequest.table")
			}
			return success(tbl), nil
		}})
	// DROP PARTITION in HiveServer2 4.x asks for partition specs by
	// expression and has no fallback; the older runtime's
	// get_partitions_by_expr finds the same partitions, which one
	// PartitionSpec lists (a Hive 4 client reads partition lists and
	// shared-descriptor groups alike).
	b.lacking(0, &Adapter{Method: "get_partitions_spec_by_expr", To: "get_partitions_by_expr",
		Why: "Hive 4 only; served by get_partitions_by_expr, the partitions returned as one PartitionSpec",
		Run: partitionsSpecByExpr})
	// Scheduled queries are Hive 4's: an older runtime has none, so none
	// exists there and none is due.
	b.lacking(0, &Adapter{Method: "get_scheduled_query", To: "",
		Why: "answered without a backend call: the runtime has no scheduled queries, so the one asked for does not exist (NoSuchObjectException)",
		Run: func(c Caller, args *wire.Value) (wire.Value, error) {
			key := arg1(args)
			msg := fmt.Sprintf("scheduled query %s (namespace %s) does not exist: the backend runtime %s has no scheduled queries (a Hive 4 feature)",
				key.Field(fid("ScheduledQueryKey", "scheduleName")).String(), key.Field(fid("ScheduledQueryKey", "clusterNamespace")).String(), c.Runtime().Name)
			return exception("get_scheduled_query", "NoSuchObjectException", msg), nil
		}})
	b.lacking(0, &Adapter{Method: "scheduled_query_poll", To: "",
		Why: "answered without a backend call: the runtime has no scheduled queries, so none is due (an empty poll answer)",
		Run: func(Caller, *wire.Value) (wire.Value, error) {
			resp := wire.Struct()
			return success(&resp), nil
		}})
}

// exception is a client result carrying a declared exception of method.
func exception(method, excType, msg string) wire.Value {
	id := fid2(thriftgen.LookupMethod(method).Result.Name, excType)
	return wire.Struct(wire.Field{ID: id, V: wire.Struct(wire.Field{ID: 1, V: wire.Str(msg)})})
}

func partitionsSpecByExpr(c Caller, args *wire.Value) (wire.Value, error) {
	const m = "get_partitions_spec_by_expr"
	req := arg1(args)
	db, tb := req.Field(fid("PartitionsByExprRequest", "dbName")), req.Field(fid("PartitionsByExprRequest", "tblName"))
	if db == nil || tb == nil {
		return wire.Value{}, refused("%s needs dbName and tblName", m)
	}
	res, err := callInto(c, m, "get_partitions_by_expr", wire.Struct(wire.Field{ID: 1, V: *req}))
	if err != nil || res.failed {
		return res.v, err
	}
	got := res.v.Field(0)
	specs := wire.List(wire.TStruct)
	if parts := got.Field(fid("PartitionsByExprResult", "partitions")); parts != nil && len(parts.Elems) > 0 {
		spec := wire.Struct(
			wire.Field{ID: fid("PartitionSpec", "dbName"), V: *db},
			wire.Field{ID: fid("PartitionSpec", "tableName"), V: *tb},
			wire.Field{ID: fid("PartitionSpec", "rootPath"), V: wire.Str("")},
			wire.Field{ID: fid("PartitionSpec", "partitionList"), V: wire.Struct(wire.Field{ID: fid("PartitionListComposingSpec", "partitions"), V: *parts})})
		if cat := req.Field(fid("PartitionsByExprRequest", "catName")); cat != nil {
			spec.Set(fid("PartitionSpec", "catName"), *cat)
		}
		specs.Elems = append(specs.Elems, spec)
	}
	unknown := wire.Bool(false)
	if u := got.Field(fid("PartitionsByExprResult", "hasUnknownPartitions")); u != nil {
		unknown = *u
	}
	out := wire.Struct(wire.Field{ID: fid("PartitionsSpecByExprResult", "partitionsSpec"), V: specs},
		wire.Field{ID: fid("PartitionsSpecByExprResult", "hasUnknownPartitions"), V: unknown})
	return success(&out), nil
}
