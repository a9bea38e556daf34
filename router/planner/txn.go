package planner

import (
	"fmt"

	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Transactions and the access modes. A transaction changes a catalog only
// through calls the access modes judge on their own: a lock with write
// components, allocate_table_write_ids, add_dynamic_partitions, the write
// notification log, the metadata and statistics writes. Its own lifecycle
// records nothing but the metastore's transaction bookkeeping (TXNS,
// HIVE_LOCKS of the transaction, the reader's MIN_HISTORY rows), so the
// access modes let it pass: HiveServer2 with DbTxnManager opens and commits
// a transaction around every SELECT, and aborts the one a refused write
// leaves open. The RPC classes (write, txn) stay as they are: they are the
// rate limits' dimension, not this decision.
//
// get_latest_txnid_in_conflict only reads TXN_COMPONENTS and WRITE_SET;
// add_write_ids_to_min_history records a reader's snapshot. seed_txn_id,
// update_transaction_statistics (table parameters) and the compactor's calls
// are writes.
var txnLifecycle = map[string]bool{"open_txns": true, "commit_txn": true, "abort_txn": true, "abort_txns": true,
	"heartbeat_txn_range": true, "get_latest_txnid_in_conflict": true, "add_write_ids_to_min_history": true}

// TxnLifecycle reports whether method is one of a transaction's own
// lifecycle calls (a commit_txn only when it carries nothing else:
// TxnLifecycleOnly).
func TxnLifecycle(method string) bool { return txnLifecycle[method] }

// Field ids of CommitTxnRequest and CommitTxnKeyValue (checked against the
// schema by CommitFieldIDs).
const (
	CommitWriteEventInfos int16 = 3
	CommitReplLastIDInfo  int16 = 4
	CommitKeyValue        int16 = 5
	keyValueTableID       int16 = 1
)

// CommitFieldIDs checks the field ids above against the schema.
func CommitFieldIDs() error {
	for _, c := range []struct {
		st, name string
		id       int16
	}{{"CommitTxnRequest", "writeEventInfos", CommitWriteEventInfos}, {"CommitTxnRequest", "replLastIdInfo", CommitReplLastIDInfo},
		{"CommitTxnRequest", "keyValue", CommitKeyValue}, {"CommitTxnKeyValue", "tableId", keyValueTableID}} {
		s := thriftgen.LookupStruct(c.st)
		if s == nil || s.FieldByName(c.name) == nil || s.FieldByName(c.name).ID != c.id {
			return fmt.Errorf("schema: field %s of %s is not id %d, which the access modes assume", c.name, c.st, c.id)
		}
	}
	return nil
}

// CommitOwnWrites lists what a commit_txn writes of its own, in Hive 4's
// TxnHandler (CommitTxnFunction): writeEventInfos (the tables a replicated
// transaction wrote, recorded as its completed components; its databases
// are among the request's), replLastIdInfo (the repl.last.id parameter of
// the database it names, and of its table and partitions), keyValue (a
// parameter of the table with that id, updated on commit). tableID is
// keyValue's table, -1 without one. Empty for a commit of the transaction
// alone, and for arguments that cannot be read (the backend refuses those).
func CommitOwnWrites(body []byte) (fields []string, tableID int64) {
	tableID = -1
	v, err := wire.DecodeStruct(body)
	if err != nil {
		return nil, tableID
	}
	req := v.Field(1)
	if req == nil || req.Type != wire.TStruct {
		return nil, tableID
	}
	if l := req.Field(CommitWriteEventInfos); l != nil && len(l.Elems) > 0 {
		fields = append(fields, "writeEventInfos")
	}
	if req.Field(CommitReplLastIDInfo) != nil {
		fields = append(fields, "replLastIdInfo")
	}
	if kv := req.Field(CommitKeyValue); kv != nil {
		fields = append(fields, "keyValue")
		if id := kv.Field(keyValueTableID); id != nil {
			tableID = id.Int
		}
	}
	return fields, tableID
}

// txnLifecycleOnly reports whether a call is a transaction's own lifecycle
// (txnLifecycle), which the access modes let pass: a commit_txn only when it
// carries no writes of its own.
func txnLifecycleOnly(spec *methods.Spec, body []byte) bool {
	if !txnLifecycle[spec.Name] {
		return false
	}
	if spec.Name == "commit_txn" {
		fields, _ := CommitOwnWrites(body)
		return len(fields) == 0
	}
	return true
}
