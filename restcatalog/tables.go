package restcatalog

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hms-proxy/hms-proxy/restcatalog/icemeta"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// objectBatch bounds one get_table_objects_by_name call of a listing.
const objectBatch = 200

type tableIdentifier struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

// listObjects lists the tables of a namespace that keep (Iceberg tables or
// Iceberg views).
func (rc *requestCtx) listObjects(ref nsRef, keep func(*thriftgen.Table) bool) ([]tableIdentifier, *Error) {
	c, e := rc.client()
	if e != nil {
		return nil, e
	}
	if _, e := rc.getDatabase(ref); e != nil {
		return nil, e
	}
	names, err := c.GetAllTables(rc.ctx, ref.Ext)
	if err != nil {
		return nil, metastoreError(err, "the tables of namespace "+ref.Name, noSuchNamespace(ref.Name))
	}
	out := []tableIdentifier{}
	for len(names) > 0 {
		n := min(len(names), objectBatch)
		tbls, err := c.GetTableObjectsByName(rc.ctx, ref.Ext, names[:n])
		if err != nil {
			return nil, metastoreError(err, "the tables of namespace "+ref.Name, noSuchNamespace(ref.Name))
		}
		names = names[n:]
		for _, t := range tbls {
			if t != nil && keep(t) {
				out = append(out, tableIdentifier{Namespace: []string{ref.Name}, Name: t.TableName})
			}
		}
	}
	slices.SortFunc(out, func(a, b tableIdentifier) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (h *Handler) listTables(rc *requestCtx) (int, any, *Error) {
	ref, e := rc.namespace()
	if e != nil {
		return 0, nil, e
	}
	ids, e := rc.listObjects(ref, func(t *thriftgen.Table) bool { return isIcebergTable(t) && !isIcebergView(t) })
	if e != nil {
		return 0, nil, e
	}
	return http.StatusOK, map[string]any{"identifiers": ids}, nil
}

// object is the namespace and the name of the table or view the path names
// (kind: its path parameter, "table" or "view"). A namespace of several
// levels holds no table here: the object does not exist (the Java client
// asks for ns.tbl.snapshots as table snapshots of namespace ns.tbl and falls
// back to the metadata table only on NoSuchTableException).
func (rc *requestCtx) object(kind string) (nsRef, string, *Error) {
	name, e := rc.tableParam(kind)
	if e != nil {
		return nsRef{}, "", e
	}
	if raw := rc.params["namespace"]; strings.Contains(raw, nsSeparator) {
		ns := strings.ReplaceAll(raw, nsSeparator, ".")
		if kind == "view" {
			return nsRef{}, "", noSuchView(ns, name)
		}
		return nsRef{}, "", noSuchTable(ns, name)
	}
	ref, e := rc.namespace()
	return ref, name, e
}

// tableParam validates the {table} (or {view}) path parameter.
func (rc *requestCtx) tableParam(key string) (string, *Error) {
	name := rc.params[key]
	return name, checkName(key, name)
}

// icebergTable reads the record of an Iceberg table; anything else is 404.
func (rc *requestCtx) icebergTable(ref nsRef, name string) (*thriftgen.Table, *Error) {
	nf := noSuchTable(ref.Name, name)
	t, e := rc.getTable(ref, name, nf)
	if e != nil {
		return nil, e
	}
	if !isIcebergTable(t) || isIcebergView(t) {
		nf.Message += " (not an Iceberg table: table_type=" + t.Parameters[paramTableType] + ")"
		return nil, nf
	}
	if t.Parameters[paramMetadataLocation] == "" {
		return nil, internalf("Iceberg table %s.%s has no metadata_location", ref.Name, name)
	}
	return t, nil
}

type loadTableResult struct {
	MetadataLocation *string           `json:"metadata-location"`
	Metadata         *icemeta.Table    `json:"metadata"`
	Config           map[string]string `json:"config"`
}

func loadResult(loc string, m *icemeta.Table) loadTableResult {
	r := loadTableResult{Metadata: m, Config: map[string]string{}}
	if loc != "" {
		r.MetadataLocation = &loc
	}
	return r
}

func (h *Handler) loadTable(rc *requestCtx) (int, any, *Error) {
	ref, name, e := rc.object("table")
	if e != nil {
		return 0, nil, e
	}
	if s := rc.r.URL.Query().Get("snapshots"); s != "" && s != "all" && s != "refs" {
		return 0, nil, badRequest("snapshots=%q: must be all or refs", s)
	}
	t, e := rc.icebergTable(ref, name)
	if e != nil {
		return 0, nil, e
	}
	loc := t.Parameters[paramMetadataLocation]
	m, e := h.readTableMetadata(rc.at(ref.Catalog), loc)
	if e != nil {
		return 0, nil, e
	}
	return http.StatusOK, loadResult(loc, m), nil
}

func (h *Handler) tableExists(rc *requestCtx) (int, any, *Error) {
	ref, name, e := rc.object("table")
	if e != nil {
		return 0, nil, e
	}
	if _, e := rc.icebergTable(ref, name); e != nil {
		return 0, nil, e
	}
	return http.StatusNoContent, nil, nil
}

// checkLocation refuses locations that are not clean absolute URIs or paths:
// relative paths, ".." segments, control characters.
func checkLocation(what, loc string) *Error {
	if loc == "" {
		return nil
	}
	for _, r := range loc {
		if r < 0x20 || r == 0x7f {
			return badRequest("%s %q contains a control character", what, loc)
		}
	}
	u, err := url.Parse(loc)
	if err != nil {
		return badRequest("%s %q is not a URI: %v", what, loc, err)
	}
	p := u.Path
	if u.Scheme == "" && !strings.HasPrefix(loc, "/") {
		return badRequest("%s %q is relative; give an absolute path or a URI", what, loc)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "." {
			return badRequest("%s %q contains a %q segment", what, loc, seg)
		}
	}
	return nil
}

type createTableRequest struct {
	Name          string            `json:"name"`
	Location      string            `json:"location"`
	Schema        json.RawMessage   `json:"schema"`
	PartitionSpec json.RawMessage   `json:"partition-spec"`
	WriteOrder    json.RawMessage   `json:"write-order"`
	StageCreate   bool              `json:"stage-create"`
	Properties    map[string]string `json:"properties"`
}

// defaultLocation is the location of a new table or view without one: the
// database's location plus the name, as HiveCatalog does.
func (rc *requestCtx) defaultLocation(ref nsRef, name string) (string, *Error) {
	db, e := rc.getDatabase(ref)
	if e != nil {
		return "", e
	}
	if db.LocationUri == "" {
		return "", badRequest("namespace %s has no location; give the table a location", ref.Name)
	}
	return strings.TrimSuffix(db.LocationUri, "/") + "/" + name, nil
}

func (h *Handler) createTable(rc *requestCtx) (int, any, *Error) {
	ref, e := rc.namespace()
	if e != nil {
		return 0, nil, e
	}
	var req createTableRequest
	if e := rc.decodeBody(&req); e != nil {
		return 0, nil, e
	}
	if e := checkName("table", req.Name); e != nil {
		return 0, nil, e
	}
	if isNull(req.Schema) {
		return 0, nil, badRequest("field \"schema\" is required")
	}
	if e := checkLocation("location", req.Location); e != nil {
		return 0, nil, e
	}
	if e := rc.forWrite(ref); e != nil {
		return 0, nil, e
	}
	loc := req.Location
	if loc == "" {
		if loc, e = rc.defaultLocation(ref, req.Name); e != nil {
			return 0, nil, e
		}
	} else if _, e := rc.getDatabase(ref); e != nil {
		return 0, nil, e
	}
	if t, e := rc.lookupTable(ref, req.Name); e != nil {
		return 0, nil, e
	} else if t != nil {
		return 0, nil, existsError("Table", kindOf(t), ref.Name, req.Name)
	}
	m, err := icemeta.NewTable(req.Schema, req.PartitionSpec, req.WriteOrder, loc, req.Properties, time.Now())
	if err != nil {
		return 0, nil, badRequest("cannot build the metadata of table %s.%s: %v", ref.Name, req.Name, err)
	}
	if req.StageCreate {
		return http.StatusOK, loadResult("", m), nil
	}
	ch := &tableChange{ref: ref, name: req.Name, create: true, next: m}
	if e := rc.publish([]*tableChange{ch}); e != nil {
		return 0, nil, e
	}
	return http.StatusOK, loadResult(ch.nextLoc, ch.next), nil
}

// commitTableRequest is the body of a table commit (and of a view
// replacement): requirements and updates, the identifier optional.
type commitTableRequest struct {
	Identifier   *tableIdentifier      `json:"identifier"`
	Requirements []icemeta.Requirement `json:"requirements"`
	Updates      []icemeta.Update      `json:"updates"`
}

// commitBody reads a commit of the table or view named by the path parameter
// kind ("table", "view"): its namespace, name and body, the body's identifier
// checked against the path, and the write gate.
func (rc *requestCtx) commitBody(kind string) (nsRef, string, commitTableRequest, *Error) {
	var req commitTableRequest
	ref, name, e := rc.object(kind)
	if e != nil {
		return ref, "", req, e
	}
	if e := rc.decodeBody(&req); e != nil {
		return ref, "", req, e
	}
	if id := req.Identifier; id != nil && (id.Name != name || !slices.Equal(id.Namespace, []string{ref.Name})) {
		return ref, "", req, badRequest("the body's identifier %s.%s does not match the path's %s %s.%s",
			strings.Join(id.Namespace, "."), id.Name, kind, ref.Name, name)
	}
	return ref, name, req, rc.forWrite(ref)
}

func (h *Handler) commitTable(rc *requestCtx) (int, any, *Error) {
	ref, name, req, e := rc.commitBody("table")
	if e != nil {
		return 0, nil, e
	}
	ch := &tableChange{ref: ref, name: name, reqs: req.Requirements, updates: req.Updates}
	if e := rc.prepare(ch); e != nil {
		return 0, nil, e
	}
	if e := rc.publish([]*tableChange{ch}); e != nil {
		return 0, nil, e
	}
	return http.StatusOK, map[string]any{"metadata-location": ch.nextLoc, "metadata": ch.next}, nil
}

type renameRequest struct {
	Source      *tableIdentifier `json:"source"`
	Destination *tableIdentifier `json:"destination"`
}

// renameObject renames a table or view (isView) within one catalog.
func (rc *requestCtx) renameObject(isView bool) (int, any, *Error) {
	var req renameRequest
	if e := rc.decodeBody(&req); e != nil {
		return 0, nil, e
	}
	if req.Source == nil || req.Destination == nil {
		return 0, nil, badRequest("fields \"source\" and \"destination\" are required")
	}
	src, e := rc.namespaceLevels(req.Source.Namespace)
	if e != nil {
		return 0, nil, e
	}
	dst, e := rc.namespaceLevels(req.Destination.Namespace)
	if e != nil {
		return 0, nil, e
	}
	kind := "table"
	if isView {
		kind = "view"
	}
	for _, n := range []string{req.Source.Name, req.Destination.Name} {
		if e := checkName(kind, n); e != nil {
			return 0, nil, e
		}
	}
	if src.Catalog != dst.Catalog {
		return 0, nil, badRequest("cannot rename %s %s.%s (catalog %s) to %s.%s (catalog %s): a rename stays within one catalog",
			kind, src.Name, req.Source.Name, src.Catalog, dst.Name, req.Destination.Name, dst.Catalog)
	}
	rc.catalog = src.Catalog
	if e := rc.forWrite(src); e != nil {
		return 0, nil, e
	}
	if e := rc.forWrite(dst); e != nil {
		return 0, nil, e
	}
	var t *thriftgen.Table
	if isView {
		t, e = rc.icebergView(src, req.Source.Name)
	} else {
		t, e = rc.icebergTable(src, req.Source.Name)
	}
	if e != nil {
		return 0, nil, e
	}
	if _, e := rc.getDatabase(dst); e != nil {
		return 0, nil, e
	}
	if t, e := rc.lookupTable(dst, req.Destination.Name); e != nil {
		return 0, nil, e
	} else if t != nil {
		return 0, nil, alreadyExists("Cannot rename %s.%s to %s.%s. %s already exists", src.Name, req.Source.Name, dst.Name, req.Destination.Name, kindOf(t))
	}
	c, e := rc.client()
	if e != nil {
		return 0, nil, e
	}
	t.DbName, t.TableName = dst.Ext, req.Destination.Name
	if err := c.AlterTable(rc.ctx, src.Ext, req.Source.Name, t); err != nil {
		return 0, nil, metastoreError(err, kind+" "+src.Name+"."+req.Source.Name, nil)
	}
	return http.StatusNoContent, nil, nil
}

func (h *Handler) renameTable(rc *requestCtx) (int, any, *Error) { return rc.renameObject(false) }

type registerTableRequest struct {
	Name             string `json:"name"`
	MetadataLocation string `json:"metadata-location"`
	Overwrite        bool   `json:"overwrite"`
}

func (h *Handler) registerTable(rc *requestCtx) (int, any, *Error) {
	ref, e := rc.namespace()
	if e != nil {
		return 0, nil, e
	}
	var req registerTableRequest
	if e := rc.decodeBody(&req); e != nil {
		return 0, nil, e
	}
	if e := checkName("table", req.Name); e != nil {
		return 0, nil, e
	}
	if req.MetadataLocation == "" {
		return 0, nil, badRequest("field \"metadata-location\" is required")
	}
	if e := checkLocation("metadata-location", req.MetadataLocation); e != nil {
		return 0, nil, e
	}
	if e := rc.forWrite(ref); e != nil {
		return 0, nil, e
	}
	if _, e := rc.getDatabase(ref); e != nil {
		return 0, nil, e
	}
	m, e := h.readTableMetadata(rc.at(ref.Catalog), req.MetadataLocation)
	if e != nil {
		if e.Code >= 500 {
			e = badRequest("cannot register %s.%s: %s", ref.Name, req.Name, e.Message)
		}
		return 0, nil, e
	}
	ch := &tableChange{ref: ref, name: req.Name, next: m, nextLoc: req.MetadataLocation, registered: true}
	existing, e := rc.lookupTable(ref, req.Name)
	switch {
	case e != nil:
		return 0, nil, e
	case existing != nil && !req.Overwrite:
		return 0, nil, alreadyExists("Table already exists: %s.%s", ref.Name, req.Name)
	case existing != nil:
		if !isIcebergTable(existing) {
			return 0, nil, alreadyExists("%s.%s exists and is not an Iceberg table; overwrite replaces only Iceberg tables", ref.Name, req.Name)
		}
		ch.rec, ch.baseLoc = existing, existing.Parameters[paramMetadataLocation]
		if ch.base, e = h.readTableMetadata(rc.at(ref.Catalog), ch.baseLoc); e != nil {
			return 0, nil, e
		}
	default:
		ch.create = true
	}
	if e := rc.publish([]*tableChange{ch}); e != nil {
		return 0, nil, e
	}
	return http.StatusOK, loadResult(ch.nextLoc, ch.next), nil
}

// isNull reports whether a JSON member was absent or null.
func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}
