package planner

import (
	"sort"

	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/wire"
)

// ACID policy of the planner (issue 11). Transactions and their write ids are
// the default catalog's: its metastore's TxnHandler issues every transaction id
// a client holds (open_txns carries no namespace and goes there). Another
// catalog's metastore never saw those transactions, so an ACID table there
// could not be written consistently: the planner refuses what would create one
// and the write-id calls that only ACID tables have. Namespace-bound ACID calls
// that are not about write ids (compact, fire_listener_event, the notification
// log) route by their payload like any object call.

// writeIDMethods carry a transaction's write ids for one table: meaningful only
// for an ACID table, which exists only in the default catalog.
var writeIDMethods = map[string]bool{
	"allocate_table_write_ids":         true,
	"get_valid_write_ids":              true,
	"get_max_allocated_table_write_id": true,
	"seed_write_id":                    true,
	"add_dynamic_partitions":           true,
	"get_all_write_event_info":         true,
	"repl_tbl_writeid_state":           true,
}

// pinnedMethods are the transaction and lock lifecycle calls that carry only
// ids: they belong to the default catalog (the lock shim serves check_lock,
// unlock and heartbeat of its own ids). Hive 4's commit_txn may also carry
// write events of replication naming databases; one naming another catalog
// is refused rather than sent where the transaction is unknown.
var pinnedMethods = map[string]bool{
	"open_txns": true, "commit_txn": true, "abort_txn": true, "abort_txns": true, "heartbeat": true,
	"heartbeat_txn_range": true, "check_lock": true, "unlock": true,
}

// WriteIDMethods lists the calls that carry a transaction's write ids (sorted).
func WriteIDMethods() []string { return sortedKeys(writeIDMethods) }

// PinnedMethods lists the id-only transaction and lock lifecycle calls that
// belong to the default catalog (sorted).
func PinnedMethods() []string { return sortedKeys(pinnedMethods) }

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// acidRefusal says why a call to catalog cat breaks the ACID policy by its
// name alone (nil when it does not): a transaction or write-id call on a
// catalog other than the default, a lock there when no lock shim is
// configured. Transactional table definitions are acidTables' part.
func (pl *Planner) acidRefusal(req *call, cat *naming.Catalog) *Refusal {
	if cat.Default {
		return nil
	}
	name := req.plan.Spec.Name
	def := pl.ns.Default().Name
	switch {
	case pinnedMethods[name]:
		return NewRefusal(RefuseMeta, "non_default_acid",
			"%s names a database of catalog %s; transactions and their locks belong to the default catalog %s, whose metastore issued their ids",
			name, cat.Name, def)
	case writeIDMethods[name]:
		return NewRefusal(RefuseMeta, "non_default_acid",
			"%s refused on catalog %s: write ids exist only for ACID (transactional) tables, and those live only in the default catalog %s, whose metastore issues the transaction and write ids; catalog %s's metastore never saw the client's transactions",
			name, cat.Name, def, cat.Name)
	case name == "lock" && !pl.lockShim:
		return NewRefusal(RefuseMeta, "no_lock_shim",
			"lock refused on catalog %s: locks of non-default catalogs are served by the synthetic lock shim, which this router was built without", cat.Name)
	}
	return nil
}

// planSplitLock plans a lock naming several catalogs: the lock shim splits it
// (locks.Split) and judges every part, so the plan names the default catalog
// (whose part, if any, goes to its metastore) and leaves the access modes to
// the shim.
func (pl *Planner) planSplitLock(req *call) {
	p := req.plan
	def := pl.ns.Default()
	p.Kind, p.Target, p.SplitLock = PlanSingle, def, true
	p.Writes, p.DBs, p.Patches = false, p.dbArr[:0], p.patchArr[:0]
	p.Mode, p.Adapter = pl.adapters.Plan(pl.runtime(def), p.Spec.Name)
}

// Lock types and data operations of LockComponent that write.
const (
	lockSharedRead               = 1
	opInsert, opUpdate, opDelete = 2, 3, 4
)

// writesData decides, for calls whose write-ness depends on the payload,
// whether this one writes. A lock request writes when any component takes
// more than a shared read or belongs to an INSERT/UPDATE/DELETE; a SELECT's
// SHARED_READ lock on a READ_ONLY catalog must pass.
func writesData(spec *methods.Spec, body []byte) bool {
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
