package difftest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Frame is one corpus entry: a client's byte stream (usually one call) and where it comes from.
type Frame struct {
	Name string
	Raw  []byte
}

// ---- calls generated from the canonical schema ----------------------------------------------------------------

// Generated returns one call per method of the canonical API with every argument field set to a representative
// value (nested structs filled to a depth, two elements per container, enum values every Apache release knows), and
// for methods whose arguments reach a union, one more call per further member of the widest union.
func Generated() []Frame {
	var out []Frame
	for _, m := range thriftgen.AllMethods() {
		variants := 1
		if n := widestUnion(m.Args, map[string]bool{}); n > 1 {
			variants = n
		}
		for k := 0; k < variants; k++ {
			g := generator{variant: k}
			v := g.structure(m.Args, 0, 0)
			typ := wire.Call
			if m.Oneway {
				typ = wire.Oneway
			}
			name := "gen/" + m.Name
			if k > 0 {
				name += fmt.Sprintf("/union-%d", k)
			}
			out = append(out, Frame{Name: name, Raw: wire.AppendMessage(nil, wire.Header{Name: m.Name, Type: typ, SeqID: int32(k + 1)}, &v)})
		}
	}
	return out
}

func widestUnion(s *thriftgen.Struct, seen map[string]bool) int {
	if seen[s.Name] {
		return 0
	}
	seen[s.Name] = true
	n := 0
	if s.Kind == thriftgen.StructKindUnion {
		n = len(s.Fields)
	}
	for _, f := range s.Fields {
		n = max(n, widestUnionType(f.Type, seen))
	}
	return n
}

func widestUnionType(t *thriftgen.Type, seen map[string]bool) int {
	switch t.Kind {
	case thriftgen.KindStruct:
		return widestUnion(thriftgen.LookupStruct(t.Name), seen)
	case thriftgen.KindList, thriftgen.KindSet:
		return widestUnionType(t.Elem, seen)
	case thriftgen.KindMap:
		return max(widestUnionType(t.Key, seen), widestUnionType(t.Value, seen))
	}
	return 0
}

type generator struct{ variant int }

const (
	fillDepth = 4  // below it, containers are empty and optional structs left out
	maxDepth  = 12 // required structs nest at most this deep
)

func (g *generator) structure(s *thriftgen.Struct, depth, salt int) wire.Value {
	v := wire.Value{Type: wire.TStruct}
	if s.Kind == thriftgen.StructKindUnion {
		if len(s.Fields) > 0 {
			f := s.Fields[g.variant%len(s.Fields)]
			v.Fields = append(v.Fields, wire.Field{ID: f.ID, V: g.value(f.Type, f.Name, depth+1, salt)})
		}
		return v
	}
	for _, f := range s.Fields {
		if f.Type.Kind == thriftgen.KindStruct && (depth >= maxDepth || depth >= fillDepth && f.Required != thriftgen.RequirednessRequired) {
			continue
		}
		v.Fields = append(v.Fields, wire.Field{ID: f.ID, V: g.value(f.Type, f.Name, depth+1, salt)})
	}
	return v
}

func (g *generator) value(t *thriftgen.Type, name string, depth, salt int) wire.Value {
	switch t.Kind {
	case thriftgen.KindBool:
		return wire.Bool(salt%2 == 0)
	case thriftgen.KindByte:
		return wire.Value{Type: wire.TByte, Int: int64(7 + salt)}
	case thriftgen.KindI16:
		return wire.Value{Type: wire.TI16, Int: int64(300 + salt)}
	case thriftgen.KindI32:
		return wire.I32(int32(42 + salt))
	case thriftgen.KindI64:
		return wire.I64(int64(1)<<40 + int64(salt))
	case thriftgen.KindDouble:
		return wire.Value{Type: wire.TDouble, Dbl: 1.5 + float64(salt)}
	case thriftgen.KindString:
		return wire.Str(fmt.Sprintf("%s_%d", strings.ToLower(name), salt))
	case thriftgen.KindBinary:
		return wire.Value{Type: wire.TString, Str: []byte{0, 1, 2, 0xff, byte(salt)}}
	case thriftgen.KindEnum:
		return wire.I32(enumValue(t.Name, salt))
	case thriftgen.KindStruct:
		return g.structure(thriftgen.LookupStruct(t.Name), depth, salt)
	case thriftgen.KindList, thriftgen.KindSet:
		v := wire.Value{Type: wire.WireType(t), ElemType: wire.WireType(t.Elem)}
		if depth < fillDepth {
			for i := 0; i < 2; i++ {
				v.Elems = append(v.Elems, g.value(t.Elem, name, depth+1, salt*2+i))
			}
		}
		return v
	case thriftgen.KindMap:
		v := wire.Value{Type: wire.TMap, KeyType: wire.WireType(t.Key), ElemType: wire.WireType(t.Value)}
		if depth < fillDepth {
			for i := 0; i < 2; i++ {
				v.Elems = append(v.Elems, g.value(t.Key, name+"_k", depth+1, salt*2+i), g.value(t.Value, name+"_v", depth+1, salt*2+i))
			}
		}
		return v
	}
	panic(fmt.Sprintf("difftest: kind %v", t.Kind))
}

// enumValue picks a value every Apache release knows (the salt-th of them, cycling).
func enumValue(name string, salt int) int32 {
	e := thriftgen.LookupEnum(name)
	var apache thriftgen.ProfileSet
	for _, rt := range compat.Runtimes() {
		if !rt.Hortonworks {
			apache |= rt.Bit
		}
	}
	var both []int32
	for _, x := range e.Values {
		if x.Profiles.Has(apache) {
			both = append(both, x.Value)
		}
	}
	if len(both) == 0 {
		return e.Values[0].Value
	}
	return both[salt%len(both)]
}

// ---- the layout of a message ------------------------------------------------------------------------------------

// site is a place in a message a mutation can change.
type site struct {
	kind  byte // 'f' field header, 'l' list/set header, 'm' map header, 's' string length, 'e' a struct's STOP, 'i' an i32, 'b' a bool
	off   int  // of the type byte (f, l, m), the length (s), the STOP (e), the value (i, b)
	end   int  // f: end of the field's value; s: end of the string
	typ   byte // f: the field's wire type; l: element type
	n     int  // l, m: count; s: length
	depth int
}

type layout struct {
	body  int // offset of the body
	sites []site
}

func layoutOf(raw []byte) (*layout, error) {
	b := wire.Buf{B: raw}
	if _, err := b.ParseHeader(); err != nil {
		return nil, err
	}
	l := &layout{body: b.Pos}
	if err := l.walk(&b, wire.TStruct, 0); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *layout) walk(b *wire.Buf, t byte, depth int) error {
	if depth > 100 {
		return errors.New("too deep")
	}
	switch t {
	case wire.TBool:
		l.sites = append(l.sites, site{kind: 'b', off: b.Pos, depth: depth})
		_, err := b.Byte()
		return err
	case wire.TI32:
		l.sites = append(l.sites, site{kind: 'i', off: b.Pos, depth: depth})
		_, err := b.I32()
		return err
	case wire.TString:
		at := b.Pos
		s, err := b.Bytes()
		if err == nil {
			l.sites = append(l.sites, site{kind: 's', off: at, end: b.Pos, n: len(s), depth: depth})
		}
		return err
	case wire.TStruct:
		for {
			at := b.Pos
			ft, _, err := b.FieldHeader()
			if err != nil {
				return err
			}
			if ft == wire.TStop {
				l.sites = append(l.sites, site{kind: 'e', off: at, depth: depth})
				return nil
			}
			i := len(l.sites)
			l.sites = append(l.sites, site{kind: 'f', off: at, typ: ft, depth: depth})
			if err := l.walk(b, ft, depth+1); err != nil {
				return err
			}
			l.sites[i].end = b.Pos
		}
	case wire.TList, wire.TSet:
		at := b.Pos
		et, n, err := b.ListHeader()
		if err != nil {
			return err
		}
		l.sites = append(l.sites, site{kind: 'l', off: at, typ: et, n: n, depth: depth})
		for i := 0; i < n; i++ {
			if err := l.walk(b, et, depth+1); err != nil {
				return err
			}
		}
		return nil
	case wire.TMap:
		at := b.Pos
		kt, vt, n, err := b.MapHeader()
		if err != nil {
			return err
		}
		l.sites = append(l.sites, site{kind: 'm', off: at, n: n, depth: depth})
		for i := 0; i < n; i++ {
			if err := l.walk(b, kt, depth+1); err != nil {
				return err
			}
			if err := l.walk(b, vt, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return b.Skip(t, depth)
}

func (l *layout) of(kind byte) []site {
	var out []site
	for _, s := range l.sites {
		if s.kind == kind {
			out = append(out, s)
		}
	}
	return out
}

// ---- mutations --------------------------------------------------------------------------------------------------

// Wire types a mutation tries: every type byte Thrift defines, the ones it does not (1 void, 5, 7, 9, 16 uuid, 17),
// and two far outside.
var mutationTypes = []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 0x80, 0xff}

// Mutations derives hostile variants of each seed: every field's wire type and every container's element types
// changed, counts and string lengths off by one, zero, doubled and huge, unknown fields of each wire type 0..255
// inserted (in the arguments and in a nested struct), fields removed and duplicated, enum-sized i32s and bools
// changed, strings made invalid UTF-8, truncations, trailing bytes and a second call appended, nesting 30..100
// deep, and message types 0..255. At most perSeed variants of a seed are kept (a deterministic sample of rng);
// the type-byte sweeps of 0..255 run on the first sweepSeeds seeds only.
func Mutations(seeds []Frame, rng *rand.Rand, perSeed, sweepSeeds int) []Frame {
	var out []Frame
	for i, s := range seeds {
		l, err := layoutOf(s.Raw)
		if err != nil {
			continue
		}
		var vs []Frame
		add := func(what string, raw []byte) { vs = append(vs, Frame{Name: s.Name + "/" + what, Raw: raw}) }
		mutate(s.Raw, l, add, i < sweepSeeds)
		if len(vs) > perSeed {
			rng.Shuffle(len(vs), func(a, b int) { vs[a], vs[b] = vs[b], vs[a] })
			vs = vs[:perSeed]
		}
		out = append(out, vs...)
	}
	return out
}

func mutate(raw []byte, l *layout, add func(string, []byte), sweep bool) {
	with := func(off int, b ...byte) []byte {
		c := bytes.Clone(raw)
		copy(c[off:], b)
		return c
	}
	splice := func(at, cut int, ins []byte) []byte {
		c := make([]byte, 0, len(raw)+len(ins))
		c = append(c, raw[:at]...)
		c = append(c, ins...)
		return append(c, raw[at+cut:]...)
	}
	u32 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	counts := func(n int) []uint32 {
		return []uint32{uint32(n + 1), uint32(n - 1), 0, uint32(2 * n), uint32(n + 1000), 0x7fffffff, 0x80000000, 0xffffffff, 0x06400000}
	}

	for _, s := range l.of('f') {
		for _, t := range mutationTypes {
			if t != s.typ {
				add(fmt.Sprintf("field@%d-type-%d", s.off, t), with(s.off, t))
			}
		}
		add(fmt.Sprintf("field@%d-removed", s.off), splice(s.off, s.end-s.off, nil))
		add(fmt.Sprintf("field@%d-twice", s.off), splice(s.end, 0, raw[s.off:s.end]))
		add(fmt.Sprintf("field@%d-id-unknown", s.off), with(s.off+1, 0x7f, 0x01))
	}
	for _, s := range l.of('l') {
		for _, t := range mutationTypes {
			if t != s.typ {
				add(fmt.Sprintf("list@%d-elem-%d", s.off, t), with(s.off, t))
			}
		}
		for _, n := range counts(s.n) {
			add(fmt.Sprintf("list@%d-count-%d", s.off, int32(n)), with(s.off+1, u32(n)...))
		}
	}
	for _, s := range l.of('m') {
		for _, t := range mutationTypes {
			add(fmt.Sprintf("map@%d-key-%d", s.off, t), with(s.off, t))
			add(fmt.Sprintf("map@%d-value-%d", s.off, t), with(s.off+1, t))
		}
		for _, n := range counts(s.n) {
			add(fmt.Sprintf("map@%d-count-%d", s.off, int32(n)), with(s.off+2, u32(n)...))
		}
	}
	for _, s := range l.of('s') {
		for _, n := range counts(s.n) {
			add(fmt.Sprintf("string@%d-length-%d", s.off, int32(n)), with(s.off, u32(n)...))
		}
		if s.n > 0 {
			bad := bytes.Repeat([]byte{0xc3}, s.n) // lead bytes without continuations
			add(fmt.Sprintf("string@%d-invalid-utf8", s.off), with(s.off+4, bad...))
			mixed := []byte{0xe2, 0x82, 'a', 0xed, 0xa0, 0x80} // a cut sequence, then a surrogate
			add(fmt.Sprintf("string@%d-mixed-utf8", s.off), with(s.off+4, mixed[:min(len(mixed), s.n)]...))
		}
	}
	for _, s := range l.of('i') {
		for _, v := range []uint32{999, 0xffffffff, 0x80000000, 0} {
			add(fmt.Sprintf("i32@%d-%d", s.off, int32(v)), with(s.off, u32(v)...))
		}
	}
	for _, s := range l.of('b') {
		add(fmt.Sprintf("bool@%d-2", s.off), with(s.off, 2))
	}
	// Unknown fields of every wire type: in the arguments, and before the STOP of the deepest nested struct.
	points := []int{l.body}
	if ends := l.of('e'); len(ends) > 1 {
		deepest := ends[0]
		for _, e := range ends {
			if e.depth > deepest.depth {
				deepest = e
			}
		}
		if deepest.depth > 0 {
			points = append(points, deepest.off)
		}
	}
	for pi, at := range points {
		for t := 0; t < 256; t++ {
			if !sweep && !validType(byte(t)) && t > 17 {
				continue
			}
			f := wire.AppendFieldHeader(nil, byte(t), 30000)
			f = append(f, sampleValue(byte(t))...)
			add(fmt.Sprintf("unknown-field-%d-type-%d", pi, t), splice(at, 0, f))
		}
	}
	// Truncations, trailing bytes, a second call.
	cuts := []int{1, 3, 4, 8, l.body - 1, l.body, l.body + 1, len(raw) / 2, len(raw) - 2, len(raw) - 1}
	for _, c := range cuts {
		if c > 0 && c < len(raw) {
			add(fmt.Sprintf("truncated-%d", c), bytes.Clone(raw[:c]))
		}
	}
	for i, tail := range [][]byte{{0}, {0x80, 0x01}, {0x80, 0x01, 0x00, 0x01}, bytes.Repeat([]byte{0xff}, 16), raw[:len(raw)/2], raw} {
		add(fmt.Sprintf("trailing-%d", i), append(bytes.Clone(raw), tail...))
	}
	// Deep nesting in an unknown field: structs, lists of lists, maps of maps.
	for _, d := range []int{30, 62, 63, 64, 65, 66, 100} {
		add(fmt.Sprintf("nested-structs-%d", d), splice(l.body, 0, nest(d, 's')))
		add(fmt.Sprintf("nested-lists-%d", d), splice(l.body, 0, nest(d, 'l')))
		add(fmt.Sprintf("nested-maps-%d", d), splice(l.body, 0, nest(d, 'm')))
	}
	// Message types: the type byte of a strict header is the fourth.
	if sweep {
		for t := 0; t < 256; t++ {
			add(fmt.Sprintf("message-type-%d", t), with(3, byte(t)))
		}
	} else {
		for _, t := range []byte{0, 2, 3, 4, 5, 0xff} {
			add(fmt.Sprintf("message-type-%d", t), with(3, t))
		}
	}
	// The old non-strict header form: name, type byte, seqid.
	var old []byte
	h, _ := (&wire.Buf{B: raw}).ParseHeader()
	old = wire.AppendString(old, h.Name)
	old = append(old, wire.Call)
	old = binary.BigEndian.AppendUint32(old, uint32(h.SeqID))
	add("non-strict-header", append(old, raw[l.body:]...))
}

func validType(t byte) bool {
	switch t {
	case wire.TBool, wire.TByte, wire.TDouble, wire.TI16, wire.TI32, wire.TI64, wire.TString, wire.TStruct, wire.TMap, wire.TSet, wire.TList:
		return true
	}
	return false
}

// sampleValue is a small well-formed value of wire type t, or 16 zero bytes for a type Thrift does not define.
func sampleValue(t byte) []byte {
	switch t {
	case wire.TStop:
		return nil
	case wire.TBool, wire.TByte:
		return []byte{1}
	case wire.TI16:
		return []byte{0, 5}
	case wire.TI32:
		return []byte{0, 0, 0, 5}
	case wire.TI64, wire.TDouble:
		return []byte{0, 0, 0, 0, 0, 0, 0, 5}
	case wire.TString:
		return wire.AppendString(nil, "xyz")
	case wire.TStruct:
		return append(wire.AppendFieldHeader(nil, wire.TI32, 1), 0, 0, 0, 1, wire.TStop)
	case wire.TList, wire.TSet:
		return append([]byte{wire.TString, 0, 0, 0, 1}, wire.AppendString(nil, "e")...)
	case wire.TMap:
		return append(append([]byte{wire.TString, wire.TI64, 0, 0, 0, 1}, wire.AppendString(nil, "k")...), 0, 0, 0, 0, 0, 0, 0, 9)
	}
	return make([]byte, 16)
}

// nest is an unknown field holding d levels of structs ('s'), lists of lists ('l') or maps of maps ('m').
func nest(d int, kind byte) []byte {
	var inner func(int) []byte
	switch kind {
	case 's':
		inner = func(k int) []byte {
			if k == 0 {
				return []byte{wire.TStop}
			}
			return append(append(wire.AppendFieldHeader(nil, wire.TStruct, 1), inner(k-1)...), wire.TStop)
		}
		return append(wire.AppendFieldHeader(nil, wire.TStruct, 30001), inner(d)...)
	case 'l':
		inner = func(k int) []byte {
			if k == 0 {
				return []byte{wire.TI32, 0, 0, 0, 0}
			}
			return append([]byte{wire.TList, 0, 0, 0, 1}, inner(k-1)...)
		}
		return append(wire.AppendFieldHeader(nil, wire.TList, 30002), inner(d)...)
	default:
		inner = func(k int) []byte {
			if k == 0 {
				return []byte{wire.TString, wire.TString, 0, 0, 0, 0}
			}
			return append(append([]byte{wire.TI32, wire.TMap, 0, 0, 0, 1}, 0, 0, 0, 7), inner(k-1)...)
		}
		return append(wire.AppendFieldHeader(nil, wire.TMap, 30003), inner(d)...)
	}
}

// ---- corpus files -----------------------------------------------------------------------------------------------

const fileMagic = "hms-proxy difftest frames v1\n"

// WriteFrames writes frames to path (a small length-prefixed file: name, bytes).
func WriteFrames(path string, frames []Frame) error {
	var b bytes.Buffer
	b.WriteString(fileMagic)
	for _, f := range frames {
		appendRecord(&b, f)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func appendRecord(b *bytes.Buffer, f Frame) {
	var n [4]byte
	binary.BigEndian.PutUint16(n[:2], uint16(len(f.Name)))
	b.Write(n[:2])
	b.WriteString(f.Name)
	binary.BigEndian.PutUint32(n[:], uint32(len(f.Raw)))
	b.Write(n[:])
	b.Write(f.Raw)
}

// ReadFrames reads a file WriteFrames wrote.
func ReadFrames(path string) ([]Frame, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := bufio.NewReader(bytes.NewReader(data))
	magic := make([]byte, len(fileMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != fileMagic {
		return nil, fmt.Errorf("difftest: %s is not a frames file", path)
	}
	var out []Frame
	for {
		var n [4]byte
		if _, err := io.ReadFull(r, n[:2]); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("difftest: %s: %w", path, err)
		}
		name := make([]byte, binary.BigEndian.Uint16(n[:2]))
		if _, err := io.ReadFull(r, name); err != nil {
			return nil, fmt.Errorf("difftest: %s: %w", path, err)
		}
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return nil, fmt.Errorf("difftest: %s: %w", path, err)
		}
		raw := make([]byte, binary.BigEndian.Uint32(n[:]))
		if _, err := io.ReadFull(r, raw); err != nil {
			return nil, fmt.Errorf("difftest: %s: %w", path, err)
		}
		out = append(out, Frame{Name: string(name), Raw: raw})
	}
}
