package icemeta

import (
	"fmt"
	"strings"
)

// RequirementError is a requirement the current metadata does not meet:
// the commit is refused with 409 CommitFailed. Its text starts with the
// phrase Iceberg's reference catalog uses for the requirement ("Requirement
// failed: current schema changed"), which clients and Iceberg's REST
// Compatibility Kit match; the rest is ours.
type RequirementError struct {
	Type string
	Msg  string
}

func (e *RequirementError) Error() string { return "Requirement failed: " + e.Msg }

// IsAssertCreate reports whether a requirement list asks for a new table.
func IsAssertCreate(reqs []Requirement) bool {
	for _, r := range reqs {
		if r.Type == "assert-create" {
			return true
		}
	}
	return false
}

// CheckTable checks one requirement against the current metadata (nil when
// the table does not exist yet). A malformed requirement is an
// *UpdateError-like error naming its field; an unmet one a
// *RequirementError.
func (r Requirement) CheckTable(t *Table) error {
	fail := func(format string, args ...any) error {
		return &RequirementError{Type: r.Type, Msg: fmt.Sprintf(format, args...)}
	}
	if r.Type == "assert-create" {
		if t != nil {
			return fail("table already exists")
		}
		return nil
	}
	intField := func(key string) (int64, error) {
		var v *int64
		if _, err := r.obj.get(key, &v); err != nil || v == nil {
			return 0, fmt.Errorf("requirement %s: field %q is required and must be an integer", r.Type, key)
		}
		return *v, nil
	}
	if t == nil {
		switch r.Type {
		case "assert-table-uuid", "assert-ref-snapshot-id", "assert-last-assigned-field-id", "assert-current-schema-id",
			"assert-last-assigned-partition-id", "assert-default-spec-id", "assert-default-sort-order-id":
			return fail("table does not exist")
		}
	}
	switch r.Type {
	case "assert-table-uuid":
		var id string
		if _, err := r.obj.get("uuid", &id); err != nil || id == "" {
			return fmt.Errorf("requirement %s: field \"uuid\" is required", r.Type)
		}
		if !strings.EqualFold(id, t.UUID) {
			return fail("UUID does not match: the commit expects %s, the table has %s", id, t.UUID)
		}
	case "assert-ref-snapshot-id":
		var name string
		if _, err := r.obj.get("ref", &name); err != nil || name == "" {
			return fmt.Errorf("requirement %s: field \"ref\" is required", r.Type)
		}
		var want *int64
		if _, err := r.obj.get("snapshot-id", &want); err != nil {
			return fmt.Errorf("requirement %s: field \"snapshot-id\": %v", r.Type, err)
		}
		ref, ok := t.Refs[name]
		switch {
		case ok && want == nil:
			return fail("%s %s was created concurrently (it points at snapshot %d)", refKind(ref), name, ref.SnapshotID)
		case ok && ref.SnapshotID != *want:
			return fail("%s %s has changed: the commit expects snapshot %d, it points at %d", refKind(ref), name, *want, ref.SnapshotID)
		case !ok && want != nil:
			return fail("branch or tag %s is missing, the commit expects snapshot %d", name, *want)
		}
	case "assert-last-assigned-field-id":
		v, err := intField("last-assigned-field-id")
		if err != nil {
			return err
		}
		if int64(t.LastColumnID) != v {
			return fail("last assigned field id changed: the commit expects %d, the table has %d", v, t.LastColumnID)
		}
	case "assert-current-schema-id":
		v, err := intField("current-schema-id")
		if err != nil {
			return err
		}
		if int64(t.CurrentSchemaID) != v {
			return fail("current schema changed: the commit expects schema %d, the table's is %d", v, t.CurrentSchemaID)
		}
	case "assert-last-assigned-partition-id":
		v, err := intField("last-assigned-partition-id")
		if err != nil {
			return err
		}
		if int64(t.LastPartitionID) != v {
			return fail("last assigned partition id changed: the commit expects %d, the table has %d", v, t.LastPartitionID)
		}
	case "assert-default-spec-id":
		v, err := intField("default-spec-id")
		if err != nil {
			return err
		}
		if int64(t.DefaultSpecID) != v {
			return fail("default partition spec changed: the commit expects spec %d, the table's is %d", v, t.DefaultSpecID)
		}
	case "assert-default-sort-order-id":
		v, err := intField("default-sort-order-id")
		if err != nil {
			return err
		}
		if int64(t.DefaultSortOrderID) != v {
			return fail("default sort order changed: the commit expects order %d, the table's is %d", v, t.DefaultSortOrderID)
		}
	default:
		return fmt.Errorf("unknown table requirement type %q", r.Type)
	}
	return nil
}

// CheckView checks one requirement against a view's metadata.
func (r Requirement) CheckView(v *View) error {
	switch r.Type {
	case "assert-view-uuid":
		var id string
		if _, err := r.obj.get("uuid", &id); err != nil || id == "" {
			return fmt.Errorf("requirement %s: field \"uuid\" is required", r.Type)
		}
		if !strings.EqualFold(id, v.UUID) {
			return &RequirementError{Type: r.Type, Msg: fmt.Sprintf("view UUID does not match: the commit expects %s, the view has %s", id, v.UUID)}
		}
		return nil
	}
	return fmt.Errorf("unknown view requirement type %q", r.Type)
}

// refKind names a ref's kind as the reference messages do.
func refKind(r *Ref) string {
	if r != nil && r.Type == "tag" {
		return "tag"
	}
	return "branch"
}
