// The update actions table and view metadata share.

package icemeta

import (
	"fmt"
	"slices"

	"github.com/google/uuid"
)

// updater is what the table and view builders share: where in the commit
// they are, whether it changed anything, and the update actions both kinds
// of metadata have (assign-uuid, add-schema, set-location, set-properties,
// remove-properties).
type updater struct {
	idx     int
	act     string
	changed bool
}

func (b *updater) fail(field, format string, args ...any) error {
	return &UpdateError{Index: b.idx, Action: b.act, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// need decodes a required member of an update.
func (b *updater) need(u Update, key string, v any) error {
	ok, err := u.obj.get(key, v)
	if err != nil {
		return b.fail(key, "%v", err)
	}
	if !ok {
		return b.fail(key, "is required")
	}
	return nil
}

// uuidOf is assign-uuid's UUID, checked.
func (b *updater) uuidOf(u Update) (string, error) {
	var id string
	if err := b.need(u, "uuid", &id); err != nil {
		return "", err
	}
	if _, err := uuid.Parse(id); err != nil {
		return "", b.fail("uuid", "%q is not a UUID", id)
	}
	return id, nil
}

// locationOf is set-location's location, checked.
func (b *updater) locationOf(u Update) (string, error) {
	var loc string
	if err := b.need(u, "location", &loc); err != nil {
		return "", err
	}
	if loc == "" {
		return "", b.fail("location", "must not be empty")
	}
	return loc, nil
}

// setProperties applies set-properties to props; a reserved key refuses the
// whole update.
func (b *updater) setProperties(u Update, props map[string]string, reserved []string) error {
	var updates map[string]string
	if err := b.need(u, "updates", &updates); err != nil {
		return err
	}
	for _, k := range sortedKeys(updates) {
		if slices.Contains(reserved, k) {
			return b.fail("updates", "property %q is reserved (derived from the metadata) and cannot be set", k)
		}
	}
	for k, v := range updates {
		props[k] = v
	}
	b.changed = true
	return nil
}

// removeProperties applies remove-properties to props; a reserved key
// refuses the whole update.
func (b *updater) removeProperties(u Update, props map[string]string, reserved []string) error {
	var keys []string
	if err := b.need(u, "removals", &keys); err != nil {
		return err
	}
	for _, k := range keys {
		if slices.Contains(reserved, k) {
			return b.fail("removals", "property %q is reserved (derived from the metadata) and cannot be removed", k)
		}
	}
	for _, k := range keys {
		delete(props, k)
	}
	b.changed = true
	return nil
}

// addSchemaTo adds s to schemas unless an equal schema is there (whose id it
// then returns, added false); a new one gets the next free id, at least
// minID.
func (b *updater) addSchemaTo(schemas *[]*Schema, s *Schema, minID int) (id int, added bool) {
	id = minID
	for _, old := range *schemas {
		if old.sameSchema(s) {
			return old.ID, false
		}
		id = max(id, old.ID+1)
	}
	if id != s.ID {
		s.setID(id)
	}
	*schemas = append(*schemas, s)
	b.changed = true
	return id, true
}
