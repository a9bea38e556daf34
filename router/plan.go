package router

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// A Plan is what the router decided to do with one request, before it does
// any I/O: one catalog with the inward rewrites of the arguments, a fan-out
// over several catalogs, an answer of the proxy's own, or a refusal with its
// reason. The planner (Router.plan) only reads the request, the method table
// and the configuration; the executor runs plans through the policy chain.
// Plans are unit-tested without a backend and printed by the debug tracer.
type Plan struct {
	Kind PlanKind
	Spec *Spec

	// PlanSingle
	Target        *Catalog
	Patches       []wire.Patch // inward rewrites (external → backend names) of the arguments
	DBs           []string     // backend database names the request names (access modes, messages)
	DefaultRouted bool         // no catalog hint: the default catalog serves it
	Writes        bool         // access modes apply
	Mode          compat.Mode  // how the call meets the target's runtime
	Adapter       *compat.Adapter
	// SplitLock: a lock naming several catalogs; the lock shim splits it by
	// catalog and judges each part's access mode (Target is the default
	// catalog, Writes false, DBs empty).
	SplitLock bool
	// TxnLifecycle: a write of a transaction's own lifecycle (open,
	// heartbeat, abort, a commit without writes of its own), which the
	// access modes let pass (policy.go); the compat guard still checks it.
	TxnLifecycle bool

	// PlanFanOut
	Legs  []Leg
	Merge Merge

	// PlanLocal
	Local Local

	// PlanRefuse
	Refusal *Refusal

	patchArr [4]wire.Patch
	dbArr    [2]string
}

// PlanKind says which of the four shapes a plan has.
type PlanKind uint8

// The plan shapes.
const (
	PlanRefuse PlanKind = iota
	PlanSingle
	PlanFanOut
	PlanLocal
)

func (k PlanKind) String() string {
	return [...]string{"refuse", "single", "fan-out", "local"}[k]
}

// Local names an answer the proxy gives itself.
type Local uint8

// Local answers.
const (
	AnswerNone              Local = iota
	AnswerSetUGI                  // binds the caller's identity to the connection
	AnswerCatalogs                // get_catalogs: the configured catalogs
	AnswerVersion                 // getVersion: the front door's profile identity
	AnswerOneway                  // fb303 shutdown/reinitialize: never reach a backend
	AnswerHandler                 // an Options.Local handler (delegation tokens)
	AnswerRefreshPrivileges       // refresh_privileges: success (routing.refresh-privileges.synthetic-success)
	// AnswerEmpty: the method's empty success (an empty list, a void), what
	// the metastore answers when the request names nothing that exists (a
	// database pattern that is the empty name, a catalog no metastore
	// behind the proxy has, dropping such a catalog where that is no error).
	AnswerEmpty
)

// Merge says how fan-out answers are combined.
type Merge uint8

// Merges.
const (
	MergeDatabases Merge = iota // lists of external database names, union in catalog order
	MergeTableMeta              // lists of TableMeta, outward-rewritten
)

// LegOp is what one fan-out leg asks its catalog.
type LegOp uint8

// Leg operations.
const (
	// LegDatabases lists the catalog's databases (get_all_databases, or
	// get_databases(BackendPattern)), hides what exposure hides, and keeps
	// the external names that Match matches (all when nil).
	LegDatabases LegOp = iota
	// LegTableMeta calls get_table_meta with Args (the database pattern
	// already internal) and hides what exposure hides.
	LegTableMeta
	// LegTableMetaOfMatching lists the databases whose external names Match
	// matches, then asks get_table_meta for exactly those.
	LegTableMetaOfMatching
)

// Leg is one catalog's part of a fan-out.
type Leg struct {
	Cat            *Catalog
	Op             LegOp
	BackendPattern string         // LegDatabases: "" = get_all_databases
	Match          *regexp.Regexp // external names to keep (nil: all)
	Args           wire.Value     // LegTableMeta*: the get_table_meta arguments
}

// RefusalKind is the exception a refusal is answered with.
type RefusalKind uint8

// Refusal kinds. A kind the method does not declare falls back to its
// MetaException, and to a TApplicationException when it declares none.
const (
	RefuseMeta RefusalKind = iota
	RefuseNoSuchObject
	RefuseInvalidOperation
	RefuseUnknownMethod // TApplicationException UNKNOWN_METHOD
	RefuseProtocol      // TApplicationException PROTOCOL_ERROR
	RefuseMessageType   // TApplicationException INVALID_MESSAGE_TYPE
)

// Refusal is a request the proxy does not forward, with the reason a client
// reads and a short label for logs and tests.
type Refusal struct {
	Kind    RefusalKind
	Reason  string // label: ambiguous, namespace_less, catalog_registry, cross_catalog_rename, access_mode, exposure, ...
	Message string
	// Catalog is the one catalog the refused call was aimed at, when the
	// refusal came before routing set it (audit and the WARN line name it).
	Catalog string
	// Status is the request's status label (metrics, audit); "" is
	// "error" ("throttled" for a rate limit).
	Status string
	// Table: a RefuseNoSuchObject refusal is about a table (else a
	// database): it picks UnknownTableException over UnknownDBException.
	Table bool
}

func (r *Refusal) Error() string { return r.Message }

func refusal(kind RefusalKind, reason, format string, args ...any) *Refusal {
	return &Refusal{Kind: kind, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// String renders a plan for the debug tracer.
func (p *Plan) String() string {
	var b strings.Builder
	b.WriteString(p.Kind.String())
	switch p.Kind {
	case PlanSingle:
		fmt.Fprintf(&b, " %s", p.Target.Name)
		if p.DefaultRouted {
			b.WriteString(" (default catalog: no catalog hint)")
		}
		fmt.Fprintf(&b, " mode=%s", modeName(p.Mode))
		if p.Adapter != nil {
			fmt.Fprintf(&b, " via %s", p.Adapter.To)
		}
		if p.Writes {
			b.WriteString(" writes")
		}
		if p.TxnLifecycle {
			b.WriteString(" (transaction lifecycle)")
		}
		if p.SplitLock {
			b.WriteString(" split-lock")
		}
		if len(p.Patches) > 0 {
			fmt.Fprintf(&b, " rewrites=%d", len(p.Patches))
		}
		if len(p.DBs) > 0 {
			fmt.Fprintf(&b, " dbs=%v", p.DBs)
		}
	case PlanFanOut:
		for _, l := range p.Legs {
			fmt.Fprintf(&b, " [%s", l.Cat.Name)
			switch l.Op {
			case LegDatabases:
				if l.BackendPattern != "" {
					fmt.Fprintf(&b, " get_databases(%q)", l.BackendPattern)
				} else {
					b.WriteString(" get_all_databases")
				}
			case LegTableMeta:
				fmt.Fprintf(&b, " get_table_meta(%q)", l.Args.Field(1).String())
			case LegTableMetaOfMatching:
				b.WriteString(" get_table_meta of matching databases")
			}
			if l.Match != nil {
				fmt.Fprintf(&b, " match %s", l.Match)
			}
			b.WriteString("]")
		}
	case PlanLocal:
		b.WriteString([...]string{"", " set_ugi", " get_catalogs", " getVersion", " oneway fb303", " local handler", " refresh_privileges success", " empty answer"}[p.Local])
	case PlanRefuse:
		fmt.Fprintf(&b, " %s: %s", p.Refusal.Reason, p.Refusal.Message)
	}
	return b.String()
}

func modeName(m compat.Mode) string {
	return [...]string{"native", "adapted", "hortonworks-only", "unsupported"}[m]
}

// plan decides what to do with req (no I/O). It fills req.plan.
func (r *Router) plan(req *request) {
	p := &req.plan
	m := req.msg
	spec := r.table.Lookup(m.Name)
	p.Spec = spec
	if spec == nil || !req.conn.Frontend.Allows(spec) {
		p.Kind, p.Refusal = PlanRefuse, refusal(RefuseUnknownMethod, "unknown_method", "Invalid method name: '%s'", m.Name)
		return
	}
	if m.Type != wire.Call && m.Type != wire.Oneway {
		p.Kind, p.Refusal = PlanRefuse, refusal(RefuseMessageType, "message_type", "%s: message type %d is not a call", m.Name, m.Type)
		return
	}
	if r.locals[m.Name] != nil {
		p.Kind, p.Local = PlanLocal, AnswerHandler
		return
	}
	if r.res.opt.SyntheticRefreshPrivileges && m.Name == "refresh_privileges" {
		p.Kind, p.Local = PlanLocal, AnswerRefreshPrivileges
		return
	}
	switch spec.Special {
	case RefuseAlways:
		r.planCatalogRegistry(req)
		return
	case DropOneway:
		p.Kind, p.Local = PlanLocal, AnswerOneway
		return
	case LocalSetUGI:
		p.Kind, p.Local = PlanLocal, AnswerSetUGI
		return
	case LocalCatalogs:
		p.Kind, p.Local = PlanLocal, AnswerCatalogs
		return
	case LocalVersion:
		if fe := req.conn.Frontend; fe != nil && fe.Runtime != nil {
			p.Kind, p.Local = PlanLocal, AnswerVersion
			return
		}
	case FanOutDatabases:
		r.planDatabases(req)
		return
	case FanOutTableMeta:
		r.planTableMeta(req)
		return
	}
	r.planSingle(req)
}

// dummyDatabase is Hive's placeholder source of INSERT … VALUES and
// FROM-less queries (SemanticAnalyzer.DUMMY_DATABASE): it exists in no
// metastore and belongs to no catalog.
const dummyDatabase = "_dummy_database"

// route collects the catalog hints of a request while its arguments are
// walked once.
type route struct {
	explicit     *Catalog // a catalog field or marker naming a proxy catalog
	prefixed     *Catalog // a database name with a catalog prefix
	unprefixed   bool     // a database name without one (a hint for the default catalog)
	conflict     []string // catalogs named beyond the first
	unprefixedDB string   // the first unprefixed name (for messages)
	prefixedDB   string   // the first prefixed name (for messages)
	// backendNamed: a catalog field holds a metastore's own catalog name
	// ("hive") rather than a proxy catalog's: the catalog whose backend
	// that is (the default catalog when several share it). It decides only
	// when nothing else names a catalog or database.
	backendNamed *Catalog
	// For renames (alter_table forms): where the source and the target
	// table's database resolve.
	source, target *Catalog
	sourceDB       string
	targetDB       string
}

func (rt *route) note(list *[]string, c *Catalog, first *Catalog) {
	if first == nil || first == c {
		return
	}
	for _, n := range *list {
		if n == c.Name {
			return
		}
	}
	if len(*list) == 0 {
		*list = append(*list, first.Name)
	}
	*list = append(*list, c.Name)
}

func (rt *route) hintCatalog(c *Catalog) {
	if rt.explicit == nil {
		rt.explicit = c
	}
	rt.note(&rt.conflict, c, rt.explicit)
	if rt.prefixed != nil {
		rt.note(&rt.conflict, c, rt.prefixed)
	}
}

func (rt *route) hintPrefixed(c *Catalog, ext string) {
	if rt.prefixed == nil {
		rt.prefixed, rt.prefixedDB = c, ext
	}
	rt.note(&rt.conflict, c, rt.prefixed)
	if rt.explicit != nil {
		rt.note(&rt.conflict, c, rt.explicit)
	}
}

// target resolves the hints: one catalog, or conflicting ones. An unprefixed
// database name belongs to the default catalog, unless a catalog field names
// the catalog explicitly (Hive 3 clients send catName with plain names).
func (rt *route) resolve(def *Catalog) (c *Catalog, explicit bool, conflict []string) {
	switch {
	case len(rt.conflict) > 0:
		return nil, false, rt.conflict
	case rt.explicit != nil:
		return rt.explicit, true, nil
	case rt.prefixed != nil:
		if rt.unprefixed && rt.prefixed != def {
			return nil, false, []string{rt.prefixed.Name + " (" + rt.prefixedDB + ")", def.Name + " (" + rt.unprefixedDB + ")"}
		}
		return rt.prefixed, true, nil
	}
	return def, false, nil
}

// argVisitor collects the catalog hints and the inward rewrites of a
// request's arguments while they are walked once (wire.Visitor; it lives in
// the request, so a walk allocates nothing for it).
type argVisitor struct {
	ns   *Namespace
	spec *Spec
	p    *Plan
	rt   *route
}

// routeArgs walks the arguments once: it collects catalog hints and records
// the inward rewrites (external → internal names) in p.
func (r *Router) routeArgs(req *request, spec *Spec, body []byte, p *Plan, rt *route) error {
	p.Patches, p.DBs = p.patchArr[:0], p.dbArr[:0]
	if spec.Args == nil {
		return nil
	}
	req.av = argVisitor{ns: r.ns, spec: spec, p: p, rt: rt}
	return wire.WalkVisitor(body, spec.Args, r.maxMsg, &req.av)
}

// Visit takes one role string of the arguments.
func (a *argVisitor) Visit(s *wire.Span) error {
	ns, spec, p, rt := a.ns, a.spec, a.p, a.rt
	val := view(s.Val)
	inTable := s.Path != nil && s.Path.Name == "Table"
	switch s.Role {
	case RoleDB, RoleDBPattern:
		ref := parseDBRef(val)
		if mc := ns.markerCatalog(ref); mc != nil {
			rt.hintCatalog(mc)
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
			rt.hintPrefixed(c, ref.name)
		} else if s.Role == RoleDB && ref.name != "" && !strings.EqualFold(ref.name, dummyDatabase) && !ref.marked {
			if !rt.unprefixed {
				rt.unprefixed, rt.unprefixedDB = true, ref.name
			}
		}
		if spec.Rename && s.Role == RoleDB && ref.name != "" {
			// A name with a prefix, or with a marker naming a proxy
			// catalog, carries its catalog; any other is resolved after
			// the walk (planSingle), when the whole request is known.
			var rc *Catalog
			if explicit {
				rc = c
			} else if mc := ns.markerCatalog(ref); mc != nil {
				rc = mc
			}
			if inTable {
				if rt.targetDB == "" {
					rt.target, rt.targetDB = rc, ref.name
				}
			} else if rt.sourceDB == "" {
				rt.source, rt.sourceDB = rc, ref.name
			}
		}
		if internal := ns.internalRef(ref, db); internal != val {
			p.Patches = append(p.Patches, wire.Patch{Start: s.Start, End: s.End, Data: wire.AppendString(nil, internal)})
		}
		if db != "" && s.Role == RoleDB && !strings.EqualFold(db, dummyDatabase) {
			p.DBs = append(p.DBs, db)
		}
	case RoleCatalog:
		if c := ns.Lookup(val); c != nil {
			rt.hintCatalog(c)
			if val != c.BackendName {
				p.Patches = append(p.Patches, wire.Patch{Start: s.Start, End: s.End, Data: wire.AppendString(nil, c.BackendName)})
			}
		} else if rt.backendNamed == nil {
			rt.backendNamed = ns.backendCatalog(val)
		}
	case RoleFullTable:
		c, internal, explicit := ns.SplitFullTable(val)
		if explicit {
			rt.hintPrefixed(c, val)
			p.Patches = append(p.Patches, wire.Patch{Start: s.Start, End: s.End, Data: wire.AppendString(nil, internal)})
		} else if val != "" && !strings.HasPrefix(strings.ToLower(val), dummyDatabase+".") {
			if !rt.unprefixed {
				rt.unprefixed, rt.unprefixedDB = true, val
			}
		}
		if i := strings.IndexByte(internal, '.'); i > 0 {
			p.DBs = append(p.DBs, internal[:i])
		}
	}
	return nil
}

// patternRef reads a database pattern argument. An absent (null) pattern
// is not the empty name: Hive's handlers read null as "every database"
// (get_databases lists them all, get_table_meta filters on nothing).
func patternRef(f *wire.Value) dbRef {
	if f == nil {
		return dbRef{}
	}
	return parseDBRef(f.String())
}

// namesNothing reports whether a database pattern argument matches nothing
// in any metastore, so the answer is the empty list without asking one: the
// empty name ("", or Hive 3's "@cat#!"), which a metastore matches against
// no database, and a catalog marker naming neither a proxy catalog nor any
// catalog a metastore behind the proxy has ("@nosuchcatalog#*", "@h*#*":
// the metastore takes the catalog name literally). A marker without a
// database ("@hive#") means every database.
func (r *Router) namesNothing(ref dbRef) bool {
	if ref.hasName && ref.name == "" {
		return true
	}
	return ref.marked && r.ns.markerCatalog(ref) == nil && r.ns.backendCatalog(ref.markCat) == nil
}

// planCatalogRegistry plans create/drop/alter_catalog. Catalogs are the
// proxy's configuration, so none of them reaches a metastore; but dropping
// or altering a catalog that does not exist answers what the metastore
// answers: NoSuchObjectException, or, for a drop with ifExists (Hive 4.1's
// field, which an absent value leaves true as the 4.1 metastore does;
// a front door whose profile lacks it reads it as Hive 3 would: not at
// all), nothing to do.
func (r *Router) planCatalogRegistry(req *request) {
	p, m, spec := &req.plan, req.msg, req.plan.Spec
	p.Kind, p.Refusal = PlanRefuse, refusal(RefuseMeta, "catalog_registry", "%s is refused by hms-proxy: %s", m.Name, spec.Why)
	if m.Name != "drop_catalog" && m.Name != "alter_catalog" {
		return
	}
	v, err := wire.DecodeStruct(m.Body())
	if err != nil {
		return
	}
	rq := v.Field(1)
	if rq == nil {
		return
	}
	name := rq.Field(1).String()
	if r.ns.Lookup(name) != nil {
		return
	}
	if m.Name == "drop_catalog" && r.dropIfExists(req, rq) {
		p.Kind, p.Refusal, p.Local = PlanLocal, nil, AnswerEmpty
		return
	}
	names := make([]string, 0, len(r.ns.Catalogs()))
	for _, c := range r.ns.Catalogs() {
		names = append(names, c.Name)
	}
	p.Refusal = refusal(RefuseNoSuchObject, "no_such_catalog", "No catalog %s: the catalogs of hms-proxy are %s (managed in its configuration)",
		name, strings.Join(names, ", "))
}

// dropIfExists reads DropCatalogRequest.ifExists as the client's metastore
// version would: absent is true where the field exists (Hive 4.1), and a
// front door whose profile lacks the field ignores it (Hive 3.1.3).
func (r *Router) dropIfExists(req *request, rq *wire.Value) bool {
	st := thriftgen.LookupStruct("DropCatalogRequest")
	if st == nil {
		return false
	}
	f := st.FieldByID(2)
	fe := req.conn.Frontend
	if f == nil || fe == nil || fe.Profile == 0 || f.Profiles&fe.Profile == 0 {
		return false
	}
	if v := rq.Field(2); v != nil {
		return v.Int != 0
	}
	return true
}

// planSingle plans the generic path: one call to one catalog.
func (r *Router) planSingle(req *request) {
	p, spec, m := &req.plan, req.plan.Spec, req.msg
	req.rt = route{}
	rt := &req.rt
	if err := r.routeArgs(req, spec, m.Body(), p, rt); err != nil {
		p.Kind, p.Refusal = PlanRefuse, refusal(RefuseProtocol, "bad_arguments", "%s: cannot read arguments: %v", m.Name, err)
		return
	}
	if spec.Rename && rt.sourceDB != "" && rt.targetDB != "" {
		// A plain database name is the default catalog's, as anywhere.
		// Only in a request that writes no catalog prefix at all does a
		// catalog field name the catalog of its plain names (a Hive 3
		// client's "@catalog2#sales" with Table.catName catalog2). Where
		// a prefix is written, a catalog field echoes the table the
		// client read (Trino renames the Table it got, catName
		// catalog2, to dbName "s1") and does not pull the plain name
		// into that catalog.
		home := r.ns.Default()
		if rt.explicit != nil && rt.prefixed == nil {
			home = rt.explicit
		}
		if rt.source == nil {
			rt.source = home
		}
		if rt.target == nil {
			rt.target = home
		}
	}
	if spec.Rename && rt.source != nil && rt.target != nil && rt.source != rt.target {
		p.Kind, p.Refusal = PlanRefuse, refusal(RefuseInvalidOperation, "cross_catalog_rename",
			"%s cannot move a table between catalogs: the table is in database %s of catalog %s, the new definition names database %s of catalog %s; a rename works within one catalog (also across its databases)",
			m.Name, rt.sourceDB, rt.source.Name, rt.targetDB, rt.target.Name)
		return
	}
	cat, explicit, conflict := rt.resolve(r.ns.Default())
	if conflict != nil && spec.Name == "lock" && r.shim != nil {
		r.planSplitLock(req) // a lock is split by catalog, not refused
		return
	}
	if conflict != nil {
		p.Kind, p.Refusal = PlanRefuse, refusal(RefuseMeta, "ambiguous",
			"%s is ambiguous: the request names catalogs %s; hms-proxy routes a call to exactly one catalog and does not guess (a database name without a catalog prefix belongs to the default catalog %s)",
			m.Name, strings.Join(conflict, " and "), r.ns.Default().Name)
		return
	}
	if !explicit {
		// Nothing names a proxy catalog or a database: a catalog field in
		// the metastore's own form ("hive", what Hive clients fill in and
		// what federation.preserve-backend-catalog-name=true answers)
		// names the catalog whose metastore has it, so routing does not
		// depend on that key. A write that names no namespace at all
		// (add_runtime_stats, an empty add_partitions, a scheduled query)
		// is ambiguous only when there is more than one catalog it could be
		// for; with one, it is that one's.
		cats := r.ns.Catalogs()
		if b := rt.backendNamed; b != nil && !rt.unprefixed && len(p.DBs) == 0 {
			cat = b
		} else if !rt.unprefixed && len(p.DBs) == 0 && spec.Unrouted == Refuse && len(cats) > 1 {
			names := make([]string, len(cats))
			for i, c := range cats {
				names[i] = c.Name
			}
			p.Kind, p.Refusal = PlanRefuse, refusal(RefuseMeta, "namespace_less",
				"%s is a namespace-less write: it names no catalog or database, and this deployment has %d catalogs (%s): hms-proxy routes a write to exactly one catalog and does not guess which",
				m.Name, len(cats), strings.Join(names, ", "))
			return
		}
		p.DefaultRouted = cat.Default
	}
	if ref := r.acidRefusal(req, cat); ref != nil {
		ref.Catalog = cat.Name
		p.Kind, p.Refusal = PlanRefuse, ref
		return
	}
	p.Kind, p.Target = PlanSingle, cat
	p.Writes = spec.IsWrite() && writesData(spec, m.Body())
	p.TxnLifecycle = p.Writes && txnLifecycleOnly(spec, m.Body())
	runtime := r.runtimes[cat]
	p.Mode, p.Adapter = r.adapters.Plan(runtime, spec.Name)
	switch p.Mode {
	case compat.HortonworksOnly:
		p.Kind, p.Refusal = PlanRefuse, refusal(RefuseMeta, "hortonworks_only", "%s", compat.HortonworksMessage(m.Name, cat.Name, runtime))
		p.Refusal.Catalog = cat.Name
	case compat.Unsupported:
		p.Kind, p.Refusal = PlanRefuse, refusal(RefuseUnknownMethod, "unsupported", "%s", compat.UnsupportedMessage(m.Name, cat.Name, runtime))
		p.Refusal.Catalog = cat.Name
	}
}

// splitAlternatives splits a metastore name pattern on '|' (HMS matches each
// alternative on its own).
func splitAlternatives(p string) []string {
	parts := strings.Split(p, "|")
	out := parts[:0]
	for _, s := range parts {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// patternLegs plans a database pattern over the catalogs: each '|'
// alternative with a catalog prefix goes to that catalog alone (its rest as
// the backend pattern); an alternative without one matches every catalog's
// external names. The union is in catalog order. ok is false when the pattern
// is not a valid metastore pattern.
type patternPart struct {
	cat  *Catalog // nil: every catalog
	rest string   // the pattern for cat's backend, or the external pattern
}

func (r *Router) patternParts(pattern string) []patternPart {
	var parts []patternPart
	for _, alt := range splitAlternatives(pattern) {
		if c, rest, ok := r.ns.SplitPattern(alt); ok {
			parts = append(parts, patternPart{cat: c, rest: rest})
		} else {
			parts = append(parts, patternPart{rest: alt})
		}
	}
	return parts
}

// planDatabases plans get_all_databases and get_databases(pattern).
func (r *Router) planDatabases(req *request) {
	p, m := &req.plan, req.msg
	p.Kind, p.Merge = PlanFanOut, MergeDatabases
	p.Legs = make([]Leg, 0, len(r.ns.Catalogs()))
	if m.Name == "get_all_databases" {
		for _, c := range r.ns.Catalogs() {
			p.Legs = append(p.Legs, Leg{Cat: c, Op: LegDatabases})
		}
		return
	}
	v, err := wire.DecodeStruct(m.Body())
	if err != nil {
		p.Kind, p.Refusal = PlanRefuse, refusal(RefuseProtocol, "bad_arguments", "get_databases: cannot read arguments: %v", err)
		return
	}
	// Hive 3 clients send "@<catalog>#<pattern>"; "@hive#" alone means
	// every database (getAllDatabases); a backend name ("hive") does not
	// narrow the call.
	ref := patternRef(v.Field(1))
	pattern := ref.name
	if r.namesNothing(ref) {
		p.Kind, p.Local = PlanLocal, AnswerEmpty
		return
	}
	if only := r.ns.markerCatalog(ref); only != nil {
		leg := Leg{Cat: only, Op: LegDatabases}
		if pattern != "" && pattern != "*" {
			re, err := hivePattern(pattern)
			if err != nil {
				p.Kind, p.Refusal = PlanRefuse, refusal(RefuseMeta, "bad_pattern", "get_databases: %v", err)
				return
			}
			leg.Match = internalOrExternal(re, r.ns, only)
		}
		p.Legs = []Leg{leg}
		return
	}
	if pattern == "" || pattern == "*" {
		for _, c := range r.ns.Catalogs() {
			p.Legs = append(p.Legs, Leg{Cat: c, Op: LegDatabases})
		}
		return
	}
	parts := r.patternParts(pattern)
	per := map[*Catalog][]string{} // backend alternatives per catalog
	var external []string          // alternatives over external names
	for _, pp := range parts {
		if pp.cat != nil {
			per[pp.cat] = append(per[pp.cat], pp.rest)
		} else {
			external = append(external, pp.rest)
		}
	}
	var extRe *regexp.Regexp
	if len(external) > 0 {
		if extRe, err = hivePattern(strings.Join(external, "|")); err != nil {
			p.Kind, p.Refusal = PlanRefuse, refusal(RefuseMeta, "bad_pattern", "get_databases: %v", err)
			return
		}
	}
	for _, c := range r.ns.Catalogs() {
		backend := per[c]
		switch {
		case len(backend) > 0 && extRe == nil:
			p.Legs = append(p.Legs, Leg{Cat: c, Op: LegDatabases, BackendPattern: strings.Join(backend, "|")})
		case len(backend) > 0:
			// Both prefixed alternatives of this catalog and unprefixed
			// ones: list all, keep what either matches.
			re, err := hivePattern(strings.Join(backend, "|"))
			if err != nil {
				p.Kind, p.Refusal = PlanRefuse, refusal(RefuseMeta, "bad_pattern", "get_databases: %v", err)
				return
			}
			p.Legs = append(p.Legs, Leg{Cat: c, Op: LegDatabases, Match: unionMatch(extRe, internalOnly(re, r.ns, c))})
		case extRe != nil && c.Default:
			// The default catalog's names are unprefixed: its backend
			// applies the pattern itself.
			p.Legs = append(p.Legs, Leg{Cat: c, Op: LegDatabases, BackendPattern: strings.Join(external, "|")})
		case extRe != nil:
			p.Legs = append(p.Legs, Leg{Cat: c, Op: LegDatabases, Match: extRe})
		}
	}
}

// planTableMeta plans get_table_meta(db_patterns, tbl_patterns, tbl_types).
func (r *Router) planTableMeta(req *request) {
	p, m := &req.plan, req.msg
	p.Kind, p.Merge = PlanFanOut, MergeTableMeta
	args, err := wire.DecodeStruct(m.Body())
	if err != nil {
		p.Kind, p.Refusal = PlanRefuse, refusal(RefuseProtocol, "bad_arguments", "get_table_meta: cannot read arguments: %v", err)
		return
	}
	// Hive 3 clients send "@<catalog>#<pattern>": a proxy catalog there
	// narrows the call to that catalog; a backend name ("hive") does not.
	ref := patternRef(args.Field(1))
	dbPattern := ref.name
	if r.namesNothing(ref) {
		p.Kind, p.Local = PlanLocal, AnswerEmpty
		return
	}
	withDB := func(backendPattern string) wire.Value {
		a := wire.Value{Type: wire.TStruct, Fields: append([]wire.Field(nil), args.Fields...)}
		a.Set(1, wire.Str(backendPattern))
		return a
	}
	if mc := r.ns.markerCatalog(ref); mc != nil {
		rest := dbPattern
		if rest == "" {
			rest = "*"
		}
		p.Legs = []Leg{{Cat: mc, Op: LegTableMeta, Args: withDB(rest)}}
		return
	}
	if dbPattern == "" || dbPattern == "*" {
		for _, c := range r.ns.Catalogs() {
			p.Legs = append(p.Legs, Leg{Cat: c, Op: LegTableMeta, Args: withDB("*")})
		}
		return
	}
	per := map[*Catalog][]string{}
	var external []string
	for _, pp := range r.patternParts(dbPattern) {
		if pp.cat != nil {
			per[pp.cat] = append(per[pp.cat], pp.rest)
		} else {
			external = append(external, pp.rest)
		}
	}
	var extRe *regexp.Regexp
	if len(external) > 0 {
		if extRe, err = hivePattern(strings.Join(external, "|")); err != nil {
			p.Kind, p.Refusal = PlanRefuse, refusal(RefuseMeta, "bad_pattern", "get_table_meta: %v", err)
			return
		}
	}
	for _, c := range r.ns.Catalogs() {
		backend := per[c]
		switch {
		case len(backend) > 0 && (extRe == nil || c.Default):
			alts := backend
			if c.Default {
				alts = append(alts, external...)
			}
			p.Legs = append(p.Legs, Leg{Cat: c, Op: LegTableMeta, Args: withDB(strings.Join(alts, "|"))})
		case len(backend) > 0:
			re, err := hivePattern(strings.Join(backend, "|"))
			if err != nil {
				p.Kind, p.Refusal = PlanRefuse, refusal(RefuseMeta, "bad_pattern", "get_table_meta: %v", err)
				return
			}
			p.Legs = append(p.Legs, Leg{Cat: c, Op: LegTableMetaOfMatching, Match: unionMatch(extRe, internalOnly(re, r.ns, c)), Args: args})
		case extRe != nil && c.Default:
			p.Legs = append(p.Legs, Leg{Cat: c, Op: LegTableMeta, Args: withDB(strings.Join(external, "|"))})
		case extRe != nil:
			// Match the client's pattern against this catalog's external
			// names, then ask the backend for exactly those databases.
			p.Legs = append(p.Legs, Leg{Cat: c, Op: LegTableMetaOfMatching, Match: extRe, Args: args})
		}
	}
}

// internalOnly turns a pattern over catalog c's backend names into one over
// its external names ("<c><sep>" + the backend pattern).
func internalOnly(re *regexp.Regexp, ns *Namespace, c *Catalog) *regexp.Regexp {
	if c.Default {
		return re
	}
	inner := strings.TrimSuffix(strings.TrimPrefix(re.String(), "(?i)^(?:"), ")$")
	return regexp.MustCompile("(?i)^" + regexp.QuoteMeta(c.Name+ns.Separator()) + "(?:" + inner + ")$")
}

// internalOrExternal matches a name of catalog c given in either form (a
// Hive 3 client naming the catalog with a marker sends backend names).
func internalOrExternal(re *regexp.Regexp, ns *Namespace, c *Catalog) *regexp.Regexp {
	if c.Default {
		return re
	}
	return unionMatch(re, internalOnly(re, ns, c))
}

// unionMatch matches what either pattern matches (a nil one matches nothing).
func unionMatch(a, b *regexp.Regexp) *regexp.Regexp {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return regexp.MustCompile("(?:" + a.String() + ")|(?:" + b.String() + ")")
}
