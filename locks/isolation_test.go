package locks

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// counterRun has writers spread over two shims each take an EXCLUSIVE lock on
// one table of a non-default catalog (what HiveServer2 takes for an INSERT
// into a non-ACID table, and Iceberg for a commit), read a shared value, pause,
// and write it back incremented: a lost update shows up as a final value below
// writers*rounds. It returns the final value and the most holders seen at once.
func counterRun(t *testing.T, shims [2]*Shim, writers, rounds int) (final, maxHolders int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		value   atomic.Int64 // the shared state: loads and stores are atomic, the increment only under the lock
		holders atomic.Int32
		most    atomic.Int32
		wg      sync.WaitGroup
		errs    = make(chan error, writers)
	)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := shims[w%2]
			for r := 0; r < rounds; r++ {
				txn := int64(0) // odd rounds: no transaction, released by unlock (Iceberg, Spark)
				if r%2 == 0 {
					txn = int64(1000*(w+1) + r) // even rounds: a txn of the default catalog (HiveServer2)
				}
				req := lockReq(txn, comp(EX, opInsert, "sales", "orders", ""))
				resp, err := s.Lock(ctx, part("cat2", req))
				if err != nil {
					errs <- fmt.Errorf("writer %d lock: %w", w, err)
					return
				}
				for resp.State == thriftgen.LockState_WAITING { // the client's check_lock loop
					time.Sleep(5 * time.Millisecond)
					if resp, err = shims[(w+r)%2].CheckLock(ctx, resp.Lockid); err != nil {
						errs <- fmt.Errorf("writer %d check_lock: %w", w, err)
						return
					}
				}
				if resp.State != thriftgen.LockState_ACQUIRED {
					errs <- fmt.Errorf("writer %d: lock state %v", w, resp.State)
					return
				}
				n := holders.Add(1)
				for old := most.Load(); n > old && !most.CompareAndSwap(old, n); old = most.Load() {
				}
				v := value.Load()
				time.Sleep(3 * time.Millisecond) // the writer's work between reading and writing
				value.Store(v + 1)
				holders.Add(-1)
				if txn != 0 {
					err = s.ReleaseTxn(ctx, txn) // commit_txn in the default catalog
				} else {
					err = s.Unlock(ctx, resp.Lockid)
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d release: %w", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return int(value.Load()), int(most.Load())
}

func TestWritersAreSerialized(t *testing.T) {
	const writers, rounds = 6, 5
	for _, sp := range storePairs(t) {
		t.Run(sp.name, func(t *testing.T) {
			a := newShim(t, sp.a, RulesHive4, withInstance("a"))
			b := newShim(t, sp.b, RulesHive4, withInstance("b"))
			final, most := counterRun(t, [2]*Shim{a, b}, writers, rounds)
			if final != writers*rounds || most != 1 {
				t.Fatalf("final value %d (want %d), at most %d holders at once (want 1): writers were not serialized",
					final, writers*rounds, most)
			}
			left, err := sp.a.List(context.Background(), 0)
			if err != nil || len(left) != 0 {
				t.Fatalf("locks left after every writer released: %d %v", len(left), err)
			}
		})
	}
}

// TestGrantAtOnceLosesUpdates is the same run with isolation off (the Java
// proxy's shim): it must lose updates, or the test above proves nothing.
func TestGrantAtOnceLosesUpdates(t *testing.T) {
	const writers, rounds = 6, 5
	for _, sp := range storePairs(t) {
		t.Run(sp.name, func(t *testing.T) {
			a := newShim(t, sp.a, RulesHive4, grantAtOnce())
			b := newShim(t, sp.b, RulesHive4, grantAtOnce())
			final, most := counterRun(t, [2]*Shim{a, b}, writers, rounds)
			if final >= writers*rounds || most < 2 {
				t.Fatalf("without isolation: final value %d of %d, at most %d holders: expected lost updates",
					final, writers*rounds, most)
			}
			t.Logf("without isolation: %d of %d updates kept, up to %d writers at once", final, writers*rounds, most)
		})
	}
}
