package icemeta

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Schema is one schema of a table or view: its JSON object, its id and
// its top-level fields decoded.
type Schema struct {
	obj    object
	ID     int
	Fields []Field
}

// Field is a top-level column of a schema. Type is the field's Iceberg type
// as decoded JSON: a string for a primitive ("long", "decimal(9,2)"), a
// map for struct, list and map types.
type Field struct {
	ID       int
	Name     string
	Required bool
	Doc      string
	Type     any
}

func parseSchema(raw json.RawMessage) (*Schema, error) {
	o, err := parseObject(raw)
	if err != nil {
		return nil, fmt.Errorf("schema: %v", err)
	}
	s := &Schema{obj: o}
	if _, err := o.get("schema-id", &s.ID); err != nil {
		return nil, fmt.Errorf("schema: %v", err)
	}
	var fields []struct {
		ID       *int   `json:"id"`
		Name     string `json:"name"`
		Required bool   `json:"required"`
		Doc      string `json:"doc"`
		Type     any    `json:"type"`
	}
	if ok, err := o.get("fields", &fields); err != nil {
		return nil, fmt.Errorf("schema %d: %v", s.ID, err)
	} else if !ok {
		return nil, fmt.Errorf("schema %d: field \"fields\" is required", s.ID)
	}
	if err := checkStruct(fields2any(o["fields"])); err != nil {
		return nil, fmt.Errorf("schema %d: %v", s.ID, err)
	}
	for _, f := range fields {
		s.Fields = append(s.Fields, Field{ID: *f.ID, Name: f.Name, Required: f.Required, Doc: f.Doc, Type: f.Type})
	}
	return s, nil
}

func fields2any(raw json.RawMessage) []any {
	var v []any
	_ = json.Unmarshal(raw, &v)
	return v
}

// checkStruct checks the ids, names and types of a struct's fields.
func checkStruct(fields []any) error {
	for i, f := range fields {
		m, ok := f.(map[string]any)
		if !ok {
			return fmt.Errorf("field %d is not an object", i)
		}
		name, _ := m["name"].(string)
		if name == "" {
			return fmt.Errorf("field %d has no name", i)
		}
		if _, ok := m["id"].(float64); !ok {
			return fmt.Errorf("field %q has no id", name)
		}
		if err := checkType(m["type"]); err != nil {
			return fmt.Errorf("field %q: %v", name, err)
		}
	}
	return nil
}

func checkType(t any) error {
	switch t := t.(type) {
	case string:
		if t == "" {
			return fmt.Errorf("empty type")
		}
		return nil
	case map[string]any:
		switch t["type"] {
		case "struct":
			fs, _ := t["fields"].([]any)
			return checkStruct(fs)
		case "list":
			if _, ok := t["element-id"].(float64); !ok {
				return fmt.Errorf("list has no element-id")
			}
			return checkType(t["element"])
		case "map":
			for _, k := range []string{"key-id", "value-id"} {
				if _, ok := t[k].(float64); !ok {
					return fmt.Errorf("map has no %s", k)
				}
			}
			if err := checkType(t["key"]); err != nil {
				return err
			}
			return checkType(t["value"])
		}
		return fmt.Errorf("unknown nested type %v", t["type"])
	}
	return fmt.Errorf("type is neither a string nor an object")
}

// MarshalJSON writes the schema object as stored.
func (s *Schema) MarshalJSON() ([]byte, error) { return json.Marshal(s.obj) }

func (s *Schema) setID(id int) {
	s.obj = s.obj.clone()
	s.ID = id
	s.obj.set("schema-id", id)
}

// HighestFieldID is the largest field, element, key or value id in the
// schema (0 for an empty schema).
func (s *Schema) HighestFieldID() int {
	hi := 0
	walkIDs(fields2any(s.obj["fields"]), func(id int) { hi = max(hi, id) })
	return hi
}

// sameSchema compares fields and identifier field ids (not the schema id).
func (s *Schema) sameSchema(o *Schema) bool {
	if !equalWithout(s.obj, o.obj, "schema-id", "type", "identifier-field-ids") {
		return false
	}
	var a, b []int
	_, _ = s.obj.get("identifier-field-ids", &a)
	_, _ = o.obj.get("identifier-field-ids", &b)
	return slices.Equal(a, b) // absent and [] are the same
}

func walkIDs(fields []any, fn func(int)) {
	for _, f := range fields {
		m, _ := f.(map[string]any)
		if id, ok := m["id"].(float64); ok {
			fn(int(id))
		}
		walkTypeIDs(m["type"], fn)
	}
}

func walkTypeIDs(t any, fn func(int)) {
	m, ok := t.(map[string]any)
	if !ok {
		return
	}
	for _, k := range []string{"element-id", "key-id", "value-id"} {
		if id, ok := m[k].(float64); ok {
			fn(int(id))
		}
	}
	switch m["type"] {
	case "struct":
		fs, _ := m["fields"].([]any)
		walkIDs(fs, fn)
	case "list":
		walkTypeIDs(m["element"], fn)
	case "map":
		walkTypeIDs(m["key"], fn)
		walkTypeIDs(m["value"], fn)
	}
}

// v3Only names what in a schema needs table format version 3: v3 types
// and field default values. "" when nothing does.
func (s *Schema) v3Only() string {
	var found string
	var visitFields func(fields []any)
	var visitType func(name string, t any)
	visitType = func(name string, t any) {
		switch t := t.(type) {
		case string:
			switch {
			case t == "variant", t == "unknown", t == "timestamp_ns", t == "timestamptz_ns",
				strings.HasPrefix(t, "geometry"), strings.HasPrefix(t, "geography"):
				if found == "" {
					found = fmt.Sprintf("field %q has type %s", name, t)
				}
			}
		case map[string]any:
			switch t["type"] {
			case "struct":
				fs, _ := t["fields"].([]any)
				visitFields(fs)
			case "list":
				visitType(name+".element", t["element"])
			case "map":
				visitType(name+".key", t["key"])
				visitType(name+".value", t["value"])
			}
		}
	}
	visitFields = func(fields []any) {
		for _, f := range fields {
			m, _ := f.(map[string]any)
			name, _ := m["name"].(string)
			for _, k := range []string{"initial-default", "write-default"} {
				if v, ok := m[k]; ok && v != nil && found == "" {
					found = fmt.Sprintf("field %q has a %s", name, k)
				}
			}
			visitType(name, m["type"])
		}
	}
	visitFields(fields2any(s.obj["fields"]))
	return found
}

// columnNames maps field ids to dotted column names (for re-binding
// partition and sort fields to fresh ids).
func columnNames(fields []any) map[int]string {
	out := map[int]string{}
	var visit func(prefix string, fields []any)
	var visitType func(prefix string, t any)
	visitType = func(prefix string, t any) {
		m, ok := t.(map[string]any)
		if !ok {
			return
		}
		switch m["type"] {
		case "struct":
			fs, _ := m["fields"].([]any)
			visit(prefix+".", fs)
		case "list":
			if id, ok := m["element-id"].(float64); ok {
				out[int(id)] = prefix + ".element"
			}
			visitType(prefix+".element", m["element"])
		case "map":
			if id, ok := m["key-id"].(float64); ok {
				out[int(id)] = prefix + ".key"
			}
			if id, ok := m["value-id"].(float64); ok {
				out[int(id)] = prefix + ".value"
			}
			visitType(prefix+".key", m["key"])
			visitType(prefix+".value", m["value"])
		}
	}
	visit = func(prefix string, fields []any) {
		for _, f := range fields {
			m, _ := f.(map[string]any)
			name, _ := m["name"].(string)
			if id, ok := m["id"].(float64); ok {
				out[int(id)] = prefix + name
			}
			visitType(prefix+name, m["type"])
		}
	}
	visit("", fields)
	return out
}

// freshSchema renumbers a schema's field ids from 1 as the spec asks of a
// catalog creating a table: the fields of a struct take the next ids in
// order, then their nested types are numbered, struct by struct; a list's
// element, a map's key and value take theirs before their own types. It
// returns the new schema (id 0) and the old-to-new id mapping.
func freshSchema(s *Schema) (*Schema, map[int]int, error) {
	var fields []any
	if err := json.Unmarshal(s.obj["fields"], &fields); err != nil {
		return nil, nil, err
	}
	next := 0
	ids := map[int]int{}
	renumber := func(m map[string]any, key string) {
		old, _ := m[key].(float64)
		next++
		ids[int(old)] = next
		m[key] = next
	}
	var visitStruct func(fields []any)
	var visitType func(t any)
	visitStruct = func(fields []any) {
		for _, f := range fields {
			renumber(f.(map[string]any), "id")
		}
		for _, f := range fields {
			visitType(f.(map[string]any)["type"])
		}
	}
	visitType = func(t any) {
		m, ok := t.(map[string]any)
		if !ok {
			return
		}
		switch m["type"] {
		case "struct":
			fs, _ := m["fields"].([]any)
			visitStruct(fs)
		case "list":
			renumber(m, "element-id")
			visitType(m["element"])
		case "map":
			renumber(m, "key-id")
			renumber(m, "value-id")
			visitType(m["key"])
			visitType(m["value"])
		}
	}
	visitStruct(fields)
	o := s.obj.clone()
	o.set("fields", fields)
	o.set("schema-id", 0)
	if o.has("identifier-field-ids") {
		var old []int
		if _, err := o.get("identifier-field-ids", &old); err != nil {
			return nil, nil, err
		}
		nw := make([]int, 0, len(old))
		for _, id := range old {
			n, ok := ids[id]
			if !ok {
				return nil, nil, fmt.Errorf("identifier field id %d is not a field of the schema", id)
			}
			nw = append(nw, n)
		}
		o.set("identifier-field-ids", nw)
	}
	b, _ := json.Marshal(o)
	ns, err := parseSchema(b)
	return ns, ids, err
}
