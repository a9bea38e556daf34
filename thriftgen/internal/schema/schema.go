// Package schema is the JSON model of thriftgen/schema.json and of the per-profile files the Java extractor writes:
// loading, deterministic writing, validation, the HDP delta and the merge of profiles into the canonical union.
package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Profile names, in canonical order (the order of bits in the generated ProfileSet).
const (
	Apache313 = "APACHE_3_1_3"
	Apache410 = "APACHE_4_1_0"
	HDP78     = "HORTONWORKS_3_1_0_3_1_0_78"
	HDP315    = "HORTONWORKS_3_1_0_3_1_5_6150_1"
)

// ProfileOrder lists every profile name in canonical order.
var ProfileOrder = []string{Apache313, Apache410, HDP78, HDP315}

// ProfileIndex returns the position of p in ProfileOrder, or -1.
func ProfileIndex(p string) int {
	for i, n := range ProfileOrder {
		if n == p {
			return i
		}
	}
	return -1
}

// Requiredness values as written in JSON.
const (
	ReqDefault  = "default"
	ReqRequired = "required"
	ReqOptional = "optional"
)

// Struct kinds as written in JSON.
const (
	KindStruct    = "struct"
	KindUnion     = "union"
	KindException = "exception"
)

// Type is a Thrift value type.
type Type struct {
	Kind  string `json:"kind"`
	Name  string `json:"name,omitempty"`
	Elem  *Type  `json:"elem,omitempty"`
	Key   *Type  `json:"key,omitempty"`
	Value *Type  `json:"value,omitempty"`
}

// BaseKinds are the kinds without parameters.
var BaseKinds = map[string]bool{"bool": true, "byte": true, "i16": true, "i32": true, "i64": true,
	"double": true, "string": true, "binary": true}

// String renders t in Thrift IDL syntax.
func (t *Type) String() string {
	if t == nil {
		return "<nil>"
	}
	switch t.Kind {
	case "list", "set":
		return t.Kind + "<" + t.Elem.String() + ">"
	case "map":
		return "map<" + t.Key.String() + "," + t.Value.String() + ">"
	case "struct", "enum":
		return t.Name
	}
	return t.Kind
}

// Equal reports whether t and u are the same type.
func (t *Type) Equal(u *Type) bool {
	if t == nil || u == nil {
		return t == u
	}
	return t.Kind == u.Kind && t.Name == u.Name && t.Elem.Equal(u.Elem) && t.Key.Equal(u.Key) && t.Value.Equal(u.Value)
}

// Field is one field of a struct.
type Field struct {
	ID       int16  `json:"id"`
	Name     string `json:"name"`
	Required string `json:"required"`
	Type     *Type  `json:"type"`
	// Default is the field's IDL default as a JSON literal (true, -1, "hive"; an enum's number), absent when the
	// IDL gives none. The extractor reads it from the no-arg constructor the Thrift compiler generates.
	Default    json.RawMessage `json:"default,omitempty"`
	Profiles   []string        `json:"profiles"`
	RequiredIn []string        `json:"requiredIn,omitempty"`
	// OptionalIn lists, for a field that is optional in the canonical schema but not in every profile that has
	// it, the profiles where it is optional; the others have it as default (e.g. union members, which the
	// Thrift 0.9.3 compiler of Hive 3.1.3 marks default and that of 4.x optional).
	OptionalIn []string `json:"optionalIn,omitempty"`
}

// Struct is a struct, union or exception, including the *_args and *_result structs of methods.
// Fields are in wire (declaration) order, which is the order Java peers write them.
type Struct struct {
	Kind     string   `json:"kind"`
	Profiles []string `json:"profiles"`
	Fields   []*Field `json:"fields"`
}

// FieldByID returns the field with the given id, or nil.
func (s *Struct) FieldByID(id int16) *Field {
	for _, f := range s.Fields {
		if f.ID == id {
			return f
		}
	}
	return nil
}

// FieldByName returns the field with the given name, or nil.
func (s *Struct) FieldByName(name string) *Field {
	for _, f := range s.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// EnumValue is one value of an enum.
type EnumValue struct {
	Name     string   `json:"name"`
	Value    int32    `json:"value"`
	Profiles []string `json:"profiles"`
}

// Enum is a Thrift enum; Values are sorted by value.
type Enum struct {
	Profiles []string     `json:"profiles"`
	Values   []*EnumValue `json:"values"`
}

// Method is one RPC.
type Method struct {
	Name     string   `json:"name"`
	Oneway   bool     `json:"oneway"`
	Args     string   `json:"args"`
	Result   string   `json:"result,omitempty"`
	Profiles []string `json:"profiles"`
	Service  string   `json:"service"`
}

// Dialect maps the wire field ids one profile uses for one struct to canonical ids. Its domain is the set of keys
// and values: a wire id in the domain that is no key is skipped on read, a canonical id in the domain that is no
// value is not written. Ids outside the domain are the same on the wire and in the canonical schema.
type Dialect struct {
	WireToCanonical map[string]int16 `json:"wireToCanonical"`
}

// Pairs returns the wire→canonical pairs sorted by wire id.
func (d *Dialect) Pairs() ([][2]int16, error) {
	var out [][2]int16
	for k, v := range d.WireToCanonical {
		w, err := strconv.ParseInt(k, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("dialect wire id %q is not an int16", k)
		}
		out = append(out, [2]int16{int16(w), v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out, nil
}

// JarRef names one jar the metadata was read from.
type JarRef struct {
	Jar    string `json:"jar"`
	Sha256 string `json:"sha256"`
}

// Schema is either one profile's schema (Source set) or the canonical union (Sources and Dialects set).
type Schema struct {
	Profiles []string                       `json:"profiles"`
	Source   map[string]JarRef              `json:"source,omitempty"`
	Sources  map[string]map[string]JarRef   `json:"sources,omitempty"`
	Enums    map[string]*Enum               `json:"enums"`
	Structs  map[string]*Struct             `json:"structs"`
	Methods  []*Method                      `json:"methods"`
	Dialects map[string]map[string]*Dialect `json:"dialects,omitempty"`
}

// Method returns the method with the given name, or nil.
func (s *Schema) Method(name string) *Method {
	for _, m := range s.Methods {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// Load reads a schema file.
func Load(path string) (*Schema, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b, path)
}

// Parse decodes a schema; unknown keys are errors.
func Parse(b []byte, what string) (*Schema, error) {
	var s Schema
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &s, nil
}

// checkDefault reports whether lit is a value of type t that the schema format can hold: a bool, an integer in the
// type's range, a string, or a number of the enum.
func (s *Schema) checkDefault(t *Type, lit json.RawMessage) error {
	var v any
	dec := json.NewDecoder(bytes.NewReader(lit))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	bits := map[string]int{"byte": 8, "i16": 16, "i32": 32, "i64": 64, "enum": 32}
	switch t.Kind {
	case "bool":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("not a bool")
		}
	case "string", "binary":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("not a string")
		}
	case "byte", "i16", "i32", "i64", "enum":
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("not an integer")
		}
		i, err := strconv.ParseInt(n.String(), 10, bits[t.Kind])
		if err != nil {
			return fmt.Errorf("not a %s: %v", t.Kind, err)
		}
		if t.Kind == "enum" {
			e := s.Enums[t.Name]
			found := false
			for _, ev := range e.Values {
				found = found || int64(ev.Value) == i
			}
			if !found {
				return fmt.Errorf("%d is no value of enum %s", i, t.Name)
			}
		}
	default:
		return fmt.Errorf("a %s field cannot have a default in the schema", t)
	}
	return nil
}

// Validate checks references, profiles and ids.
func (s *Schema) Validate() error {
	known := map[string]bool{}
	for _, p := range s.Profiles {
		if ProfileIndex(p) < 0 {
			return fmt.Errorf("unknown profile %q (known: %s)", p, strings.Join(ProfileOrder, ", "))
		}
		known[p] = true
	}
	sub := func(what string, ps, of []string) error {
		if len(ps) == 0 {
			return fmt.Errorf("%s: empty profiles", what)
		}
		in := map[string]bool{}
		for _, p := range of {
			in[p] = true
		}
		for _, p := range ps {
			if !in[p] {
				return fmt.Errorf("%s: profile %q not among its container's profiles %v", what, p, of)
			}
		}
		return nil
	}
	var checkType func(where string, t *Type) error
	checkType = func(where string, t *Type) error {
		if t == nil {
			return fmt.Errorf("%s: missing type", where)
		}
		switch {
		case BaseKinds[t.Kind]:
			if t.Name != "" || t.Elem != nil || t.Key != nil || t.Value != nil {
				return fmt.Errorf("%s: base type %s with parameters", where, t.Kind)
			}
		case t.Kind == "list" || t.Kind == "set":
			return checkType(where+"[]", t.Elem)
		case t.Kind == "map":
			if err := checkType(where+"{key}", t.Key); err != nil {
				return err
			}
			return checkType(where+"{value}", t.Value)
		case t.Kind == "struct":
			if s.Structs[t.Name] == nil {
				return fmt.Errorf("%s: unknown struct %q", where, t.Name)
			}
		case t.Kind == "enum":
			if s.Enums[t.Name] == nil {
				return fmt.Errorf("%s: unknown enum %q", where, t.Name)
			}
		default:
			return fmt.Errorf("%s: unknown type kind %q", where, t.Kind)
		}
		return nil
	}
	for name, e := range s.Enums {
		if err := sub("enum "+name, e.Profiles, s.Profiles); err != nil {
			return err
		}
		seen := map[string]bool{}
		for i, v := range e.Values {
			if err := sub("enum value "+name+"."+v.Name, v.Profiles, e.Profiles); err != nil {
				return err
			}
			if seen[v.Name] {
				return fmt.Errorf("enum %s: duplicate value name %s", name, v.Name)
			}
			seen[v.Name] = true
			if i > 0 && e.Values[i-1].Value >= v.Value {
				return fmt.Errorf("enum %s: values not strictly ascending at %s", name, v.Name)
			}
		}
	}
	for name, st := range s.Structs {
		if _, ok := s.Enums[name]; ok {
			return fmt.Errorf("%s is both a struct and an enum", name)
		}
		switch st.Kind {
		case KindStruct, KindUnion, KindException:
		default:
			return fmt.Errorf("struct %s: unknown kind %q", name, st.Kind)
		}
		if err := sub("struct "+name, st.Profiles, s.Profiles); err != nil {
			return err
		}
		ids, names := map[int16]bool{}, map[string]bool{}
		for _, f := range st.Fields {
			where := name + "." + f.Name
			if ids[f.ID] || names[f.Name] {
				return fmt.Errorf("struct %s: duplicate field id %d or name %s", name, f.ID, f.Name)
			}
			ids[f.ID], names[f.Name] = true, true
			switch f.Required {
			case ReqDefault, ReqRequired, ReqOptional:
			default:
				return fmt.Errorf("%s: unknown requiredness %q", where, f.Required)
			}
			if err := sub("field "+where, f.Profiles, st.Profiles); err != nil {
				return err
			}
			if f.Default != nil {
				if err := s.checkDefault(f.Type, f.Default); err != nil {
					return fmt.Errorf("%s: default %s: %v", where, f.Default, err)
				}
			}
			if len(f.RequiredIn) > 0 {
				if f.Required == ReqRequired {
					return fmt.Errorf("%s: requiredIn on a required field", where)
				}
				if err := sub("requiredIn of "+where, f.RequiredIn, f.Profiles); err != nil {
					return err
				}
			}
			if len(f.OptionalIn) > 0 {
				if f.Required != ReqOptional {
					return fmt.Errorf("%s: optionalIn on a %s field", where, f.Required)
				}
				if err := sub("optionalIn of "+where, f.OptionalIn, f.Profiles); err != nil {
					return err
				}
				for _, p := range f.OptionalIn {
					if contains(f.RequiredIn, p) {
						return fmt.Errorf("%s: %s is in both requiredIn and optionalIn", where, p)
					}
				}
			}
			if err := checkType(where, f.Type); err != nil {
				return err
			}
		}
	}
	seenM := map[string]bool{}
	for i, m := range s.Methods {
		if seenM[m.Name] {
			return fmt.Errorf("duplicate method %s", m.Name)
		}
		seenM[m.Name] = true
		if i > 0 && s.Methods[i-1].Name >= m.Name {
			return fmt.Errorf("methods not sorted by name at %s", m.Name)
		}
		if err := sub("method "+m.Name, m.Profiles, s.Profiles); err != nil {
			return err
		}
		if m.Service != "ThriftHiveMetastore" && m.Service != "FacebookService" {
			return fmt.Errorf("method %s: unknown service %q", m.Name, m.Service)
		}
		if m.Args != m.Name+"_args" {
			return fmt.Errorf("method %s: args struct %q, want %s_args", m.Name, m.Args, m.Name)
		}
		want := m.Name + "_result"
		if m.Oneway {
			want = ""
		}
		if m.Result != want {
			return fmt.Errorf("method %s: result struct %q, want %q", m.Name, m.Result, want)
		}
		for _, sn := range []string{m.Args, m.Result} {
			if sn == "" {
				continue
			}
			st := s.Structs[sn]
			if st == nil {
				return fmt.Errorf("method %s: no struct %s", m.Name, sn)
			}
			if strings.Join(st.Profiles, ",") != strings.Join(m.Profiles, ",") {
				return fmt.Errorf("method %s: struct %s has profiles %v, method %v", m.Name, sn, st.Profiles, m.Profiles)
			}
		}
		if m.Result != "" {
			for _, f := range s.Structs[m.Result].Fields {
				if f.ID == 0 && f.Name != "success" {
					return fmt.Errorf("method %s: result field 0 is %q, want success", m.Name, f.Name)
				}
			}
		}
	}
	for p, byStruct := range s.Dialects {
		if !known[p] {
			return fmt.Errorf("dialect for unknown profile %q", p)
		}
		for sn, d := range byStruct {
			st := s.Structs[sn]
			if st == nil {
				return fmt.Errorf("dialect %s: unknown struct %s", p, sn)
			}
			pairs, err := d.Pairs()
			if err != nil {
				return fmt.Errorf("dialect %s %s: %w", p, sn, err)
			}
			canon := map[int16]bool{}
			for _, kv := range pairs {
				f := st.FieldByID(kv[1])
				if f == nil {
					return fmt.Errorf("dialect %s %s: canonical id %d is no field", p, sn, kv[1])
				}
				if !contains(f.Profiles, p) {
					return fmt.Errorf("dialect %s %s: canonical field %s is not in profile %s", p, sn, f.Name, p)
				}
				if canon[kv[1]] {
					return fmt.Errorf("dialect %s %s: canonical id %d mapped twice", p, sn, kv[1])
				}
				canon[kv[1]] = true
			}
		}
	}
	return nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Marshal writes s deterministically: maps sorted by key, one field / enum value / method per line.
func (s *Schema) Marshal() ([]byte, error) {
	var b bytes.Buffer
	js := func(v any) string {
		out, err := json.Marshal(v)
		if err != nil {
			panic(err) // only plain data is marshalled here
		}
		return string(out)
	}
	b.WriteString("{\n")
	fmt.Fprintf(&b, " \"profiles\": %s,\n", js(s.Profiles))
	if s.Source != nil {
		fmt.Fprintf(&b, " \"source\": %s,\n", js(s.Source))
	}
	if s.Sources != nil {
		fmt.Fprintf(&b, " \"sources\": {")
		for i, p := range sortedKeys(s.Sources) {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "\n  %s: %s", js(p), js(s.Sources[p]))
		}
		b.WriteString("\n },\n")
	}
	b.WriteString(" \"enums\": {")
	for i, name := range sortedKeys(s.Enums) {
		e := s.Enums[name]
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n  %s: {\"profiles\": %s, \"values\": [", js(name), js(e.Profiles))
		for j, v := range e.Values {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "\n   %s", js(v))
		}
		b.WriteString("]}")
	}
	b.WriteString("\n },\n \"structs\": {")
	for i, name := range sortedKeys(s.Structs) {
		st := s.Structs[name]
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n  %s: {\"kind\": %s, \"profiles\": %s, \"fields\": [", js(name), js(st.Kind), js(st.Profiles))
		for j, f := range st.Fields {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "\n   %s", js(f))
		}
		b.WriteString("]}")
	}
	b.WriteString("\n },\n \"methods\": [")
	for i, m := range s.Methods {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n  %s", js(m))
	}
	b.WriteString("\n ]")
	if s.Dialects != nil {
		b.WriteString(",\n \"dialects\": ")
		b.WriteString(js(s.Dialects))
	}
	b.WriteString("\n}\n")
	// the output must parse back to the same schema
	if _, err := Parse(b.Bytes(), "marshalled schema"); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// SortProfiles sorts profile names into canonical order and removes duplicates.
func SortProfiles(ps []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return ProfileIndex(out[i]) < ProfileIndex(out[j]) })
	return out
}

// Clone deep-copies s via JSON.
func (s *Schema) Clone() *Schema {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	var c Schema
	if err := json.Unmarshal(b, &c); err != nil {
		panic(err)
	}
	return &c
}

// Relabel replaces every profiles list in a single-profile schema with [p].
func (s *Schema) Relabel(p string) {
	one := []string{p}
	s.Profiles = one
	for _, e := range s.Enums {
		e.Profiles = one
		for _, v := range e.Values {
			v.Profiles = one
		}
	}
	for _, st := range s.Structs {
		st.Profiles = one
		for _, f := range st.Fields {
			f.Profiles = one
			f.RequiredIn = nil
			f.OptionalIn = nil
		}
	}
	for _, m := range s.Methods {
		m.Profiles = one
	}
}
