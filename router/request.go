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
	"sync"
	"sync/atomic"
	"time"

	"github.com/hms-proxy/hms-proxy/audit"
	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/locks"
	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/hms-proxy/hms-proxy/router/dbcache"
	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/security"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Options are the parts a Router is built from (built in app, passed in).
type Options struct {
	// Namespace is the naming model (NamespaceFor) and Lanes its catalogs'
	// lanes in the same order (NewLane): one lane per catalog.
	Namespace *naming.Namespace
	Lanes     []*Lane
	// Table is the method table (nil: methods.BuildTable()); the lanes'
	// pools use the same one.
	Table *methods.Table
	// MaxMessage bounds a request's argument walk (server.max-message-size).
	MaxMessage int
	Metrics    *monitoring.Metrics
	Audit      *audit.Logger // nil: audit off
	Log        *slog.Logger
	// Tracer receives per-request debug traces; nil = tracing off (free).
	Tracer Tracer
	// Adapters are the compatibility adapters calls are planned with;
	// nil = compat.NewAdapters().
	Adapters *compat.Adapters
	// The links of the policy chain that are built outside the router, at
	// their places in it (chain.go says the order and why): Outer first
	// (rate limits), Authorize after exposure (the Ranger slot), Inner just
	// before the executor (cache coherence).
	Outer, Authorize, Inner []Middleware
	// Locks is the synthetic lock shim of the non-default catalogs (see
	// locks.go); nil: a lock on another catalog than the default is refused.
	Locks *locks.Shim
	// LockMetrics counts lock-request splits (nil: not counted).
	LockMetrics *locks.Metrics
	// Local methods the proxy answers itself (delegation tokens), by name;
	// they take precedence over the method table's routing.
	Local map[string]LocalHandler
	// Tables: view SQL rewrite, the transactional DDL and Iceberg pointer
	// guards, the drop purge (tables.go).
	Tables TablePolicies
	// Resilience: polling, hedged and degraded fan-out, the database
	// caches (resilience.go); the breakers are the lanes'.
	Resilience ResilienceOptions
	// NotificationCountPage is how many events one get_next_notification
	// of the exposure count reads (exposure_notify.go; 0: 1000).
	NotificationCountPage int
}

// Router routes calls of every front-door listener. Everything of one
// catalog is in its lane (lane.go); the router holds the lanes and what
// every catalog shares.
type Router struct {
	ns       *naming.Namespace
	lanes    []*Lane // by naming.Catalog.Index
	table    *methods.Table
	exposed  bool // some lane's expose rules hide something
	guarded  bool // some lane has a Ranger authorizer
	adapters *compat.Adapters
	metrics  *monitoring.Metrics
	audit    *audit.Logger
	log      *slog.Logger
	maxMsg   int
	seq      atomic.Uint64
	bufs     sync.Pool
	trace    Tracer
	planner  *planner.Planner
	chain    Handler
	logs     *logLimiter

	shim        *locks.Shim
	lockMetrics *locks.Metrics
	lockStore   lockStoreState
	tablePaths  map[string][][]int16 // create_table*/alter_table*: where their Tables are (ACID policy)
	locals      map[string]LocalHandler
	res         resilience
	notifyPage  int32 // Options.NotificationCountPage
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
	Plan(id uint64, p *planner.Plan)
}

// New builds the router over its lanes.
func New(opt Options) (*Router, error) {
	ns := opt.Namespace
	if ns == nil || ns.Default() == nil {
		return nil, fmt.Errorf("router: no naming model with a default catalog")
	}
	if len(opt.Lanes) != len(ns.Catalogs()) {
		return nil, fmt.Errorf("router: %d lanes for %d catalogs", len(opt.Lanes), len(ns.Catalogs()))
	}
	for i, c := range ns.Catalogs() {
		if l := opt.Lanes[i]; l == nil || l.cat != c {
			return nil, fmt.Errorf("router: lane %d is not catalog %s's", i, c.Name)
		}
		if opt.Lanes[i].authorizer != nil && len(opt.Authorize) == 0 {
			// A safety feature configured but not built refuses to start.
			return nil, fmt.Errorf("catalog %s has a Ranger authorizer, but the policy chain has no authorization link to run it", c.Name)
		}
	}
	table := opt.Table
	if table == nil {
		var err error
		if table, err = methods.BuildTable(); err != nil {
			return nil, err
		}
	}
	r := &Router{ns: ns, lanes: opt.Lanes, table: table,
		metrics: opt.Metrics, audit: opt.Audit, log: opt.Log, maxMsg: opt.MaxMessage, trace: opt.Tracer,
		shim: opt.Locks, lockMetrics: opt.LockMetrics, tablePaths: ddlTablePaths()}
	if err := tableFieldIDs(); err != nil {
		return nil, err
	}
	if err := planner.CommitFieldIDs(); err != nil {
		return nil, err
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.notifyPage = notifyCountPage
	if n := opt.NotificationCountPage; n > 0 && n < notifyCountPage {
		r.notifyPage = int32(n)
	}
	r.logs = newLogLimiter(r.log, time.Second)
	if r.adapters = opt.Adapters; r.adapters == nil {
		var err error
		if r.adapters, err = compat.NewAdapters(); err != nil {
			return nil, err
		}
	}
	r.bufs.New = func() any { b := make([]byte, 0, 4096); return &b }
	r.res = resilience{opt: opt.Resilience, cache: opt.Resilience.Cache, m: opt.Resilience.Metrics}
	for _, l := range r.lanes {
		r.exposed = r.exposed || l.policy.exposure.active()
		r.guarded = r.guarded || l.authorizer != nil
		r.res.m.Known(l.cat.Name, safeFanoutMethods...)
		if r.metrics != nil {
			r.metrics.KnownBackend(l.cat.Name)
		}
		if r.res.cache.Shared(dbcache.DatabaseList) {
			l.allLoader = r.newListLoader(l.cat, nil, "get_all_databases", planner.EmptyArgs)
		}
	}
	tables, err := newTablePolicy(r, opt.Tables)
	if err != nil {
		return nil, err
	}
	r.chain = compose(r.execute, r.links(opt, tables)...)
	r.locals = opt.Local
	r.planner = planner.New(r.facts())
	if po := opt.Resilience.Polling; po != nil {
		if r.res.poller, err = r.newPoller(*po); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Table returns the method table (metric label set, tests).
func (r *Router) Table() *methods.Table { return r.table }

// facts are what the planner may know: the lanes' static facts (their
// catalogs and runtimes) and the router-wide ones.
func (r *Router) facts() planner.Facts {
	f := planner.Facts{Namespace: r.ns, Table: r.table, Adapters: r.adapters, MaxMessage: r.maxMsg,
		LockShim: r.shim != nil, Local: map[string]bool{},
		SyntheticRefreshPrivileges: r.res.opt.SyntheticRefreshPrivileges}
	for _, l := range r.lanes {
		f.Lanes = append(f.Lanes, planner.LaneFacts{Catalog: l.cat, Runtime: l.runtime})
	}
	for name, h := range r.locals {
		f.Local[name] = h != nil
	}
	return f
}

// Namespace returns the naming model.
func (r *Router) Namespace() *naming.Namespace { return r.ns }

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

// Close stops the background work and closes every lane's pools.
func (r *Router) Close() {
	if r.res.poller != nil {
		r.res.poller.Close()
	}
	if r.res.cache != nil {
		r.res.cache.Close()
	}
	for _, l := range r.lanes {
		l.Close()
	}
}

// ConnInfo is the per-connection state the pipeline reads.
type ConnInfo struct {
	Remote   string
	Frontend *planner.Frontend
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
	r    *Router
	msg  *wire.Message
	conn *ConnInfo
	info RequestInfo
	plan planner.Plan
	out  []byte // the client's answer

	catalog       string
	backend       string // backend label when it is not the catalog's (the synthetic lock shim)
	fanout        bool
	routed        bool
	defaultRouted bool
	fallback      bool
	status        string
	reason        string // refusal reason label

	x    Exchange  // the single-catalog exchange
	out2 outward   // outward rewrites collected while the reply is read
	rw   ReplyWalk // the walk that collects them

	// Fan-out (cursor.go, fanout.go): the legs' exchanges, the catalogs
	// asked (legs not left out), those left out under SAFE_FANOUT_READS,
	// the bound of attempts in flight.
	legs           []Exchange
	asked, omitted []string
	askedArr       [2]string
	fanSem         chan struct{}
	// What the Ranger link decided (ranger.go), for the audit record: its
	// decision, the deciding policy (nil: none named), the objects answers
	// lost.
	rangerMu       sync.Mutex
	rangerDecision string
	rangerPolicy   *int64
	rangerFiltered int
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
	if d := clientDialect(conn.Frontend); d.Touches(msg.Name, false) || d.Touches(msg.Name, true) {
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
			DefaultCatalogRouted: req.defaultRouted, OmittedCatalogs: req.omitted,
			RangerDecision: req.rangerDecision, RangerPolicyID: req.rangerPolicy, RangerFiltered: req.rangerFiltered}
		if req.plan.Spec != nil {
			rec.OperationClass = string(req.plan.Spec.Family)
		}
		r.audit.Log(rec)
	}
}

// outward collects the internal → external rewrites of a result body.
// Replacement bytes are appended to one arena per call (slices taken before
// the arena grows stay valid), and a catalog's external name is encoded
// once, so a list of thousands of partitions costs a handful of allocations.
// It runs after a reply was read (outwardPatches), or while the pool reads
// it (ReplyWalk), which saves a second pass over the reply.
type outward struct {
	ns      *naming.Namespace
	cat     *naming.Catalog
	patches []wire.Patch
	arena   []byte
}

// Visit collects one span (wire.Visitor).
func (o *outward) Visit(s *wire.Span) error {
	cat, ns := o.cat, o.ns
	switch s.Role {
	case methods.RoleDB, methods.RoleFullTable:
		if cat.Default {
			return nil
		}
		start := len(o.arena)
		o.arena = naming.AppendPrefixed(o.arena, cat.Name, ns.Separator(), "", s.Val)
		o.patches = append(o.patches, wire.Patch{Start: s.Start, End: s.End, Data: o.arena[start:len(o.arena):len(o.arena)]})
	case methods.RoleCatalog:
		if ns.Preserve() || string(s.Val) == cat.Name {
			return nil
		}
		o.patches = append(o.patches, wire.Patch{Start: s.Start, End: s.End, Data: cat.Encoded()})
	}
	return nil
}

// Reset forgets what was collected (a retried call).
func (o *outward) Reset() { o.patches, o.arena = o.patches[:0], o.arena[:0] }

// outwardPatches computes the outward rewrites of a result body.
func (r *Router) outwardPatches(plan *wire.Plan, cat *naming.Catalog, body []byte, patches []wire.Patch) ([]wire.Patch, error) {
	o := outward{ns: r.ns, cat: cat, patches: patches}
	err := wire.WalkVisitor(body, plan, 0, &o)
	return o.patches, err
}
