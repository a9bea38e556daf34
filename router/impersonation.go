package router

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/hms-proxy/hms-proxy/monitoring/metric"
	"github.com/hms-proxy/hms-proxy/security"
)

// Impersonation (security.impersonation-enabled, catalog.<n>.impersonation-*):
// the backend sees the end user, not the proxy. Each user with calls to an
// impersonating catalog gets a pool of backend sessions of its own, opened
// as that user (UserDial: set_ugi on a plain metastore, DIGEST-MD5 with a
// backend delegation token on a Kerberized one). At most MaxClients users
// have a pool; the least recently used one makes room for a new user, and a
// user idle for ClientIdleTTL, or a session idle for SessionIdleTTL, is
// closed. Anonymous callers and service principals use the shared pool.

// Dial opens one backend transport (the shape of BackendOptions.Dial).
type Dial func(ctx context.Context, network, addr string) (net.Conn, error)

// ImpersonationOptions are one catalog's impersonation settings.
type ImpersonationOptions struct {
	MaxClients     int           // impersonation-max-clients (users with a pool)
	ClientIdleTTL  time.Duration // impersonation-client-idle-ttl-ms (0: never)
	PoolSize       int           // impersonation-pool-max-size (sessions per user)
	SessionIdleTTL time.Duration // impersonation-session-idle-ttl-ms (0: never)
	// UserDial prepares the sessions of one user: the Dial of its pool and
	// a release (may be nil) run once the user's pool is closed. shared is
	// the catalog's shared pool (for the calls the proxy makes as itself,
	// such as get_delegation_token).
	UserDial func(ctx context.Context, id *security.Identity, shared *Backend) (Dial, func(), error)
	// Bypass reports callers that use the shared pool
	// (security.service-principals); nil: none.
	Bypass  func(id *security.Identity) bool
	Metrics *ImpersonationMetrics
	Log     *slog.Logger
}

// Impersonation metric names (the specification's).
const (
	MetricImpersonationUsers           = "hms_proxy_impersonation_pool_users"
	MetricImpersonationSessions        = "hms_proxy_impersonation_pool_sessions"
	MetricImpersonationAcquireTimeouts = "hms_proxy_impersonation_session_acquire_timeouts_total"
	MetricImpersonationEvictions       = "hms_proxy_impersonation_session_evictions_total"
)

// Eviction reasons (the reason label of MetricImpersonationEvictions).
const (
	EvictIdle             = "idle"              // a session idle for impersonation-session-idle-ttl-ms
	EvictTransportFailure = "transport_failure" // a session closed after a failed round trip (I/O, timeout, cancelled)
	EvictUserEvicted      = "user_evicted"      // a user idle for impersonation-client-idle-ttl-ms
	EvictUserCapacity     = "user_capacity"     // a user pushed out by impersonation-max-clients
)

// ImpersonationMetrics are the impersonation pools' metrics, summed over
// catalogs. A nil *ImpersonationMetrics records nothing.
type ImpersonationMetrics struct {
	users     prometheus.Gauge
	sessions  *prometheus.GaugeVec
	timeouts  prometheus.Counter
	evictions *prometheus.CounterVec
}

// NewImpersonationMetrics registers the metrics with reg (nil: unregistered).
func NewImpersonationMetrics(reg prometheus.Registerer) (*ImpersonationMetrics, error) {
	r := metric.New(reg, "impersonation metrics")
	m := &ImpersonationMetrics{
		users: r.Gauge(MetricImpersonationUsers,
			"Users with an impersonation session pool (bounded by impersonation-max-clients per catalog)."),
		sessions: r.GaugeVec(MetricImpersonationSessions,
			"Backend sessions of impersonation pools, in use (active) or idle.", "state"),
		timeouts: r.Counter(MetricImpersonationAcquireTimeouts,
			"Calls that found no free session in their user's impersonation pool in time."),
		evictions: r.CounterVec(MetricImpersonationEvictions, "Impersonation sessions closed, by reason.", "reason"),
	}
	for _, s := range []string{"active", "idle"} {
		m.sessions.WithLabelValues(s)
	}
	for _, r := range []string{EvictIdle, EvictTransportFailure, EvictUserEvicted, EvictUserCapacity} {
		m.evictions.WithLabelValues(r)
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *ImpersonationMetrics) addUsers(d int) {
	if m != nil {
		m.users.Add(float64(d))
	}
}

func (m *ImpersonationMetrics) addSessions(active, idle int) {
	if m != nil && (active != 0 || idle != 0) {
		m.sessions.WithLabelValues("active").Add(float64(active))
		m.sessions.WithLabelValues("idle").Add(float64(idle))
	}
}

func (m *ImpersonationMetrics) timeout() {
	if m != nil {
		m.timeouts.Inc()
	}
}

func (m *ImpersonationMetrics) evicted(reason string, n int) {
	if m != nil && n > 0 {
		m.evictions.WithLabelValues(reason).Add(float64(n))
	}
}

// userPools are one catalog's per-user pools.
type userPools struct {
	cat    string
	opt    *ImpersonationOptions
	base   BackendOptions
	shared *Backend
	log    *slog.Logger

	mu    sync.Mutex
	users map[string]*userPool
	done  chan struct{}
	wg    sync.WaitGroup
}

// userPool is one user's pool; ready closes once it is built (or failed).
type userPool struct {
	user    string
	ready   chan struct{}
	b       *Backend
	err     error
	release func()
	last    time.Time // last call (under userPools.mu)

	smu          sync.Mutex
	active, idle int  // last published session counts
	closed       bool // counts are withdrawn from the metrics

	open atomic.Int32 // backend connections open (dialled, not yet closed)
}

// countedConn keeps userPool.open.
type countedConn struct {
	net.Conn
	once sync.Once
	p    *userPool
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.p.open.Add(-1) })
	return c.Conn.Close()
}

// newUserPools builds a catalog's impersonation pools over its shared pool
// (base: the shared pool's options).
func newUserPools(catalog string, base BackendOptions, shared *Backend, o *ImpersonationOptions, log *slog.Logger) (*userPools, error) {
	if o.UserDial == nil {
		return nil, fmt.Errorf("catalog %s: impersonation without a way to open user sessions", catalog)
	}
	if o.MaxClients < 1 || o.PoolSize < 1 {
		return nil, fmt.Errorf("catalog %s: impersonation-max-clients and impersonation-pool-max-size must be at least 1", catalog)
	}
	if o.Log != nil {
		log = o.Log
	}
	base.PoolSize = o.PoolSize
	base.OnSessions, base.OnAcquireTimeout = nil, nil // per user below; base.OnRetire counts for the catalog
	u := &userPools{cat: catalog, opt: o, base: base, shared: shared, log: log.With("catalog", catalog),
		users: map[string]*userPool{}, done: make(chan struct{})}
	if tick := sweepInterval(o.ClientIdleTTL, o.SessionIdleTTL); tick > 0 {
		u.wg.Add(1)
		go u.sweep(tick)
	}
	return u, nil
}

// sweepInterval is how often idle users and sessions are looked for: a
// quarter of the shorter TTL, between 10 ms and 1 s (0: no TTL, no sweep).
func sweepInterval(ttls ...time.Duration) time.Duration {
	var least time.Duration
	for _, t := range ttls {
		if t > 0 && (least == 0 || t < least) {
			least = t
		}
	}
	if least == 0 {
		return 0
	}
	return min(max(least/4, 10*time.Millisecond), time.Second)
}

// backendFor is the pool a call of ctx's caller uses on the lane: the
// caller's own under impersonation, else the shared one.
func (l *Lane) backendFor(ctx context.Context) (*Backend, error) {
	u := l.users
	if u == nil {
		return l.pool, nil
	}
	ri := Info(ctx)
	if ri == nil {
		return l.pool, nil
	}
	id := ri.Identity
	if id == nil || id.User == "" || id.Mechanism == security.Anonymous || (u.opt.Bypass != nil && u.opt.Bypass(id)) {
		return l.pool, nil
	}
	return u.get(ctx, id)
}

// get returns id's pool, building it on first use.
func (u *userPools) get(ctx context.Context, id *security.Identity) (*Backend, error) {
	now := time.Now()
	u.mu.Lock()
	p := u.users[id.User]
	if p == nil {
		if len(u.users) >= u.opt.MaxClients {
			u.evictOldestLocked()
		}
		p = &userPool{user: id.User, ready: make(chan struct{})}
		u.users[id.User] = p
		p.last = now
		u.mu.Unlock()
		u.opt.Metrics.addUsers(1)
		u.build(ctx, p, id)
	} else {
		p.last = now
		u.mu.Unlock()
	}
	select {
	case <-p.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if p.err != nil {
		return nil, p.err
	}
	return p.b, nil
}

// build makes a user's pool; a failure is the answer of the calls waiting
// for it, and the next call tries again.
func (u *userPools) build(ctx context.Context, p *userPool, id *security.Identity) {
	defer close(p.ready)
	dial, release, err := u.opt.UserDial(ctx, id, u.shared)
	if err == nil {
		o := u.base
		o.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			p.open.Add(1)
			return &countedConn{Conn: c, p: p}, nil
		}
		o.OnSessions = p.publish(u.opt.Metrics)
		o.OnAcquireTimeout = func(string) { u.opt.Metrics.timeout() }
		o.OnRetire = func(reason string) {
			if u.base.OnRetire != nil {
				u.base.OnRetire(reason)
			}
			switch reason {
			case monitoring.RetireTransport, monitoring.RetireTimeout, monitoring.RetireCancelled:
				u.opt.Metrics.evicted(EvictTransportFailure, 1)
			}
		}
		p.b, err = NewBackend(o)
		if err != nil && release != nil {
			release()
		}
	}
	if err != nil {
		p.err = fmt.Errorf("catalog %s: cannot open backend sessions as %s (impersonation): %w", u.cat, id.User, err)
		u.mu.Lock()
		if u.users[p.user] == p {
			delete(u.users, p.user)
		}
		u.mu.Unlock()
		u.opt.Metrics.addUsers(-1)
		return
	}
	p.release = release
}

// publish keeps the session gauges summed over users.
func (p *userPool) publish(m *ImpersonationMetrics) func(active, idle int) {
	return func(active, idle int) {
		p.smu.Lock()
		defer p.smu.Unlock()
		if p.closed {
			return
		}
		m.addSessions(active-p.active, idle-p.idle)
		p.active, p.idle = active, idle
	}
}

// evictOldestLocked closes the least recently used user's pool to make room.
func (u *userPools) evictOldestLocked() {
	var oldest *userPool
	for _, p := range u.users {
		if oldest == nil || p.last.Before(oldest.last) {
			oldest = p
		}
	}
	if oldest != nil {
		delete(u.users, oldest.user)
		go u.retire(oldest, EvictUserCapacity)
	}
}

// retire closes a user's pool removed from the map: idle sessions at once,
// sessions in use when their calls give them back.
func (u *userPools) retire(p *userPool, reason string) {
	<-p.ready
	if p.err != nil {
		return // build already withdrew it
	}
	p.smu.Lock()
	n := p.active + p.idle
	u.opt.Metrics.addSessions(-p.active, -p.idle)
	p.active, p.idle, p.closed = 0, 0, true
	p.smu.Unlock()
	u.opt.Metrics.evicted(reason, n)
	u.opt.Metrics.addUsers(-1)
	p.b.Close()
	if p.release != nil {
		p.release()
	}
	u.log.Debug("impersonation pool closed", "user", p.user, "reason", reason, "sessions", n)
}

func (u *userPools) sweep(tick time.Duration) {
	defer u.wg.Done()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-u.done:
			return
		case <-t.C:
		}
		now := time.Now()
		var idleUsers, all []*userPool
		u.mu.Lock()
		for name, p := range u.users {
			if ttl := u.opt.ClientIdleTTL; ttl > 0 && now.Sub(p.last) >= ttl {
				delete(u.users, name)
				idleUsers = append(idleUsers, p)
				continue
			}
			all = append(all, p)
		}
		u.mu.Unlock()
		for _, p := range idleUsers {
			u.retire(p, EvictUserEvicted)
		}
		if ttl := u.opt.SessionIdleTTL; ttl > 0 {
			for _, p := range all {
				select {
				case <-p.ready:
				default:
					continue // still being built
				}
				if p.err == nil {
					u.opt.Metrics.evicted(EvictIdle, p.b.closeIdle(ttl))
				}
			}
		}
	}
}

// Users returns the users with a pool (tests, diagnostics).
func (u *userPools) Users() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]string, 0, len(u.users))
	for n := range u.users {
		out = append(out, n)
	}
	return out
}

func (u *userPools) close() {
	close(u.done)
	u.wg.Wait()
	u.mu.Lock()
	ps := make([]*userPool, 0, len(u.users))
	for _, p := range u.users {
		ps = append(ps, p)
	}
	u.users = map[string]*userPool{}
	u.mu.Unlock()
	for _, p := range ps {
		u.retire(p, EvictUserEvicted)
	}
}

// ImpersonationUsers returns the users with an impersonation pool on a
// catalog, and whether the catalog impersonates (tests, diagnostics).
func (r *Router) ImpersonationUsers(catalog string) ([]string, bool) {
	l := r.Lane(catalog)
	if l == nil || l.users == nil {
		return nil, false
	}
	return l.users.Users(), true
}

// ImpersonationSessions returns the backend connections one user's pool on a
// catalog holds open (in use or idle); ok is false when the user has none.
func (r *Router) ImpersonationSessions(catalog, user string) (n int, ok bool) {
	l := r.Lane(catalog)
	if l == nil || l.users == nil {
		return 0, false
	}
	u := l.users
	u.mu.Lock()
	p := u.users[user]
	u.mu.Unlock()
	if p == nil {
		return 0, false
	}
	select {
	case <-p.ready:
	default:
		return 0, true
	}
	if p.err != nil {
		return 0, false
	}
	return int(p.open.Load()), true
}

// closeIdle closes the idle sessions given back more than ttl ago and
// returns how many it closed.
func (b *Backend) closeIdle(ttl time.Duration) int {
	cutoff := time.Now().Add(-ttl)
	var keep []*session
	closed := 0
	for {
		var s *session
		select {
		case s = <-b.idle:
		default:
		}
		if s == nil {
			break
		}
		if s.idle.Before(cutoff) {
			s.conn.Close()
			closed++
		} else {
			keep = append(keep, s)
		}
	}
	for _, s := range keep {
		select {
		case b.idle <- s:
		default:
			s.conn.Close() // cannot happen: at most PoolSize sessions exist
		}
	}
	if closed > 0 {
		b.publish()
	}
	return closed
}
