package locks

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Store modes, as synthetic-read-lock.store.mode names them, and their
// store_mode metric label values.
const (
	ModeInMemory  = "IN_MEMORY"
	ModeZooKeeper = "ZOOKEEPER"

	labelInMemory  = "in_memory"
	labelZooKeeper = "zookeeper"
)

// Errors a store answers besides failures.
var (
	// ErrNotFound: no record has that id (never issued, released, or expired).
	ErrNotFound = errors.New("no such lock record")
	// ErrChanged: the record changed since it was read (compare-and-set lost); read it again.
	ErrChanged = errors.New("lock record changed concurrently")
	// ErrSessionLost: a pending record could not be marked answered because
	// the store session it was tied to ended meanwhile (its marker is gone):
	// other instances may be removing it as an orphan, so it must not be
	// answered.
	ErrSessionLost = errors.New("the store session that held the unanswered lock ended")
)

// StoreError is a failure of the store itself (ZooKeeper unreachable, a
// timeout, a corrupt tree), as opposed to an answer about a lock. Its message
// names the store, so the client's error says where to look.
type StoreError struct {
	Store     string // e.g. "ZOOKEEPER store 127.0.0.1:2181/hms-proxy-synthetic-read-locks"
	Op        string // the store operation: create, get, list, update, delete, txn_locks, sweep
	Exception string // short failure class for the store_failures metric (e.g. ConnectionLossException)
	Err       error
}

func (e *StoreError) Error() string {
	return fmt.Sprintf("synthetic lock %s: %s failed: %v", e.Store, e.Op, e.Err)
}

func (e *StoreError) Unwrap() error { return e.Err }

// SweepResult is what one expiry sweep of a store did.
type SweepResult struct {
	Expired     []*Record // lock records removed because their last heartbeat is older than the timeout
	Orphans     []*Record // pending lock records removed because the instance that took them is gone
	Foreign     int       // nodes that are not records of this format, removed after the timeout (by modification time)
	OrphanIndex int       // transaction index entries whose lock record was gone
	EmptyTxns   int       // transaction folders removed because they were empty
	Active      int       // lock records left (the active-locks gauge is set to it)
}

// Store keeps lock records. Every method either does what it says or fails
// with ErrNotFound, ErrChanged or a *StoreError naming the store. Records
// handed out are copies.
type Store interface {
	// Mode is ModeInMemory or ModeZooKeeper.
	Mode() string
	// Describe names the store for messages, e.g. "ZOOKEEPER store host:2181/znode".
	Describe() string
	// Create stores a new record and gives it its id: the arrival sequence of
	// the store (later calls get larger ids) with the store's epoch. When the
	// record has a transaction, it is also entered in that transaction's
	// index, after the record itself. A Pending record is tied to this
	// store's session in the same step (see Record.Pending).
	Create(ctx context.Context, r *Record) (int64, error)
	// Get reads one record by id.
	Get(ctx context.Context, id int64) (*Record, error)
	// List reads every record that arrived before the given id (all records
	// when before is 0), in arrival order.
	List(ctx context.Context, before int64) ([]*Record, error)
	// Update writes a record read earlier, if nobody changed it since
	// (ErrChanged otherwise). A record that was pending and no longer is
	// leaves its session in the same step; ErrSessionLost when that session
	// already ended.
	Update(ctx context.Context, r *Record) error
	// Orphaned reports whether a pending record's creator can no longer
	// answer it: the store session it was tied to has ended. Always false
	// for a record that is not pending, and for a store without sessions.
	Orphaned(ctx context.Context, r *Record) (bool, error)
	// Delete removes a record and its index entry; with matchVersion, only if
	// nobody changed it since it was read (ErrChanged otherwise).
	Delete(ctx context.Context, r *Record, matchVersion bool) error
	// TxnLocks lists the ids of the records indexed under a transaction.
	TxnLocks(ctx context.Context, txnID int64) ([]int64, error)
	// Sweep removes records whose last heartbeat is older than timeout at now,
	// pending records whose session ended, index entries whose record is
	// gone, and empty transaction folders.
	Sweep(ctx context.Context, now time.Time, timeout time.Duration) (SweepResult, error)
	// Ping checks that the store answers (one cheap round trip for
	// ZooKeeper; readiness reports it).
	Ping(ctx context.Context) error
	// Close releases the store's resources.
	Close() error
}

// randomEpoch draws the epoch of a store that keeps nothing across restarts.
func randomEpoch() uint32 {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return uint32(time.Now().UnixNano()) & epochMask
	}
	return binary.LittleEndian.Uint32(b[:]) & epochMask
}

// InMemoryWarning is the start-up warning the caller logs when it builds an IN_MEMORY store.
const InMemoryWarning = "synthetic-read-lock.store.mode=IN_MEMORY: synthetic locks of non-default catalogs live in " +
	"this process only and are lost on restart or failover to another instance; use ZOOKEEPER for several instances"

// MemoryStore is the IN_MEMORY store: records live in this process and are
// lost on restart (the caller logs the start-up warning the spec asks for).
// It is exactly as strict as the ZooKeeper store: versions, arrival order,
// the transaction index.
type MemoryStore struct {
	epoch uint32

	mu      sync.Mutex
	next    uint32
	records map[uint32]*Record
	txns    map[int64]map[int64]struct{}
}

// NewMemoryStore makes an empty in-memory store with a fresh epoch.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{epoch: randomEpoch(), records: map[uint32]*Record{}, txns: map[int64]map[int64]struct{}{}}
}

func (m *MemoryStore) Mode() string     { return ModeInMemory }
func (m *MemoryStore) Describe() string { return "IN_MEMORY store" }
func (m *MemoryStore) Close() error     { return nil }

// Ping always succeeds: the store is this process.
func (m *MemoryStore) Ping(context.Context) error { return nil }

func (m *MemoryStore) fail(op string, err error) error {
	return &StoreError{Store: m.Describe(), Op: op, Exception: exceptionOf(err), Err: err}
}

func (m *MemoryStore) Create(ctx context.Context, r *Record) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, m.fail("create", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next == 1<<32-1 {
		return 0, m.fail("create", errors.New("lock sequence exhausted (2^32 locks since start)"))
	}
	m.next++
	c := r.clone()
	c.seq = m.next
	c.ID = makeID(m.epoch, c.seq)
	c.version = 0
	c.pendingStored = c.Pending
	m.records[c.seq] = c
	if c.TxnID != 0 {
		if m.txns[c.TxnID] == nil {
			m.txns[c.TxnID] = map[int64]struct{}{}
		}
		m.txns[c.TxnID][c.ID] = struct{}{}
	}
	return c.ID, nil
}

func (m *MemoryStore) lookup(id int64) (*Record, bool) {
	epoch, seq, ok := splitID(id)
	if !ok || epoch != m.epoch {
		return nil, false
	}
	r, ok := m.records[seq]
	return r, ok
}

func (m *MemoryStore) Get(ctx context.Context, id int64) (*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, m.fail("get", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.lookup(id)
	if !ok {
		return nil, ErrNotFound
	}
	return r.clone(), nil
}

func (m *MemoryStore) List(ctx context.Context, before int64) ([]*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, m.fail("list", err)
	}
	limit := uint32(1<<32 - 1)
	if before != 0 {
		_, seq, ok := splitID(before)
		if !ok {
			return nil, m.fail("list", fmt.Errorf("%d is not a shim lock id", before))
		}
		limit = seq
	}
	m.mu.Lock()
	out := make([]*Record, 0, len(m.records))
	for seq, r := range m.records {
		if before == 0 || seq < limit {
			out = append(out, r.clone())
		}
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out, nil
}

func (m *MemoryStore) Update(ctx context.Context, r *Record) error {
	if err := ctx.Err(); err != nil {
		return m.fail("update", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.lookup(r.ID)
	if !ok {
		return ErrNotFound
	}
	if cur.version != r.version {
		return ErrChanged
	}
	c := r.clone()
	c.seq = cur.seq
	c.version = cur.version + 1
	c.pendingStored = c.Pending
	m.records[c.seq] = c
	r.version, r.pendingStored = c.version, c.Pending
	return nil
}

// Orphaned is always false: the records live and die with this process.
func (m *MemoryStore) Orphaned(context.Context, *Record) (bool, error) { return false, nil }

func (m *MemoryStore) Delete(ctx context.Context, r *Record, matchVersion bool) error {
	if err := ctx.Err(); err != nil {
		return m.fail("delete", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.lookup(r.ID)
	if !ok {
		return ErrNotFound
	}
	if matchVersion && cur.version != r.version {
		return ErrChanged
	}
	m.remove(cur)
	return nil
}

func (m *MemoryStore) remove(r *Record) {
	delete(m.records, r.seq)
	if idx := m.txns[r.TxnID]; idx != nil {
		delete(idx, r.ID)
		if len(idx) == 0 {
			delete(m.txns, r.TxnID)
		}
	}
}

func (m *MemoryStore) TxnLocks(ctx context.Context, txnID int64) ([]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, m.fail("txn_locks", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []int64
	for id := range m.txns[txnID] {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

func (m *MemoryStore) Sweep(ctx context.Context, now time.Time, timeout time.Duration) (SweepResult, error) {
	if err := ctx.Err(); err != nil {
		return SweepResult{}, m.fail("sweep", err)
	}
	var res SweepResult
	cutoff := now.Add(-timeout).UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.records {
		if r.HeartbeatMs < cutoff {
			res.Expired = append(res.Expired, r.clone())
			m.remove(r)
		}
	}
	res.Active = len(m.records)
	sort.Slice(res.Expired, func(i, j int) bool { return res.Expired[i].seq < res.Expired[j].seq })
	return res, nil
}

// exceptionOf names a failure for the store_failures metric.
func exceptionOf(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "OperationTimeoutException"
	case errors.Is(err, context.Canceled):
		return "InterruptedException"
	}
	return "StoreException"
}
