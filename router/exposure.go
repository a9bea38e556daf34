package router

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Exposure in the request path: an object a catalog's expose rules hide does
// not exist for the caller, whatever the RPC.
//
// One mechanism serves every RPC, driven by the method table: Spec.Objects
// walks the names of databases and tables in a request's arguments (every
// field roleOfObjects marks, with each table paired to its own struct's
// database field, tablePartners), Spec.ResultObjects those of its answer.
//
//   - A request that names a hidden object (a database, a table, a
//     "db.table", in any struct of its arguments: a lock component, a
//     privilege's object, a foreign key's parent, a write event, the Table
//     of a create or a rename) is refused before anything is sent: the
//     RPC's declared not-found exception (refuse), in the client's names,
//     counted in hms_proxy_filtered_objects_total. Creating (or renaming
//     to) an object the rules would hide is refused before anything is sent
//     too, with the RPC's MetaException naming the rules, as the access
//     modes refuse a write.
//   - An answer is checked without decoding it (a walk of its names); when
//     it names a hidden object the request did not (lists by database,
//     notifications, locks, privileges, functions, foreign keys of a
//     visible table), the elements naming one are removed, an optional
//     field naming one is dropped, and an answer that is itself about a
//     hidden object becomes the not-found refusal.
//   - Lists of table names by database (tableNameLists) lose their hidden
//     entries; fan-out legs filter while they merge (fanout.go).
//
// A split lock (its components in several catalogs) judges each name by its
// own catalog's rules. Names that are ids only (lock, transaction and table
// ids, CommitTxnKeyValue.tableId) cannot be judged by name; lists of names
// without their databases (unattributedLists) are refused unless the
// request names the database.

// unattributedLists: RPCs whose answer lists names of objects of many
// databases without saying which (Hive 4's packages and stored procedures,
// when the request names no database): the rules cannot filter them.
var unattributedLists = map[string]bool{"get_all_packages": true, "get_all_stored_procedures": true}

// tableNameLists: RPCs whose answer is a list of table names of the
// request's database.
var tableNameLists = map[string]bool{
	"get_all_tables": true, "get_tables": true, "get_tables_by_type": true, "get_table_names_by_filter": true,
	"get_materialized_views_for_rewriting": true,
}

// nameSpan is one object name a message carries: a wire.Span's facts, its
// value a view of the message.
type nameSpan struct {
	role  wire.Role
	owner int32
	st    string // the struct holding the field
	field int16
	elem  bool
	val   string
}

// nameCollector collects the names of a walk (wire.Visitor).
type nameCollector struct{ spans []nameSpan }

// Visit records one name.
func (c *nameCollector) Visit(s *wire.Span) error {
	switch s.Role {
	case methods.RoleDB, methods.RoleTable, methods.RoleFullTable:
		c.spans = append(c.spans, nameSpan{role: s.Role, owner: s.Owner, st: s.Path.Name, field: s.FieldID,
			elem: s.Elem, val: wire.View(s.Val)})
	}
	return nil
}

// object is a database (table "") or a table of a catalog, in backend names.
type object struct {
	cat       *naming.Catalog
	db, table string
	// def: the object a definition creates or renames to (the Table of
	// create_table or alter_table, the Database of create_database).
	def bool
}

// definitions are the structs that define the object they name: a hidden
// name there is a creation (or rename) of a hidden object.
var definitions = map[string]wire.Role{"Table": methods.RoleTable, "Database": methods.RoleDB, "CreateDatabaseRequest": methods.RoleDB}

// hiddenOf says what of o a catalog's rules hide: "database", "table" or "".
func (r *Router) hiddenOf(o object) string {
	e := r.lane(o.cat).policy.exposure
	if !e.active() || o.db == "" || strings.EqualFold(o.db, naming.DummyDatabase) {
		return ""
	}
	if !e.DBVisible(o.db) {
		return "database"
	}
	if o.table != "" && !e.TableVisible(o.db, o.table) {
		return "table"
	}
	return ""
}

// groupByOwner orders spans so that the names of one struct value are
// adjacent, outer structs first.
func groupByOwner(spans []nameSpan) {
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].owner < spans[j].owner })
}

// partnerDB finds, among the names of one struct value, the database a table
// name pairs with; ok is false when the struct holds none.
func (r *Router) partnerDB(group []nameSpan, t *nameSpan) (string, bool) {
	id, ok := r.table.Partner(t.st, t.field)
	if !ok {
		return "", false
	}
	for i := range group {
		if g := &group[i]; g.role == methods.RoleDB && !g.elem && g.field == id {
			return g.val, g.val != ""
		}
	}
	return "", false
}

// exposure is the policy-chain link of the expose rules (after the access
// mode): it refuses requests that name hidden objects and filters answers.
func (r *Router) exposure(next Handler) Handler {
	return func(ctx context.Context, x *Exchange) error {
		if x.Leg != nil || !r.exposed {
			return next(ctx, x)
		}
		p := x.Plan()
		if !p.SplitLock && !x.lane.policy.exposure.active() {
			return next(ctx, x)
		}
		if ref := r.requestHidden(x); ref != nil {
			return ref
		}
		spec := x.Spec()
		if spec.Name == "get_notification_events_count" && x.lane.authorizer == nil { // Ranger's link counts with both judges
			if handled, err := r.countVisibleEvents(ctx, x, x.lane.policy.exposure.TablesNarrowed, r.hiddenOf); handled {
				return err
			}
		}
		if unattributedLists[spec.Name] && len(p.DBs) == 0 {
			return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "exposure", Catalog: x.Cat.Name, Message: fmt.Sprintf(
				"%s without a database would list names of every database of catalog %s, whose exposure rules (catalog.%s.expose-*) hide some: name the database",
				spec.Name, x.Cat.Name, x.Cat.Name)}
		}
		if !p.SplitLock && (spec.ResultObjects != nil || tableNameLists[spec.Name]) {
			x.OnReply(func(body []byte) ([]byte, error) { return r.filterAnswer(x, body) })
		}
		return next(ctx, x)
	}
}

// requestHidden refuses a request naming a hidden object (nil: it names
// none).
func (r *Router) requestHidden(x *Exchange) *planner.Refusal {
	return r.visitObjects(x, func(o object, _ bool) *planner.Refusal {
		if what := r.hiddenOf(o); what != "" {
			return r.hiddenRefusal(x, o, what)
		}
		return nil
	})
}

// visitObjects walks the databases and tables a request names (backend
// names, each with its catalog) and calls visit for each until one answers
// a refusal: the databases of one struct value first, then its tables.
// alone is set for a database named without a table beside it in its
// struct value (drop_database's, a lock component's on a whole database).
// The exposure rules and the Ranger link judge the same walk.
func (r *Router) visitObjects(x *Exchange, visit func(o object, alone bool) *planner.Refusal) *planner.Refusal {
	spec, p := x.Spec(), x.Plan()
	if spec.Objects == nil {
		return nil
	}
	var c nameCollector
	if err := wire.WalkVisitor(x.req.msg.Body(), spec.Objects, r.maxMsg, &c); err != nil {
		return nil // the planner read these arguments; a walk that fails here finds nothing more
	}
	groupByOwner(c.spans)
	fallback := ""
	if len(p.DBs) > 0 {
		fallback = p.DBs[0]
	}
	// resolve: the catalog and backend name of a database name as the
	// client spelled it. A split lock's names resolve each to its catalog;
	// any other request's to the catalog it was planned for.
	resolve := func(name string) (*naming.Catalog, string) {
		ref := naming.ParseRef(name)
		c, db, _ := r.ns.SplitDB(ref.Name)
		if !p.SplitLock {
			c = x.Cat
		}
		return c, db
	}
	write := spec.IsWrite()
	for start := 0; start < len(c.spans); {
		end := start + 1
		for end < len(c.spans) && c.spans[end].owner == c.spans[start].owner {
			end++
		}
		group := c.spans[start:end]
		start = end
		tables := false
		for i := range group {
			tables = tables || group[i].role == methods.RoleTable && group[i].val != ""
		}
		// databases first, then the tables of the struct value
		for i := range group {
			s := &group[i]
			var o object
			alone := false
			switch s.role {
			case methods.RoleDB:
				if s.val == "" {
					continue
				}
				o.cat, o.db = resolve(s.val)
				o.def = write && definitions[s.st] == methods.RoleDB
				alone = !tables || s.elem
			case methods.RoleFullTable:
				cat, internal, explicit := r.ns.SplitFullTable(s.val)
				if !explicit || !p.SplitLock {
					cat = x.Cat
				}
				db, tbl, ok := strings.Cut(internal, ".")
				if !ok {
					continue
				}
				o = object{cat: cat, db: db, table: tbl}
			default:
				continue
			}
			if ref := visit(o, alone); ref != nil {
				return ref
			}
		}
		for i := range group {
			s := &group[i]
			if s.role != methods.RoleTable || s.val == "" {
				continue
			}
			var o object
			if db, ok := r.partnerDB(group, s); ok {
				o.cat, o.db = resolve(db)
			} else if fallback != "" {
				o.cat, o.db = x.Cat, fallback
			} else {
				continue
			}
			o.table = s.val
			o.def = write && definitions[s.st] == methods.RoleTable
			if ref := visit(o, false); ref != nil {
				return ref
			}
		}
	}
	return nil
}

// hiddenRefusal is the answer to a request naming hidden object o (what is
// "database" or "table": the part of o that is hidden), counted.
func (r *Router) hiddenRefusal(x *Exchange, o object, what string) *planner.Refusal {
	if r.metrics != nil {
		r.metrics.FilteredObjects(x.Method(), o.cat.Name, what, 1)
	}
	name := r.ns.ExternalDB(o.cat, o.db)
	if what == "table" {
		name += "." + o.table
	}
	if o.def && (what == "table") == (o.table != "") {
		// A definition of the hidden object itself (not of one inside a
		// hidden database): a policy refusal, as the access modes answer.
		return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "exposure", Catalog: o.cat.Name, Message: fmt.Sprintf(
			"%s %s is hidden by the exposure rules of catalog %s (catalog.%s.expose-*): hms-proxy does not create or rename objects it would hide",
			what, name, o.cat.Name, o.cat.Name)}
	}
	return &planner.Refusal{Kind: planner.RefuseNoSuchObject, Reason: "exposure", Message: what + " " + name + " not found",
		Catalog: o.cat.Name, Table: what == "table"}
}

// filterAnswer removes what the expose rules hide from a result body of x
// (backend names), or answers not-found when the answer itself is about a
// hidden object.
func (r *Router) filterAnswer(x *Exchange, body []byte) ([]byte, error) {
	if methods.ExceptionField(body) != 0 {
		return body, nil
	}
	spec, p := x.Spec(), x.Plan()
	db := ""
	if len(p.DBs) > 0 {
		db = p.DBs[0]
	}
	exp := x.lane.policy.exposure
	if tableNameLists[spec.Name] {
		filtered, n, err := exp.filterNames(body, db)
		if err != nil {
			return nil, fmt.Errorf("exposure filter of %s: %w", x.Method(), err)
		}
		if n > 0 && r.metrics != nil {
			r.metrics.FilteredObjects(x.Method(), x.Cat.Name, "table", n)
		}
		return filtered, nil
	}
	return r.filterObjects(x, body, db, r.hiddenOf, func(typ string, n int) {
		if r.metrics != nil {
			r.metrics.FilteredObjects(x.Method(), x.Cat.Name, typ, n)
		}
	}, func(o object, what string) *planner.Refusal { return r.hiddenRefusal(x, o, what) })
}

// filterObjects removes from a result body of x (backend names) the parts
// judge hides (judge says "database", "table" or ""), counting them by
// type, or answers refuse when the answer itself is about a hidden object.
// db is the request's database, for table names without one.
func (r *Router) filterObjects(x *Exchange, body []byte, db string, judge func(object) string,
	count func(typ string, n int), refuse func(o object, what string) *planner.Refusal) ([]byte, error) {
	spec := x.Spec()
	// A walk of the names first: most answers name nothing hidden and pass
	// as they are.
	var c nameCollector
	if err := wire.WalkVisitor(body, spec.ResultObjects, 0, &c); err != nil {
		return nil, fmt.Errorf("filter of %s: %w", x.Method(), err)
	}
	if !r.namesHidden(x.Cat, c.spans, db, judge) {
		return body, nil
	}
	v, err := wire.DecodeStruct(body)
	if err != nil {
		return nil, fmt.Errorf("filter of %s: %w", x.Method(), err)
	}
	f := answerFilter{r: r, cat: x.Cat, db: db, judge: judge, removed: map[string]int{}}
	what, o := f.structValue(&v, spec.Method.Result)
	for typ, n := range f.removed {
		count(typ, n)
	}
	if what != "" {
		return nil, refuse(o, what)
	}
	return v.Encode(), nil
}

// namesHidden reports whether any struct value of an answer is about a
// hidden object (its own database, table or "db.table" fields; the
// elements of a list of names are references, not subjects).
func (r *Router) namesHidden(cat *naming.Catalog, spans []nameSpan, fallback string, judge func(object) string) bool {
	groupByOwner(spans)
	for start := 0; start < len(spans); {
		end := start + 1
		for end < len(spans) && spans[end].owner == spans[start].owner {
			end++
		}
		group := spans[start:end]
		start = end
		for i := range group {
			s := &group[i]
			if s.elem || s.val == "" {
				continue
			}
			o := object{cat: cat}
			switch s.role {
			case methods.RoleDB:
				o.db = s.val
			case methods.RoleFullTable:
				var ok bool
				if o.db, o.table, ok = strings.Cut(s.val, "."); !ok {
					continue
				}
			case methods.RoleTable:
				db, ok := r.partnerDB(group, s)
				if !ok {
					db = fallback
				}
				o.db, o.table = db, s.val
			}
			if judge(o) != "" {
				return true
			}
		}
	}
	return false
}

// answerFilter removes the parts of a decoded answer that are about hidden
// objects of catalog cat (db: the request's database, for table names
// without one).
type answerFilter struct {
	r       *Router
	cat     *naming.Catalog
	db      string
	judge   func(object) string // what of an object is hidden ("" nothing)
	removed map[string]int      // by object type
}

// subject says what of the objects a struct value names itself is hidden
// ("" when none is).
func (f *answerFilter) subject(v *wire.Value, st *thriftgen.Struct) (string, object) {
	for i := range v.Fields {
		fl := &v.Fields[i]
		sf := st.FieldByID(fl.ID)
		if sf == nil || fl.V.Type != wire.TString {
			continue
		}
		o := object{cat: f.cat}
		switch methods.RoleOfObject(st.Name, sf) {
		case methods.RoleDB:
			o.db = string(fl.V.Str)
		case methods.RoleFullTable:
			var ok bool
			if o.db, o.table, ok = strings.Cut(string(fl.V.Str), "."); !ok {
				continue
			}
		case methods.RoleTable:
			o.db, o.table = f.db, string(fl.V.Str)
			if id, ok := f.r.table.Partner(st.Name, sf.ID); ok {
				if d := v.Field(id); d != nil && d.Type == wire.TString {
					o.db = string(d.Str)
				}
			}
		default:
			continue
		}
		if what := f.judge(o); what != "" {
			return what, o
		}
	}
	return "", object{}
}

// structValue filters one struct value of schema type st: hidden elements
// of its lists, sets and maps are removed, a hidden optional struct field
// is dropped; it reports the value itself hidden when it is about a hidden
// object, or a struct field that is not optional is.
func (f *answerFilter) structValue(v *wire.Value, st *thriftgen.Struct) (string, object) {
	if st == nil {
		return "", object{}
	}
	if what, o := f.subject(v, st); what != "" {
		return what, o
	}
	kept := v.Fields[:0]
	var hiddenWhat string
	var hiddenObj object
	for _, fl := range v.Fields {
		sf := st.FieldByID(fl.ID)
		if sf != nil && hiddenWhat == "" {
			if what, o := f.value(&fl.V, sf.Type); what != "" {
				if sf.Required == thriftgen.RequirednessOptional {
					f.removed[what]++
					continue
				}
				hiddenWhat, hiddenObj = what, o
			}
		}
		kept = append(kept, fl)
	}
	v.Fields = kept
	return hiddenWhat, hiddenObj
}

// value filters a value of schema type t (see structValue).
func (f *answerFilter) value(v *wire.Value, t *thriftgen.Type) (string, object) {
	switch t.Kind {
	case thriftgen.KindStruct:
		if v.Type != wire.TStruct {
			return "", object{}
		}
		return f.structValue(v, thriftgen.LookupStruct(t.Name))
	case thriftgen.KindList, thriftgen.KindSet:
		if t.Elem.Kind != thriftgen.KindStruct && t.Elem.Kind != thriftgen.KindList {
			return "", object{}
		}
		kept := v.Elems[:0]
		for i := range v.Elems {
			if what, _ := f.value(&v.Elems[i], t.Elem); what != "" {
				f.removed[what]++
				continue
			}
			kept = append(kept, v.Elems[i])
		}
		v.Elems = kept
	case thriftgen.KindMap:
		if t.Value.Kind != thriftgen.KindStruct && t.Value.Kind != thriftgen.KindList {
			return "", object{}
		}
		kept := v.Elems[:0]
		for i := 0; i+1 < len(v.Elems); i += 2 {
			if what, _ := f.value(&v.Elems[i+1], t.Value); what != "" {
				f.removed[what]++
				continue
			}
			kept = append(kept, v.Elems[i], v.Elems[i+1])
		}
		v.Elems = kept
	}
	return "", object{}
}
