package restcatalog

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hms-proxy/hms-proxy/restcatalog/icemeta"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// tableChange is one table of a commit: what the client asked, what the
// catalog holds, and what the commit will publish.
type tableChange struct {
	ref     nsRef
	name    string
	reqs    []icemeta.Requirement
	updates []icemeta.Update

	create     bool // no record yet: create_table instead of alter_table
	registered bool // nextLoc is an existing file (register): nothing to write
	noop       bool // no updates: nothing to publish

	rec     *thriftgen.Table // the record the commit replaces
	base    *icemeta.Table
	baseLoc string

	next    *icemeta.Table
	nextLoc string
	codec   string

	written bool // nextLoc was written by this commit
	applied bool // the metastore record points at nextLoc
	unknown bool // the metastore call's outcome could not be read back: keep nextLoc
	old     *thriftgen.Table
}

func (ch *tableChange) fullName() string { return ch.ref.Name + "." + ch.name }

func hasAssertCreate(reqs []icemeta.Requirement) bool { return icemeta.IsAssertCreate(reqs) }

// prepare loads the table, checks the requirements and applies the updates;
// nothing is written.
func (rc *requestCtx) prepare(ch *tableChange) *Error {
	rec, e := rc.lookupTable(ch.ref, ch.name)
	if e != nil {
		return e
	}
	switch {
	case rec == nil && !hasAssertCreate(ch.reqs):
		return noSuchTable(ch.ref.Name, ch.name)
	case rec == nil:
		// A table of a missing namespace cannot be created.
		if _, e := rc.getDatabase(ch.ref); e != nil {
			return e
		}
		ch.create = true
	case !isIcebergTable(rec) || isIcebergView(rec):
		if hasAssertCreate(ch.reqs) {
			return existsError("Table", kindOf(rec), ch.ref.Name, ch.name)
		}
		nf := noSuchTable(ch.ref.Name, ch.name)
		nf.Message += " (not an Iceberg table)"
		return nf
	default:
		ch.rec, ch.baseLoc = rec, rec.Parameters[paramMetadataLocation]
		if ch.base, e = rc.h.readTableMetadata(rc.at(ch.ref.Catalog), ch.baseLoc); e != nil {
			return e
		}
	}
	for _, r := range ch.reqs {
		if err := r.CheckTable(ch.base); err != nil {
			return requirementError("table "+ch.fullName(), err)
		}
	}
	if !ch.create && len(ch.updates) == 0 {
		ch.next, ch.nextLoc, ch.noop = ch.base, ch.baseLoc, true
		return nil
	}
	next, err := icemeta.ApplyTable(ch.base, ch.baseLoc, ch.updates, time.Now())
	if err != nil {
		if ch.create {
			return badRequest("cannot apply the updates to new table %s: %v", ch.fullName(), err)
		}
		return badRequest("cannot apply the updates to table %s: %v", ch.fullName(), err)
	}
	ch.next = next
	if ch.create && ch.next.Location == "" {
		loc, e := rc.defaultLocation(ch.ref, ch.name)
		if e != nil {
			return e
		}
		ch.next.Location = loc
	}
	return checkLocation("table location", ch.next.Location)
}

// publish makes the prepared changes the tables' current metadata: new
// metadata files, then under each table's metastore lock a re-read (the base
// must still be current) and the swap of metadata_location. Every change is
// checked before the first record changes; if a later record fails, the
// earlier ones are put back (best effort, reported when it fails).
func (rc *requestCtx) publish(chs []*tableChange) *Error {
	h := rc.h
	// Clean-up runs on a context of its own: the request's may be done.
	cleanup := func() {
		for _, ch := range chs {
			if ch.written && !ch.applied && !ch.unknown {
				h.removeFile(rc.at(ch.ref.Catalog), ch.nextLoc)
			}
		}
	}
	for _, ch := range chs {
		if ch.noop || ch.registered {
			continue
		}
		loc, codec, e := newTableMetadataLocation(ch.next, ch.baseLoc)
		if e != nil {
			cleanup()
			return e
		}
		ch.nextLoc, ch.codec = loc, codec
		if e := h.writeFile(rc.at(ch.ref.Catalog), loc, ch.next, codec); e != nil {
			cleanup()
			return e
		}
		ch.written = true
	}

	// Locks in a fixed order, so two transactions over the same tables
	// cannot deadlock.
	order := slices.Clone(chs)
	slices.SortFunc(order, func(a, b *tableChange) int {
		return cmp.Or(strings.Compare(a.ref.Ext, b.ref.Ext), strings.Compare(a.name, b.name))
	})
	var unlocks []func()
	defer func() {
		for i := len(unlocks) - 1; i >= 0; i-- {
			unlocks[i]()
		}
	}()
	for _, ch := range order {
		if ch.noop {
			continue
		}
		release, err := h.queues.acquire(rc.ctx, ch.ref.Catalog, ch.ref.Ext, ch.name)
		if err != nil {
			cleanup()
			return commitFailed("gave up waiting for the previous commit of table %s through this proxy: %v", ch.fullName(), err)
		}
		unlocks = append(unlocks, release)
		if ch.create {
			continue
		}
		props := ch.next.Properties
		if !h.lockEnabled(ch.ref.Catalog, props) {
			continue
		}
		release, e := rc.lock(ch.ref, ch.name)
		if e != nil {
			cleanup()
			return e
		}
		unlocks = append(unlocks, release)
	}

	// Re-read under the locks: the base must still be current.
	for _, ch := range chs {
		if ch.noop || ch.create {
			continue
		}
		rec, e := rc.lookupTable(ch.ref, ch.name)
		if e != nil {
			cleanup()
			return e
		}
		if rec == nil {
			cleanup()
			return noSuchTable(ch.ref.Name, ch.name)
		}
		if cur := rec.Parameters[paramMetadataLocation]; cur != ch.baseLoc {
			cleanup()
			return commitFailed("Cannot commit to %s: base metadata location '%s' is not the current metadata location '%s' (another writer committed first)",
				ch.fullName(), ch.baseLoc, cur)
		}
		ch.rec = rec
	}

	c, e := rc.client()
	if e != nil {
		cleanup()
		return e
	}
	for _, ch := range chs {
		if ch.noop {
			continue
		}
		if e := rc.persist(c, ch); e != nil {
			failed := rc.rollback(c, chs)
			cleanup()
			if len(failed) > 0 {
				return errorf(http.StatusInternalServerError, typeCommitUnknown,
					"commit of %s failed (%s) and tables already committed could not be put back: %s", ch.fullName(), e.Message, strings.Join(failed, ", "))
			}
			return e
		}
	}
	return nil
}

// persist writes one change's record. When the call fails, the record is
// read back: the change may have reached the metastore anyway.
func (rc *requestCtx) persist(c *thriftgen.Client, ch *tableChange) *Error {
	h := rc.h
	hive := h.hiveEngine(ch.ref.Catalog, ch.next.Properties)
	var err error
	if ch.create {
		owner := ch.next.Properties[propOwnerOfTable]
		if owner == "" {
			owner = lockUser(rc.caller)
		}
		rec := newHMSRecord(ch.ref.Ext, ch.name, owner, tableTypeExternal)
		if e := updateTableRecord(rec, ch.next, ch.nextLoc, "", nil, hive); e != nil {
			return e
		}
		if err = c.CreateTable(rc.ctx, rec); err == nil {
			ch.applied = true
			return nil
		}
	} else {
		old := *ch.rec
		old.Parameters = maps.Clone(ch.rec.Parameters)
		ch.old = &old
		rec := ch.rec
		var removed []string
		if ch.base != nil {
			removed = removedProps(ch.base.Properties, ch.next.Properties)
		}
		if e := updateTableRecord(rec, ch.next, ch.nextLoc, ch.baseLoc, removed, hive); e != nil {
			return e
		}
		if err = c.AlterTableWithEnvironmentContext(rc.ctx, ch.ref.Ext, ch.name, rec, casContext(ch.baseLoc)); err == nil {
			ch.applied = true
			return nil
		}
	}
	me := metastoreError(err, "table "+ch.fullName(), noSuchTable(ch.ref.Name, ch.name))
	if me.Code == http.StatusConflict && ch.create {
		return alreadyExists("Table already exists: %s", ch.fullName())
	}
	// Did it land anyway (a failure after the metastore committed)?
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rc.ctx), 30*time.Second)
	defer cancel()
	if t, err2 := c.GetTable(ctx, ch.ref.Ext, ch.name); err2 == nil && t.Parameters[paramMetadataLocation] == ch.nextLoc {
		ch.applied = true
		return nil
	} else if err2 != nil && !isNoSuchObject(err2) && me.Code >= 500 {
		ch.unknown = true
		return errorf(http.StatusInternalServerError, typeCommitUnknown,
			"commit of %s: the metastore call failed (%s) and its outcome cannot be read back (%s)", ch.fullName(), me.Message, exceptionText(err2))
	}
	return me
}

// rollback puts back the records a failed multi-table commit already
// changed; it returns the tables it could not restore.
func (rc *requestCtx) rollback(c *thriftgen.Client, chs []*tableChange) []string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rc.ctx), 30*time.Second)
	defer cancel()
	var failed []string
	for _, ch := range chs {
		if !ch.applied || ch.noop {
			continue
		}
		var err error
		if ch.create {
			err = c.DropTable(ctx, ch.ref.Ext, ch.name, false)
		} else {
			err = c.AlterTableWithEnvironmentContext(ctx, ch.ref.Ext, ch.name, ch.old, casContext(ch.nextLoc))
		}
		if err != nil {
			rc.h.log.Error("cannot put back a table of a failed multi-table commit", "table", ch.fullName(), "catalog", ch.ref.Catalog, "err", exceptionText(err))
			failed = append(failed, ch.fullName())
			continue
		}
		ch.applied = false
	}
	return failed
}

type transactionRequest struct {
	TableChanges []commitTableRequest `json:"table-changes"`
}

// commitTransaction serves POST /v1/{prefix}/transactions/commit: every
// change is resolved, gated, checked and applied in memory first; only then
// are files written and records swapped (see publish).
func (h *Handler) commitTransaction(rc *requestCtx) (int, any, *Error) {
	var req transactionRequest
	if e := rc.decodeBody(&req); e != nil {
		return 0, nil, e
	}
	if len(req.TableChanges) == 0 {
		return 0, nil, badRequest("field \"table-changes\" is required and must not be empty")
	}
	seen := map[string]bool{}
	var chs []*tableChange
	catalogs := map[string]bool{}
	for i, tc := range req.TableChanges {
		if tc.Identifier == nil {
			return 0, nil, badRequest("table-changes[%d]: field \"identifier\" is required", i)
		}
		ref, e := rc.namespaceLevels(tc.Identifier.Namespace)
		if e != nil {
			return 0, nil, e
		}
		if e := checkName("table", tc.Identifier.Name); e != nil {
			return 0, nil, e
		}
		key := strings.ToLower(ref.Ext + "." + tc.Identifier.Name)
		if seen[key] {
			return 0, nil, badRequest("table-changes names table %s.%s twice", ref.Name, tc.Identifier.Name)
		}
		seen[key] = true
		if e := rc.forWrite(ref); e != nil {
			return 0, nil, e
		}
		catalogs[ref.Catalog] = true
		chs = append(chs, &tableChange{ref: ref, name: tc.Identifier.Name, reqs: tc.Requirements, updates: tc.Updates})
	}
	if len(catalogs) == 1 {
		rc.catalog = chs[0].ref.Catalog
	} else {
		rc.catalog = strings.Join(slices.Sorted(maps.Keys(catalogs)), ",")
	}
	for _, ch := range chs {
		if e := rc.prepare(ch); e != nil {
			return 0, nil, e
		}
	}
	if e := rc.publish(chs); e != nil {
		return 0, nil, e
	}
	return http.StatusNoContent, nil, nil
}

// requirementError turns an unmet requirement into 409 CommitFailed and a
// malformed one into 400.
func requirementError(what string, err error) *Error {
	var re *icemeta.RequirementError
	if errors.As(err, &re) {
		return commitFailed("%v (%s)", err, what)
	}
	return badRequest("%s: %v", what, err)
}
