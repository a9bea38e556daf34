// Package viewsql rewrites the SQL stored in Hive and Spark views between the
// proxy's external names (catalog2__sales.orders) and the names a catalog's
// backend metastore holds (sales.orders), in both directions.
//
// It is parser-less on purpose: a lexer keeps literals, comments, numbers,
// backquoted identifiers and ${...} substitutions whole, and a small state
// machine finds the table positions (after FROM, any JOIN, INTO, TABLE,
// UPDATE, and the commas of a FROM list) and rewrites only the database part
// of the name found there. Everything else is copied byte for byte. A
// reference it cannot classify is left as it is and reported, never
// half-rewritten.
package viewsql

import (
	"fmt"
	"strings"
)

// Catalog is one configured proxy catalog.
type Catalog struct {
	Name        string // the proxy catalog id (catalog2)
	BackendName string // the catName its metastore uses (hive); "" means "hive"
}

// Options configure a Rewriter. They mirror the router's naming model
// (routing.catalog-db-separator, routing.default-catalog, catalogs=).
type Options struct {
	Separator      string
	DefaultCatalog string
	Catalogs       []Catalog
	// QualifyUnqualified: Outward qualifies a one-part table name of a
	// non-default catalog's view with the external name of the view's
	// database (the spec's behaviour). Inward cannot tell such a name from
	// one the client wrote, so it comes back qualified (docs/tables.md#view-sql-rewrite-routerviewsql).
	QualifyUnqualified bool
	// SessionCatalogs are three-part prefixes that name the metastore itself
	// from the engine's side: their database part is rewritten like a
	// two-part name's and the prefix kept. nil means Spark's spark_catalog.
	SessionCatalogs []string
	// Report, if set, is called once per reference left as it was because it
	// could not be classified or crosses catalogs (the router logs it).
	Report func(Finding)
}

// Direction of a rewrite.
type Direction uint8

const (
	// Inward: external names, as a client sent them, to the backend's names.
	Inward Direction = iota + 1
	// Outward: the backend's names to external names.
	Outward
)

func (d Direction) String() string {
	if d == Inward {
		return "inward"
	}
	return "outward"
}

// Reason says why a reference was left unchanged.
type Reason uint8

const (
	// CrossCatalog: the reference names a table of another catalog than the
	// one the view is stored in. Its metastore cannot resolve it; the router
	// refuses such a create or alter (Result.Err) instead of storing a view
	// that reads the wrong table or none.
	CrossCatalog Reason = iota + 1
	// Unclassified: a substitution, a dotted backquoted name, four or more
	// parts, an unknown three-part prefix, a backend name that already
	// carries a catalog prefix, or no database to qualify with.
	Unclassified
)

func (r Reason) String() string {
	if r == CrossCatalog {
		return "cross_catalog"
	}
	return "unclassified"
}

// Finding is one reference left as it was.
type Finding struct {
	Direction Direction
	Catalog   string // the catalog the view is stored in
	Ref       string // the reference as written
	Offset    int    // byte offset of Ref in the text
	Reason    Reason
	Detail    string
}

func (f Finding) String() string {
	return fmt.Sprintf("%s view SQL of catalog %s: %s reference %q at byte %d left unchanged: %s",
		f.Direction, f.Catalog, f.Reason, f.Ref, f.Offset, f.Detail)
}

// Result of rewriting one text.
type Result struct {
	Text    string
	Changed int // references rewritten
	// Irreversible counts the rewrites the other direction cannot undo:
	// Outward's qualification of one-part names, the three-part forms
	// (Outward collapses <backend catalog>.<db>.<table> to <external db>.<table>),
	// and backquotes either direction had to add. When it is 0 and there are
	// no findings, Inward(Outward(x)) == x, and Outward(Inward(y)) == y up to
	// the case of a catalog prefix.
	Irreversible int
	Findings     []Finding
}

// Err is non-nil when an inward rewrite left a cross-catalog reference: a
// view stored in one catalog cannot read another catalog's table. The error
// names every such reference.
func (r Result) Err() error {
	var refs []string
	cat := ""
	for _, f := range r.Findings {
		if f.Reason == CrossCatalog && f.Direction == Inward {
			refs = append(refs, fmt.Sprintf("%q (%s)", f.Ref, f.Detail))
			cat = f.Catalog
		}
	}
	if refs == nil {
		return nil
	}
	return fmt.Errorf("view SQL for catalog %s names tables of another catalog, which its metastore cannot read: %s",
		cat, strings.Join(refs, ", "))
}

// Rewriter rewrites view SQL; it is immutable and safe for concurrent use.
type Rewriter struct {
	sep      string
	def      *Catalog
	byName   map[string]*Catalog // lower-case proxy name
	qualify  bool
	sessions map[string]bool // lower-case
	report   func(Finding)
}

// New validates the options and builds a Rewriter.
func New(o Options) (*Rewriter, error) {
	if o.Separator == "" {
		return nil, fmt.Errorf("viewsql: empty catalog/db separator")
	}
	if len(o.Catalogs) == 0 {
		return nil, fmt.Errorf("viewsql: no catalogs")
	}
	r := &Rewriter{sep: o.Separator, byName: map[string]*Catalog{}, qualify: o.QualifyUnqualified,
		sessions: map[string]bool{}, report: o.Report}
	for i := range o.Catalogs {
		c := o.Catalogs[i]
		if c.Name == "" {
			return nil, fmt.Errorf("viewsql: catalog %d has no name", i)
		}
		if c.BackendName == "" {
			c.BackendName = "hive"
		}
		k := strings.ToLower(c.Name)
		if r.byName[k] != nil {
			return nil, fmt.Errorf("viewsql: catalog %q given twice", c.Name)
		}
		r.byName[k] = &c
		if strings.EqualFold(c.Name, o.DefaultCatalog) {
			r.def = &c
		}
	}
	if r.def == nil {
		return nil, fmt.Errorf("viewsql: default catalog %q is not one of the catalogs", o.DefaultCatalog)
	}
	sess := o.SessionCatalogs
	if sess == nil {
		sess = []string{"spark_catalog"} // Spark's session catalog is the metastore
	}
	for _, s := range sess {
		r.sessions[strings.ToLower(s)] = true
	}
	return r, nil
}

// View says which view a text belongs to.
type View struct {
	// Catalog the view is stored in (proxy catalog name).
	Catalog string
	// DB is the backend database that one-part table names resolve against
	// (the view's own database, or the engine's current database recorded
	// with the view, as Spark's view.catalogAndNamespace). Outward only.
	DB string
}

// Rewrite rewrites text in direction d for view v. An unknown catalog is an
// error; so is nothing else: what cannot be rewritten is reported.
func (r *Rewriter) Rewrite(d Direction, v View, text string) (Result, error) {
	c := r.byName[strings.ToLower(v.Catalog)]
	if c == nil {
		return Result{Text: text}, fmt.Errorf("viewsql: unknown catalog %q", v.Catalog)
	}
	res := Result{Text: text}
	toks := lex(text)
	refs := scan(text, toks)
	if len(refs) == 0 {
		return res, nil
	}
	var b strings.Builder
	last := 0
	for _, ref := range refs {
		edits, lossy, f := r.classify(d, c, v, text, toks, ref)
		if f != nil {
			f.Direction, f.Catalog = d, c.Name
			f.Ref, f.Offset = text[toks[ref.parts[0]].start:toks[ref.parts[len(ref.parts)-1]].end], toks[ref.parts[0]].start
			res.Findings = append(res.Findings, *f)
			if r.report != nil {
				r.report(*f)
			}
			continue
		}
		if len(edits) == 0 {
			continue
		}
		for _, e := range edits {
			b.WriteString(text[last:e.start])
			b.WriteString(e.with)
			last = e.end
		}
		res.Changed++
		if lossy {
			res.Irreversible++
		}
	}
	if res.Changed == 0 {
		return res, nil
	}
	b.WriteString(text[last:])
	res.Text = b.String()
	return res, nil
}

type edit struct {
	start, end int
	with       string
}

// name is one identifier part of a reference.
type name struct {
	val    string // unquoted value
	quoted bool
	ok     bool // false: substitution or a backquoted name with a dot
}

func partOf(text string, t token) name {
	s := text[t.start:t.end]
	switch t.kind {
	case tWord:
		return name{val: s, ok: true}
	case tQuoted:
		if len(s) < 2 || s[len(s)-1] != '`' {
			return name{}
		}
		v := strings.ReplaceAll(s[1:len(s)-1], "``", "`")
		return name{val: v, quoted: true, ok: v != "" && !strings.Contains(v, ".")}
	}
	return name{}
}

// plainIdent reports whether s can be written without backquotes.
func plainIdent(s string) bool {
	if s == "" {
		return false
	}
	if isDigit(s[0]) {
		if _, num := number(s, 0); num {
			return false // "0" alone reads as a number
		}
	}
	for i := 0; i < len(s); i++ {
		if !isWordByte(s[i]) {
			return false
		}
	}
	return true
}

// quote writes v as an identifier in the style of the original part: a
// backquoted part stays backquoted; an unquoted one stays unquoted when v can
// be written so.
func quote(v string, quoted bool) string {
	if !quoted && plainIdent(v) {
		return v
	}
	return "`" + strings.ReplaceAll(v, "`", "``") + "`"
}

// splitDB resolves an external database name as the router does: a prefix
// before the first separator that names a catalog makes it explicit.
func (r *Rewriter) splitDB(ext string) (*Catalog, string, bool) {
	if i := strings.Index(ext, r.sep); i > 0 {
		if c := r.byName[strings.ToLower(ext[:i])]; c != nil {
			return c, ext[i+len(r.sep):], true
		}
	}
	return r.def, ext, false
}

func (r *Rewriter) externalDB(c *Catalog, db string) string {
	if c == r.def {
		return db
	}
	return c.Name + r.sep + db
}

func (r *Rewriter) classify(d Direction, c *Catalog, v View, text string, toks []token, ref tableRef) ([]edit, bool, *Finding) {
	e, f := r.classify1(d, c, v, text, toks, ref)
	// One-part names qualified outward, and three-part names other than the
	// session catalog's, which Outward collapses.
	lossy := len(e) > 0 && (d == Outward && len(ref.parts) == 1 ||
		len(ref.parts) == 3 && !r.sessions[strings.ToLower(partOf(text, toks[ref.parts[0]]).val)])
	for _, x := range e {
		// Backquotes added to an unquoted name (a catalog name with a '-',
		// a database named "0"): the other direction keeps them.
		if strings.HasPrefix(x.with, "`") && text[x.start] != '`' {
			lossy = true
		}
	}
	return e, lossy, f
}

func (r *Rewriter) classify1(d Direction, c *Catalog, v View, text string, toks []token, ref tableRef) ([]edit, *Finding) {
	parts := make([]name, len(ref.parts))
	for i, ti := range ref.parts {
		parts[i] = partOf(text, toks[ti])
		if !parts[i].ok {
			return nil, &Finding{Reason: Unclassified, Detail: "a substitution or a backquoted name with a dot in it"}
		}
	}
	if last := parts[len(parts)-1]; last.quoted && strings.ContainsAny(last.val, "/:") {
		// Spark's file sources: parquet.`/data/x`, csv.`s3://b/k`.
		return nil, &Finding{Reason: Unclassified, Detail: "a path, not a table name"}
	}
	tok := func(i int) token { return toks[ref.parts[i]] }
	// replaceDB rewrites part i (a database) to s.
	replaceDB := func(i int, s string) []edit {
		return []edit{{tok(i).start, tok(i).end, quote(s, parts[i].quoted)}}
	}
	switch len(parts) {
	case 1:
		if ref.cte || d == Inward || c == r.def || !r.qualify {
			return nil, nil
		}
		if v.DB == "" {
			return nil, &Finding{Reason: Unclassified, Detail: "no database to qualify a one-part name with"}
		}
		q := quote(r.externalDB(c, v.DB), parts[0].quoted)
		return []edit{{tok(0).start, tok(0).start, q + "."}}, nil
	case 2:
		return r.twoPart(d, c, parts[0], func(s string) []edit { return replaceDB(0, s) })
	case 3:
		first := strings.ToLower(parts[0].val)
		if r.sessions[first] {
			return r.twoPart(d, c, parts[1], func(s string) []edit { return replaceDB(1, s) })
		}
		if d == Outward {
			if strings.EqualFold(parts[0].val, c.BackendName) {
				// <backend catalog>.<db>.<table> collapses to the external db.
				e := replaceDB(1, r.externalDB(c, parts[1].val))
				e[0].start = tok(0).start
				return e, nil
			}
			return nil, &Finding{Reason: Unclassified, Detail: "a three-part name whose first part is not this metastore's catalog " + c.BackendName}
		}
		x := r.byName[first]
		switch {
		case x == nil:
			return nil, &Finding{Reason: Unclassified, Detail: "a three-part name whose first part is no proxy catalog"}
		case x != c:
			return nil, &Finding{Reason: CrossCatalog, Detail: "names catalog " + x.Name}
		}
		// <proxy catalog>.<db>.<table> of the view's own catalog: the
		// backend's own catalog name.
		return []edit{{tok(0).start, tok(0).end, quote(c.BackendName, parts[0].quoted)}}, nil
	}
	return nil, &Finding{Reason: Unclassified, Detail: "more than three name parts"}
}

// twoPart handles the database part of <db>.<table> (also of
// <session catalog>.<db>.<table>).
func (r *Rewriter) twoPart(d Direction, c *Catalog, db name, replace func(string) []edit) ([]edit, *Finding) {
	x, internal, explicit := r.splitDB(db.val)
	if explicit && internal == "" {
		return nil, &Finding{Reason: Unclassified, Detail: "no database after the catalog prefix"}
	}
	if d == Outward {
		if explicit {
			return nil, &Finding{Reason: Unclassified, Detail: "the backend's database name already carries the prefix of catalog " + x.Name}
		}
		if c == r.def {
			return nil, nil
		}
		return replace(r.externalDB(c, db.val)), nil
	}
	switch {
	case x != c && explicit:
		return nil, &Finding{Reason: CrossCatalog, Detail: "names catalog " + x.Name}
	case x != c:
		return nil, &Finding{Reason: CrossCatalog, Detail: "names database " + db.val + " of the default catalog " + r.def.Name}
	case !explicit:
		return nil, nil // default catalog, unprefixed: the name is the backend's
	}
	return replace(internal), nil
}
