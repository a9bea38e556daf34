package thriftgen

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"
)

func encode(t *testing.T, ctx context.Context, s thrift.TStruct) []byte {
	t.Helper()
	buf := thrift.NewTMemoryBuffer()
	p := thrift.NewTBinaryProtocolConf(buf, nil)
	if err := s.Write(ctx, p); err != nil {
		t.Fatalf("write %T: %v", s, err)
	}
	return buf.Bytes()
}

func decode(t *testing.T, ctx context.Context, b []byte, s thrift.TStruct) {
	t.Helper()
	buf := thrift.NewTMemoryBuffer()
	buf.Write(b)
	if err := s.Read(ctx, thrift.NewTBinaryProtocolConf(buf, nil)); err != nil {
		t.Fatalf("read %T: %v", s, err)
	}
	if buf.Len() != 0 {
		t.Fatalf("read %T left %d bytes", s, buf.Len())
	}
}

func skewedInfo() *SkewedInfo {
	return &SkewedInfo{
		SkewedColNames:  []string{"country", "city"},
		SkewedColValues: [][]string{{"de", "berlin"}, {"fr", "paris"}},
		SkewedColValueLocationMaps: []MapEntry[[]string, string]{
			{Key: []string{"fr", "paris"}, Value: "hdfs://nn/warehouse/t/country=fr/city=paris"},
			{Key: []string{"de", "berlin"}, Value: "hdfs://nn/warehouse/t/country=de/city=berlin"},
			{Key: []string{}, Value: "hdfs://nn/warehouse/t/HIVE_DEFAULT_LIST_BUCKETING_DIR_NAME"},
		},
	}
}

// fullTable sets every canonical field of Table.
func fullTable() *Table {
	str := func(s string) *string { return &s }
	i64 := func(v int64) *int64 { return &v }
	b := func(v bool) *bool { return &v }
	at := int8(8)
	ot := PrincipalType_ROLE
	tbl := &Table{
		TableName: "orders", DbName: "sales", Owner: "alice", CreateTime: 1700000000, LastAccessTime: 1700000100,
		Retention: 7,
		Sd: &StorageDescriptor{
			Cols:     []*FieldSchema{{Name: "id", Type: "bigint", Comment: "key"}, {Name: "country", Type: "string"}},
			Location: "hdfs://nn/warehouse/sales.db/orders", InputFormat: "org.apache.hadoop.mapred.TextInputFormat",
			OutputFormat: "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat", Compressed: true,
			NumBuckets: 4, SerdeInfo: &SerDeInfo{Name: "s", SerializationLib: "lazy", Parameters: map[string]string{"a": "1"}},
			BucketCols: []string{"id"}, SortCols: []*Order{{Col: "id", Order: 1}},
			Parameters: map[string]string{"x": "y", "b": "c"}, SkewedInfo: skewedInfo(), StoredAsSubDirectories: b(true),
		},
		PartitionKeys:    []*FieldSchema{{Name: "ds", Type: "string"}},
		Parameters:       map[string]string{"transient_lastDdlTime": "1700000000", "comment": "", "EXTERNAL": "TRUE"},
		ViewOriginalText: "", ViewExpandedText: "select 1", TableType: "MANAGED_TABLE",
		Privileges: &PrincipalPrivilegeSet{UserPrivileges: map[string][]*PrivilegeGrantInfo{
			"alice": {{Privilege: "ALL", CreateTime: 1, Grantor: "admin", GrantorType: PrincipalType_USER, GrantOption: true}},
		}},
		Temporary: b(false), RewriteEnabled: b(true),
		CreationMetadata: &CreationMetadata{CatName: "hive", DbName: "sales", TblName: "orders",
			TablesUsed: []string{"sales.a"}, ValidTxnList: str("1:2")},
		CatName: str("hive"), OwnerType: &ot, WriteId: i64(42), IsStatsCompliant: b(true),
		ColStats: &ColumnStatistics{StatsDesc: &ColumnStatisticsDesc{IsTblLevel: true, DbName: "sales", TableName: "orders"},
			StatsObj: []*ColumnStatisticsObj{{ColName: "id", ColType: "bigint",
				StatsData: &ColumnStatisticsData{LongStats: &LongColumnStatsData{NumNulls: 1, NumDVs: 2}}}},
			Engine: str("hive")},
		AccessType: &at, RequiredReadCapabilities: []string{"HIVEFULLACIDREAD"},
		RequiredWriteCapabilities: []string{"HIVEFULLACIDWRITE", "HIVEMANAGESTATS"}, Id: i64(7),
		FileMetadata: &FileMetadata{Type: 1, Version: 1,
			Data: [][]byte{{0, 1, 2}, {}}},
		Dictionary: &ObjectDictionary{Values: map[string][][]byte{"k": {{9}}}},
		TxnId:      i64(99),
	}
	tbl.MarkPresent(10) // viewOriginalText: a present empty string, as opposed to null
	return tbl
}

func TestRoundTripSkewedInfo(t *testing.T) {
	ctx := context.Background()
	in := skewedInfo()
	b1 := encode(t, ctx, in)
	var out SkewedInfo
	decode(t, ctx, b1, &out)
	if !reflect.DeepEqual(in, &out) {
		t.Fatalf("decoded SkewedInfo differs:\n got %+v\nwant %+v", &out, in)
	}
	if b2 := encode(t, ctx, &out); !bytes.Equal(b1, b2) {
		t.Fatalf("re-encoded SkewedInfo differs")
	}
}

func TestRoundTripTable(t *testing.T) {
	ctx := context.Background()
	in := fullTable()
	b1 := encode(t, ctx, in)
	var out Table
	decode(t, ctx, b1, &out)
	b2 := encode(t, ctx, &out)
	if !bytes.Equal(b1, b2) {
		t.Fatalf("re-encoded Table differs (%d vs %d bytes)", len(b1), len(b2))
	}
}
