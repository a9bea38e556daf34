package compat

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// A field a backend runtime lacks is safe to leave out of what the backend
// receives when its value is the one that runtime's behaviour already
// implies: leaving it out changes nothing the backend does. Two sources say
// which values those are:
//   - the IDL default of the field (in the profile that has it), from the
//     schema: Hive introduced these fields with the old behaviour as their
//     default (OpenTxnRequest.txn_type = DEFAULT, AllocateTableWriteIdsRequest
//     .reallocate = false, Table.writeId = -1, ColumnStatistics.engine = "hive");
//   - the short table below: values Hive documents as "not set" or that ask
//     for exactly what the older runtime always does, for fields whose IDL
//     gives no default (or a default that is not the old behaviour).
// Everything else a runtime lacks is refused, naming field and value.

// unsetValue is one documented value of a field that an older runtime's
// behaviour already implies.
type unsetValue struct {
	Struct, Field string // Struct "*": the field of that name in any struct
	Value         string // the value as renderValue prints it; "*" = any value
	Why           string
	// match, when set, decides instead of Value (struct values).
	match func(v *wire.Value) bool
}

// documentedUnset: each entry says why the older runtimes (those without
// the field) behave exactly as the value asks.
var documentedUnset = []unsetValue{
	// HIVE-27019: false keeps each partition's column list, the only way
	// 3.1.3 and HDP store partitions.
	{"AddPartitionsRequest", "skipColumnSchemaForPartition", "false", "older runtimes always store each partition's columns", nil},
	{"AlterPartitionsRequest", "skipColumnSchemaForPartition", "false", "older runtimes always store each partition's columns", nil},
	// Hive 4's commit skips the write-set conflict check when true (an
	// EXCL_WRITE lock serialised the writers) and runs it when false; older
	// runtimes always run it, and EXCL_WRITE reaches them as EXCLUSIVE, which
	// serialises writers too. So either value gets the older behaviour; false
	// is what HiveServer2 4.x sends by default (hive.txn.xlock.write=false),
	// true is the IDL default.
	{"CommitTxnRequest", "exclWriteEnabled", "false", "older runtimes always check write-set conflicts at commit, which is what false asks", nil},
	// Declarations about the client for Hive 4's metadata translation
	// (HIVE-21663): a runtime without translation serves every client the
	// objects as stored, so they change nothing there, whatever they say.
	{"*", "processorCapabilities", "*", "a runtime without metadata translation serves objects as stored", nil},
	{"*", "processorIdentifier", "*", "a runtime without metadata translation serves objects as stored", nil},
	// Catalog names of *_req wrappers: the router has already resolved the
	// catalog and rewritten the name to the backend's; the positional call
	// reaches that backend catalog (its metastore.catalog.default).
	{"*", "catName", "*", "the router resolved the catalog", nil},
	{"*", "catalogName", "*", "the router resolved the catalog", nil},
	{"*", "cat_name", "*", "the router resolved the catalog", nil},
	// Hive 4's drop_table_req drops the partitions first when true; older
	// runtimes always drop a table's partitions with it.
	{"DropTableRequest", "dropPartitions", "true", "older runtimes always drop a table's partitions with it", nil},
	// rename_partition_req outside a transaction (txnId 0) moving the data
	// (clonePart false) is exactly the older rename_partition.
	{"RenamePartitionRequest", "txnId", "0", "no transaction: the older rename_partition", nil},
	{"RenamePartitionRequest", "clonePart", "false", "older runtimes move the partition's data on rename", nil},
	// Write ids start at 1: 0 is "no write". HiveServer2 4.x sends it with
	// the column statistics of a table that has no write ids (not
	// transactional), which a Hive 4 metastore reads only for transactional
	// tables (ObjectStore.updateTableColumnStatistics); and on the Table of a
	// new transactional table, which no write has touched yet.
	{"SetPartitionsStatsRequest", "writeId", "0", "0 is no write id: the statistics are not tied to a transactional snapshot, which older runtimes never do", nil},
	{"Table", "writeId", "0", "0 is no write id: no transactional statistics to tie to a write", nil},
	{"Partition", "writeId", "0", "0 is no write id: no transactional statistics to tie to a write", nil},
	// Hive 4's database kinds: NATIVE is the metastore's own database, the
	// only kind older runtimes have (REMOTE, a connector's, is refused).
	{"CreateDatabaseRequest", "type", "NATIVE(1)", "older runtimes have native databases only", nil},
	{"Database", "type", "NATIVE(1)", "older runtimes have native databases only", nil},
	// Hive 4's DatabaseBuilder always sets createTime (0 when not given); a
	// Hive 4.1 metastore replaces whatever the client sent with its own
	// clock (HMSHandler.create_database_core), as older runtimes do.
	{"CreateDatabaseRequest", "createTime", "*", "the metastore sets a database's creation time itself, whatever the client sends", nil},
	{"Database", "createTime", "*", "the metastore sets a database's creation time itself, whatever the client sends", nil},
	// Why HiveServer2 4.x rolls a transaction back: a Hive 4 metastore
	// writes the code into TXNS.TXN_META_INFO for diagnostics; the abort
	// itself is the same, and an older runtime aborts without a reason. An
	// abort must always get through: it is how a client undoes a statement.
	{"AbortTxnRequest", "errorCode", "*", "a diagnostic code; the older runtime aborts the same transaction without recording a reason", nil},
	{"AbortTxnsRequest", "errorCode", "*", "a diagnostic code; the older runtime aborts the same transactions without recording a reason", nil},
	{"AbortTxnRequest", "txn_type", "DEFAULT(0)", "an ordinary transaction, the only kind an older runtime opens for a client", nil},
	// Hive 4's client wraps every truncate in an environment context saying
	// whether to keep the files; keeping none is what truncate_table does.
	{"TruncateTableRequest", "environmentContext", `{truncateSkipDataDeletion: "false"}`,
		"older runtimes always delete the truncated data", onlyProperties(map[string]string{"truncateSkipDataDeletion": "false"})},
}

// refusalHints tell an operator how a known client avoids a refused value.
var refusalHints = map[string]string{
	"LockRequest.zeroWaitReadEnabled": "HiveServer2 4.x sends true unless hive.txn.xlock.write=true and hive.txn.xlock.iow=true (its default); set them on HiveServer2 for this catalog",
}

// onlyProperties matches an EnvironmentContext whose properties are exactly
// want (or a subset of them).
func onlyProperties(want map[string]string) func(v *wire.Value) bool {
	return func(v *wire.Value) bool {
		props := v.Field(1)
		if props == nil {
			return true
		}
		for i := 0; i+1 < len(props.Elems); i += 2 {
			if w, ok := want[string(props.Elems[i].Str)]; !ok || w != string(props.Elems[i+1].Str) {
				return false
			}
		}
		return true
	}
}

// impliedBy says whether v is a value of field f (of struct st) that a
// runtime without the field already implies, and how (for messages).
func impliedBy(st *thriftgen.Struct, f *thriftgen.Field, v *wire.Value) (bool, string) {
	got := renderValue(f.Type, v)
	if d := f.Default; d != nil && got == renderDefault(f.Type, d) {
		return true, "the IDL default"
	}
	for _, u := range documentedUnset {
		if (u.Struct == st.Name || u.Struct == "*") && u.Field == f.Name {
			if u.match != nil && u.match(v) || u.match == nil && (u.Value == "*" || u.Value == got) {
				return true, u.Why
			}
		}
	}
	return false, ""
}

// impliedValues describes the values impliedBy accepts for f, for messages.
func impliedValues(st *thriftgen.Struct, f *thriftgen.Field) string {
	var vals []string
	if d := f.Default; d != nil {
		vals = append(vals, renderDefault(f.Type, d)+" (its IDL default)")
	}
	for _, u := range documentedUnset {
		if (u.Struct == st.Name || u.Struct == "*") && u.Field == f.Name {
			vals = append(vals, u.Value+" ("+u.Why+")")
		}
	}
	out := "it may only hold " + strings.Join(vals, " or ")
	if len(vals) == 0 {
		out = "no value of it is implied by the older runtime, so it can only be left unset"
	}
	if h := refusalHints[st.Name+"."+f.Name]; h != "" {
		out += " (" + h + ")"
	}
	return out
}

// renderValue prints a field value for matching and messages: bools as
// true/false, integers in decimal, strings quoted, enum values as NAME(n),
// containers and structs by size.
func renderValue(t *thriftgen.Type, v *wire.Value) string {
	switch t.Kind {
	case thriftgen.KindBool:
		return strconv.FormatBool(v.Int != 0)
	case thriftgen.KindByte, thriftgen.KindI16, thriftgen.KindI32, thriftgen.KindI64:
		return strconv.FormatInt(v.Int, 10)
	case thriftgen.KindDouble:
		return strconv.FormatFloat(v.Dbl, 'g', -1, 64)
	case thriftgen.KindString:
		return strconv.Quote(string(v.Str))
	case thriftgen.KindBinary:
		return fmt.Sprintf("%d bytes", len(v.Str))
	case thriftgen.KindEnum:
		if e := thriftgen.LookupEnum(t.Name); e != nil {
			if ev := e.ValueByNumber(int32(v.Int)); ev != nil {
				return fmt.Sprintf("%s(%d)", ev.Name, v.Int)
			}
		}
		return strconv.FormatInt(v.Int, 10)
	case thriftgen.KindList, thriftgen.KindSet:
		return fmt.Sprintf("a %s of %d", t.Kind, len(v.Elems))
	case thriftgen.KindMap:
		return fmt.Sprintf("a map of %d", len(v.Elems)/2)
	}
	return "a " + t.Name
}

func renderDefault(t *thriftgen.Type, d *thriftgen.Default) string {
	v := wire.Value{Int: d.Int, Str: []byte(d.Str)}
	return renderValue(t, &v)
}
