package compat

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

func encode(t *testing.T, ctx context.Context, s thrift.TStruct) []byte {
	t.Helper()
	buf := thrift.NewTMemoryBuffer()
	if err := s.Write(ctx, thrift.NewTBinaryProtocolConf(buf, nil)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The wire dialect of HDP 3.1.5 numbers Table's accessType and capability
// lists one higher than Apache 4; mapping must match the generated codec's
// own HDP encoding byte for byte, both ways, and never swap the lists.
func TestHDP315TableDialectMatchesTheCodec(t *testing.T) {
	rt, _ := Lookup("HORTONWORKS_3_1_0_3_1_5_6150_1")
	d, err := NewDialect(rt)
	if err != nil || d == nil {
		t.Fatalf("HDP 3.1.5 must have a dialect: %v", err)
	}
	access := int8(8)
	tbl := &thriftgen.Table{TableName: "t", DbName: "db", TableType: "MANAGED_TABLE",
		AccessType:                &access,
		RequiredReadCapabilities:  []string{"HIVEFULLACIDREAD"},
		RequiredWriteCapabilities: []string{"HIVEFULLACIDWRITE", "HIVEMANAGESTATS"}}
	res := &thriftgen.GetTableMethodResult{Success: tbl}
	canonical := encode(t, context.Background(), res)
	hdp := encode(t, thriftgen.WithWireProfile(context.Background(), thriftgen.ProfileHDP315), res)
	if bytes.Equal(canonical, hdp) {
		t.Fatal("test is void: the two encodings are equal")
	}
	got, err := d.ToWire("get_table", true, canonical)
	if err != nil || !bytes.Equal(got, hdp) {
		t.Fatalf("ToWire differs from the HDP codec:\n got %x\nwant %x (%v)", got, hdp, err)
	}
	back, err := d.ToCanonical("get_table", true, hdp)
	if err != nil || !bytes.Equal(back, canonical) {
		t.Fatalf("ToCanonical differs:\n got %x\nwant %x (%v)", back, canonical, err)
	}
	// Table.id (canonical 25, Hive 4 only) has no slot in HDP 3.1.5: it is
	// not sent there, rather than landing on HDP's field 25 (a list).
	id := int64(42)
	tbl.Id = &id
	withID := encode(t, context.Background(), res)
	got, err = d.ToWire("get_table", true, withID)
	if err != nil || !bytes.Equal(got, hdp) {
		t.Fatalf("Table.id must be left out toward HDP 3.1.5:\n got %x\nwant %x (%v)", got, hdp, err)
	}
	if d.Touches("get_all_databases", true) {
		t.Fatal("calls without a Table must not pay for the dialect")
	}
}

func decode(t *testing.T, body []byte, s thrift.TStruct) error {
	t.Helper()
	buf := thrift.NewTMemoryBuffer()
	buf.Write(body)
	return s.Read(context.Background(), thrift.NewTBinaryProtocolConf(buf, nil))
}

// Touches' bit filter never hides a method the dialect changes: for every
// runtime and method it answers what the plans say.
func TestTouchesAgreesWithThePlans(t *testing.T) {
	for _, rt := range Runtimes() {
		d, err := NewDialect(rt)
		if err != nil {
			t.Fatal(err)
		}
		if d == nil {
			continue
		}
		for _, m := range thriftgen.AllMethods() {
			if got, want := d.Touches(m.Name, false), !d.args[m.Name].Empty(); got != want {
				t.Errorf("%s: Touches(%s, args) = %v, want %v", rt.Name, m.Name, got, want)
			}
			if got, want := d.Touches(m.Name, true), !d.results[m.Name].Empty(); got != want {
				t.Errorf("%s: Touches(%s, result) = %v, want %v", rt.Name, m.Name, got, want)
			}
		}
	}
}
