package wire

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

const roleName Role = 1

// Reading with NextWalk reports the same spans (relative to the body) as a
// separate Walk over the finished body, also when the reply arrives one
// byte at a time and the reader's buffer grows and moves underneath.
func TestNextWalkEqualsWalkAfterRead(t *testing.T) {
	comp := NewCompiler(func(s string, f *thriftgen.Field) Role {
		if f.Name == "dbName" || f.Name == "catName" {
			return roleName
		}
		return RoleNone
	})
	plan, err := comp.Plan("get_table_result")
	if err != nil || plan == nil {
		t.Fatalf("plan: %v", err)
	}
	tbl := Struct(Field{1, Str("orders")}, Field{2, Str("sales")}, Field{3, Str("owner")},
		Field{7, Struct(Field{1, List(TStruct, Struct(Field{1, Str("id")}, Field{2, Str("bigint")}))})},
		Field{9, Value{Type: TMap, KeyType: TString, ElemType: TString, Elems: []Value{Str("k"), Str(string(make([]byte, 70000)))}}},
		Field{17, Str("hive")})
	reply := AppendMessage(nil, Header{Name: "get_table", Type: Reply, SeqID: 3}, ptrValue(Struct(Field{0, tbl})))
	stream := append(append([]byte{}, reply...), reply...)

	type span struct {
		start, end int
		val        string
	}
	collect := func(dst *[]span) func(*Span) error {
		return func(s *Span) error {
			*dst = append(*dst, span{s.Start, s.End, string(s.Val)})
			return nil
		}
	}
	for _, src := range []io.Reader{bytes.NewReader(stream), iotest.OneByteReader(bytes.NewReader(stream))} {
		rd := NewReader(src, 0)
		for i := 0; i < 2; i++ {
			var during, after []span
			var m Message
			if err := rd.NextWalk(&m, plan, collect(&during)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(m.Raw, reply) {
				t.Fatalf("message %d differs from what was sent", i)
			}
			if err := Walk(m.Body(), plan, 0, collect(&after)); err != nil {
				t.Fatal(err)
			}
			if len(during) != 2 || len(during) != len(after) {
				t.Fatalf("spans during read %v, after %v", during, after)
			}
			for k := range during {
				if during[k] != after[k] {
					t.Fatalf("span %d: during read %+v, after %+v", k, during[k], after[k])
				}
			}
		}
	}
}

func ptrValue(v Value) *Value { return &v }
