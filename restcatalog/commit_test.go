package restcatalog_test

import (
	"fmt"

	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// createTable makes a namespace (under a temp location) and one table in
// it through REST, returning the namespace.
func (e *env) createTable(t *testing.T, prefix, nsPrefix, table string) string {
	t.Helper()
	ns := uniq(nsPrefix)
	if a := e.do("POST", "/v1/"+prefix+"/namespaces", map[string]any{"namespace": []string{ns}, "properties": map[string]string{"location": "file:" + t.TempDir() + "/" + ns}}); a.Status != 200 {
		t.Fatalf("create namespace: %d %s", a.Status, a.Body)
	}
	if a := e.do("POST", "/v1/"+prefix+"/namespaces/"+ns+"/tables", map[string]any{"name": table, "schema": simpleSchema}); a.Status != 200 {
		t.Fatalf("create table: %d %s", a.Status, a.Body)
	}
	return ns
}

// hammer runs writers concurrent committers on one table, alternating
// between the two REST handlers, each adding its own properties and
// retrying its 409s on fresh metadata (bounded); it returns the keys the
// server acknowledged and the final properties.
func hammer(t *testing.T, e *env, path string, writers, commits int, handlers int) ([]string, map[string]any, int) {
	t.Helper()
	var mu sync.Mutex
	var acked []string
	conflicts := 0
	var wg sync.WaitGroup
	deadline := time.Now().Add(90 * time.Second)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			base := e.url
			if handlers > 1 && w%2 == 1 {
				base = e.url2
			}
			for c := 0; c < commits; c++ {
				key := fmt.Sprintf("w%d_c%d", w, c)
				for try := 0; try < 40 && time.Now().Before(deadline); try++ {
					cur := e.doAt(base, "GET", path, nil)
					if cur.Status != 200 {
						t.Errorf("load: %d %s", cur.Status, cur.Body)
						return
					}
					uuid := cur.json(t)["metadata"].(map[string]any)["table-uuid"]
					a := e.doAt(base, "POST", path, map[string]any{
						"requirements": []any{map[string]any{"type": "assert-table-uuid", "uuid": uuid}},
						"updates":      []any{map[string]any{"action": "set-properties", "updates": map[string]string{key: "x"}}},
					})
					if a.Status == 200 {
						mu.Lock()
						acked = append(acked, key)
						mu.Unlock()
						break
					}
					if a.Status != 409 {
						t.Errorf("commit %s: %d %s", key, a.Status, a.Body)
						return
					}
					mu.Lock()
					conflicts++
					mu.Unlock()
				}
			}
		}(w)
	}
	wg.Wait()
	final := e.do("GET", path, nil).json(t)["metadata"].(map[string]any)["properties"].(map[string]any)
	return acked, final, conflicts
}

// Concurrent writers whose commits read the same base: every acknowledged
// commit survives. On the default catalog the per-table queue and the
// metastore lock serialize them; through two REST handlers (two proxies'
// queues) on hive4 (Hive 4.1.0, locks off) the metastore's compare-and-swap
// of metadata_location does. (Locks off on a Hive 3.1.3 catalog, which has
// no such compare, is refused by the configuration.)
func TestConcurrentCommitsLoseNothing(t *testing.T) {
	cases := []struct {
		name     string
		props    map[string]string
		prefix   string
		handlers int
	}{
		// One handler: the test bed's Derby metastores run with one pooled
		// connection (datanucleus.connectionPool.maxPoolSize=1, which Hive's
		// TxnHandler shares), and concurrent lock/check_lock calls there
		// stall 30 s on the pool. The metastore lock against another writer
		// is TestCommitWaitsForAnotherWritersLock.
		{"catalog1-lock", nil, "catalog1", 1},
		{"hive4-cas", map[string]string{"catalog.hive4.conf.iceberg.engine.hive.lock-enabled": "false"}, "hive4", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.props, nil)
			e.setIsolated(tc.prefix, true)
			prefix := tc.prefix
			ns := e.createTable(t, prefix, "cc", "counter")
			acked, final, conflicts := hammer(t, e, "/v1/"+prefix+"/namespaces/"+ns+"/tables/counter", 4, 3, tc.handlers)
			lost := 0
			for _, k := range acked {
				if final[k] != "x" {
					lost++
					t.Errorf("acknowledged commit %s lost: final properties %v", k, final)
				}
			}
			if len(acked) != 12 {
				t.Errorf("%d of 12 commits acknowledged", len(acked))
			}
			t.Logf("%s: %d commits acknowledged, %d conflicts answered 409 and retried, %d acknowledged commits lost", tc.name, len(acked), conflicts, lost)
		})
	}
}

// A Hive 3.1.3 catalog other than the default, with writes allowed: commits
// take the table's lock through the router, which the synthetic lock shim
// serves (check_lock and unlock of its lock ids go to the shim, never to a
// metastore). Serial commits all succeed; concurrent ones each succeed or
// answer 409, and no acknowledged commit is lost.
func TestNonDefaultHive3CatalogLocks(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.setIsolated("catalog2", true)
	ns := e.createTable(t, "catalog2", "lk", "t")
	path := "/v1/catalog2/namespaces/" + ns + "/tables/t"
	for i := 0; i < 3; i++ {
		a := e.do("POST", path, map[string]any{"requirements": []any{},
			"updates": []any{map[string]any{"action": "set-properties", "updates": map[string]string{fmt.Sprintf("s%d", i): "y"}}}})
		if a.Status != 200 {
			t.Fatalf("serial commit %d: %d %s", i, a.Status, a.Body)
		}
	}
	var wg sync.WaitGroup
	answers := make([]answer, 4)
	for i := range answers {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			answers[i] = e.do("POST", path, map[string]any{"requirements": []any{},
				"updates": []any{map[string]any{"action": "set-properties", "updates": map[string]string{fmt.Sprintf("p%d", i): "y"}}}})
		}(i)
	}
	wg.Wait()
	final := e.do("GET", path, nil).json(t)["metadata"].(map[string]any)["properties"].(map[string]any)
	for i, a := range answers {
		if a.Status == 200 && final[fmt.Sprintf("p%d", i)] != "y" {
			t.Errorf("acknowledged commit p%d lost", i)
		}
		if a.Status != 200 && a.Status != 409 {
			t.Errorf("commit p%d: %d %s", i, a.Status, a.Body)
		}
	}
}

// A writer outside the proxy holds the table's metastore lock (as Spark's
// HiveCatalog would while committing): a REST commit waits, polling
// check_lock, and completes once that lock is released.
func TestCommitWaitsForAnotherWritersLock(t *testing.T) {
	// The second commit also sets the table's engine.hive.lock-enabled=false:
	// a Hive 3.1.3 metastore has no compare-and-swap to fall back on, so the
	// commit locks all the same.
	for i, props := range []map[string]string{{"after": "lock"}, {"after": "lock", "engine.hive.lock-enabled": "false"}} {
		t.Run(fmt.Sprint(props), func(t *testing.T) {
			e := newEnv(t, nil, nil)
			ns := e.createTable(t, "catalog1", fmt.Sprintf("ow%d", i), "t")
			hms := direct(t, hms1)
			tbl := "t"
			held, err := hms.Lock(tctx(t), &thriftgen.LockRequest{
				Component: []*thriftgen.LockComponent{{Type: thriftgen.LockType_EXCLUSIVE, Level: thriftgen.LockLevel_TABLE, Dbname: ns, Tablename: &tbl}},
				User:      "spark", Hostname: "elsewhere",
			})
			if err != nil || held.State != thriftgen.LockState_ACQUIRED {
				t.Fatalf("outside lock: %v %v", err, held)
			}
			done := make(chan answer, 1)
			go func() {
				done <- e.do("POST", "/v1/catalog1/namespaces/"+ns+"/tables/t", map[string]any{"requirements": []any{},
					"updates": []any{map[string]any{"action": "set-properties", "updates": props}}})
			}()
			select {
			case a := <-done:
				t.Fatalf("commit went through while another writer held the lock: %d %s", a.Status, a.Body)
			case <-time.After(3 * time.Second):
			}
			if err := hms.Unlock(tctx(t), &thriftgen.UnlockRequest{Lockid: held.Lockid}); err != nil {
				t.Fatal(err)
			}
			select {
			case a := <-done:
				if a.Status != 200 {
					t.Fatalf("commit after the lock was released: %d %s", a.Status, a.Body)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("commit still waiting 60 s after the lock was released")
			}
		})
	}
}
