package locks

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Hive's placeholder source of queries without a FROM and of INSERT ... VALUES
// (SemanticAnalyzer.DUMMY_DATABASE and DUMMY_TABLE): HiveServer2 locks it next
// to the real target, though it exists in no metastore.
const (
	DummyDatabase = "_dummy_database"
	DummyTable    = "_dummy_table"
)

// Resolver maps a database name as the client sent it (external name, e.g.
// catalog2__sales) to its catalog and backend database name; known is false
// when the name belongs to no catalog the proxy serves.
type Resolver func(db string) (catalog, backendDB string, known bool)

// SplitResult is a lock request cut by catalog.
type SplitResult struct {
	// Default is the default catalog's part, its databases under backend names,
	// for the default catalog's metastore (whose TxnHandler owns the request's
	// transaction); nil when the request names no database of the default
	// catalog. Hive's _dummy_database components stay here, unchanged.
	Default *thriftgen.LockRequest
	// Shim holds one part per other catalog, in order of first appearance, under
	// backend names: what the shim locks (Shim.Lock takes them together, one id).
	Shim []Request
	// Split says the request named more than one catalog.
	Split bool
	// Catalogs lists the catalogs named, in order of first appearance (the
	// placeholder names none).
	Catalogs []string
}

// Split cuts a lock request by catalog. Each component goes to the catalog its
// database resolves to, rewritten to the backend database name; the
// _dummy_database placeholder chooses no catalog, does not count as a second
// namespace and is not rewritten: it stays with the default catalog's part,
// and is dropped (there is nothing to lock) when every real component belongs
// to other catalogs. A request of placeholders only is the default catalog's,
// unchanged. The parts share req's scalar fields (txnid, user, host, flags);
// req itself is not modified. A component whose database belongs to no
// catalog is an error naming it.
func Split(req *thriftgen.LockRequest, defaultCatalog string, resolve Resolver) (SplitResult, error) {
	var res SplitResult
	if req == nil || len(req.Component) == 0 {
		return res, errors.New("lock request without components")
	}
	if defaultCatalog == "" || resolve == nil {
		return res, errors.New("locks: Split needs the default catalog's name and a resolver")
	}
	type placed struct {
		catalog string // "" = placeholder
		comp    *thriftgen.LockComponent
	}
	var all []placed
	parts := map[string][]*thriftgen.LockComponent{}
	for i, c := range req.Component {
		if c == nil {
			return res, fmt.Errorf("lock component %d is null", i)
		}
		if strings.EqualFold(c.Dbname, DummyDatabase) {
			all = append(all, placed{comp: c})
			continue
		}
		if c.Dbname == "" {
			return res, fmt.Errorf("lock component %d (%s) names no database", i, c.Type)
		}
		catalog, backendDB, known := resolve(c.Dbname)
		if !known || catalog == "" {
			return res, fmt.Errorf("lock component %d (%s on %s) names database %q, which belongs to no catalog of this proxy",
				i, c.Type, objectName(c), c.Dbname)
		}
		rc := *c
		rc.Dbname = backendDB
		if _, seen := parts[catalog]; !seen {
			res.Catalogs = append(res.Catalogs, catalog)
		}
		parts[catalog] = append(parts[catalog], &rc)
		all = append(all, placed{catalog: catalog, comp: &rc})
	}
	res.Split = len(res.Catalogs) > 1
	_, hasDefault := parts[defaultCatalog]
	if hasDefault || len(res.Catalogs) == 0 {
		d := *req
		d.Component = nil
		for _, p := range all {
			if p.catalog == defaultCatalog || p.catalog == "" {
				d.Component = append(d.Component, p.comp)
			}
		}
		res.Default = &d
	}
	for _, cat := range res.Catalogs {
		if cat == defaultCatalog {
			continue
		}
		p := *req
		p.Component = parts[cat]
		res.Shim = append(res.Shim, Request{Catalog: cat, Lock: &p})
	}
	return res, nil
}

// LockCatalog is the catalog whose lock id the client gets for a split
// request: the default catalog when it has a part (its lock is the one the
// client's transaction lives in), else the first catalog of the shim's parts.
func (r SplitResult) LockCatalog(defaultCatalog string) string {
	if r.Default != nil {
		return defaultCatalog
	}
	if len(r.Shim) > 0 {
		return r.Shim[0].Catalog
	}
	return defaultCatalog
}
