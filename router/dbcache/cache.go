// Package dbcache holds the two database caches of the latency-aware routing
// layer: the database list cache (get_all_databases / get_databases replies
// of one catalog, routing.database-list-cache.*) and the database metadata
// cache (get_database replies, routing.database-metadata-cache.*), with
// background refresh (routing.database-cache.background-refresh.*).
//
// Values are encoded Thrift reply bodies: a hit appends a copy of the cached
// bytes to the caller's buffer, which the router then splices (names,
// sequence id) like a backend reply. Cached bytes are never handed out
// themselves, so no caller can change what another one reads.
//
// Behaviour:
//
//   - TTL and bounds: an entry is served until its TTL has passed; each cache
//     holds at most MaxEntries entries and MaxBytes bytes, the least recently
//     used entry going first (counted as reason "prune").
//   - Single flight: concurrent identical misses make one backend load; the
//     others wait for it (each within its own context) and get its answer,
//     error included. A failed load is never cached.
//   - Sliding batch expiry: every load in a catalog (per caller when the
//     cache is not shared) extends the life of the entries loaded before it
//     in the same batch, i.e. while loads keep coming within a TTL of each
//     other, so a long scan that loads databases one by one (HiveServer2,
//     Ranger) does not see its first entries expire before it ends. The
//     extension never keeps an entry longer than BatchSpanTTLs TTLs after it
//     was loaded.
//   - Invalidation: the router calls InvalidateDatabase after
//     create/alter/drop_database (reason "write"), InvalidateCatalog and
//     InvalidateAll for configuration changes ("catalog", "all"). The next
//     read after an invalidation goes to the backend: a load that was in
//     flight when the invalidation happened is answered to its waiters but
//     not cached.
//   - Background refresh: every Interval, entries used within the
//     ActivityWindow are reloaded in the background (at most 4 at a time);
//     while refresh is on, an entry lives TTL + Interval, so one in use never
//     expires between two refreshes and no client waits for the backend. A
//     failed refresh keeps the old entry (stale but good) until its current
//     expiry; unused entries are left to expire.
//   - Keys are per catalog, per request (the database name, or the list
//     call and its pattern; both case-insensitive, as in HMS) and, unless
//     SharedAcrossUsers, per caller.
package dbcache

import (
	"container/list"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Key names one cached reply.
type Key struct {
	Catalog string // the proxy catalog
	Name    string // database name (DatabaseMetadata) or list request, e.g. ListName("get_databases", "sales*")
	User    string // the caller (see UserKey); ignored when the cache is shared across users
	// Variant tells apart replies to different requests about the same
	// name (get_database and get_database_req of one database, say); it is
	// part of the key, shared or not, and InvalidateDatabase drops every
	// variant of the name.
	Variant string
}

// ListName is the Key.Name of a database list request.
func ListName(method, pattern string) string { return method + "\x00" + pattern }

// UserKey is the Key.User of a caller: the user and the groups, as the
// backend would see them.
func UserKey(user string, groups []string) string {
	return user + "\x00" + strings.Join(groups, "\x00")
}

// Loader loads a reply from the backend. It returns the reply body and
// whether it may be cached (false for a reply carrying an exception, which
// is still handed to every waiter of the same load). A Loader may be kept
// and called again by the background refresh after its request has ended:
// it must not capture request-scoped buffers.
type Loader func(ctx context.Context) (body []byte, cacheable bool, err error)

// Outcome says how a Get was served.
type Outcome uint8

// Get outcomes.
const (
	Bypass Outcome = iota // the cache is off: loaded, not counted
	Hit                   // from the cache
	Miss                  // loaded from the backend by this call
	Joined                // an identical load was in flight: its answer
)

func (o Outcome) String() string {
	return [...]string{"bypass", "hit", "miss", "joined"}[o]
}

// Cache is the pair of database caches. Safe for concurrent use.
type Cache struct {
	opt    Options
	stores map[Kind]*store
	now    func() time.Time
	log    *slog.Logger
	m      *Metrics
	minTTL time.Duration // of the caches that are on: a pause longer than it ends a batch
	maxTTL time.Duration

	bmu     sync.Mutex
	batches map[batchKey]*batch

	lmu     sync.Mutex
	started bool
	ctx     context.Context
	cancel  context.CancelFunc
	loop    sync.WaitGroup
}

// New validates opt and builds the caches (Start runs background work).
func New(opt Options) (*Cache, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	c := &Cache{opt: opt, stores: map[Kind]*store{}, now: opt.Now, log: opt.Log, m: opt.Metrics, batches: map[batchKey]*batch{}}
	c.opt.Refresh = opt.Refresh.withDefaults()
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	for kind, co := range map[Kind]CacheOptions{DatabaseList: opt.List, DatabaseMetadata: opt.Metadata} {
		if co.TTL > 0 {
			c.stores[kind] = newStore(c, kind, co.withDefaults())
			c.maxTTL = max(c.maxTTL, co.TTL)
			if c.minTTL == 0 || co.TTL < c.minTTL {
				c.minTTL = co.TTL
			}
		}
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// Enabled reports whether the cache of kind is on (its TTL is not 0).
func (c *Cache) Enabled(kind Kind) bool { return c != nil && c.stores[kind] != nil }

// Get returns dst with the reply for key appended: from the cache, from an
// identical load in flight, or from load. With the cache off it just loads.
func (c *Cache) Get(ctx context.Context, kind Kind, key Key, dst []byte, load Loader) ([]byte, Outcome, error) {
	s := c.stores[kind]
	if s == nil {
		body, _, err := safeLoad(ctx, load)
		return append(dst, body...), Bypass, err
	}
	return s.get(ctx, s.key(key), dst, load)
}

// Fresh reports whether a Get of key would be a hit now (it is not counted
// and does not touch the entry): a router may serve such reads on one
// goroutine instead of in parallel.
func (c *Cache) Fresh(kind Kind, key Key) bool {
	s := c.stores[kind]
	if s == nil {
		return false
	}
	k := s.key(key)
	now := s.c.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[k]
	return e != nil && now.Before(s.expiry(e))
}

// Shared reports whether the cache of kind keeps one entry for all callers
// (SharedAcrossUsers).
func (c *Cache) Shared(kind Kind) bool {
	return c != nil && c.stores[kind] != nil && c.stores[kind].opt.SharedAcrossUsers
}

// Len is the number of entries of a cache (tests, diagnostics).
func (c *Cache) Len(kind Kind) int {
	s := c.stores[kind]
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Bytes is the size of the cached replies of a cache.
func (c *Cache) Bytes(kind Kind) int64 {
	s := c.stores[kind]
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// Invalidation reasons (hms_proxy_cache_invalidations_total's reason).
const (
	ReasonWrite   = "write"
	ReasonCatalog = "catalog"
	ReasonPrune   = "prune"
	ReasonAll     = "all"
)

// InvalidateDatabase forgets what a write to database db of catalog may have
// changed: its metadata entries (every caller's) and the catalog's database
// lists. Call it after create_database, alter_database and drop_database
// reached the backend, whatever the answer (a timed-out write may still have
// happened).
func (c *Cache) InvalidateDatabase(catalog, db string) {
	db = strings.ToLower(db)
	if s := c.stores[DatabaseMetadata]; s != nil {
		s.invalidate(ReasonWrite, func(k skey) bool { return k.catalog == catalog && k.name == db })
	}
	if s := c.stores[DatabaseList]; s != nil {
		s.invalidate(ReasonWrite, func(k skey) bool { return k.catalog == catalog })
	}
}

// InvalidateCatalog forgets every entry of a catalog.
func (c *Cache) InvalidateCatalog(catalog string) {
	for _, s := range c.stores {
		s.invalidate(ReasonCatalog, func(k skey) bool { return k.catalog == catalog })
	}
}

// InvalidateAll forgets everything.
func (c *Cache) InvalidateAll() {
	for _, s := range c.stores {
		s.invalidate(ReasonAll, func(skey) bool { return true })
	}
}

// Start runs the background work: the refresh rounds when background refresh
// is on, and the removal of expired entries. Close stops it.
func (c *Cache) Start() {
	c.lmu.Lock()
	defer c.lmu.Unlock()
	if c.started || c.ctx.Err() != nil || len(c.stores) == 0 {
		return
	}
	c.started = true
	every := c.opt.Refresh.Interval
	if !c.opt.Refresh.Enabled {
		every = max(c.maxTTL, time.Second)
	}
	ticks := c.opt.Ticks
	if ticks == nil {
		ticks = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	tc, stop := ticks(every)
	c.loop.Add(1)
	go func() {
		defer c.loop.Done()
		defer stop()
		for {
			select {
			case <-c.ctx.Done():
				return
			case <-tc:
			}
			if c.opt.Refresh.Enabled {
				c.RefreshNow(c.ctx)
			}
			c.sweep()
		}
	}()
}

// Close stops the background work and waits for it.
func (c *Cache) Close() {
	c.cancel()
	c.loop.Wait()
}

// sweep drops expired entries (silently: expiry is not an invalidation) and
// batches nobody can extend any more.
func (c *Cache) sweep() {
	now := c.now()
	for _, s := range c.stores {
		s.mu.Lock()
		for e := s.lru.Back(); e != nil; {
			prev := e.Prev()
			if en := e.Value.(*entry); !now.Before(s.expiry(en)) {
				s.removeLocked(en, "")
			}
			e = prev
		}
		s.mu.Unlock()
	}
	c.bmu.Lock()
	for k, b := range c.batches {
		b.mu.Lock()
		idle := now.Sub(b.last) > BatchSpanTTLs*c.maxTTL
		b.mu.Unlock()
		if idle {
			delete(c.batches, k)
		}
	}
	c.bmu.Unlock()
}

// RefreshNow runs one background refresh round at once (the Start loop
// calls it every Interval; tests call it directly). It returns how many
// entries were reloaded and how many reloads failed.
func (c *Cache) RefreshNow(ctx context.Context) (refreshed, failed int) {
	type job struct {
		s    *store
		k    skey
		load Loader
		f    *flight
	}
	now := c.now()
	var jobs []job
	for _, s := range c.stores {
		s.mu.Lock()
		for k, e := range s.entries {
			if e.load == nil || now.Sub(e.lastAccess) > c.opt.Refresh.ActivityWindow || !now.Before(s.expiry(e)) {
				continue
			}
			if s.flights[k] != nil {
				continue // a load of this key is running anyway
			}
			f := &flight{done: make(chan struct{})}
			s.flights[k] = f
			jobs = append(jobs, job{s: s, k: k, load: e.load, f: f})
		}
		s.mu.Unlock()
	}
	var mu sync.Mutex
	sem := make(chan struct{}, refreshParallelism)
	var wg sync.WaitGroup
	for _, j := range jobs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			lctx, cancel := context.WithTimeout(ctx, c.opt.Refresh.Interval)
			body, cacheable, err := safeLoad(lctx, j.load)
			cancel()
			ok := j.s.refreshed(j.k, j.f, j.load, body, cacheable, err)
			mu.Lock()
			if ok {
				refreshed++
			} else {
				failed++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return refreshed, failed
}

func safeLoad(ctx context.Context, load Loader) (body []byte, cacheable bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			body, cacheable, err = nil, false, fmt.Errorf("cache loader panicked: %v", r)
		}
	}()
	return load(ctx)
}

// batchKey: the batch of sliding expiry is per catalog and caller.
type batchKey struct{ catalog, user string }

type batch struct {
	mu    sync.Mutex
	last  time.Time // the last load of the batch
	epoch uint64    // a new epoch starts when loads pause for longer than the shortest TTL
}

// touch records a load at now and returns the batch and its epoch.
func (c *Cache) touch(k skey, now time.Time) (*batch, uint64) {
	bk := batchKey{k.catalog, k.user}
	c.bmu.Lock()
	b := c.batches[bk]
	if b == nil {
		b = &batch{}
		c.batches[bk] = b
	}
	c.bmu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	// Within an epoch loads are at most the shortest TTL apart, so every
	// entry of the epoch stayed alive from load to load: the extension never
	// brings an expired entry back.
	if b.last.IsZero() || now.Sub(b.last) > c.minTTL {
		b.epoch++
	}
	if now.After(b.last) {
		b.last = now
	}
	return b, b.epoch
}

// skey is a normalized Key.
type skey struct{ catalog, name, user, variant string }

type entry struct {
	key        skey
	val        []byte // never modified: replaced whole on refresh
	loadedAt   time.Time
	expires    time.Time // own expiry; sliding batch expiry may extend it
	lastAccess time.Time
	load       Loader // the latest loader, for background refresh
	batch      *batch
	epoch      uint64
	elem       *list.Element
}

type flight struct {
	done chan struct{}
	val  []byte
	err  error
}

type store struct {
	c    *Cache
	kind Kind
	opt  CacheOptions

	mu      sync.Mutex
	entries map[skey]*entry
	lru     list.List // front: most recently used
	bytes   int64
	flights map[skey]*flight
	counts  map[string]int // entries per catalog (gauge)
}

func newStore(c *Cache, kind Kind, o CacheOptions) *store {
	return &store{c: c, kind: kind, opt: o, entries: map[skey]*entry{}, flights: map[skey]*flight{}, counts: map[string]int{}}
}

func (s *store) key(k Key) skey {
	n := skey{catalog: k.Catalog, name: strings.ToLower(k.Name), variant: k.Variant}
	if !s.opt.SharedAcrossUsers {
		n.user = k.User
	}
	return n
}

// lifetime is how long a freshly loaded entry lives on its own.
func (s *store) lifetime() time.Duration {
	if s.c.opt.Refresh.Enabled {
		return s.opt.TTL + s.c.opt.Refresh.Interval
	}
	return s.opt.TTL
}

// expiry is e's effective expiry: its own, or the sliding batch extension
// (a later load of the same batch, plus the TTL, at most BatchSpanTTLs TTLs
// after e was loaded).
func (s *store) expiry(e *entry) time.Time {
	exp := e.expires
	if b := e.batch; b != nil {
		b.mu.Lock()
		last, epoch := b.last, b.epoch
		b.mu.Unlock()
		if epoch == e.epoch {
			ext := last.Add(s.opt.TTL)
			if limit := e.loadedAt.Add(BatchSpanTTLs * s.opt.TTL); ext.After(limit) {
				ext = limit
			}
			if ext.After(exp) {
				exp = ext
			}
		}
	}
	return exp
}

func (s *store) get(ctx context.Context, k skey, dst []byte, load Loader) ([]byte, Outcome, error) {
	now := s.c.now()
	s.mu.Lock()
	if e := s.entries[k]; e != nil {
		if now.Before(s.expiry(e)) {
			if now.After(e.lastAccess) {
				e.lastAccess = now
			}
			e.load = load
			s.lru.MoveToFront(e.elem)
			out := append(dst, e.val...)
			s.mu.Unlock()
			s.c.m.request(s.kind, k.catalog, true)
			return out, Hit, nil
		}
		s.removeLocked(e, "")
	}
	if f := s.flights[k]; f != nil {
		s.mu.Unlock()
		s.c.m.request(s.kind, k.catalog, true)
		select {
		case <-f.done:
		case <-ctx.Done():
			return dst, Joined, ctx.Err()
		}
		if f.err != nil {
			return dst, Joined, f.err
		}
		return append(dst, f.val...), Joined, nil
	}
	f := &flight{done: make(chan struct{})}
	s.flights[k] = f
	s.mu.Unlock()
	s.c.m.request(s.kind, k.catalog, false)

	// The load is shared: it must not fail its waiters because this caller
	// went away.
	body, cacheable, err := safeLoad(context.WithoutCancel(ctx), load)
	f.val, f.err = append([]byte(nil), body...), err
	loadedAt := s.c.now()
	var b *batch
	var epoch uint64
	if err == nil && cacheable {
		b, epoch = s.c.touch(k, loadedAt)
	}
	s.mu.Lock()
	if s.flights[k] == f { // not invalidated meanwhile
		delete(s.flights, k)
		if b != nil {
			s.insertLocked(&entry{key: k, val: f.val, loadedAt: loadedAt, expires: loadedAt.Add(s.lifetime()),
				lastAccess: now, load: load, batch: b, epoch: epoch})
		}
	}
	s.mu.Unlock()
	close(f.done)
	if err != nil {
		return dst, Miss, err
	}
	return append(dst, f.val...), Miss, nil
}

// refreshed stores a background reload (or keeps the old entry when it
// failed) and reports success.
func (s *store) refreshed(k skey, f *flight, load Loader, body []byte, cacheable bool, err error) bool {
	if err == nil && !cacheable {
		err = fmt.Errorf("the backend answered an exception")
	}
	f.val, f.err = append([]byte(nil), body...), err
	now := s.c.now()
	s.mu.Lock()
	current := s.flights[k] == f
	if current {
		delete(s.flights, k)
	}
	e := s.entries[k]
	switch {
	case err != nil || !current:
	case e != nil:
		s.bytes += int64(len(f.val) - len(e.val))
		e.val, e.loadedAt, e.expires = f.val, now, now.Add(s.lifetime())
	default: // it expired while the refresh ran (a reader joined this load)
		s.insertLocked(&entry{key: k, val: f.val, loadedAt: now, expires: now.Add(s.lifetime()), lastAccess: now, load: load})
	}
	s.mu.Unlock()
	close(f.done)
	s.c.m.refresh(s.kind, k.catalog, err == nil)
	if err != nil {
		s.c.log.Warn("background refresh of a cached reply failed; the old entry is kept until it expires",
			"cache", string(s.kind), "catalog", k.catalog, "key", strings.ReplaceAll(k.name, "\x00", " "), "error", err.Error())
		return false
	}
	return true
}

// insertLocked adds e, making room first (least recently used out).
func (s *store) insertLocked(e *entry) {
	if old := s.entries[e.key]; old != nil {
		s.removeLocked(old, "")
	}
	size := int64(len(e.val))
	if size > s.opt.MaxBytes {
		return // larger than the whole cache: served, never kept
	}
	now := s.c.now()
	for len(s.entries) >= s.opt.MaxEntries || s.bytes+size > s.opt.MaxBytes {
		victim := s.lru.Back().Value.(*entry)
		reason := ReasonPrune
		if !now.Before(s.expiry(victim)) {
			reason = "" // it had expired anyway
		}
		s.removeLocked(victim, reason)
	}
	e.elem = s.lru.PushFront(e)
	s.entries[e.key] = e
	s.bytes += size
	s.counts[e.key.catalog]++
	s.c.m.entries(s.kind, e.key.catalog, s.counts[e.key.catalog])
}

// removeLocked drops e; a non-empty reason counts it as an invalidation.
func (s *store) removeLocked(e *entry, reason string) {
	if s.entries[e.key] != e {
		return
	}
	delete(s.entries, e.key)
	s.lru.Remove(e.elem)
	s.bytes -= int64(len(e.val))
	s.counts[e.key.catalog]--
	s.c.m.entries(s.kind, e.key.catalog, s.counts[e.key.catalog])
	if reason != "" {
		s.c.m.invalidated(s.kind, e.key.catalog, reason, 1)
	}
}

// invalidate drops the entries whose key matches, and forgets the loads in
// flight for such keys (their answers reach their waiters, not the cache).
func (s *store) invalidate(reason string, match func(skey) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.entries {
		if match(k) {
			s.removeLocked(e, reason)
		}
	}
	for k := range s.flights {
		if match(k) {
			delete(s.flights, k)
		}
	}
}
