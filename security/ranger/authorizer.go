package ranger

import (
	"fmt"
	"time"
)

// Resource types of the metrics.
const (
	ResourceDatabase = "database"
	ResourceTable    = "table"
	ResourceColumn   = "column"
	ResourceUDF      = "udf"
)

// Subject is who asks: the user (Kerberos short name or asserted user), the
// groups (the identity's own plus the configured group mapping's, see
// Groups) and, optionally, roles given by the identity (empty: roles come
// from the roles download).
type Subject struct {
	User   string
	Groups []string
	Roles  []string
}

// Authorizer is a plugin seen from one catalog: its checks are counted under
// that catalog's label. The router holds one per catalog lane; several
// catalogs may share a plugin (ranger.*) or have their own
// (catalog.<n>.ranger.*).
type Authorizer struct {
	p       *Plugin
	catalog string
	m       *catalogMetrics
}

// For returns the plugin's authorizer for a catalog (and marks the catalog
// in hms_proxy_ranger_plugin_info).
func (p *Plugin) For(catalog string) *Authorizer {
	p.o.Metrics.PluginInfo(catalog, p.o.Admin.ServiceName, p.o.ServiceType, p.o.Admin.AppID)
	return &Authorizer{p: p, catalog: catalog, m: p.o.Metrics.forCatalog(catalog)}
}

// Plugin is the plugin behind the authorizer.
func (a *Authorizer) Plugin() *Plugin { return a.p }

// IsAllowed checks one request. When the plugin is not ready the answer is
// a denial whose reason says why.
func (a *Authorizer) IsAllowed(r *Request) Decision {
	e := a.p.engine.Load()
	if e == nil {
		return Decision{PolicyID: -1, Reason: a.p.Ready().Error()}
	}
	start := time.Now()
	d := e.Decide(r)
	a.m.evaluated(resourceType(r), r.Access, d.Allowed, time.Since(start))
	return d
}

func resourceType(r *Request) string {
	switch {
	case r.Column != "":
		return ResourceColumn
	case r.Table != "":
		return ResourceTable
	case r.UDF != "":
		return ResourceUDF
	default:
		return ResourceDatabase
	}
}

// FilterDatabases keeps, in place and in order, the databases the subject may
// see: those on which any access is allowed on the database or anything in
// it (Hive's SHOW DATABASES asks Ranger exactly that). A plugin that is not
// ready keeps none and returns its reason.
func (a *Authorizer) FilterDatabases(s Subject, dbs []string) ([]string, error) {
	return a.filter(s, ResourceDatabase, dbs, func(r *Request, name string) { r.Database = name })
}

// FilterTables keeps, in place and in order, the tables (and views) of db the
// subject may see (any access on the table or its columns, as Hive's SHOW
// TABLES). A plugin that is not ready keeps none and returns its reason.
func (a *Authorizer) FilterTables(s Subject, db string, tables []string) ([]string, error) {
	return a.filter(s, ResourceTable, tables, func(r *Request, name string) { r.Database, r.Table = db, name })
}

func (a *Authorizer) filter(s Subject, typ string, names []string, set func(*Request, string)) ([]string, error) {
	e := a.p.engine.Load()
	if e == nil {
		return names[:0], a.p.Ready()
	}
	r := Request{User: s.User, Groups: s.Groups, Roles: s.Roles, Access: AccessAny, Time: e.now()}
	kept := names[:0]
	for _, n := range names {
		set(&r, n)
		start := time.Now()
		d := e.Decide(&r)
		a.m.evaluated(typ, AccessAny, d.Allowed, time.Since(start))
		if d.Allowed {
			kept = append(kept, n)
		}
	}
	a.m.filtered(typ, len(names)-len(kept))
	return kept, nil
}

// Filtered counts n objects of type typ (ResourceDatabase, ...) that a
// caller's answer lost or a request found missing because the policies give
// no access to them (hms_proxy_ranger_filtered_objects_total).
func (a *Authorizer) Filtered(typ string, n int) { a.m.filtered(typ, n) }

// String names the authorizer for logs.
func (a *Authorizer) String() string {
	return fmt.Sprintf("ranger service %s for catalog %s", a.p.o.Admin.ServiceName, a.catalog)
}
