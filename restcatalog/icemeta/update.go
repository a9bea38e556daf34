package icemeta

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Update is one entry of a commit's "updates": its action and members.
type Update struct {
	Action string
	obj    object
}

// UnmarshalJSON reads an update; the action is required.
func (u *Update) UnmarshalJSON(b []byte) error {
	o, err := parseObject(b)
	if err != nil {
		return fmt.Errorf("update: %v", err)
	}
	if _, err := o.get("action", &u.Action); err != nil || u.Action == "" {
		return fmt.Errorf("update: field \"action\" is required")
	}
	u.obj = o
	return nil
}

// MarshalJSON writes the update as received.
func (u Update) MarshalJSON() ([]byte, error) { return json.Marshal(u.obj) }

// Requirement is one entry of a commit's "requirements".
type Requirement struct {
	Type string
	obj  object
}

// UnmarshalJSON reads a requirement; the type is required.
func (r *Requirement) UnmarshalJSON(b []byte) error {
	o, err := parseObject(b)
	if err != nil {
		return fmt.Errorf("requirement: %v", err)
	}
	if _, err := o.get("type", &r.Type); err != nil || r.Type == "" {
		return fmt.Errorf("requirement: field \"type\" is required")
	}
	r.obj = o
	return nil
}

// MarshalJSON writes the requirement as received.
func (r Requirement) MarshalJSON() ([]byte, error) { return json.Marshal(r.obj) }

// ArgumentError is an invalid argument Iceberg's own catalogs refuse with
// an IllegalArgumentException whose text clients match (the REST error type
// IllegalArgumentException, which Iceberg's Java client rethrows as such);
// Msg is that text.
type ArgumentError struct{ Msg string }

func (e *ArgumentError) Error() string { return e.Msg }

// UpdateError is a refused update: which one, which field, why.
type UpdateError struct {
	Index  int
	Action string
	Field  string
	Msg    string
}

func (e *UpdateError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("update %d (%s): field %q: %s", e.Index, e.Action, e.Field, e.Msg)
	}
	return fmt.Sprintf("update %d (%s): %s", e.Index, e.Action, e.Msg)
}

// reservedProperties are derived from the metadata; set-properties and
// remove-properties may not name them.
var reservedProperties = []string{"format-version", "uuid", "snapshot-count", "current-snapshot-id",
	"current-snapshot-summary", "current-snapshot-timestamp-ms", "current-schema", "default-partition-spec", "default-sort-order"}

// tableBuilder applies updates to a copy of a table.
type tableBuilder struct {
	updater
	t    *Table
	now  time.Time
	base int64 // last-updated-ms of the base

	lastAddedSchema  *int
	lastAddedSpec    *int
	lastAddedOrder   *int
	addedSnapshots   map[int64]bool
	mainSetTo        []int64
	removedSnapshots bool
	snapshotUpdated  *int64 // last-updated-ms forced by an added snapshot
	// versionOpen: a table this commit creates whose format version no
	// update has set yet; its first upgrade-format-version picks any
	// supported version, 1 included (a staged create of a v1 table).
	versionOpen bool
}

// ApplyTable applies a commit's updates to base (nil for a table the commit
// creates) and returns the new metadata; base is not changed. baseLoc is
// the file base was read from: it joins the metadata log.
func ApplyTable(base *Table, baseLoc string, updates []Update, now time.Time) (*Table, error) {
	var t *Table
	if base == nil {
		t = emptyTable()
	} else {
		t = base.clone()
	}
	b := &tableBuilder{t: t, now: now, addedSnapshots: map[int64]bool{}, versionOpen: base == nil}
	if base != nil {
		b.base = base.LastUpdatedMs
	}
	for i, u := range updates {
		b.idx, b.act = i, u.Action
		if err := b.apply(u); err != nil {
			return nil, err
		}
	}
	b.idx, b.act = len(updates), "commit"
	if err := b.finish(base == nil); err != nil {
		return nil, err
	}
	if base != nil && baseLoc != "" && b.changed {
		maxLog, err := t.propInt(PropPreviousVersionsMax, defaultPreviousVersions)
		if err != nil {
			return nil, err
		}
		t.MetadataLog = append(t.MetadataLog, metadataLogEntry{TimestampMs: base.LastUpdatedMs, MetadataFile: baseLoc})
		if maxLog = max(1, maxLog); len(t.MetadataLog) > maxLog {
			t.MetadataLog = t.MetadataLog[len(t.MetadataLog)-maxLog:]
		}
	}
	return t, nil
}

// emptyTable is the start of a table a commit creates: no schema, spec or
// sort order yet; the commit's updates add them.
func emptyTable() *Table {
	return &Table{rest: object{}, FormatVersion: defaultTableFormatVersion, LastPartitionID: initialPartitionFieldID - 1,
		Properties: map[string]string{}, Refs: map[string]*Ref{}, CurrentSchemaID: -1, DefaultSpecID: -1, DefaultSortOrderID: -1}
}

func (b *tableBuilder) finish(created bool) error {
	t := b.t
	if created {
		if t.UUID == "" {
			t.UUID = uuid.NewString()
		}
		if len(t.Schemas) == 0 {
			return b.fail("", "a new table needs an add-schema update")
		}
		if t.CurrentSchemaID < 0 {
			t.CurrentSchemaID = t.Schemas[len(t.Schemas)-1].ID
		}
		if len(t.Specs) == 0 {
			s, _ := parseSpec(json.RawMessage(`{"spec-id":0,"fields":[]}`))
			t.Specs = []*Spec{s}
		}
		if t.DefaultSpecID < 0 {
			t.DefaultSpecID = t.Specs[len(t.Specs)-1].ID
		}
		if len(t.SortOrders) == 0 {
			s, _ := parseSortOrder(json.RawMessage(`{"order-id":0,"fields":[]}`))
			t.SortOrders = []*SortOrder{s}
		}
		if t.DefaultSortOrderID < 0 {
			t.DefaultSortOrderID = t.SortOrders[len(t.SortOrders)-1].ID
		}
		b.changed = true
	}
	// The snapshot log keeps the history of main: a snapshot main pointed
	// at only in the middle of this commit leaves it, and so does the
	// history before a removed snapshot.
	intermediate := map[int64]bool{}
	for _, id := range b.mainSetTo {
		if b.addedSnapshots[id] && (t.CurrentSnapshotID == nil || id != *t.CurrentSnapshotID) {
			intermediate[id] = true
		}
	}
	if len(intermediate) > 0 || b.removedSnapshots {
		var log []snapshotLogEntry
		for _, e := range t.SnapshotLog {
			switch {
			case t.Snapshot(e.SnapshotID) != nil:
				if !intermediate[e.SnapshotID] {
					log = append(log, e)
				}
			case b.removedSnapshots:
				log = log[:0]
			}
		}
		t.SnapshotLog = log
	}
	if t.Schema(t.CurrentSchemaID) == nil {
		return b.fail("current-schema-id", "schema %d does not exist", t.CurrentSchemaID)
	}
	if t.Spec(t.DefaultSpecID) == nil {
		return b.fail("default-spec-id", "partition spec %d does not exist", t.DefaultSpecID)
	}
	if t.SortOrder(t.DefaultSortOrderID) == nil {
		return b.fail("default-sort-order-id", "sort order %d does not exist", t.DefaultSortOrderID)
	}
	if b.changed {
		switch {
		case b.snapshotUpdated != nil:
			t.LastUpdatedMs = *b.snapshotUpdated
		default:
			t.LastUpdatedMs = b.now.UnixMilli()
		}
	}
	return nil
}

func (b *tableBuilder) apply(u Update) error {
	t := b.t
	switch u.Action {
	case "assign-uuid":
		id, err := b.uuidOf(u)
		if err != nil {
			return err
		}
		if !strings.EqualFold(id, t.UUID) {
			t.UUID = id
			b.changed = true
		}
	case "upgrade-format-version":
		var v int
		if err := b.need(u, "format-version", &v); err != nil {
			return err
		}
		open := b.versionOpen
		b.versionOpen = false
		switch {
		case open && v >= 1 && v < t.FormatVersion:
			t.FormatVersion = v
			b.changed = true
			return nil
		case v < t.FormatVersion:
			return b.fail("format-version", "cannot downgrade format version %d to %d", t.FormatVersion, v)
		case v > maxTableFormatVersion:
			return b.fail("format-version", "format version %d is not supported (at most %d)", v, maxTableFormatVersion)
		case v == t.FormatVersion:
			return nil
		}
		if t.FormatVersion < 2 && t.UUID == "" {
			t.UUID = uuid.NewString()
		}
		if t.FormatVersion < 3 && v >= 3 && t.NextRowID == nil {
			zero := int64(0)
			t.NextRowID = &zero
		}
		t.FormatVersion = v
		b.changed = true
	case "add-schema":
		var raw json.RawMessage
		if err := b.need(u, "schema", &raw); err != nil {
			return err
		}
		s, err := parseSchema(raw)
		if err != nil {
			return b.fail("schema", "%v", err)
		}
		if why := s.v3Only(); why != "" && t.FormatVersion < 3 {
			return b.fail("schema", "%s, which needs format version 3 (the table is version %d)", why, t.FormatVersion)
		}
		var lastCol *int
		if _, err := u.obj.get("last-column-id", &lastCol); err != nil {
			return b.fail("last-column-id", "%v", err)
		}
		id, added := b.addSchemaTo(&t.Schemas, s, s.ID)
		b.lastAddedSchema = &id
		if !added {
			return nil
		}
		t.LastColumnID = max(t.LastColumnID, s.HighestFieldID())
		if lastCol != nil {
			t.LastColumnID = max(t.LastColumnID, *lastCol)
		}
	case "set-current-schema":
		var id int
		if err := b.need(u, "schema-id", &id); err != nil {
			return err
		}
		if id == -1 {
			if b.lastAddedSchema == nil {
				return b.fail("schema-id", "-1 (the last added schema) but this commit added no schema")
			}
			id = *b.lastAddedSchema
		}
		if t.Schema(id) == nil {
			return b.fail("schema-id", "schema %d does not exist", id)
		}
		if id != t.CurrentSchemaID {
			t.CurrentSchemaID = id
			b.changed = true
		}
	case "add-spec":
		return b.addSpec(u)
	case "set-default-spec":
		var id int
		if err := b.need(u, "spec-id", &id); err != nil {
			return err
		}
		if id == -1 {
			if b.lastAddedSpec == nil {
				return b.fail("spec-id", "-1 (the last added spec) but this commit added no partition spec")
			}
			id = *b.lastAddedSpec
		}
		if t.Spec(id) == nil {
			return b.fail("spec-id", "partition spec %d does not exist", id)
		}
		if id != t.DefaultSpecID {
			t.DefaultSpecID = id
			b.changed = true
		}
	case "add-sort-order":
		return b.addSortOrder(u)
	case "set-default-sort-order":
		var id int
		if err := b.need(u, "sort-order-id", &id); err != nil {
			return err
		}
		if id == -1 {
			if b.lastAddedOrder == nil {
				return b.fail("sort-order-id", "-1 (the last added sort order) but this commit added no sort order")
			}
			id = *b.lastAddedOrder
		}
		if t.SortOrder(id) == nil {
			return b.fail("sort-order-id", "sort order %d does not exist", id)
		}
		if id != t.DefaultSortOrderID {
			t.DefaultSortOrderID = id
			b.changed = true
		}
	case "add-snapshot":
		return b.addSnapshot(u)
	case "set-snapshot-ref":
		return b.setRef(u)
	case "remove-snapshot-ref":
		var name string
		if err := b.need(u, "ref-name", &name); err != nil {
			return err
		}
		if _, ok := t.Refs[name]; !ok {
			return b.fail("ref-name", "the table has no ref %q", name)
		}
		delete(t.Refs, name)
		if name == mainBranch {
			t.CurrentSnapshotID = nil
		}
		b.changed = true
	case "remove-snapshots":
		var ids []int64
		if err := b.need(u, "snapshot-ids", &ids); err != nil {
			return err
		}
		if t.CurrentSnapshotID != nil && slices.Contains(ids, *t.CurrentSnapshotID) {
			return b.fail("snapshot-ids", "the current snapshot %d cannot be removed", *t.CurrentSnapshotID)
		}
		n := len(t.Snapshots)
		t.Snapshots = slices.DeleteFunc(t.Snapshots, func(s *Snapshot) bool { return slices.Contains(ids, s.ID) })
		for name, r := range t.Refs {
			if t.Snapshot(r.SnapshotID) == nil {
				delete(t.Refs, name)
			}
		}
		t.Statistics = slices.DeleteFunc(t.Statistics, func(s *Stats) bool { return slices.Contains(ids, s.SnapshotID) })
		t.PartitionStats = slices.DeleteFunc(t.PartitionStats, func(s *Stats) bool { return slices.Contains(ids, s.SnapshotID) })
		if len(t.Snapshots) != n {
			b.removedSnapshots = true
		}
		b.changed = true
	case "set-location":
		loc, err := b.locationOf(u)
		if err != nil {
			return err
		}
		if loc != t.Location {
			t.Location = loc
			b.changed = true
		}
	case "set-properties":
		return b.setProperties(u, t.Properties, reservedProperties)
	case "remove-properties":
		return b.removeProperties(u, t.Properties, reservedProperties)
	case "set-statistics", "set-partition-statistics":
		key, list := "statistics", &t.Statistics
		if u.Action == "set-partition-statistics" {
			key, list = "partition-statistics", &t.PartitionStats
		}
		var raw json.RawMessage
		if err := b.need(u, key, &raw); err != nil {
			return err
		}
		s, err := parseStats(key, raw)
		if err != nil {
			return b.fail(key, "%v", err)
		}
		var id *int64
		if _, err := u.obj.get("snapshot-id", &id); err != nil {
			return b.fail("snapshot-id", "%v", err)
		}
		if id != nil && *id != s.SnapshotID {
			return b.fail("snapshot-id", "%d differs from the statistics' snapshot-id %d", *id, s.SnapshotID)
		}
		*list = slices.DeleteFunc(*list, func(o *Stats) bool { return o.SnapshotID == s.SnapshotID })
		*list = append(*list, s)
		b.changed = true
	case "remove-statistics", "remove-partition-statistics":
		list := &t.Statistics
		if u.Action == "remove-partition-statistics" {
			list = &t.PartitionStats
		}
		var id int64
		if err := b.need(u, "snapshot-id", &id); err != nil {
			return err
		}
		n := len(*list)
		*list = slices.DeleteFunc(*list, func(o *Stats) bool { return o.SnapshotID == id })
		if len(*list) == n {
			return b.fail("snapshot-id", "the table has no statistics for snapshot %d", id)
		}
		b.changed = true
	case "remove-partition-specs":
		var ids []int
		if err := b.need(u, "spec-ids", &ids); err != nil {
			return err
		}
		if slices.Contains(ids, t.DefaultSpecID) {
			return b.fail("spec-ids", "the default partition spec %d cannot be removed", t.DefaultSpecID)
		}
		t.Specs = slices.DeleteFunc(t.Specs, func(s *Spec) bool { return slices.Contains(ids, s.ID) })
		b.changed = true
	case "remove-schemas":
		var ids []int
		if err := b.need(u, "schema-ids", &ids); err != nil {
			return err
		}
		if slices.Contains(ids, t.CurrentSchemaID) {
			return b.fail("schema-ids", "the current schema %d cannot be removed", t.CurrentSchemaID)
		}
		t.Schemas = slices.DeleteFunc(t.Schemas, func(s *Schema) bool { return slices.Contains(ids, s.ID) })
		b.changed = true
	case "add-encryption-key":
		var raw json.RawMessage
		if err := b.need(u, "encryption-key", &raw); err != nil {
			return err
		}
		k, err := parseObject(raw)
		if err != nil {
			return b.fail("encryption-key", "%v", err)
		}
		var id string
		if _, err := k.get("key-id", &id); err != nil || id == "" {
			return b.fail("encryption-key", "field \"key-id\" is required")
		}
		t.EncryptionKeys = slices.DeleteFunc(t.EncryptionKeys, func(o object) bool { var x string; _, _ = o.get("key-id", &x); return x == id })
		t.EncryptionKeys = append(t.EncryptionKeys, k)
		b.changed = true
	case "remove-encryption-key":
		var id string
		if err := b.need(u, "key-id", &id); err != nil {
			return err
		}
		t.EncryptionKeys = slices.DeleteFunc(t.EncryptionKeys, func(o object) bool { var x string; _, _ = o.get("key-id", &x); return x == id })
		b.changed = true
	default:
		return b.fail("action", "unknown table update action %q", u.Action)
	}
	return nil
}

func (b *tableBuilder) addSpec(u Update) error {
	t := b.t
	var raw json.RawMessage
	if err := b.need(u, "spec", &raw); err != nil {
		return err
	}
	s, err := parseSpec(raw)
	if err != nil {
		return b.fail("spec", "%v", err)
	}
	cur := t.CurrentSchema()
	if cur == nil {
		return b.fail("spec", "the table has no current schema to bind the spec to")
	}
	cols := columnNames(fields2any(cur.obj["fields"]))
	next := t.LastPartitionID
	for _, sp := range t.Specs {
		next = max(next, sp.lastFieldID())
	}
	fields := make([]SpecField, len(s.Fields))
	names := map[string]bool{}
	for i, f := range s.Fields {
		if _, ok := cols[f.SourceID]; !ok {
			return b.fail("spec", "partition field %q: source-id %d is not a column of the current schema", f.Name, f.SourceID)
		}
		if names[f.Name] {
			return b.fail("spec", "partition field name %q is used twice", f.Name)
		}
		names[f.Name] = true
		if f.FieldID == nil {
			next++
			id := next
			f.FieldID = &id
		}
		if t.FormatVersion == 1 && *f.FieldID != initialPartitionFieldID+i {
			return b.fail("spec", "format v1 needs sequential partition field ids: field %q has %d, expected %d", f.Name, *f.FieldID, initialPartitionFieldID+i)
		}
		fields[i] = f
	}
	s.Fields = fields
	id := 0
	for _, old := range t.Specs {
		if old.sameFields(s) {
			b.lastAddedSpec = &old.ID
			return nil
		}
		id = max(id, old.ID+1)
	}
	s.obj = s.obj.clone()
	s.obj.set("fields", fields)
	s.obj.set("spec-id", id)
	s.ID = id
	t.LastPartitionID = max(t.LastPartitionID, s.lastFieldID())
	t.Specs = append(t.Specs, s)
	b.lastAddedSpec = &s.ID
	b.changed = true
	return nil
}

func (b *tableBuilder) addSortOrder(u Update) error {
	t := b.t
	var raw json.RawMessage
	if err := b.need(u, "sort-order", &raw); err != nil {
		return err
	}
	s, err := parseSortOrder(raw)
	if err != nil {
		return b.fail("sort-order", "%v", err)
	}
	if s.NFields == 0 {
		for _, old := range t.SortOrders {
			if old.ID == 0 {
				b.lastAddedOrder = &old.ID
				return nil
			}
		}
		s.obj = s.obj.clone()
		s.obj.set("order-id", 0)
		s.ID = 0
		t.SortOrders = append(t.SortOrders, s)
		b.lastAddedOrder = &s.ID
		b.changed = true
		return nil
	}
	if cur := t.CurrentSchema(); cur != nil {
		cols := columnNames(fields2any(cur.obj["fields"]))
		var fields []struct {
			SourceID int `json:"source-id"`
		}
		_, _ = s.obj.get("fields", &fields)
		for _, f := range fields {
			if _, ok := cols[f.SourceID]; !ok {
				return b.fail("sort-order", "source-id %d is not a column of the current schema", f.SourceID)
			}
		}
	}
	id := 1
	for _, old := range t.SortOrders {
		if equalJSON(old.obj["fields"], s.obj["fields"]) {
			b.lastAddedOrder = &old.ID
			return nil
		}
		id = max(id, old.ID+1)
	}
	s.obj = s.obj.clone()
	s.obj.set("order-id", id)
	s.ID = id
	t.SortOrders = append(t.SortOrders, s)
	b.lastAddedOrder = &s.ID
	b.changed = true
	return nil
}

const oneMinuteMs = 60_000

func (b *tableBuilder) addSnapshot(u Update) error {
	t := b.t
	var raw json.RawMessage
	if err := b.need(u, "snapshot", &raw); err != nil {
		return err
	}
	s, err := parseSnapshot(raw)
	if err != nil {
		return b.fail("snapshot", "%v", err)
	}
	switch {
	case len(t.Schemas) == 0:
		return b.fail("snapshot", "the table has no schema yet")
	case t.Snapshot(s.ID) != nil:
		return b.fail("snapshot", "snapshot %d already exists", s.ID)
	case t.FormatVersion >= 2 && s.ParentID != nil && s.SequenceNumber <= t.LastSequenceNumber:
		return b.fail("snapshot", "sequence-number %d must be greater than the table's last-sequence-number %d", s.SequenceNumber, t.LastSequenceNumber)
	case s.ManifestList == "" && t.FormatVersion >= 2:
		return b.fail("snapshot", "field \"manifest-list\" is required")
	}
	if n := len(t.SnapshotLog); n > 0 && s.TimestampMs-t.SnapshotLog[n-1].TimestampMs < -oneMinuteMs {
		return b.fail("snapshot", "timestamp-ms %d is before the last snapshot's %d", s.TimestampMs, t.SnapshotLog[n-1].TimestampMs)
	}
	if s.TimestampMs-max(t.LastUpdatedMs, b.base) < -oneMinuteMs {
		return b.fail("snapshot", "timestamp-ms %d is before the table's last-updated-ms %d", s.TimestampMs, max(t.LastUpdatedMs, b.base))
	}
	if t.FormatVersion >= 3 {
		next := int64(0)
		if t.NextRowID != nil {
			next = *t.NextRowID
		}
		switch {
		case s.FirstRowID == nil:
			return b.fail("snapshot", "field \"first-row-id\" is required in format v3")
		case s.AddedRows == nil:
			return b.fail("snapshot", "field \"added-rows\" is required in format v3")
		case *s.AddedRows < 0:
			return b.fail("snapshot", "added-rows %d is negative", *s.AddedRows)
		case *s.FirstRowID < next:
			return b.fail("snapshot", "first-row-id %d is behind the table's next-row-id %d", *s.FirstRowID, next)
		}
		n := next + *s.AddedRows
		t.NextRowID = &n
	}
	t.Snapshots = append(t.Snapshots, s)
	if t.FormatVersion >= 2 {
		t.LastSequenceNumber = s.SequenceNumber
	}
	ts := s.TimestampMs
	b.snapshotUpdated = &ts
	t.LastUpdatedMs = ts
	b.addedSnapshots[s.ID] = true
	b.changed = true
	return nil
}

func (b *tableBuilder) setRef(u Update) error {
	t := b.t
	var name, typ string
	var id int64
	if err := b.need(u, "ref-name", &name); err != nil {
		return err
	}
	if err := b.need(u, "type", &typ); err != nil {
		return err
	}
	if err := b.need(u, "snapshot-id", &id); err != nil {
		return err
	}
	if typ != "branch" && typ != "tag" {
		return b.fail("type", "%q must be branch or tag", typ)
	}
	if name == mainBranch && typ != "branch" {
		return b.fail("type", "ref %q must be a branch", name)
	}
	retention := object{}
	for _, k := range []string{"max-ref-age-ms", "max-snapshot-age-ms", "min-snapshots-to-keep"} {
		var v *int64
		if _, err := u.obj.get(k, &v); err != nil {
			return b.fail(k, "%v", err)
		}
		if v == nil {
			continue
		}
		if *v <= 0 {
			return b.fail(k, "%d must be positive", *v)
		}
		if typ == "tag" && k != "max-ref-age-ms" {
			return b.fail(k, "a tag has no %s", k)
		}
		retention.set(k, *v)
	}
	ref := newRef(id, typ, retention)
	if old, ok := t.Refs[name]; ok && equalJSON(mustJSON(old.obj), mustJSON(ref.obj)) {
		return nil
	}
	snap := t.Snapshot(id)
	if snap == nil {
		return b.fail("snapshot-id", "ref %q: snapshot %d does not exist", name, id)
	}
	t.Refs[name] = ref
	if name == mainBranch {
		cur := id
		t.CurrentSnapshotID = &cur
		ts := b.now.UnixMilli()
		if b.addedSnapshots[id] {
			ts = snap.TimestampMs
		}
		t.SnapshotLog = append(t.SnapshotLog, snapshotLogEntry{TimestampMs: ts, SnapshotID: id})
		b.mainSetTo = append(b.mainSetTo, id)
	}
	b.changed = true
	return nil
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
