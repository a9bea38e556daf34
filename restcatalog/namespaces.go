package restcatalog

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// catalogConfig is the answer of /v1/config and /v1/{prefix}/config.
type catalogConfig struct {
	Defaults  map[string]string `json:"defaults"`
	Overrides map[string]string `json:"overrides"`
	Endpoints []string          `json:"endpoints"`
}

func (h *Handler) configFor(catalog string) catalogConfig {
	return catalogConfig{
		Defaults:  map[string]string{},
		Overrides: map[string]string{"prefix": catalog},
		Endpoints: h.endpoints(h.writesAllowed(catalog)),
	}
}

// config serves GET /v1/config: ?warehouse=<catalog> selects the catalog
// whose prefix the client binds to; without it, the default catalog.
func (h *Handler) config(rc *requestCtx) (int, any, *Error) {
	q := rc.r.URL.Query()
	wh := q.Get("warehouse")
	if wh == "" {
		rc.prefix = h.ns.Default().Name
		return http.StatusOK, h.configFor(rc.prefix), nil
	}
	c := h.ns.Lookup(wh)
	if c == nil {
		return 0, nil, badRequest("unknown warehouse %q: the warehouse names a catalog of this proxy, one of %s", wh, h.catalogList())
	}
	rc.prefix = c.Name
	return http.StatusOK, h.configFor(c.Name), nil
}

// prefixConfig serves GET /v1/{prefix}/config.
func (h *Handler) prefixConfig(rc *requestCtx) (int, any, *Error) {
	return http.StatusOK, h.configFor(rc.prefix), nil
}

// listNamespaces serves GET /v1/{prefix}/namespaces. The default prefix lists
// every catalog's databases (the router fans get_all_databases out); another
// prefix lists that catalog's own.
func (h *Handler) listNamespaces(rc *requestCtx) (int, any, *Error) {
	parent := rc.r.URL.Query().Get("parent")
	c, e := rc.client()
	if e != nil {
		return 0, nil, e
	}
	if parent != "" {
		// HMS databases have no children: an existing parent lists none.
		if strings.Contains(parent, nsSeparator) {
			return 0, nil, noSuchNamespace(strings.ReplaceAll(parent, nsSeparator, "."))
		}
		ref, e := rc.namespaceName(parent)
		if e != nil {
			return 0, nil, e
		}
		if _, err := c.GetDatabase(rc.ctx, ref.Ext); err != nil {
			return 0, nil, metastoreError(err, "namespace "+parent, noSuchNamespace(parent))
		}
		return http.StatusOK, map[string]any{"namespaces": [][]string{}}, nil
	}
	var dbs []string
	var err error
	prefix := h.ns.Lookup(rc.prefix)
	if prefix.Default {
		dbs, err = c.GetAllDatabases(rc.ctx)
	} else {
		// A catalog-prefixed pattern reaches that catalog only.
		dbs, err = c.GetDatabases(rc.ctx, prefix.Name+h.ns.Separator()+"*")
	}
	if err != nil {
		return 0, nil, metastoreError(err, "the namespace list", nil)
	}
	out := [][]string{}
	for _, db := range dbs {
		if name, ok := rc.restName(db); ok {
			out = append(out, []string{name})
		}
	}
	return http.StatusOK, map[string]any{"namespaces": out}, nil
}

// Namespace properties that map to Database fields, as Iceberg's
// HiveCatalog maps them.
const (
	propLocation  = "location"
	propComment   = "comment"
	propOwner     = "hive.metastore.database.owner"
	propOwnerType = "hive.metastore.database.owner-type"
)

func databaseProperties(db *thriftgen.Database) map[string]string {
	props := maps.Clone(db.Parameters)
	if props == nil {
		props = map[string]string{}
	}
	if db.LocationUri != "" {
		props[propLocation] = db.LocationUri
	}
	if db.Description != "" {
		props[propComment] = db.Description
	}
	if db.OwnerName != nil && *db.OwnerName != "" {
		props[propOwner] = *db.OwnerName
		if db.OwnerType != nil {
			props[propOwnerType] = db.OwnerType.String()
		}
	}
	return props
}

func (rc *requestCtx) getDatabase(ref nsRef) (*thriftgen.Database, *Error) {
	c, e := rc.client()
	if e != nil {
		return nil, e
	}
	db, err := c.GetDatabase(rc.ctx, ref.Ext)
	if err != nil {
		return nil, metastoreError(err, "namespace "+ref.Name, noSuchNamespace(ref.Name))
	}
	return db, nil
}

func (h *Handler) loadNamespace(rc *requestCtx) (int, any, *Error) {
	ref, e := rc.namespace()
	if e != nil {
		return 0, nil, e
	}
	db, e := rc.getDatabase(ref)
	if e != nil {
		return 0, nil, e
	}
	return http.StatusOK, map[string]any{"namespace": []string{ref.Name}, "properties": databaseProperties(db)}, nil
}

func (h *Handler) namespaceExists(rc *requestCtx) (int, any, *Error) {
	ref, e := rc.namespace()
	if e != nil {
		return 0, nil, e
	}
	if _, e := rc.getDatabase(ref); e != nil {
		return 0, nil, e
	}
	return http.StatusNoContent, nil, nil
}

type createNamespaceRequest struct {
	Namespace  []string          `json:"namespace"`
	Properties map[string]string `json:"properties"`
}

// applyDatabaseProperties sets props on db: location, comment and owner go
// to their Database fields, the rest to parameters.
func applyDatabaseProperties(db *thriftgen.Database, props map[string]string) *Error {
	for k, v := range props {
		switch k {
		case propLocation:
			db.LocationUri = v
		case propComment:
			db.Description = v
		case propOwner:
			owner := v
			db.OwnerName = &owner
		case propOwnerType:
			var t thriftgen.PrincipalType
			switch strings.ToUpper(v) {
			case "USER":
				t = thriftgen.PrincipalType_USER
			case "ROLE":
				t = thriftgen.PrincipalType_ROLE
			case "GROUP":
				t = thriftgen.PrincipalType_GROUP
			default:
				return badRequest("namespace property %s=%q: must be USER, ROLE or GROUP", propOwnerType, v)
			}
			db.OwnerType = &t
		default:
			if db.Parameters == nil {
				db.Parameters = map[string]string{}
			}
			db.Parameters[k] = v
		}
	}
	return nil
}

func (h *Handler) createNamespace(rc *requestCtx) (int, any, *Error) {
	var req createNamespaceRequest
	if e := rc.decodeBody(&req); e != nil {
		return 0, nil, e
	}
	if req.Namespace == nil {
		return 0, nil, badRequest("field \"namespace\" is required")
	}
	ref, e := rc.namespaceLevels(req.Namespace)
	if e != nil {
		return 0, nil, e
	}
	if e := rc.forWrite(ref); e != nil {
		return 0, nil, e
	}
	db := &thriftgen.Database{Name: ref.Ext, Parameters: map[string]string{}}
	if e := applyDatabaseProperties(db, req.Properties); e != nil {
		return 0, nil, e
	}
	c, e := rc.client()
	if e != nil {
		return 0, nil, e
	}
	if err := c.CreateDatabase(rc.ctx, db); err != nil {
		me := metastoreError(err, "namespace "+ref.Name, nil)
		if me.Code == http.StatusConflict {
			me = alreadyExists("Namespace already exists: %s", ref.Name)
		}
		return 0, nil, me
	}
	created, e := rc.getDatabase(ref)
	if e != nil {
		return 0, nil, e
	}
	return http.StatusOK, map[string]any{"namespace": []string{ref.Name}, "properties": databaseProperties(created)}, nil
}

type updatePropertiesRequest struct {
	Removals []string          `json:"removals"`
	Updates  map[string]string `json:"updates"`
}

func (h *Handler) updateNamespaceProperties(rc *requestCtx) (int, any, *Error) {
	ref, e := rc.namespace()
	if e != nil {
		return 0, nil, e
	}
	var req updatePropertiesRequest
	if e := rc.decodeBody(&req); e != nil {
		return 0, nil, e
	}
	for _, k := range req.Removals {
		if _, ok := req.Updates[k]; ok {
			return 0, nil, errorf(http.StatusUnprocessableEntity, typeUnprocessable, "property %q is both updated and removed", k)
		}
	}
	if e := rc.forWrite(ref); e != nil {
		return 0, nil, e
	}
	db, e := rc.getDatabase(ref)
	if e != nil {
		return 0, nil, e
	}
	current := databaseProperties(db)
	removed, missing := []string{}, []string{}
	for _, k := range req.Removals {
		if _, ok := current[k]; !ok {
			missing = append(missing, k)
			continue
		}
		removed = append(removed, k)
		switch k {
		case propLocation:
			return 0, nil, badRequest("namespace property %q cannot be removed, only changed", k)
		case propComment:
			db.Description = ""
		case propOwner:
			db.OwnerName, db.OwnerType = nil, nil
		case propOwnerType:
			db.OwnerType = nil
		default:
			delete(db.Parameters, k)
		}
	}
	if e := applyDatabaseProperties(db, req.Updates); e != nil {
		return 0, nil, e
	}
	updated := slices.Sorted(maps.Keys(req.Updates))
	if updated == nil {
		updated = []string{}
	}
	c, e := rc.client()
	if e != nil {
		return 0, nil, e
	}
	db.Name = ref.Ext
	if err := c.AlterDatabase(rc.ctx, ref.Ext, db); err != nil {
		return 0, nil, metastoreError(err, "namespace "+ref.Name, noSuchNamespace(ref.Name))
	}
	return http.StatusOK, map[string]any{"updated": updated, "removed": removed, "missing": missing}, nil
}

func (h *Handler) dropNamespace(rc *requestCtx) (int, any, *Error) {
	ref, e := rc.namespace()
	if e != nil {
		return 0, nil, e
	}
	if e := rc.forWrite(ref); e != nil {
		return 0, nil, e
	}
	// Hive 3.1.3 answers drop_database of a missing database with its own
	// NullPointerException (a MetaException): look first.
	if _, e := rc.getDatabase(ref); e != nil {
		return 0, nil, e
	}
	c, e := rc.client()
	if e != nil {
		return 0, nil, e
	}
	if err := c.DropDatabase(rc.ctx, ref.Ext, false, false); err != nil {
		me := metastoreError(err, "namespace "+ref.Name, noSuchNamespace(ref.Name))
		if me.Code == http.StatusBadRequest && strings.Contains(strings.ToLower(exceptionText(err)), "not empty") {
			me = errorf(http.StatusConflict, typeNamespaceNotEmpty, "Namespace %s is not empty: %s", ref.Name, exceptionText(err))
		}
		return 0, nil, me
	}
	return http.StatusNoContent, nil, nil
}
