package locks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Defaults of Options.
const (
	// DefaultTxnTimeout is Hive's metastore.txn.timeout default.
	DefaultTxnTimeout = 300 * time.Second
	// DefaultSweepInterval is how often the background sweep expires locks.
	DefaultSweepInterval = 30 * time.Second
)

// casAttempts bounds the re-reads when a record changes between read and write
// (a heartbeat or check through another instance); each attempt is one
// read-decide-write round, so a handful always suffices in practice.
const casAttempts = 16

// Request is one catalog's part of a lock call: the LockRequest with its
// components already under the catalog's backend database names (Split gives
// these). The Txnid, user, host and agent of every part are those of the one
// client call.
type Request struct {
	Catalog string
	Lock    *thriftgen.LockRequest
}

// Options build a Shim.
type Options struct {
	// Store keeps the lock records (NewMemoryStore or NewZooKeeperStore). Required.
	Store Store
	// Rules is the compatibility table: that of the default catalog's Hive
	// release (compat.Runtime.LockRules of its runtime-profile). Required.
	Rules Rules
	// TxnTimeout is the default catalog's metastore.txn.timeout (or
	// hive.txn.timeout): a lock whose last heartbeat (lock call, check_lock,
	// heartbeat of the lock or of its transaction) is older expires.
	// 0 = DefaultTxnTimeout.
	TxnTimeout time.Duration
	// SweepInterval is the period of the background expiry sweep
	// (0 = DefaultSweepInterval; negative = no background sweep, call Sweep).
	SweepInterval time.Duration
	// GrantAtOnce answers ACQUIRED without looking at other locks, as the Java
	// proxy's shim did: no writer isolation. Kept for comparison and tests only.
	GrantAtOnce bool
	// InstanceID names this proxy instance in the records it creates, to count
	// handoffs ("" = hostname:pid:random).
	InstanceID string
	// Metrics receives the shim's metrics (nil = none).
	Metrics *Metrics
	// Logger receives sweep results and store trouble (nil = discard).
	Logger *slog.Logger
	// Now is the clock (nil = time.Now); tests move it.
	Now func() time.Time
}

// Shim serves synthetic locks: lock, check_lock, heartbeat, unlock, and the
// release of a transaction's locks when the default catalog commits or aborts
// it. All methods are safe for concurrent use, also across instances sharing a
// ZooKeeper store.
//
// Answers follow Hive's TxnHandler: a *thriftgen.NoSuchLockException for an id
// that names no live lock, a *thriftgen.TxnOpenException for unlock of a
// granted lock of a transaction, a *thriftgen.MetaException for a malformed
// request; a store failure is a *StoreError (its message names the store).
type Shim struct {
	store    Store
	rules    Rules
	timeout  time.Duration
	interval time.Duration
	atOnce   bool
	instance string
	metrics  *Metrics
	log      *slog.Logger
	now      func() time.Time
	mode     string // store_mode label

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// New checks the options, publishes the store-info gauge and starts the background sweep.
func New(o Options) (*Shim, error) {
	if o.Store == nil {
		return nil, errors.New("locks: Options.Store is nil: give an IN_MEMORY or ZOOKEEPER store")
	}
	if err := o.Rules.valid(); err != nil {
		return nil, err
	}
	if o.TxnTimeout < 0 {
		return nil, fmt.Errorf("locks: Options.TxnTimeout is %v: the lock timeout (metastore.txn.timeout) must be positive", o.TxnTimeout)
	}
	if o.TxnTimeout == 0 {
		o.TxnTimeout = DefaultTxnTimeout
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = DefaultSweepInterval
	}
	if o.InstanceID == "" {
		host, _ := os.Hostname()
		o.InstanceID = fmt.Sprintf("%s:%d:%s", host, os.Getpid(), randomToken()[:8])
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	mode := labelInMemory
	if o.Store.Mode() == ModeZooKeeper {
		mode = labelZooKeeper
	}
	s := &Shim{store: o.Store, rules: o.Rules, timeout: o.TxnTimeout, interval: o.SweepInterval, atOnce: o.GrantAtOnce,
		instance: o.InstanceID, metrics: o.Metrics, log: o.Logger, now: o.Now, mode: mode,
		stop: make(chan struct{}), done: make(chan struct{})}
	s.metrics.storeInfo(mode)
	if s.interval > 0 {
		go s.sweepLoop()
	} else {
		close(s.done)
	}
	return s, nil
}

// Close stops the background sweep (the store is the caller's to close).
func (s *Shim) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
	return nil
}

// StoreMode is ModeInMemory or ModeZooKeeper; StoreName names the store as
// every store error does.
func (s *Shim) StoreMode() string { return s.store.Mode() }

// StoreName names the store, e.g. "ZOOKEEPER store zk1:2181 znode /locks".
func (s *Shim) StoreName() string { return s.store.Describe() }

// Ping checks that the store answers.
func (s *Shim) Ping(ctx context.Context) error { return s.store.Ping(ctx) }

// InstanceID is the name this shim writes into the records it creates.
func (s *Shim) InstanceID() string { return s.instance }

// Isolates reports whether the shim judges conflicts (false only with
// GrantAtOnce): writers of one table are then serialized by its locks.
func (s *Shim) Isolates() bool { return !s.atOnce }

// Owns says whether a lock id is a shim id (see IsShimLockID).
func (s *Shim) Owns(lockID int64) bool { return IsShimLockID(lockID) }

func randomToken() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("%024x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}

func noSuchLock(id int64) error {
	return &thriftgen.NoSuchLockException{Message: fmt.Sprintf(
		"No such lock lockid:%d: this synthetic lock of the proxy was released, expired or never issued", id)}
}

func badRequest(format string, args ...any) error {
	return &thriftgen.MetaException{Message: "synthetic lock: " + fmt.Sprintf(format, args...)}
}

// isDummy: Hive's placeholder for queries without a source table
// (SemanticAnalyzer.DUMMY_DATABASE / DUMMY_TABLE), which exists in no metastore.
func isDummy(c *thriftgen.LockComponent) bool {
	return strings.EqualFold(c.Dbname, DummyDatabase)
}

// Eligible says whether the shim may serve these parts: inside a transaction
// (a Txnid other than 0), every component that is not Hive's _dummy_database
// placeholder must be non-transactional (isTransactional absent or false). That
// covers the non-ACID SHARED_READ of a SELECT, the NO_TXN locks of DDL (CREATE
// TABLE's database lock, partition rename/drop) and non-transactional writes
// (INSERT, INSERT OVERWRITE, UPDATE, DELETE, of any lock type). A transactional
// component of a transaction belongs to an ACID write, whose write ids only the
// default catalog's TxnHandler issues, so the request must not be served here.
// Without a transaction the flag does not matter to Hive's TxnHandler (it
// records transaction components only for a transaction), and clients set it
// on plain table locks: PyIceberg's commit lock is EXCLUSIVE, TABLE,
// isTransactional=true, no transaction. Such a lock is a lock like any other.
// The error names the first component that is not eligible.
func Eligible(parts ...Request) error {
	if len(parts) == 0 {
		return errors.New("no lock components")
	}
	n := 0
	for _, p := range parts {
		if p.Lock == nil {
			return fmt.Errorf("catalog %s: no lock request", p.Catalog)
		}
		inTxn := p.Lock.Txnid != nil && *p.Lock.Txnid != 0
		for i, c := range p.Lock.Component {
			if c == nil || isDummy(c) {
				continue
			}
			n++
			if inTxn && c.IsTransactional != nil && *c.IsTransactional {
				return fmt.Errorf("lock component %d (%s on %s) of catalog %s is transactional, in transaction %d: only the default catalog's "+
					"metastore can lock ACID writes, and ACID tables exist only there", i, c.Type, objectName(c), p.Catalog, *p.Lock.Txnid)
			}
		}
	}
	if n == 0 {
		return errors.New("only Hive's _dummy_database placeholder is named: nothing for the shim to lock")
	}
	return nil
}

func objectName(c *thriftgen.LockComponent) string {
	s := c.Dbname
	if c.Tablename != nil && *c.Tablename != "" {
		s += "." + *c.Tablename
	}
	if c.Partitionname != nil && *c.Partitionname != "" {
		s += "/" + *c.Partitionname
	}
	return s
}

// record builds the record of a lock call from its parts.
func (s *Shim) record(parts []Request) (*Record, bool, bool, error) {
	if len(parts) == 0 {
		return nil, false, false, badRequest("lock call without a request")
	}
	first := parts[0].Lock
	if first == nil {
		return nil, false, false, badRequest("catalog %s: no lock request", parts[0].Catalog)
	}
	now := s.now().UnixMilli()
	r := &Record{User: first.User, Host: first.Hostname, State: stateWaiting, CreatedMs: now, HeartbeatMs: now,
		Owner: s.instance, Token: randomToken()}
	if first.Txnid != nil {
		r.TxnID = *first.Txnid
	}
	if first.AgentInfo != nil {
		r.Agent = *first.AgentInfo
	}
	zeroWait, exclCTAS := false, false
	for _, p := range parts {
		if p.Catalog == "" {
			return nil, false, false, badRequest("lock request part without a catalog")
		}
		if p.Lock == nil {
			return nil, false, false, badRequest("catalog %s: no lock request", p.Catalog)
		}
		var txn int64
		if p.Lock.Txnid != nil {
			txn = *p.Lock.Txnid
		}
		if txn != r.TxnID {
			return nil, false, false, badRequest("parts of one lock call name transactions %d and %d", r.TxnID, txn)
		}
		zeroWait = zeroWait || (p.Lock.ZeroWaitReadEnabled != nil && *p.Lock.ZeroWaitReadEnabled)
		exclCTAS = exclCTAS || (p.Lock.ExclusiveCTAS != nil && *p.Lock.ExclusiveCTAS)
		for i, c := range p.Lock.Component {
			if c == nil {
				return nil, false, false, badRequest("catalog %s: lock component %d is null", p.Catalog, i)
			}
			if r.TxnID != 0 && c.IsTransactional != nil && *c.IsTransactional {
				return nil, false, false, badRequest("catalog %s: lock component %d on %s is transactional, in transaction %d; only the "+
					"default catalog's metastore can lock ACID writes", p.Catalog, i, objectName(c), r.TxnID)
			}
			if _, err := s.rules.kindOf(c.Type); err != nil {
				return nil, false, false, badRequest("catalog %s: lock component %d on %s: %v", p.Catalog, i, objectName(c), err)
			}
			comp := Component{Catalog: p.Catalog, DB: strings.ToLower(c.Dbname), Type: c.Type, Operation: c.OperationType}
			if comp.DB == "" {
				return nil, false, false, badRequest("catalog %s: lock component %d names no database", p.Catalog, i)
			}
			if c.Tablename != nil {
				comp.Table = strings.ToLower(*c.Tablename)
			}
			if c.Partitionname != nil {
				comp.Partition = strings.ToLower(*c.Partitionname)
			}
			if comp.Partition != "" && comp.Table == "" {
				return nil, false, false, badRequest("catalog %s: lock component %d names partition %q but no table",
					p.Catalog, i, comp.Partition)
			}
			r.Components = append(r.Components, comp)
		}
	}
	if len(r.Components) == 0 {
		return nil, false, false, badRequest("lock request without components")
	}
	if s.rules != RulesHive4 {
		zeroWait, exclCTAS = false, false // Hive 3 has neither
	}
	return r, zeroWait, exclCTAS, nil
}

// Lock takes a lock over the given catalogs' parts: one record, one id, granted
// together or not at all. The answer is ACQUIRED, WAITING (poll with
// CheckLock) or, under Hive 4 rules, NOT_ACQUIRED for a zero-wait read or an
// exclusive CTAS that would have to wait. The caller's client gets the answer
// (AnswerNow).
func (s *Shim) Lock(ctx context.Context, parts ...Request) (*thriftgen.LockResponse, error) {
	return s.LockAs(ctx, AnswerNow, nil, parts...)
}

// AnswerMode says who gets a new lock's answer, and so how long the lock
// stays pending (Record.Pending): tied to this instance's store session, so
// that the lock ends with this instance if nobody else can know its id.
type AnswerMode int

const (
	// AnswerNow: a client gets the answer of this lock call; the lock
	// belongs to it from then on (heartbeat, check, unlock through any
	// instance). The record leaves the pending state in the write that
	// records the decision, before the caller answers.
	AnswerNow AnswerMode = iota
	// AnswerLater: the caller still has work to do before its client gets
	// the answer (a combined lock's default-catalog part): the record stays
	// pending until Answered, or until it is unlocked or discarded.
	AnswerLater
	// AnswerNever: this instance holds the lock for itself (the Iceberg
	// pointer guard, a REST commit); no client ever has its id, so it stays
	// pending for its whole life and ends with this instance at the latest.
	AnswerNever
)

// LockLinked is Lock for a combined lock, one that also names the default
// catalog: linked is the default catalog's part (opaque to the shim, kept in
// the record). The caller takes that part at the default catalog's metastore
// only once the shim's part is ACQUIRED, and records the metastore's lock id
// with Link; until then the combined lock holds nothing at the metastore. So a
// combined lock waits either here (holding nothing there) or there (holding
// only shim locks, which are granted for good), and waits in each queue only
// for earlier entries: two combined locks can never wait for each other in a
// cycle across the two queues.
func (s *Shim) LockLinked(ctx context.Context, linked []byte, parts ...Request) (*thriftgen.LockResponse, error) {
	return s.LockAs(ctx, AnswerNow, linked, parts...)
}

// LockAs is LockLinked with the AnswerMode of the lock call. The record is
// created pending (see Record.Pending): an instance killed between taking
// the lock and answering leaves a lock that another instance removes as soon
// as the store sees that instance's session end, not after the lock timeout.
func (s *Shim) LockAs(ctx context.Context, mode AnswerMode, linked []byte, parts ...Request) (*thriftgen.LockResponse, error) {
	r, zeroWait, exclCTAS, err := s.record(parts)
	if err != nil {
		return nil, err
	}
	r.LinkedRequest = linked
	r.Pending = true
	id, err := s.store.Create(ctx, r)
	if err != nil {
		return nil, s.storeFailure(OpAcquire, r.catalogs(), err)
	}
	r.ID, r.seq, r.version, r.pendingStored = id, uint32(id), 0, true
	s.metrics.addActive(s.mode, 1)
	resp, _, err := s.decide(ctx, r, true, zeroWait, exclCTAS, mode == AnswerNow)
	if errors.Is(err, ErrSessionLost) {
		err = s.lostAnswer(ctx, r, err)
	}
	s.count(OpAcquire, r, resp, err)
	return resp, err
}

// Answered ends the pending state of a lock taken with AnswerLater: its
// client gets the answer now. A lock that is gone (discarded meanwhile)
// answers NoSuchLockException; one whose store session ended meanwhile
// is removed and answers a store error (another instance may already have
// removed it as an orphan: it must not be answered).
func (s *Shim) Answered(ctx context.Context, lockID int64) error {
	for attempt := 0; ; attempt++ {
		r, err := s.store.Get(ctx, lockID)
		if errors.Is(err, ErrNotFound) {
			return noSuchLock(lockID)
		}
		if err != nil {
			return s.storeFailure(OpAcquire, nil, err)
		}
		if !r.Pending {
			return nil
		}
		r.Pending = false
		err = s.store.Update(ctx, r)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ErrChanged) && attempt < casAttempts:
			continue
		case errors.Is(err, ErrNotFound):
			return noSuchLock(lockID)
		case errors.Is(err, ErrSessionLost):
			return s.lostAnswer(ctx, r, err)
		}
		return s.storeFailure(OpAcquire, r.catalogs(), err)
	}
}

// lostAnswer removes a lock whose pending state could not be ended because
// this instance's store session ended under it, and gives the error its
// client gets instead of the lock.
func (s *Shim) lostAnswer(ctx context.Context, r *Record, cause error) error {
	r.pendingStored = false // its marker is gone with the session
	if err := s.store.Delete(ctx, r, false); err == nil {
		s.metrics.addActive(s.mode, -1)
	}
	return s.storeFailure(OpAcquire, r.catalogs(), fmt.Errorf("%w while the lock was being taken: it was removed, try again", cause))
}

// Held is what the router needs to know about a shim lock besides its state.
type Held struct {
	Catalogs []string // the catalogs of its components, in order of appearance
	TxnID    int64    // the default catalog's transaction, 0 = none
	// LinkedRequest is the default catalog's part of a combined lock (see
	// LockLinked), nil for a lock of the shim alone; LinkedLockID is the
	// default catalog's lock id of that part once taken (0 = not yet).
	LinkedRequest []byte
	LinkedLockID  int64
}

func heldOf(r *Record) Held {
	return Held{Catalogs: r.catalogs(), TxnID: r.TxnID, LinkedRequest: r.LinkedRequest, LinkedLockID: r.LinkedLockID}
}

// CheckLock polls a lock: ACQUIRED once no earlier conflicting lock is left,
// WAITING before. Like Hive's check_lock it also counts as a heartbeat.
func (s *Shim) CheckLock(ctx context.Context, lockID int64) (*thriftgen.LockResponse, error) {
	resp, _, err := s.Check(ctx, lockID)
	return resp, err
}

// Check is CheckLock that also describes the lock (its link to the default
// catalog's part, for a combined lock).
func (s *Shim) Check(ctx context.Context, lockID int64) (*thriftgen.LockResponse, Held, error) {
	r, err := s.store.Get(ctx, lockID)
	if errors.Is(err, ErrNotFound) {
		s.metrics.event(OpCheckLock, "unknown", s.mode, ResultNoSuchLock)
		return nil, Held{}, noSuchLock(lockID)
	}
	if err != nil {
		return nil, Held{}, s.storeFailure(OpCheckLock, nil, err)
	}
	s.noteHandoff(OpCheckLock, r)
	resp, cur, err := s.decide(ctx, r, false, false, false, false)
	s.count(OpCheckLock, r, resp, err)
	if err != nil {
		return nil, Held{}, err
	}
	return resp, heldOf(cur), nil
}

// Link records the default catalog's lock id of a combined lock's linked part.
// When another caller linked one first (two check_lock calls of the same lock
// through two instances), it keeps that one and returns it: the caller then
// releases its own and uses the returned id.
func (s *Shim) Link(ctx context.Context, lockID, linkedLockID int64) (int64, error) {
	if linkedLockID == 0 {
		return 0, badRequest("lockid:%d: a linked lock id of 0", lockID)
	}
	for attempt := 0; ; attempt++ {
		r, err := s.store.Get(ctx, lockID)
		if errors.Is(err, ErrNotFound) {
			return 0, noSuchLock(lockID)
		}
		if err != nil {
			return 0, s.storeFailure(OpAcquire, nil, err)
		}
		if r.LinkedRequest == nil {
			return 0, badRequest("lockid:%d has no default-catalog part to link", lockID)
		}
		if r.LinkedLockID != 0 {
			return r.LinkedLockID, nil
		}
		r.LinkedLockID = linkedLockID
		err = s.store.Update(ctx, r)
		if errors.Is(err, ErrChanged) && attempt < casAttempts {
			continue
		}
		if errors.Is(err, ErrNotFound) {
			return 0, noSuchLock(lockID)
		}
		if err != nil {
			return 0, s.storeFailure(OpAcquire, r.catalogs(), err)
		}
		return linkedLockID, nil
	}
}

// Discard removes a lock whatever its state and transaction: the router's
// clean-up when the default catalog's part of a combined lock was refused or
// is gone (its transaction aborted, the metastore's lock expired). An id that
// names no lock is not an error.
func (s *Shim) Discard(ctx context.Context, lockID int64) error {
	r, err := s.store.Get(ctx, lockID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return s.storeFailure(OpUnlock, nil, err)
	}
	err = s.store.Delete(ctx, r, false)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return s.storeFailure(OpUnlock, r.catalogs(), err)
	}
	s.metrics.addActive(s.mode, -1)
	s.eachCatalog(OpUnlock, r, ResultOK)
	return nil
}

// decide judges a record against every earlier lock and writes the outcome
// (state, heartbeat) with compare-and-set, re-reading when it lost the race.
// With answer (a lock call whose client gets this answer) the write also
// ends the record's pending state. An earlier lock that blocks r and turns
// out to be an orphan (pending, its instance's session over) is removed on
// the way.
func (s *Shim) decide(ctx context.Context, r *Record, atLock, zeroWait, exclCTAS, answer bool) (*thriftgen.LockResponse, *Record, error) {
	op := OpCheckLock
	if atLock {
		op = OpAcquire
	}
	id := r.ID
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			var err error
			r, err = s.store.Get(ctx, id)
			if errors.Is(err, ErrNotFound) {
				return nil, nil, noSuchLock(id)
			}
			if err != nil {
				return nil, nil, s.storeFailure(op, nil, err)
			}
		}
		granted := r.State == stateAcquired || s.atOnce
		var blockedBy *Record
		var blockedComp Component
		if !granted {
			earlier, err := s.store.List(ctx, r.ID)
			if err != nil {
				return nil, nil, s.storeFailure(op, r.catalogs(), err)
			}
			if blockedBy, blockedComp, err = s.blocker(ctx, r, earlier, zeroWait); err != nil {
				return nil, nil, s.storeFailure(op, r.catalogs(), err)
			}
			granted = blockedBy == nil
		}
		if !granted && atLock && r.TxnID != 0 &&
			(exclCTAS || (zeroWait && blockedComp.Type == thriftgen.LockType_SHARED_READ)) {
			resp, err := s.refuse(ctx, r, blockedBy, exclCTAS)
			return resp, r, err
		}
		now := s.now().UnixMilli()
		changed := !atLock // check_lock always heartbeats
		if answer && r.Pending {
			r.Pending, changed = false, true
		}
		if granted && r.State != stateAcquired {
			r.State, r.AcquiredMs, r.BlockedBy, changed = stateAcquired, now, 0, true
		}
		if !granted && r.BlockedBy != blockedBy.ID {
			r.BlockedBy, changed = blockedBy.ID, true
		}
		if changed {
			r.HeartbeatMs = now
			err := s.store.Update(ctx, r)
			if errors.Is(err, ErrChanged) && attempt < casAttempts {
				continue
			}
			if errors.Is(err, ErrNotFound) {
				return nil, nil, noSuchLock(r.ID)
			}
			if errors.Is(err, ErrSessionLost) {
				return nil, r, err
			}
			if err != nil {
				return nil, nil, s.storeFailure(op, r.catalogs(), err)
			}
		}
		state := thriftgen.LockState_WAITING
		if granted {
			state = thriftgen.LockState_ACQUIRED
		}
		return &thriftgen.LockResponse{Lockid: r.ID, State: state}, r, nil
	}
}

// blocker is the earlier lock r waits for (nil: none). A blocker that is an
// orphan, a pending lock whose instance's store session ended before it
// answered anyone, is removed and the next one looked at: nobody can ever
// check, heartbeat or unlock it, so keeping it would stall every writer of
// the object until the lock timeout.
func (s *Shim) blocker(ctx context.Context, r *Record, earlier []*Record, zeroWait bool) (*Record, Component, error) {
	for {
		b, comp, found := s.rules.blocker(r, earlier, zeroWait)
		if !found {
			return nil, Component{}, nil
		}
		if !b.Pending {
			return b, comp, nil
		}
		orphan, err := s.store.Orphaned(ctx, b)
		if err != nil {
			return nil, Component{}, err
		}
		if !orphan {
			return b, comp, nil
		}
		switch err := s.store.Delete(ctx, b, true); {
		case err == nil:
			s.metrics.addActive(s.mode, -1)
			s.eachCatalog(OpCleanup, b, ResultOrphan)
			s.log.Info("synthetic lock: removed a lock whose instance ended before answering it", "lock", b.describe(),
				"owner", b.Owner, "waiting", r.ID)
		case errors.Is(err, ErrChanged):
			return b, comp, nil // answered (or heart-beaten) meanwhile: alive after all; the next check looks again
		case !errors.Is(err, ErrNotFound):
			return nil, Component{}, err
		}
		earlier = slices.DeleteFunc(earlier, func(e *Record) bool { return e.ID == b.ID })
	}
}

// refuse answers NOT_ACQUIRED and removes the lock (Hive 4's zero-wait read and exclusive CTAS).
func (s *Shim) refuse(ctx context.Context, r, blockedBy *Record, exclCTAS bool) (*thriftgen.LockResponse, error) {
	if err := s.store.Delete(ctx, r, false); err != nil && !errors.Is(err, ErrNotFound) {
		return nil, s.storeFailure(OpAcquire, r.catalogs(), err)
	}
	s.metrics.addActive(s.mode, -1)
	msg := "zero-wait read refused: an exclusive lock is held or queued first: " + blockedBy.describe()
	if exclCTAS {
		msg = "exclusive CTAS refused: another lock on the same name is held or queued first: " + blockedBy.describe()
	}
	return &thriftgen.LockResponse{Lockid: r.ID, State: thriftgen.LockState_NOT_ACQUIRED, ErrorMessage: &msg}, nil
}

// storeFailure counts a store failure and gives it back (as a *StoreError).
func (s *Shim) storeFailure(op string, catalogs []string, err error) error {
	var se *StoreError
	if !errors.As(err, &se) {
		se = &StoreError{Store: s.store.Describe(), Op: op, Exception: exceptionOf(err), Err: err}
	}
	s.metrics.failure(op, s.mode, se.Exception)
	if len(catalogs) == 0 {
		catalogs = []string{"unknown"}
	}
	for _, c := range catalogs {
		s.metrics.event(op, c, s.mode, ResultError)
	}
	return se
}

func (s *Shim) eachCatalog(op string, r *Record, result string) {
	for _, c := range r.catalogs() {
		s.metrics.event(op, c, s.mode, result)
	}
}

// count records the outcome of lock or check_lock (failures were counted where they happened).
func (s *Shim) count(op string, r *Record, resp *thriftgen.LockResponse, err error) {
	if err != nil {
		var nsl *thriftgen.NoSuchLockException
		if errors.As(err, &nsl) {
			s.eachCatalog(op, r, ResultNoSuchLock)
		}
		return
	}
	switch resp.State {
	case thriftgen.LockState_ACQUIRED:
		s.eachCatalog(op, r, ResultAcquired)
	case thriftgen.LockState_WAITING:
		s.eachCatalog(op, r, ResultWaiting)
	default:
		s.eachCatalog(op, r, ResultNotAcquired)
	}
}

func (s *Shim) noteHandoff(op string, r *Record) {
	if r.Owner != "" && r.Owner != s.instance {
		for _, c := range r.catalogs() {
			s.metrics.handoff(op, c, s.mode)
		}
	}
}
