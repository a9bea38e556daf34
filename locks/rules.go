package locks

import (
	"fmt"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Rules is the lock compatibility table the shim grants by: the one of the
// Hive release whose TxnHandler owns the default catalog's transactions.
//
// Both tables share TxnHandler's scope rules: two locks meet when they name the
// same catalog and database and either one has no table, or both name the same
// table and either one has no partition, or both name the same partition. A
// SHARED_READ lock on a database (the one Hive takes so a database is not
// dropped under a CREATE TABLE or SHOW TABLES) and an EXCLUSIVE lock on one of
// its tables or partitions do not conflict, in either order. Locks of one
// transaction never conflict with each other. A lock may be granted only when no
// earlier lock (one that arrived before it, granted or still waiting) conflicts
// with it, so conflicting requests are granted in arrival order.
type Rules int

const (
	// RulesHive3 is Hive 3.1.3's table (also HDP 3.1.0.x's): SHARED_READ
	// conflicts with EXCLUSIVE; SHARED_WRITE with SHARED_WRITE and EXCLUSIVE;
	// EXCLUSIVE with everything. Hive 3 has no EXCL_WRITE; a Hive 4 client's
	// EXCL_WRITE is held as EXCLUSIVE (as the compatibility layer sends it to a
	// Hive 3 backend).
	RulesHive3 Rules = 3
	// RulesHive4 is Hive 4.1's table: SHARED_READ conflicts with EXCLUSIVE;
	// SHARED_WRITE with EXCL_WRITE and EXCLUSIVE (two SHARED_WRITE locks share);
	// EXCL_WRITE with everything but SHARED_READ; EXCLUSIVE with everything.
	// LockRequest.zeroWaitReadEnabled and exclusiveCTAS answer NOT_ACQUIRED at
	// lock time instead of WAITING, as Hive 4 does.
	RulesHive4 Rules = 4
)

// String names the rule set as its Hive release.
func (r Rules) String() string {
	switch r {
	case RulesHive3:
		return "hive-3.1.3"
	case RulesHive4:
		return "hive-4.1"
	}
	return fmt.Sprintf("Rules(%d)", int(r))
}

func (r Rules) valid() error {
	if r != RulesHive3 && r != RulesHive4 {
		return fmt.Errorf("locks: Options.Rules is %v: want RulesHive3 or RulesHive4 (the default catalog's Hive release)", r)
	}
	return nil
}

// kind is a lock type as the rules see it.
type kind uint8

const (
	kindSharedRead kind = iota
	kindSharedWrite
	kindExclWrite
	kindExclusive
)

// Conflict masks, one per requested kind: bit k set = conflicts with an existing lock of kind k.
const (
	bitSR = 1 << kindSharedRead
	bitSW = 1 << kindSharedWrite
	bitEW = 1 << kindExclWrite
	bitEX = 1 << kindExclusive
)

// conflictMask is TxnHandler's table for a requested kind.
func (r Rules) conflictMask(req kind) uint8 {
	if r == RulesHive3 {
		switch req {
		case kindSharedRead:
			return bitEX
		case kindSharedWrite:
			return bitSW | bitEX
		default:
			return bitSR | bitSW | bitEW | bitEX
		}
	}
	switch req {
	case kindSharedRead:
		return bitEX
	case kindSharedWrite:
		return bitEW | bitEX
	case kindExclWrite:
		return bitSW | bitEW | bitEX
	default:
		return bitSR | bitSW | bitEW | bitEX
	}
}

// kindOf maps a thrift lock type to the rules' kind; EXCL_WRITE is EXCLUSIVE under Hive 3.
func (r Rules) kindOf(t thriftgen.LockType) (kind, error) {
	switch t {
	case thriftgen.LockType_SHARED_READ:
		return kindSharedRead, nil
	case thriftgen.LockType_SHARED_WRITE:
		return kindSharedWrite, nil
	case thriftgen.LockType_EXCL_WRITE:
		if r == RulesHive3 {
			return kindExclusive, nil
		}
		return kindExclWrite, nil
	case thriftgen.LockType_EXCLUSIVE:
		return kindExclusive, nil
	}
	return 0, fmt.Errorf("unknown lock type %v", t)
}

// componentsConflict says whether requested component a (of transaction txnA)
// must wait for existing component b (of transaction txnB).
func (r Rules) componentsConflict(a Component, txnA int64, b Component, txnB int64) bool {
	if txnA != 0 && txnA == txnB {
		return false
	}
	if !overlap(a, b) {
		return false
	}
	ka, errA := r.kindOf(a.Type)
	kb, errB := r.kindOf(b.Type)
	if errA != nil || errB != nil {
		// a record that names no known type cannot be judged: treat it as exclusive (never grant past it)
		return true
	}
	if r.conflictMask(ka)&(1<<kb) == 0 {
		return false
	}
	// a SHARED_READ on a database and an EXCLUSIVE on one of its tables or partitions, either way round
	if ka == kindSharedRead && a.Table == "" && kb == kindExclusive && b.Table != "" {
		return false
	}
	if kb == kindSharedRead && b.Table == "" && ka == kindExclusive && a.Table != "" {
		return false
	}
	return true
}

// overlap: the same object, or one contains the other (database ⊃ table ⊃ partition).
func overlap(a, b Component) bool {
	if a.Catalog != b.Catalog || a.DB != b.DB {
		return false
	}
	if a.Table == "" || b.Table == "" {
		return true
	}
	if a.Table != b.Table {
		return false
	}
	return a.Partition == "" || b.Partition == "" || a.Partition == b.Partition
}

// blocker finds the first earlier lock (in arrival order) that the requested
// record must wait for, and the requested component it blocks. preferRead
// looks for a blocked SHARED_READ component first (Hive 4's zero-wait reads
// decide on it).
func (r Rules) blocker(req *Record, earlier []*Record, preferRead bool) (*Record, Component, bool) {
	var found *Record
	var foundComp Component
	for _, ex := range earlier {
		for _, rc := range req.Components {
			for _, ec := range ex.Components {
				if !r.componentsConflict(rc, req.TxnID, ec, ex.TxnID) {
					continue
				}
				if !preferRead || rc.Type == thriftgen.LockType_SHARED_READ {
					return ex, rc, true
				}
				if found == nil {
					found, foundComp = ex, rc
				}
			}
		}
	}
	return found, foundComp, found != nil
}
