package icemeta

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// View properties this package acts on.
const (
	PropViewHistorySize    = "version.history.num-entries"
	defaultViewHistorySize = 10
	PropReplaceDropDialect = "replace.drop-dialect.allowed"
	maxViewFormatVersion   = 1
	viewLastAdded          = -1
)

// View is a view metadata file.
type View struct {
	rest object

	FormatVersion    int
	UUID             string
	Location         string
	Schemas          []*Schema
	CurrentVersionID int64
	Versions         []*ViewVersion
	VersionLog       []viewLogEntry
	Properties       map[string]string
}

// ViewVersion is one version of a view.
type ViewVersion struct {
	obj             object
	ID              int64
	SchemaID        int
	TimestampMs     int64
	Representations []Representation
}

// Representation is one representation of a view version.
type Representation struct {
	Type    string `json:"type"`
	SQL     string `json:"sql"`
	Dialect string `json:"dialect"`
}

type viewLogEntry struct {
	TimestampMs int64 `json:"timestamp-ms"`
	VersionID   int64 `json:"version-id"`
}

// ParseView reads a view metadata file.
func ParseView(b []byte) (*View, error) {
	o, err := parseObject(b)
	if err != nil {
		return nil, fmt.Errorf("view metadata: %v", err)
	}
	v := &View{rest: o}
	if ok, err := o.get("format-version", &v.FormatVersion); err != nil || !ok {
		return nil, fmt.Errorf("view metadata: field \"format-version\" is required (%v)", err)
	}
	if v.FormatVersion < 1 || v.FormatVersion > maxViewFormatVersion {
		return nil, fmt.Errorf("view metadata: format-version %d is not supported", v.FormatVersion)
	}
	for key, dst := range map[string]any{"view-uuid": &v.UUID, "location": &v.Location, "current-version-id": &v.CurrentVersionID,
		"version-log": &v.VersionLog, "properties": &v.Properties} {
		if _, err := o.get(key, dst); err != nil {
			return nil, fmt.Errorf("view metadata: %v", err)
		}
	}
	if v.Properties == nil {
		v.Properties = map[string]string{}
	}
	var raws []json.RawMessage
	if _, err := o.get("schemas", &raws); err != nil {
		return nil, fmt.Errorf("view metadata: %v", err)
	}
	for _, r := range raws {
		s, err := parseSchema(r)
		if err != nil {
			return nil, fmt.Errorf("view metadata: %v", err)
		}
		v.Schemas = append(v.Schemas, s)
	}
	raws = nil
	if _, err := o.get("versions", &raws); err != nil {
		return nil, fmt.Errorf("view metadata: %v", err)
	}
	for _, r := range raws {
		ver, err := parseViewVersion(r)
		if err != nil {
			return nil, fmt.Errorf("view metadata: %v", err)
		}
		v.Versions = append(v.Versions, ver)
	}
	if v.CurrentVersion() == nil {
		return nil, fmt.Errorf("view metadata: current-version-id %d is not a version of the view", v.CurrentVersionID)
	}
	return v, nil
}

func parseViewVersion(raw json.RawMessage) (*ViewVersion, error) {
	o, err := parseObject(raw)
	if err != nil {
		return nil, fmt.Errorf("view version: %v", err)
	}
	ver := &ViewVersion{obj: o}
	if ok, err := o.get("version-id", &ver.ID); err != nil || !ok {
		return nil, fmt.Errorf("view version: field \"version-id\" is required (%v)", err)
	}
	if ok, err := o.get("schema-id", &ver.SchemaID); err != nil || !ok {
		return nil, fmt.Errorf("view version %d: field \"schema-id\" is required (%v)", ver.ID, err)
	}
	if _, err := o.get("timestamp-ms", &ver.TimestampMs); err != nil {
		return nil, fmt.Errorf("view version %d: %v", ver.ID, err)
	}
	if _, err := o.get("representations", &ver.Representations); err != nil {
		return nil, fmt.Errorf("view version %d: %v", ver.ID, err)
	}
	return ver, nil
}

// MarshalJSON writes the version object.
func (ver *ViewVersion) MarshalJSON() ([]byte, error) { return json.Marshal(ver.obj) }

func (ver *ViewVersion) set(key string, val any) {
	ver.obj = ver.obj.clone()
	ver.obj.set(key, val)
}

// MarshalJSON writes the view metadata file.
func (v *View) MarshalJSON() ([]byte, error) {
	o := v.rest.clone()
	if o == nil {
		o = object{}
	}
	o.set("view-uuid", v.UUID)
	o.set("format-version", v.FormatVersion)
	o.set("location", v.Location)
	o.set("schemas", v.Schemas)
	o.set("current-version-id", v.CurrentVersionID)
	o.set("versions", v.Versions)
	o.set("version-log", nonNil(v.VersionLog))
	o.set("properties", v.Properties)
	return json.Marshal(o)
}

// CurrentVersion returns the current version, or nil.
func (v *View) CurrentVersion() *ViewVersion { return v.version(v.CurrentVersionID) }

func (v *View) version(id int64) *ViewVersion {
	for _, ver := range v.Versions {
		if ver.ID == id {
			return ver
		}
	}
	return nil
}

// Schema returns the schema with an id, or nil.
func (v *View) Schema(id int) *Schema {
	for _, s := range v.Schemas {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// CurrentSchema returns the schema of the current version, or nil.
func (v *View) CurrentSchema() *Schema {
	if cur := v.CurrentVersion(); cur != nil {
		return v.Schema(cur.SchemaID)
	}
	return nil
}

func (v *View) clone() *View {
	c := *v
	c.rest = v.rest.clone()
	c.Schemas = append([]*Schema(nil), v.Schemas...)
	c.Versions = append([]*ViewVersion(nil), v.Versions...)
	c.VersionLog = append([]viewLogEntry(nil), v.VersionLog...)
	c.Properties = map[string]string{}
	for k, val := range v.Properties {
		c.Properties[k] = val
	}
	return &c
}

// NewView builds the metadata of a view created by a create-view request:
// the schema and version are added as the first ones (the version's schema
// id points at the added schema, its id is 1).
func NewView(schema, version json.RawMessage, location string, props map[string]string, now time.Time) (*View, error) {
	p := map[string]string{}
	for k, val := range props {
		p[k] = val
	}
	fv := 1
	if s, ok := p["format-version"]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n != 1 {
			return nil, fmt.Errorf("property format-version=%q: views have format version 1", s)
		}
		delete(p, "format-version")
		fv = n
	}
	v := &View{rest: object{}, FormatVersion: fv, UUID: uuid.NewString(), Location: location, Properties: p, CurrentVersionID: -1}
	ver, err := parseViewVersion(version)
	if err != nil {
		return nil, fmt.Errorf("field \"view-version\": %v", err)
	}
	ver.set("version-id", 1)
	ver.ID = 1
	b := &viewBuilder{v: v, now: now}
	b.act = "create"
	sid, err := b.addSchema(schema)
	if err != nil {
		return nil, err
	}
	ver.set("schema-id", sid)
	ver.SchemaID = sid
	id, err := b.addVersion(ver)
	if err != nil {
		return nil, err
	}
	if err := b.setCurrent(id); err != nil {
		return nil, err
	}
	if err := b.finish(); err != nil {
		return nil, err
	}
	return v, nil
}

type viewBuilder struct {
	updater
	v             *View
	now           time.Time
	prev          *ViewVersion
	lastSchema    *int
	lastVersion   *int64
	addedVersions map[int64]int64 // id -> timestamp of versions added by this commit
	historyEntry  *viewLogEntry
}

// ApplyView applies a commit's updates to a view and returns the new
// metadata; base is not changed.
func ApplyView(base *View, updates []Update, now time.Time) (*View, error) {
	v := base.clone()
	b := &viewBuilder{v: v, now: now, prev: base.CurrentVersion()}
	for i, u := range updates {
		b.idx, b.act = i, u.Action
		if err := b.apply(u); err != nil {
			return nil, err
		}
	}
	b.idx, b.act = len(updates), "commit"
	if err := b.finish(); err != nil {
		return nil, err
	}
	return v, nil
}

func (b *viewBuilder) apply(u Update) error {
	v := b.v
	switch u.Action {
	case "assign-uuid":
		id, err := b.uuidOf(u)
		if err != nil {
			return err
		}
		if v.UUID != "" && !strings.EqualFold(v.UUID, id) {
			return b.fail("uuid", "cannot change the view UUID %s to %s", v.UUID, id)
		}
		v.UUID = id
	case "upgrade-format-version":
		var n int
		if err := b.need(u, "format-version", &n); err != nil {
			return err
		}
		if n < v.FormatVersion {
			return b.fail("format-version", "cannot downgrade format version %d to %d", v.FormatVersion, n)
		}
		if n > maxViewFormatVersion {
			return b.fail("format-version", "view format version %d is not supported (at most %d)", n, maxViewFormatVersion)
		}
	case "add-schema":
		var raw json.RawMessage
		if err := b.need(u, "schema", &raw); err != nil {
			return err
		}
		if _, err := b.addSchema(raw); err != nil {
			return err
		}
	case "set-location":
		loc, err := b.locationOf(u)
		if err != nil {
			return err
		}
		v.Location = loc
		b.changed = true
	case "set-properties":
		return b.setProperties(u, v.Properties, nil)
	case "remove-properties":
		return b.removeProperties(u, v.Properties, nil)
	case "add-view-version":
		var raw json.RawMessage
		if err := b.need(u, "view-version", &raw); err != nil {
			return err
		}
		ver, err := parseViewVersion(raw)
		if err != nil {
			return b.fail("view-version", "%v", err)
		}
		if _, err := b.addVersion(ver); err != nil {
			return err
		}
	case "set-current-view-version":
		var id int64
		if err := b.need(u, "view-version-id", &id); err != nil {
			return err
		}
		return b.setCurrent(id)
	default:
		return b.fail("action", "unknown view update action %q", u.Action)
	}
	return nil
}

func (b *viewBuilder) addSchema(raw json.RawMessage) (int, error) {
	v := b.v
	s, err := parseSchema(raw)
	if err != nil {
		return 0, b.fail("schema", "%v", err)
	}
	id, _ := b.addSchemaTo(&v.Schemas, s, 0)
	b.lastSchema = &id
	return id, nil
}

func (b *viewBuilder) addVersion(ver *ViewVersion) (int64, error) {
	v := b.v
	if ver.SchemaID == viewLastAdded {
		if b.lastSchema == nil {
			return 0, b.fail("view-version", "schema-id -1 (the last added schema) but this commit added no schema")
		}
		ver.set("schema-id", *b.lastSchema)
		ver.SchemaID = *b.lastSchema
	}
	id := ver.ID
	for _, old := range v.Versions {
		if equalWithout(old.obj, ver.obj, "version-id", "timestamp-ms") {
			b.lastVersion = &old.ID
			return old.ID, nil
		}
		id = max(id, old.ID+1)
	}
	if v.Schema(ver.SchemaID) == nil {
		return 0, b.fail("view-version", "schema %d does not exist", ver.SchemaID)
	}
	if len(ver.Representations) == 0 {
		return 0, b.fail("view-version", "a version needs at least one representation")
	}
	dialects := map[string]bool{}
	for _, r := range ver.Representations {
		if r.Type != "sql" {
			return 0, b.fail("view-version", "representation type %q is not supported (sql)", r.Type)
		}
		if r.SQL == "" || r.Dialect == "" {
			return 0, b.fail("view-version", "a sql representation needs sql and dialect")
		}
		d := strings.ToLower(r.Dialect)
		if dialects[d] {
			return 0, &ArgumentError{Msg: "Invalid view version: Cannot add multiple queries for dialect " + d}
		}
		dialects[d] = true
	}
	if id != ver.ID {
		ver.set("version-id", id)
		ver.ID = id
	}
	if ver.TimestampMs == 0 {
		ver.TimestampMs = b.now.UnixMilli()
		ver.set("timestamp-ms", ver.TimestampMs)
	}
	v.Versions = append(v.Versions, ver)
	if b.addedVersions == nil {
		b.addedVersions = map[int64]int64{}
	}
	b.addedVersions[id] = ver.TimestampMs
	b.lastVersion = &id
	b.changed = true
	return id, nil
}

func (b *viewBuilder) setCurrent(id int64) error {
	v := b.v
	if id == viewLastAdded {
		if b.lastVersion == nil {
			return b.fail("view-version-id", "-1 (the last added version) but this commit added no version")
		}
		id = *b.lastVersion
	}
	if v.version(id) == nil {
		return b.fail("view-version-id", "version %d does not exist", id)
	}
	if id == v.CurrentVersionID {
		return nil
	}
	v.CurrentVersionID = id
	ts, ok := b.addedVersions[id]
	if !ok {
		ts = b.now.UnixMilli()
	}
	b.historyEntry = &viewLogEntry{TimestampMs: ts, VersionID: id}
	b.changed = true
	return nil
}

func (b *viewBuilder) finish() error {
	v := b.v
	if v.UUID == "" {
		v.UUID = uuid.NewString()
	}
	if b.historyEntry != nil {
		v.VersionLog = append(v.VersionLog, *b.historyEntry)
	}
	cur := v.CurrentVersion()
	if cur == nil {
		return b.fail("current-version-id", "the view has no current version")
	}
	if b.prev != nil && !strings.EqualFold(v.Properties[PropReplaceDropDialect], "true") {
		have := map[string]bool{}
		for _, r := range cur.Representations {
			have[strings.ToLower(r.Dialect)] = true
		}
		for _, r := range b.prev.Representations {
			if !have[strings.ToLower(r.Dialect)] {
				return b.fail("view-version", "the new version drops dialect %q (%s is not true)", r.Dialect, PropReplaceDropDialect)
			}
		}
	}
	keep := defaultViewHistorySize
	if s, ok := v.Properties[PropViewHistorySize]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return b.fail("properties", "%s=%q must be a positive integer", PropViewHistorySize, s)
		}
		keep = n
	}
	keep = max(keep, len(b.addedVersions)+1)
	if len(v.Versions) > keep {
		ids := make([]int64, 0, len(v.Versions))
		for _, ver := range v.Versions {
			if ver.ID != cur.ID {
				ids = append(ids, ver.ID)
			}
		}
		slices.Sort(ids)
		slices.Reverse(ids)
		retain := map[int64]bool{cur.ID: true}
		for _, id := range ids[:keep-1] {
			retain[id] = true
		}
		v.Versions = slices.DeleteFunc(v.Versions, func(ver *ViewVersion) bool { return !retain[ver.ID] })
		var log []viewLogEntry
		for _, e := range v.VersionLog {
			if retain[e.VersionID] {
				log = append(log, e)
			} else {
				log = log[:0]
			}
		}
		v.VersionLog = log
	}
	return nil
}

// NewMetadataLocation names a view's next metadata file:
// <write.metadata.path or location/metadata>/<%05d version>-<uuid>.metadata.json.
func (v *View) NewMetadataLocation(version int) string {
	dir := strings.TrimSuffix(v.Location, "/") + "/metadata"
	if p := v.Properties[PropMetadataPath]; p != "" {
		dir = strings.TrimSuffix(p, "/")
	}
	return fmt.Sprintf("%s/%05d-%s.metadata.json", dir, max(version, 0), uuid.NewString())
}
