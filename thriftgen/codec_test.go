package thriftgen

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"
)

func newProto(b []byte) (*thrift.TMemoryBuffer, thrift.TProtocol) {
	buf := thrift.NewTMemoryBuffer()
	buf.Write(b)
	return buf, thrift.NewTBinaryProtocolConf(buf, nil)
}

type wireField struct {
	id int16
	tt thrift.TType
}

// topFields lists the (wire id, type) of a struct's top-level fields in wire order.
func topFields(t *testing.T, b []byte) []wireField {
	t.Helper()
	ctx := context.Background()
	_, p := newProto(b)
	if _, err := p.ReadStructBegin(ctx); err != nil {
		t.Fatal(err)
	}
	var out []wireField
	for {
		_, tt, id, err := p.ReadFieldBegin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if tt == thrift.STOP {
			return out
		}
		out = append(out, wireField{id, tt})
		if err := p.Skip(ctx, tt); err != nil {
			t.Fatal(err)
		}
	}
}

// rawSkewedInfo encodes a SkewedInfo by hand, as a Java peer would, with map<list<string>,string> entries in a
// non-sorted order and an empty-list key.
func rawSkewedInfo(t *testing.T) []byte {
	ctx := context.Background()
	buf := thrift.NewTMemoryBuffer()
	p := thrift.NewTBinaryProtocolConf(buf, nil)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	strList := func(ss ...string) {
		must(p.WriteListBegin(ctx, thrift.STRING, len(ss)))
		for _, s := range ss {
			must(p.WriteString(ctx, s))
		}
		must(p.WriteListEnd(ctx))
	}
	must(p.WriteStructBegin(ctx, "SkewedInfo"))
	must(p.WriteFieldBegin(ctx, "skewedColNames", thrift.LIST, 1))
	strList("c1", "c2")
	must(p.WriteFieldEnd(ctx))
	must(p.WriteFieldBegin(ctx, "skewedColValues", thrift.LIST, 2))
	must(p.WriteListBegin(ctx, thrift.LIST, 2))
	strList("z", "1")
	strList("a", "2")
	must(p.WriteListEnd(ctx))
	must(p.WriteFieldEnd(ctx))
	must(p.WriteFieldBegin(ctx, "skewedColValueLocationMaps", thrift.MAP, 3))
	must(p.WriteMapBegin(ctx, thrift.LIST, thrift.STRING, 3))
	strList("z", "1")
	must(p.WriteString(ctx, "/w/t/c1=z/c2=1"))
	strList()
	must(p.WriteString(ctx, "/w/t/HIVE_DEFAULT_LIST_BUCKETING_DIR_NAME"))
	strList("a", "2")
	must(p.WriteString(ctx, "/w/t/c1=a/c2=2"))
	must(p.WriteMapEnd(ctx))
	must(p.WriteFieldEnd(ctx))
	must(p.WriteFieldStop(ctx))
	must(p.WriteStructEnd(ctx))
	return buf.Bytes()
}

func TestSkewedLocationMapsPassThroughUnchanged(t *testing.T) {
	ctx := context.Background()
	raw := rawSkewedInfo(t)
	var s SkewedInfo
	decode(t, ctx, raw, &s)
	want := []MapEntry[[]string, string]{
		{Key: []string{"z", "1"}, Value: "/w/t/c1=z/c2=1"},
		{Key: []string{}, Value: "/w/t/HIVE_DEFAULT_LIST_BUCKETING_DIR_NAME"},
		{Key: []string{"a", "2"}, Value: "/w/t/c1=a/c2=2"},
	}
	if !reflect.DeepEqual(s.SkewedColValueLocationMaps, want) {
		t.Fatalf("skewedColValueLocationMaps = %#v", s.SkewedColValueLocationMaps)
	}
	if out := encode(t, ctx, &s); !bytes.Equal(out, raw) {
		t.Fatalf("SkewedInfo re-encoded differently:\n got %x\nwant %x", out, raw)
	}
}

func TestTableFullRoundTripKeepsEveryField(t *testing.T) {
	ctx := context.Background()
	in := fullTable()
	var out Table
	decode(t, ctx, encode(t, ctx, in), &out)
	if diff := exportedDiff(reflect.ValueOf(in), reflect.ValueOf(&out), "Table"); diff != "" {
		t.Fatalf("Table changed in a round trip: %s", diff)
	}
	// every canonical Table field is set in fullTable and present on the wire
	ids := map[int16]bool{}
	for _, f := range topFields(t, encode(t, ctx, in)) {
		ids[f.id] = true
	}
	for _, f := range LookupStruct("Table").Fields {
		if !ids[f.ID] {
			t.Errorf("Table field %d %s not written", f.ID, f.Name)
		}
	}
}

// exportedDiff compares the exported fields of two values deeply (presence bookkeeping is not compared) and
// describes the first difference.
func exportedDiff(a, b reflect.Value, path string) string {
	if a.Kind() != b.Kind() {
		return path + ": kinds differ"
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return path + ": nil vs non-nil"
			}
			return ""
		}
		return exportedDiff(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if !a.Type().Field(i).IsExported() {
				continue
			}
			if d := exportedDiff(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
		return ""
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return path + ": slices differ in nil-ness or length"
		}
		for i := 0; i < a.Len(); i++ {
			if d := exportedDiff(a.Index(i), b.Index(i), path+"[]"); d != "" {
				return d
			}
		}
		return ""
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return path + ": maps differ in nil-ness or length"
		}
		for _, k := range a.MapKeys() {
			if !b.MapIndex(k).IsValid() {
				return path + ": key missing"
			}
			if d := exportedDiff(a.MapIndex(k), b.MapIndex(k), path+"{}"); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(a.Interface(), b.Interface()) {
		return path + ": " + reflect.ValueOf(a.Interface()).String() + " vs " + reflect.ValueOf(b.Interface()).String()
	}
	return ""
}

func TestHDP315TableDialect(t *testing.T) {
	at := int8(2)
	id := int64(77)
	in := &Table{TableName: "t", AccessType: &at, RequiredReadCapabilities: []string{"r"},
		RequiredWriteCapabilities: []string{"w1", "w2"}, Id: &id}
	hdp := WithWireProfile(context.Background(), ProfileHDP315)

	raw := encode(t, hdp, in)
	got := topFields(t, raw)
	// 4-6 are default-requiredness i32 fields, always written (as Java does)
	want := []wireField{{1, thrift.STRING}, {4, thrift.I32}, {5, thrift.I32}, {6, thrift.I32}, {23, thrift.BYTE},
		{24, thrift.LIST}, {25, thrift.LIST}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("HDP 3.1.5 wire fields %v, want %v (Apache id 25 must not be sent)", got, want)
	}
	var back Table
	decode(t, hdp, raw, &back)
	if *back.AccessType != 2 || !reflect.DeepEqual(back.RequiredReadCapabilities, []string{"r"}) ||
		!reflect.DeepEqual(back.RequiredWriteCapabilities, []string{"w1", "w2"}) || back.Id != nil {
		t.Fatalf("HDP 3.1.5 Table read back as %+v", back)
	}

	// canonical (Apache 4.x) ids without the dialect
	got = topFields(t, encode(t, context.Background(), in))
	want = []wireField{{1, thrift.STRING}, {4, thrift.I32}, {5, thrift.I32}, {6, thrift.I32}, {22, thrift.BYTE},
		{23, thrift.LIST}, {24, thrift.LIST}, {25, thrift.I64}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("canonical wire fields %v, want %v", got, want)
	}
	// an HDP 3.1.5 message read as Apache 4.x misplaces nothing silently: wrong-typed ids are skipped
	var apache Table
	decode(t, context.Background(), raw, &apache)
	if apache.AccessType != nil || apache.Id != nil || !reflect.DeepEqual(apache.RequiredReadCapabilities, []string{"w1", "w2"}) {
		t.Logf("as Apache: %+v", apache)
	}
	// a nested Table (inside a result) is mapped too
	res := &GetTableMethodResult{Success: in}
	var resBack GetTableMethodResult
	decode(t, hdp, encode(t, hdp, res), &resBack)
	if resBack.Success == nil || resBack.Success.AccessType == nil || *resBack.Success.AccessType != 2 {
		t.Fatalf("nested Table lost accessType: %+v", resBack.Success)
	}
	// HDP-78 has no dialect: canonical ids up to 20, higher ones are unknown to the peer
	if !bytes.Equal(encode(t, WithWireProfile(context.Background(), ProfileHDP78), in), encode(t, context.Background(), in)) {
		t.Fatal("HDP-78 must use canonical ids")
	}
}

func TestApache313CreateISchemaDialect(t *testing.T) {
	ctx313 := WithWireProfile(context.Background(), ProfileApache313)
	in := &CreateIschemaResult{O2: &NoSuchObjectException{Message: "no such schema"}}
	raw := encode(t, ctx313, in)
	if got := topFields(t, raw); !reflect.DeepEqual(got, []wireField{{-1, thrift.STRUCT}}) {
		t.Fatalf("3.1.3 create_ischema_result wire fields %v, want [-1]", got)
	}
	var back CreateIschemaResult
	decode(t, ctx313, raw, &back)
	if back.O2 == nil || back.O2.Message != "no such schema" {
		t.Fatalf("o2 lost: %+v", back)
	}
	if got := topFields(t, encode(t, context.Background(), in)); !reflect.DeepEqual(got, []wireField{{2, thrift.STRUCT}}) {
		t.Fatalf("canonical create_ischema_result wire fields %v, want [2]", got)
	}
}

func TestWithWireProfileRejectsSets(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "not a single profile") {
			t.Fatalf("recover = %v", r)
		}
	}()
	WithWireProfile(context.Background(), ProfileHDP78|ProfileHDP315)
}

func TestUnknownFieldsAndValuesPassThrough(t *testing.T) {
	ctx := context.Background()
	buf := thrift.NewTMemoryBuffer()
	p := thrift.NewTBinaryProtocolConf(buf, nil)
	_ = p.WriteStructBegin(ctx, "LockComponent")
	_ = p.WriteFieldBegin(ctx, "x", thrift.STRING, 99) // unknown id
	_ = p.WriteString(ctx, "ignored")
	_ = p.WriteFieldEnd(ctx)
	_ = p.WriteFieldBegin(ctx, "type", thrift.STRING, 1) // known id, wrong type
	_ = p.WriteString(ctx, "ignored too")
	_ = p.WriteFieldEnd(ctx)
	_ = p.WriteFieldBegin(ctx, "level", thrift.I32, 2) // enum value no profile knows
	_ = p.WriteI32(ctx, 42)
	_ = p.WriteFieldEnd(ctx)
	_ = p.WriteFieldBegin(ctx, "dbname", thrift.STRING, 3)
	_ = p.WriteString(ctx, "db")
	_ = p.WriteFieldEnd(ctx)
	_ = p.WriteFieldStop(ctx)
	_ = p.WriteStructEnd(ctx)
	var lc LockComponent
	decode(t, ctx, buf.Bytes(), &lc)
	if lc.Level != 42 || lc.Dbname != "db" || lc.Type != 0 {
		t.Fatalf("LockComponent = %+v", lc)
	}
	var back LockComponent
	decode(t, ctx, encode(t, ctx, &lc), &back)
	if back.Level != 42 || LockLevel(42).String() != "LockLevel(42)" {
		t.Fatalf("unknown enum value not kept: %+v", back)
	}
}

func TestDefaultStringPresence(t *testing.T) {
	ctx := context.Background()
	// a Java peer leaves a null default string out; it must stay out (not become "")
	absent := encode(t, ctx, &Database{Name: "db"})
	var d Database
	decode(t, ctx, absent, &d)
	for _, f := range topFields(t, encode(t, ctx, &d)) {
		if f.id == 3 { // locationUri
			t.Fatal("absent locationUri was written")
		}
	}
	// a present empty string stays present
	var e Database
	if !e.MarkPresent(3) || e.MarkPresent(99) {
		t.Fatal("MarkPresent must accept exactly the tracked fields")
	}
	withEmpty := encode(t, ctx, &e)
	var e2 Database
	decode(t, ctx, withEmpty, &e2)
	if out := encode(t, ctx, &e2); !bytes.Equal(out, withEmpty) {
		t.Fatal("present empty locationUri not kept")
	}
	found := false
	for _, f := range topFields(t, withEmpty) {
		found = found || f.id == 3
	}
	if !found {
		t.Fatal("MarkPresent did not make Write send locationUri")
	}
}

func TestDecimalKeepsJavaWireOrder(t *testing.T) {
	got := topFields(t, encode(t, context.Background(), &Decimal{Unscaled: []byte{1}, Scale: 2}))
	if !reflect.DeepEqual(got, []wireField{{3, thrift.I16}, {1, thrift.STRING}}) {
		t.Fatalf("Decimal wire order %v, want 3 (scale) then 1 (unscaled) as declared and as Java writes it", got)
	}
}

func TestRequiredNilIsAnError(t *testing.T) {
	buf := thrift.NewTMemoryBuffer()
	err := (&GetValidWriteIdsRequest{}).Write(context.Background(), thrift.NewTBinaryProtocolConf(buf, nil))
	if err == nil || !strings.Contains(err.Error(), "GetValidWriteIdsRequest") || !strings.Contains(err.Error(), "fullTableNames") {
		t.Fatalf("err = %v, want one naming GetValidWriteIdsRequest.fullTableNames", err)
	}
	var pe thrift.TProtocolException
	if !errors.As(err, &pe) {
		t.Fatalf("err %T is not a TProtocolException", err)
	}
}

func TestTruncatedInputFailsCleanly(t *testing.T) {
	ctx := context.Background()
	raw := encode(t, ctx, fullTable())
	for _, n := range []int{1, len(raw) / 3, len(raw) - 1} {
		var tbl Table
		_, p := newProto(raw[:n])
		err := tbl.Read(ctx, p)
		if err == nil || !strings.Contains(err.Error(), "Table") {
			t.Fatalf("truncated at %d: err = %v", n, err)
		}
	}
}

func TestMismatchedElementTypeIsAnError(t *testing.T) {
	ctx := context.Background()
	buf := thrift.NewTMemoryBuffer()
	p := thrift.NewTBinaryProtocolConf(buf, nil)
	_ = p.WriteStructBegin(ctx, "SkewedInfo")
	_ = p.WriteFieldBegin(ctx, "skewedColNames", thrift.LIST, 1)
	_ = p.WriteListBegin(ctx, thrift.I32, 1)
	_ = p.WriteI32(ctx, 5)
	_ = p.WriteListEnd(ctx)
	_ = p.WriteFieldEnd(ctx)
	_ = p.WriteFieldStop(ctx)
	_ = p.WriteStructEnd(ctx)
	var s SkewedInfo
	_, rp := newProto(buf.Bytes())
	if err := s.Read(ctx, rp); err == nil || !strings.Contains(err.Error(), "skewedColNames") {
		t.Fatalf("err = %v, want a list element type error naming skewedColNames", err)
	}
}

func TestUnionWritesOnlySetMember(t *testing.T) {
	ctx := context.Background()
	u := &ColumnStatisticsData{LongStats: &LongColumnStatsData{NumNulls: 3, NumDVs: 4}}
	if got := topFields(t, encode(t, ctx, u)); !reflect.DeepEqual(got, []wireField{{2, thrift.STRUCT}}) {
		t.Fatalf("union wire fields %v", got)
	}
}

func TestExceptionsAreErrors(t *testing.T) {
	var err error = &MetaException{Message: "boom"}
	if err.Error() != "MetaException(message:boom)" {
		t.Fatalf("Error() = %q", err.Error())
	}
	var te thrift.TException
	if !errors.As(err, &te) || te.TExceptionType() != thrift.TExceptionTypeCompiled {
		t.Fatal("exceptions must be compiled thrift.TExceptions")
	}
}
