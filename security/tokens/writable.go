package tokens

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// Hadoop's Writable primitives as WritableUtils and Text write them: a
// variable-length integer ("vint"/"vlong") is one byte for -112..127,
// otherwise a marker byte that says the sign and how many big-endian bytes
// follow; a Text is a vint length and that many bytes of UTF-8.

// maxTextLen bounds one Text field of an identifier; Hadoop's Text default
// maximum is 1 MiB, far above any real user name.
const maxTextLen = 1 << 20

func appendVLong(b []byte, v int64) []byte {
	if v >= -112 && v <= 127 {
		return append(b, byte(int8(v)))
	}
	marker := -112
	if v < 0 {
		v = ^v
		marker = -120
	}
	n := 0
	for t := v; t != 0; t >>= 8 {
		n++
	}
	b = append(b, byte(int8(marker-n)))
	for i := n - 1; i >= 0; i-- {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

func appendVInt(b []byte, v int32) []byte { return appendVLong(b, int64(v)) }

func appendText(b []byte, s string) []byte {
	b = appendVInt(b, int32(len(s)))
	return append(b, s...)
}

func appendBytes(b, p []byte) []byte {
	b = appendVInt(b, int32(len(p)))
	return append(b, p...)
}

// reader decodes Writable primitives from a byte slice; every method names
// the field it failed on.
type reader struct {
	b   []byte
	off int
}

var errShort = errors.New("unexpected end of data")

func (r *reader) byte1(field string) (byte, error) {
	if r.off >= len(r.b) {
		return 0, fmt.Errorf("%s: %w at byte %d", field, errShort, r.off)
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *reader) vlong(field string) (int64, error) {
	first, err := r.byte1(field)
	if err != nil {
		return 0, err
	}
	f := int8(first)
	if f >= -112 {
		return int64(f), nil
	}
	var n int
	negative := f < -120
	if negative {
		n = int(-120 - int(f))
	} else {
		n = int(-112 - int(f))
	}
	if r.off+n > len(r.b) {
		return 0, fmt.Errorf("%s: %w (a %d-byte integer at byte %d)", field, errShort, n, r.off)
	}
	var v int64
	for i := 0; i < n; i++ {
		v = v<<8 | int64(r.b[r.off+i])
	}
	r.off += n
	if negative {
		v = ^v
	}
	return v, nil
}

func (r *reader) vint(field string) (int32, error) {
	v, err := r.vlong(field)
	if err != nil {
		return 0, err
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, fmt.Errorf("%s: value %d does not fit in an int", field, v)
	}
	return int32(v), nil
}

func (r *reader) length(field string, max int) (int, error) {
	n, err := r.vint(field)
	if err != nil {
		return 0, err
	}
	if n < 0 || int(n) > max {
		return 0, fmt.Errorf("%s: length %d out of range 0..%d", field, n, max)
	}
	if r.off+int(n) > len(r.b) {
		return 0, fmt.Errorf("%s: %w (%d bytes announced at byte %d, %d left)", field, errShort, n, r.off, len(r.b)-r.off)
	}
	return int(n), nil
}

func (r *reader) text(field string) (string, error) {
	n, err := r.length(field, maxTextLen)
	if err != nil {
		return "", err
	}
	s := r.b[r.off : r.off+n]
	if !utf8.Valid(s) {
		return "", fmt.Errorf("%s: not valid UTF-8", field)
	}
	r.off += n
	return string(s), nil
}

func (r *reader) bytes(field string, max int) ([]byte, error) {
	n, err := r.length(field, max)
	if err != nil {
		return nil, err
	}
	p := append([]byte(nil), r.b[r.off:r.off+n]...)
	r.off += n
	return p, nil
}

func (r *reader) int64BE(field string) (int64, error) {
	if r.off+8 > len(r.b) {
		return 0, fmt.Errorf("%s: %w at byte %d", field, errShort, r.off)
	}
	var v int64
	for i := 0; i < 8; i++ {
		v = v<<8 | int64(r.b[r.off+i])
	}
	r.off += 8
	return v, nil
}

func (r *reader) end(what string) error {
	if r.off != len(r.b) {
		return fmt.Errorf("%s: %d unexpected trailing bytes", what, len(r.b)-r.off)
	}
	return nil
}
