package restcatalog

import (
	"encoding/json"
	"testing"
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
	cases := []struct {
		t    string // the type as a schema's JSON carries it
		want string
	}{
		{`"boolean"`, "boolean"}, {`"int"`, "int"}, {`"long"`, "bigint"},
		{`"float"`, "float"}, {`"double"`, "double"}, {`"date"`, "date"},
		{`"time"`, "string"}, {`"uuid"`, "string"}, {`"timestamp"`, "timestamp"}, {`"timestamp_ns"`, "timestamp"},
		{`"timestamptz"`, "timestamp with local time zone"}, {`"binary"`, "binary"},
		{`"fixed[16]"`, "binary"}, {`"decimal(10, 2)"`, "decimal(10,2)"}, {`"decimal(38,0)"`, "decimal(38,0)"},
		{`{"type":"map","key-id":1,"key":"string","value-id":2,"value-required":false,"value":{"type":"list","element-id":3,"element-required":false,"element":"int"}}`,
			"map<string,array<int>>"},
		{`{"type":"struct","fields":[{"id":1,"name":"a","required":false,"type":"long"},{"id":2,"name":"b","required":false,"type":"string"}]}`,
			"struct<a:bigint,b:string>"},
	}
	for _, c := range cases {
		var v any
		if err := json.Unmarshal([]byte(c.t), &v); err != nil {
			t.Fatal(err)
		}
		if got, err := hiveType(v); err != nil || got != c.want {
			t.Errorf("hiveType(%s) = %q, %v; want %q", c.t, got, err, c.want)
		}
	}
	for _, bad := range []string{`"geometry(srid:4326)"`, `"decimal(10)"`, `{"type":"tuple"}`} {
		var v any
		_ = json.Unmarshal([]byte(bad), &v)
		if got, err := hiveType(v); err == nil {
			t.Errorf("hiveType(%s) = %q, want an error", bad, got)
		}
	}
}

func TestCheckName(t *testing.T) {
	for name, ok := range map[string]bool{"sales": true, "sales_2024": true, "Ümlaut": true, "a.b": true,
		"tab/le": true, "a/b/c": true, // Hive allows '/' in table names
		"": false, ".": false, "..": false, `a\b`: false, "a..b": false, "a\x00b": false, "a\nb": false, "a\x7fb": false, "\xff": false,
		"/a": false, "a/": false, "a//b": false, "a/./b": false, "a/../b": false} {
		if got := checkName("table", name) == nil; got != ok {
			t.Errorf("checkName(table %q) ok=%v, want %v", name, got, ok)
		}
	}
	// A Hive database name cannot contain '/'.
	if e := checkName("namespace", "new/db"); e == nil || e.Code != 400 {
		t.Errorf("checkName(namespace new/db) = %v", e)
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
