// Package thriftgen is hms-proxy's canonical Hive Metastore Thrift API: the union of the Apache Hive 3.1.3 and
// 4.1.0 wire schemas (extracted from the real jars) and of Hortonworks HDP 3.1.0.0-78 and 3.1.5 (a checked delta),
// with the profiles that have each method, struct, field and enum value.
//
// Three generated files come from thriftgen/schema.json (see thriftgen/README.md, regenerate with `make generate`):
//   - schema_gen.go: the schema as read-only Go tables (read through lookup.go: LookupStruct, LookupMethod,
//     AllMethods, LookupEnum, …);
//   - types_gen.go: a Go type per struct, union, exception and per <method>_args / <method>_result, with
//     Read/Write on apache/thrift's TProtocol, and a Go type per enum;
//   - client_gen.go: Client, one method per RPC.
//
// This file holds the model types of the tables; codec.go the codec helpers the generated code uses.
// The tables are shared and read-only: never modify a *Struct, *Field, *Method or *Enum returned here.
package thriftgen

import (
	"strconv"
	"strings"

	"github.com/apache/thrift/lib/go/thrift"
)

// ProfileSet is a set of wire profiles (Hive releases). Each profile is one bit.
type ProfileSet uint8

// The profiles, in canonical order. Names are the config values of compatibility.frontend-profile and
// catalog.<name>.runtime-profile.
const (
	ProfileApache313 ProfileSet = 1 << iota // APACHE_3_1_3
	ProfileApache410                        // APACHE_4_1_0
	ProfileHDP78                            // HORTONWORKS_3_1_0_3_1_0_78
	ProfileHDP315                           // HORTONWORKS_3_1_0_3_1_5_6150_1

	// ProfileAll is every profile.
	ProfileAll = ProfileApache313 | ProfileApache410 | ProfileHDP78 | ProfileHDP315
)

var profileNames = [...]struct {
	p    ProfileSet
	name string
}{
	{ProfileApache313, "APACHE_3_1_3"},
	{ProfileApache410, "APACHE_4_1_0"},
	{ProfileHDP78, "HORTONWORKS_3_1_0_3_1_0_78"},
	{ProfileHDP315, "HORTONWORKS_3_1_0_3_1_5_6150_1"},
}

// Has reports whether s contains every profile of p (and p is not empty).
func (s ProfileSet) Has(p ProfileSet) bool { return p != 0 && s&p == p }

// Names returns the config names of the profiles in s, in canonical order.
func (s ProfileSet) Names() []string {
	var out []string
	for _, pn := range profileNames {
		if s&pn.p != 0 {
			out = append(out, pn.name)
		}
	}
	return out
}

// String joins Names with "|"; the empty set is "none".
func (s ProfileSet) String() string {
	if s == 0 {
		return "none"
	}
	return strings.Join(s.Names(), "|")
}

// Single reports whether s is exactly one profile.
func (s ProfileSet) Single() bool { return s != 0 && s&(s-1) == 0 && s&^ProfileAll == 0 }

// ProfileByName returns the profile with the given config name (exact, upper case).
func ProfileByName(name string) (ProfileSet, bool) {
	for _, pn := range profileNames {
		if pn.name == name {
			return pn.p, true
		}
	}
	return 0, false
}

// ProfileNames lists every profile's config name in canonical order.
func ProfileNames() []string { return ProfileAll.Names() }

// Kind is the kind of a Thrift type.
type Kind uint8

// The kinds.
const (
	KindBool Kind = iota + 1
	KindByte
	KindI16
	KindI32
	KindI64
	KindDouble
	KindString
	KindBinary
	KindList
	KindSet
	KindMap
	KindStruct
	KindEnum
)

var kindNames = [...]string{KindBool: "bool", KindByte: "byte", KindI16: "i16", KindI32: "i32", KindI64: "i64",
	KindDouble: "double", KindString: "string", KindBinary: "binary", KindList: "list", KindSet: "set",
	KindMap: "map", KindStruct: "struct", KindEnum: "enum"}

// String returns the kind's name as in schema.json.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// TType is the type's tag on the wire (binary is STRING, an enum is I32).
func (k Kind) TType() thrift.TType {
	switch k {
	case KindBool:
		return thrift.BOOL
	case KindByte:
		return thrift.BYTE
	case KindI16:
		return thrift.I16
	case KindI32, KindEnum:
		return thrift.I32
	case KindI64:
		return thrift.I64
	case KindDouble:
		return thrift.DOUBLE
	case KindString, KindBinary:
		return thrift.STRING
	case KindList:
		return thrift.LIST
	case KindSet:
		return thrift.SET
	case KindMap:
		return thrift.MAP
	case KindStruct:
		return thrift.STRUCT
	}
	return thrift.STOP
}

// Type is a Thrift value type. Name is set for KindStruct and KindEnum (the schema name), Elem for lists and sets,
// Key and Value for maps.
type Type struct {
	Kind             Kind
	Name             string
	Elem, Key, Value *Type
}

// String renders t in Thrift IDL syntax, e.g. map<list<string>,string>.
func (t *Type) String() string {
	if t == nil {
		return "<nil>"
	}
	switch t.Kind {
	case KindList, KindSet:
		return t.Kind.String() + "<" + t.Elem.String() + ">"
	case KindMap:
		return "map<" + t.Key.String() + "," + t.Value.String() + ">"
	case KindStruct, KindEnum:
		return t.Name
	}
	return t.Kind.String()
}

// Requiredness is a field's Thrift requiredness.
type Requiredness uint8

// The requiredness values.
const (
	RequirednessDefault Requiredness = iota
	RequirednessRequired
	RequirednessOptional
)

// String returns "default", "required" or "optional".
func (r Requiredness) String() string {
	switch r {
	case RequirednessDefault:
		return "default"
	case RequirednessRequired:
		return "required"
	case RequirednessOptional:
		return "optional"
	}
	return "Requiredness(" + strconv.Itoa(int(r)) + ")"
}

// Field is one field of a struct. Required is the canonical requiredness: required if every profile requires it,
// else optional if any profile has it optional, else default. RequiredIn and OptionalIn hold the profiles where
// the field is required / optional when that differs from Required (see RequirednessIn). GoName is the field's
// name in the generated Go type.
type Field struct {
	ID         int16
	Name       string
	GoName     string
	Type       *Type
	Required   Requiredness
	Profiles   ProfileSet
	RequiredIn ProfileSet
	OptionalIn ProfileSet
	// Default is the IDL default ("6: optional bool reallocate = false"), the same in every profile that has the
	// field; nil when the IDL gives none.
	Default *Default
}

// Default is a field's IDL default: Int holds a bool (0 or 1), an integer or an enum's number, Str a string.
type Default struct {
	Int int64
	Str string
}

// RequirednessIn returns the field's requiredness in profile p (a single profile). For example
// GetValidWriteIdsRequest.validTxnList is optional canonically but required in APACHE_3_1_3.
func (f *Field) RequirednessIn(p ProfileSet) Requiredness {
	switch {
	case f.Required == RequirednessRequired || f.RequiredIn.Has(p):
		return RequirednessRequired
	case f.Required == RequirednessOptional && (f.OptionalIn == 0 || f.OptionalIn.Has(p)):
		return RequirednessOptional
	}
	return RequirednessDefault
}

// StructKind says whether a struct is a plain struct, a union or an exception.
type StructKind uint8

// The struct kinds.
const (
	StructKindStruct StructKind = iota + 1
	StructKindUnion
	StructKindException
)

// String returns "struct", "union" or "exception".
func (k StructKind) String() string {
	switch k {
	case StructKindStruct:
		return "struct"
	case StructKindUnion:
		return "union"
	case StructKindException:
		return "exception"
	}
	return "StructKind(" + strconv.Itoa(int(k)) + ")"
}

// Struct is a struct, union or exception of the schema, including the <method>_args and <method>_result structs.
// Fields are in wire order: the order Java peers write them (IDL declaration order, which is not always id order).
// GoName is the generated Go type.
type Struct struct {
	Name     string
	GoName   string
	Kind     StructKind
	Fields   []*Field
	Profiles ProfileSet
}

// FieldByID returns the field with canonical id id, or nil.
func (s *Struct) FieldByID(id int16) *Field {
	for _, f := range s.Fields {
		if f.ID == id {
			return f
		}
	}
	return nil
}

// FieldByName returns the field with the given Thrift name, or nil.
func (s *Struct) FieldByName(name string) *Field {
	for _, f := range s.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// Method is one RPC. Result is nil for oneway methods. Service is "ThriftHiveMetastore" or "FacebookService"
// (fb303's 13 methods, which every HMS serves). GoName is the Client method.
type Method struct {
	Name     string
	GoName   string
	Oneway   bool
	Args     *Struct
	Result   *Struct
	Profiles ProfileSet
	Service  string
}

// EnumValue is one value of an enum.
type EnumValue struct {
	Name     string
	Value    int32
	Profiles ProfileSet
}

// Enum is a Thrift enum; Values are sorted by value. GoName is the generated Go type.
type Enum struct {
	Name     string
	GoName   string
	Values   []*EnumValue
	Profiles ProfileSet
}

// ValueByName returns the value with the given name, or nil.
func (e *Enum) ValueByName(name string) *EnumValue {
	for _, v := range e.Values {
		if v.Name == name {
			return v
		}
	}
	return nil
}

// ValueByNumber returns the value with the given number, or nil (values unknown to the schema are legal on the
// wire and passed through unchanged by the generated code).
func (e *Enum) ValueByNumber(n int32) *EnumValue {
	for _, v := range e.Values {
		if v.Value == n {
			return v
		}
	}
	return nil
}
