// Releasing synthetic locks: unlock, heartbeats, the end of a transaction and
// the expiry sweep (the shim's side after a lock was granted).

package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Unlock releases a lock. As in Hive, a granted lock of a transaction is not
// unlocked but released with its transaction (TxnOpenException); a waiting one may be.
func (s *Shim) Unlock(ctx context.Context, lockID int64) error {
	_, err := s.UnlockLinked(ctx, lockID)
	return err
}

// UnlockLinked is Unlock that also describes the released lock: for a combined
// lock the caller unlocks the default catalog's part (Held.LinkedLockID) too.
func (s *Shim) UnlockLinked(ctx context.Context, lockID int64) (Held, error) {
	for attempt := 0; ; attempt++ {
		r, err := s.store.Get(ctx, lockID)
		if errors.Is(err, ErrNotFound) {
			s.metrics.event(OpUnlock, "unknown", s.mode, ResultNoSuchLock)
			return Held{}, noSuchLock(lockID)
		}
		if err != nil {
			return Held{}, s.storeFailure(OpUnlock, nil, err)
		}
		if attempt == 0 {
			s.noteHandoff(OpUnlock, r)
		}
		if r.TxnID != 0 && r.State == stateAcquired {
			s.eachCatalog(OpUnlock, r, ResultTxnOpen)
			return heldOf(r), &thriftgen.TxnOpenException{Message: fmt.Sprintf(
				"Unlocking locks associated with transaction not permitted: lockid:%d belongs to txnid:%d and is "+
					"released by commit_txn or abort_txn", lockID, r.TxnID)}
		}
		err = s.store.Delete(ctx, r, true)
		if errors.Is(err, ErrChanged) && attempt < casAttempts {
			continue
		}
		if errors.Is(err, ErrNotFound) {
			s.eachCatalog(OpUnlock, r, ResultNoSuchLock)
			return Held{}, noSuchLock(lockID)
		}
		if err != nil {
			return Held{}, s.storeFailure(OpUnlock, r.catalogs(), err)
		}
		s.metrics.addActive(s.mode, -1)
		s.eachCatalog(OpUnlock, r, ResultOK)
		return heldOf(r), nil
	}
}

// Heartbeat keeps locks alive: the shim lock lockID (when it is a shim id) and
// every shim lock of transaction txnID (when not 0; HiveServer2 heartbeats a
// transaction with lockid 0). A shim id that names no live lock answers
// NoSuchLockException; a transaction without shim locks is not an error (its
// heartbeat is the default catalog's business).
func (s *Shim) Heartbeat(ctx context.Context, lockID, txnID int64) error {
	_, err := s.HeartbeatLinked(ctx, lockID, txnID)
	return err
}

// HeartbeatLinked is Heartbeat that also describes the lock lockID when it is
// a shim id: for a combined lock the caller heartbeats the default catalog's
// part (Held.LinkedLockID) too.
func (s *Shim) HeartbeatLinked(ctx context.Context, lockID, txnID int64) (Held, error) {
	var held Held
	if IsShimLockID(lockID) {
		r, err := s.touch(ctx, lockID, true)
		if err != nil {
			return Held{}, err
		}
		held = heldOf(r)
	}
	if txnID == 0 {
		return held, nil
	}
	ids, err := s.store.TxnLocks(ctx, txnID)
	if err != nil {
		return held, s.storeFailure(OpHeartbeat, nil, err)
	}
	for _, id := range ids {
		if id == lockID {
			continue
		}
		if _, err := s.touch(ctx, id, false); err != nil {
			return held, err
		}
	}
	return held, nil
}

// touch moves a lock's heartbeat to now and returns the record (nil when it
// was gone and need not exist).
func (s *Shim) touch(ctx context.Context, id int64, mustExist bool) (*Record, error) {
	for attempt := 0; ; attempt++ {
		r, err := s.store.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			if !mustExist {
				return nil, nil // released meanwhile; the sweep drops its index entry
			}
			s.metrics.event(OpHeartbeat, "unknown", s.mode, ResultNoSuchLock)
			return nil, noSuchLock(id)
		}
		if err != nil {
			return nil, s.storeFailure(OpHeartbeat, nil, err)
		}
		if attempt == 0 {
			s.noteHandoff(OpHeartbeat, r)
		}
		r.HeartbeatMs = s.now().UnixMilli()
		err = s.store.Update(ctx, r)
		if errors.Is(err, ErrChanged) && attempt < casAttempts {
			continue
		}
		if errors.Is(err, ErrNotFound) {
			if !mustExist {
				return nil, nil
			}
			s.eachCatalog(OpHeartbeat, r, ResultNoSuchLock)
			return nil, noSuchLock(id)
		}
		if err != nil {
			return nil, s.storeFailure(OpHeartbeat, r.catalogs(), err)
		}
		s.eachCatalog(OpHeartbeat, r, ResultOK)
		return r, nil
	}
}

// ReleaseTxn releases every shim lock of a transaction; the router calls it
// when commit_txn or abort_txn of the default catalog succeeded. A transaction
// without shim locks costs one index lookup.
func (s *Shim) ReleaseTxn(ctx context.Context, txnID int64) error {
	if txnID == 0 {
		return nil
	}
	ids, err := s.store.TxnLocks(ctx, txnID)
	if err != nil {
		return s.storeFailure(OpReleaseTxn, nil, err)
	}
	var firstErr error
	for _, id := range ids {
		r, err := s.store.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			firstErr = cmpErr(firstErr, s.storeFailure(OpReleaseTxn, nil, err))
			continue
		}
		if r.TxnID != txnID {
			continue // an index entry that does not match its record: leave it to the sweep
		}
		s.noteHandoff(OpReleaseTxn, r)
		err = s.store.Delete(ctx, r, false)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			firstErr = cmpErr(firstErr, s.storeFailure(OpReleaseTxn, r.catalogs(), err))
			continue
		}
		s.metrics.addActive(s.mode, -1)
		s.eachCatalog(OpReleaseTxn, r, ResultOK)
	}
	return firstErr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// Sweep expires locks whose heartbeats stopped longer than the timeout ago and
// tidies the store; the background loop calls it every SweepInterval. It also
// resynchronises the active-locks gauge.
func (s *Shim) Sweep(ctx context.Context) (SweepResult, error) {
	res, err := s.store.Sweep(ctx, s.now(), s.timeout)
	for _, r := range res.Expired {
		s.eachCatalog(OpCleanup, r, ResultExpired)
	}
	for _, r := range res.Orphans {
		s.eachCatalog(OpCleanup, r, ResultOrphan)
	}
	for i := 0; i < res.Foreign; i++ {
		s.metrics.event(OpCleanup, "unknown", s.mode, ResultOrphan)
	}
	if err != nil {
		return res, s.storeFailure(OpCleanup, nil, err)
	}
	s.metrics.setActive(s.mode, res.Active)
	if len(res.Expired) > 0 || len(res.Orphans) > 0 || res.Foreign > 0 || res.OrphanIndex > 0 {
		s.log.Info("synthetic lock sweep", "store", s.store.Describe(), "expired", len(res.Expired), "orphans", len(res.Orphans),
			"foreign_removed", res.Foreign, "orphan_index_entries", res.OrphanIndex, "empty_txn_folders", res.EmptyTxns,
			"active", res.Active)
	}
	for _, r := range res.Expired {
		s.log.Debug("synthetic lock expired", "lock", r.describe(), "owner", r.Owner)
	}
	return res, nil
}

func (s *Shim) sweepLoop() {
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), max(s.interval, time.Minute))
			if _, err := s.Sweep(ctx); err != nil {
				s.log.Warn("synthetic lock sweep failed; expired locks stay until the next sweep", "err", err)
			}
			cancel()
		}
	}
}
