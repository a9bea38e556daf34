// Package wire reads, walks and patches Thrift TBinaryProtocol messages without
// decoding them into Go structs.
//
// The proxy's hot path only needs to see a handful of string fields of a
// message (database, catalog and table names) and to rewrite some of them.
// Everything else — most bytes of most answers — is copied through unchanged,
// which is both cheaper than decode/re-encode and lossless by construction:
// fields and enum values the proxy does not know survive untouched.
//
// Three tools live here:
//   - ReadMessage / ReadFramed: take one whole message off a stream, enforcing
//     size and depth limits, so a peer cannot make the proxy allocate without
//     bound;
//   - Walk + Apply: a schema-guided walk that reports the spans of interesting
//     string fields, and a splice that replaces spans;
//   - Value: a generic, lossless tree for the rarer calls that must be
//     restructured (compatibility adapters, fan-out merges, filtering).
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Thrift wire types (TType).
const (
	TStop   byte = 0
	TVoid   byte = 1
	TBool   byte = 2
	TByte   byte = 3
	TDouble byte = 4
	TI16    byte = 6
	TI32    byte = 8
	TI64    byte = 10
	TString byte = 11
	TStruct byte = 12
	TMap    byte = 13
	TSet    byte = 14
	TList   byte = 15
	TUUID   byte = 16
)

// Message types.
const (
	Call      byte = 1
	Reply     byte = 2
	Exception byte = 3
	Oneway    byte = 4
)

const strictVersion1 uint32 = 0x80010000

// MaxDepth bounds struct/container nesting; HMS structures nest a handful of
// levels, a hostile peer could nest millions.
const MaxDepth = 64

// Errors a caller can tell apart.
var (
	ErrTruncated = errors.New("truncated thrift message")
	ErrTooLarge  = errors.New("thrift message exceeds the configured maximum size")
	ErrMalformed = errors.New("malformed thrift message")
)

// ProtocolError describes a malformed message, with where it went wrong.
type ProtocolError struct {
	Kind   error
	Offset int
	Detail string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("%v at byte %d: %s", e.Kind, e.Offset, e.Detail)
}

func (e *ProtocolError) Unwrap() error { return e.Kind }

func perr(kind error, off int, format string, args ...any) error {
	return &ProtocolError{Kind: kind, Offset: off, Detail: fmt.Sprintf(format, args...)}
}

// Header is the envelope of a message.
type Header struct {
	Name  string
	Type  byte
	SeqID int32
}

// Message is one whole message: Raw holds the envelope and the body.
type Message struct {
	Header
	Raw     []byte
	BodyOff int // Raw[BodyOff:] is the args/result struct
}

// Body returns the encoded struct after the envelope.
func (m *Message) Body() []byte { return m.Raw[m.BodyOff:] }

// AppendHeader appends a strict binary message envelope.
func AppendHeader(dst []byte, h Header) []byte {
	dst = binary.BigEndian.AppendUint32(dst, strictVersion1|uint32(h.Type))
	dst = AppendString(dst, h.Name)
	return binary.BigEndian.AppendUint32(dst, uint32(h.SeqID))
}

// AppendString appends a length-prefixed string.
func AppendString(dst []byte, s string) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

// AppendBytesField appends a length-prefixed byte string.
func AppendBytes(dst []byte, s []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

// AppendFieldHeader appends a struct field header.
func AppendFieldHeader(dst []byte, t byte, id int16) []byte {
	dst = append(dst, t)
	return binary.BigEndian.AppendUint16(dst, uint16(id))
}

// Buf is a cursor over an encoded message. Reads past the end report
// ErrTruncated; declared lengths above Limit report ErrTooLarge.
type Buf struct {
	B     []byte
	Pos   int
	Limit int // maximum declared string/container length; 0 = len(B)
	// src, when set, is the stream B is filled from (at most max bytes in
	// all). A concrete field rather than a callback keeps Buf off the heap.
	src *Reader
	max int
}

// need makes n bytes from Pos readable. The test that they already are is
// small enough to be inlined into its callers; a negative n, filling from
// the stream and the errors are out of line (needMore). The primitives a
// walk calls per field (FieldHeader, length) test their bytes themselves:
// a walk of a reply calls them a few times per field, and a function call
// per primitive cost more than the reading.
func (b *Buf) need(n int) error {
	if uint(n) <= uint(len(b.B)-b.Pos) { // a negative n is a huge uint
		return nil
	}
	return b.needMore(n)
}

func (b *Buf) needMore(n int) error {
	if n < 0 {
		return perr(ErrMalformed, b.Pos, "negative length %d", n)
	}
	if have := len(b.B) - b.Pos; have < n {
		if b.src == nil {
			return perr(ErrTruncated, b.Pos, "need %d bytes, have %d", n, have)
		}
		return b.fillFrom(n - have)
	}
	return nil
}

// Byte reads one byte.
func (b *Buf) Byte() (byte, error) {
	if err := b.need(1); err != nil {
		return 0, err
	}
	v := b.B[b.Pos]
	b.Pos++
	return v, nil
}

// I16 reads a big-endian int16.
func (b *Buf) I16() (int16, error) {
	if err := b.need(2); err != nil {
		return 0, err
	}
	v := int16(binary.BigEndian.Uint16(b.B[b.Pos:]))
	b.Pos += 2
	return v, nil
}

// I32 reads a big-endian int32.
func (b *Buf) I32() (int32, error) {
	if err := b.need(4); err != nil {
		return 0, err
	}
	v := int32(binary.BigEndian.Uint32(b.B[b.Pos:]))
	b.Pos += 4
	return v, nil
}

// I64 reads a big-endian int64.
func (b *Buf) I64() (int64, error) {
	if err := b.need(8); err != nil {
		return 0, err
	}
	v := int64(binary.BigEndian.Uint64(b.B[b.Pos:]))
	b.Pos += 8
	return v, nil
}

// Double reads a float64.
func (b *Buf) Double() (float64, error) {
	v, err := b.I64()
	return math.Float64frombits(uint64(v)), err
}

func (b *Buf) length(what string) (int, error) {
	if p := b.Pos; uint(p)+4 <= uint(len(b.B)) {
		n := int32(binary.BigEndian.Uint32(b.B[p:]))
		if n >= 0 && (b.Limit > 0 && int(n) <= b.Limit || b.Limit <= 0 && b.src == nil && int(n) <= len(b.B)) {
			b.Pos = p + 4
			return int(n), nil
		}
	}
	return b.lengthMore(what)
}

// lengthMore is length's slow path: the length still to come from the
// stream, or one to refuse.
func (b *Buf) lengthMore(what string) (int, error) {
	n, err := b.I32()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, perr(ErrMalformed, b.Pos-4, "negative %s length %d", what, n)
	}
	limit := b.Limit
	if limit <= 0 {
		limit = len(b.B)
		if b.src != nil {
			limit = math.MaxInt32
		}
	}
	if int(n) > limit {
		return 0, perr(ErrTooLarge, b.Pos-4, "%s length %d exceeds limit %d", what, n, limit)
	}
	return int(n), nil
}

// Bytes reads a length-prefixed string and returns a slice of the buffer.
func (b *Buf) Bytes() ([]byte, error) {
	n, err := b.length("string")
	if err != nil {
		return nil, err
	}
	if err := b.need(n); err != nil {
		return nil, err
	}
	v := b.B[b.Pos : b.Pos+n]
	b.Pos += n
	return v, nil
}

// ListHeader reads a list/set header.
func (b *Buf) ListHeader() (elem byte, n int, err error) {
	if elem, err = b.Byte(); err != nil {
		return
	}
	n, err = b.length("list")
	return
}

// MapHeader reads a map header.
func (b *Buf) MapHeader() (k, v byte, n int, err error) {
	if k, err = b.Byte(); err != nil {
		return
	}
	if v, err = b.Byte(); err != nil {
		return
	}
	n, err = b.length("map")
	return
}

// FieldHeader reads a field header; t == TStop ends the struct.
func (b *Buf) FieldHeader() (t byte, id int16, err error) {
	if p := b.Pos; uint(p)+3 <= uint(len(b.B)) {
		if t = b.B[p]; t == TStop {
			b.Pos = p + 1
			return t, 0, nil
		}
		b.Pos = p + 3
		return t, int16(binary.BigEndian.Uint16(b.B[p+1:])), nil
	}
	if t, err = b.Byte(); err != nil || t == TStop {
		return
	}
	id, err = b.I16()
	return
}

// fixedSize is the encoded size of fixed-width types, 0 otherwise.
func fixedSize(t byte) int {
	switch t {
	case TBool, TByte:
		return 1
	case TI16:
		return 2
	case TI32:
		return 4
	case TDouble, TI64:
		return 8
	}
	return 0
}

// Skip advances past one value of type t.
func (b *Buf) Skip(t byte, depth int) error {
	if depth > MaxDepth {
		return perr(ErrMalformed, b.Pos, "nesting deeper than %d", MaxDepth)
	}
	if n := fixedSize(t); n > 0 {
		if err := b.need(n); err != nil {
			return err
		}
		b.Pos += n
		return nil
	}
	switch t {
	case TString:
		n, err := b.length("string")
		if err != nil {
			return err
		}
		if err := b.need(n); err != nil {
			return err
		}
		b.Pos += n
		return nil
	case TStruct:
		for {
			ft, _, err := b.FieldHeader()
			if err != nil {
				return err
			}
			if ft == TStop {
				return nil
			}
			if b.skipLeaf(ft) {
				continue
			}
			if err := b.Skip(ft, depth+1); err != nil {
				return err
			}
		}
	case TMap:
		kt, vt, n, err := b.MapHeader()
		if err != nil {
			return err
		}
		return b.skipElems(n, depth, kt, vt)
	case TSet, TList:
		et, n, err := b.ListHeader()
		if err != nil {
			return err
		}
		return b.skipElems(n, depth, et)
	}
	return perr(ErrMalformed, b.Pos, "wire type %s is not one Hive's Thrift reads", typeName(t))
}

func (b *Buf) skipElems(n, depth int, types ...byte) error {
	// Fast path: fixed-width elements are skipped arithmetically.
	width := 0
	for _, t := range types {
		w := fixedSize(t)
		if w == 0 {
			width = -1
			break
		}
		width += w
	}
	if width > 0 {
		if b.src == nil && n > (len(b.B)-b.Pos)/width {
			return perr(ErrTruncated, b.Pos, "container of %d elements does not fit", n)
		}
		if err := b.need(n * width); err != nil {
			return err
		}
		b.Pos += n * width
		return nil
	}
	for i := 0; i < n; i++ {
		for _, t := range types {
			if b.skipLeaf(t) {
				continue
			}
			if err := b.Skip(t, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// skipLeaf skips a string that lies wholly in the buffer within Limit,
// reporting whether it did (anything else, and every error, is Skip's).
// Small enough to be inlined into the loops that skip fields and elements:
// strings are most of what a metastore object holds, and a call per string
// cost more than skipping it. (Fixed-width values are left to Skip, whose
// arithmetic is as short as the call.)
func (b *Buf) skipLeaf(t byte) bool {
	p := b.Pos
	if t != TString || uint(p)+4 > uint(len(b.B)) {
		return false
	}
	end := p + 4 + int(binary.BigEndian.Uint32(b.B[p:]))
	if end-p-4 > b.Limit || end > len(b.B) {
		return false
	}
	b.Pos = end
	return true
}

// ParseHeader parses a message envelope (strict or old non-strict).
func (b *Buf) ParseHeader() (Header, error) {
	var h Header
	v, err := b.I32()
	if err != nil {
		return h, err
	}
	if v < 0 {
		if uint32(v)&0xffff0000 != strictVersion1 {
			return h, perr(ErrMalformed, 0, "bad protocol version 0x%08x", uint32(v))
		}
		h.Type = byte(uint32(v) & 0xff)
		name, err := b.Bytes()
		if err != nil {
			return h, err
		}
		h.Name = methodName(name)
	} else {
		// Old non-strict form: name length, name, type byte.
		b.Pos -= 4
		name, err := b.Bytes()
		if err != nil {
			return h, err
		}
		h.Name = methodName(name)
		if h.Type, err = b.Byte(); err != nil {
			return h, err
		}
	}
	if h.Type < Call || h.Type > Oneway {
		return h, perr(ErrMalformed, b.Pos, "bad message type %d", h.Type)
	}
	if h.SeqID, err = b.I32(); err != nil {
		return h, err
	}
	return h, nil
}

// message reads an envelope and walks the body struct to its end, into m.
func (b *Buf) message(m *Message) error {
	h, err := b.ParseHeader()
	if err != nil {
		return err
	}
	off := b.Pos
	if err := b.Skip(TStruct, 0); err != nil {
		return err
	}
	*m = Message{Header: h, Raw: b.B[:b.Pos], BodyOff: off}
	return nil
}

// names interns the canonical method names, so reading a message of a known
// method allocates no string.
var names = func() map[string]string {
	m := map[string]string{}
	for _, x := range thriftgen.AllMethods() {
		m[x.Name] = x.Name
	}
	return m
}()

func methodName(b []byte) string {
	if s, ok := names[string(b)]; ok {
		return s
	}
	return string(b)
}

// ParseMessage parses a complete message held in raw.
func ParseMessage(raw []byte, limit int) (*Message, error) {
	b := Buf{B: raw, Limit: limit}
	m := new(Message)
	if err := b.message(m); err != nil {
		return nil, err
	}
	if b.Pos != len(raw) {
		return nil, perr(ErrMalformed, b.Pos, "%d trailing bytes after message", len(raw)-b.Pos)
	}
	return m, nil
}
