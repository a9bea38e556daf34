package restcatalog_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var simpleSchema = map[string]any{
	"type": "struct", "schema-id": 0,
	"fields": []any{
		map[string]any{"id": 1, "name": "id", "type": "long", "required": true},
		map[string]any{"id": 2, "name": "name", "type": "string", "required": false},
		map[string]any{"id": 3, "name": "ts", "type": "timestamptz", "required": false},
		map[string]any{"id": 4, "name": "tags", "type": map[string]any{"type": "list", "element-id": 5, "element": "string", "element-required": false}, "required": false},
	},
}

// A table created through REST is an Iceberg table to a Hive client of the
// same metastore: table_type, metadata_location, the Hive-engine storage
// descriptor, columns, EXTERNAL.
func TestCreatedTableIsReadableAsIcebergByHive(t *testing.T) {
	e := newEnv(t, nil, nil)
	wh := t.TempDir()
	ns := uniq("hv")
	if a := e.do("POST", "/v1/catalog1/namespaces", map[string]any{"namespace": []string{ns}, "properties": map[string]string{"location": "file:" + wh + "/" + ns, "owner_team": "data"}}); a.Status != 200 {
		t.Fatalf("create namespace: %d %s", a.Status, a.Body)
	}
	a := e.do("POST", "/v1/catalog1/namespaces/"+ns+"/tables", map[string]any{"name": "events", "schema": simpleSchema})
	if a.Status != 200 {
		t.Fatalf("create table: %d %s", a.Status, a.Body)
	}
	res := a.json(t)
	loc, _ := res["metadata-location"].(string)
	if !strings.HasPrefix(loc, "file:"+wh+"/"+ns+"/events/metadata/00000-") {
		t.Fatalf("metadata-location %q not under the namespace location", loc)
	}
	if _, err := os.Stat(strings.TrimPrefix(loc, "file:")); err != nil {
		t.Fatalf("metadata file not written: %v", err)
	}

	tbl, err := e.hms().GetTable(tctx(t), ns, "events")
	if err != nil {
		t.Fatal(err)
	}
	p := tbl.Parameters
	for k, want := range map[string]string{
		"table_type": "ICEBERG", "metadata_location": loc, "EXTERNAL": "TRUE",
		"storage_handler": "org.apache.iceberg.mr.hive.HiveIcebergStorageHandler",
	} {
		if p[k] != want {
			t.Errorf("parameter %s=%q, want %q", k, p[k], want)
		}
	}
	if tbl.TableType != "EXTERNAL_TABLE" {
		t.Errorf("tableType %q", tbl.TableType)
	}
	sd := tbl.Sd
	if sd.InputFormat != "org.apache.iceberg.mr.hive.HiveIcebergInputFormat" || sd.OutputFormat != "org.apache.iceberg.mr.hive.HiveIcebergOutputFormat" ||
		sd.SerdeInfo.SerializationLib != "org.apache.iceberg.mr.hive.HiveIcebergSerDe" {
		t.Errorf("storage descriptor not Hive-readable: %s / %s / %s", sd.InputFormat, sd.OutputFormat, sd.SerdeInfo.SerializationLib)
	}
	var cols []string
	for _, c := range sd.Cols {
		cols = append(cols, c.Name+":"+c.Type)
	}
	if want := []string{"id:bigint", "name:string", "ts:timestamp with local time zone", "tags:array<string>"}; !slices.Equal(cols, want) {
		t.Errorf("columns %v, want %v", cols, want)
	}
	// The backend itself holds the same record (no proxy-only state).
	raw, err := direct(t, hms1).GetTable(tctx(t), ns, "events")
	if err != nil || raw.Parameters["metadata_location"] != loc {
		t.Fatalf("backend record: %v %v", err, raw)
	}
	// And REST loads it back.
	if a := e.do("GET", "/v1/catalog1/namespaces/"+ns+"/tables/events", nil); a.Status != 200 || a.json(t)["metadata-location"] != loc {
		t.Fatalf("load: %d %s", a.Status, a.Body)
	}
	if a := e.do("HEAD", "/v1/catalog1/namespaces/"+ns+"/tables/events", nil); a.Status != 204 || len(a.Body) != 0 {
		t.Fatalf("HEAD existing table: %d %q", a.Status, a.Body)
	}
	if a := e.do("HEAD", "/v1/catalog1/namespaces/"+ns+"/tables/nope", nil); a.Status != 404 || len(a.Body) != 0 {
		t.Fatalf("HEAD missing table: %d %q", a.Status, a.Body)
	}
	_ = filepath.Join
}
