// Package router is the request pipeline of hms-proxy: classify the RPC by the
// method table, resolve its namespace to one catalog (or a fan-out set, or a
// refusal), apply policy, rewrite names inward, call the catalog's backend
// pool, rewrite names outward, and count and audit the call.
package router

import (
	"context"
	"errors"
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
	"github.com/hms-proxy/hms-proxy/monitoring"
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
}

// Router routes calls of every front-door listener.
type Router struct {
	ns       *Namespace
	table    *Table
	backends map[*Catalog]*Backend
	policies map[*Catalog]*Policy
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
}

// New builds the router, its method table and one backend pool per catalog.
func New(opt Options) (*Router, error) {
	cfg := opt.Config
	table, err := BuildTable()
	if err != nil {
		return nil, err
	}
	r := &Router{table: table, backends: map[*Catalog]*Backend{}, policies: map[*Catalog]*Policy{}, runtimes: map[*Catalog]*compat.Runtime{}, dialects: map[*Catalog]*compat.Dialect{}, guards: map[*Catalog]*compat.Guard{},
		metrics: opt.Metrics, audit: opt.Audit, log: opt.Log, maxMsg: int(cfg.Server.MaxMessageSize), trace: opt.Tracer}
	if r.log == nil {
		r.log = slog.Default()
	}
	if r.adapters = opt.Adapters; r.adapters == nil {
		if r.adapters, err = compat.NewAdapters(); err != nil {
			return nil, err
		}
	}
	r.bufs.New = func() any { b := make([]byte, 0, 4096); return &b }
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
		b, err := NewBackend(BackendOptions{
			Catalog: c.Name, URIs: cc.URIs, Sequential: sel == "SEQUENTIAL",
			PoolSize: cc.SharedSessionPoolSize, BorrowTimeout: cc.LatencyBudget,
			ConnectTimeout: cc.ConnectTimeout, SocketTimeout: cc.SocketTimeout,
			ConnectRetries: cc.ConnectRetries, RetryDelay: cc.ConnectRetryDelay, Framed: cc.FramedTransport,
			Dial:       opt.Dial,
			OnSessions: r.metrics.BackendSessionsOf(name),
			OnAcquireTimeout: func(op string) {
				if r.metrics != nil {
					r.metrics.SessionAcquireTimeout(name, op)
				}
			},
		})
		if err != nil {
			return nil, err
		}
		r.backends[c] = b
		r.policies[c] = newPolicy(cc)
		if r.runtimes[c], err = compat.Lookup(string(cc.RuntimeProfile)); err != nil {
			return nil, fmt.Errorf("catalog.%s.runtime-profile: %v", c.Name, err)
		}
		if r.dialects[c], err = compat.NewDialect(r.runtimes[c]); err != nil {
			return nil, err
		}
		if r.guards[c], err = compat.NewGuard(r.runtimes[c]); err != nil {
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

// Close closes every backend pool.
func (r *Router) Close() {
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

// call is one request's outcome, read by metrics and audit.
type call struct {
	msg           *wire.Message
	spec          *Spec
	conn          *ConnInfo
	catalog       string
	fanout        bool
	routed        bool
	defaultRouted bool
	fallback      bool
	status        string
	rt            route
	info          RequestInfo
	out           outward   // outward rewrites collected while reading the reply
	rw            ReplyWalk // the walk that collects them
}

// Handle serves one client message and appends the reply to out (nothing for
// oneway calls).
func (r *Router) Handle(ctx context.Context, conn *ConnInfo, msg *wire.Message, out []byte) []byte {
	start := time.Now()
	c := &call{msg: msg, conn: conn, status: "ok"}
	id := r.seq.Add(1)
	c.info = RequestInfo{ID: id, Method: msg.Name, Conn: conn, Identity: conn.Identity()}
	ctx = context.WithValue(ctx, ctxKey{}, &c.info)
	mark := len(out)
	if r.trace != nil {
		r.trace.Incoming(id, conn, msg)
	}
	if d := conn.Frontend.dialect(); d.Touches(msg.Name, false) || d.Touches(msg.Name, true) {
		out = r.dispatchDialect(ctx, c, d, out)
	} else {
		out = r.dispatch(ctx, c, out)
	}
	if r.trace != nil {
		r.trace.ClientReply(id, out[mark:])
	}
	d := time.Since(start)
	method := msg.Name
	if c.spec == nil {
		method = "other"
	}
	catalog, backend := c.catalog, c.catalog
	if c.fanout {
		catalog, backend = "all", "fanout"
	}
	if catalog == "" {
		catalog, backend = "none", "none"
	}
	if r.metrics != nil {
		r.metrics.ObserveRequest(method, catalog, backend, c.status, d)
		if c.defaultRouted {
			r.metrics.DefaultCatalogRouted(method)
		}
	}
	if r.audit.Enabled() {
		rec := &audit.Record{RequestID: id, Method: msg.Name, Catalog: catalog, Backend: backend,
			Status: c.status, DurationMs: d.Milliseconds(), RemoteAddress: conn.Remote,
			AuthenticatedUser: conn.User(), Routed: c.routed, Fanout: c.fanout, Fallback: c.fallback,
			DefaultCatalogRouted: c.defaultRouted}
		if c.spec != nil {
			rec.OperationClass = string(c.spec.Family)
		}
		r.audit.Log(rec)
	}
	return out
}

func (r *Router) dispatch(ctx context.Context, c *call, out []byte) []byte {
	m := c.msg
	spec := r.table.Lookup(m.Name)
	if spec == nil || !c.conn.Frontend.Allows(spec) {
		c.status = "error"
		return append(out, wire.AppException(m.Name, m.SeqID, wire.AppUnknownMethod,
			fmt.Sprintf("Invalid method name: '%s'", m.Name))...)
	}
	c.spec = spec
	if m.Type != wire.Call && m.Type != wire.Oneway {
		c.status = "error"
		return append(out, wire.AppException(m.Name, m.SeqID, wire.AppInvalidMessageType,
			fmt.Sprintf("%s: message type %d is not a call", m.Name, m.Type))...)
	}
	switch spec.Special {
	case RefuseAlways:
		return r.refuse(c, out, fmt.Sprintf("%s is refused by hms-proxy: %s", m.Name, spec.Why))
	case DropOneway:
		r.log.Warn("dropped fb303 control call; it never reaches a backend", "method", m.Name, "remote", c.conn.Remote)
		if m.Type == wire.Oneway {
			return out
		}
		return r.refuse(c, out, m.Name+" is not forwarded by hms-proxy")
	case LocalSetUGI:
		return r.setUGI(c, out)
	case LocalCatalogs:
		return r.localCatalogs(c, out)
	case LocalVersion:
		if fe := c.conn.Frontend; fe != nil && fe.Runtime != nil {
			body := wire.Struct(wire.Field{ID: 0, V: wire.Str(fe.Runtime.Version)})
			return wire.AppendMessage(out, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID}, &body)
		}
	case FanOutDatabases:
		return r.fanOutDatabases(ctx, c, out)
	case FanOutTableMeta:
		return r.fanOutTableMeta(ctx, c, out)
	}
	return r.single(ctx, c, out)
}

// route is the namespace resolution of one request. It lives in the call,
// with small inline arrays, so a typical request allocates nothing for it.
type route struct {
	cat      *Catalog
	explicit bool
	conflict []string
	patches  []wire.Patch
	dbs      []string // internal database names named by the request
	tables   []string
	patchArr [4]wire.Patch
	dbArr    [2]string
	tblArr   [2]string
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

func (rt *route) hint(c *Catalog) {
	if rt.cat == nil || !rt.explicit {
		rt.cat, rt.explicit = c, true
		return
	}
	if rt.cat != c {
		for _, n := range rt.conflict {
			if n == c.Name {
				return
			}
		}
		if len(rt.conflict) == 0 {
			rt.conflict = append(rt.conflict, rt.cat.Name)
		}
		rt.conflict = append(rt.conflict, c.Name)
	}
}

// routeArgs walks the arguments once: it collects catalog hints and records
// the inward rewrites (external → internal names).
func (r *Router) routeArgs(spec *Spec, body []byte, rt *route) error {
	rt.patches, rt.dbs, rt.tables = rt.patchArr[:0], rt.dbArr[:0], rt.tblArr[:0]
	if spec.Args == nil {
		return nil
	}
	ns := r.ns
	return wire.Walk(body, spec.Args, r.maxMsg, func(s *wire.Span) error {
		val := view(s.Val)
		switch s.Role {
		case RoleDB, RoleDBPattern:
			ref := parseDBRef(val)
			if mc := ns.markerCatalog(ref); mc != nil {
				rt.hint(mc)
			}
			db, explicit := ref.name, false
			var c *Catalog
			if ref.hasName && ref.name != "" {
				if s.Role == RoleDBPattern {
					c, db, explicit = ns.SplitPattern(ref.name)
				} else {
					c, db, explicit = ns.SplitDB(ref.name)
				}
			}
			if explicit {
				rt.hint(c)
			}
			if internal := ns.internalRef(ref, db); internal != val {
				rt.patches = append(rt.patches, wire.Patch{Start: s.Start, End: s.End, Data: wire.AppendString(nil, internal)})
			}
			if db != "" && s.Role == RoleDB {
				rt.dbs = append(rt.dbs, db)
			}
		case RoleCatalog:
			if c := ns.Lookup(val); c != nil {
				rt.hint(c)
				if val != c.BackendName {
					rt.patches = append(rt.patches, wire.Patch{Start: s.Start, End: s.End, Data: wire.AppendString(nil, c.BackendName)})
				}
			}
		case RoleFullTable:
			c, internal, explicit := ns.SplitFullTable(val)
			if explicit {
				rt.hint(c)
				rt.patches = append(rt.patches, wire.Patch{Start: s.Start, End: s.End, Data: wire.AppendString(nil, internal)})
			}
			if i := strings.IndexByte(internal, '.'); i > 0 {
				rt.dbs = append(rt.dbs, internal[:i])
				rt.tables = append(rt.tables, internal[i+1:])
			}
		case RoleTable:
			rt.tables = append(rt.tables, val)
		}
		return nil
	})
}

// single is the generic path: one call to one catalog.
func (r *Router) single(ctx context.Context, c *call, out []byte) []byte {
	m, spec := c.msg, c.spec
	rt := &c.rt
	err := r.routeArgs(spec, m.Body(), rt)
	if err != nil {
		c.status = "error"
		return append(out, wire.AppException(m.Name, m.SeqID, wire.AppProtocolError,
			fmt.Sprintf("%s: cannot read arguments: %v", m.Name, err))...)
	}
	if len(rt.conflict) > 0 {
		if r.metrics != nil {
			r.metrics.RoutingAmbiguous()
		}
		return r.refuse(c, out, fmt.Sprintf("%s is ambiguous: the request names catalogs %s; hms-proxy routes a call to exactly one catalog and does not guess",
			m.Name, strings.Join(rt.conflict, " and ")))
	}
	if rt.cat == nil || !rt.explicit {
		if rt.cat == nil && len(rt.dbs) == 0 && spec.Unrouted == Refuse {
			return r.refuse(c, out, fmt.Sprintf("%s names no catalog or database; hms-proxy refuses namespace-less global writes in a multi-catalog deployment instead of guessing a target", m.Name))
		}
		rt.cat = r.ns.Default()
		c.defaultRouted = true
	}
	cat := rt.cat
	c.catalog, c.routed = cat.Name, true
	pol := r.policies[cat]
	writes := spec.IsWrite() && writesData(spec, m.Body())
	if writes {
		if why := pol.writeRefusal(cat.Name, m.Name, rt.dbs); why != "" {
			return r.refuse(c, out, why)
		}
	}
	if pol.exposure.active() && spec.Family == MetadataRead {
		if obj := pol.exposure.hidden(rt.dbs, rt.tables); obj != "" {
			if r.metrics != nil {
				r.metrics.FilteredObjects(m.Name, cat.Name, objectType(obj), 1)
			}
			return r.notFound(c, out, obj+" not found")
		}
	}
	runtime := r.runtimes[cat]
	switch mode, ad := r.adapters.Plan(runtime, spec.Name); mode {
	case compat.Adapted:
		return r.adapted(ctx, c, cat, ad, wire.Apply(nil, m.Body(), rt.patches), writes, out)
	case compat.HortonworksOnly:
		return r.refuse(c, out, compat.HortonworksMessage(m.Name, cat.Name, runtime))
	case compat.Unsupported:
		c.status = "error"
		return append(out, wire.AppException(m.Name, m.SeqID, wire.AppUnknownMethod, compat.UnsupportedMessage(m.Name, cat.Name, runtime))...)
	}
	reqp := r.bufs.Get().(*[]byte)
	req := wire.AppendHeader((*reqp)[:0], wire.Header{Name: m.Name, Type: m.Type, SeqID: m.SeqID})
	bodyAt := len(req)
	req = wire.Apply(req, m.Body(), rt.patches)
	// compat guard: implied fields dropped (counted); for writes the rest refused
	if body, err := r.guardCall(c, cat, req[bodyAt:], writes); err != nil {
		*reqp = req
		r.bufs.Put(reqp)
		return r.refuse(c, out, fmt.Sprintf("%s on catalog %s refused: %v", m.Name, cat.Name, err))
	} else if len(body) != len(req)-bodyAt { // drops only shorten the body
		req = append(req[:bodyAt], body...)
	}
	dialect := r.dialects[cat]
	if dialect.Touches(spec.Name, false) {
		if req, err = remapMessage(req, dialect.ToWire, false); err != nil {
			return r.refuse(c, out, err.Error())
		}
	}
	retry := !spec.IsWrite()
	if r.trace != nil {
		r.trace.Backend(Info(ctx).ID, cat.Name, req)
	}
	// Names are collected while the reply is read, unless something changes
	// the body before it is rewritten (a field-id dialect, list filtering).
	var rw *ReplyWalk
	if spec.Result != nil && !dialect.Touches(spec.Name, true) &&
		!(r.policies[cat].exposure.active() && listFilters[spec.Name] != nil) {
		c.out = outward{ns: r.ns, cat: cat, patches: c.rt.patchArr[:0]}
		c.rw = ReplyWalk{Plan: spec.Result, Visit: c.out.visit, Reset: c.out.reset}
		rw = &c.rw
	}
	reply, done, walked, err := r.backends[cat].CallWalk(ctx, req, m.Type == wire.Oneway, retry, rw)
	*reqp = req
	r.bufs.Put(reqp)
	if r.trace != nil {
		r.trace.BackendReply(Info(ctx).ID, cat.Name, reply, err)
	}
	if err != nil {
		if optionalReads[spec.Name] {
			return r.fallbackEmpty(c, out, "error")
		}
		return r.backendError(c, cat, out, err)
	}
	if reply == nil { // oneway
		return out
	}
	defer done()
	if reply.Type == wire.Reply && dialect.Touches(spec.Name, true) {
		raw, err := remapMessage(reply.Raw, dialect.ToCanonical, true)
		if err != nil {
			return r.backendError(c, cat, out, err)
		}
		reply = &wire.Message{Header: reply.Header, Raw: raw, BodyOff: reply.BodyOff}
	}
	var pre *outward
	if walked {
		pre = &c.out
	}
	return r.replyOutward(c, cat, reply, pre, out)
}

// replyOutward relays a backend reply with names rewritten to the client's
// view and hidden objects filtered out.
func (r *Router) replyOutward(c *call, cat *Catalog, reply *wire.Message, pre *outward, out []byte) []byte {
	m, spec := c.msg, c.spec
	if reply.Type == wire.Exception {
		if optionalReads[spec.Name] {
			return r.fallbackEmpty(c, out, "error")
		}
		if emptyCompatible(spec) {
			if typ, _, err := wire.ParseAppException(reply.Body()); err == nil && typ == wire.AppUnknownMethod {
				return r.fallbackEmpty(c, out, "unknown_method")
			}
		}
		c.status = "error"
		if r.metrics != nil {
			r.metrics.BackendFailure(cat.Name, "TApplicationException")
		}
		out = wire.AppendHeader(out, wire.Header{Name: m.Name, Type: wire.Exception, SeqID: m.SeqID})
		return append(out, reply.Body()...)
	}
	body := reply.Body()
	pol := r.policies[cat]
	if pol.exposure.active() {
		if f := listFilters[spec.Name]; f != nil {
			filtered, n, err := pol.exposure.filterList(f, body, r.firstDB(c))
			if err == nil && n > 0 {
				body = filtered
				if r.metrics != nil {
					r.metrics.FilteredObjects(spec.Name, cat.Name, f.objectType, n)
				}
			}
		}
	}
	out = wire.AppendHeader(out, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID})
	if spec.Result == nil {
		return append(out, body...)
	}
	var patches []wire.Patch
	var err error
	if pre != nil {
		patches = pre.patches // collected while the reply was read
	} else {
		patches, err = r.outwardPatches(spec.Result, cat, body, c.rt.patchArr[:0])
	}
	if err != nil {
		c.status = "error"
		out = out[:len(out)-len(wire.AppendHeader(nil, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID}))]
		return append(out, wire.AppException(m.Name, m.SeqID, wire.AppInternalError,
			fmt.Sprintf("%s: backend %s sent a reply hms-proxy cannot read: %v", m.Name, cat.Name, err))...)
	}
	if resultHasException(body) {
		c.status = "error"
	}
	return wire.Apply(out, body, patches)
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

func (o *outward) visit(s *wire.Span) error {
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

func (o *outward) reset() { o.patches, o.arena = o.patches[:0], o.arena[:0] }

// outwardPatches computes the outward rewrites of a result body.
func (r *Router) outwardPatches(plan *wire.Plan, cat *Catalog, body []byte, patches []wire.Patch) ([]wire.Patch, error) {
	o := outward{ns: r.ns, cat: cat, patches: patches}
	err := wire.Walk(body, plan, 0, o.visit)
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

// resultHasException reports whether a result struct carries a declared
// exception: a Thrift result holds exactly one field, the success value (id
// 0) or one exception, so the first field header decides.
func resultHasException(body []byte) bool {
	b := wire.Buf{B: body}
	t, id, err := b.FieldHeader()
	return err == nil && t != wire.TStop && id != 0
}

func (r *Router) firstDB(c *call) string {
	if len(c.rt.dbs) == 0 {
		return ""
	}
	return c.rt.dbs[0]
}

// refuse answers with the method's MetaException (or, when the method
// declares none, a TApplicationException) carrying why.
func (r *Router) refuse(c *call, out []byte, why string) []byte {
	c.status = "error"
	return r.declaredException(c, out, c.spec.MetaExcField, "MetaException", why)
}

func (r *Router) notFound(c *call, out []byte, why string) []byte {
	c.status = "error"
	if c.spec.NoSuchObjectField >= 0 {
		return r.declaredException(c, out, c.spec.NoSuchObjectField, "NoSuchObjectException", why)
	}
	return r.declaredException(c, out, c.spec.MetaExcField, "MetaException", why)
}

func (r *Router) declaredException(c *call, out []byte, field int16, _ string, why string) []byte {
	m := c.msg
	if field < 0 {
		return append(out, wire.AppException(m.Name, m.SeqID, wire.AppInternalError, why)...)
	}
	body := wire.Struct(wire.Field{ID: field, V: wire.Struct(wire.Field{ID: 1, V: wire.Str(why)})})
	return wire.AppendMessage(out, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID}, &body)
}

func (r *Router) backendError(c *call, cat *Catalog, out []byte, err error) []byte {
	c.status = "error"
	exc := "TTransportException"
	if errors.Is(err, ErrPoolExhausted) {
		exc = "PoolExhausted"
	}
	if r.metrics != nil {
		r.metrics.BackendFailure(cat.Name, exc)
	}
	r.log.Warn("backend call failed", "method", c.msg.Name, "catalog", cat.Name, "err", err)
	return r.declaredException(c, out, c.spec.MetaExcField, "MetaException",
		fmt.Sprintf("hms-proxy: catalog %s backend failed for %s: %v", cat.Name, c.msg.Name, err))
}

// setUGI binds the caller's identity to the connection and answers as HMS
// does (the group list). Impersonation of that user is a later step.
func (r *Router) setUGI(c *call, out []byte) []byte {
	m := c.msg
	v, err := wire.DecodeStruct(m.Body())
	if err != nil {
		return r.refuse(c, out, "set_ugi: cannot read arguments: "+err.Error())
	}
	user := v.Field(1).String()
	var groups []string
	g := v.Field(2)
	if g != nil {
		for _, e := range g.Elems {
			groups = append(groups, string(e.Str))
		}
	}
	c.conn.SetIdentity(&security.Identity{User: user, Groups: groups, Mechanism: security.SetUGI})
	list := wire.List(wire.TString)
	for _, s := range groups {
		list.Elems = append(list.Elems, wire.Str(s))
	}
	body := wire.Struct(wire.Field{ID: 0, V: list})
	return wire.AppendMessage(out, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID}, &body)
}

// localCatalogs answers get_catalogs with the configured catalogs: catalog
// ownership is policy-managed in the proxy config.
func (r *Router) localCatalogs(c *call, out []byte) []byte {
	m := c.msg
	names := wire.List(wire.TString)
	for _, cat := range r.ns.Catalogs() {
		names.Elems = append(names.Elems, wire.Str(cat.Name))
	}
	body := wire.Struct(wire.Field{ID: 0, V: wire.Struct(wire.Field{ID: 1, V: names})})
	return wire.AppendMessage(out, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID}, &body)
}

// fallbackEmpty answers the empty compatibility response and counts it.
func (r *Router) fallbackEmpty(c *call, out []byte, why string) []byte {
	c.status, c.fallback = "fallback", true
	if r.metrics != nil {
		r.metrics.BackendFallback(c.msg.Name, c.msg.Name, "empty_"+why)
	}
	return r.emptyReply(c, out)
}
