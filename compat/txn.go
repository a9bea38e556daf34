package compat

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Transaction and statistics calls of Hive 4 clients (HiveServer2 4.x's
// DbTxnManager, Hive.java, Iceberg's Hive catalog) on runtimes before Hive 4.

func (b *builder) txn() {
	// HiveMetaStoreClient 4.x asks for open transactions excluding READ_ONLY
	// ones (getValidTxns, getOpenTxns).
	b.lacking(0, &Adapter{Method: "get_open_txns_req", To: "get_open_txns",
		Why: "Hive 4 wrapper; get_open_txns lists the same transactions when the excluded types are ones the older runtime never records",
		Run: openTxnsReq})
	// GetValidWriteIdsRequest.validTxnList is required by 3.1.3, which
	// Hive 4's getValidWriteIds(table) leaves out; and Hive 4 writes the
	// transaction list with ranges (5-9) that the older parser cannot read.
	b.always(oldTxnListFormat, &Adapter{Method: "get_valid_write_ids", To: "get_valid_write_ids",
		Why: "validTxnList is required by 3.1.3 and read without ranges before Hive 4: filled in from get_open_txns, or rewritten",
		Run: validWriteIDs})
	// Recorded by HiveServer2 4.x for every read of a transactional table.
	// A Hive 4 metastore only keeps it with metastore.txn.use.minhistorywriteid
	// (default false) and only its cleaner reads it; an older runtime's
	// cleaner always waits for the oldest open transaction instead.
	b.lacking(0, &Adapter{Method: "add_write_ids_to_min_history", To: "",
		Why: "accepted without a backend call: what a default Hive 4 metastore does, and the older runtime's cleaner never reads it",
		Run: func(Caller, *wire.Value) (wire.Value, error) { return wire.Struct(), nil }})
}

// txnTypesNeverRecorded are the TxnType values a runtime without TxnType
// never holds: it records every transaction as an ordinary one, except
// those opened for replication (REPL_CREATED). Through hms-proxy a Hive 4
// client cannot open a typed transaction there either: the guard refuses
// OpenTxnRequest.txn_type other than DEFAULT.
func txnTypeNeverRecorded(v int64) (string, bool) {
	e := thriftgen.LookupEnum("TxnType")
	ev := e.ValueByNumber(int32(v))
	if ev == nil {
		return strconv.FormatInt(v, 10), false
	}
	return ev.Name, ev.Name != "DEFAULT" && ev.Name != "REPL_CREATED"
}

func openTxnsReq(c Caller, args *wire.Value) (wire.Value, error) {
	r := newRequest("get_open_txns_req", args)
	ex := fid("GetOpenTxnsRequest", "excludeTxnTypes")
	if l := r.Field(ex); l != nil {
		for _, x := range l.Elems {
			if name, ok := txnTypeNeverRecorded(x.Int); !ok {
				return wire.Value{}, refused("get_open_txns_req excluding %s transactions needs a Hive 4 backend: the older runtime lists them with the others and cannot tell them apart", name)
			}
		}
	}
	r.carry(ex)
	if err := r.leftover(c); err != nil {
		return wire.Value{}, err
	}
	res, err := callInto(c, "get_open_txns_req", "get_open_txns", wire.Struct())
	return res.v, err
}

// maxExpandedTxns bounds the rewrite of a Hive 4 transaction list: a range
// is expanded into the single ids an older runtime reads.
const maxExpandedTxns = 1 << 20

func validWriteIDs(c Caller, args *wire.Value) (wire.Value, error) {
	const m = "get_valid_write_ids"
	req := arg1(args)
	listID, writeID := fid("GetValidWriteIdsRequest", "validTxnList"), fid("GetValidWriteIdsRequest", "writeId")
	out := *args
	nreq := *req
	nreq.Fields = append([]wire.Field(nil), req.Fields...)
	if l := req.Field(listID); l != nil && len(l.Str) > 0 {
		list, err := oldTxnList(string(l.Str))
		if err != nil {
			return wire.Value{}, refused("get_valid_write_ids: validTxnList %q: %v", l.Str, err)
		}
		nreq.Set(listID, wire.Str(list))
	} else {
		if req.Field(writeID) != nil {
			// The metastore computes the snapshot as of that write id: only a
			// runtime that has the field can.
			if !thriftgen.LookupStruct("GetValidWriteIdsRequest").FieldByID(writeID).Profiles.Has(c.Runtime().Bit) {
				return wire.Value{}, refused("get_valid_write_ids with a writeId and no validTxnList needs a Hive 4 or Hortonworks backend: %s cannot compute the snapshot as of a write id", c.Runtime().Name)
			}
			res, err := callInto(c, m, m, *args)
			return res.v, err
		}
		open, err := callInto(c, m, "get_open_txns", wire.Struct())
		if err != nil || open.failed {
			return open.v, err
		}
		list, err := snapshotOf(open.v.Field(0))
		if err != nil {
			return wire.Value{}, refused("get_valid_write_ids: cannot build validTxnList from the backend's open transactions: %v", err)
		}
		nreq.Set(listID, wire.Str(list))
	}
	out.Fields = []wire.Field{{ID: 1, V: nreq}}
	res, err := callInto(c, m, m, out)
	return res.v, err
}

// snapshotOf writes the transaction list Hive's metastore builds for a
// reader outside a transaction (TxnCommonUtils.createValidReadTxnList with
// currentTxn 0) in the pre-Hive-4 format: hwm:minOpen:open,...:aborted,...
func snapshotOf(resp *wire.Value) (string, error) {
	if resp == nil {
		return "", fmt.Errorf("no answer")
	}
	hwm := resp.Field(fid("GetOpenTxnsResponse", "txn_high_water_mark"))
	if hwm == nil {
		return "", fmt.Errorf("no txn_high_water_mark")
	}
	var ids []int64
	if l := resp.Field(fid("GetOpenTxnsResponse", "open_txns")); l != nil {
		for _, x := range l.Elems {
			ids = append(ids, x.Int)
		}
	}
	var bits []byte
	if b := resp.Field(fid("GetOpenTxnsResponse", "abortedBits")); b != nil {
		bits = b.Str
	}
	aborted := func(i int) bool { return i/8 < len(bits) && bits[i/8]>>(uint(i)%8)&1 == 1 } // java.util.BitSet.valueOf
	minOpen := int64(1<<63 - 1)
	var open, abort []string
	for i, id := range ids {
		if aborted(i) {
			abort = append(abort, strconv.FormatInt(id, 10))
			continue
		}
		if minOpen == 1<<63-1 {
			minOpen = id
		}
		open = append(open, strconv.FormatInt(id, 10))
	}
	return fmt.Sprintf("%d:%d:%s:%s", hwm.Int, minOpen, strings.Join(open, ","), strings.Join(abort, ",")), nil
}

// oldTxnList rewrites a transaction list written by Hive 4 (whose open and
// aborted parts may hold ranges "5-9") into the form older runtimes parse
// (single ids); a list without ranges comes back unchanged.
func oldTxnList(s string) (string, error) {
	if !strings.Contains(s, "-") {
		return s, nil
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 {
		return "", fmt.Errorf("not a transaction list (hwm:minOpen:open:aborted)")
	}
	n := 0
	for i := 2; i < len(parts) && i < 4; i++ {
		if parts[i] == "" {
			continue
		}
		var ids []string
		for _, item := range strings.Split(parts[i], ",") {
			lo, hi, isRange := strings.Cut(item, "-")
			if !isRange || lo == "" { // a single (or negative) id
				ids = append(ids, item)
				n++
				continue
			}
			a, err1 := strconv.ParseInt(lo, 10, 64)
			z, err2 := strconv.ParseInt(hi, 10, 64)
			if err1 != nil || err2 != nil || z < a {
				return "", fmt.Errorf("bad range %q", item)
			}
			if n += int(z-a) + 1; z-a >= maxExpandedTxns || n > maxExpandedTxns {
				return "", fmt.Errorf("more than %d open or aborted transactions", maxExpandedTxns)
			}
			for id := a; id <= z; id++ {
				ids = append(ids, strconv.FormatInt(id, 10))
			}
		}
		parts[i] = strings.Join(ids, ",")
	}
	return strings.Join(parts, ":"), nil
}

// ---- column statistics -----------------------------------------------------

func (b *builder) statistics() {
	// HiveMetaStoreClient 4.x updates statistics with one ColumnStatistics
	// per request, engine "hive" and needMerge false: the positional
	// update_*_column_statistics of older runtimes replace them the same way
	// and answer the same boolean.
	for _, m := range []struct{ method, to string }{
		{"update_table_column_statistics_req", "update_table_column_statistics"},
		{"update_partition_column_statistics_req", "update_partition_column_statistics"},
	} {
		method, to := m.method, m.to
		b.lacking(0, &Adapter{Method: method, To: to,
			Why: "Hive 4/HDP wrapper; the older runtime has " + to + "(ColumnStatistics), once per statistics object",
			Run: func(c Caller, args *wire.Value) (wire.Value, error) { return updateStats(c, args, method, to) }})
	}
	b.lacking(0, &Adapter{Method: "delete_column_statistics_req", To: "delete_table_column_statistics",
		Why: "Hive 4 only; 3.1.3 deletes statistics per column (and per partition)", Run: deleteColumnStatisticsReq})
	b.always(mergeFails, &Adapter{Method: "set_aggr_stats_for", To: "set_aggr_stats_for",
		Why: "3.1.3 cannot merge statistics (its merger fails): statistics that would need a merge are deleted instead, as Hive leaves out what it cannot merge; a transactional table's statistics are stored untrusted, as Hive 4.1 without transactional statistics stores them",
		Run: mergeStatsOn313})
}

// mergeFails are the runtimes whose set_aggr_stats_for fails merging
// (observed with Hive 3.1.3; see mergeStatsOn313).
var mergeFails = runtimesWhere(func(r *Runtime) bool { return r.Name == "APACHE_3_1_3" })

func updateStats(c Caller, args *wire.Value, method, to string) (wire.Value, error) {
	r := newRequest(method, args)
	if isTrue(r.Field(fid("SetPartitionsStatsRequest", "needMerge"))) {
		return wire.Value{}, refused("%s with needMerge=true needs a Hive 4 or Hortonworks backend: %s replaces statistics, it does not merge them", method, to)
	}
	if positive(r.Field(fid("SetPartitionsStatsRequest", "writeId"))) {
		return wire.Value{}, refused("statistics update with a writeId (transactional table) needs a Hive 4 backend")
	}
	stats := r.Field(fid("SetPartitionsStatsRequest", "colStats"))
	r.carry(fid("SetPartitionsStatsRequest", "colStats"), fid("SetPartitionsStatsRequest", "needMerge"))
	if err := r.leftover(c); err != nil {
		return wire.Value{}, err
	}
	ok := true
	if stats != nil {
		for _, cs := range stats.Elems {
			res, err := callInto(c, method, to, wire.Struct(wire.Field{ID: 1, V: cs}))
			if err != nil || res.failed {
				return res.v, err
			}
			ok = ok && isTrue(res.v.Field(0))
		}
	}
	resp := wire.Struct(wire.Field{ID: fid("SetPartitionsStatsResponse", "result"), V: wire.Bool(ok)})
	return success(&resp), nil
}

// ---- merging statistics on 3.1.3 --------------------------------------------

// Hive 3.1.3's set_aggr_stats_for with needMerge=true fails whenever the
// table or partition already has statistics for a column: its merger casts
// the statistics it just read from the request to the cached-object class
// (LongColumnStatsMerger → LongColumnStatsDataInspector) and the metastore
// thread dies with a ClassCastException, after the INSERT that sent them
// has written its data. HiveServer2 asks for a merge on every INSERT INTO a
// table with column statistics. The adapter does what Hive's own merge does
// with statistics it cannot merge (MetaStoreServerUtils.getMergableCols
// leaves out every column whose stored statistics are not accurate): the
// stored statistics of those columns are deleted, so nothing claims to
// describe data it does not, and the new ones are not written; columns
// without stored statistics get the new ones, which a merge with nothing
// leaves as they are.
func mergeStatsOn313(c Caller, args *wire.Value) (wire.Value, error) {
	const m = "set_aggr_stats_for"
	req := arg1(args)
	needMerge, colStats := fid("SetPartitionsStatsRequest", "needMerge"), fid("SetPartitionsStatsRequest", "colStats")
	writeID, list := fid("SetPartitionsStatsRequest", "writeId"), fid("SetPartitionsStatsRequest", "validWriteIdList")
	// A transactional table's statistics, tied to a snapshot: stored as a
	// Hive 4.1 metastore without transactional statistics stores them (see
	// txnStats): the write id and list ignored, the statistics not trusted.
	txnTied := positive(req.Field(writeID)) || isSet(req.Field(list))
	var keep []wire.Value
	if l := req.Field(colStats); l != nil {
		for _, cs := range l.Elems {
			if !isTrue(req.Field(needMerge)) {
				keep = append(keep, cs)
				continue
			}
			fresh, v, stop, err := unmergedColumns(c, cs)
			if stop || err != nil {
				return v, err
			}
			if fresh != nil {
				keep = append(keep, *fresh)
			}
		}
	}
	out := wire.Value{Type: wire.TStruct}
	for _, f := range req.Fields {
		if f.ID != needMerge && f.ID != colStats && !(txnTied && (f.ID == writeID || f.ID == list)) {
			out.Fields = append(out.Fields, f)
		}
	}
	ok := true // nothing left to write: every column's stored statistics were dropped, as asked
	if len(keep) > 0 {
		l := wire.List(wire.TStruct)
		l.Elems = keep
		out.Set(colStats, l)
		res, err := callInto(c, m, m, wire.Struct(wire.Field{ID: 1, V: out}))
		if err != nil || res.failed {
			return res.v, err
		}
		ok = isTrue(res.v.Field(0))
	}
	if txnTied {
		for _, cs := range keep {
			if v, stop, err := untrustStored(c, cs); stop || err != nil {
				return v, err
			}
		}
	}
	return success(ptr(wire.Bool(ok))), nil
}

// untrustStored removes COLUMN_STATS_ACCURATE (and the statistics' write id)
// from the table or partition a ColumnStatistics describes, as a Hive 4.1
// metastore without transactional statistics does when it stores a
// transactional table's column statistics
// (ObjectStore.updateTableColumnStatistics: setBasicStatsState "false").
func untrustStored(c Caller, cs wire.Value) (wire.Value, bool, error) {
	const m = "set_aggr_stats_for"
	desc := cs.Field(fid("ColumnStatistics", "statsDesc"))
	db, tbl := *desc.Field(fid("ColumnStatisticsDesc", "dbName")), *desc.Field(fid("ColumnStatisticsDesc", "tableName"))
	env := wire.Struct(wire.Field{ID: fid("EnvironmentContext", "properties"),
		V: wire.Value{Type: wire.TMap, KeyType: wire.TString, ElemType: wire.TString, Elems: []wire.Value{wire.Str("DO_NOT_UPDATE_STATS"), wire.Str("true")}}})
	if isTrue(desc.Field(fid("ColumnStatisticsDesc", "isTblLevel"))) {
		r, err := getTable(c, m, db, tbl)
		if err != nil || r.failed {
			return r.v, true, err
		}
		t := *r.v.Field(0)
		untrustStats(&t, fid("Table", "parameters"), fid("Table", "writeId"))
		r, err = callInto(c, m, "alter_table_with_environment_context", wire.Struct(wire.Field{ID: 1, V: db}, wire.Field{ID: 2, V: tbl},
			wire.Field{ID: 3, V: t}, wire.Field{ID: 4, V: env}))
		return r.v, err != nil || r.failed, err
	}
	part := desc.Field(fid("ColumnStatisticsDesc", "partName"))
	if part == nil {
		return wire.Value{}, true, refused("%s: partition statistics without a partName", m)
	}
	r, err := callInto(c, m, "get_partitions_by_names", wire.Struct(wire.Field{ID: 1, V: db}, wire.Field{ID: 2, V: tbl},
		wire.Field{ID: 3, V: wire.List(wire.TString, *part)}))
	if err != nil || r.failed {
		return r.v, true, err
	}
	parts := *r.v.Field(0)
	for i := range parts.Elems {
		untrustStats(&parts.Elems[i], fid("Partition", "parameters"), fid("Partition", "writeId"))
	}
	r, err = callInto(c, m, "alter_partitions_with_environment_context", wire.Struct(wire.Field{ID: 1, V: db}, wire.Field{ID: 2, V: tbl},
		wire.Field{ID: 3, V: parts}, wire.Field{ID: 4, V: env}))
	return r.v, err != nil || r.failed, err
}

// unmergedColumns splits one ColumnStatistics: the columns that already
// have stored statistics lose them (deleted on the backend), the others
// are returned to be written (nil: none). stop reports a backend answer to
// hand to the client (v).
func unmergedColumns(c Caller, cs wire.Value) (fresh *wire.Value, v wire.Value, stop bool, err error) {
	const m = "set_aggr_stats_for"
	desc := cs.Field(fid("ColumnStatistics", "statsDesc"))
	objs := cs.Field(fid("ColumnStatistics", "statsObj"))
	if desc == nil || objs == nil {
		return nil, wire.Value{}, false, refused("%s: a ColumnStatistics without statsDesc or statsObj", m)
	}
	db, tbl := *desc.Field(fid("ColumnStatisticsDesc", "dbName")), *desc.Field(fid("ColumnStatisticsDesc", "tableName"))
	part := desc.Field(fid("ColumnStatisticsDesc", "partName"))
	tblLevel := isTrue(desc.Field(fid("ColumnStatisticsDesc", "isTblLevel")))
	names := wire.List(wire.TString)
	for _, o := range objs.Elems {
		names.Elems = append(names.Elems, *o.Field(fid("ColumnStatisticsObj", "colName")))
	}
	stored := map[string]bool{}
	if tblLevel {
		r, err := callInto(c, m, "get_table_statistics_req", wire.Struct(wire.Field{ID: 1, V: wire.Struct(
			wire.Field{ID: fid("TableStatsRequest", "dbName"), V: db}, wire.Field{ID: fid("TableStatsRequest", "tblName"), V: tbl},
			wire.Field{ID: fid("TableStatsRequest", "colNames"), V: names})}))
		if err != nil || r.failed {
			return nil, r.v, true, err
		}
		if l := r.v.Field(0).Field(fid("TableStatsResult", "tableStats")); l != nil {
			for _, o := range l.Elems {
				stored[strings.ToLower(o.Field(fid("ColumnStatisticsObj", "colName")).String())] = true
			}
		}
	} else {
		if part == nil {
			return nil, wire.Value{}, false, refused("%s: partition statistics without a partName", m)
		}
		r, err := callInto(c, m, "get_partitions_statistics_req", wire.Struct(wire.Field{ID: 1, V: wire.Struct(
			wire.Field{ID: fid("PartitionsStatsRequest", "dbName"), V: db}, wire.Field{ID: fid("PartitionsStatsRequest", "tblName"), V: tbl},
			wire.Field{ID: fid("PartitionsStatsRequest", "colNames"), V: names},
			wire.Field{ID: fid("PartitionsStatsRequest", "partNames"), V: wire.List(wire.TString, *part)})}))
		if err != nil || r.failed {
			return nil, r.v, true, err
		}
		if mp := r.v.Field(0).Field(fid("PartitionsStatsResult", "partStats")); mp != nil {
			for i := 0; i+1 < len(mp.Elems); i += 2 {
				for _, o := range mp.Elems[i+1].Elems {
					stored[strings.ToLower(o.Field(fid("ColumnStatisticsObj", "colName")).String())] = true
				}
			}
		}
	}
	kept := wire.List(wire.TStruct)
	for _, o := range objs.Elems {
		col := *o.Field(fid("ColumnStatisticsObj", "colName"))
		if !stored[strings.ToLower(col.String())] {
			kept.Elems = append(kept.Elems, o)
			continue
		}
		method, a := "delete_table_column_statistics", wire.Struct(wire.Field{ID: 1, V: db}, wire.Field{ID: 2, V: tbl}, wire.Field{ID: 3, V: col})
		if !tblLevel {
			method, a = "delete_partition_column_statistics", wire.Struct(wire.Field{ID: 1, V: db}, wire.Field{ID: 2, V: tbl}, wire.Field{ID: 3, V: *part}, wire.Field{ID: 4, V: col})
		}
		r, err := callInto(c, m, method, a)
		if err != nil || r.failed {
			return nil, r.v, true, err
		}
	}
	if len(kept.Elems) == 0 {
		return nil, wire.Value{}, false, nil
	}
	out := wire.Value{Type: wire.TStruct, Fields: append([]wire.Field(nil), cs.Fields...)}
	out.Set(fid("ColumnStatistics", "statsObj"), kept)
	return &out, wire.Value{}, false, nil
}
