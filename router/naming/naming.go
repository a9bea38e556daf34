// Package naming is hms-proxy's naming model: the catalogs, the default one,
// and how a client's database names, patterns and catalog markers map to a
// catalog and its metastore's names (and back).
package naming

import (
	"strings"
)

// Namespace is the proxy's naming model: which catalogs exist, which one is the
// default, and how a legacy database name carries its catalog
// ("catalog2__sales" with the default separator).
//
// External names are what clients see; internal names are what the backend
// metastore of a catalog holds. The default catalog's databases keep their
// names; every other catalog's databases are shown as <catalog><sep><db>.
type Namespace struct {
	sep      string
	def      *Catalog
	byName   map[string]*Catalog // lower-case proxy catalog name
	ordered  []*Catalog
	preserve bool // federation.preserve-backend-catalog-name
}

// Catalog is one configured catalog as the naming model sees it.
type Catalog struct {
	Name        string // proxy catalog id, as configured
	BackendName string // catName the backend metastore uses (usually "hive")
	Default     bool
	// Index is the catalog's position in configured order: the router
	// finds a catalog's lane at this index.
	Index int
	// hs2Prefix is the HiveServer2-translated form of "<name><sep>" for LIKE
	// patterns: every '_' became '.', so "remote_hdp__" reads "remote.hdp..".
	hs2Prefix string
	lowerSep  string // strings.ToLower(Name) + sep
	enc       []byte // Name as an encoded Thrift string (outward catName)
}

// Encoded is the catalog's name as a Thrift string, built once.
func (c *Catalog) Encoded() []byte { return c.enc }

// NewNamespace builds the model; names must be unique (validated by configs).
func NewNamespace(sep, defaultCatalog string, preserve bool, cats []*Catalog) *Namespace {
	n := &Namespace{sep: sep, byName: map[string]*Catalog{}, preserve: preserve}
	for i, c := range cats {
		c.Index = i
		c.Default = strings.EqualFold(c.Name, defaultCatalog)
		c.lowerSep = strings.ToLower(c.Name) + sep
		c.hs2Prefix = strings.ReplaceAll(c.lowerSep, "_", ".")
		c.enc = AppendPrefixed(nil, c.Name, "", "", nil)
		n.byName[strings.ToLower(c.Name)] = c
		n.ordered = append(n.ordered, c)
		if c.Default {
			n.def = c
		}
	}
	return n
}

// Default returns the default catalog.
func (n *Namespace) Default() *Catalog { return n.def }

// Catalogs returns every catalog in configured order.
func (n *Namespace) Catalogs() []*Catalog { return n.ordered }

// Lookup finds a proxy catalog by name (case-insensitive).
func (n *Namespace) Lookup(name string) *Catalog { return n.byName[strings.ToLower(name)] }

// BackendCatalog is the catalog whose metastore calls its own catalog name
// (case-insensitively; "hive" unless metastore.catalog.default says
// otherwise): the default catalog when it does, else the first such catalog
// in configured order; nil when no metastore behind the proxy has it.
func (n *Namespace) BackendCatalog(name string) *Catalog {
	if name == "" {
		return nil
	}
	if strings.EqualFold(n.def.BackendName, name) {
		return n.def
	}
	for _, c := range n.ordered {
		if strings.EqualFold(c.BackendName, name) {
			return c
		}
	}
	return nil
}

// Preserve is federation.preserve-backend-catalog-name: answers keep the
// metastore's own catalog name.
func (n *Namespace) Preserve() bool { return n.preserve }

// Separator returns the catalog/db separator.
func (n *Namespace) Separator() string { return n.sep }

// SplitDB resolves an external database name. A name whose prefix before the
// first separator is a configured catalog names that catalog explicitly;
// anything else belongs to the default catalog and keeps its name.
func (n *Namespace) SplitDB(ext string) (c *Catalog, db string, explicit bool) {
	if i := strings.Index(ext, n.sep); i > 0 {
		if c := n.byName[strings.ToLower(ext[:i])]; c != nil {
			return c, ext[i+len(n.sep):], true
		}
	}
	return n.def, ext, false
}

// ExternalDB is the name a client sees for database db of catalog c.
func (n *Namespace) ExternalDB(c *Catalog, db string) string {
	if c.Default {
		return db
	}
	return c.Name + n.sep + db
}

// ExternalCatalog is the catName a client sees for objects of catalog c.
func (n *Namespace) ExternalCatalog(c *Catalog, backendValue string) string {
	if n.preserve {
		return backendValue
	}
	return c.Name
}

// SplitFullTable resolves "db.table" (as in GetValidWriteIdsRequest).
func (n *Namespace) SplitFullTable(ext string) (c *Catalog, internal string, explicit bool) {
	i := strings.IndexByte(ext, '.')
	if i < 0 {
		c, db, explicit := n.SplitDB(ext)
		return c, db, explicit
	}
	c, db, explicit := n.SplitDB(ext[:i])
	return c, db + ext[i:], explicit
}

// ExternalFullTable maps an internal "db.table" to the client's form.
func (n *Namespace) ExternalFullTable(c *Catalog, s string) string {
	if c.Default {
		return s
	}
	return c.Name + n.sep + s
}

// SplitPattern looks for a catalog prefix on a database LIKE-pattern, in the
// literal form ("catalog2__sales*") or in the form HiveServer2 produces when it
// turns SQL LIKE into a regex-ish pattern and replaces every unescaped '_' by
// '.' ("catalog2..sales*", "remote.hdp..sales"). It returns the catalog and
// the pattern to send to that catalog's backend.
func (n *Namespace) SplitPattern(p string) (c *Catalog, rest string, ok bool) {
	lp := strings.ToLower(p)
	var best *Catalog
	bestLen := 0
	for _, c := range n.ordered {
		for _, pre := range [2]string{c.lowerSep, c.hs2Prefix} {
			if len(pre) > bestLen && strings.HasPrefix(lp, pre) {
				best, bestLen = c, len(pre)
			}
		}
	}
	if best == nil {
		return nil, p, false
	}
	rest = p[bestLen:]
	if rest == "" {
		rest = "*"
	}
	return best, rest, true
}

// Hive 3 clients qualify database arguments with their catalog in one
// string: "@<catalog>#<db>" ("@hive#sales"), "@<catalog>#" for "every
// database" in pattern arguments, and "@<catalog>#!" for an empty name.
const (
	catMarker    = "@"
	catSeparator = "#"
	emptyDB      = "!"
)

// Ref is a database argument with its optional Hive 3 catalog marker.
type Ref struct {
	Marked  bool   // had the "@cat#" form
	MarkCat string // the catalog named by the marker
	Name    string // the database (or pattern) part; "" when absent
	HasName bool
}

func ParseRef(s string) Ref {
	if strings.HasPrefix(s, catMarker) {
		if i := strings.Index(s, catSeparator); i > 0 {
			r := Ref{Marked: true, MarkCat: s[1:i], Name: s[i+1:]}
			r.HasName = r.Name != ""
			if r.Name == emptyDB {
				r.Name = ""
			}
			return r
		}
	}
	return Ref{Name: s, HasName: true}
}

// MarkerCatalog resolves the catalog named by a marker: a proxy catalog is
// authoritative; a backend name such as "hive" is not.
func (n *Namespace) MarkerCatalog(r Ref) *Catalog {
	if !r.Marked {
		return nil
	}
	return n.Lookup(r.MarkCat)
}

// InternalRef re-encodes a reference for the backend: the marker names the
// backend's own catalog, the database its internal name.
func (n *Namespace) InternalRef(r Ref, internal string) string {
	if !r.Marked {
		return internal
	}
	cat := r.MarkCat
	if c := n.Lookup(cat); c != nil {
		cat = c.BackendName
	}
	switch {
	case !r.HasName:
		return catMarker + cat + catSeparator
	case internal == "":
		return catMarker + cat + catSeparator + emptyDB
	}
	return catMarker + cat + catSeparator + internal
}

// AppendPrefixed appends the Thrift string a+b+c+d.
func AppendPrefixed(dst []byte, a, b, c string, d []byte) []byte {
	n := len(a) + len(b) + len(c) + len(d)
	dst = append(dst, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	dst = append(dst, a...)
	dst = append(dst, b...)
	dst = append(dst, c...)
	return append(dst, d...)
}

// DummyDatabase is Hive's placeholder source of INSERT … VALUES and
// FROM-less queries (SemanticAnalyzer.DUMMY_DATABASE): it exists in no
// metastore and belongs to no catalog.
const DummyDatabase = "_dummy_database"
