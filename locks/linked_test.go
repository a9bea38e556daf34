package locks

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// A combined lock keeps the default catalog's part in its record, in either
// store, and the router learns it at every step: check, heartbeat, unlock.
func TestLinkedLocks(t *testing.T) {
	stores := map[string]func(t *testing.T) Store{
		"in-memory": func(*testing.T) Store { return NewMemoryStore() },
		"zookeeper": func(t *testing.T) Store { return newZKStore(t, zkOptions(t, zooKeeperAddr(t))) },
	}
	for name, mk := range stores {
		t.Run(name, func(t *testing.T) {
			if name == "zookeeper" && testing.Short() {
				t.Skip("needs ZooKeeper")
			}
			st := mk(t)
			s := newShim(t, st, RulesHive3)
			ctx := context.Background()
			part1 := []byte("the default catalog's part")

			// a lock without a transaction, linked
			resp, err := s.LockLinked(ctx, part1, part("cat2", lockReq(0, comp(SR, opSelect, "sales", "orders", ""))))
			if err != nil || resp.State != thriftgen.LockState_ACQUIRED {
				t.Fatalf("lock: %v %v", resp, err)
			}
			id := resp.Lockid
			_, held, err := s.Check(ctx, id)
			if err != nil || !bytes.Equal(held.LinkedRequest, part1) || held.LinkedLockID != 0 || held.Catalogs[0] != "cat2" {
				t.Fatalf("check: %+v %v", held, err)
			}
			if got, err := s.Link(ctx, id, 17); err != nil || got != 17 {
				t.Fatalf("link: %v %v", got, err)
			}
			// a second link (a check through another instance) keeps the first
			if got, err := s.Link(ctx, id, 18); err != nil || got != 17 {
				t.Fatalf("second link: %v %v, want the first id 17", got, err)
			}
			if held, err := s.HeartbeatLinked(ctx, id, 0); err != nil || held.LinkedLockID != 17 {
				t.Fatalf("heartbeat: %+v %v", held, err)
			}
			if held, err := s.UnlockLinked(ctx, id); err != nil || held.LinkedLockID != 17 {
				t.Fatalf("unlock: %+v %v", held, err)
			}
			if _, err := s.Link(ctx, id, 19); !isNoSuchLock(err) {
				t.Fatalf("link after unlock: %v", err)
			}

			// a lock of the shim alone cannot be linked
			plain := mustLock(t, s, part("cat2", lockReq(0, comp(SR, opSelect, "sales", "x", ""))))
			var me *thriftgen.MetaException
			if _, err := s.Link(ctx, plain.Lockid, 5); !errors.As(err, &me) {
				t.Fatalf("link of a plain lock: %v", err)
			}

			// Discard removes a granted lock of a transaction, which unlock may not
			txnLock := mustLock(t, s, part("cat2", lockReq(42, comp(EX, opInsert, "sales", "y", ""))))
			var open *thriftgen.TxnOpenException
			if err := s.Unlock(ctx, txnLock.Lockid); !errors.As(err, &open) {
				t.Fatalf("unlock of a txn lock: %v", err)
			}
			if err := s.Discard(ctx, txnLock.Lockid); err != nil {
				t.Fatal(err)
			}
			if _, err := s.CheckLock(ctx, txnLock.Lockid); !isNoSuchLock(err) {
				t.Fatalf("check after discard: %v", err)
			}
			if err := s.Discard(ctx, txnLock.Lockid); err != nil {
				t.Fatalf("discard of a gone lock: %v", err)
			}
			if ids, err := st.TxnLocks(ctx, 42); err != nil || len(ids) != 0 {
				t.Fatalf("index of txn 42 after discard: %v %v", ids, err)
			}
		})
	}
}

func isNoSuchLock(err error) bool {
	var nsl *thriftgen.NoSuchLockException
	return errors.As(err, &nsl)
}
