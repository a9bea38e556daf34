package thriftgen

import (
	"context"
	"fmt"
)

// LookupStruct returns the struct, union, exception, <method>_args or <method>_result with the given schema name,
// or nil.
func LookupStruct(name string) *Struct { return structIndex[name] }

// LookupMethod returns the RPC with the given name, or nil.
func LookupMethod(name string) *Method { return methodIndex[name] }

// AllMethods returns every RPC of the canonical API (HMS and fb303), sorted by name. The slice is the caller's.
func AllMethods() []*Method {
	out := make([]*Method, len(methodTable))
	for i := range methodTable {
		out[i] = &methodTable[i]
	}
	return out
}

// AllStructs returns every struct of the schema (including *_args and *_result), sorted by name. The slice is the
// caller's.
func AllStructs() []*Struct {
	out := make([]*Struct, len(structTable))
	for i := range structTable {
		out[i] = &structTable[i]
	}
	return out
}

// LookupEnum returns the enum with the given schema name, or nil.
func LookupEnum(name string) *Enum { return enumIndex[name] }

// AllEnums returns every enum, sorted by name. The slice is the caller's.
func AllEnums() []*Enum {
	out := make([]*Enum, len(enumTable))
	for i := range enumTable {
		out[i] = &enumTable[i]
	}
	return out
}

// Dialect is how one profile numbers the fields of one struct on the wire where that differs from the canonical
// (Apache 4.x) numbering. Its domain is every wire and canonical id in Pairs: a wire id of the domain without a
// pair is not the profile's and is skipped when read; a canonical id of the domain without a pair has no wire id
// in the profile and is not written. Ids outside the domain are the same on the wire and canonically.
//
// The dialects of the schema:
//   - HORTONWORKS_3_1_0_3_1_5_6150_1 Table: wire 23→22 accessType, 24→23 requiredReadCapabilities,
//     25→24 requiredWriteCapabilities; canonical 25 (i64 id, Apache 4.x only) is not sent, wire 22 is skipped.
//   - APACHE_3_1_3 create_ischema_result: wire -1→2 (o2 NoSuchObjectException has no id in 3.1.3's IDL).
//
// HORTONWORKS_3_1_0_3_1_0_78 needs none: its Table is Apache's truncated after field 20.
type Dialect struct {
	Profile ProfileSet // exactly one profile
	Struct  string     // schema name of the struct
	Pairs   []IDPair   // sorted by Wire
}

// IDPair maps one wire id to its canonical id.
type IDPair struct{ Wire, Canonical int16 }

// CanonicalID maps a wire id; ok is false if the id is not this profile's (skip the field).
func (d *Dialect) CanonicalID(wire int16) (id int16, ok bool) {
	inDomain := false
	for _, p := range d.Pairs {
		if p.Wire == wire {
			return p.Canonical, true
		}
		if p.Canonical == wire {
			inDomain = true
		}
	}
	return wire, !inDomain
}

// WireID maps a canonical id; ok is false if the profile has no wire id for it (do not write the field).
func (d *Dialect) WireID(canonical int16) (id int16, ok bool) {
	inDomain := false
	for _, p := range d.Pairs {
		if p.Canonical == canonical {
			return p.Wire, true
		}
		if p.Wire == canonical {
			inDomain = true
		}
	}
	return canonical, !inDomain
}

// LookupDialect returns profile p's dialect of the named struct, or nil if p uses canonical ids for it.
func LookupDialect(p ProfileSet, structName string) *Dialect {
	for i := range dialectTable {
		if d := &dialectTable[i]; d.Profile == p && d.Struct == structName {
			return d
		}
	}
	return nil
}

// TableDialect returns profile p's dialect of Table: non-nil only for ProfileHDP315.
func TableDialect(p ProfileSet) *Dialect { return LookupDialect(p, "Table") }

// AllDialects returns every dialect of the schema. The slice is the caller's.
func AllDialects() []*Dialect {
	out := make([]*Dialect, len(dialectTable))
	for i := range dialectTable {
		out[i] = &dialectTable[i]
	}
	return out
}

type wireProfileKey struct{}

// WithWireProfile returns a context under which the generated Read and Write methods use profile p's wire field
// ids (its dialects): read a message from, or write one to, a peer speaking p. p must be a single profile; 0
// means canonical ids (the default). Only the structs with a dialect for p are affected; everything else is the
// same for all profiles.
func WithWireProfile(ctx context.Context, p ProfileSet) context.Context {
	if p != 0 && !p.Single() {
		panic(fmt.Sprintf("thriftgen.WithWireProfile: %s is not a single profile", p))
	}
	return context.WithValue(ctx, wireProfileKey{}, p)
}

// WireProfileFrom returns the profile set by WithWireProfile, or 0.
func WireProfileFrom(ctx context.Context) ProfileSet {
	p, _ := ctx.Value(wireProfileKey{}).(ProfileSet)
	return p
}

// wireDialect is used by generated code of structs that have dialects.
func wireDialect(ctx context.Context, structName string) *Dialect {
	p := WireProfileFrom(ctx)
	if p == 0 {
		return nil
	}
	return LookupDialect(p, structName)
}
