package wire

import (
	"encoding/binary"
	"math"
)

// Value is a generic Thrift value. Decoding into Value keeps every field and
// every unknown enum value, so Encode(Decode(x)) == x for any well-formed x
// (maps keep their wire order). It is the tool for the few calls that must be
// restructured; the hot path uses Walk/Apply instead.
type Value struct {
	Type     byte
	Int      int64   // bool (0/1), byte, i16, i32, i64
	Dbl      float64 // double
	Str      []byte  // string, binary
	Fields   []Field // struct, in wire order
	ElemType byte    // list/set element type; map value type
	KeyType  byte    // map key type
	Elems    []Value // list/set elements; map: key0, val0, key1, val1, …
}

// Field is one struct field.
type Field struct {
	ID int16
	V  Value
}

// Constructors for the common cases.
func Str(s string) Value      { return Value{Type: TString, Str: []byte(s)} }
func I32(v int32) Value       { return Value{Type: TI32, Int: int64(v)} }
func I64(v int64) Value       { return Value{Type: TI64, Int: v} }
func Bool(v bool) Value       { return Value{Type: TBool, Int: b2i(v)} }
func Struct(f ...Field) Value { return Value{Type: TStruct, Fields: f} }
func List(elem byte, v ...Value) Value {
	return Value{Type: TList, ElemType: elem, Elems: v}
}

func b2i(v bool) int64 {
	if v {
		return 1
	}
	return 0
}

// Field returns the field with this id, or nil.
func (v *Value) Field(id int16) *Value {
	for i := range v.Fields {
		if v.Fields[i].ID == id {
			return &v.Fields[i].V
		}
	}
	return nil
}

// Set replaces or appends a field.
func (v *Value) Set(id int16, x Value) {
	if f := v.Field(id); f != nil {
		*f = x
		return
	}
	v.Fields = append(v.Fields, Field{ID: id, V: x})
}

// Put sets key to val in a map<string,string> value (v.Elems holds keys and
// values in turn), replacing the entry of an equal key or appending one.
func (v *Value) Put(key, val string) {
	for i := 0; i+1 < len(v.Elems); i += 2 {
		if string(v.Elems[i].Str) == key {
			v.Elems[i+1] = Str(val)
			return
		}
	}
	v.Elems = append(v.Elems, Str(key), Str(val))
}

// Del removes a field; it reports whether it was present.
func (v *Value) Del(id int16) bool {
	for i := range v.Fields {
		if v.Fields[i].ID == id {
			v.Fields = append(v.Fields[:i], v.Fields[i+1:]...)
			return true
		}
	}
	return false
}

// String returns the value of a string field, "" when absent.
func (v *Value) String() string {
	if v == nil {
		return ""
	}
	return string(v.Str)
}

// Decode reads one value of type t.
func (b *Buf) Decode(t byte, depth int) (Value, error) {
	v := Value{Type: t}
	if depth > MaxDepth {
		return v, perr(ErrMalformed, b.Pos, "nesting deeper than %d", MaxDepth)
	}
	var err error
	switch t {
	case TBool, TByte:
		var x byte
		x, err = b.Byte()
		v.Int = int64(int8(x))
	case TI16:
		var x int16
		x, err = b.I16()
		v.Int = int64(x)
	case TI32:
		var x int32
		x, err = b.I32()
		v.Int = int64(x)
	case TI64:
		v.Int, err = b.I64()
	case TDouble:
		v.Dbl, err = b.Double()
	case TString:
		var s []byte
		s, err = b.Bytes()
		v.Str = append([]byte(nil), s...)
	case TStruct:
		for {
			ft, id, e := b.FieldHeader()
			if e != nil {
				return v, e
			}
			if ft == TStop {
				break
			}
			fv, e := b.Decode(ft, depth+1)
			if e != nil {
				return v, e
			}
			v.Fields = append(v.Fields, Field{ID: id, V: fv})
		}
	case TList, TSet:
		var n int
		v.ElemType, n, err = b.ListHeader()
		if err == nil {
			v.Elems = make([]Value, 0, min(n, 1024))
			for i := 0; i < n && err == nil; i++ {
				var e Value
				e, err = b.Decode(v.ElemType, depth+1)
				v.Elems = append(v.Elems, e)
			}
		}
	case TMap:
		var n int
		v.KeyType, v.ElemType, n, err = b.MapHeader()
		if err == nil {
			v.Elems = make([]Value, 0, min(2*n, 1024))
			for i := 0; i < n && err == nil; i++ {
				var k, e Value
				if k, err = b.Decode(v.KeyType, depth+1); err == nil {
					e, err = b.Decode(v.ElemType, depth+1)
				}
				v.Elems = append(v.Elems, k, e)
			}
		}
	default:
		err = perr(ErrMalformed, b.Pos, "wire type %s is not one Hive's Thrift reads", typeName(t))
	}
	return v, err
}

// DecodeStruct decodes an encoded struct.
func DecodeStruct(body []byte) (Value, error) {
	b := Buf{B: body}
	return b.Decode(TStruct, 0)
}

// Append encodes v after dst.
func (v *Value) Append(dst []byte) []byte {
	switch v.Type {
	case TBool, TByte:
		return append(dst, byte(v.Int))
	case TI16:
		return binary.BigEndian.AppendUint16(dst, uint16(v.Int))
	case TI32:
		return binary.BigEndian.AppendUint32(dst, uint32(v.Int))
	case TI64:
		return binary.BigEndian.AppendUint64(dst, uint64(v.Int))
	case TDouble:
		return binary.BigEndian.AppendUint64(dst, math.Float64bits(v.Dbl))
	case TString:
		return AppendBytes(dst, v.Str)
	case TStruct:
		for i := range v.Fields {
			f := &v.Fields[i]
			dst = AppendFieldHeader(dst, f.V.Type, f.ID)
			dst = f.V.Append(dst)
		}
		return append(dst, TStop)
	case TList, TSet:
		dst = append(dst, v.ElemType)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(v.Elems)))
		for i := range v.Elems {
			dst = v.Elems[i].Append(dst)
		}
		return dst
	case TMap:
		dst = append(dst, v.KeyType, v.ElemType)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(v.Elems)/2))
		for i := range v.Elems {
			dst = v.Elems[i].Append(dst)
		}
		return dst
	}
	return dst
}

// Encode returns the encoding of v.
func (v *Value) Encode() []byte { return v.Append(nil) }

// AppendMessage encodes a whole message with v as its body.
func AppendMessage(dst []byte, h Header, body *Value) []byte {
	dst = AppendHeader(dst, h)
	return body.Append(dst)
}

// TApplicationException types.
const (
	AppUnknown            int32 = 0
	AppUnknownMethod      int32 = 1
	AppInvalidMessageType int32 = 2
	AppWrongMethodName    int32 = 3
	AppBadSequenceID      int32 = 4
	AppMissingResult      int32 = 5
	AppInternalError      int32 = 6
	AppProtocolError      int32 = 7
)

// AppException encodes a TApplicationException reply.
func AppException(name string, seq int32, typ int32, msg string) []byte {
	body := Struct(Field{1, Str(msg)}, Field{2, I32(typ)})
	return AppendMessage(nil, Header{Name: name, Type: Exception, SeqID: seq}, &body)
}

// ParseAppException reads message and type from an EXCEPTION reply body.
func ParseAppException(body []byte) (typ int32, msg string, err error) {
	v, err := DecodeStruct(body)
	if err != nil {
		return 0, "", err
	}
	if f := v.Field(1); f != nil {
		msg = string(f.Str)
	}
	if f := v.Field(2); f != nil {
		typ = int32(f.Int)
	}
	return typ, msg, nil
}
