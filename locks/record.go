package locks

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Lock ids of the shim. Hive's TxnHandler numbers locks from 1 upwards
// (NEXT_LOCK_ID); a metastore issuing a million locks a second would need
// about 146,000 years to reach 2^62. Shim ids therefore have bit 62 set and bit
// 63 clear: they stay positive in a Java long (Hive clients keep lock ids in
// a long and treat 0 as "no lock"), never collide with a backend id, and say by
// themselves which side issued them. Bits 32-61 are the store's epoch (random
// per in-memory store, derived from the ZooKeeper locks znode's creation for a
// ZooKeeper store), so an id issued before a restart or by another store is not
// mistaken for a new lock; bits 0-31 are the lock's arrival sequence.
const (
	idFlag    int64 = 1 << 62
	epochMask       = 1<<30 - 1
)

// IsShimLockID says whether a lock id has the form of a shim id (whichever
// store or instance issued it). The router sends check_lock, unlock and
// heartbeat of such ids to the shim, everything else to the default catalog.
func IsShimLockID(id int64) bool { return id > 0 && id&idFlag != 0 }

func makeID(epoch uint32, seq uint32) int64 {
	return idFlag | int64(epoch&epochMask)<<32 | int64(seq)
}

// splitID gives the epoch and sequence of a shim id.
func splitID(id int64) (epoch uint32, seq uint32, ok bool) {
	if !IsShimLockID(id) {
		return 0, 0, false
	}
	return uint32(id>>32) & epochMask, uint32(id), true
}

// Lock states a record can be in (the LockState names).
const (
	stateWaiting  = "WAITING"
	stateAcquired = "ACQUIRED"
)

// Component is one locked object of a record: a database, a table or a
// partition of one catalog, under its backend names (lower case, as Hive's
// TxnHandler keeps them).
type Component struct {
	Catalog   string
	DB        string
	Table     string // "" = the whole database
	Partition string // "" = the whole table
	Type      thriftgen.LockType
	Operation *thriftgen.DataOperationType
}

// Record is one lock as a store keeps it: all components of one lock call,
// granted together or not at all.
type Record struct {
	ID          int64 // shim lock id (from the store's epoch and the arrival sequence)
	TxnID       int64 // the default catalog's transaction, 0 = none
	User        string
	Host        string
	Agent       string
	State       string // WAITING or ACQUIRED
	Components  []Component
	CreatedMs   int64
	HeartbeatMs int64 // last lock, check_lock or transaction heartbeat (wall clock, ms)
	AcquiredMs  int64
	BlockedBy   int64  // the earlier lock it waited for at the last check
	Owner       string // the proxy instance that took the lock
	Token       string // unique per lock call; lets a store find a record whose creation it lost track of

	// A combined lock (a request naming the default catalog and others) is one
	// record: the shim's components, plus the default catalog's part, which the
	// router sends to that catalog's metastore once the shim's part is granted.
	LinkedRequest []byte // the default catalog's part, opaque to the shim (nil: none)
	LinkedLockID  int64  // the default catalog's lock id of that part once taken (0: not yet)

	// Pending: nobody outside the instance that took the lock has its answer
	// yet (or, for a lock the instance holds for itself, ever will). A store
	// with sessions ties a pending record to the creating instance's session
	// (the ZooKeeper store: an ephemeral marker named by Token), so another
	// instance tells a lock whose requester can no longer get its answer
	// (the instance died mid-call) from a live one and removes it at once
	// instead of after the heartbeat timeout (issue 20, item 7).
	Pending bool

	version       int32 // store version of the record as read; compare-and-set on update
	seq           uint32
	pendingStored bool // Pending as the store holds it (its marker exists while true)
}

func (r *Record) clone() *Record {
	c := *r
	c.Components = append([]Component(nil), r.Components...)
	c.LinkedRequest = append([]byte(nil), r.LinkedRequest...)
	return &c
}

// catalogs lists the distinct catalogs of the record in component order.
func (r *Record) catalogs() []string {
	var out []string
	for _, c := range r.Components {
		seen := false
		for _, o := range out {
			if o == c.Catalog {
				seen = true
				break
			}
		}
		if !seen {
			out = append(out, c.Catalog)
		}
	}
	return out
}

// The stored form: JSON, readable by an operator looking at a znode.
type recordJSON struct {
	Format      int             `json:"format"`
	TxnID       int64           `json:"txnid,omitempty"`
	User        string          `json:"user,omitempty"`
	Host        string          `json:"host,omitempty"`
	Agent       string          `json:"agent,omitempty"`
	State       string          `json:"state"`
	Components  []componentJSON `json:"components"`
	CreatedMs   int64           `json:"createdMs"`
	HeartbeatMs int64           `json:"heartbeatMs"`
	AcquiredMs  int64           `json:"acquiredMs,omitempty"`
	BlockedBy   int64           `json:"blockedBy,omitempty"`
	Owner       string          `json:"owner,omitempty"`
	Token       string          `json:"token,omitempty"`
	// encoding/json writes []byte as base64
	LinkedRequest []byte `json:"linkedRequest,omitempty"`
	LinkedLockID  int64  `json:"linkedLockId,omitempty"`
	Pending       bool   `json:"pending,omitempty"`
}

type componentJSON struct {
	Catalog   string `json:"catalog"`
	DB        string `json:"db"`
	Table     string `json:"table,omitempty"`
	Partition string `json:"partition,omitempty"`
	Type      string `json:"type"`
	Operation string `json:"operation,omitempty"`
}

const recordFormat = 1

func encodeRecord(r *Record) ([]byte, error) {
	j := recordJSON{Format: recordFormat, TxnID: r.TxnID, User: r.User, Host: r.Host, Agent: r.Agent, State: r.State,
		CreatedMs: r.CreatedMs, HeartbeatMs: r.HeartbeatMs, AcquiredMs: r.AcquiredMs, BlockedBy: r.BlockedBy,
		Owner: r.Owner, Token: r.Token, LinkedRequest: r.LinkedRequest, LinkedLockID: r.LinkedLockID, Pending: r.Pending}
	for _, c := range r.Components {
		cj := componentJSON{Catalog: c.Catalog, DB: c.DB, Table: c.Table, Partition: c.Partition, Type: c.Type.String()}
		if c.Operation != nil {
			cj.Operation = c.Operation.String()
		}
		j.Components = append(j.Components, cj)
	}
	return json.Marshal(j)
}

// lockTypeByName and operationByName invert the generated String methods.
func lockTypeByName(name string) (thriftgen.LockType, bool) {
	for t := thriftgen.LockType_SHARED_READ; t <= thriftgen.LockType_EXCL_WRITE; t++ {
		if t.String() == name {
			return t, true
		}
	}
	return 0, false
}

func operationByName(name string) (thriftgen.DataOperationType, bool) {
	for op := thriftgen.DataOperationType_SELECT; op <= thriftgen.DataOperationType_NO_TXN; op++ {
		if op.String() == name {
			return op, true
		}
	}
	return 0, false
}

// decodeRecord reads a stored record; anything that is not a record of this
// format (for instance one written by the Java proxy during a rolling upgrade)
// is an error, and the caller treats the node as foreign.
func decodeRecord(b []byte) (*Record, error) {
	var j recordJSON
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("not a lock record: %w", err)
	}
	if j.Format != recordFormat {
		return nil, fmt.Errorf("lock record format %d, want %d", j.Format, recordFormat)
	}
	if j.State != stateWaiting && j.State != stateAcquired {
		return nil, fmt.Errorf("lock record state %q", j.State)
	}
	if len(j.Components) == 0 {
		return nil, fmt.Errorf("lock record without components")
	}
	r := &Record{TxnID: j.TxnID, User: j.User, Host: j.Host, Agent: j.Agent, State: j.State, CreatedMs: j.CreatedMs,
		HeartbeatMs: j.HeartbeatMs, AcquiredMs: j.AcquiredMs, BlockedBy: j.BlockedBy, Owner: j.Owner, Token: j.Token,
		LinkedRequest: j.LinkedRequest, LinkedLockID: j.LinkedLockID, Pending: j.Pending, pendingStored: j.Pending}
	for _, cj := range j.Components {
		t, ok := lockTypeByName(cj.Type)
		if !ok {
			return nil, fmt.Errorf("lock record component type %q", cj.Type)
		}
		c := Component{Catalog: cj.Catalog, DB: cj.DB, Table: cj.Table, Partition: cj.Partition, Type: t}
		if cj.Operation != "" {
			op, ok := operationByName(cj.Operation)
			if !ok {
				return nil, fmt.Errorf("lock record component operation %q", cj.Operation)
			}
			c.Operation = &op
		}
		r.Components = append(r.Components, c)
	}
	return r, nil
}

// describe names a record for error messages and logs, as Hive's LockInfo does.
func (r *Record) describe() string {
	var parts []string
	for _, c := range r.Components {
		obj := c.Catalog + ":" + c.DB
		if c.Table != "" {
			obj += "." + c.Table
		}
		if c.Partition != "" {
			obj += "/" + c.Partition
		}
		parts = append(parts, c.Type.String()+" "+obj)
	}
	s := fmt.Sprintf("lockid:%d", r.ID)
	if r.TxnID != 0 {
		s += fmt.Sprintf(" txnid:%d", r.TxnID)
	}
	if r.LinkedLockID != 0 {
		s += fmt.Sprintf(" (with default-catalog lockid:%d)", r.LinkedLockID)
	}
	if r.Pending {
		s += " (not answered yet, owner " + r.Owner + ")"
	}
	return s + " " + r.State + " [" + strings.Join(parts, ", ") + "]"
}
