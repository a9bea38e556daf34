package restcatalog

import (
	"testing"

	"github.com/apache/iceberg-go"
)

func TestNormalizeLocationAndAllowlist(t *testing.T) {
	h := &Handler{opts: Options{PurgeMode: PurgeAllowlist}}
	for _, p := range []string{"file:///data/lake/", "hdfs://ns-default/warehouse/tablespace"} {
		n, err := normalizePrefix(p)
		if err != nil {
			t.Fatal(err)
		}
		h.prefixes = append(h.prefixes, n)
	}
	for loc, want := range map[string]bool{
		"file:/data/lake/t/data/a.parquet":              true,
		"file:///data/lake/t/metadata/v1.metadata.json": true,
		"/data/lake/x":                               true,
		"file://localhost/data/lake/x":               true,
		"file:/data/lake2/x":                         false, // a sibling with the same leading characters
		"file:/data/lake/../etc/passwd":              false, // never resolved, never allowed
		"file:/data/lake/a/../../etc":                false,
		"file:/data":                                 false,
		"hdfs://ns-default/warehouse/tablespace/t/f": true,
		"HDFS://NS-DEFAULT/warehouse/tablespace/t/f": true, // scheme and authority ignore case
		"hdfs://other/warehouse/tablespace/t/f":      false,
		"s3://bucket/data/lake/x":                    false,
		"relative/path":                              false,
		"":                                           false,
	} {
		if got := h.allowed(loc); got != want {
			t.Errorf("allowed(%q) = %v, want %v", loc, got, want)
		}
	}
}

func TestHiveTypes(t *testing.T) {
	dec := iceberg.DecimalTypeOf(10, 2)
	cases := []struct {
		t    iceberg.Type
		want string
	}{
		{iceberg.PrimitiveTypes.Bool, "boolean"}, {iceberg.PrimitiveTypes.Int32, "int"}, {iceberg.PrimitiveTypes.Int64, "bigint"},
		{iceberg.PrimitiveTypes.Float32, "float"}, {iceberg.PrimitiveTypes.Float64, "double"}, {iceberg.PrimitiveTypes.Date, "date"},
		{iceberg.PrimitiveTypes.Time, "string"}, {iceberg.PrimitiveTypes.UUID, "string"}, {iceberg.PrimitiveTypes.Timestamp, "timestamp"},
		{iceberg.PrimitiveTypes.TimestampTz, "timestamp with local time zone"}, {iceberg.PrimitiveTypes.Binary, "binary"},
		{iceberg.FixedTypeOf(16), "binary"}, {dec, "decimal(10,2)"},
		{&iceberg.MapType{KeyID: 1, KeyType: iceberg.PrimitiveTypes.String, ValueID: 2, ValueType: &iceberg.ListType{ElementID: 3, Element: iceberg.PrimitiveTypes.Int32}},
			"map<string,array<int>>"},
		{&iceberg.StructType{FieldList: []iceberg.NestedField{{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.Int64}, {ID: 2, Name: "b", Type: iceberg.PrimitiveTypes.String}}},
			"struct<a:bigint,b:string>"},
	}
	for _, c := range cases {
		if got, err := hiveType(c.t); err != nil || got != c.want {
			t.Errorf("hiveType(%s) = %q, %v; want %q", c.t, got, err, c.want)
		}
	}
}

func TestCheckName(t *testing.T) {
	for name, ok := range map[string]bool{"sales": true, "sales_2024": true, "Ümlaut": true, "a.b": true,
		"": false, ".": false, "..": false, "a/b": false, `a\b`: false, "a..b": false, "a\x00b": false, "a\nb": false, "a\x7fb": false, "\xff": false} {
		if got := checkName("table", name) == nil; got != ok {
			t.Errorf("checkName(%q) ok=%v, want %v", name, got, ok)
		}
	}
}

func TestMetadataVersion(t *testing.T) {
	for loc, want := range map[string]int{
		"file:/w/t/metadata/00000-1f.metadata.json":    0,
		"file:/w/t/metadata/00012-ab-cd.metadata.json": 12,
		"s3://b/t/metadata/v3.metadata.json":           -1,
		"file:/w/t/metadata/123456-x.gz.metadata.json": 123456,
		"": -1,
	} {
		if got := metadataVersion(loc); got != want {
			t.Errorf("metadataVersion(%q) = %d, want %d", loc, got, want)
		}
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	m.ListenerInfo("h", 1)
	m.observe("p", "r", 200, 0)
}
