// Package cachesync keeps the database caches of several proxy replicas
// coherent through ZooKeeper. Each catalog has one epoch znode,
// <znode>/<catalog>; a replica that wrote a database (create_database,
// alter_database, drop_database) bumps it with a versionless setData before
// its client gets the answer, and every replica watches every epoch: a
// version it did not write itself makes it drop the catalog's cache entries
// (Invalidator.InvalidateCatalog).
//
// A replica that loses its ZooKeeper connection may miss bumps, so it drops
// every entry (Invalidator.InvalidateAll) when the connection is lost and
// again when it is back. While ZooKeeper cannot be reached, entries cached
// meanwhile are stale for at most their TTL, as without ZooKeeper. A bump
// that could not be written is kept and written when the connection is back
// (the other replicas then also see that their own session was lost, or see
// the bump).
//
// Ordering: ZooKeeper queues the watch notifications of a setData to the
// watching sessions before it answers the writer, so when the writing
// replica's client has its answer the other replicas' notifications are
// already on their sockets; a client that then opens a connection to
// another replica is slower than that notification in practice (the tests
// measure it), but the guarantee is "within the notification delay", not a
// read barrier.
package cachesync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// DefaultZnode is the default root of the epoch znodes.
const DefaultZnode = "/hms-proxy-cache-epochs"

// DefaultSessionTimeout is the default ZooKeeper session timeout.
const DefaultSessionTimeout = 30 * time.Second

// Invalidator is what a bump seen from another replica, or a lost session,
// invalidates: the database caches (router/dbcache.Cache).
type Invalidator interface {
	InvalidateCatalog(catalog string)
	InvalidateAll()
}

// Options configure a Sync (routing.database-cache.zookeeper.*).
type Options struct {
	// ConnectString is host:port[,host:port...][/chroot].
	ConnectString string
	// Znode is the root of the epoch znodes (default DefaultZnode).
	Znode string
	// SessionTimeout is the ZooKeeper session timeout (default
	// DefaultSessionTimeout).
	SessionTimeout time.Duration
	// BumpTimeout bounds one synchronous bump (default 5 s); a bump that did
	// not finish in time is retried in the background.
	BumpTimeout time.Duration
	// Catalogs are watched from the start (Watch adds more).
	Catalogs []string
	// Target is invalidated (SetTarget replaces it; nil: nothing yet).
	Target Invalidator
	// ID names this replica in the epoch data (default host:pid).
	ID      string
	Metrics *Metrics
	Log     *slog.Logger
}

// Sync is one replica's view of the epochs.
type Sync struct {
	o      Options
	root   string
	id     string
	conn   *zk.Conn
	log    *slog.Logger
	target atomic.Pointer[Invalidator]
	closed chan struct{}
	wg     sync.WaitGroup
	once   sync.Once

	mu       sync.Mutex
	watched  map[string]bool
	armed    map[string]bool // the catalog's watch was set at least once
	pending  map[string]bool // bumps not written yet
	seq      uint64
	connLost bool // the session was disconnected and has not been re-established
	retry    chan struct{}
}

// New connects to ZooKeeper and starts watching Options.Catalogs. The
// session is established in the background: New fails only on an invalid
// option.
func New(o Options) (*Sync, error) {
	if o.Znode == "" {
		o.Znode = DefaultZnode
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.BumpTimeout <= 0 {
		o.BumpTimeout = 5 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.ID == "" {
		h, _ := os.Hostname()
		o.ID = h + ":" + strconv.Itoa(os.Getpid())
	}
	servers, chroot, err := ParseConnectString(o.ConnectString)
	if err != nil {
		return nil, err
	}
	if err := checkZnode(o.Znode); err != nil {
		return nil, err
	}
	s := &Sync{o: o, root: path.Clean(chroot + o.Znode), id: o.ID + "#" + strconv.FormatInt(time.Now().UnixNano(), 36),
		log: o.Log, closed: make(chan struct{}), watched: map[string]bool{}, armed: map[string]bool{},
		pending: map[string]bool{}, retry: make(chan struct{}, 1)}
	if o.Target != nil {
		s.SetTarget(o.Target)
	}
	conn, events, err := zk.Connect(servers, o.SessionTimeout, zk.WithLogger(zkLogger{o.Log}), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("cachesync: routing.database-cache.zookeeper.connect-string=%s: %w", o.ConnectString, err)
	}
	s.conn = conn
	s.wg.Add(2)
	go s.sessions(events)
	go s.flusher()
	for _, c := range o.Catalogs {
		s.Watch(c)
	}
	return s, nil
}

// Describe names the epoch store in logs and errors.
func (s *Sync) Describe() string {
	return "ZooKeeper " + s.o.ConnectString + " znode " + s.o.Znode
}

// SetTarget replaces what is invalidated (a reload builds a new router and
// with it new caches).
func (s *Sync) SetTarget(inv Invalidator) {
	if inv == nil {
		s.target.Store(nil)
		return
	}
	s.target.Store(&inv)
}

func (s *Sync) invalidateCatalog(catalog string) {
	if p := s.target.Load(); p != nil {
		(*p).InvalidateCatalog(catalog)
	}
}

func (s *Sync) invalidateAll() {
	if p := s.target.Load(); p != nil {
		(*p).InvalidateAll()
	}
}

// Watch starts watching a catalog's epoch (again: no-op).
func (s *Sync) Watch(catalog string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watched[catalog] {
		return
	}
	select {
	case <-s.closed:
		return
	default:
	}
	s.watched[catalog] = true
	s.wg.Add(1)
	go s.watch(catalog)
}

func (s *Sync) epochPath(catalog string) string { return s.root + "/" + catalog }

// Bump tells the other replicas that a database of catalog changed. It is
// called after the write reached the backend, before the client is
// answered. An error means the bump is not written yet; it stays pending and
// is retried when the session is back.
func (s *Sync) Bump(ctx context.Context, catalog string) error {
	ctx, cancel := context.WithTimeout(ctx, s.o.BumpTimeout)
	defer cancel()
	err := s.write(ctx, catalog)
	s.o.Metrics.bump(catalog, err)
	if err != nil {
		s.mu.Lock()
		s.pending[catalog] = true
		s.mu.Unlock()
		s.log.Warn("database cache epoch not written; other replicas may serve the catalog's databases from their caches until it is written or their TTL ends",
			"catalog", catalog, "store", s.Describe(), "err", err)
		return fmt.Errorf("cachesync: bumping the epoch of catalog %s in %s: %w", catalog, s.Describe(), err)
	}
	return nil
}

// write sets the epoch znode's data (creating it and its parents when
// needed), bounded by ctx.
func (s *Sync) write(ctx context.Context, catalog string) error {
	s.mu.Lock()
	s.seq++
	data := []byte(s.id + " " + strconv.FormatUint(s.seq, 10))
	s.mu.Unlock()
	p := s.epochPath(catalog)
	done := make(chan error, 1)
	go func() {
		for attempt := 0; ; attempt++ {
			_, err := s.conn.Set(p, data, -1)
			if errors.Is(err, zk.ErrNoNode) && attempt < 3 {
				if err = s.create(p, data); err == nil || errors.Is(err, zk.ErrNodeExists) {
					if err == nil {
						done <- nil
						return
					}
					continue
				}
			}
			done <- err
			return
		}
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// create creates p with data, and its missing parents empty.
func (s *Sync) create(p string, data []byte) error {
	acl := zk.WorldACL(zk.PermAll)
	parts := strings.Split(strings.TrimPrefix(path.Dir(p), "/"), "/")
	cur := ""
	for _, part := range parts {
		cur += "/" + part
		if _, err := s.conn.Create(cur, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	_, err := s.conn.Create(p, data, 0, acl)
	return err
}

// watch follows one catalog's epoch until Close. Any change of the epoch
// znode invalidates the catalog at once, before the znode is read again: a
// second round trip would widen the window in which another replica's
// client could read a stale entry. The writer's own bump invalidates it once
// more (it already dropped the entries of the database it wrote); database
// writes are rare, so that costs a few misses and buys no window at all.
func (s *Sync) watch(catalog string) {
	defer s.wg.Done()
	p := s.epochPath(catalog)
	backoff := 100 * time.Millisecond
	prev := int32(-2)   // epoch version at the last arming; -1 = no znode, -2 = not read yet
	expectNext := false // an event was handled since: the version may be prev+1
	for {
		ok, stat, ch, err := s.conn.ExistsW(p)
		if err != nil {
			if s.isClosed() {
				return
			}
			s.log.Debug("database cache epoch watch failed; retrying", "catalog", catalog, "err", err)
			expectNext = false
			select {
			case <-s.closed:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		v := int32(-1)
		if ok {
			v = stat.Version
		}
		// A bump between the last event and this arming fired no event of
		// its own: the version tells.
		if want := prev + boolInt(expectNext); prev != -2 && v != want {
			s.epochChanged(catalog, "version "+strconv.Itoa(int(v))+" while arming")
		}
		prev, expectNext = v, false
		s.mu.Lock()
		s.armed[catalog] = true
		s.mu.Unlock()
		select {
		case <-s.closed:
			return
		case ev := <-ch:
			switch ev.Type {
			case zk.EventNodeDataChanged, zk.EventNodeCreated:
				s.epochChanged(catalog, ev.Type.String())
				expectNext = true
			case zk.EventNodeDeleted:
				s.epochChanged(catalog, ev.Type.String())
			}
			// EventNotWatching (the session expired): sessions() has
			// invalidated everything; the loop arms the watch again.
		}
	}
}

func boolInt(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

func (s *Sync) epochChanged(catalog, why string) {
	// Counted once done: whoever sees the count sees the cache dropped.
	s.invalidateCatalog(catalog)
	s.o.Metrics.invalidation(catalog, ReasonEpochChanged)
	s.log.Debug("database cache of a catalog invalidated: its epoch changed", "catalog", catalog, "seen", why)
}

// sessions follows the ZooKeeper session: a lost connection invalidates
// everything, and so does its return (events may have been missed between).
func (s *Sync) sessions(events <-chan zk.Event) {
	defer s.wg.Done()
	for ev := range events {
		if ev.Type != zk.EventSession {
			continue
		}
		switch ev.State {
		case zk.StateDisconnected, zk.StateExpired:
			s.mu.Lock()
			first := !s.connLost
			s.connLost = true
			s.mu.Unlock()
			if first && !s.isClosed() {
				s.log.Warn("database cache coherence: ZooKeeper connection lost; every cached database entry is dropped now and again when it is back",
					"store", s.Describe(), "state", ev.State.String())
				s.invalidateAll()
				s.o.Metrics.invalidation("all", ReasonSessionLost)
			}
		case zk.StateHasSession:
			s.mu.Lock()
			was := s.connLost
			s.connLost = false
			s.mu.Unlock()
			if was {
				s.log.Info("database cache coherence: ZooKeeper connection back; dropping every cached database entry (bumps may have been missed)",
					"store", s.Describe())
				s.invalidateAll()
				s.o.Metrics.invalidation("all", ReasonReconnected)
			}
			select {
			case s.retry <- struct{}{}:
			default:
			}
		}
	}
}

// flusher writes pending bumps when the session is (back) up, and every
// few seconds while some are pending.
func (s *Sync) flusher() {
	defer s.wg.Done()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.closed:
			return
		case <-s.retry:
		case <-t.C:
		}
		s.mu.Lock()
		var cats []string
		for c := range s.pending {
			cats = append(cats, c)
		}
		s.mu.Unlock()
		for _, c := range cats {
			ctx, cancel := context.WithTimeout(context.Background(), s.o.BumpTimeout)
			err := s.write(ctx, c)
			cancel()
			s.o.Metrics.bump(c, err)
			if err != nil {
				break
			}
			s.mu.Lock()
			delete(s.pending, c)
			s.mu.Unlock()
			s.log.Info("database cache epoch written after the connection came back", "catalog", c)
		}
	}
}

// Status is what /readyz and tests read.
type Status struct {
	Store     string   `json:"store"`
	Connected bool     `json:"connected"`
	Pending   []string `json:"pendingBumps,omitempty"`
}

// Status reports the connection and the bumps not written yet.
func (s *Sync) Status() Status {
	st := Status{Store: s.Describe(), Connected: s.conn.State() == zk.StateHasSession}
	s.mu.Lock()
	for c := range s.pending {
		st.Pending = append(st.Pending, c)
	}
	s.mu.Unlock()
	return st
}

// Armed reports whether the epoch watch of catalog is set: from then on
// every bump of another replica invalidates it here.
func (s *Sync) Armed(catalog string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.armed[catalog]
}

// Close ends the session and the watches.
func (s *Sync) Close() error {
	s.once.Do(func() {
		close(s.closed)
		s.conn.Close()
		s.wg.Wait()
	})
	return nil
}

// ParseConnectString splits host:port,...[/chroot]
// (routing.database-cache.zookeeper.connect-string).
func ParseConnectString(cs string) ([]string, string, error) {
	const key = "routing.database-cache.zookeeper.connect-string"
	cs = strings.TrimSpace(cs)
	if cs == "" {
		return nil, "", fmt.Errorf("cachesync: %s is empty: name the ZooKeeper servers as host:port[,host:port...][/chroot]", key)
	}
	hosts, chroot := cs, ""
	if i := strings.Index(cs, "/"); i >= 0 {
		hosts, chroot = cs[:i], cs[i:]
		if chroot == "/" {
			chroot = ""
		} else if err := checkZnode(chroot); err != nil {
			return nil, "", fmt.Errorf("cachesync: %s=%s: chroot: %v", key, cs, err)
		}
	}
	var servers []string
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		host, port, err := net.SplitHostPort(h)
		n, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return nil, "", fmt.Errorf("cachesync: %s=%s: server %q is not host:port", key, cs, h)
		}
		servers = append(servers, h)
	}
	return servers, chroot, nil
}

func checkZnode(p string) error {
	if !strings.HasPrefix(p, "/") || p == "/" || strings.HasSuffix(p, "/") || path.Clean(p) != p {
		return fmt.Errorf("cachesync: routing.database-cache.zookeeper.znode=%q: want an absolute znode path such as %s", p, DefaultZnode)
	}
	return nil
}

type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug("database cache coherence: zookeeper client: " + fmt.Sprintf(format, args...))
}

func (s *Sync) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}
