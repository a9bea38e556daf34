package planner

import (
	"strings"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Plan decides what to do with message m from door (nil: a door that
// allows every method) and fills p, which must be zero. It does no I/O.
func (pl *Planner) Plan(p *Plan, m *wire.Message, door *Frontend) {
	req := &call{plan: p, msg: m, door: door}
	spec := pl.table.Lookup(m.Name)
	p.Spec = spec
	if spec == nil || !req.door.Allows(spec) {
		p.Kind, p.Refusal = PlanRefuse, NewRefusal(RefuseUnknownMethod, "unknown_method", "Invalid method name: '%s'", m.Name)
		return
	}
	if m.Type != wire.Call && m.Type != wire.Oneway {
		p.Kind, p.Refusal = PlanRefuse, NewRefusal(RefuseMessageType, "message_type", "%s: message type %d is not a call", m.Name, m.Type)
		return
	}
	if pl.local[m.Name] {
		p.Kind, p.Local = PlanLocal, AnswerHandler
		return
	}
	if pl.syntheticRefresh && m.Name == "refresh_privileges" {
		p.Kind, p.Local = PlanLocal, AnswerRefreshPrivileges
		return
	}
	switch spec.Special {
	case methods.RefuseAlways:
		pl.planCatalogRegistry(req)
		return
	case methods.DropOneway:
		p.Kind, p.Local = PlanLocal, AnswerOneway
		return
	case methods.LocalSetUGI:
		p.Kind, p.Local = PlanLocal, AnswerSetUGI
		return
	case methods.LocalCatalogs:
		p.Kind, p.Local = PlanLocal, AnswerCatalogs
		return
	case methods.LocalVersion:
		if fe := req.door; fe != nil && fe.Runtime != nil {
			p.Kind, p.Local = PlanLocal, AnswerVersion
			return
		}
	case methods.FanOutDatabases:
		pl.planFanOut(req)
		return
	case methods.FanOutTableMeta:
		pl.planFanOut(req)
		return
	}
	pl.planSingle(req)
}

// route collects the catalog hints of a request while its arguments are
// walked once.
type route struct {
	explicit     *naming.Catalog // a catalog field or marker naming a proxy catalog
	prefixed     *naming.Catalog // a database name with a catalog prefix
	unprefixed   bool            // a database name without one (a hint for the default catalog)
	conflict     []string        // catalogs named beyond the first
	unprefixedDB string          // the first unprefixed name (for messages)
	prefixedDB   string          // the first prefixed name (for messages)
	// backendNamed: a catalog field holds a metastore's own catalog name
	// ("hive") rather than a proxy catalog's: the catalog whose backend
	// that is (the default catalog when several share it). It decides only
	// when nothing else names a catalog or database.
	backendNamed *naming.Catalog
	// For renames (alter_table forms): where the source and the target
	// table's database resolve.
	source, target *naming.Catalog
	sourceDB       string
	targetDB       string
}

func (rt *route) note(list *[]string, c *naming.Catalog, first *naming.Catalog) {
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

func (rt *route) hintCatalog(c *naming.Catalog) {
	if rt.explicit == nil {
		rt.explicit = c
	}
	rt.note(&rt.conflict, c, rt.explicit)
	if rt.prefixed != nil {
		rt.note(&rt.conflict, c, rt.prefixed)
	}
}

func (rt *route) hintPrefixed(c *naming.Catalog, ext string) {
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
func (rt *route) resolve(def *naming.Catalog) (c *naming.Catalog, explicit bool, conflict []string) {
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
	ns   *naming.Namespace
	spec *methods.Spec
	p    *Plan
	rt   *route
}

// routeArgs walks the arguments once: it collects catalog hints and records
// the inward rewrites (external → internal names) in p.
func (pl *Planner) routeArgs(req *call, spec *methods.Spec, body []byte, p *Plan, rt *route) error {
	p.Patches, p.DBs = p.patchArr[:0], p.dbArr[:0]
	if spec.Args == nil {
		return nil
	}
	p.av = argVisitor{ns: pl.ns, spec: spec, p: p, rt: rt}
	return wire.WalkVisitor(body, spec.Args, pl.maxMsg, &p.av)
}

// Visit takes one role string of the arguments.
func (a *argVisitor) Visit(s *wire.Span) error {
	ns, spec, p, rt := a.ns, a.spec, a.p, a.rt
	val := wire.View(s.Val)
	inTable := s.Path != nil && s.Path.Name == "Table"
	switch s.Role {
	case methods.RoleDB, methods.RoleDBPattern:
		ref := naming.ParseRef(val)
		if mc := ns.MarkerCatalog(ref); mc != nil {
			rt.hintCatalog(mc)
		}
		db, explicit := ref.Name, false
		var c *naming.Catalog
		if ref.HasName && ref.Name != "" {
			if s.Role == methods.RoleDBPattern {
				c, db, explicit = ns.SplitPattern(ref.Name)
			} else {
				c, db, explicit = ns.SplitDB(ref.Name)
			}
		}
		if explicit {
			rt.hintPrefixed(c, ref.Name)
		} else if s.Role == methods.RoleDB && ref.Name != "" && !strings.EqualFold(ref.Name, naming.DummyDatabase) && !ref.Marked {
			if !rt.unprefixed {
				rt.unprefixed, rt.unprefixedDB = true, ref.Name
			}
		}
		if spec.Rename && s.Role == methods.RoleDB && ref.Name != "" {
			// A name with a prefix, or with a marker naming a proxy
			// catalog, carries its catalog; any other is resolved after
			// the walk (planSingle), when the whole request is known.
			var rc *naming.Catalog
			if explicit {
				rc = c
			} else if mc := ns.MarkerCatalog(ref); mc != nil {
				rc = mc
			}
			if inTable {
				if rt.targetDB == "" {
					rt.target, rt.targetDB = rc, ref.Name
				}
			} else if rt.sourceDB == "" {
				rt.source, rt.sourceDB = rc, ref.Name
			}
		}
		if internal := ns.InternalRef(ref, db); internal != val {
			p.Patches = append(p.Patches, wire.Patch{Start: s.Start, End: s.End, Data: wire.AppendString(nil, internal)})
		}
		if db != "" && s.Role == methods.RoleDB && !strings.EqualFold(db, naming.DummyDatabase) {
			p.DBs = append(p.DBs, db)
		}
	case methods.RoleCatalog:
		if c := ns.Lookup(val); c != nil {
			rt.hintCatalog(c)
			if val != c.BackendName {
				p.Patches = append(p.Patches, wire.Patch{Start: s.Start, End: s.End, Data: wire.AppendString(nil, c.BackendName)})
			}
		} else if rt.backendNamed == nil {
			rt.backendNamed = ns.BackendCatalog(val)
		}
	case methods.RoleFullTable:
		c, internal, explicit := ns.SplitFullTable(val)
		if explicit {
			rt.hintPrefixed(c, val)
			p.Patches = append(p.Patches, wire.Patch{Start: s.Start, End: s.End, Data: wire.AppendString(nil, internal)})
		} else if val != "" && !strings.HasPrefix(strings.ToLower(val), naming.DummyDatabase+".") {
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
func patternRef(f *wire.Value) naming.Ref {
	if f == nil {
		return naming.Ref{}
	}
	return naming.ParseRef(f.String())
}

// namesNothing reports whether a database pattern argument matches nothing
// in any metastore, so the answer is the empty list without asking one: the
// empty name ("", or Hive 3's "@cat#!"), which a metastore matches against
// no database, and a catalog marker naming neither a proxy catalog nor any
// catalog a metastore behind the proxy has ("@nosuchcatalog#*", "@h*#*":
// the metastore takes the catalog name literally). A marker without a
// database ("@hive#") means every database.
func (pl *Planner) namesNothing(ref naming.Ref) bool {
	if ref.HasName && ref.Name == "" {
		return true
	}
	return ref.Marked && pl.ns.MarkerCatalog(ref) == nil && pl.ns.BackendCatalog(ref.MarkCat) == nil
}

// planCatalogRegistry plans create/drop/alter_catalog. Catalogs are the
// proxy's configuration, so none of them reaches a metastore; but dropping
// or altering a catalog that does not exist answers what the metastore
// answers: NoSuchObjectException, or, for a drop with ifExists (Hive 4.1's
// field, which an absent value leaves true as the 4.1 metastore does;
// a front door whose profile lacks it reads it as Hive 3 would: not at
// all), nothing to do.
func (pl *Planner) planCatalogRegistry(req *call) {
	p, m, spec := req.plan, req.msg, req.plan.Spec
	p.Kind, p.Refusal = PlanRefuse, NewRefusal(RefuseMeta, "catalog_registry", "%s is refused by hms-proxy: %s", m.Name, spec.Why)
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
	if pl.ns.Lookup(name) != nil {
		return
	}
	if m.Name == "drop_catalog" && pl.dropIfExists(req, rq) {
		p.Kind, p.Refusal, p.Local = PlanLocal, nil, AnswerEmpty
		return
	}
	names := make([]string, 0, len(pl.ns.Catalogs()))
	for _, c := range pl.ns.Catalogs() {
		names = append(names, c.Name)
	}
	p.Refusal = NewRefusal(RefuseNoSuchObject, "no_such_catalog", "No catalog %s: the catalogs of hms-proxy are %s (managed in its configuration)",
		name, strings.Join(names, ", "))
}

// dropIfExists reads DropCatalogRequest.ifExists as the client's metastore
// version would: absent is true where the field exists (Hive 4.1), and a
// front door whose profile lacks the field ignores it (Hive 3.1.3).
func (pl *Planner) dropIfExists(req *call, rq *wire.Value) bool {
	st := thriftgen.LookupStruct("DropCatalogRequest")
	if st == nil {
		return false
	}
	f := st.FieldByID(2)
	fe := req.door
	if f == nil || fe == nil || fe.Profile == 0 || f.Profiles&fe.Profile == 0 {
		return false
	}
	if v := rq.Field(2); v != nil {
		return v.Int != 0
	}
	return true
}

// planSingle plans the generic path: one call to one catalog.
func (pl *Planner) planSingle(req *call) {
	p, spec, m := req.plan, req.plan.Spec, req.msg
	p.rt = route{}
	rt := &p.rt
	if err := pl.routeArgs(req, spec, m.Body(), p, rt); err != nil {
		p.Kind, p.Refusal = PlanRefuse, NewRefusal(RefuseProtocol, "bad_arguments", "%s: cannot read arguments: %v", m.Name, err)
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
		home := pl.ns.Default()
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
		p.Kind, p.Refusal = PlanRefuse, NewRefusal(RefuseInvalidOperation, "cross_catalog_rename",
			"%s cannot move a table between catalogs: the table is in database %s of catalog %s, the new definition names database %s of catalog %s; a rename works within one catalog (also across its databases)",
			m.Name, rt.sourceDB, rt.source.Name, rt.targetDB, rt.target.Name)
		return
	}
	cat, explicit, conflict := rt.resolve(pl.ns.Default())
	if conflict != nil && spec.Name == "lock" && pl.lockShim {
		pl.planSplitLock(req) // a lock is split by catalog, not refused
		return
	}
	if conflict != nil {
		p.Kind, p.Refusal = PlanRefuse, NewRefusal(RefuseMeta, "ambiguous",
			"%s is ambiguous: the request names catalogs %s; hms-proxy routes a call to exactly one catalog and does not guess (a database name without a catalog prefix belongs to the default catalog %s)",
			m.Name, strings.Join(conflict, " and "), pl.ns.Default().Name)
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
		cats := pl.ns.Catalogs()
		if b := rt.backendNamed; b != nil && !rt.unprefixed && len(p.DBs) == 0 {
			cat = b
		} else if !rt.unprefixed && len(p.DBs) == 0 && spec.Unrouted == methods.Refuse && len(cats) > 1 {
			names := make([]string, len(cats))
			for i, c := range cats {
				names[i] = c.Name
			}
			p.Kind, p.Refusal = PlanRefuse, NewRefusal(RefuseMeta, "namespace_less",
				"%s is a namespace-less write: it names no catalog or database, and this deployment has %d catalogs (%s): hms-proxy routes a write to exactly one catalog and does not guess which",
				m.Name, len(cats), strings.Join(names, ", "))
			return
		}
		p.DefaultRouted = cat.Default
	}
	if ref := pl.acidRefusal(req, cat); ref != nil {
		ref.Catalog = cat.Name
		p.Kind, p.Refusal = PlanRefuse, ref
		return
	}
	p.Kind, p.Target = PlanSingle, cat
	p.Writes = spec.IsWrite() && writesData(spec, m.Body())
	p.TxnLifecycle = p.Writes && txnLifecycleOnly(spec, m.Body())
	runtime := pl.runtime(cat)
	p.Mode, p.Adapter = pl.adapters.Plan(runtime, spec.Name)
	switch p.Mode {
	case compat.HortonworksOnly:
		p.Kind, p.Refusal = PlanRefuse, NewRefusal(RefuseMeta, "hortonworks_only", "%s", compat.HortonworksMessage(m.Name, cat.Name, runtime))
		p.Refusal.Catalog = cat.Name
	case compat.Unsupported:
		p.Kind, p.Refusal = PlanRefuse, NewRefusal(RefuseUnknownMethod, "unsupported", "%s", compat.UnsupportedMessage(m.Name, cat.Name, runtime))
		if compat.UnsupportedReason(m.Name) != "" {
			p.Refusal = NewRefusal(RefuseMeta, "unsupported", "%s", compat.UnsupportedReasonMessage(m.Name, cat.Name, runtime))
		}
		p.Refusal.Catalog = cat.Name
	}
}
