package icemeta

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Table properties this package acts on.
const (
	PropCompressionCodec      = "write.metadata.compression-codec"
	PropMetadataPath          = "write.metadata.path"
	PropPreviousVersionsMax   = "write.metadata.previous-versions-max"
	defaultPreviousVersions   = 100
	initialPartitionFieldID   = 1000
	mainBranch                = "main"
	maxTableFormatVersion     = 3
	defaultTableFormatVersion = 2
)

// Spec is a partition spec: its object, id and fields.
type Spec struct {
	obj    object
	ID     int
	Fields []SpecField
}

// SpecField is one partition field.
type SpecField struct {
	SourceID  int    `json:"source-id"`
	FieldID   *int   `json:"field-id,omitempty"`
	Name      string `json:"name"`
	Transform string `json:"transform"`
}

// SortOrder is a sort order: its object, id and number of fields.
type SortOrder struct {
	obj     object
	ID      int
	NFields int
}

// Snapshot is a snapshot: its object and the fields the catalog reads.
type Snapshot struct {
	obj            object
	ID             int64
	ParentID       *int64
	SequenceNumber int64
	TimestampMs    int64
	ManifestList   string
	Manifests      []string // format v1 snapshots may list manifests inline
	Summary        map[string]string
	FirstRowID     *int64
	AddedRows      *int64
}

// Ref is a named branch or tag.
type Ref struct {
	obj        object
	SnapshotID int64
	Type       string
}

// Stats is a statistics or partition-statistics file entry.
type Stats struct {
	obj        object
	SnapshotID int64
	Path       string
}

type snapshotLogEntry struct {
	TimestampMs int64 `json:"timestamp-ms"`
	SnapshotID  int64 `json:"snapshot-id"`
}

type metadataLogEntry struct {
	TimestampMs  int64  `json:"timestamp-ms"`
	MetadataFile string `json:"metadata-file"`
}

// Table is a table metadata file.
type Table struct {
	rest object // every member, including those not modelled below

	FormatVersion      int
	UUID               string
	Location           string
	LastSequenceNumber int64
	LastUpdatedMs      int64
	LastColumnID       int
	Schemas            []*Schema
	CurrentSchemaID    int
	Specs              []*Spec
	DefaultSpecID      int
	LastPartitionID    int
	Properties         map[string]string
	CurrentSnapshotID  *int64
	Snapshots          []*Snapshot
	SnapshotLog        []snapshotLogEntry
	MetadataLog        []metadataLogEntry
	SortOrders         []*SortOrder
	DefaultSortOrderID int
	Refs               map[string]*Ref
	Statistics         []*Stats
	PartitionStats     []*Stats
	NextRowID          *int64
	EncryptionKeys     []object
}

// ParseTable reads a table metadata file (format v1, v2 or v3).
func ParseTable(b []byte) (*Table, error) {
	o, err := parseObject(b)
	if err != nil {
		return nil, fmt.Errorf("table metadata: %v", err)
	}
	t := &Table{rest: o}
	if err := t.decode(); err != nil {
		return nil, fmt.Errorf("table metadata: %v", err)
	}
	return t, nil
}

func (t *Table) decode() error {
	o := t.rest
	if ok, err := o.get("format-version", &t.FormatVersion); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("field \"format-version\" is required")
	}
	if t.FormatVersion < 1 || t.FormatVersion > maxTableFormatVersion {
		return fmt.Errorf("format-version %d is not supported (1 to %d)", t.FormatVersion, maxTableFormatVersion)
	}
	for key, dst := range map[string]any{
		"table-uuid": &t.UUID, "location": &t.Location, "last-sequence-number": &t.LastSequenceNumber,
		"last-updated-ms": &t.LastUpdatedMs, "last-column-id": &t.LastColumnID, "current-schema-id": &t.CurrentSchemaID,
		"default-spec-id": &t.DefaultSpecID, "properties": &t.Properties, "current-snapshot-id": &t.CurrentSnapshotID,
		"snapshot-log": &t.SnapshotLog, "metadata-log": &t.MetadataLog, "default-sort-order-id": &t.DefaultSortOrderID,
		"next-row-id": &t.NextRowID,
	} {
		if _, err := o.get(key, dst); err != nil {
			return err
		}
	}
	if t.Properties == nil {
		t.Properties = map[string]string{}
	}
	if t.CurrentSnapshotID != nil && *t.CurrentSnapshotID == -1 {
		t.CurrentSnapshotID = nil
	}
	// Schemas; a v1 file may carry only "schema".
	var raws []json.RawMessage
	if _, err := o.get("schemas", &raws); err != nil {
		return err
	}
	if len(raws) == 0 && o.has("schema") {
		raws = []json.RawMessage{o["schema"]}
		if !o.has("current-schema-id") {
			var id struct {
				ID int `json:"schema-id"`
			}
			_ = json.Unmarshal(o["schema"], &id)
			t.CurrentSchemaID = id.ID
		}
	}
	for _, r := range raws {
		s, err := parseSchema(r)
		if err != nil {
			return err
		}
		t.Schemas = append(t.Schemas, s)
	}
	// Partition specs; a v1 file may carry only "partition-spec" (fields).
	raws = nil
	if _, err := o.get("partition-specs", &raws); err != nil {
		return err
	}
	if len(raws) == 0 && o.has("partition-spec") {
		raws = []json.RawMessage{json.RawMessage(`{"spec-id":0,"fields":` + string(o["partition-spec"]) + `}`)}
		t.DefaultSpecID = 0
	}
	for _, r := range raws {
		s, err := parseSpec(r)
		if err != nil {
			return err
		}
		t.Specs = append(t.Specs, s)
	}
	if ok, err := o.get("last-partition-id", &t.LastPartitionID); err != nil {
		return err
	} else if !ok {
		t.LastPartitionID = initialPartitionFieldID - 1
		for _, s := range t.Specs {
			t.LastPartitionID = max(t.LastPartitionID, s.lastFieldID())
		}
	}
	raws = nil
	if _, err := o.get("sort-orders", &raws); err != nil {
		return err
	}
	if len(raws) == 0 {
		raws = []json.RawMessage{json.RawMessage(`{"order-id":0,"fields":[]}`)}
		t.DefaultSortOrderID = 0
	}
	for _, r := range raws {
		s, err := parseSortOrder(r)
		if err != nil {
			return err
		}
		t.SortOrders = append(t.SortOrders, s)
	}
	raws = nil
	if _, err := o.get("snapshots", &raws); err != nil {
		return err
	}
	for _, r := range raws {
		s, err := parseSnapshot(r)
		if err != nil {
			return err
		}
		t.Snapshots = append(t.Snapshots, s)
	}
	var refs map[string]json.RawMessage
	if _, err := o.get("refs", &refs); err != nil {
		return err
	}
	t.Refs = map[string]*Ref{}
	for name, r := range refs {
		ref, err := parseRef(name, r)
		if err != nil {
			return err
		}
		t.Refs[name] = ref
	}
	if !o.has("refs") && t.CurrentSnapshotID != nil {
		t.Refs[mainBranch] = newRef(*t.CurrentSnapshotID, "branch", nil)
	}
	for key, dst := range map[string]*[]*Stats{"statistics": &t.Statistics, "partition-statistics": &t.PartitionStats} {
		raws = nil
		if _, err := o.get(key, &raws); err != nil {
			return err
		}
		for _, r := range raws {
			s, err := parseStats(key, r)
			if err != nil {
				return err
			}
			*dst = append(*dst, s)
		}
	}
	raws = nil
	if _, err := o.get("encryption-keys", &raws); err != nil {
		return err
	}
	for _, r := range raws {
		k, err := parseObject(r)
		if err != nil {
			return fmt.Errorf("encryption-keys: %v", err)
		}
		t.EncryptionKeys = append(t.EncryptionKeys, k)
	}
	return nil
}

// MarshalJSON writes the metadata file: every member read, with the
// modelled ones re-encoded.
func (t *Table) MarshalJSON() ([]byte, error) {
	o := t.rest.clone()
	if o == nil {
		o = object{}
	}
	o.set("format-version", t.FormatVersion)
	o.set("table-uuid", t.UUID)
	o.set("location", t.Location)
	if t.FormatVersion >= 2 {
		o.set("last-sequence-number", t.LastSequenceNumber)
	}
	o.set("last-updated-ms", t.LastUpdatedMs)
	o.set("last-column-id", t.LastColumnID)
	o.set("schemas", t.Schemas)
	o.set("current-schema-id", t.CurrentSchemaID)
	o.set("partition-specs", t.Specs)
	o.set("default-spec-id", t.DefaultSpecID)
	o.set("last-partition-id", t.LastPartitionID)
	o.set("properties", t.Properties)
	if t.CurrentSnapshotID != nil {
		o.set("current-snapshot-id", *t.CurrentSnapshotID)
	} else {
		o.set("current-snapshot-id", -1)
	}
	o.set("snapshots", nonNil(t.Snapshots))
	o.set("snapshot-log", nonNil(t.SnapshotLog))
	o.set("metadata-log", nonNil(t.MetadataLog))
	o.set("sort-orders", t.SortOrders)
	o.set("default-sort-order-id", t.DefaultSortOrderID)
	refs := map[string]*Ref{}
	for k, v := range t.Refs {
		refs[k] = v
	}
	o.set("refs", refs)
	o.set("statistics", nonNil(t.Statistics))
	o.set("partition-statistics", nonNil(t.PartitionStats))
	if t.FormatVersion >= 3 {
		next := int64(0)
		if t.NextRowID != nil {
			next = *t.NextRowID
		}
		o.set("next-row-id", next)
	} else {
		delete(o, "next-row-id")
	}
	if len(t.EncryptionKeys) > 0 {
		o.set("encryption-keys", t.EncryptionKeys)
	} else {
		delete(o, "encryption-keys")
	}
	if t.FormatVersion == 1 {
		if s := t.CurrentSchema(); s != nil {
			o.set("schema", s)
		}
		if s := t.DefaultSpec(); s != nil {
			o["partition-spec"] = s.obj["fields"]
		}
	} else {
		delete(o, "schema")
		delete(o, "partition-spec")
	}
	return json.Marshal(o)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// clone copies a table deeply enough for a change not to touch the
// original (elements are replaced, never edited in place).
func (t *Table) clone() *Table {
	c := *t
	c.rest = t.rest.clone()
	c.Schemas = append([]*Schema(nil), t.Schemas...)
	c.Specs = append([]*Spec(nil), t.Specs...)
	c.SortOrders = append([]*SortOrder(nil), t.SortOrders...)
	c.Snapshots = append([]*Snapshot(nil), t.Snapshots...)
	c.SnapshotLog = append([]snapshotLogEntry(nil), t.SnapshotLog...)
	c.MetadataLog = append([]metadataLogEntry(nil), t.MetadataLog...)
	c.Statistics = append([]*Stats(nil), t.Statistics...)
	c.PartitionStats = append([]*Stats(nil), t.PartitionStats...)
	c.EncryptionKeys = append([]object(nil), t.EncryptionKeys...)
	c.Properties = map[string]string{}
	for k, v := range t.Properties {
		c.Properties[k] = v
	}
	c.Refs = map[string]*Ref{}
	for k, v := range t.Refs {
		c.Refs[k] = v
	}
	if t.CurrentSnapshotID != nil {
		id := *t.CurrentSnapshotID
		c.CurrentSnapshotID = &id
	}
	if t.NextRowID != nil {
		n := *t.NextRowID
		c.NextRowID = &n
	}
	return &c
}

// Schema returns the schema with an id, or nil.
func (t *Table) Schema(id int) *Schema {
	for _, s := range t.Schemas {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// CurrentSchema returns the current schema (nil when the file has none).
func (t *Table) CurrentSchema() *Schema { return t.Schema(t.CurrentSchemaID) }

// Spec returns the partition spec with an id, or nil.
func (t *Table) Spec(id int) *Spec {
	for _, s := range t.Specs {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// DefaultSpec returns the default partition spec, or nil.
func (t *Table) DefaultSpec() *Spec { return t.Spec(t.DefaultSpecID) }

// SortOrder returns the sort order with an id, or nil.
func (t *Table) SortOrder(id int) *SortOrder {
	for _, s := range t.SortOrders {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// DefaultSortOrder returns the default sort order, or nil.
func (t *Table) DefaultSortOrder() *SortOrder { return t.SortOrder(t.DefaultSortOrderID) }

// Snapshot returns the snapshot with an id, or nil.
func (t *Table) Snapshot(id int64) *Snapshot {
	for _, s := range t.Snapshots {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// CurrentSnapshot returns the current snapshot, or nil.
func (t *Table) CurrentSnapshot() *Snapshot {
	if t.CurrentSnapshotID == nil {
		return nil
	}
	return t.Snapshot(*t.CurrentSnapshotID)
}

// PreviousFiles lists the metadata files of the metadata log.
func (t *Table) PreviousFiles() []string {
	out := make([]string, 0, len(t.MetadataLog))
	for _, e := range t.MetadataLog {
		out = append(out, e.MetadataFile)
	}
	return out
}

func (t *Table) propInt(key string, def int) (int, error) {
	v, ok := t.Properties[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("table property %s=%q is not an integer", key, v)
	}
	return n, nil
}

func parseSpec(raw json.RawMessage) (*Spec, error) {
	o, err := parseObject(raw)
	if err != nil {
		return nil, fmt.Errorf("partition spec: %v", err)
	}
	s := &Spec{obj: o}
	if _, err := o.get("spec-id", &s.ID); err != nil {
		return nil, fmt.Errorf("partition spec: %v", err)
	}
	if _, err := o.get("fields", &s.Fields); err != nil {
		return nil, fmt.Errorf("partition spec %d: %v", s.ID, err)
	}
	if !o.has("fields") {
		o.set("fields", []SpecField{})
	}
	for _, f := range s.Fields {
		if f.Name == "" || f.Transform == "" {
			return nil, fmt.Errorf("partition spec %d: a field needs a name and a transform", s.ID)
		}
	}
	return s, nil
}

// MarshalJSON writes the spec object.
func (s *Spec) MarshalJSON() ([]byte, error) { return json.Marshal(s.obj) }

func (s *Spec) lastFieldID() int {
	hi := 0
	for _, f := range s.Fields {
		if f.FieldID != nil {
			hi = max(hi, *f.FieldID)
		}
	}
	return hi
}

func (s *Spec) sameFields(o *Spec) bool {
	if len(s.Fields) != len(o.Fields) {
		return false
	}
	for i, f := range s.Fields {
		g := o.Fields[i]
		if f.SourceID != g.SourceID || f.Name != g.Name || f.Transform != g.Transform ||
			(f.FieldID != nil && g.FieldID != nil && *f.FieldID != *g.FieldID) {
			return false
		}
	}
	return true
}

// Obj exposes the spec as a raw object (for the metastore record).
func (s *Spec) Obj() json.RawMessage { b, _ := json.Marshal(s.obj); return b }

func parseSortOrder(raw json.RawMessage) (*SortOrder, error) {
	o, err := parseObject(raw)
	if err != nil {
		return nil, fmt.Errorf("sort order: %v", err)
	}
	s := &SortOrder{obj: o}
	if _, err := o.get("order-id", &s.ID); err != nil {
		return nil, fmt.Errorf("sort order: %v", err)
	}
	var fields []struct {
		Transform string `json:"transform"`
		SourceID  *int   `json:"source-id"`
		Direction string `json:"direction"`
		NullOrder string `json:"null-order"`
	}
	if _, err := o.get("fields", &fields); err != nil {
		return nil, fmt.Errorf("sort order %d: %v", s.ID, err)
	}
	if !o.has("fields") {
		o.set("fields", []any{})
	}
	for _, f := range fields {
		if f.Transform == "" || f.SourceID == nil {
			return nil, fmt.Errorf("sort order %d: a field needs a transform and a source-id", s.ID)
		}
		if f.Direction != "asc" && f.Direction != "desc" {
			return nil, fmt.Errorf("sort order %d: direction %q must be asc or desc", s.ID, f.Direction)
		}
		if f.NullOrder != "nulls-first" && f.NullOrder != "nulls-last" {
			return nil, fmt.Errorf("sort order %d: null-order %q must be nulls-first or nulls-last", s.ID, f.NullOrder)
		}
	}
	s.NFields = len(fields)
	return s, nil
}

// MarshalJSON writes the sort order object.
func (s *SortOrder) MarshalJSON() ([]byte, error) { return json.Marshal(s.obj) }

// Obj exposes the sort order as a raw object.
func (s *SortOrder) Obj() json.RawMessage { b, _ := json.Marshal(s.obj); return b }

func parseSnapshot(raw json.RawMessage) (*Snapshot, error) {
	o, err := parseObject(raw)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %v", err)
	}
	s := &Snapshot{obj: o}
	if ok, err := o.get("snapshot-id", &s.ID); err != nil || !ok {
		return nil, fmt.Errorf("snapshot: field \"snapshot-id\" is required (%v)", err)
	}
	for key, dst := range map[string]any{"parent-snapshot-id": &s.ParentID, "sequence-number": &s.SequenceNumber,
		"timestamp-ms": &s.TimestampMs, "manifest-list": &s.ManifestList, "manifests": &s.Manifests,
		"first-row-id": &s.FirstRowID, "added-rows": &s.AddedRows} {
		if _, err := o.get(key, dst); err != nil {
			return nil, fmt.Errorf("snapshot %d: %v", s.ID, err)
		}
	}
	var summary map[string]any
	if _, err := o.get("summary", &summary); err != nil {
		return nil, fmt.Errorf("snapshot %d: %v", s.ID, err)
	}
	if summary != nil {
		s.Summary = map[string]string{}
		for k, v := range summary {
			switch v := v.(type) {
			case string:
				s.Summary[k] = v
			default:
				b, _ := json.Marshal(v)
				s.Summary[k] = string(b)
			}
		}
	}
	return s, nil
}

// MarshalJSON writes the snapshot object.
func (s *Snapshot) MarshalJSON() ([]byte, error) { return json.Marshal(s.obj) }

func parseRef(name string, raw json.RawMessage) (*Ref, error) {
	o, err := parseObject(raw)
	if err != nil {
		return nil, fmt.Errorf("ref %q: %v", name, err)
	}
	r := &Ref{obj: o}
	if ok, err := o.get("snapshot-id", &r.SnapshotID); err != nil || !ok {
		return nil, fmt.Errorf("ref %q: field \"snapshot-id\" is required (%v)", name, err)
	}
	if _, err := o.get("type", &r.Type); err != nil {
		return nil, fmt.Errorf("ref %q: %v", name, err)
	}
	return r, nil
}

func newRef(id int64, typ string, retention object) *Ref {
	o := object{}
	for k, v := range retention {
		o[k] = v
	}
	o.set("snapshot-id", id)
	o.set("type", typ)
	return &Ref{obj: o, SnapshotID: id, Type: typ}
}

// MarshalJSON writes the ref object.
func (r *Ref) MarshalJSON() ([]byte, error) { return json.Marshal(r.obj) }

func parseStats(what string, raw json.RawMessage) (*Stats, error) {
	o, err := parseObject(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	s := &Stats{obj: o}
	if ok, err := o.get("snapshot-id", &s.SnapshotID); err != nil || !ok {
		return nil, fmt.Errorf("%s: field \"snapshot-id\" is required (%v)", what, err)
	}
	if ok, err := o.get("statistics-path", &s.Path); err != nil || !ok {
		return nil, fmt.Errorf("%s of snapshot %d: field \"statistics-path\" is required (%v)", what, s.SnapshotID, err)
	}
	return s, nil
}

// MarshalJSON writes the statistics object.
func (s *Stats) MarshalJSON() ([]byte, error) { return json.Marshal(s.obj) }

// StatisticsPaths lists the statistics and partition statistics files.
func (t *Table) StatisticsPaths() []string {
	var out []string
	for _, s := range t.Statistics {
		out = append(out, s.Path)
	}
	for _, s := range t.PartitionStats {
		out = append(out, s.Path)
	}
	return out
}
