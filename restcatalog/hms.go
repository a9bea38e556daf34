package restcatalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hms-proxy/hms-proxy/restcatalog/icemeta"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// HMS table parameters and values Iceberg's HiveCatalog uses.
const (
	paramTableType        = "table_type"
	paramMetadataLocation = "metadata_location"
	paramPrevious         = "previous_metadata_location"
	paramStorageHandler   = "storage_handler"
	paramExternal         = "EXTERNAL"
	paramPurge            = "external.table.purge"
	typeIceberg           = "ICEBERG"
	typeIcebergView       = "ICEBERG-VIEW"
	tableTypeExternal     = "EXTERNAL_TABLE"
	tableTypeView         = "VIRTUAL_VIEW"

	icebergStorageHandler = "org.apache.iceberg.mr.hive.HiveIcebergStorageHandler"
	icebergInputFormat    = "org.apache.iceberg.mr.hive.HiveIcebergInputFormat"
	icebergOutputFormat   = "org.apache.iceberg.mr.hive.HiveIcebergOutputFormat"
	icebergSerDe          = "org.apache.iceberg.mr.hive.HiveIcebergSerDe"
	plainInputFormat      = "org.apache.hadoop.mapred.FileInputFormat"
	plainOutputFormat     = "org.apache.hadoop.mapred.FileOutputFormat"
	plainSerDe            = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"

	// Table properties and catalog settings that steer the HMS record.
	propHiveEnabled     = "engine.hive.enabled"
	confHiveEnabled     = "iceberg.engine.hive.enabled"
	propLockEnabled     = "engine.hive.lock-enabled"
	confLockEnabled     = "iceberg.engine.hive.lock-enabled"
	propGCEnabled       = "gc.enabled"
	propOwnerOfTable    = "owner"
	maxHMSPropertyBytes = 32672

	// Hive's statistics markers.
	statsAccurate    = "COLUMN_STATS_ACCURATE"
	statsDoNotUpdate = "DO_NOT_UPDATE_STATS"
)

func isIcebergTable(t *thriftgen.Table) bool {
	return strings.EqualFold(t.Parameters[paramTableType], typeIceberg)
}

func isIcebergView(t *thriftgen.Table) bool {
	return strings.EqualFold(t.TableType, tableTypeView) && strings.EqualFold(t.Parameters[paramTableType], typeIcebergView)
}

// parseBool reads a boolean setting as Java's Boolean.parseBoolean does for
// table properties ("true" in any case is true, anything else false).
func parseBool(s string) bool { return strings.EqualFold(strings.TrimSpace(s), "true") }

// hiveEngine decides the storage descriptor of a commit: the table's
// engine.hive.enabled wins, then catalog.<c>.conf.iceberg.engine.hive.enabled,
// then rest-catalog.hive-engine-descriptor.
func (h *Handler) hiveEngine(catalog string, props map[string]string) bool {
	if v, ok := props[propHiveEnabled]; ok {
		return parseBool(v)
	}
	if v, ok := h.catalogConf(catalog, confHiveEnabled); ok {
		return parseBool(v)
	}
	return h.opts.HiveEngineDescriptor
}

// lockEnabled decides whether a commit takes the table's metastore lock: the
// table's engine.hive.lock-enabled, then the catalog's
// iceberg.engine.hive.lock-enabled, default true. Without the lock the commit
// relies on Hive 4's compare-and-swap of metadata_location in alter_table, so
// on a catalog whose metastore has none (Hive 3) the table's false is not
// honoured: the commit locks (configs refuses the catalog's false there).
func (h *Handler) lockEnabled(catalog string, props map[string]string) bool {
	cas := h.opts.CompareAndSwap != nil && h.opts.CompareAndSwap(catalog)
	if v, ok := props[propLockEnabled]; ok {
		return parseBool(v) || !cas
	}
	if v, ok := h.catalogConf(catalog, confLockEnabled); ok {
		return parseBool(v) || !cas
	}
	return true
}

// hiveType is the Hive column type of an Iceberg type (as decoded from the
// schema's JSON: a string for a primitive, an object for struct, list and
// map), as Iceberg's HiveSchemaUtil converts it.
func hiveType(t any) (string, error) {
	switch t := t.(type) {
	case string:
		switch t {
		case "boolean":
			return "boolean", nil
		case "int":
			return "int", nil
		case "long":
			return "bigint", nil
		case "float":
			return "float", nil
		case "double":
			return "double", nil
		case "date":
			return "date", nil
		case "time", "string", "uuid":
			return "string", nil
		case "timestamp", "timestamp_ns":
			return "timestamp", nil
		case "timestamptz", "timestamptz_ns":
			return "timestamp with local time zone", nil
		case "binary":
			return "binary", nil
		case "variant", "unknown":
			return "unknown", nil
		}
		var n, p, sc int
		if _, err := fmt.Sscanf(t, "fixed[%d]", &n); err == nil && strings.HasSuffix(t, "]") {
			return "binary", nil
		}
		if _, err := fmt.Sscanf(strings.ReplaceAll(t, " ", ""), "decimal(%d,%d)", &p, &sc); err == nil && strings.HasSuffix(t, ")") {
			return fmt.Sprintf("decimal(%d,%d)", p, sc), nil
		}
	case map[string]any:
		switch t["type"] {
		case "struct":
			fields, _ := t["fields"].([]any)
			parts := make([]string, 0, len(fields))
			for _, f := range fields {
				m, _ := f.(map[string]any)
				name, _ := m["name"].(string)
				ft, err := hiveType(m["type"])
				if err != nil {
					return "", err
				}
				parts = append(parts, name+":"+ft)
			}
			return "struct<" + strings.Join(parts, ",") + ">", nil
		case "list":
			et, err := hiveType(t["element"])
			if err != nil {
				return "", err
			}
			return "array<" + et + ">", nil
		case "map":
			kt, err := hiveType(t["key"])
			if err != nil {
				return "", err
			}
			vt, err := hiveType(t["value"])
			if err != nil {
				return "", err
			}
			return "map<" + kt + "," + vt + ">", nil
		}
	}
	return "", fmt.Errorf("the Iceberg type %v has no Hive column type", t)
}

func hiveColumns(s *icemeta.Schema) ([]*thriftgen.FieldSchema, *Error) {
	var cols []*thriftgen.FieldSchema
	if s == nil {
		return nil, internalf("the metadata has no current schema")
	}
	for _, f := range s.Fields {
		t, err := hiveType(f.Type)
		if err != nil {
			return nil, badRequest("column %s: %v", f.Name, err)
		}
		cols = append(cols, &thriftgen.FieldSchema{Name: f.Name, Type: t, Comment: f.Doc})
	}
	return cols, nil
}

// storageDescriptor is the record's sd: columns from the schema, the
// location, and either the Hive-readable Iceberg formats or the abstract
// ones Iceberg writes with the Hive engine off.
func storageDescriptor(s *icemeta.Schema, location string, hiveEngine bool) (*thriftgen.StorageDescriptor, *Error) {
	cols, e := hiveColumns(s)
	if e != nil {
		return nil, e
	}
	sd := &thriftgen.StorageDescriptor{Cols: cols, Location: location, SerdeInfo: &thriftgen.SerDeInfo{Parameters: map[string]string{}},
		Parameters: map[string]string{}, BucketCols: []string{}, SortCols: []*thriftgen.Order{}, NumBuckets: -1}
	if hiveEngine {
		sd.InputFormat, sd.OutputFormat, sd.SerdeInfo.SerializationLib = icebergInputFormat, icebergOutputFormat, icebergSerDe
	} else {
		sd.InputFormat, sd.OutputFormat, sd.SerdeInfo.SerializationLib = plainInputFormat, plainOutputFormat, plainSerDe
	}
	return sd, nil
}

// newHMSRecord is the metastore record of a new Iceberg table or view.
func newHMSRecord(db, name, owner, tableType string) *thriftgen.Table {
	now := int32(time.Now().Unix())
	t := &thriftgen.Table{TableName: name, DbName: db, Owner: owner, CreateTime: now, LastAccessTime: now,
		Retention: math.MaxInt32, PartitionKeys: []*thriftgen.FieldSchema{}, Parameters: map[string]string{}, TableType: tableType}
	if tableType == tableTypeExternal {
		t.Parameters[paramExternal] = "TRUE"
	}
	return t
}

// setField stores a JSON-ish value in a parameter unless it is too large for
// the metastore's column (then the key is dropped, as Iceberg does).
func setField(params map[string]string, key, value string) {
	if len(value) <= maxHMSPropertyBytes {
		params[key] = value
	} else {
		delete(params, key)
	}
}

// updateTableRecord writes the Iceberg state of a commit into the record's
// parameters and storage descriptor, as HiveTableOperations does.
func updateTableRecord(tbl *thriftgen.Table, m *icemeta.Table, newLoc, prevLoc string, removed []string, hiveEngine bool) *Error {
	if tbl.Parameters == nil {
		tbl.Parameters = map[string]string{}
	}
	p := tbl.Parameters
	for _, k := range removed {
		if k == propGCEnabled {
			k = paramPurge
		}
		delete(p, k)
	}
	for k, v := range m.Properties {
		if strings.EqualFold(k, propOwnerOfTable) {
			continue
		}
		if k == propGCEnabled {
			k = paramPurge
		}
		p[k] = v
	}
	p["uuid"] = m.UUID
	p[paramTableType] = typeIceberg
	p[paramMetadataLocation] = newLoc
	if prevLoc != "" {
		p[paramPrevious] = prevLoc
	} else {
		delete(p, paramPrevious)
	}
	delete(p, "current-schema")
	if b, err := json.Marshal(m.CurrentSchema()); err == nil {
		setField(p, "current-schema", string(b))
	}
	if hiveEngine {
		p[paramStorageHandler] = icebergStorageHandler
	} else {
		delete(p, paramStorageHandler)
	}
	for _, k := range []string{"current-snapshot-id", "current-snapshot-timestamp-ms", "current-snapshot-summary", "default-partition-spec", "default-sort-order"} {
		delete(p, k)
	}
	if s := m.CurrentSnapshot(); s != nil {
		p["current-snapshot-id"] = strconv.FormatInt(s.ID, 10)
		p["current-snapshot-timestamp-ms"] = strconv.FormatInt(s.TimestampMs, 10)
		if s.Summary != nil {
			if b, err := json.Marshal(s.Summary); err == nil {
				setField(p, "current-snapshot-summary", string(b))
			}
			for from, to := range map[string]string{"total-data-files": "numFiles", "total-records": "numRows", "total-files-size": "totalSize"} {
				if v, ok := s.Summary[from]; ok {
					p[to] = v
				}
			}
		}
	}
	p["snapshot-count"] = strconv.Itoa(len(m.Snapshots))
	if spec := m.DefaultSpec(); spec != nil && len(spec.Fields) > 0 {
		setField(p, "default-partition-spec", string(spec.Obj()))
	}
	if so := m.DefaultSortOrder(); so != nil && so.NFields > 0 {
		setField(p, "default-sort-order", string(so.Obj()))
	}
	delete(p, statsAccurate)
	p[statsDoNotUpdate] = "true"
	sd, e := storageDescriptor(m.CurrentSchema(), m.Location, hiveEngine)
	if e != nil {
		return e
	}
	tbl.Sd = sd
	return nil
}

// updateViewRecord writes the Iceberg state of a view commit into its record.
func updateViewRecord(tbl *thriftgen.Table, m *icemeta.View, newLoc, prevLoc string, removed []string) *Error {
	if tbl.Parameters == nil {
		tbl.Parameters = map[string]string{}
	}
	p := tbl.Parameters
	for _, k := range removed {
		delete(p, k)
	}
	for k, v := range m.Properties {
		if !strings.EqualFold(k, propOwnerOfTable) {
			p[k] = v
		}
	}
	p["uuid"] = m.UUID
	p[paramTableType] = typeIcebergView
	p[paramMetadataLocation] = newLoc
	if prevLoc != "" {
		p[paramPrevious] = prevLoc
	}
	if b, err := json.Marshal(m.CurrentSchema()); err == nil {
		setField(p, "current-schema", string(b))
	}
	if sql, ok := viewSQL(m); ok {
		tbl.ViewOriginalText, tbl.ViewExpandedText = sql, sql
	}
	sd, e := storageDescriptor(m.CurrentSchema(), m.Location, false)
	if e != nil {
		return e
	}
	tbl.Sd = sd
	return nil
}

// viewSQL picks the SQL Hive shows for a view: the "hive" dialect, else the
// first SQL representation.
func viewSQL(m *icemeta.View) (string, bool) {
	v := m.CurrentVersion()
	if v == nil {
		return "", false
	}
	var first *icemeta.Representation
	for i := range v.Representations {
		r := &v.Representations[i]
		if strings.EqualFold(r.Dialect, "hive") {
			return r.SQL, true
		}
		if first == nil {
			first = r
		}
	}
	if first == nil {
		return "", false
	}
	return first.SQL, true
}

// removedProps lists the keys of before that after no longer has.
func removedProps(before, after map[string]string) []string {
	var out []string
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// lock takes an EXCLUSIVE table lock through the router, waiting (with
// Iceberg's backoff) until it is granted or LockTimeout passes. The answer
// releases it.
func (rc *requestCtx) lock(ref nsRef, tbl string) (func(), *Error) {
	c, e := rc.client()
	if e != nil {
		return nil, e
	}
	h := rc.h
	name := ref.Name + "." + tbl
	tname := tbl
	agent := "hms-proxy-rest"
	req := &thriftgen.LockRequest{
		Component: []*thriftgen.LockComponent{{Type: thriftgen.LockType_EXCLUSIVE, Level: thriftgen.LockLevel_TABLE, Dbname: ref.Ext, Tablename: &tname}},
		User:      lockUser(rc.caller), Hostname: h.opts.Hostname, AgentInfo: &agent,
	}
	resp, err := c.Lock(rc.ctx, req)
	if err != nil {
		return nil, metastoreError(err, "the lock of table "+name, nil)
	}
	id := resp.Lockid
	release := func() {
		// The request's context may be done (timeout, client gone): the
		// lock is released regardless.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(rc.ctx), 30*time.Second)
		defer cancel()
		if err := c.Unlock(ctx, &thriftgen.UnlockRequest{Lockid: id}); err != nil {
			h.log.Warn("cannot release the metastore lock of a REST commit; it expires with the metastore's txn timeout",
				"table", name, "catalog", ref.Catalog, "lockid", id, "err", exceptionText(err))
		}
	}
	deadline := time.Now().Add(h.opts.LockTimeout)
	wait := h.opts.LockCheckMinWait
	for resp.State == thriftgen.LockState_WAITING {
		if time.Now().After(deadline) {
			release()
			return nil, commitFailed("timed out after %s waiting for the metastore lock of table %s (lock %d)", h.opts.LockTimeout, name, id)
		}
		select {
		case <-rc.ctx.Done():
			release()
			return nil, commitFailed("gave up waiting for the metastore lock of table %s: %v", name, rc.ctx.Err())
		case <-time.After(wait):
		}
		wait = min(time.Duration(float64(wait)*1.5), h.opts.LockCheckMaxWait)
		if resp, err = c.CheckLock(rc.ctx, &thriftgen.CheckLockRequest{Lockid: id}); err != nil {
			release()
			var nsl *thriftgen.NoSuchLockException
			if errors.As(err, &nsl) {
				// Not a conflict: the metastore that answered does not know
				// the lock it granted (lock ids of a non-default catalog
				// routed elsewhere). Retrying cannot help.
				return nil, errorf(http.StatusServiceUnavailable, typeUnavailable,
					"the metastore does not know lock %d of table %s (catalog %s) it granted: %s", id, name, ref.Catalog, nsl.Message)
			}
			return nil, metastoreError(err, "the lock of table "+name, nil)
		}
	}
	if resp.State != thriftgen.LockState_ACQUIRED {
		release()
		return nil, commitFailed("the metastore did not grant the lock of table %s: state %s", name, resp.State)
	}
	return release, nil
}

func lockUser(c Caller) string {
	if c.User != "" {
		return c.User
	}
	return "hms-proxy-rest"
}

// casContext asks Hive 4 metastores to swap metadata_location only if it
// still holds base (Hive 3 metastores ignore it; the lock protects them).
func casContext(base string) *thriftgen.EnvironmentContext {
	return &thriftgen.EnvironmentContext{Properties: map[string]string{
		"expected_parameter_key":   paramMetadataLocation,
		"expected_parameter_value": base,
	}}
}

// getTable reads a metastore record; a missing table answers notFound,
// also when its namespace is missing: Iceberg's reference catalog answers a
// table (or view) of a missing namespace with NoSuchTableException
// (NoSuchViewException), and the Java client falls back to a metadata table
// (ns.tbl.snapshots) only on that type.
func (rc *requestCtx) getTable(ref nsRef, name string, notFound *Error) (*thriftgen.Table, *Error) {
	c, e := rc.client()
	if e != nil {
		return nil, e
	}
	t, err := c.GetTable(rc.ctx, ref.Ext, name)
	if err != nil {
		if isNoSuchObject(err) {
			return nil, notFound
		}
		return nil, metastoreError(err, "table "+ref.Name+"."+name, notFound)
	}
	return t, nil
}

// lookupTable reads a record that may be missing: (nil, nil) when the table
// does not exist (callers that create check the namespace themselves).
func (rc *requestCtx) lookupTable(ref nsRef, name string) (*thriftgen.Table, *Error) {
	missing := noSuchTable(ref.Name, name)
	t, e := rc.getTable(ref, name, missing)
	if e == missing {
		return nil, nil
	}
	return t, e
}

// kindOf names what a metastore record is to an Iceberg client: "View" for
// an Iceberg or Hive view, "Table" otherwise.
func kindOf(t *thriftgen.Table) string {
	if isIcebergView(t) || strings.EqualFold(t.TableType, tableTypeView) {
		return "View"
	}
	return "Table"
}

func internalf(format string, args ...any) *Error {
	return errorf(http.StatusInternalServerError, typeInternal, format, args...)
}
