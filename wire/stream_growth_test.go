package wire

import (
	"bytes"
	"testing"
	"time"
)

// A call of many small fields larger than the base buffer is read in time
// linear in its size: the buffer doubles, it does not grow by the few bytes
// the next field needs (that copied the whole buffer per field: a 160 KB
// get_partitions_by_names took 2 s, a 1 MB one minutes). Bounded generously:
// 400 KB of short names take milliseconds; growing by the field, about 15 s.
func TestReaderGrowthIsLinear(t *testing.T) {
	names := make([]Value, 0, 50_000)
	for i := 0; i < cap(names); i++ {
		names = append(names, Str("p=01"))
	}
	raw := call("get_partitions_by_names", Call, Struct(Field{1, Str("db")}, Field{2, Str("t")}, Field{3, List(TString, names...)}))
	s := strictSchema(t, 0)
	for _, next := range []func(*Reader, *Message) error{
		func(rd *Reader, m *Message) error { return rd.NextCall(m, s) },
		func(rd *Reader, m *Message) error { return rd.Next(m) },
	} {
		rd := NewLazyReader(bytes.NewReader(raw), 100<<20, nil)
		var m Message
		start := time.Now()
		if err := next(rd, &m); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("reading a %d-byte call took %v", len(raw), d)
		}
		if len(m.Raw) != len(raw) || cap(rd.buf) > 2*len(raw) {
			t.Fatalf("read %d of %d bytes into a %d-byte buffer", len(m.Raw), len(raw), cap(rd.buf))
		}
		rd.Close()
	}
}
