package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

func strictSchema(t testing.TB, p thriftgen.ProfileSet) *StrictSchema {
	t.Helper()
	s, err := NewStrictSchema(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The frame of the front-door fuzz run (issue 9, defect 1): get_partitions_by_names
// whose names list declares i64 elements; Hive reads 11 empty strings, the
// STOP after them ends its call, and a get_table call follows that the proxy
// would never have seen.
func smuggled() []byte {
	var b []byte
	b = append(b, 0x80, 0x01, 0x00, 0x01)
	b = AppendString(b, "get_partitions_by_names")
	b = append(b, 0, 0, 0, 0x0b)
	b = append(AppendFieldHeader(b, TString, 1), AppendString(nil, "catalog2__hl_c2")...)
	b = append(AppendFieldHeader(b, TString, 2), AppendString(nil, "t2")...)
	b = append(AppendFieldHeader(b, TList, 3), TI64, 0, 0, 0, 0x0b)
	b = append(b, make([]byte, 44)...)
	b = append(b, TStop)
	b = append(b, 0x80, 0x01, 0x00, 0x01)
	b = AppendString(b, "get_table")
	b = append(b, 0, 0, 0x03, 0x86)
	b = append(AppendFieldHeader(b, TString, 1), AppendString(nil, "hl_c2")...)
	b = append(AppendFieldHeader(b, TString, 2), AppendString(nil, "t2")...)
	b = append(b, TStop, TStop)
	return b
}

func TestStrictRefusesTheSmuggledFrame(t *testing.T) {
	raw := smuggled()
	if len(raw) != 163 {
		t.Fatalf("the frame of the issue is 163 bytes, built %d:\n%s", len(raw), hex.Dump(raw))
	}
	// The generic walk sees one call that ends exactly at the end: the defect.
	if _, err := ParseMessage(raw, 0); err != nil {
		t.Fatalf("precondition: the lax walk accepts the frame as one call: %v", err)
	}
	rd := NewLazyReader(bytes.NewReader(raw), 1<<20, nil)
	var m Message
	err := rd.NextCall(&m, strictSchema(t, 0))
	var se *StrictError
	if !errors.As(err, &se) || se.Reason != ReasonElementType {
		t.Fatalf("want an element_type refusal, got %v", err)
	}
	if se.Header.Name != "get_partitions_by_names" || se.Header.SeqID != 11 {
		t.Fatalf("the refusal must carry the header to answer the client: %+v", se.Header)
	}
	if !strings.Contains(se.Detail, "names") || !strings.Contains(se.Detail, "list<string>") {
		t.Fatalf("the refusal names the field and the schema type: %s", se.Detail)
	}
}

func call(name string, typ byte, body Value) []byte {
	return AppendMessage(nil, Header{Name: name, Type: typ, SeqID: 7}, &body)
}

func TestStrictRefusals(t *testing.T) {
	s := strictSchema(t, 0)
	uuidField := func() []byte {
		b := AppendHeader(nil, Header{Name: "get_table", Type: Call, SeqID: 1})
		b = append(AppendFieldHeader(b, TString, 1), AppendString(nil, "db")...)
		b = AppendFieldHeader(b, TUUID, 99)
		b = append(b, make([]byte, 16)...)
		return append(b, TStop)
	}
	cases := []struct {
		name, reason string
		raw          []byte
	}{
		{"known field of another wire type", ReasonFieldType,
			call("get_table", Call, Struct(Field{1, I32(5)}))},
		{"unknown field of wire type uuid", ReasonUnknownType, uuidField()},
		{"void inside an unknown field's list", ReasonUnknownType,
			call("get_table", Call, Struct(Field{40, Value{Type: TList, ElemType: TVoid}}))},
		{"map of another key type", ReasonElementType,
			call("alter_database", Call, Struct(Field{2, Struct(Field{4, Value{Type: TMap, KeyType: TI32, ElemType: TString}})}))},
		{"set sent as a list", ReasonFieldType,
			call("get_partitions_by_names", Call, Struct(Field{3, Value{Type: TSet, ElemType: TString}}))},
		{"ONEWAY for a method that is not oneway", ReasonMessageType,
			call("get_table", Oneway, Struct(Field{1, Str("db")}, Field{2, Str("t")}))},
		{"ONEWAY for an unknown method", ReasonMessageType, call("no_such_method", Oneway, Struct())},
		{"a REPLY from a client", ReasonMessageType, call("get_table", Reply, Struct())},
		{"nested struct field of another type", ReasonFieldType,
			call("create_table", Call, Struct(Field{1, Struct(Field{7, Struct(Field{1, Str("not a list")})})}))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.CheckCall(c.raw, 0)
			var se *StrictError
			if !errors.As(err, &se) || se.Reason != c.reason {
				t.Fatalf("want %s, got %v", c.reason, err)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatal("a strict refusal is a malformed message")
			}
		})
	}
}

func TestStrictPassesWhatRealClientsSend(t *testing.T) {
	s := strictSchema(t, 0)
	tbl := Struct(Field{1, Str("orders")}, Field{2, Str("sales")},
		Field{7, Struct(Field{1, List(TStruct, Struct(Field{1, Str("id")}, Field{2, Str("bigint")}))},
			Field{5, Bool(false)}, Field{6, I32(-1)})},
		Field{8, List(TStruct, Struct(Field{1, Str("p")}, Field{2, Str("string")}))},
		Field{9, Value{Type: TMap, KeyType: TString, ElemType: TString, Elems: []Value{Str("k"), Str("v")}}},
		Field{31, I64(-1)}, // unknown to every version: passes as it is
		Field{1200, List(TList, List(TI64, I64(1), I64(2)))},
	)
	raws := [][]byte{
		call("create_table", Call, Struct(Field{1, tbl})),
		call("get_partitions_by_names", Call, Struct(Field{1, Str("db")}, Field{2, Str("t")}, Field{3, List(TString, Str("p=1"))})),
		call("shutdown", Oneway, Struct()),
		call("shutdown", Call, Struct()),
		call("no_such_method", Call, Struct(Field{1, List(TI64, I64(3))})), // unknown method: read generically
		call("lock", Call, Struct(Field{1, Struct(Field{1, List(TStruct, Struct(Field{1, I32(3)}, Field{2, I32(2)}, Field{3, Str("db")}))},
			Field{2, I64(4)}, Field{3, Str("u")}, Field{4, Str("h")})})),
	}
	for _, raw := range raws {
		m, err := s.CheckCall(raw, 0)
		if err != nil {
			t.Fatalf("a well-formed call was refused: %v", err)
		}
		if !bytes.Equal(m.Raw, raw) {
			t.Fatal("strict reading changed the message")
		}
	}
}

// HDP 3.1.5 numbers Table's accessType 23 (a byte) where the canonical schema
// has a list there: strict reading follows the front door's own numbering.
func TestStrictFollowsTheProfileDialect(t *testing.T) {
	raw := call("create_table", Call, Struct(Field{1, Struct(Field{1, Str("t")}, Field{23, Value{Type: TByte, Int: 8}})}))
	if _, err := strictSchema(t, thriftgen.ProfileHDP315).CheckCall(raw, 0); err != nil {
		t.Fatalf("HDP 3.1.5's own Table refused at an HDP 3.1.5 front door: %v", err)
	}
	if _, err := strictSchema(t, thriftgen.ProfileApache410).CheckCall(raw, 0); err == nil {
		t.Fatal("a byte in Table field 23 must be refused where 23 is a list<string>")
	}
}

// A peer that declares a 100 MiB string and sends 4 KiB makes the reader
// hold a few KiB, not 100 MiB.
func TestReaderGrowsWithBytesReceivedNotDeclared(t *testing.T) {
	var b []byte
	b = AppendHeader(b, Header{Name: "get_table", Type: Call, SeqID: 1})
	b = AppendFieldHeader(b, TString, 1)
	b = append(b, 0x06, 0x40, 0x00, 0x00) // 100 MiB declared
	b = append(b, make([]byte, 4096)...)
	rd := NewLazyReader(bytes.NewReader(b), 200<<20, nil)
	var m Message
	err := rd.NextCall(&m, strictSchema(t, 0))
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("want truncated, got %v", err)
	}
	if c := cap(rd.buf); c > 64<<10 {
		t.Fatalf("reader holds %d bytes for 4 KiB received", c)
	}
}

// Readers sharing a budget cannot together hold more than it; one that cannot
// grow in time fails with ErrBudget, and bytes come back when a reader closes.
func TestBudgetBoundsWhatReadersHold(t *testing.T) {
	budget := NewBudget(256<<10, 50*time.Millisecond)
	big := call("get_table", Call, Struct(Field{1, Str(strings.Repeat("x", 200<<10))}, Field{2, Str("t")}))
	pr1, pw1 := io.Pipe()
	go func() { _, _ = pw1.Write(big[:len(big)-1]) }() // all but the last byte: the reader keeps its buffer
	r1 := NewLazyReader(pr1, 1<<20, budget)
	done := make(chan error, 1)
	go func() { var m Message; done <- r1.NextCall(&m, strictSchema(t, 0)) }()
	deadline := time.Now().Add(5 * time.Second)
	for budget.Used() < 150<<10 {
		if time.Now().After(deadline) {
			t.Fatalf("the first reader holds only %d bytes of its 200 KiB message", budget.Used())
		}
		time.Sleep(5 * time.Millisecond)
	}
	r2 := NewLazyReader(bytes.NewReader(big), 1<<20, budget)
	var m Message
	if err := r2.NextCall(&m, strictSchema(t, 0)); !errors.Is(err, ErrBudget) {
		t.Fatalf("a second 200 KiB message within a 256 KiB budget: want ErrBudget, got %v", err)
	}
	r2.Close()
	pw1.CloseWithError(io.ErrUnexpectedEOF)
	<-done
	r1.Close()
	if budget.Used() != 0 {
		t.Fatalf("a closed reader still holds %d budget bytes", budget.Used())
	}
	r3 := NewLazyReader(bytes.NewReader(big), 1<<20, budget)
	if err := r3.NextCall(&m, strictSchema(t, 0)); err != nil {
		t.Fatalf("after the first reader closed the budget is free again: %v", err)
	}
}

// A lazy reader between messages holds no buffer.
func TestLazyReaderHoldsNothingBetweenMessages(t *testing.T) {
	one := call("get_table", Call, Struct(Field{1, Str("db")}, Field{2, Str("t")}))
	pr, pw := io.Pipe()
	go func() { _, _ = pw.Write(one); _, _ = pw.Write(one) }()
	rd := NewLazyReader(pr, 1<<20, NewBudget(1<<20, time.Second))
	var m Message
	s := strictSchema(t, 0)
	if err := rd.NextCall(&m, s); err != nil {
		t.Fatal(err)
	}
	if err := rd.NextCall(&m, s); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- rd.NextCall(&m, s) }() // waits for a third message that never comes
	time.Sleep(50 * time.Millisecond)
	pw.Close()
	if err := <-got; !errors.Is(err, io.EOF) {
		t.Fatalf("clean end of stream: %v", err)
	}
	if rd.buf != nil {
		t.Fatalf("an idle reader holds a %d-byte buffer", cap(rd.buf))
	}
}
