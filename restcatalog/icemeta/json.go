// Package icemeta reads, changes and writes Iceberg table and view metadata
// files as the REST catalog frontend needs them, written from the Iceberg
// table spec, view spec and REST OpenAPI spec.
//
// It is lossless: a metadata file is kept as its JSON members, and only the
// members a change acts on are decoded and re-encoded. Schemas, partition
// specs, sort orders, snapshots, refs and statistics stay raw JSON objects
// with the few fields this package needs decoded beside them, so a field it
// does not know (a newer spec's, an engine's own) survives a
// load/update/write cycle unchanged.
//
// It replaces github.com/apache/iceberg-go in the proxy binary: that library
// links Arrow, gRPC and Substrait and costs the idle proxy about 40 MiB of
// resident memory for work that needs none of them.
package icemeta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"sort"
)

// object is a JSON object kept as its raw members.
type object map[string]json.RawMessage

func parseObject(b []byte) (object, error) {
	var o object
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, err
	}
	if o == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return o, nil
}

// has reports whether key is present and not null.
func (o object) has(key string) bool {
	v, ok := o[key]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// get decodes key into v when present and not null; it reports presence.
func (o object) get(key string, v any) (bool, error) {
	if !o.has(key) {
		return false, nil
	}
	if err := json.Unmarshal(o[key], v); err != nil {
		return true, fmt.Errorf("field %q: %v", key, err)
	}
	return true, nil
}

// set encodes v into key.
func (o object) set(key string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("icemeta: encoding %q: %v", key, err)) // only our own plain values are set
	}
	o[key] = b
}

func (o object) clone() object { return maps.Clone(o) }

// equalJSON compares two JSON texts as values (member order and number
// spelling do not matter).
func equalJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// equalWithout compares two objects as values, ignoring some members.
func equalWithout(a, b object, ignore ...string) bool {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	for _, k := range ignore {
		delete(keys, k)
	}
	for k := range keys {
		if a.has(k) != b.has(k) {
			return false
		}
		if a.has(k) && !equalJSON(a[k], b[k]) {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
