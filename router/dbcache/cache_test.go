package dbcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }
func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var quiet = slog.New(slog.DiscardHandler)

func mustCache(t *testing.T, o Options) *Cache {
	t.Helper()
	if o.Log == nil {
		o.Log = quiet
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// counting is a loader that answers body and counts its calls.
type counting struct {
	calls atomic.Int32
	body  func(n int32) []byte
	err   error
}

func (l *counting) load(context.Context) ([]byte, bool, error) {
	n := l.calls.Add(1)
	if l.err != nil {
		return nil, false, l.err
	}
	return l.body(n), true, nil
}

func fixed(s string) *counting {
	return &counting{body: func(int32) []byte { return []byte(s) }}
}

func get(t *testing.T, c *Cache, kind Kind, k Key, l Loader) (string, Outcome) {
	t.Helper()
	out, o, err := c.Get(context.Background(), kind, k, nil, l)
	if err != nil {
		t.Fatalf("Get %+v: %v", k, err)
	}
	return string(out), o
}

func TestThousandConcurrentIdenticalLoadsMakeOneBackendLoad(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := mustCache(t, Options{Metadata: CacheOptions{TTL: time.Minute, SharedAcrossUsers: true}, Metrics: NewMetrics(reg)})
	const n = 1000
	var entered atomic.Int32
	var loads atomic.Int32
	load := func(context.Context) ([]byte, bool, error) {
		loads.Add(1)
		for entered.Load() < n { // every caller is inside Get before the load answers
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		return []byte("database sales"), true, nil
	}
	var wg sync.WaitGroup
	outs := make([][]byte, n)
	outcomes := make([]Outcome, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			entered.Add(1)
			out, o, err := c.Get(context.Background(), DatabaseMetadata, Key{Catalog: "catalog1", Name: "sales", User: fmt.Sprint("u", i)}, nil, load)
			if err != nil {
				t.Error(err)
			}
			outs[i], outcomes[i] = out, o
		}()
	}
	wg.Wait()
	if loads.Load() != 1 {
		t.Fatalf("%d backend loads for %d concurrent identical reads, want 1", loads.Load(), n)
	}
	misses := 0
	for i := range outs {
		if string(outs[i]) != "database sales" {
			t.Fatalf("caller %d got %q", i, outs[i])
		}
		if outcomes[i] == Miss {
			misses++
		}
	}
	if misses != 1 {
		t.Errorf("%d callers report Miss, want 1 (the one that loaded)", misses)
	}
	m := c.m
	if hit, miss := testutil.ToFloat64(m.requests.WithLabelValues("database_metadata", "catalog1", "hit")),
		testutil.ToFloat64(m.requests.WithLabelValues("database_metadata", "catalog1", "miss")); hit != n-1 || miss != 1 {
		t.Errorf("requests: %v hits, %v misses; want %d and 1", hit, miss, n-1)
	}
}

func TestCallersGetCopiesTheCacheKeepsItsOwn(t *testing.T) {
	c := mustCache(t, Options{List: CacheOptions{TTL: time.Minute}})
	buf := []byte("db1,db2")
	load := func(context.Context) ([]byte, bool, error) { return buf, true, nil }
	k := Key{Catalog: "c", Name: ListName("get_all_databases", "")}
	out, _, _ := c.Get(context.Background(), DatabaseList, k, []byte("prefix:"), load)
	if string(out) != "prefix:db1,db2" {
		t.Fatalf("Get appends to dst: %q", out)
	}
	copy(buf, "XXXXXXX")  // the router reuses its reply buffer
	out[len(out)-1] = '!' // a caller scribbles on its answer
	again, o := get(t, c, DatabaseList, k, load)
	if again != "db1,db2" || o != Hit {
		t.Fatalf("cached bytes changed under the cache: %q (%v)", again, o)
	}
}

func TestTTLAndKeys(t *testing.T) {
	clk := newClock()
	c := mustCache(t, Options{Metadata: CacheOptions{TTL: 10 * time.Second}, Now: clk.now})
	l := &counting{body: func(n int32) []byte { return []byte(fmt.Sprint("v", n)) }}
	k := Key{Catalog: "catalog1", Name: "Sales", User: "alice"}
	if v, o := get(t, c, DatabaseMetadata, k, l.load); v != "v1" || o != Miss {
		t.Fatalf("%q %v", v, o)
	}
	clk.add(9 * time.Second)
	if v, o := get(t, c, DatabaseMetadata, Key{Catalog: "catalog1", Name: "sales", User: "alice"}, l.load); v != "v1" || o != Hit {
		t.Fatalf("names are case-insensitive, as in HMS: %q %v", v, o)
	}
	if _, o := get(t, c, DatabaseMetadata, Key{Catalog: "catalog1", Name: "sales", User: "bob"}, l.load); o != Miss {
		t.Fatalf("not shared across users: bob must not get alice's entry (%v)", o)
	}
	if _, o := get(t, c, DatabaseMetadata, Key{Catalog: "catalog2", Name: "sales", User: "alice"}, l.load); o != Miss {
		t.Fatalf("another catalog's sales is another entry (%v)", o)
	}
	clk.add(2 * time.Second)
	if v, o := get(t, c, DatabaseMetadata, k, l.load); o != Miss || v != "v4" {
		t.Fatalf("after the TTL: %q %v", v, o)
	}
	shared := mustCache(t, Options{Metadata: CacheOptions{TTL: 10 * time.Second, SharedAcrossUsers: true}, Now: clk.now})
	l2 := fixed("x")
	get(t, shared, DatabaseMetadata, Key{Catalog: "c", Name: "db", User: "alice"}, l2.load)
	if _, o := get(t, shared, DatabaseMetadata, Key{Catalog: "c", Name: "db", User: "bob"}, l2.load); o != Hit || l2.calls.Load() != 1 {
		t.Fatalf("shared across users: bob must hit alice's entry (%v, %d loads)", o, l2.calls.Load())
	}
}

// TestSlidingBatchExpiry: a scan loading one database every 4 s keeps the
// first entries of its batch alive (TTL 5 s) until it ends, at most 10 TTLs.
func TestSlidingBatchExpiry(t *testing.T) {
	clk := newClock()
	c := mustCache(t, Options{Metadata: CacheOptions{TTL: 5 * time.Second, SharedAcrossUsers: true},
		List: CacheOptions{TTL: 5 * time.Second, SharedAcrossUsers: true}, Now: clk.now})
	l := fixed("db")
	key := func(i int) Key { return Key{Catalog: "catalog1", Name: fmt.Sprint("db", i)} }
	list := Key{Catalog: "catalog1", Name: ListName("get_all_databases", "")}
	get(t, c, DatabaseList, list, l.load) // SHOW DATABASES, then one get_database per database
	for i := 0; i < 5; i++ {
		clk.add(4 * time.Second)
		get(t, c, DatabaseMetadata, key(i), l.load)
	}
	// 20 s after the list and 16 s after db0, both past their own TTL, are
	// still served: the scan's last load was 0 s ago.
	if _, o := get(t, c, DatabaseList, list, l.load); o != Hit {
		t.Errorf("the list loaded 20 s ago must live on while its batch does (%v)", o)
	}
	if _, o := get(t, c, DatabaseMetadata, key(0), l.load); o != Hit {
		t.Errorf("db0 loaded 16 s ago must live on while its batch does (%v)", o)
	}
	// Another catalog's scan does not extend catalog1's entries.
	clk.add(4 * time.Second)
	get(t, c, DatabaseMetadata, Key{Catalog: "catalog2", Name: "x"}, l.load)
	clk.add(2 * time.Second) // 6 s after catalog1's last load
	if _, o := get(t, c, DatabaseMetadata, key(4), l.load); o != Miss {
		t.Errorf("db4, 6 s after its batch's last load with a TTL of 5 s, must expire (%v)", o)
	}
	// The reload of db4 starts a new batch: it does not bring back db0.
	if _, o := get(t, c, DatabaseMetadata, key(0), l.load); o != Miss {
		t.Errorf("an expired entry came back when a new batch started (%v)", o)
	}

	// A scan that never ends keeps an entry at most 10 TTLs.
	clk2 := newClock()
	c2 := mustCache(t, Options{Metadata: CacheOptions{TTL: 5 * time.Second, SharedAcrossUsers: true}, Now: clk2.now})
	get(t, c2, DatabaseMetadata, Key{Catalog: "c", Name: "first"}, l.load)
	lived := time.Duration(0)
	for i := 0; i < 40; i++ {
		clk2.add(4 * time.Second)
		if _, o := get(t, c2, DatabaseMetadata, Key{Catalog: "c", Name: "first"}, func(context.Context) ([]byte, bool, error) { return nil, false, nil }); o == Hit {
			lived = time.Duration(i+1) * 4 * time.Second
		}
		get(t, c2, DatabaseMetadata, Key{Catalog: "c", Name: fmt.Sprint("n", i)}, l.load)
	}
	if lived < 44*time.Second || lived > 50*time.Second {
		t.Errorf("under a never-ending scan the first entry lived %v, want up to 10 TTLs (50 s)", lived)
	}
	// Per caller when not shared: bob's loads do not extend alice's entries.
	clk3 := newClock()
	c3 := mustCache(t, Options{Metadata: CacheOptions{TTL: 5 * time.Second}, Now: clk3.now})
	get(t, c3, DatabaseMetadata, Key{Catalog: "c", Name: "a", User: "alice"}, l.load)
	for i := 0; i < 3; i++ {
		clk3.add(4 * time.Second)
		get(t, c3, DatabaseMetadata, Key{Catalog: "c", Name: fmt.Sprint("b", i), User: "bob"}, l.load)
	}
	if _, o := get(t, c3, DatabaseMetadata, Key{Catalog: "c", Name: "a", User: "alice"}, l.load); o != Miss {
		t.Errorf("bob's scan extended alice's entry (%v)", o)
	}
}

func TestInvalidationIsVisibleToTheNextRead(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := mustCache(t, Options{Metadata: CacheOptions{TTL: time.Hour, SharedAcrossUsers: true},
		List: CacheOptions{TTL: time.Hour, SharedAcrossUsers: true}, Metrics: NewMetrics(reg)})
	l := &counting{body: func(n int32) []byte { return []byte(fmt.Sprint("v", n)) }}
	sales := Key{Catalog: "catalog1", Name: "sales"}
	other := Key{Catalog: "catalog1", Name: "hr"}
	list := Key{Catalog: "catalog1", Name: ListName("get_all_databases", "")}
	list2 := Key{Catalog: "catalog2", Name: ListName("get_all_databases", "")}
	for _, k := range []Key{sales, other} {
		get(t, c, DatabaseMetadata, k, l.load)
	}
	for _, k := range []Key{list, list2} {
		get(t, c, DatabaseList, k, l.load)
	}
	c.InvalidateDatabase("catalog1", "SALES")
	if _, o := get(t, c, DatabaseMetadata, sales, l.load); o != Miss {
		t.Errorf("sales after its write: %v", o)
	}
	if _, o := get(t, c, DatabaseList, list, l.load); o != Miss {
		t.Errorf("catalog1's list after a database write: %v", o)
	}
	if _, o := get(t, c, DatabaseMetadata, other, l.load); o != Hit {
		t.Errorf("another database of the catalog: %v", o)
	}
	if _, o := get(t, c, DatabaseList, list2, l.load); o != Hit {
		t.Errorf("another catalog's list: %v", o)
	}
	c.InvalidateCatalog("catalog2")
	if _, o := get(t, c, DatabaseList, list2, l.load); o != Miss {
		t.Errorf("after InvalidateCatalog: %v", o)
	}
	c.InvalidateAll()
	if c.Len(DatabaseList)+c.Len(DatabaseMetadata) != 0 {
		t.Errorf("entries left after InvalidateAll")
	}
	inv := func(cache, cat, reason string) float64 {
		return testutil.ToFloat64(c.m.invalidations.WithLabelValues(cache, cat, reason))
	}
	for _, w := range []struct {
		cache, cat, reason string
		want               float64
	}{{"database_metadata", "catalog1", "write", 1}, {"database_list", "catalog1", "write", 1},
		{"database_list", "catalog2", "catalog", 1}, {"database_metadata", "catalog1", "all", 2}, {"database_list", "catalog1", "all", 1}, {"database_list", "catalog2", "all", 1}} {
		if got := inv(w.cache, w.cat, w.reason); got != w.want {
			t.Errorf("invalidations{%s,%s,%s} = %v, want %v", w.cache, w.cat, w.reason, got, w.want)
		}
	}
	if v := testutil.ToFloat64(c.m.entryCount.WithLabelValues("database_metadata", "catalog1")); v != 0 {
		t.Errorf("entries gauge = %v after InvalidateAll", v)
	}
}

// TestInvalidationDuringALoad: a load that was running when the write
// happened must not put its (possibly older) answer into the cache, and a
// read that starts after the invalidation must not join it.
func TestInvalidationDuringALoad(t *testing.T) {
	c := mustCache(t, Options{Metadata: CacheOptions{TTL: time.Hour, SharedAcrossUsers: true}})
	k := Key{Catalog: "catalog1", Name: "sales"}
	release := make(chan struct{})
	started := make(chan struct{})
	var calls atomic.Int32
	load := func(context.Context) ([]byte, bool, error) {
		if calls.Add(1) == 1 {
			close(started)
			<-release
			return []byte("before the write"), true, nil
		}
		return []byte("after the write"), true, nil
	}
	done := make(chan string)
	go func() {
		out, _, _ := c.Get(context.Background(), DatabaseMetadata, k, nil, load)
		done <- string(out)
	}()
	<-started
	c.InvalidateDatabase("catalog1", "sales")
	if v, o := get(t, c, DatabaseMetadata, k, load); v != "after the write" || o != Miss {
		t.Fatalf("a read after the invalidation joined the older load: %q %v", v, o)
	}
	close(release)
	if v := <-done; v != "before the write" {
		t.Fatalf("the older load's caller got %q", v)
	}
	if v, o := get(t, c, DatabaseMetadata, k, load); v != "after the write" || o != Hit {
		t.Fatalf("the older load overwrote the newer entry: %q %v", v, o)
	}
}

func TestFailuresAndExceptionsAreNotCached(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := mustCache(t, Options{Metadata: CacheOptions{TTL: time.Hour}, Metrics: NewMetrics(reg)})
	k := Key{Catalog: "c", Name: "gone"}
	boom := errors.New("catalog c: cannot connect to any metastore URI")
	var calls atomic.Int32
	release := make(chan struct{})
	load := func(context.Context) ([]byte, bool, error) {
		calls.Add(1)
		<-release
		return nil, false, boom
	}
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = c.Get(context.Background(), DatabaseMetadata, k, nil, load)
		}()
	}
	// Nine callers joined the load in flight (each counts as a hit when it
	// joins), then it fails.
	for deadline := time.Now().Add(time.Minute); testutil.ToFloat64(c.m.requests.WithLabelValues("database_metadata", "c", "hit")) < 9; {
		if time.Now().After(deadline) {
			t.Fatal("the callers did not join the load within a minute")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, boom) {
			t.Fatalf("caller %d: %v, want the load's error", i, err)
		}
	}
	if calls.Load() != 1 || c.Len(DatabaseMetadata) != 0 {
		t.Fatalf("%d loads, %d entries: one shared failed load, nothing cached", calls.Load(), c.Len(DatabaseMetadata))
	}
	nso := func(context.Context) ([]byte, bool, error) { return []byte("NoSuchObjectException"), false, nil }
	if v, _ := get(t, c, DatabaseMetadata, k, nso); v != "NoSuchObjectException" || c.Len(DatabaseMetadata) != 0 {
		t.Fatalf("an exception reply is answered (%q) but not cached (%d entries)", v, c.Len(DatabaseMetadata))
	}
	// A waiter whose own context ends stops waiting; the load goes on.
	slow, loading := make(chan struct{}), make(chan struct{})
	go c.Get(context.Background(), DatabaseMetadata, Key{Catalog: "c", Name: "slow"}, nil, func(context.Context) ([]byte, bool, error) {
		close(loading)
		<-slow
		return []byte("x"), true, nil
	})
	<-loading
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	_, o, err := c.Get(ctx, DatabaseMetadata, Key{Catalog: "c", Name: "slow"}, nil, nso)
	cancel()
	if o != Joined || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a waiter past its deadline: %v %v", o, err)
	}
	close(slow)
}

func TestMemoryIsBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := mustCache(t, Options{Metadata: CacheOptions{TTL: time.Hour, MaxEntries: 10, SharedAcrossUsers: true},
		List: CacheOptions{TTL: time.Hour, MaxBytes: 1000, SharedAcrossUsers: true}, Metrics: NewMetrics(reg)})
	l := fixed("x")
	get(t, c, DatabaseMetadata, Key{Catalog: "c", Name: "hot"}, l.load)
	for i := 0; i < 100; i++ {
		get(t, c, DatabaseMetadata, Key{Catalog: "c", Name: fmt.Sprint("db", i)}, l.load)
		get(t, c, DatabaseMetadata, Key{Catalog: "c", Name: "hot"}, l.load) // keeps it recently used
	}
	if n := c.Len(DatabaseMetadata); n != 10 {
		t.Fatalf("%d entries, want max-entries 10", n)
	}
	if _, o := get(t, c, DatabaseMetadata, Key{Catalog: "c", Name: "hot"}, l.load); o != Hit {
		t.Errorf("the most used entry was evicted (%v)", o)
	}
	if v := testutil.ToFloat64(c.m.invalidations.WithLabelValues("database_metadata", "c", "prune")); v != 91 {
		t.Errorf("prune invalidations = %v, want 91", v)
	}
	if v := testutil.ToFloat64(c.m.entryCount.WithLabelValues("database_metadata", "c")); v != 10 {
		t.Errorf("entries gauge = %v", v)
	}
	big := fixed(strings.Repeat("d", 300))
	for i := 0; i < 20; i++ {
		get(t, c, DatabaseList, Key{Catalog: "c", Name: ListName("get_databases", fmt.Sprint("p", i))}, big.load)
	}
	if c.Bytes(DatabaseList) > 1000 || c.Len(DatabaseList) != 3 {
		t.Fatalf("%d bytes in %d entries, want at most max-bytes 1000 (3 entries of 300)", c.Bytes(DatabaseList), c.Len(DatabaseList))
	}
	huge := fixed(strings.Repeat("h", 5000))
	if v, _ := get(t, c, DatabaseList, Key{Catalog: "c", Name: "huge"}, huge.load); len(v) != 5000 || c.Len(DatabaseList) != 3 {
		t.Fatalf("a reply larger than the whole cache is served (%d bytes) and not kept (%d entries)", len(v), c.Len(DatabaseList))
	}
}

func TestBackgroundRefresh(t *testing.T) {
	reg := prometheus.NewRegistry()
	clk := newClock()
	c := mustCache(t, Options{Metadata: CacheOptions{TTL: 10 * time.Second, SharedAcrossUsers: true},
		Refresh: RefreshOptions{Enabled: true, Interval: time.Minute, ActivityWindow: time.Hour},
		Metrics: NewMetrics(reg), Now: clk.now})
	var fail atomic.Bool
	loader := func(name string) (Loader, *atomic.Int32) {
		var n atomic.Int32
		return func(context.Context) ([]byte, bool, error) {
			v := n.Add(1)
			if fail.Load() {
				return nil, false, errors.New("catalog1: read tcp: i/o timeout")
			}
			return []byte(fmt.Sprint(name, v)), true, nil
		}, &n
	}
	hotLoad, hotN := loader("hot")
	coldLoad, coldN := loader("cold")
	hot := Key{Catalog: "catalog1", Name: "hot"}
	cold := Key{Catalog: "catalog1", Name: "cold"}
	get(t, c, DatabaseMetadata, hot, hotLoad)
	get(t, c, DatabaseMetadata, cold, coldLoad) // used once, never again
	// hot is used every minute for 70 minutes, with a refresh round each
	// minute: it never misses although its TTL is 10 s.
	for i := 0; i < 70; i++ {
		clk.add(59 * time.Second)
		if v, o := get(t, c, DatabaseMetadata, hot, hotLoad); o != Hit {
			t.Fatalf("minute %d: a hot entry under background refresh missed (%q)", i, v)
		}
		clk.add(time.Second)
		c.RefreshNow(context.Background())
	}
	if v, _ := get(t, c, DatabaseMetadata, hot, hotLoad); v == "hot1" || hotN.Load() < 60 {
		t.Fatalf("the hot entry is %q after %d loads: not refreshed", v, hotN.Load())
	}
	// cold was refreshed while its last use was within the hour, then left
	// to expire.
	if n := coldN.Load(); n < 55 || n > 62 {
		t.Errorf("the entry used once was loaded %d times, want about 60 (refreshed for the activity window of 1 h)", n)
	}
	if _, o := get(t, c, DatabaseMetadata, cold, coldLoad); o != Miss {
		t.Errorf("the unused entry after the activity window: %v", o)
	}
	// A failing backend: the refresh fails, the old entry stays (stale but
	// good) until its expiry, then the next read goes to the backend.
	fail.Store(true)
	clk.add(30 * time.Second)
	calls := hotN.Load()
	good, _ := get(t, c, DatabaseMetadata, hot, hotLoad)
	// Both entries are in use (cold was just reloaded by a read): both fail.
	if r, f := c.RefreshNow(context.Background()); r != 0 || f != 2 {
		t.Fatalf("refresh round against a failing backend: %d refreshed, %d failed", r, f)
	}
	if v, o := get(t, c, DatabaseMetadata, hot, hotLoad); v != good || o != Hit {
		t.Fatalf("after a failed refresh: %q %v, want the old %q from the cache", v, o, good)
	}
	if hotN.Load() != calls+1 {
		t.Fatalf("%d backend calls for hot, want only the refresh attempt", hotN.Load()-calls)
	}
	clk.add(41 * time.Second) // past TTL + interval since the last good refresh
	if _, _, err := c.Get(context.Background(), DatabaseMetadata, hot, nil, hotLoad); err == nil {
		t.Fatal("an entry outlived its expiry after failed refreshes")
	}
	m := c.m
	if s, f := testutil.ToFloat64(m.refreshes.WithLabelValues("database_metadata", "catalog1", "success")),
		testutil.ToFloat64(m.refreshes.WithLabelValues("database_metadata", "catalog1", "failure")); s < 100 || f < 1 {
		t.Errorf("refreshes: %v success, %v failure", s, f)
	}
}

// Start's loop refreshes on every tick of its interval and stops with
// Close. The ticks and the clock are the test's: the entry never expires
// between two ticks however slowly the machine runs, and each refresh is
// waited for, not guessed from a sleep.
func TestStartRefreshesInTheBackground(t *testing.T) {
	clk := newClock()
	ticks := make(chan time.Time) // unbuffered: a send returns once the loop took the tick
	var every time.Duration
	c := mustCache(t, Options{List: CacheOptions{TTL: 30 * time.Millisecond, SharedAcrossUsers: true},
		Refresh: RefreshOptions{Enabled: true, Interval: 40 * time.Millisecond, ActivityWindow: time.Minute}, Now: clk.now,
		Ticks: func(d time.Duration) (<-chan time.Time, func()) { every = d; return ticks, func() {} }})
	l := &counting{body: func(n int32) []byte { return []byte(fmt.Sprint("v", n)) }}
	k := Key{Catalog: "c", Name: ListName("get_all_databases", "")}
	get(t, c, DatabaseList, k, l.load)
	c.Start()
	if every != 40*time.Millisecond {
		t.Fatalf("the loop ticks every %v, want the refresh interval", every)
	}
	for want := int32(2); want <= 4; want++ {
		clk.add(20 * time.Millisecond) // inside the entry's life (TTL + interval)
		select {
		case ticks <- clk.now():
		case <-time.After(time.Minute):
			t.Fatal("the background loop does not take its ticks")
		}
		for deadline := time.Now().Add(time.Minute); l.calls.Load() < want; {
			if time.Now().After(deadline) {
				t.Fatalf("%d loads a minute after tick %d, want %d", l.calls.Load(), want-1, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// The third refresh's answer replaces the entry (right after its load).
	for deadline := time.Now().Add(time.Minute); ; {
		v, o := get(t, c, DatabaseList, k, l.load)
		if o != Hit {
			t.Fatalf("the refreshed entry was not served from the cache: %q %v", v, o)
		}
		if v == "v4" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cache still serves %q a minute after the third refresh loaded v4", v)
		}
		time.Sleep(time.Millisecond)
	}
	c.Close()
	select {
	case ticks <- clk.now():
		t.Fatal("the loop still takes ticks after Close")
	default:
	}
	if n := l.calls.Load(); n != 4 {
		t.Fatalf("%d loads, want 4", n)
	}
}

func TestOffCacheJustLoads(t *testing.T) {
	c := mustCache(t, Options{})
	l := fixed("x")
	for i := 0; i < 3; i++ {
		if v, o := get(t, c, DatabaseList, Key{Catalog: "c"}, l.load); v != "x" || o != Bypass {
			t.Fatal(v, o)
		}
	}
	if l.calls.Load() != 3 || c.Enabled(DatabaseList) {
		t.Fatal("a cache with ttl 0 must not cache")
	}
}

func TestValidateNamesTheKey(t *testing.T) {
	_, err := New(Options{List: CacheOptions{TTL: -time.Second, MaxEntries: -1}, Metadata: CacheOptions{MaxBytes: -5},
		Refresh: RefreshOptions{Enabled: true, Interval: -time.Second, ActivityWindow: -1}})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"routing.database-list-cache.ttl-ms", "routing.database-list-cache.max-entries=-1",
		"routing.database-metadata-cache.max-bytes=-5", "routing.database-cache.background-refresh.interval-ms=-1000",
		"routing.database-cache.background-refresh.activity-window-ms"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := New(Options{Refresh: RefreshOptions{Enabled: true}}); err == nil || !strings.Contains(err.Error(), "both caches are off") {
		t.Errorf("refresh without a cache: %v", err)
	}
}

func TestUserKey(t *testing.T) {
	if UserKey("alice", []string{"a", "b"}) == UserKey("alice", []string{"ab"}) || !bytes.Equal([]byte(UserKey("x", nil)), []byte("x\x00")) {
		t.Fatal("UserKey must separate users and groups")
	}
}
