package wire

import (
	"fmt"
	"sort"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Role says what a string field means to the proxy. Roles are assigned by the
// caller (the router's naming model); this package only finds them.
type Role uint8

// RoleNone marks fields the walk skips.
const RoleNone Role = 0

// RoleFunc assigns a role to a string (or list/set-of-string) field of a struct.
type RoleFunc func(structName string, f *thriftgen.Field) Role

// Plan is the compiled walk of one struct type: which fields hold role
// strings, and which nested structs can reach one. Fields that can reach no
// role are skipped without inspection.
type Plan struct {
	Name   string
	fields []fieldPlan // sorted by id
	direct [64]int8    // id -> index+1 into fields for ids 0..63
	// watch: report every field of this struct (RoleField spans), for
	// field-id dialects such as HDP 3.1.5's Table; flags: report these
	// fields only.
	watch bool
	flags map[int16]bool
}

// RoleField marks a whole field of a watched struct: Start is its header,
// End the end of its value, FieldID its id. The id bytes are
// B[Start+1:Start+3].
const RoleField Role = 255

type fieldPlan struct {
	id   int16
	wire byte // expected wire type of the field
	role Role // string, or elements of list/set<string>
	elem byte // element wire type for list/set; value type for map
	key  byte // map key type
	sub  *Plan
}

func (p *Plan) field(id int16) *fieldPlan {
	if id >= 0 && id < 64 {
		if i := p.direct[id]; i > 0 {
			return &p.fields[i-1]
		}
		return nil
	}
	for i := range p.fields {
		if p.fields[i].id == id {
			return &p.fields[i]
		}
	}
	return nil
}

// Empty reports whether nothing in the struct carries a role.
func (p *Plan) Empty() bool { return p == nil || (len(p.fields) == 0 && !p.watch && len(p.flags) == 0) }

// Compiler builds and memoises plans for one role assignment.
type Compiler struct {
	roles RoleFunc
	watch map[string]bool
	flag  FlagFunc
	memo  map[string]*Plan
	busy  map[string]bool
}

// FlagFunc selects fields to report as RoleField spans wherever they occur.
type FlagFunc func(structName string, f *thriftgen.Field) bool

// NewFlagCompiler returns a compiler that reports the flagged fields only.
func NewFlagCompiler(flag FlagFunc) *Compiler {
	c := NewCompiler(func(string, *thriftgen.Field) Role { return RoleNone })
	c.flag = flag
	return c
}

// NewCompiler returns a compiler for the given role assignment; structs
// named in watch have every field reported as a RoleField span.
func NewCompiler(roles RoleFunc, watch ...string) *Compiler {
	c := &Compiler{roles: roles, memo: map[string]*Plan{}, busy: map[string]bool{}, watch: map[string]bool{}}
	for _, w := range watch {
		c.watch[w] = true
	}
	return c
}

// Plan compiles (or returns the memoised) plan for a struct; nil when the
// struct can reach no role.
func (c *Compiler) Plan(name string) (*Plan, error) {
	if p, ok := c.memo[name]; ok {
		return p, nil
	}
	if c.busy[name] {
		return nil, nil // recursive type: the outer compilation covers it
	}
	s := thriftgen.LookupStruct(name)
	if s == nil {
		return nil, fmt.Errorf("wire: struct %q is not in the canonical schema", name)
	}
	c.busy[name] = true
	defer delete(c.busy, name)
	p := &Plan{Name: name, watch: c.watch[name]}
	for _, f := range s.Fields {
		if c.flag != nil && c.flag(name, f) {
			if p.flags == nil {
				p.flags = map[int16]bool{}
			}
			p.flags[f.ID] = true
		}
		fp, err := c.fieldPlan(name, f)
		if err != nil {
			return nil, err
		}
		if fp != nil {
			p.fields = append(p.fields, *fp)
		}
	}
	if len(p.fields) == 0 && !p.watch && len(p.flags) == 0 {
		c.memo[name] = nil
		return nil, nil
	}
	sort.Slice(p.fields, func(i, j int) bool { return p.fields[i].id < p.fields[j].id })
	for i, f := range p.fields {
		if f.id >= 0 && f.id < 64 {
			p.direct[f.id] = int8(i + 1)
		}
	}
	c.memo[name] = p
	return p, nil
}

// WireType maps a schema type to its wire type.
func WireType(t *thriftgen.Type) byte {
	switch t.Kind {
	case thriftgen.KindBool:
		return TBool
	case thriftgen.KindByte:
		return TByte
	case thriftgen.KindI16:
		return TI16
	case thriftgen.KindI32, thriftgen.KindEnum:
		return TI32
	case thriftgen.KindI64:
		return TI64
	case thriftgen.KindDouble:
		return TDouble
	case thriftgen.KindString, thriftgen.KindBinary:
		return TString
	case thriftgen.KindStruct:
		return TStruct
	case thriftgen.KindMap:
		return TMap
	case thriftgen.KindSet:
		return TSet
	case thriftgen.KindList:
		return TList
	}
	return TVoid
}

func (c *Compiler) fieldPlan(owner string, f *thriftgen.Field) (*fieldPlan, error) {
	t := f.Type
	fp := &fieldPlan{id: f.ID, wire: WireType(t)}
	switch t.Kind {
	case thriftgen.KindString:
		if fp.role = c.roles(owner, f); fp.role == RoleNone {
			return nil, nil
		}
		return fp, nil
	case thriftgen.KindStruct:
		sub, err := c.Plan(t.Name)
		if err != nil || sub == nil {
			return nil, err
		}
		fp.sub = sub
		return fp, nil
	case thriftgen.KindList, thriftgen.KindSet:
		fp.elem = WireType(t.Elem)
		switch t.Elem.Kind {
		case thriftgen.KindString:
			if fp.role = c.roles(owner, f); fp.role == RoleNone {
				return nil, nil
			}
			return fp, nil
		case thriftgen.KindStruct:
			sub, err := c.Plan(t.Elem.Name)
			if err != nil || sub == nil {
				return nil, err
			}
			fp.sub = sub
			return fp, nil
		}
		return nil, nil
	case thriftgen.KindMap:
		fp.key, fp.elem = WireType(t.Key), WireType(t.Value)
		if t.Value.Kind == thriftgen.KindStruct {
			sub, err := c.Plan(t.Value.Name)
			if err != nil || sub == nil {
				return nil, err
			}
			fp.sub = sub
			return fp, nil
		}
		if t.Value.Kind == thriftgen.KindList && t.Value.Elem.Kind == thriftgen.KindStruct {
			// e.g. map<string, list<ColumnStatisticsObj>>: walk each list.
			sub, err := c.Plan(t.Value.Elem.Name)
			if err != nil || sub == nil {
				return nil, err
			}
			fp.sub = &Plan{Name: "list<" + t.Value.Elem.Name + ">", fields: []fieldPlan{{id: -32768, wire: TList, elem: TStruct, sub: sub}}}
			return fp, nil
		}
		return nil, nil
	}
	return nil, nil
}

// Span is one role string found by Walk: B[Start:End] is the whole encoded
// string including its 4-byte length; Val is its content.
type Span struct {
	Start, End int
	Val        []byte
	Path       *Plan // the struct holding the field
	// Owner identifies the struct value holding the field: the offset of
	// its first field header (spans of one struct value share it, so
	// fields of one value can be paired, e.g. a table with its database).
	// 32 bits keep the span (and the walker each walk allocates) as small
	// as before it existed (an offset past 2 GiB would wrap: far beyond any
	// server.max-message-size in use; Thrift frames themselves are 32-bit).
	Owner   int32
	FieldID int16
	Role    Role
	// Elem: the string is an element of a list or set field.
	Elem bool
}

// Visitor receives the role spans of a walk. A pointer to a struct of the
// caller's implements it without an allocation per walk (a closure passed as
// a func value is allocated each time it captures).
type Visitor interface{ Visit(*Span) error }

// VisitFunc adapts a function to Visitor.
type VisitFunc func(*Span) error

// Visit calls f.
func (f VisitFunc) Visit(s *Span) error { return f(s) }

// Walk visits every role string reachable through plan in the encoded struct
// body, in wire order. The *Span passed to visit is reused: copy what must
// outlive the call. A field whose wire type differs from the schema's is
// skipped (as Thrift readers do), never misinterpreted.
func Walk(body []byte, plan *Plan, limit int, visit func(*Span) error) error {
	return WalkVisitor(body, plan, limit, VisitFunc(visit))
}

// WalkVisitor is Walk with a Visitor.
func WalkVisitor(body []byte, plan *Plan, limit int, v Visitor) error {
	w := walker{b: Buf{B: body, Limit: limit}, visit: v}
	return w.b.walkStruct(plan, &w, 0)
}

// walker carries one reusable Span through a walk: visit must not keep it.
// Span positions are reported relative to base (the start of the walked
// struct when it sits inside a larger buffer).
type walker struct {
	b     Buf
	visit Visitor
	span  Span
	base  int
	owner int32 // where the struct value being walked starts
	elem  bool  // strings being walked are list or set elements
}

func (w *walker) emit(role Role, start, end int, val []byte, p *Plan, id int16) error {
	w.span = Span{Role: role, Start: start - w.base, End: end - w.base, Val: val, Path: p, FieldID: id,
		Owner: w.owner - int32(w.base), Elem: w.elem}
	return w.visit.Visit(&w.span)
}

// walkStruct walks one struct value, its start recorded as the owner of the
// spans of its own fields.
func (b *Buf) walkStruct(p *Plan, w *walker, depth int) error {
	owner := w.owner
	w.owner = int32(b.Pos)
	err := b.walkFields(p, w, depth)
	w.owner = owner
	return err
}

func (b *Buf) walkFields(p *Plan, w *walker, depth int) error {
	if depth > MaxDepth {
		return perr(ErrMalformed, b.Pos, "nesting deeper than %d", MaxDepth)
	}
	for {
		t, id, err := b.FieldHeader()
		if err != nil {
			return err
		}
		if t == TStop {
			return nil
		}
		if p != nil && (p.watch || p.flags[id]) {
			start := b.Pos - 3
			probe := Buf{B: b.B, Pos: b.Pos, Limit: b.Limit}
			if err := probe.Skip(t, depth+1); err != nil {
				return err
			}
			if err := w.emit(RoleField, start, probe.Pos, nil, p, id); err != nil {
				return err
			}
		}
		var fp *fieldPlan
		if p != nil {
			fp = p.field(id)
		}
		if fp == nil || fp.wire != t {
			if b.skipLeaf(t) {
				continue
			}
			if err := b.Skip(t, depth+1); err != nil {
				return err
			}
			continue
		}
		if err := b.walkValue(p, fp, t, w, depth+1); err != nil {
			return err
		}
	}
}

func (b *Buf) walkString(p *Plan, fp *fieldPlan, w *walker) error {
	start := b.Pos
	s, err := b.Bytes()
	if err != nil {
		return err
	}
	return w.emit(fp.role, start, b.Pos, s, p, fp.id)
}

func (b *Buf) walkValue(p *Plan, fp *fieldPlan, t byte, w *walker, depth int) error {
	switch t {
	case TString:
		return b.walkString(p, fp, w)
	case TStruct:
		return b.walkStruct(fp.sub, w, depth)
	case TList, TSet:
		et, n, err := b.ListHeader()
		if err != nil {
			return err
		}
		if et != fp.elem {
			return b.skipElems(n, depth, et)
		}
		w.elem = et == TString
		for i := 0; i < n; i++ {
			if et == TString {
				err = b.walkString(p, fp, w)
			} else {
				err = b.walkStruct(fp.sub, w, depth+1)
			}
			if err != nil {
				w.elem = false
				return err
			}
		}
		w.elem = false
		return nil
	case TMap:
		kt, vt, n, err := b.MapHeader()
		if err != nil {
			return err
		}
		if vt != fp.elem {
			return b.skipElems(n, depth, kt, vt)
		}
		for i := 0; i < n; i++ {
			if err := b.Skip(kt, depth+1); err != nil {
				return err
			}
			if vt == TStruct {
				err = b.walkStruct(fp.sub, w, depth+1)
			} else { // list<struct> values
				inner := &fp.sub.fields[0]
				err = b.walkValue(fp.sub, inner, vt, w, depth+1)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	return b.Skip(t, depth)
}

// Patch replaces body[Start:End] with Data.
type Patch struct {
	Start, End int
	Data       []byte
}

// Apply splices patches (sorted by Start, non-overlapping) into src, appending
// the result to dst.
func Apply(dst, src []byte, patches []Patch) []byte {
	pos := 0
	for _, p := range patches {
		dst = append(dst, src[pos:p.Start]...)
		dst = append(dst, p.Data...)
		pos = p.End
	}
	return append(dst, src[pos:]...)
}
