package restcatalog

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/hms-proxy/hms-proxy/restcatalog/icemeta"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

func (h *Handler) listViews(rc *requestCtx) (int, any, *Error) {
	ref, e := rc.namespace()
	if e != nil {
		return 0, nil, e
	}
	ids, e := rc.listObjects(ref, isIcebergView)
	if e != nil {
		return 0, nil, e
	}
	return http.StatusOK, map[string]any{"identifiers": ids}, nil
}

// icebergView reads the record of an Iceberg view; anything else is 404.
func (rc *requestCtx) icebergView(ref nsRef, name string) (*thriftgen.Table, *Error) {
	nf := noSuchView(ref.Name, name)
	t, e := rc.getTable(ref, name, nf)
	if e != nil {
		return nil, e
	}
	if !isIcebergView(t) {
		nf.Message += " (not an Iceberg view)"
		return nil, nf
	}
	if t.Parameters[paramMetadataLocation] == "" {
		return nil, internalf("Iceberg view %s.%s has no metadata_location", ref.Name, name)
	}
	return t, nil
}

type loadViewResult struct {
	MetadataLocation string            `json:"metadata-location"`
	Metadata         *icemeta.View     `json:"metadata"`
	Config           map[string]string `json:"config"`
}

func (h *Handler) loadView(rc *requestCtx) (int, any, *Error) {
	ref, name, e := rc.object("view")
	if e != nil {
		return 0, nil, e
	}
	t, e := rc.icebergView(ref, name)
	if e != nil {
		return 0, nil, e
	}
	loc := t.Parameters[paramMetadataLocation]
	m, e := h.readViewMetadata(rc.at(ref.Catalog), loc)
	if e != nil {
		return 0, nil, e
	}
	return http.StatusOK, loadViewResult{MetadataLocation: loc, Metadata: m, Config: map[string]string{}}, nil
}

func (h *Handler) viewExists(rc *requestCtx) (int, any, *Error) {
	ref, name, e := rc.object("view")
	if e != nil {
		return 0, nil, e
	}
	if _, e := rc.icebergView(ref, name); e != nil {
		return 0, nil, e
	}
	return http.StatusNoContent, nil, nil
}

type createViewRequest struct {
	Name        string            `json:"name"`
	Location    string            `json:"location"`
	Schema      json.RawMessage   `json:"schema"`
	ViewVersion json.RawMessage   `json:"view-version"`
	Properties  map[string]string `json:"properties"`
}

func (h *Handler) createView(rc *requestCtx) (int, any, *Error) {
	ref, e := rc.namespace()
	if e != nil {
		return 0, nil, e
	}
	var req createViewRequest
	if e := rc.decodeBody(&req); e != nil {
		return 0, nil, e
	}
	if e := checkName("view", req.Name); e != nil {
		return 0, nil, e
	}
	if isNull(req.Schema) || isNull(req.ViewVersion) {
		return 0, nil, badRequest("fields \"schema\" and \"view-version\" are required")
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
	}
	if t, e := rc.lookupTable(ref, req.Name); e != nil {
		return 0, nil, e
	} else if t != nil {
		return 0, nil, existsError("View", kindOf(t), ref.Name, req.Name)
	}
	m, err := icemeta.NewView(req.Schema, req.ViewVersion, loc, req.Properties, time.Now())
	if err != nil {
		return 0, nil, metadataError(err, "cannot build the metadata of view %s.%s", ref.Name, req.Name)
	}
	newLoc := newViewMetadataLocation(m, "")
	if e := checkLocation("view metadata location", newLoc); e != nil {
		return 0, nil, e
	}
	if e := h.writeFile(rc.at(ref.Catalog), newLoc, m, ""); e != nil {
		return 0, nil, e
	}
	owner := req.Properties[propOwnerOfTable]
	if owner == "" {
		owner = lockUser(rc.caller)
	}
	rec := newHMSRecord(ref.Ext, req.Name, owner, tableTypeView)
	if e := updateViewRecord(rec, m, newLoc, "", nil); e != nil {
		h.removeFile(rc.at(ref.Catalog), newLoc)
		return 0, nil, e
	}
	c, e := rc.client()
	if e != nil {
		h.removeFile(rc.at(ref.Catalog), newLoc)
		return 0, nil, e
	}
	if err := c.CreateTable(rc.ctx, rec); err != nil {
		h.removeFile(rc.at(ref.Catalog), newLoc)
		me := metastoreError(err, "view "+ref.Name+"."+req.Name, nil)
		if me.Code == http.StatusConflict {
			me = existsError("View", "View", ref.Name, req.Name)
		}
		return 0, nil, me
	}
	return http.StatusOK, loadViewResult{MetadataLocation: newLoc, Metadata: m, Config: map[string]string{}}, nil
}

func (h *Handler) replaceView(rc *requestCtx) (int, any, *Error) {
	ref, name, req, e := rc.commitBody("view")
	if e != nil {
		return 0, nil, e
	}
	t, e := rc.icebergView(ref, name)
	if e != nil {
		return 0, nil, e
	}
	full := ref.Name + "." + name
	baseLoc := t.Parameters[paramMetadataLocation]
	base, e := h.readViewMetadata(rc.at(ref.Catalog), baseLoc)
	if e != nil {
		return 0, nil, e
	}
	for _, r := range req.Requirements {
		if err := r.CheckView(base); err != nil {
			return 0, nil, requirementError("view "+full, err)
		}
	}
	next, err := icemeta.ApplyView(base, req.Updates, time.Now())
	if err != nil {
		return 0, nil, metadataError(err, "cannot apply the updates to view %s", full)
	}
	if e := checkLocation("view location", next.Location); e != nil {
		return 0, nil, e
	}
	newLoc := newViewMetadataLocation(next, baseLoc)
	if e := checkLocation("view metadata location", newLoc); e != nil {
		return 0, nil, e
	}
	if e := h.writeFile(rc.at(ref.Catalog), newLoc, next, ""); e != nil {
		return 0, nil, e
	}
	published := false
	defer func() {
		if !published {
			h.removeFile(rc.at(ref.Catalog), newLoc)
		}
	}()
	unqueue, err := h.queues.acquire(rc.ctx, ref.Catalog, ref.Ext, name)
	if err != nil {
		return 0, nil, commitFailed("gave up waiting for the previous commit of view %s through this proxy: %v", full, err)
	}
	defer unqueue()
	if h.lockEnabled(ref.Catalog, next.Properties) {
		release, e := rc.lock(ref, name)
		if e != nil {
			return 0, nil, e
		}
		defer release()
	}
	cur, e := rc.icebergView(ref, name)
	if e != nil {
		return 0, nil, e
	}
	if l := cur.Parameters[paramMetadataLocation]; l != baseLoc {
		return 0, nil, commitFailed("Cannot commit to view %s: base metadata location '%s' is not the current '%s' (another writer committed first)", full, baseLoc, l)
	}
	removed := removedProps(base.Properties, next.Properties)
	if e := updateViewRecord(cur, next, newLoc, baseLoc, removed); e != nil {
		return 0, nil, e
	}
	c, e := rc.client()
	if e != nil {
		return 0, nil, e
	}
	if err := c.AlterTableWithEnvironmentContext(rc.ctx, ref.Ext, name, cur, casContext(baseLoc)); err != nil {
		return 0, nil, metastoreError(err, "view "+full, noSuchView(ref.Name, name))
	}
	published = true
	return http.StatusOK, loadViewResult{MetadataLocation: newLoc, Metadata: next, Config: map[string]string{}}, nil
}

func (h *Handler) dropView(rc *requestCtx) (int, any, *Error) {
	ref, name, e := rc.object("view")
	if e != nil {
		return 0, nil, e
	}
	if e := rc.forWrite(ref); e != nil {
		return 0, nil, e
	}
	if _, e := rc.icebergView(ref, name); e != nil {
		return 0, nil, e
	}
	c, e := rc.client()
	if e != nil {
		return 0, nil, e
	}
	if err := c.DropTable(rc.ctx, ref.Ext, name, false); err != nil {
		return 0, nil, metastoreError(err, "view "+ref.Name+"."+name, noSuchView(ref.Name, name))
	}
	return http.StatusNoContent, nil, nil
}

func (h *Handler) renameView(rc *requestCtx) (int, any, *Error) { return rc.renameObject(true) }
