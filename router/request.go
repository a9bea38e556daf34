// Package router is the request pipeline of hms-proxy: the planner turns a
// request and its method-table row into a Plan (one catalog with its inward
// rewrites, a fan-out, a local answer, or a refusal) without I/O; the policy
// chain (access mode, exposure, and the hooks later features plug into) wraps
// one executor, which calls the catalog's backend pool and rewrites the
// answer outward; every request is counted and audited once.
package router

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hms-proxy/hms-proxy/audit"
	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/locks"
	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/hms-proxy/hms-proxy/router/breaker"
	"github.com/hms-proxy/hms-proxy/router/dbcache"
	"github.com/hms-proxy/hms-proxy/security"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Options are the parts a Router is built from (built in cmd, passed in).
type Options struct {
	Config  *configs.Config
	Metrics *monitoring.Metrics
	Audit   *audit.Logger // nil: audit off
	Log     *slog.Logger
	// Tracer receives per-request debug traces; nil = tracing off (free).
	Tracer Tracer
	// Dial overrides backend dialing (tests, later: SASL); nil = TCP.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Adapters are the compatibility adapters calls are planned with;
	// nil = compat.NewAdapters().
	Adapters *compat.Adapters
	// Outer middlewares run first (rate limits); Inner ones after access
	// mode and exposure, just before the executor (guards, lock shim,
	// breakers). See chain.go.
	Outer, Inner []Middleware
	// Locks is the synthetic lock shim of the non-default catalogs (see
	// locks.go); nil: a lock on another catalog than the default is refused.
	Locks *locks.Shim
	// LockMetrics counts lock-request splits (nil: not counted).
	LockMetrics *locks.Metrics
	// Dials override Dial per catalog name (outbound Kerberos). See security.go.
	Dials map[string]func(ctx context.Context, network, addr string) (net.Conn, error)
	// Local methods the proxy answers itself (delegation tokens), by name;
	// they take precedence over the method table's routing.
	Local map[string]LocalHandler
	// Impersonation of the caller per catalog name (impersonation.go).
	Impersonation map[string]*ImpersonationOptions
	// Tables: view SQL rewrite, the transactional DDL and Iceberg pointer
	// guards, the drop purge (tables.go); they run between exposure and
	// Inner.
	Tables TablePolicies
	// Resilience: breakers, adaptive timeouts, polling, hedged and degraded
	// fan-out, the database caches (resilience.go).
	Resilience ResilienceOptions
}

// Router routes calls of every front-door listener.
type Router struct {
	ns       *Namespace
	table    *Table
	backends map[*Catalog]*Backend
	policies map[*Catalog]*Policy
	exposed  bool // some catalog's expose rules hide something
	runtimes map[*Catalog]*compat.Runtime
	dialects map[*Catalog]*compat.Dialect // backend field-id dialects (HDP 3.1.5 Table)
	guards   map[*Catalog]*compat.Guard   // drop implied fields; refuse writes the backend runtime would silently lose
	adapters *compat.Adapters
	metrics  *monitoring.Metrics
	audit    *audit.Logger
	log      *slog.Logger
	maxMsg   int
	seq      atomic.Uint64
	bufs     sync.Pool
	trace    Tracer
	chain    Handler
	logs     *logLimiter

	shim        *locks.Shim
	lockMetrics *locks.Metrics
	lockStore   lockStoreState
	tablePaths  map[string][][]int16 // create_table*/alter_table*: where their Tables are (ACID policy)
	locals      map[string]LocalHandler
	users       map[*Catalog]*userPools
	res         resilience
}

// Tracer sees one request at each stage (logging.debug-tracing). Every
// argument is only valid during the call.
type Tracer interface {
	// Incoming: the client's call as received.
	Incoming(id uint64, conn *ConnInfo, m *wire.Message)
	// Backend: the chosen catalog and the rewritten call sent to it.
	Backend(id uint64, catalog string, req []byte)
	// BackendReply: the backend's answer (reply nil when err is set).
	BackendReply(id uint64, catalog string, reply *wire.Message, err error)
	// ClientReply: what the client gets (nil for oneway calls).
	ClientReply(id uint64, reply []byte)
	// Plan: what the router decided to do with the request.
	Plan(id uint64, p *Plan)
}

// New builds the router, its method table and one backend pool per catalog.
func New(opt Options) (*Router, error) {
	cfg := opt.Config
	table, err := BuildTable()
	if err != nil {
		return nil, err
	}
	r := &Router{table: table, backends: map[*Catalog]*Backend{}, policies: map[*Catalog]*Policy{}, runtimes: map[*Catalog]*compat.Runtime{}, dialects: map[*Catalog]*compat.Dialect{}, guards: map[*Catalog]*compat.Guard{},
		metrics: opt.Metrics, audit: opt.Audit, log: opt.Log, maxMsg: int(cfg.Server.MaxMessageSize), trace: opt.Tracer,
		shim: opt.Locks, lockMetrics: opt.LockMetrics, tablePaths: ddlTablePaths()}
	if err := tableFieldIDs(); err != nil {
		return nil, err
	}
	if err := commitFieldIDs(); err != nil {
		return nil, err
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.logs = newLogLimiter(r.log, time.Second)
	if r.adapters = opt.Adapters; r.adapters == nil {
		if r.adapters, err = compat.NewAdapters(); err != nil {
			return nil, err
		}
	}
	r.bufs.New = func() any { b := make([]byte, 0, 4096); return &b }
	r.res = resilience{opt: opt.Resilience, guards: map[*Catalog]*breaker.Guard{}, state: map[*Catalog]*catalogState{},
		cache: opt.Resilience.Cache, m: opt.Resilience.Metrics}
	var cats []*Catalog
	byName := map[string]*configs.CatalogConfig{}
	for _, cc := range cfg.Catalogs {
		backendName := cc.Conf["metastore.catalog.default"]
		if backendName == "" {
			backendName = cc.Conf["hive.metastore.catalog.default"]
		}
		if backendName == "" {
			backendName = "hive"
		}
		cats = append(cats, &Catalog{Name: cc.Name, BackendName: backendName})
		byName[cc.Name] = cc
	}
	r.ns = NewNamespace(cfg.Routing.CatalogDBSeparator, cfg.Routing.DefaultCatalog,
		cfg.Federation.PreserveBackendCatalogName, cats)
	if r.ns.Default() == nil {
		return nil, fmt.Errorf("routing.default-catalog=%q is not one of catalogs", cfg.Routing.DefaultCatalog)
	}
	for _, c := range cats {
		cc := byName[c.Name]
		name := c.Name
		sel := strings.ToUpper(firstNonEmpty(cc.Conf["metastore.thrift.uri.selection"], cc.Conf["hive.metastore.uri.selection"]))
		dial := opt.Dial
		if d := opt.Dials[c.Name]; d != nil {
			dial = d
		}
		guard, err := r.res.guardFor(c, cc.LatencyBudget)
		if err != nil {
			return nil, err
		}
		r.res.guards[c], r.res.state[c] = guard, &catalogState{}
		r.res.m.Known(c.Name, safeFanoutMethods...)
		bo := BackendOptions{
			Catalog: c.Name, URIs: cc.URIs, Sequential: sel == "SEQUENTIAL",
			PoolSize: cc.SharedSessionPoolSize, BorrowTimeout: cc.LatencyBudget, CallBudget: cc.LatencyBudget,
			ConnectTimeout: cc.ConnectTimeout, SocketTimeout: cc.SocketTimeout,
			ConnectRetries: cc.ConnectRetries, RetryDelay: cc.ConnectRetryDelay, Framed: cc.FramedTransport,
			Dial:       dial,
			OnSessions: r.metrics.BackendSessionsOf(name),
			OnAcquireTimeout: func(op string) {
				if r.metrics != nil {
					r.metrics.SessionAcquireTimeout(name, op)
				}
			},
			OnRetire: func(reason string) { r.metrics.SessionRetired(name, reason) },
			Table:    r.table,
			Guard:    guard,
		}
		b, err := NewBackend(bo)
		if err != nil {
			return nil, err
		}
		r.backends[c] = b
		if io := opt.Impersonation[c.Name]; io != nil {
			if err := r.impersonate(c, bo, io); err != nil {
				return nil, err
			}
		}
		r.policies[c] = newPolicy(cc)
		r.exposed = r.exposed || r.policies[c].exposure.active()
		if r.runtimes[c], err = compat.Lookup(string(cc.RuntimeProfile)); err != nil {
			return nil, fmt.Errorf("catalog.%s.runtime-profile: %v", c.Name, err)
		}
		if r.dialects[c], err = compat.NewDialect(r.runtimes[c]); err != nil {
			return nil, err
		}
		if r.guards[c], err = compat.NewGuard(r.runtimes[c]); err != nil {
			return nil, err
		}
		if r.metrics != nil {
			r.metrics.KnownBackend(c.Name)
		}
	}
	mws := append([]Middleware{}, opt.Outer...)
	tables, err := newTablePolicy(r, opt.Tables)
	if err != nil {
		return nil, err
	}
	mws = append(mws, r.accessMode, r.exposure, tables.middleware, r.acidTables)
	if r.shim != nil {
		mws = append(mws, r.lockShim)
	}
	mws = append(mws, opt.Inner...)
	mws = append(mws, r.invalidateDatabases) // innermost: only calls that reached the executor
	r.chain = compose(r.execute, mws...)
	r.locals = opt.Local
	if r.res.cache.Shared(dbcache.DatabaseList) {
		r.res.allLoaders = map[*Catalog]dbcache.Loader{}
		for _, c := range cats {
			r.res.allLoaders[c] = r.newListLoader(c, nil, "get_all_databases", emptyArgs)
		}
	}
	if po := opt.Resilience.Polling; po != nil {
		if r.res.poller, err = r.newPoller(*po); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// Table returns the method table (metric label set, tests).
func (r *Router) Table() *Table { return r.table }

// Namespace returns the naming model.
func (r *Router) Namespace() *Namespace { return r.ns }

// WriteIsolated reports whether concurrent writers of one table of catalog
// are serialized by a lock the proxy can rely on: the default catalog's own
// metastore lock, or, for any other catalog (whose locks the lock shim
// serves, see locks.go), the shim when it judges conflicts. The shim's store
// decides the reach: IN_MEMORY serializes this instance's writers only,
// ZOOKEEPER those of every instance sharing it. (The Iceberg REST frontend
// allows writes only where this holds.)
func (r *Router) WriteIsolated(catalog string) bool {
	c := r.ns.Lookup(catalog)
	if c == nil {
		return false
	}
	return c.Default || r.shim != nil && r.shim.Isolates()
}

// Close stops the background work and closes every backend pool.
func (r *Router) Close() {
	if r.res.poller != nil {
		r.res.poller.Close()
	}
	if r.res.cache != nil {
		r.res.cache.Close()
	}
	for _, u := range r.users {
		u.close()
	}
	for _, b := range r.backends {
		b.Close()
	}
}

// Frontend is one front-door listener's view: its name and the method set of
// its profile.
type Frontend struct {
	Name    string
	Profile thriftgen.ProfileSet
	Runtime *compat.Runtime // identity (getVersion); nil = forward
	Dialect *compat.Dialect // field-id dialect of the profile's clients; nil = canonical
	// Internal: the proxy's own in-process connections (the Iceberg REST
	// frontend's metastore client). What they hold, such as a lock taken for
	// a commit, belongs to this instance and ends with it.
	Internal bool
}

// Allows reports whether the listener's profile has the method.
func (f *Frontend) Allows(s *Spec) bool {
	return f == nil || f.Profile == 0 || s.Method.Profiles&f.Profile != 0
}

// ConnInfo is the per-connection state the pipeline reads.
type ConnInfo struct {
	Remote   string
	Frontend *Frontend
	identity atomic.Pointer[security.Identity]
}

// Identity is who the connection's requests run for (set_ugi today, SASL
// later); nil when nothing was asserted.
func (c *ConnInfo) Identity() *security.Identity { return c.identity.Load() }

// SetIdentity binds an identity to the connection (the front door does it
// after a SASL handshake; set_ugi does it for unauthenticated clients).
func (c *ConnInfo) SetIdentity(id *security.Identity) { c.identity.Store(id) }

// User is the connection's user name for logs and audit ("" when none).
func (c *ConnInfo) User() string { return c.Identity().Name() }

type ctxKey struct{}

// RequestInfo travels in the context through every layer.
type RequestInfo struct {
	ID       uint64
	Method   string
	Conn     *ConnInfo
	Identity *security.Identity // the connection's identity when the call arrived
}

// Info returns the request info of ctx, or nil.
func Info(ctx context.Context) *RequestInfo {
	ri, _ := ctx.Value(ctxKey{}).(*RequestInfo)
	return ri
}

// request is one client call on its way through the pipeline: the message,
// its plan, and its outcome (read by metrics, audit and logs). It lives for
// the call; small inline arrays keep a typical request allocation-free.
type request struct {
	msg  *wire.Message
	conn *ConnInfo
	info RequestInfo
	plan Plan
	out  []byte // the client's answer

	catalog       string
	backend       string // backend label when it is not the catalog's (the synthetic lock shim)
	fanout        bool
	routed        bool
	defaultRouted bool
	fallback      bool
	status        string
	reason        string // refusal reason label

	rt   route      // the catalog hints of the arguments
	av   argVisitor // their walk
	x    Exchange   // the single-catalog exchange
	out2 outward    // outward rewrites collected while the reply is read
	rw   ReplyWalk  // the walk that collects them

	// Fan-out (fanout.go): the catalogs asked (legs not left out), those
	// left out under SAFE_FANOUT_READS, the bound of attempts in flight.
	asked, omitted []string
	askedArr       [2]string
	fanSem         chan struct{}
	// Exchange.Once
	once    sync.Once
	onceErr error
}

// Handle serves one client message and appends the reply to out (nothing for
// oneway calls).
func (r *Router) Handle(ctx context.Context, conn *ConnInfo, msg *wire.Message, out []byte) []byte {
	start := time.Now()
	req := &request{msg: msg, conn: conn, status: "ok", out: out}
	id := r.seq.Add(1)
	req.info = RequestInfo{ID: id, Method: msg.Name, Conn: conn, Identity: conn.Identity()}
	ctx = context.WithValue(ctx, ctxKey{}, &req.info)
	mark := len(out)
	if r.trace != nil {
		r.trace.Incoming(id, conn, msg)
	}
	if d := conn.Frontend.dialect(); d.Touches(msg.Name, false) || d.Touches(msg.Name, true) {
		r.serveDialect(ctx, req, d)
	} else {
		r.serve(ctx, req)
	}
	if r.trace != nil {
		r.trace.ClientReply(id, req.out[mark:])
	}
	r.finish(req, time.Since(start))
	return req.out
}

// serve plans the request and runs the plan.
func (r *Router) serve(ctx context.Context, req *request) {
	r.plan(req)
	p := &req.plan
	if r.trace != nil {
		r.trace.Plan(req.info.ID, p)
	}
	switch p.Kind {
	case PlanRefuse:
		if p.Refusal.Reason == "ambiguous" && r.metrics != nil {
			r.metrics.RoutingAmbiguous()
		}
		r.refuse(req, p.Refusal)
	case PlanLocal:
		if p.Local == AnswerHandler {
			r.serveLocalCall(ctx, req, r.locals[req.msg.Name])
			break
		}
		r.local(req)
	case PlanSingle:
		req.catalog, req.routed, req.defaultRouted = p.Target.Name, true, p.DefaultRouted
		req.x = Exchange{req: req, Cat: p.Target}
		if err := r.chain(ctx, &req.x); err != nil {
			r.answer(req, err)
		}
	case PlanFanOut:
		r.fanOut(ctx, req)
	}
}

// finish counts and audits the request once.
func (r *Router) finish(req *request, d time.Duration) {
	msg := req.msg
	method := msg.Name
	if req.plan.Spec == nil {
		method = "other"
	}
	catalog, backend := req.catalog, req.catalog
	if req.backend != "" {
		backend = req.backend
	}
	if req.fanout {
		catalog, backend = "all", "fanout"
	}
	if catalog == "" {
		catalog, backend = "none", "none"
	}
	if r.metrics != nil {
		r.metrics.ObserveRequest(method, catalog, backend, req.status, d)
		if req.defaultRouted {
			r.metrics.DefaultCatalogRouted(method)
		}
	}
	if r.audit.Enabled() {
		rec := &audit.Record{RequestID: req.info.ID, Method: msg.Name, Catalog: catalog, Backend: backend,
			Status: req.status, DurationMs: d.Milliseconds(), RemoteAddress: req.conn.Remote,
			AuthenticatedUser: req.conn.User(), Routed: req.routed, Fanout: req.fanout, Fallback: req.fallback,
			DefaultCatalogRouted: req.defaultRouted, OmittedCatalogs: req.omitted}
		if req.plan.Spec != nil {
			rec.OperationClass = string(req.plan.Spec.Family)
		}
		r.audit.Log(rec)
	}
}

// view returns a string sharing b's bytes. The router uses it only for
// values read from the message being served, whose buffer is neither
// changed nor reused until the call is answered; nothing that outlives the
// call may keep such a string.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// outward collects the internal → external rewrites of a result body.
// Replacement bytes are appended to one arena per call (slices taken before
// the arena grows stay valid), and a catalog's external name is encoded
// once, so a list of thousands of partitions costs a handful of allocations.
// It runs after a reply was read (outwardPatches), or while the pool reads
// it (ReplyWalk), which saves a second pass over the reply.
type outward struct {
	ns      *Namespace
	cat     *Catalog
	patches []wire.Patch
	arena   []byte
}

// Visit collects one span (wire.Visitor).
func (o *outward) Visit(s *wire.Span) error {
	cat, ns := o.cat, o.ns
	switch s.Role {
	case RoleDB, RoleFullTable:
		if cat.Default {
			return nil
		}
		start := len(o.arena)
		o.arena = appendPrefixed(o.arena, cat.Name, ns.sep, "", s.Val)
		o.patches = append(o.patches, wire.Patch{Start: s.Start, End: s.End, Data: o.arena[start:len(o.arena):len(o.arena)]})
	case RoleCatalog:
		if ns.preserve || string(s.Val) == cat.Name {
			return nil
		}
		o.patches = append(o.patches, wire.Patch{Start: s.Start, End: s.End, Data: cat.encoded()})
	}
	return nil
}

// Reset forgets what was collected (a retried call).
func (o *outward) Reset() { o.patches, o.arena = o.patches[:0], o.arena[:0] }

// outwardPatches computes the outward rewrites of a result body.
func (r *Router) outwardPatches(plan *wire.Plan, cat *Catalog, body []byte, patches []wire.Patch) ([]wire.Patch, error) {
	o := outward{ns: r.ns, cat: cat, patches: patches}
	err := wire.WalkVisitor(body, plan, 0, &o)
	return o.patches, err
}

// appendPrefixed appends the Thrift string a+b+c+d.
func appendPrefixed(dst []byte, a, b, c string, d []byte) []byte {
	n := len(a) + len(b) + len(c) + len(d)
	dst = append(dst, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	dst = append(dst, a...)
	dst = append(dst, b...)
	dst = append(dst, c...)
	return append(dst, d...)
}
