// The ZOOKEEPER store's expiry sweep: records past their heartbeat, orphaned
// pending records and their markers, stale transaction index entries.

package locks

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"
)

// Sweep removes expired records (by last heartbeat; foreign nodes by
// modification time), records of lost creations, orphan index entries and
// empty transaction folders. Deletions are versioned: a heartbeat that lands
// during the sweep keeps its lock.
func (z *ZooKeeperStore) Sweep(ctx context.Context, now time.Time, timeout time.Duration) (SweepResult, error) {
	var res SweepResult
	epoch, err := z.init(ctx)
	if err != nil {
		return res, err
	}
	cutoff := now.Add(-timeout).UnixMilli()
	seqs, err := z.children(ctx)
	if err != nil {
		return res, z.fail("sweep", err)
	}
	z.lostMu.Lock()
	lost := make(map[string]bool, len(z.lost))
	for t, at := range z.lost {
		if now.Sub(at) > 2*timeout {
			delete(z.lost, t) // long gone or never created
			continue
		}
		lost[t] = true
	}
	z.lostMu.Unlock()
	alive := map[int64]bool{}
	var firstErr error
	records := z.readAll(ctx, epoch, seqs)
	// The markers are listed after the records were read: a record created
	// since has its marker too (one multi-operation), and one answered since
	// has a new version, which the versioned delete below refuses.
	var markers []string
	err = z.call(ctx, true, func(int) error {
		var err error
		markers, _, err = z.conn.Children(z.pendingPath)
		return err
	})
	if err != nil {
		return res, z.fail("sweep", err)
	}
	live := make(map[string]bool, len(markers))
	for _, m := range markers {
		live[m] = true
	}
	for i, rr := range records {
		if rr.gone {
			continue
		}
		if rr.err != nil {
			if firstErr == nil {
				firstErr = rr.err
			}
			continue
		}
		p := z.lockPath(seqs[i])
		switch {
		case !rr.ok && rr.stat.Mtime < cutoff:
			if z.deleteVersioned(ctx, p, rr.stat.Version) {
				res.Foreign++
			}
		case !rr.ok:
			// a live node of another format: not ours to judge
		case rr.rec.pendingStored && rr.rec.Token != "" && !live[rr.rec.Token] && !lost[rr.rec.Token]:
			if z.deleteVersioned(ctx, p, rr.rec.version) {
				res.Orphans = append(res.Orphans, rr.rec)
				if rr.rec.TxnID != 0 {
					z.deleteIndex(ctx, rr.rec.TxnID, rr.rec.ID)
				}
			} else {
				alive[rr.rec.ID] = true
				res.Active++
			}
		case rr.rec.HeartbeatMs < cutoff || (rr.rec.Token != "" && lost[rr.rec.Token]):
			if z.deleteVersioned(ctx, p, rr.rec.version) {
				res.Expired = append(res.Expired, rr.rec)
				if rr.rec.TxnID != 0 {
					z.deleteIndex(ctx, rr.rec.TxnID, rr.rec.ID)
				}
				if rr.rec.pendingStored && rr.rec.Token != "" {
					z.deleteMarker(ctx, rr.rec.Token)
				}
				z.lostMu.Lock()
				delete(z.lost, rr.rec.Token)
				z.lostMu.Unlock()
			} else {
				alive[rr.rec.ID] = true
				res.Active++
			}
		default:
			alive[rr.rec.ID] = true
			res.Active++
		}
	}
	if err := z.sweepIndex(ctx, epoch, alive, &res); err != nil && firstErr == nil {
		firstErr = err
	}
	if firstErr != nil {
		return res, z.fail("sweep", firstErr)
	}
	return res, nil
}

// deleteMarker removes the pending marker of a record removed by the sweep
// (a lost creation of this instance keeps its marker until its session ends).
func (z *ZooKeeperStore) deleteMarker(ctx context.Context, token string) {
	_ = z.call(ctx, true, func(int) error {
		err := z.conn.Delete(z.markerPath(token), -1)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
}

// deleteVersioned deletes a node if unchanged; false when it changed or a failure kept it.
func (z *ZooKeeperStore) deleteVersioned(ctx context.Context, p string, version int32) bool {
	err := z.call(ctx, true, func(attempt int) error {
		err := z.conn.Delete(p, version)
		if attempt > 0 && errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
	return err == nil
}

// sweepIndex removes index entries whose lock is gone and empty transaction folders.
func (z *ZooKeeperStore) sweepIndex(ctx context.Context, epoch uint32, alive map[int64]bool, res *SweepResult) error {
	var txns []string
	err := z.call(ctx, true, func(int) error {
		var err error
		txns, _, err = z.conn.Children(z.txnsPath)
		return err
	})
	if err != nil {
		return err
	}
	for _, txn := range txns {
		folder := z.txnsPath + "/" + txn
		var entries []string
		err := z.call(ctx, true, func(int) error {
			var err error
			entries, _, err = z.conn.Children(folder)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		left := len(entries)
		for _, e := range entries {
			id, perr := strconv.ParseInt(e, 10, 64)
			if perr == nil && alive[id] {
				continue
			}
			if perr == nil {
				// a lock created after the listing above is written before its entry: ask once more
				if ep, seq, ok := splitID(id); ok && ep == epoch && seq <= 1<<31-1 {
					var exists bool
					if err := z.call(ctx, true, func(int) error {
						var err error
						exists, _, err = z.conn.Exists(z.lockPath(seq))
						return err
					}); err != nil {
						return err
					}
					if exists {
						continue
					}
				}
			}
			if z.deleteVersioned(ctx, folder+"/"+e, -1) {
				res.OrphanIndex++
				left--
			}
		}
		if left == 0 {
			err := z.call(ctx, true, func(int) error { return z.conn.Delete(folder, -1) })
			if err == nil {
				res.EmptyTxns++
			} else if !errors.Is(err, zk.ErrNotEmpty) && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
		}
	}
	return nil
}
