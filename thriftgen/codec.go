package thriftgen

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/apache/thrift/lib/go/thrift"
)

// Codec helpers used by types_gen.go. Reading follows Java's generated code: fields may come in any order, a field
// with an unknown id or an unexpected wire type is skipped, and a missing required field is not an error (the
// proxy passes messages through; the peer that needs the field judges). Writing follows Java too: fields in
// declaration order; required and default-requiredness primitives always, other fields when set; a required
// struct/container/binary field that is nil is an error naming it.

// MapEntry is one key/value pair of a Thrift map whose key type cannot be a Go map key
// (map<list<string>,string> SkewedInfo.skewedColValueLocationMaps). Such maps are ordered slices of entries; they
// are read and written in wire order, so they round-trip unchanged.
type MapEntry[K, V any] struct {
	Key   K
	Value V
}

// fieldSet records which default-requiredness string and enum fields were present on the wire (bit = field index).
type fieldSet uint64

type reader[T any] func(ctx context.Context, p thrift.TProtocol) (T, error)
type writer[T any] func(ctx context.Context, p thrift.TProtocol, v T) error

func readBool(ctx context.Context, p thrift.TProtocol) (bool, error)      { return p.ReadBool(ctx) }
func readByte(ctx context.Context, p thrift.TProtocol) (int8, error)      { return p.ReadByte(ctx) }
func readI16(ctx context.Context, p thrift.TProtocol) (int16, error)      { return p.ReadI16(ctx) }
func readI32(ctx context.Context, p thrift.TProtocol) (int32, error)      { return p.ReadI32(ctx) }
func readI64(ctx context.Context, p thrift.TProtocol) (int64, error)      { return p.ReadI64(ctx) }
func readDouble(ctx context.Context, p thrift.TProtocol) (float64, error) { return p.ReadDouble(ctx) }
func readString(ctx context.Context, p thrift.TProtocol) (string, error)  { return p.ReadString(ctx) }

func readBinary(ctx context.Context, p thrift.TProtocol) ([]byte, error) {
	b, err := p.ReadBinary(ctx)
	if err == nil && b == nil {
		b = []byte{} // present, even if empty
	}
	return b, err
}

func readEnum[E ~int32](ctx context.Context, p thrift.TProtocol) (E, error) {
	v, err := p.ReadI32(ctx)
	return E(v), err
}

func readStructPtr[T any, PT interface {
	*T
	thrift.TStruct
}](ctx context.Context, p thrift.TProtocol) (PT, error) {
	v := PT(new(T))
	return v, v.Read(ctx, p)
}

func writeBool(ctx context.Context, p thrift.TProtocol, v bool) error { return p.WriteBool(ctx, v) }
func writeByte(ctx context.Context, p thrift.TProtocol, v int8) error { return p.WriteByte(ctx, v) }
func writeI16(ctx context.Context, p thrift.TProtocol, v int16) error { return p.WriteI16(ctx, v) }
func writeI32(ctx context.Context, p thrift.TProtocol, v int32) error { return p.WriteI32(ctx, v) }
func writeI64(ctx context.Context, p thrift.TProtocol, v int64) error { return p.WriteI64(ctx, v) }
func writeDouble(ctx context.Context, p thrift.TProtocol, v float64) error {
	return p.WriteDouble(ctx, v)
}
func writeString(ctx context.Context, p thrift.TProtocol, v string) error {
	return p.WriteString(ctx, v)
}
func writeBinary(ctx context.Context, p thrift.TProtocol, v []byte) error {
	return p.WriteBinary(ctx, v)
}

func writeEnum[E ~int32](ctx context.Context, p thrift.TProtocol, v E) error {
	return p.WriteI32(ctx, int32(v))
}

func writeStructPtr[T any, PT interface {
	*T
	thrift.TStruct
}](ctx context.Context, p thrift.TProtocol, v PT) error {
	if v == nil {
		return invalid("nil %T in a container", v)
	}
	return v.Write(ctx, p)
}

// maxPrealloc caps how many container elements are allocated up front, whatever size a peer announces.
const maxPrealloc = 1024

func invalid(format string, args ...any) error {
	return thrift.NewTProtocolExceptionWithType(thrift.INVALID_DATA, fmt.Errorf(format, args...))
}

// seqBegin/seqEnd are the list- or set-specific ends of a sequence.
type seqBegin func(context.Context) (thrift.TType, int, error)
type seqEnd func(context.Context) error

func readList[T any](ctx context.Context, p thrift.TProtocol, et thrift.TType, r reader[T]) ([]T, error) {
	return readSeq(ctx, p, "list", et, r, p.ReadListBegin, p.ReadListEnd)
}

func readSet[T any](ctx context.Context, p thrift.TProtocol, et thrift.TType, r reader[T]) ([]T, error) {
	return readSeq(ctx, p, "set", et, r, p.ReadSetBegin, p.ReadSetEnd)
}

func readSeq[T any](ctx context.Context, p thrift.TProtocol, kind string, et thrift.TType, r reader[T], begin seqBegin, end seqEnd) ([]T, error) {
	t, n, err := begin(ctx)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, invalid("negative %s size %d", kind, n)
	}
	if n > 0 && t != et {
		return nil, invalid("%s of %s where %s of %s is expected", kind, t, kind, et)
	}
	out := make([]T, 0, min(n, maxPrealloc))
	for i := 0; i < n; i++ {
		v, err := r(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, end(ctx)
}

func readMap[K comparable, V any](ctx context.Context, p thrift.TProtocol, kt, vt thrift.TType, kr reader[K],
	vr reader[V]) (map[K]V, error) {
	k, v, n, err := p.ReadMapBegin(ctx)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, invalid("negative map size %d", n)
	}
	if n > 0 && (k != kt || v != vt) {
		return nil, invalid("map<%s,%s> where map<%s,%s> is expected", k, v, kt, vt)
	}
	out := make(map[K]V, min(n, maxPrealloc))
	for i := 0; i < n; i++ {
		key, err := kr(ctx, p)
		if err != nil {
			return nil, err
		}
		val, err := vr(ctx, p)
		if err != nil {
			return nil, err
		}
		out[key] = val
	}
	return out, p.ReadMapEnd(ctx)
}

func readEntries[K, V any](ctx context.Context, p thrift.TProtocol, kt, vt thrift.TType, kr reader[K],
	vr reader[V]) ([]MapEntry[K, V], error) {
	k, v, n, err := p.ReadMapBegin(ctx)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, invalid("negative map size %d", n)
	}
	if n > 0 && (k != kt || v != vt) {
		return nil, invalid("map<%s,%s> where map<%s,%s> is expected", k, v, kt, vt)
	}
	out := make([]MapEntry[K, V], 0, min(n, maxPrealloc))
	for i := 0; i < n; i++ {
		key, err := kr(ctx, p)
		if err != nil {
			return nil, err
		}
		val, err := vr(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, MapEntry[K, V]{Key: key, Value: val})
	}
	return out, p.ReadMapEnd(ctx)
}

func writeList[T any](ctx context.Context, p thrift.TProtocol, et thrift.TType, w writer[T], vs []T) error {
	return writeSeq(ctx, p, w, vs, p.WriteListBegin(ctx, et, len(vs)), p.WriteListEnd)
}

func writeSet[T any](ctx context.Context, p thrift.TProtocol, et thrift.TType, w writer[T], vs []T) error {
	return writeSeq(ctx, p, w, vs, p.WriteSetBegin(ctx, et, len(vs)), p.WriteSetEnd)
}

// writeSeq writes the elements after a list or set header (begun = its error).
func writeSeq[T any](ctx context.Context, p thrift.TProtocol, w writer[T], vs []T, begun error, end seqEnd) error {
	if begun != nil {
		return begun
	}
	for _, v := range vs {
		if err := w(ctx, p, v); err != nil {
			return err
		}
	}
	return end(ctx)
}

// writeMap writes entries sorted by key, so that equal maps always encode to the same bytes.
func writeMap[K cmp.Ordered, V any](ctx context.Context, p thrift.TProtocol, kt, vt thrift.TType, kw writer[K],
	vw writer[V], m map[K]V) error {
	if err := p.WriteMapBegin(ctx, kt, vt, len(m)); err != nil {
		return err
	}
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := kw(ctx, p, k); err != nil {
			return err
		}
		if err := vw(ctx, p, m[k]); err != nil {
			return err
		}
	}
	return p.WriteMapEnd(ctx)
}

func writeEntries[K, V any](ctx context.Context, p thrift.TProtocol, kt, vt thrift.TType, kw writer[K],
	vw writer[V], es []MapEntry[K, V]) error {
	if err := p.WriteMapBegin(ctx, kt, vt, len(es)); err != nil {
		return err
	}
	for _, e := range es {
		if err := kw(ctx, p, e.Key); err != nil {
			return err
		}
		if err := vw(ctx, p, e.Value); err != nil {
			return err
		}
	}
	return p.WriteMapEnd(ctx)
}

// fieldFunc reads one field whose canonical id and wire type are given; it reports whether it consumed the value.
type fieldFunc func(ctx context.Context, id int16, tt thrift.TType) (bool, error)

// readStruct reads a struct's fields, mapping wire ids through dl (nil: canonical ids) and skipping fields that
// field does not consume.
func readStruct(ctx context.Context, p thrift.TProtocol, name string, dl *Dialect, field fieldFunc) error {
	ctx, err := thrift.CheckRecursionDepth(ctx)
	if err != nil {
		return err
	}
	defer thrift.DecrementRecursionDepth(ctx)
	if _, err := p.ReadStructBegin(ctx); err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	for {
		_, tt, wireID, err := p.ReadFieldBegin(ctx)
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		if tt == thrift.STOP {
			break
		}
		id, ok := wireID, true
		if dl != nil {
			id, ok = dl.CanonicalID(wireID)
		}
		done := false
		if ok {
			if done, err = field(ctx, id, tt); err != nil {
				return fmt.Errorf("read %s.%s: %w", name, fieldName(name, id), err)
			}
		}
		if !done {
			if err := p.Skip(ctx, tt); err != nil {
				return fmt.Errorf("read %s: skip field %d: %w", name, wireID, err)
			}
		}
		if err := p.ReadFieldEnd(ctx); err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
	}
	if err := p.ReadStructEnd(ctx); err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	return nil
}

func fieldName(structName string, id int16) string {
	if s := LookupStruct(structName); s != nil {
		if f := s.FieldByID(id); f != nil {
			return f.Name
		}
	}
	return fmt.Sprintf("field%d", id)
}

// rf reads a field value into *dst if the wire type is the expected one.
func rf[T any](ctx context.Context, p thrift.TProtocol, tt, want thrift.TType, dst *T, r reader[T]) (bool, error) {
	if tt != want {
		return false, nil
	}
	v, err := r(ctx, p)
	if err != nil {
		return true, err
	}
	*dst = v
	return true, nil
}

// rfPtr is rf for a field held as a pointer.
func rfPtr[T any](ctx context.Context, p thrift.TProtocol, tt, want thrift.TType, dst **T, r reader[T]) (bool, error) {
	if tt != want {
		return false, nil
	}
	v, err := r(ctx, p)
	if err != nil {
		return true, err
	}
	*dst = &v
	return true, nil
}

// rfSet is rf for a default-requiredness string or enum field whose presence is tracked in set.
func rfSet[T any](ctx context.Context, p thrift.TProtocol, tt, want thrift.TType, dst *T, r reader[T], set *fieldSet,
	bit fieldSet) (bool, error) {
	done, err := rf(ctx, p, tt, want, dst, r)
	if done && err == nil {
		*set |= bit
	}
	return done, err
}

// structWriter writes one struct; the first error stops it.
type structWriter struct {
	ctx  context.Context
	p    thrift.TProtocol
	name string
	dl   *Dialect
	err  error
}

func beginWrite(ctx context.Context, p thrift.TProtocol, name string, dl *Dialect) structWriter {
	w := structWriter{ctx: ctx, p: p, name: name, dl: dl}
	if err := p.WriteStructBegin(ctx, name); err != nil {
		w.err = fmt.Errorf("write %s: %w", name, err)
	}
	return w
}

func (w *structWriter) end() error {
	if w.err != nil {
		return w.err
	}
	if err := w.p.WriteFieldStop(w.ctx); err != nil {
		return fmt.Errorf("write %s: %w", w.name, err)
	}
	if err := w.p.WriteStructEnd(w.ctx); err != nil {
		return fmt.Errorf("write %s: %w", w.name, err)
	}
	return nil
}

// wf writes a field if cond holds.
func wf[T any](w *structWriter, cond bool, id int16, name string, tt thrift.TType, v T, wr writer[T]) {
	if w.err != nil || !cond {
		return
	}
	if w.dl != nil {
		var ok bool
		if id, ok = w.dl.WireID(id); !ok {
			return
		}
	}
	if err := w.p.WriteFieldBegin(w.ctx, name, tt, id); err != nil {
		w.err = fmt.Errorf("write %s.%s: %w", w.name, name, err)
		return
	}
	if err := wr(w.ctx, w.p, v); err != nil {
		w.err = fmt.Errorf("write %s.%s: %w", w.name, name, err)
		return
	}
	if err := w.p.WriteFieldEnd(w.ctx); err != nil {
		w.err = fmt.Errorf("write %s.%s: %w", w.name, name, err)
	}
}

// wfPtr writes a field held as a pointer if it is set.
func wfPtr[T any](w *structWriter, id int16, name string, tt thrift.TType, v *T, wr writer[T]) {
	if v != nil {
		wf(w, true, id, name, tt, *v, wr)
	}
}

// wfReq writes a required field held as a pointer, slice or map; set false is an error.
func wfReq[T any](w *structWriter, set bool, id int16, name string, tt thrift.TType, v T, wr writer[T]) {
	if w.err == nil && !set {
		w.err = thrift.NewTProtocolExceptionWithType(thrift.INVALID_DATA,
			fmt.Errorf("write %s: required field %s is unset", w.name, name))
		return
	}
	wf(w, true, id, name, tt, v, wr)
}

// missingResult is the error of a call whose reply carries neither a result nor an exception.
func missingResult(method string) error {
	return thrift.NewTApplicationException(thrift.MISSING_RESULT, method+" failed: unknown result")
}
