package router

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Policy is one catalog's write policy and exposure rules.
type Policy struct {
	access    configs.AccessMode
	whitelist map[string]bool
	exposure  *Exposure
}

func newPolicy(cc *configs.CatalogConfig) *Policy {
	p := &Policy{access: cc.AccessMode, whitelist: map[string]bool{}}
	for _, db := range cc.WriteDBWhitelist {
		p.whitelist[strings.ToLower(db)] = true
	}
	p.exposure = &Exposure{deny: cc.ExposeMode == configs.ExposeDenyByDefault, dbs: cc.ExposeDBPatterns}
	for _, tr := range cc.ExposeTablePatterns {
		p.exposure.tables = append(p.exposure.tables, tableRule{db: tr.DB, tables: tr.Tables})
	}
	return p
}

// writeRefusal explains why a write is not allowed, "" when it is.
func (p *Policy) writeRefusal(catalog, method string, dbs []string) string {
	switch p.access {
	case configs.AccessReadOnly:
		return fmt.Sprintf("catalog %s is READ_ONLY (catalog.%s.access-mode): %s is a write", catalog, catalog, method)
	case configs.AccessReadWriteDBWhitelist:
		if len(dbs) == 0 {
			return fmt.Sprintf("catalog %s allows writes only to databases in catalog.%s.write-db-whitelist, and %s names no database", catalog, catalog, method)
		}
		for _, db := range dbs {
			if !p.whitelist[strings.ToLower(db)] {
				return fmt.Sprintf("catalog %s allows writes only to databases in catalog.%s.write-db-whitelist; database %s is not listed (%s)", catalog, catalog, db, method)
			}
		}
	}
	return ""
}

// WriteRefusal explains why catalog's write policy refuses a write (what
// names it in the message) to database db, a backend name; "" when it is
// allowed. With db "" it answers for the catalog as a whole: only READ_ONLY
// refuses every write there. The Iceberg REST frontend asks it before it
// takes a lock or writes a file, and leaves the write endpoints out of
// /v1/config where the catalog refuses every write.
func (r *Router) WriteRefusal(catalog, db, what string) string {
	c := r.ns.Lookup(catalog)
	if c == nil {
		return ""
	}
	p := r.policies[c]
	if db == "" {
		if p.access != configs.AccessReadOnly {
			return ""
		}
		return p.writeRefusal(c.Name, what, nil)
	}
	return p.writeRefusal(c.Name, what, []string{db})
}

// Exposure is selective federation exposure: which backend databases and
// tables of a catalog clients may see. Patterns match backend names, whole
// string, case-insensitively (compiled that way by configs).
type Exposure struct {
	deny   bool
	dbs    []*regexp.Regexp
	tables []tableRule
}

type tableRule struct {
	db     *regexp.Regexp
	tables []*regexp.Regexp
}

func (e *Exposure) active() bool { return e != nil && (e.deny || len(e.tables) > 0) }

// DBVisible: under DENY_BY_DEFAULT a database is visible when a db rule or a
// table rule matches it; under ALLOW_ALL always.
func (e *Exposure) DBVisible(db string) bool {
	if !e.deny {
		return true
	}
	for _, re := range e.dbs {
		if re.MatchString(db) {
			return true
		}
	}
	for _, tr := range e.tables {
		if tr.db.MatchString(db) {
			return true
		}
	}
	return false
}

// TableVisible: table rules of matching databases narrow the tables; without
// any, a table is as visible as its database.
func (e *Exposure) TableVisible(db, table string) bool {
	narrowed := false
	for _, tr := range e.tables {
		if !tr.db.MatchString(db) {
			continue
		}
		narrowed = true
		for _, re := range tr.tables {
			if re.MatchString(table) {
				return true
			}
		}
	}
	if narrowed {
		return false
	}
	return e.DBVisible(db)
}

// filterNames removes the hidden tables of database db from a result body
// whose success value is a list of table names.
func (e *Exposure) filterNames(body []byte, db string) ([]byte, int, error) {
	v, err := wire.DecodeStruct(body)
	if err != nil {
		return nil, 0, err
	}
	list := v.Field(0)
	if list == nil {
		return body, 0, nil // an exception or an empty result
	}
	kept := list.Elems[:0]
	removed := 0
	for _, el := range list.Elems {
		if e.TableVisible(db, string(el.Str)) {
			kept = append(kept, el)
		} else {
			removed++
		}
	}
	list.Elems = kept
	if removed == 0 {
		return body, 0, nil
	}
	return v.Encode(), removed, nil
}

// Lock types and data operations of LockComponent that write.
const (
	lockSharedRead               = 1
	opInsert, opUpdate, opDelete = 2, 3, 4
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

// Field ids of CommitTxnRequest and CommitTxnKeyValue (checked against the
// schema by commitFieldIDs).
const (
	commitWriteEventInfos int16 = 3
	commitReplLastIDInfo  int16 = 4
	commitKeyValue        int16 = 5
	keyValueTableID       int16 = 1
)

// commitFieldIDs checks the field ids above against the schema.
func commitFieldIDs() error {
	for _, c := range []struct {
		st, name string
		id       int16
	}{{"CommitTxnRequest", "writeEventInfos", commitWriteEventInfos}, {"CommitTxnRequest", "replLastIdInfo", commitReplLastIDInfo},
		{"CommitTxnRequest", "keyValue", commitKeyValue}, {"CommitTxnKeyValue", "tableId", keyValueTableID}} {
		s := thriftgen.LookupStruct(c.st)
		if s == nil || s.FieldByName(c.name) == nil || s.FieldByName(c.name).ID != c.id {
			return fmt.Errorf("schema: field %s of %s is not id %d, which the access modes assume", c.name, c.st, c.id)
		}
	}
	return nil
}

// commitOwnWrites lists what a commit_txn writes of its own, in Hive 4's
// TxnHandler (CommitTxnFunction): writeEventInfos (the tables a replicated
// transaction wrote, recorded as its completed components; its databases
// are among the request's), replLastIdInfo (the repl.last.id parameter of
// the database it names, and of its table and partitions), keyValue (a
// parameter of the table with that id, updated on commit). tableID is
// keyValue's table, -1 without one. Empty for a commit of the transaction
// alone, and for arguments that cannot be read (the backend refuses those).
func commitOwnWrites(body []byte) (fields []string, tableID int64) {
	tableID = -1
	v, err := wire.DecodeStruct(body)
	if err != nil {
		return nil, tableID
	}
	req := v.Field(1)
	if req == nil || req.Type != wire.TStruct {
		return nil, tableID
	}
	if l := req.Field(commitWriteEventInfos); l != nil && len(l.Elems) > 0 {
		fields = append(fields, "writeEventInfos")
	}
	if req.Field(commitReplLastIDInfo) != nil {
		fields = append(fields, "replLastIdInfo")
	}
	if kv := req.Field(commitKeyValue); kv != nil {
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
func txnLifecycleOnly(spec *Spec, body []byte) bool {
	if !txnLifecycle[spec.Name] {
		return false
	}
	if spec.Name == "commit_txn" {
		fields, _ := commitOwnWrites(body)
		return len(fields) == 0
	}
	return true
}

// callRefusal is writeRefusal for one call with its arguments: a commit_txn
// is named with the writes it carries, and under a whitelist one that
// updates a table parameter by table id (keyValue) is refused, since which
// database that table is in cannot be read from the request.
func (p *Policy) callRefusal(catalog, method string, dbs []string, body []byte) string {
	if method == "commit_txn" && p.access != configs.AccessReadWrite {
		fields, id := commitOwnWrites(body)
		if len(fields) > 0 {
			method += " carrying " + strings.Join(fields, " and ")
		}
		if id >= 0 && p.access == configs.AccessReadWriteDBWhitelist {
			return fmt.Sprintf("catalog %s allows writes only to databases in catalog.%s.write-db-whitelist; %s updates a parameter of the table with id %d, whose database the request does not name",
				catalog, catalog, method, id)
		}
	}
	return p.writeRefusal(catalog, method, dbs)
}

// writesData decides, for calls whose write-ness depends on the payload,
// whether this one writes. A lock request writes when any component takes
// more than a shared read or belongs to an INSERT/UPDATE/DELETE; a SELECT's
// SHARED_READ lock on a READ_ONLY catalog must pass.
func writesData(spec *Spec, body []byte) bool {
	if spec.Name != "lock" {
		return true
	}
	v, err := wire.DecodeStruct(body)
	if err != nil {
		return true // unreadable: treat as a write, the strict choice
	}
	req := v.Field(1)
	if req == nil {
		return true
	}
	comps := req.Field(1)
	if comps == nil {
		return true
	}
	for i := range comps.Elems {
		c := &comps.Elems[i]
		if t := c.Field(1); t == nil || t.Int != lockSharedRead {
			return true
		}
		if op := c.Field(6); op != nil && (op.Int == opInsert || op.Int == opUpdate || op.Int == opDelete) {
			return true
		}
	}
	return false
}
