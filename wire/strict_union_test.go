package wire

import (
	"errors"
	"strings"
	"testing"
)

// A union holds exactly one field: Hive's union reader reads one and takes
// the next field header for the STOP. Two fields, or none, are refused
// (found by the differential harness, testbed/difftest); one field, known or
// not, passes. Reproduced against Hive's own readers in
// testbed/difftest.TestUnionsHiveReadsDifferentlyAreRefused.
func TestStrictUnionsHoldOneField(t *testing.T) {
	s := strictSchema(t, 0)
	stats := func(data Value) []byte {
		obj := Struct(Field{1, Str("c")}, Field{2, Str("bigint")}, Field{3, data})
		cs := Struct(Field{1, Struct(Field{1, Bool(true)}, Field{2, Str("db")}, Field{3, Str("t")})}, Field{2, List(TStruct, obj)})
		return call("update_table_column_statistics", Call, Struct(Field{1, cs}))
	}
	long := Struct(Field{3, I64(0)}, Field{4, I64(1)})
	for _, ok := range []Value{
		Struct(Field{2, long}),
		Struct(Field{99, Str("a member this schema does not know")}),
	} {
		if _, err := s.CheckCall(stats(ok), 0); err != nil {
			t.Fatalf("a union with one field: %v", err)
		}
	}
	for name, bad := range map[string]Value{
		"no field":                     Struct(),
		"two fields":                   Struct(Field{2, long}, Field{3, Struct()}),
		"a known and an unknown field": Struct(Field{2, long}, Field{99, Str("x")}),
	} {
		_, err := s.CheckCall(stats(bad), 0)
		var se *StrictError
		if !errors.As(err, &se) || se.Reason != ReasonUnion {
			t.Fatalf("%s: want a union refusal, got %v", name, err)
		}
		if !strings.Contains(se.Detail, "ColumnStatisticsObj.statsData") || !strings.Contains(se.Detail, "ColumnStatisticsData") {
			t.Fatalf("%s: the refusal names the field and the union: %s", name, se.Detail)
		}
	}
}
