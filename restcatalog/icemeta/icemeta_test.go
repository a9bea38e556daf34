package icemeta_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/restcatalog/icemeta"
)

var now = time.UnixMilli(1764600000000)

func readBase(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decode(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

type check = func(m map[string]any) string

func all(cs ...check) check {
	return func(m map[string]any) string {
		for _, c := range cs {
			if s := c(m); s != "" {
				return s
			}
		}
		return ""
	}
}

func field(key string, want any) check {
	return func(m map[string]any) string {
		if !reflect.DeepEqual(m[key], want) {
			return fmt.Sprintf("%s = %v, want %v", key, m[key], want)
		}
		return ""
	}
}

func count(key string, n int) check {
	return func(m map[string]any) string {
		l, _ := m[key].([]any)
		if len(l) != n {
			return fmt.Sprintf("%s has %d entries, want %d", key, len(l), n)
		}
		return ""
	}
}

func kept(key string) check {
	return func(m map[string]any) string {
		if _, ok := m[key]; !ok {
			return fmt.Sprintf("member %s was lost", key)
		}
		return ""
	}
}

func snapshotKept(key string) check {
	return func(m map[string]any) string {
		for _, s := range m["snapshots"].([]any) {
			if _, ok := s.(map[string]any)[key]; ok {
				return ""
			}
		}
		return fmt.Sprintf("no snapshot kept its member %s", key)
	}
}

func refIs(name string, id int64, typ string) check {
	return func(m map[string]any) string {
		r, _ := m["refs"].(map[string]any)[name].(map[string]any)
		if r == nil || r["snapshot-id"] != float64(id) || r["type"] != typ {
			return fmt.Sprintf("ref %s = %v, want %s at %d", name, r, typ, id)
		}
		return ""
	}
}

func noRef(name string) check {
	return func(m map[string]any) string {
		if _, ok := m["refs"].(map[string]any)[name]; ok {
			return fmt.Sprintf("ref %s is still there", name)
		}
		return ""
	}
}

func props(want map[string]string) check {
	return func(m map[string]any) string {
		got := map[string]string{}
		for k, v := range m["properties"].(map[string]any) {
			got[k] = v.(string)
		}
		if !reflect.DeepEqual(got, want) {
			return fmt.Sprintf("properties %v, want %v", got, want)
		}
		return ""
	}
}

// runOurs applies a case with icemeta: the outcome ("ok", "bad",
// "conflict"), the result, and the error.
func runOurs(t *testing.T, base []byte, baseLoc, reqs, updates string) (string, *icemeta.Table, error) {
	t.Helper()
	var b *icemeta.Table
	if base != nil {
		var err error
		if b, err = icemeta.ParseTable(base); err != nil {
			t.Fatalf("base: %v", err)
		}
	}
	var rs []icemeta.Requirement
	if reqs != "" {
		if err := json.Unmarshal([]byte(reqs), &rs); err != nil {
			return "bad", nil, err
		}
	}
	var us []icemeta.Update
	if err := json.Unmarshal([]byte(updates), &us); err != nil {
		return "bad", nil, err
	}
	for _, r := range rs {
		if err := r.CheckTable(b); err != nil {
			var re *icemeta.RequirementError
			if errors.As(err, &re) {
				return "conflict", nil, err
			}
			return "bad", nil, err
		}
	}
	next, err := icemeta.ApplyTable(b, baseLoc, us, now)
	if err != nil {
		return "bad", nil, err
	}
	return "ok", next, nil
}

func TestCases(t *testing.T) {
	for _, c := range commitCases {
		t.Run(c.name, func(t *testing.T) {
			var base []byte
			if c.base != "" {
				base = readBase(t, c.base)
			}
			got, next, err := runOurs(t, base, "file:/warehouse/db/t/metadata/00002-c.metadata.json", c.reqs, c.updates)
			if got != c.want {
				t.Fatalf("outcome %s (%v), want %s", got, err, c.want)
			}
			if c.wantIn != "" && (err == nil || !strings.Contains(err.Error(), c.wantIn)) {
				t.Errorf("error %v does not contain %q", err, c.wantIn)
			}
			if next == nil || c.check == nil {
				return
			}
			m := decode(t, next)
			if s := c.check(m); s != "" {
				t.Error(s)
			}
			// What was written reads back to the same metadata.
			b, _ := json.Marshal(next)
			again, err := icemeta.ParseTable(b)
			if err != nil {
				t.Fatalf("the result does not parse: %v", err)
			}
			if !reflect.DeepEqual(decode(t, again), m) {
				t.Error("the result changes when read back and written again")
			}
		})
	}
}

// A metadata file read and written without changes keeps every member,
// including those icemeta does not model, as values.
func TestLosslessRoundTrip(t *testing.T) {
	for _, name := range []string{"base-v2.json", "base-v3.json"} {
		in := readBase(t, name)
		m, err := icemeta.ParseTable(in)
		if err != nil {
			t.Fatal(err)
		}
		var want map[string]any
		_ = json.Unmarshal(in, &want)
		got := decode(t, m)
		if want["current-snapshot-id"] == nil {
			want["current-snapshot-id"] = -1.0 // null and -1 both mean none; icemeta writes -1
		}
		if _, ok := want["partition-statistics"]; !ok {
			want["partition-statistics"] = []any{}
		}
		if _, ok := want["statistics"]; !ok {
			want["statistics"] = []any{}
		}
		if !reflect.DeepEqual(got, want) {
			gb, _ := json.MarshalIndent(got, "", " ")
			t.Errorf("%s changed in a round trip:\n%s", name, gb)
		}
	}
}

// A v1 file with only the legacy schema and partition-spec members reads,
// and a written v1 file carries both forms.
func TestV1Legacy(t *testing.T) {
	in := `{"format-version":1,"table-uuid":"4b6a7d3e-5f1c-4e2b-9d8a-1c2b3a4d5e6f","location":"file:/w/t","last-updated-ms":1,"last-column-id":1,
	  "schema":{"type":"struct","fields":[{"id":1,"name":"id","required":false,"type":"long"}]},
	  "partition-spec":[{"name":"id_part","transform":"identity","source-id":1,"field-id":1000}],"properties":{},"snapshots":[]}`
	m, err := icemeta.ParseTable([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if m.CurrentSchema() == nil || m.DefaultSpec() == nil || len(m.DefaultSpec().Fields) != 1 || m.LastPartitionID != 1000 || m.DefaultSortOrder() == nil {
		t.Fatalf("legacy v1 read as %+v", m)
	}
	next, err := icemeta.ApplyTable(m, "file:/w/t/metadata/v1.metadata.json", nil, now)
	if err != nil {
		t.Fatal(err)
	}
	out := decode(t, next)
	for _, k := range []string{"schema", "schemas", "partition-spec", "partition-specs", "sort-orders"} {
		if _, ok := out[k]; !ok {
			t.Errorf("written v1 metadata lacks %s", k)
		}
	}
	if _, ok := out["last-sequence-number"]; ok {
		t.Error("written v1 metadata has last-sequence-number")
	}
}

func TestNewTableFreshIDs(t *testing.T) {
	schema := `{"type":"struct","schema-id":7,"identifier-field-ids":[10],"fields":[
	  {"id":10,"name":"id","required":true,"type":"long"},
	  {"id":20,"name":"point","required":false,"type":{"type":"struct","fields":[{"id":21,"name":"x","required":false,"type":"double"},{"id":22,"name":"y","required":false,"type":"double"}]}},
	  {"id":30,"name":"tags","required":false,"type":{"type":"map","key-id":31,"key":"string","value-id":32,"value-required":false,"value":{"type":"list","element-id":33,"element-required":false,"element":"string"}}},
	  {"id":40,"name":"ts","required":false,"type":"timestamptz","doc":"event time"}]}`
	spec := `{"spec-id":3,"fields":[{"name":"ts_day","transform":"day","source-id":40,"field-id":1005},{"name":"x_bucket","transform":"bucket[4]","source-id":21}]}`
	order := `{"order-id":4,"fields":[{"transform":"identity","source-id":10,"direction":"desc","null-order":"nulls-last"}]}`
	m, err := icemeta.NewTable(json.RawMessage(schema), json.RawMessage(spec), json.RawMessage(order), "file:/w/t", map[string]string{"format-version": "1", "k": "v"}, now)
	if err != nil {
		t.Fatal(err)
	}
	out := decode(t, m)
	// Fields of a struct first, then nested types: id 1, point 2, tags 3,
	// ts 4, point.x 5, point.y 6, tags.key 7, tags.value 8, element 9.
	fields := out["schemas"].([]any)[0].(map[string]any)["fields"].([]any)
	ids := []any{}
	for _, f := range fields {
		ids = append(ids, f.(map[string]any)["id"])
	}
	if !reflect.DeepEqual(ids, []any{1.0, 2.0, 3.0, 4.0}) {
		t.Errorf("top-level ids %v", ids)
	}
	point := fields[1].(map[string]any)["type"].(map[string]any)["fields"].([]any)
	tags := fields[2].(map[string]any)["type"].(map[string]any)
	if point[0].(map[string]any)["id"] != 5.0 || point[1].(map[string]any)["id"] != 6.0 || tags["key-id"] != 7.0 || tags["value-id"] != 8.0 ||
		tags["value"].(map[string]any)["element-id"] != 9.0 {
		t.Errorf("nested ids: point %v tags %v", point, tags)
	}
	if fields[3].(map[string]any)["doc"] != "event time" {
		t.Error("a field's doc was lost")
	}
	for k, want := range map[string]any{"format-version": 1.0, "last-column-id": 9.0, "last-partition-id": 1001.0, "default-sort-order-id": 1.0, "current-schema-id": 0.0} {
		if out[k] != want {
			t.Errorf("%s = %v, want %v", k, out[k], want)
		}
	}
	if ids := out["schemas"].([]any)[0].(map[string]any)["identifier-field-ids"]; !reflect.DeepEqual(ids, []any{1.0}) {
		t.Errorf("identifier-field-ids %v", ids)
	}
	sf := out["partition-specs"].([]any)[0].(map[string]any)["fields"].([]any)
	if sf[0].(map[string]any)["source-id"] != 4.0 || sf[0].(map[string]any)["field-id"] != 1000.0 || sf[1].(map[string]any)["source-id"] != 5.0 {
		t.Errorf("spec fields %v", sf)
	}
	of := out["sort-orders"].([]any)[0].(map[string]any)["fields"].([]any)
	if of[0].(map[string]any)["source-id"] != 1.0 {
		t.Errorf("sort fields %v", of)
	}
	if p := out["properties"].(map[string]any); p["format-version"] != nil || p["k"] != "v" {
		t.Errorf("properties %v", p)
	}
	for _, bad := range []struct{ schema, spec, want string }{
		{`{"type":"struct","fields":[{"id":1,"name":"a","required":false,"type":"variant"}]}`, ``, "needs format version 3"},
		{`{"type":"struct","fields":[{"id":1,"name":"a","required":false,"type":"long"}]}`, `{"fields":[{"name":"p","transform":"identity","source-id":9}]}`, "source-id 9"},
		{`{"type":"struct","fields":[{"id":1,"required":false,"type":"long"}]}`, ``, "no name"},
	} {
		if _, err := icemeta.NewTable(json.RawMessage(bad.schema), json.RawMessage(bad.spec), nil, "file:/w/t", nil, now); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("NewTable(%s, %s) = %v, want an error containing %q", bad.schema, bad.spec, err, bad.want)
		}
	}
}

func TestMetadataLocation(t *testing.T) {
	for _, c := range []struct {
		loc   string
		props map[string]string
		want  string
	}{
		{"file:/w/t", nil, "file:/w/t/metadata/00003-"},
		{"file:///w/t/", map[string]string{"write.metadata.compression-codec": "gzip"}, "file:///w/t/metadata/00003-"},
		{"/w/t", map[string]string{"write.metadata.path": "file:/elsewhere/meta"}, "file:/elsewhere/meta/00003-"},
	} {
		m, err := icemeta.NewTable(json.RawMessage(`{"type":"struct","fields":[]}`), nil, nil, c.loc, c.props, now)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.NewMetadataLocation(3)
		if err != nil {
			t.Fatal(err)
		}
		ext := ".metadata.json"
		if c.props["write.metadata.compression-codec"] == "gzip" {
			ext = ".gz.metadata.json"
		}
		if !strings.HasPrefix(got, c.want) || !strings.HasSuffix(got, ext) {
			t.Errorf("location %q props %v: %s, want %s…%s", c.loc, c.props, got, c.want, ext)
		}
	}
	m, _ := icemeta.NewTable(json.RawMessage(`{"type":"struct","fields":[]}`), nil, nil, "/w/t", map[string]string{"write.metadata.compression-codec": "lz4"}, now)
	if _, err := m.NewMetadataLocation(1); err == nil || !strings.Contains(err.Error(), "write.metadata.compression-codec") {
		t.Errorf("unknown codec: %v", err)
	}
}

func TestViews(t *testing.T) {
	base, err := icemeta.ParseView(readBase(t, "view-base.json"))
	if err != nil {
		t.Fatal(err)
	}
	apply := func(updates string) (*icemeta.View, error) {
		var us []icemeta.Update
		if err := json.Unmarshal([]byte(updates), &us); err != nil {
			t.Fatal(err)
		}
		return icemeta.ApplyView(base, us, now)
	}
	// Spark's replace: a schema, a version using it (-1), made current.
	next, err := apply(`[{"action":"add-schema","schema":{"type":"struct","schema-id":1,"fields":[{"id":1,"name":"id","required":false,"type":"long"},{"id":2,"name":"n","required":false,"type":"int"}]},"last-column-id":2},
	  {"action":"add-view-version","view-version":{"version-id":2,"timestamp-ms":1764595000000,"schema-id":-1,"summary":{"engine-name":"spark"},"default-namespace":["db"],"representations":[{"type":"sql","sql":"SELECT id, 1 AS n FROM t","dialect":"spark"}]}},
	  {"action":"set-current-view-version","view-version-id":-1},{"action":"set-properties","updates":{"x":"y"}}]`)
	if err != nil {
		t.Fatal(err)
	}
	out := decode(t, next)
	if out["current-version-id"] != 2.0 || len(out["versions"].([]any)) != 2 || len(out["version-log"].([]any)) != 2 || len(out["schemas"].([]any)) != 2 {
		t.Errorf("after replace: %v", out)
	}
	if next.CurrentSchema() == nil || next.CurrentSchema().ID != 1 || next.CurrentVersion().Representations[0].SQL != "SELECT id, 1 AS n FROM t" {
		t.Errorf("current schema/version wrong")
	}
	// The same version again is the existing one.
	if next, err = apply(`[{"action":"add-view-version","view-version":{"version-id":5,"timestamp-ms":1,"schema-id":0,"summary":{"engine-name":"spark"},"default-namespace":["db"],"representations":[{"type":"sql","sql":"SELECT id FROM t","dialect":"spark"}]}},{"action":"set-current-view-version","view-version-id":-1}]`); err != nil {
		t.Fatal(err)
	} else if len(next.Versions) != 1 || next.CurrentVersionID != 1 {
		t.Errorf("a repeated version was added: %d versions, current %d", len(next.Versions), next.CurrentVersionID)
	}
	for updates, want := range map[string]string{
		`[{"action":"set-current-view-version","view-version-id":9}]`:                                        "version 9 does not exist",
		`[{"action":"set-current-view-version","view-version-id":-1}]`:                                       "added no version",
		`[{"action":"add-view-version","view-version":{"version-id":2,"schema-id":0,"representations":[]}}]`: "representation",
		`[{"action":"add-view-version","view-version":{"version-id":2,"schema-id":0,"representations":[{"type":"sql","sql":"SELECT 1","dialect":"trino"}]}},{"action":"set-current-view-version","view-version-id":-1}]`: `drops dialect "spark"`,
		`[{"action":"upgrade-format-version","format-version":2}]`: "format version 2",
		`[{"action":"drop-view"}]`:                                 `unknown view update action "drop-view"`,
	} {
		if _, err := apply(updates); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", updates, err, want)
		}
	}
	var rs []icemeta.Requirement
	_ = json.Unmarshal([]byte(`[{"type":"assert-view-uuid","uuid":"fa6506c3-7681-40c8-86dc-e36561f83385"},{"type":"assert-view-uuid","uuid":"00000000-0000-4000-8000-000000000000"}]`), &rs)
	if err := rs[0].CheckView(base); err != nil {
		t.Errorf("matching view uuid: %v", err)
	}
	var re *icemeta.RequirementError
	if err := rs[1].CheckView(base); !errors.As(err, &re) {
		t.Errorf("other view uuid: %v, want a RequirementError", err)
	}
	// A new view: schema 0, version 1, current.
	v, err := icemeta.NewView(json.RawMessage(`{"type":"struct","schema-id":3,"fields":[{"id":1,"name":"a","required":false,"type":"int"}]}`),
		json.RawMessage(`{"version-id":7,"timestamp-ms":1764590000000,"schema-id":3,"summary":{},"default-namespace":["db"],"representations":[{"type":"sql","sql":"SELECT 1 AS a","dialect":"spark"}]}`),
		"file:/w/v", map[string]string{"comment": "c"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if v.CurrentVersionID != 1 || v.CurrentSchema() == nil || v.CurrentSchema().ID != 0 || len(v.VersionLog) != 1 || v.UUID == "" {
		t.Errorf("new view %+v", v)
	}
}
