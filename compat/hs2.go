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
	// get_partitions_spec_by_expr is left unsupported on purpose. It carries
	// the partition filter as a Kryo-serialized Hive 4 expression, which a
	// Hive 3.1.3 metastore cannot read even with hive-exec on its class path
	// (measured: "NoSuchFieldException: parentOffset"), so its
	// get_partitions_by_expr could not serve it. UNKNOWN_METHOD is what
	// HiveServer2 4.x handles: a SELECT falls back to pruning the partition
	// names itself (PartitionPruner), and ALTER TABLE … DROP PARTITION fails
	// before it changes anything, naming the method and the catalog.
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
