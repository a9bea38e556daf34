package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// sample builds a message resembling a get_table reply: nested structs,
// lists, a map, every scalar type and an unknown (id 99) field.
func sample() Value {
	cols := List(TStruct,
		Struct(Field{1, Str("id")}, Field{2, Str("bigint")}),
		Struct(Field{1, Str("name")}, Field{2, Str("string")}))
	params := Value{Type: TMap, KeyType: TString, ElemType: TString, Elems: []Value{Str("k1"), Str("v1"), Str("k2"), Str("v2")}}
	skewMap := Value{Type: TMap, KeyType: TList, ElemType: TString, Elems: []Value{
		List(TString, Str("a"), Str("1")), Str("hdfs://x/a=1"),
	}}
	tbl := Struct(
		Field{1, Str("orders")}, Field{2, Str("sales")}, Field{3, Str("alice")},
		Field{4, I32(1700000000)}, Field{7, Struct(Field{1, cols}, Field{2, skewMap})},
		Field{9, params}, Field{16, Bool(true)}, Field{17, Value{Type: TDouble, Dbl: 2.5}},
		Field{18, Value{Type: TI16, Int: -3}}, Field{19, Value{Type: TByte, Int: -1}},
		Field{20, I64(-1 << 40)}, Field{99, Str("field from a future Hive")},
	)
	return Struct(Field{0, tbl})
}

func TestValueRoundTripIsByteExact(t *testing.T) {
	v := sample()
	enc := v.Encode()
	back, err := DecodeStruct(enc)
	if err != nil {
		t.Fatal(err)
	}
	if again := back.Encode(); !bytes.Equal(enc, again) {
		t.Fatalf("re-encoding changed %d bytes into %d bytes", len(enc), len(again))
	}
	if got := back.Field(0).Field(99).String(); got != "field from a future Hive" {
		t.Fatalf("unknown field lost: %q", got)
	}
}

func msgBytes(name string, body Value) []byte {
	return AppendMessage(nil, Header{Name: name, Type: Reply, SeqID: 7}, &body)
}

func TestReadMessageFromStreamKeepsBoundaries(t *testing.T) {
	one, two := msgBytes("get_table", sample()), msgBytes("get_all_databases", Struct(Field{0, List(TString, Str("a"))}))
	r := bufio.NewReader(bytes.NewReader(append(append([]byte{}, one...), two...)))
	m1, err := ReadMessage(r, Limits{}, nil)
	if err != nil || m1.Name != "get_table" || !bytes.Equal(m1.Raw, one) || m1.SeqID != 7 {
		t.Fatalf("first message: %v %+v", err, m1)
	}
	m2, err := ReadMessage(r, Limits{}, nil)
	if err != nil || m2.Name != "get_all_databases" || !bytes.Equal(m2.Raw, two) {
		t.Fatalf("second message: %v", err)
	}
	if _, err := ReadMessage(r, Limits{}, nil); err != io.EOF {
		t.Fatalf("want io.EOF at a clean end, got %v", err)
	}
}

func TestReadMessageRejectsBadInput(t *testing.T) {
	good := msgBytes("get_table", sample())
	huge := AppendHeader(nil, Header{Name: "get_table", Type: Call, SeqID: 1})
	huge = append(huge, TString, 0, 1, 0x7f, 0xff, 0xff, 0xff) // string field claiming 2 GiB
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"truncated", good[:len(good)-5], ErrTruncated},
		{"garbage version", []byte{0x81, 0x02, 0, 1, 0, 0, 0, 0}, ErrMalformed},
		{"declared string beyond limit", huge, ErrTooLarge},
		{"message beyond limit", good, ErrTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lim := Limits{MaxMessage: 1 << 20}
			if c.name == "message beyond limit" {
				lim.MaxMessage = len(good) / 2
			}
			_, err := ReadMessage(bufio.NewReader(bytes.NewReader(c.in)), lim, nil)
			if !errors.Is(err, c.want) {
				t.Fatalf("want %v, got %v", c.want, err)
			}
		})
	}
}

func TestDeepNestingIsRefused(t *testing.T) {
	b := AppendHeader(nil, Header{Name: "x", Type: Call, SeqID: 1})
	for i := 0; i < 200; i++ {
		b = AppendFieldHeader(b, TStruct, 1)
	}
	_, err := ReadMessage(bufio.NewReader(bytes.NewReader(b)), Limits{}, nil)
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("want ErrMalformed for 200 nested structs, got %v", err)
	}
}

func TestFramedRoundTrip(t *testing.T) {
	one := msgBytes("get_table", sample())
	var buf bytes.Buffer
	if err := WriteFramed(&buf, one); err != nil {
		t.Fatal(err)
	}
	m, err := ReadFramed(bufio.NewReader(&buf), Limits{})
	if err != nil || !bytes.Equal(m.Raw, one) {
		t.Fatalf("framed: %v", err)
	}
	var bad bytes.Buffer
	bad.Write([]byte{0x7f, 0, 0, 0})
	if _, err := ReadFramed(bufio.NewReader(&bad), Limits{MaxMessage: 1024}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized frame: %v", err)
	}
}

func TestApplySplicesOnlyPatchedSpans(t *testing.T) {
	src := []byte("0123456789")
	got := Apply(nil, src, []Patch{{Start: 1, End: 3, Data: []byte("ab")}, {Start: 5, End: 5, Data: []byte("X")}, {Start: 8, End: 10}})
	if string(got) != "0ab34X567" {
		t.Fatalf("got %q", got)
	}
}

func TestAppExceptionParses(t *testing.T) {
	raw := AppException("nope", 3, AppUnknownMethod, "Invalid method name: 'nope'")
	m, err := ParseMessage(raw, 0)
	if err != nil || m.Type != Exception || m.SeqID != 3 {
		t.Fatalf("%v %+v", err, m)
	}
	typ, msg, err := ParseAppException(m.Body())
	if err != nil || typ != AppUnknownMethod || msg != "Invalid method name: 'nope'" {
		t.Fatalf("%d %q %v", typ, msg, err)
	}
}
