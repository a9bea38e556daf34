package cachesync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hms-proxy/hms-proxy/router/dbcache"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// metastore is the shared truth the replicas' caches load from: databases
// of two catalogs (what a real metastore answers is not the point here: the
// router's e2e tests cover that; this is whether a replica's cache lets a
// dropped database come back).
type metastore struct {
	mu  sync.Mutex
	dbs map[string]string // catalog/db -> description
}

func (m *metastore) get(catalog, db string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.dbs[catalog+"/"+db]
	return v, ok
}

func (m *metastore) set(catalog, db, v string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v == "" {
		delete(m.dbs, catalog+"/"+db)
	} else {
		m.dbs[catalog+"/"+db] = v
	}
}

// replica is one proxy's cache and its Sync.
type replica struct {
	name  string
	cache *dbcache.Cache
	sync  *Sync
	reg   *prometheus.Registry
	ms    *metastore
	loads int
	mu    sync.Mutex
}

func newReplica(t *testing.T, name, zkAddr string, ms *metastore, withSync bool) *replica {
	t.Helper()
	r := &replica{name: name, ms: ms, reg: prometheus.NewRegistry()}
	var err error
	r.cache, err = dbcache.New(dbcache.Options{Metadata: dbcache.CacheOptions{TTL: time.Hour, SharedAcrossUsers: true},
		List: dbcache.CacheOptions{TTL: time.Hour, SharedAcrossUsers: true}, Metrics: dbcache.NewMetrics(r.reg)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.cache.Close)
	if withSync {
		r.sync, err = New(Options{ConnectString: zkAddr, Znode: "/epochs-" + t.Name(), SessionTimeout: 10 * time.Second,
			Catalogs: []string{"catalog1", "catalog2"}, Target: r.cache, ID: name, Metrics: NewMetrics(r.reg)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.sync.Close() })
	}
	return r
}

// getDatabase is a get_database through the replica's cache: "" when the
// database does not exist (never cached, as NoSuchObjectException is not).
func (r *replica) getDatabase(t *testing.T, catalog, db string) string {
	t.Helper()
	val, _, err := r.cache.Get(context.Background(), dbcache.DatabaseMetadata,
		dbcache.Key{Catalog: catalog, Name: db}, nil, func(context.Context) ([]byte, bool, error) {
			r.mu.Lock()
			r.loads++
			r.mu.Unlock()
			v, ok := r.ms.get(catalog, db)
			return []byte(v), ok, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return string(val)
}

// write is a database write through the replica: the backend changes, the
// replica invalidates its own cache (as the router does), then bumps.
func (r *replica) write(t *testing.T, catalog, db, v string) {
	t.Helper()
	r.ms.set(catalog, db, v)
	r.cache.InvalidateDatabase(catalog, db)
	if err := r.sync.Bump(context.Background(), catalog); err != nil {
		t.Fatal(err)
	}
}

func (r *replica) epochInvalidations(catalog string) float64 {
	return testutil.ToFloat64(r.sync.o.Metrics.invalidations.WithLabelValues(catalog, ReasonEpochChanged))
}

// waitWatching waits until every replica has read both epochs once.
func waitWatching(t *testing.T, rs ...*replica) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for _, r := range rs {
		for {
			r.sync.mu.Lock()
			a := r.sync.armed["catalog1"]
			b := r.sync.armed["catalog2"]
			r.sync.mu.Unlock()
			if a && b {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: epochs not read within 2 minutes (%s)", r.name, r.sync.Describe())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestDroppedDatabaseNeverComesBackOnAnotherReplica(t *testing.T) {
	z := testbed.StartZooKeeperT(t)
	ms := &metastore{dbs: map[string]string{"catalog1/sales": "v1", "catalog2/sales": "c2"}}
	a := newReplica(t, "A", z.Addr, ms, true)
	b := newReplica(t, "B", z.Addr, ms, true)
	c := newReplica(t, "C", z.Addr, ms, true)
	plain := newReplica(t, "no-zookeeper", z.Addr, ms, false) // the control: TTL only
	waitWatching(t, a, b, c)

	for _, r := range []*replica{a, b, c, plain} {
		if got := r.getDatabase(t, "catalog1", "sales"); got != "v1" {
			t.Fatalf("%s: get_database(sales)=%q, want v1", r.name, got)
		}
		r.getDatabase(t, "catalog2", "sales")
	}

	// alter through A: B and C see the new version on their next read.
	a.write(t, "catalog1", "sales", "v2")
	for _, r := range []*replica{b, c} {
		window(t, func() bool { return r.getDatabase(t, "catalog1", "sales") == "v2" })
	}
	// drop through B, read at once from A and C, as a client that moved.
	var lat []time.Duration
	for i := 0; i < 20; i++ {
		db := fmt.Sprintf("tmp%d", i)
		ms.set("catalog1", db, "x")
		a.getDatabase(t, "catalog1", db)
		c.getDatabase(t, "catalog1", db)
		b.write(t, "catalog1", db, "")
		for _, r := range []*replica{a, c} {
			lat = append(lat, window(t, func() bool { return r.getDatabase(t, "catalog1", db) == "" }))
		}
	}
	if got := plain.getDatabase(t, "catalog1", "sales"); got != "v1" {
		t.Errorf("the replica without ZooKeeper should still serve its cached v1 until the TTL (the test's control), got %q", got)
	}
	// Each bump invalidates once at most (two bumps between one event and
	// the next arming count once); catalog2 was never touched.
	if n := a.epochInvalidations("catalog1"); n < 1 || n > 21 {
		t.Errorf("A: %v epoch invalidations of catalog1, want 1..21", n)
	}
	if n := b.epochInvalidations("catalog2") + c.epochInvalidations("catalog2"); n != 0 {
		t.Errorf("catalog2 was invalidated %v times, want 0", n)
	}
	if got := b.getDatabase(t, "catalog2", "sales"); got != "c2" {
		t.Errorf("catalog2/sales: %q", got)
	}
	b.mu.Lock()
	loads := b.loads
	b.mu.Unlock()
	if b.getDatabase(t, "catalog2", "sales"); b.loads != loads {
		t.Errorf("B's catalog2 entries were dropped by catalog1's writes")
	}
	slices.Sort(lat)
	t.Logf("stale window after a drop through B, as seen by A and C: median %v, max %v (all: %v)", lat[len(lat)/2], lat[len(lat)-1], lat)
}

func TestConcurrentWritersEachInvalidateTheOther(t *testing.T) {
	z := testbed.StartZooKeeperT(t)
	ms := &metastore{dbs: map[string]string{}}
	a := newReplica(t, "A", z.Addr, ms, true)
	b := newReplica(t, "B", z.Addr, ms, true)
	c := newReplica(t, "C", z.Addr, ms, true)
	waitWatching(t, a, b, c)
	var wg sync.WaitGroup
	for _, r := range []*replica{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				if err := r.sync.Bump(context.Background(), "catalog1"); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	// Every version after the other's counts for C; A and B each saw at least
	// one of the other's bumps (they interleave, and a coalesced watch still
	// counts once).
	eventually(t, func() error {
		if a.epochInvalidations("catalog1") < 1 || b.epochInvalidations("catalog1") < 1 || c.epochInvalidations("catalog1") < 1 {
			return fmt.Errorf("remote invalidations A=%v B=%v C=%v", a.epochInvalidations("catalog1"),
				b.epochInvalidations("catalog1"), c.epochInvalidations("catalog1"))
		}
		return nil
	})
}

func TestLostSessionInvalidatesEverythingAndPendingBumpsAreWrittenLater(t *testing.T) {
	z := testbed.StartZooKeeperT(t)
	ms := &metastore{dbs: map[string]string{"catalog1/sales": "v1", "catalog2/hr": "h1"}}
	a := newReplica(t, "A", z.Addr, ms, true)
	b := newReplica(t, "B", z.Addr, ms, true)
	waitWatching(t, a, b)
	b.getDatabase(t, "catalog1", "sales")
	b.getDatabase(t, "catalog2", "hr")
	if n := b.cache.Len(dbcache.DatabaseMetadata); n != 2 {
		t.Fatalf("B holds %d entries, want 2", n)
	}
	if err := z.Stop(); err != nil {
		t.Fatal(err)
	}
	// B drops everything when the connection goes (it can miss bumps now).
	eventually(t, func() error {
		if n := b.cache.Len(dbcache.DatabaseMetadata); n != 0 {
			return fmt.Errorf("B still holds %d entries with ZooKeeper down", n)
		}
		return nil
	})
	// A writes while ZooKeeper is down: the bump fails, is kept, and is
	// written when ZooKeeper is back.
	ms.set("catalog1", "sales", "v2")
	a.cache.InvalidateDatabase("catalog1", "sales")
	a.sync.o.BumpTimeout = 300 * time.Millisecond
	if err := a.sync.Bump(context.Background(), "catalog1"); err == nil {
		t.Fatal("a bump with ZooKeeper stopped succeeded")
	} else if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, zk.ErrNoServer) && !errors.Is(err, zk.ErrConnectionClosed) {
		t.Logf("bump error: %v", err)
	}
	if st := a.sync.Status(); len(st.Pending) != 1 || st.Connected {
		t.Fatalf("A status with ZooKeeper down: %+v", st)
	}
	// Meanwhile B caches again (entries loaded during the outage live up
	// to their TTL at worst).
	b.getDatabase(t, "catalog2", "hr")
	if err := z.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if st := a.sync.Status(); len(st.Pending) != 0 || !st.Connected {
			return fmt.Errorf("A status after ZooKeeper came back: %+v", st)
		}
		if n := b.cache.Len(dbcache.DatabaseMetadata); n != 0 {
			return fmt.Errorf("B holds %d entries after the reconnect, want 0", n)
		}
		return nil
	})
	if got := b.getDatabase(t, "catalog1", "sales"); got != "v2" {
		t.Errorf("B after the outage: %q, want v2", got)
	}
	lost := testutil.ToFloat64(b.sync.o.Metrics.invalidations.WithLabelValues("all", ReasonSessionLost))
	back := testutil.ToFloat64(b.sync.o.Metrics.invalidations.WithLabelValues("all", ReasonReconnected))
	if lost < 1 || back < 1 { // a restarting server may take a session twice
		t.Errorf("B session invalidations: lost=%v reconnected=%v, want at least 1 each", lost, back)
	}
	if n := testutil.ToFloat64(a.sync.o.Metrics.bumps.WithLabelValues("catalog1", "error")); n < 1 {
		t.Errorf("A's failed bump not counted")
	}
}

func TestOptionsAreChecked(t *testing.T) {
	for _, cs := range []string{"", "zk1", "zk1:99999", "zk1:2181/", "zk1:2181/a//b"} {
		if _, err := New(Options{ConnectString: cs}); err == nil && cs != "zk1:2181/" {
			t.Errorf("connect string %q accepted", cs)
		}
	}
	if _, err := New(Options{ConnectString: "127.0.0.1:1", Znode: "relative"}); err == nil {
		t.Error("relative znode accepted")
	}
}

// window returns how long after the write a replica still answered from its
// stale entry: it asks until fresh() holds, at most a minute (a missed
// invalidation would wait for the TTL, an hour; the bound only has to tell
// the two apart, on however slow a machine).
func window(t *testing.T, fresh func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !fresh() {
		if time.Since(start) > time.Minute {
			t.Fatalf("a replica still serves the value from before the write a minute later (the TTL is an hour): the invalidation was lost")
		}
		time.Sleep(50 * time.Microsecond)
	}
	return time.Since(start)
}

// eventually waits for an event (f returns nil), bounded generously: a
// ZooKeeper restarted on a loaded machine takes a JVM start and a
// reconnection with back-off (30 s was lost there).
func eventually(t *testing.T, f func() error) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
