package wire

import (
	"fmt"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Strict reading: what the proxy forwards, Hive's own generated reader must
// parse into the same call with the same fields.
//
// Hive's generated Java reader (libthrift 0.9.3) reads a known field of the
// expected wire type by the schema, and then reads container elements by the
// schema's element type whatever the container header says; it skips an
// unknown field, or a known one of another wire type, by the wire type; and
// its skip does nothing at all for a wire type it does not know (void, uuid,
// anything above 15). A generic walk that trusts the header would find a
// different end of the message than Hive does, so the bytes after Hive's end
// would be, to Hive, a second request the proxy never saw. Strict reading
// refuses every message on which the two could disagree:
//   - a known field (of the profile's struct) with another wire type;
//   - a container whose element, key or value types differ from the schema;
//   - a wire type Hive's Thrift does not read, anywhere (unknown fields too);
//   - a message type other than CALL (or ONEWAY, for the methods declared oneway);
//   - a union (of the schema) that does not hold exactly one field: Hive's
//     union reader reads one field and then one field header more, taking it
//     for the STOP, so a second field (or the byte after an empty union) is
//     read as something else than what it is;
//   - a struct without a field that is required in the profile, or with a
//     required enum field holding a number no Hive version defines (Hive
//     reads it as null, so the field is unset): Hive's reader checks required
//     fields at the end of each struct and throws there, in the middle of the
//     call; its server answers PROTOCOL_ERROR and reads the rest of the call
//     as the next message (which it then refuses, closing the session).
//
// Unknown field ids of valid wire types still pass byte for byte.

// Reasons of a StrictError (the hms_proxy_bad_frames_total reason label).
const (
	ReasonFieldType   = "field_type"
	ReasonElementType = "element_type"
	ReasonUnknownType = "unknown_type"
	ReasonMessageType = "message_type"
	ReasonUnion       = "union"
	ReasonRequired    = "required_field"
)

// StrictError is a message refused by strict reading. The header was read, so
// the caller can answer the client with a TApplicationException before it
// closes the connection.
type StrictError struct {
	Reason string
	Header Header
	Offset int // of the offending byte, from the start of the message
	Detail string
}

func (e *StrictError) Error() string {
	return fmt.Sprintf("%s: %s (at byte %d)", e.Header.Name, e.Detail, e.Offset)
}

// Unwrap makes a StrictError an ErrMalformed.
func (e *StrictError) Unwrap() error { return ErrMalformed }

// validType reports whether libthrift 0.9.3 (Hive 3.1.3's and HDP's Thrift)
// and 0.16 (Hive 4.1's) read the wire type: its skip silently consumes
// nothing for any other, which desynchronises the stream.
func validType(t byte) bool {
	switch t {
	case TBool, TByte, TDouble, TI16, TI32, TI64, TString, TStruct, TMap, TSet, TList:
		return true
	}
	return false
}

var typeNames = [...]string{TStop: "stop", TVoid: "void", TBool: "bool", TByte: "byte", TDouble: "double",
	5: "type 5", TI16: "i16", 7: "type 7", TI32: "i32", 9: "type 9", TI64: "i64", TString: "string",
	TStruct: "struct", TMap: "map", TSet: "set", TList: "list", TUUID: "uuid"}

func typeName(t byte) string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("type %d", t)
}

// stype is the expected type of a value: its wire type, the struct for
// structs, and the element (list/set element, map value) and key types.
type stype struct {
	wire      byte
	st        *sstruct
	elem, key *stype
	name      string // schema spelling, for messages
	// enum is set for a required enum field: a number it does not define
	// leaves the field unset in Hive's reader.
	enum *thriftgen.Enum
}

// sstruct is the strict view of one struct for one profile: field id →
// expected type, with the profile's field-id dialect applied.
type sstruct struct {
	name    string
	direct  [64]*stype
	fields  map[int16]*stype // ids outside 0..63
	names   map[int16]string
	dialect *thriftgen.Dialect
	union   bool
	// required are the canonical ids of the fields required in the profile:
	// bits 0..63 in reqMask, any other id in reqOther.
	reqMask  uint64
	reqOther []int16
}

func inside(l loc) loc { l.in = true; return l }

func (s *sstruct) field(wireID int16) (*stype, int16) {
	id := wireID
	if s.dialect != nil {
		c, ok := s.dialect.CanonicalID(wireID)
		if !ok {
			return nil, wireID // in the dialect's domain, not this profile's: an unknown field
		}
		id = c
	}
	if id >= 0 && id < 64 {
		return s.direct[id], id
	}
	return s.fields[id], id
}

// StrictSchema is the strict view of the canonical schema as one front-door
// profile's clients number it. Build it once per profile; it is read-only
// afterwards and safe for concurrent use.
type StrictSchema struct {
	profile thriftgen.ProfileSet
	structs map[string]*sstruct
	methods map[string]strictMethod
}

type strictMethod struct {
	args   *sstruct
	oneway bool
}

// NewStrictSchema compiles the strict view for a profile (0: canonical ids).
// Every field of the canonical schema is known, whatever profile has it: the
// proxy may forward to a runtime of any version, and each reads the fields it
// knows by its schema.
func NewStrictSchema(profile thriftgen.ProfileSet) (*StrictSchema, error) {
	s := &StrictSchema{profile: profile, structs: map[string]*sstruct{}, methods: map[string]strictMethod{}}
	for _, m := range thriftgen.AllMethods() {
		a, err := s.compile(m.Args.Name)
		if err != nil {
			return nil, err
		}
		s.methods[m.Name] = strictMethod{args: a, oneway: m.Oneway}
	}
	return s, nil
}

func (s *StrictSchema) compile(name string) (*sstruct, error) {
	if st, ok := s.structs[name]; ok {
		return st, nil
	}
	def := thriftgen.LookupStruct(name)
	if def == nil {
		return nil, fmt.Errorf("wire: struct %q is not in the canonical schema", name)
	}
	st := &sstruct{name: name, fields: map[int16]*stype{}, names: map[int16]string{}, union: def.Kind == thriftgen.StructKindUnion}
	s.structs[name] = st // before the fields: recursive types refer to it
	if s.profile != 0 {
		for _, d := range thriftgen.AllDialects() {
			if d.Profile == s.profile && d.Struct == name {
				st.dialect = d
			}
		}
	}
	for _, f := range def.Fields {
		t, err := s.typeOf(f.Type)
		if err != nil {
			return nil, err
		}
		if s.required(f) {
			if f.ID >= 0 && f.ID < 64 {
				st.reqMask |= 1 << uint(f.ID)
			} else {
				st.reqOther = append(st.reqOther, f.ID)
			}
			if f.Type.Kind == thriftgen.KindEnum {
				e := *t
				e.enum = thriftgen.LookupEnum(f.Type.Name)
				t = &e
			}
		}
		st.names[f.ID] = f.Name
		if f.ID >= 0 && f.ID < 64 {
			st.direct[f.ID] = t
		} else {
			st.fields[f.ID] = t
		}
	}
	return st, nil
}

// required reports whether the Hive reader that gets f insists on it. For a
// field the profile has, the profile's own requiredness
// (GetValidWriteIdsRequest.validTxnList is required in 3.1.3 only; the
// compatibility layer fills it in for 3.1.3 backends of other front doors).
// A field the profile lacks (or every field, for profile 0) can only be meant
// for a backend of a version that has it: required if required in any.
func (s *StrictSchema) required(f *thriftgen.Field) bool {
	if s.profile != 0 && f.Profiles.Has(s.profile) {
		return f.RequirednessIn(s.profile) == thriftgen.RequirednessRequired
	}
	return f.Required == thriftgen.RequirednessRequired || f.RequiredIn != 0
}

func (s *StrictSchema) typeOf(t *thriftgen.Type) (*stype, error) {
	out := &stype{wire: WireType(t), name: t.String()}
	var err error
	switch t.Kind {
	case thriftgen.KindStruct:
		out.st, err = s.compile(t.Name)
	case thriftgen.KindList, thriftgen.KindSet:
		out.elem, err = s.typeOf(t.Elem)
	case thriftgen.KindMap:
		if out.key, err = s.typeOf(t.Key); err == nil {
			out.elem, err = s.typeOf(t.Value)
		}
	}
	return out, err
}

// Method returns the strict view of a method's arguments; known is false for
// a name outside the canonical API.
func (s *StrictSchema) Method(name string) (args *sstruct, oneway, known bool) {
	m, ok := s.methods[name]
	return m.args, m.oneway, ok
}

// loc names where a value sits, formatted only when a message is refused.
type loc struct {
	st   *sstruct // the struct holding the field; nil: the arguments of the method
	id   int16
	in   bool // inside a container of that field
	name string
}

func (l loc) String() string {
	if l.st == nil {
		return l.name + " arguments"
	}
	f := fmt.Sprintf("%s field %d", l.st.name, l.id)
	if n, ok := l.st.names[l.id]; ok {
		f = fmt.Sprintf("%s.%s (field %d)", l.st.name, n, l.id)
	}
	if l.in {
		return "an element of " + f
	}
	return f
}

// strictReader walks one message body, refusing what Hive could read
// differently.
type strictReader struct {
	b   *Buf
	h   *Header
	off int // offset of b.B[0] within the message, for messages
}

func (r *strictReader) fail(reason string, format string, args ...any) error {
	return &StrictError{Reason: reason, Header: *r.h, Offset: r.off + r.b.Pos, Detail: fmt.Sprintf(format, args...)}
}

// value reads one value of wire type t; want is the schema's type (nil for
// unknown fields, which are read generically but still strictly).
func (r *strictReader) value(t byte, want *stype, where loc, depth int) error {
	if depth > MaxDepth {
		return perr(ErrMalformed, r.b.Pos, "nesting deeper than %d", MaxDepth)
	}
	if !validType(t) {
		return r.fail(ReasonUnknownType, "%s has wire type %s, which Hive's Thrift cannot read", where, typeName(t))
	}
	switch t {
	case TStruct:
		var st *sstruct
		if want != nil {
			st = want.st
		}
		return r.structBody(st, where, depth)
	case TList, TSet:
		et, n, err := r.b.ListHeader()
		if err != nil {
			return err
		}
		var elem *stype
		if want != nil {
			elem = want.elem
			if et != elem.wire {
				return r.fail(ReasonElementType, "%s is a %s of %s, the schema says %s", where, typeName(t), typeName(et), want.name)
			}
		}
		if !validType(et) {
			return r.fail(ReasonUnknownType, "%s has elements of wire type %s, which Hive's Thrift cannot read", where, typeName(et))
		}
		return r.elems(n, where, depth, et, elem)
	case TMap:
		kt, vt, n, err := r.b.MapHeader()
		if err != nil {
			return err
		}
		var key, val *stype
		if want != nil {
			key, val = want.key, want.elem
			if kt != key.wire || vt != val.wire {
				return r.fail(ReasonElementType, "%s is a map<%s,%s>, the schema says %s", where, typeName(kt), typeName(vt), want.name)
			}
		}
		if !validType(kt) || !validType(vt) {
			return r.fail(ReasonUnknownType, "%s is a map<%s,%s>, which Hive's Thrift cannot read", where, typeName(kt), typeName(vt))
		}
		return r.mapElems(n, where, depth, kt, vt, key, val)
	case TI32:
		if want != nil && want.enum != nil {
			at := r.b.Pos
			n, err := r.b.I32()
			if err != nil {
				return err
			}
			if want.enum.ValueByNumber(n) == nil {
				r.b.Pos = at
				return r.fail(ReasonRequired, "%s is required and holds %d, which is not a value of %s in any Hive version; Hive's reader would leave it unset and stop in the middle of the call", where, n, want.enum.Name)
			}
			return nil
		}
	}
	return r.b.Skip(t, depth)
}

// elems reads n elements of wire type et; fixed-width ones arithmetically.
func (r *strictReader) elems(n int, where loc, depth int, et byte, want *stype) error {
	if w := fixedSize(et); w > 0 {
		return r.b.skipElems(n, depth, et)
	}
	for i := 0; i < n; i++ {
		if err := r.value(et, want, inside(where), depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (r *strictReader) mapElems(n int, where loc, depth int, kt, vt byte, key, val *stype) error {
	if fixedSize(kt) > 0 && fixedSize(vt) > 0 {
		return r.b.skipElems(n, depth, kt, vt)
	}
	for i := 0; i < n; i++ {
		if err := r.value(kt, key, inside(where), depth+1); err != nil {
			return err
		}
		if err := r.value(vt, val, inside(where), depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (r *strictReader) structBody(st *sstruct, where loc, depth int) error {
	if depth > MaxDepth {
		return perr(ErrMalformed, r.b.Pos, "nesting deeper than %d", MaxDepth)
	}
	var seen uint64
	var seenOther []int16
	for n := 0; ; n++ {
		t, id, err := r.b.FieldHeader()
		if err != nil {
			return err
		}
		if st != nil && st.union && (n == 1) != (t == TStop) {
			if t == TStop {
				r.b.Pos--
				return r.fail(ReasonUnion, "%s (union %s) holds no field; Hive's reader would take the next field header for its end", where, st.name)
			}
			r.b.Pos -= 3
			return r.fail(ReasonUnion, "%s (union %s) holds a second field (%d); Hive's reader reads only the first", where, st.name, id)
		}
		if t == TStop {
			if st != nil {
				r.b.Pos--
				if err := r.requiredSeen(st, where, seen, seenOther); err != nil {
					return err
				}
				r.b.Pos++
			}
			return nil
		}
		var want *stype
		fieldWhere := where
		if st != nil {
			var canon int16
			want, canon = st.field(id)
			fieldWhere = loc{st: st, id: canon}
			if want != nil && t != want.wire {
				return r.fail(ReasonFieldType, "%s has wire type %s, the schema says %s", fieldWhere, typeName(t), want.name)
			}
			if want != nil {
				if canon >= 0 && canon < 64 {
					seen |= 1 << uint(canon)
				} else if len(st.reqOther) > 0 {
					seenOther = append(seenOther, canon)
				}
			}
		}
		if err := r.value(t, want, fieldWhere, depth+1); err != nil {
			return err
		}
	}
}

// requiredSeen fails when a field required in st was not among those read
// (the reader is at the struct's STOP).
func (r *strictReader) requiredSeen(st *sstruct, where loc, seen uint64, seenOther []int16) error {
	missing := -1
	if m := st.reqMask &^ seen; m != 0 {
		for id := 0; id < 64; id++ {
			if m&(1<<uint(id)) != 0 {
				missing = id
				break
			}
		}
	}
	if missing < 0 {
	next:
		for _, id := range st.reqOther {
			for _, s := range seenOther {
				if s == id {
					continue next
				}
			}
			missing = int(id)
			break
		}
	}
	if missing < 0 {
		return nil
	}
	f := loc{st: st, id: int16(missing)}
	return r.fail(ReasonRequired, "%s is required and missing (in %s); Hive's reader would stop in the middle of the call", f, where)
}

// readStrict walks a call's body in b (positioned at the body) with the
// strict view of its method. off is the body's offset in the message.
func (s *StrictSchema) readStrict(b *Buf, h *Header, off int) error {
	args, oneway, known := s.Method(h.Name)
	r := strictReader{b: b, h: h, off: off - b.Pos}
	switch {
	case h.Type != Call && h.Type != Oneway:
		return r.fail(ReasonMessageType, "message type %d is not a call", h.Type)
	case h.Type == Oneway && !(known && oneway):
		// Hive's server answers such a call anyway, and nobody would read
		// that answer: it would wait on the backend session for the next
		// client. (A CALL of a oneway method is harmless: the proxy answers
		// fb303's shutdown and reinitialize itself.)
		return r.fail(ReasonMessageType, "%s is not declared oneway and must be sent as CALL, not ONEWAY", h.Name)
	}
	if !known {
		args = nil
	}
	return r.structBody(args, loc{name: h.Name}, 0)
}

// CheckCall parses raw as one complete CALL message strictly (the
// differential tests compare it with Hive's reader). It returns the message,
// or an error (a *StrictError when the header was readable).
func (s *StrictSchema) CheckCall(raw []byte, limit int) (*Message, error) {
	b := Buf{B: raw, Limit: limit}
	h, err := b.ParseHeader()
	if err != nil {
		return nil, err
	}
	off := b.Pos
	if err := s.readStrict(&b, &h, off); err != nil {
		return nil, err
	}
	if b.Pos != len(raw) {
		return nil, perr(ErrMalformed, b.Pos, "%d trailing bytes after message", len(raw)-b.Pos)
	}
	return &Message{Header: h, Raw: raw, BodyOff: off}, nil
}
