package icemeta_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"

	"github.com/hms-proxy/hms-proxy/restcatalog/icemeta"
)

// The differential test: iceberg-go v0.7.0 (which the REST frontend used
// before icemeta; test-only now) is the oracle. The same base metadata and
// the same requirements and updates must give the same decision (accept,
// refuse as a bad update, refuse as a failed requirement) and, when
// accepted, the same resulting metadata, compared as JSON values after
// normalising what legitimately differs (see normalize). The inputs are the
// hand-made commitCases and the corpus recorded from the real clients of
// the restcatalog tests (HMS_PROXY_REST_CAPTURE, ../testdata/corpus).

// oracle applies a commit with iceberg-go as restcatalog did.
func oracle(base []byte, baseLoc, reqs, updates string) (string, []byte, error) {
	var b table.Metadata
	if base != nil {
		var err error
		if b, err = table.ParseMetadataBytes(base); err != nil {
			return "bad", nil, fmt.Errorf("base: %w", err)
		}
	}
	var rs table.Requirements
	if reqs != "" {
		if err := json.Unmarshal([]byte(reqs), &rs); err != nil {
			return "bad", nil, err
		}
	}
	var us table.Updates
	if err := json.Unmarshal([]byte(updates), &us); err != nil {
		return "bad", nil, err
	}
	for _, r := range rs {
		if err := r.Validate(b); err != nil {
			return "conflict", nil, err
		}
	}
	var next table.Metadata
	var err error
	if b == nil {
		seed, serr := table.NewMetadata(iceberg.NewSchema(0), nil, table.UnsortedSortOrder, "", nil)
		if serr != nil {
			return "bad", nil, serr
		}
		next, err = table.UpdateTableMetadata(seed, us, "")
	} else {
		if len(us) == 0 {
			out, _ := json.Marshal(b)
			return "ok", out, nil
		}
		next, err = table.UpdateTableMetadata(b, us, baseLoc)
	}
	if err != nil {
		return "bad", nil, err
	}
	out, err := json.Marshal(next)
	return "ok", out, err
}

// normalize makes two implementations' metadata comparable: times taken
// from the clock (last-updated-ms, the snapshot-log time of a ref moved to
// an older snapshot), the two spellings of "no current snapshot" (null and
// -1), empty lists and maps against absent members, and the v1 legacy
// schema and partition-spec members (derived from the lists).
func normalize(t *testing.T, b []byte, freshUUID bool) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("result does not decode: %v", err)
	}
	delete(m, "last-updated-ms")
	delete(m, "schema")
	delete(m, "partition-spec")
	if freshUUID {
		delete(m, "table-uuid")
		delete(m, "view-uuid")
	}
	if v, ok := m["current-snapshot-id"]; ok && (v == nil || v == json.Number("-1")) {
		delete(m, "current-snapshot-id")
	}
	for _, key := range []string{"snapshot-log", "version-log"} {
		if l, ok := m[key].([]any); ok {
			for _, e := range l {
				delete(e.(map[string]any), "timestamp-ms")
			}
		}
	}
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case []any:
			if len(v) == 0 {
				delete(m, k)
			}
		case map[string]any:
			if len(v) == 0 {
				delete(m, k)
			}
		}
	}
	return m
}

// diffPaths lists where two decoded JSON values differ.
func diffPaths(path string, a, b any, out *[]string) {
	if len(*out) > 10 {
		return
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: %v vs %v", path, short(a), short(b)))
			return
		}
		keys := map[string]bool{}
		for k := range av {
			keys[k] = true
		}
		for k := range bv {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			x, y := av[k], bv[k]
			if isEmpty(y) && !isEmpty(x) && !modelled[k] {
				// iceberg-go drops members it does not model; icemeta
				// keeps them (TestLosslessRoundTrip).
				continue
			}
			if isEmpty(x) && isEmpty(y) {
				continue
			}
			diffPaths(path+"."+k, x, y, out)
		}
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			*out = append(*out, fmt.Sprintf("%s: %v vs %v", path, short(a), short(b)))
			return
		}
		for i := range av {
			diffPaths(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i], out)
		}
	default:
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, fmt.Sprintf("%s: %v vs %v", path, short(a), short(b)))
		}
	}
}

// modelled are the members both implementations write; a difference in
// one of them always counts.
var modelled = map[string]bool{"format-version": true, "table-uuid": true, "location": true, "last-sequence-number": true,
	"last-column-id": true, "schemas": true, "current-schema-id": true, "partition-specs": true, "default-spec-id": true,
	"last-partition-id": true, "properties": true, "current-snapshot-id": true, "snapshots": true, "snapshot-log": true,
	"metadata-log": true, "sort-orders": true, "default-sort-order-id": true, "refs": true, "statistics": true,
	"partition-statistics": true, "next-row-id": true, "view-uuid": true, "current-version-id": true, "versions": true,
	"version-log": true, "snapshot-id": true, "schema-id": true, "fields": true, "spec-id": true, "order-id": true}

// isEmpty: absent, null, an empty list or an empty object.
func isEmpty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// compare reports a difference between icemeta's and iceberg-go's result.
func compare(t *testing.T, ours, theirs []byte, fresh bool) {
	t.Helper()
	a, b := normalize(t, ours, fresh), normalize(t, theirs, fresh)
	var diffs []string
	diffPaths("", a, b, &diffs)
	if len(diffs) > 0 {
		t.Errorf("icemeta and iceberg-go differ (icemeta vs iceberg-go):\n  %s", strings.Join(diffs, "\n  "))
	}
}

func TestDifferentialCases(t *testing.T) {
	for _, c := range commitCases {
		t.Run(c.name, func(t *testing.T) {
			var base []byte
			if c.base != "" {
				base = readBase(t, c.base)
			}
			loc := "file:/warehouse/db/t/metadata/00002-c.metadata.json"
			got, next, err := runOurs(t, base, loc, c.reqs, c.updates)
			want, theirs, werr := oracle(base, loc, c.reqs, c.updates)
			if got != want {
				if c.divergent != "" {
					t.Logf("known difference (%s): icemeta %s (%v), iceberg-go %s (%v)", c.divergent, got, err, want, werr)
					return
				}
				t.Fatalf("icemeta: %s (%v); iceberg-go: %s (%v)", got, err, want, werr)
			}
			if got != "ok" || c.divergent != "" {
				return
			}
			ours, _ := json.Marshal(next)
			compare(t, ours, theirs, base == nil)
		})
	}
}

// capturedChange is one record of the corpus (see
// restcatalog/capture_test.go).
type capturedChange struct {
	Test              string          `json:"test"`
	Client            string          `json:"client"`
	Kind              string          `json:"kind"`
	Status            int             `json:"status"`
	BaseLocation      string          `json:"base-location"`
	Base              json.RawMessage `json:"base"`
	Request           json.RawMessage `json:"request"`
	NamespaceLocation string          `json:"namespace-location"`
}

const corpusDir = "../testdata/corpus"

func TestDifferentialCorpus(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*.json"))
	if len(files) == 0 {
		t.Fatalf("no corpus in %s (record it with HMS_PROXY_REST_CAPTURE, see restcatalog/capture_test.go)", corpusDir)
	}
	clients := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c capturedChange
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		clients[c.Client]++
		t.Run(filepath.Base(f), func(t *testing.T) {
			switch c.Kind {
			case "commit-table":
				diffTableCommit(t, c)
			case "create-table":
				diffTableCreate(t, c)
			case "commit-view":
				diffViewCommit(t, c)
			case "create-view":
				diffViewCreate(t, c)
			default:
				t.Fatalf("unknown kind %q", c.Kind)
			}
		})
	}
	for _, want := range []string{"pyiceberg", "java", "go-test"} {
		if clients[want] == 0 {
			t.Errorf("the corpus has no records of client %s: %v", want, clients)
		}
	}
}

func diffTableCommit(t *testing.T, c capturedChange) {
	var req struct {
		Requirements json.RawMessage `json:"requirements"`
		Updates      json.RawMessage `json:"updates"`
	}
	if err := json.Unmarshal(c.Request, &req); err != nil {
		t.Fatal(err)
	}
	if len(req.Updates) == 0 {
		req.Updates = json.RawMessage("[]")
	}
	var base []byte
	if len(c.Base) > 0 {
		base = c.Base
	}
	got, next, err := runOurs(t, base, c.BaseLocation, string(req.Requirements), string(req.Updates))
	want, theirs, werr := oracle(base, c.BaseLocation, string(req.Requirements), string(req.Updates))
	if base == nil && got == "ok" && want == "bad" && strings.Contains(werr.Error(), "before last updated timestamp") {
		// iceberg-go seeds a created table with last-updated-ms = now, so
		// a snapshot staged more than a minute before the commit is
		// refused; Java's REST server (and icemeta) start with no time.
		t.Logf("known difference: %v", werr)
		return
	}
	if base == nil && got == "ok" && want == "ok" {
		// A create by commit: iceberg-go seeds an empty schema 0 (see
		// the "create transaction" case); compare what the client set.
		compareCreated(t, next, theirs)
		return
	}
	if got != want {
		t.Fatalf("%s (%s, answered %d): icemeta %s (%v); iceberg-go %s (%v)", c.Test, c.Client, c.Status, got, err, want, werr)
	}
	if c.Status == 200 && got != "ok" {
		t.Errorf("%s: the listener accepted this commit but icemeta refuses it now: %v", c.Test, err)
	}
	if got == "ok" {
		ours, _ := json.Marshal(next)
		compare(t, ours, theirs, false)
	}
}

// compareCreated compares the current schema, spec, sort order, location,
// properties and format version of a table created by a commit.
func compareCreated(t *testing.T, ours *icemeta.Table, theirs []byte) {
	t.Helper()
	them, err := table.ParseMetadataBytes(theirs)
	if err != nil {
		t.Fatal(err)
	}
	pick := func(schema, spec, order any, loc string, props map[string]string, fv int, uuid string) map[string]any {
		b, _ := json.Marshal(map[string]any{"schema": schema, "spec": spec, "order": order, "location": loc, "properties": props, "format-version": fv, "uuid": uuid})
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		if s, ok := m["schema"].(map[string]any); ok {
			delete(s, "schema-id")
		}
		return m
	}
	a := pick(ours.CurrentSchema(), ours.DefaultSpec(), ours.DefaultSortOrder(), ours.Location, ours.Properties, ours.FormatVersion, ours.UUID)
	spec := them.PartitionSpec()
	b := pick(them.CurrentSchema(), &spec, them.SortOrder(), them.Location(), them.Properties(), them.Version(), them.TableUUID().String())
	var diffs []string
	diffPaths("", a, b, &diffs)
	if len(diffs) > 0 {
		t.Errorf("created table differs (icemeta vs iceberg-go):\n  %s", strings.Join(diffs, "\n  "))
	}
}

func diffTableCreate(t *testing.T, c capturedChange) {
	var req struct {
		Name          string            `json:"name"`
		Location      string            `json:"location"`
		Schema        json.RawMessage   `json:"schema"`
		PartitionSpec json.RawMessage   `json:"partition-spec"`
		WriteOrder    json.RawMessage   `json:"write-order"`
		Properties    map[string]string `json:"properties"`
	}
	if err := json.Unmarshal(c.Request, &req); err != nil {
		t.Fatal(err)
	}
	loc := req.Location
	if loc == "" {
		loc = strings.TrimSuffix(c.NamespaceLocation, "/") + "/" + req.Name
	}
	ours, err := icemeta.NewTable(req.Schema, req.PartitionSpec, req.WriteOrder, loc, req.Properties, now)
	var theirs []byte
	var werr error
	func() {
		var sc iceberg.Schema
		if werr = json.Unmarshal(req.Schema, &sc); werr != nil {
			return
		}
		var spec *iceberg.PartitionSpec
		if len(req.PartitionSpec) > 0 && string(req.PartitionSpec) != "null" {
			spec = &iceberg.PartitionSpec{}
			if werr = json.Unmarshal(req.PartitionSpec, spec); werr != nil {
				return
			}
		}
		order := table.UnsortedSortOrder
		if len(req.WriteOrder) > 0 && string(req.WriteOrder) != "null" {
			if werr = json.Unmarshal(req.WriteOrder, &order); werr != nil {
				return
			}
		}
		var m table.Metadata
		if m, werr = table.NewMetadata(&sc, spec, order, loc, req.Properties); werr == nil {
			theirs, werr = json.Marshal(m)
		}
	}()
	if (err == nil) != (werr == nil) {
		t.Fatalf("%s (%s): icemeta %v; iceberg-go %v", c.Test, c.Client, err, werr)
	}
	if err != nil {
		return
	}
	b, _ := json.Marshal(ours)
	compare(t, b, theirs, true)
}

func diffViewCommit(t *testing.T, c capturedChange) {
	var req struct {
		Requirements json.RawMessage `json:"requirements"`
		Updates      json.RawMessage `json:"updates"`
	}
	if err := json.Unmarshal(c.Request, &req); err != nil {
		t.Fatal(err)
	}
	base, err := icemeta.ParseView(c.Base)
	if err != nil {
		t.Fatalf("base: %v", err)
	}
	var us []icemeta.Update
	if err := json.Unmarshal(req.Updates, &us); err != nil {
		t.Fatal(err)
	}
	next, err := icemeta.ApplyView(base, us, now)

	vb, werr := view.ParseMetadataBytes(c.Base)
	if werr != nil {
		t.Fatalf("oracle base: %v", werr)
	}
	var vus view.Updates
	if werr := json.Unmarshal(req.Updates, &vus); werr != nil {
		t.Fatal(werr)
	}
	var theirs []byte
	bld, werr := view.MetadataBuilderFromBase(vb)
	if werr == nil {
		for _, u := range vus {
			if werr = u.Apply(bld); werr != nil {
				break
			}
		}
	}
	if werr == nil {
		var res *view.MetadataBuildResult
		if res, werr = bld.Build(); werr == nil {
			theirs, _ = json.Marshal(res.Metadata)
		}
	}
	if (err == nil) != (werr == nil) {
		t.Fatalf("%s (%s): icemeta %v; iceberg-go %v", c.Test, c.Client, err, werr)
	}
	if err == nil {
		ours, _ := json.Marshal(next)
		compare(t, ours, theirs, false)
	}
}

func diffViewCreate(t *testing.T, c capturedChange) {
	var req struct {
		Name        string            `json:"name"`
		Location    string            `json:"location"`
		Schema      json.RawMessage   `json:"schema"`
		ViewVersion json.RawMessage   `json:"view-version"`
		Properties  map[string]string `json:"properties"`
	}
	if err := json.Unmarshal(c.Request, &req); err != nil {
		t.Fatal(err)
	}
	loc := req.Location
	if loc == "" {
		loc = strings.TrimSuffix(c.NamespaceLocation, "/") + "/" + req.Name
	}
	ours, err := icemeta.NewView(req.Schema, req.ViewVersion, loc, req.Properties, now)
	var theirs []byte
	var werr error
	func() {
		var sc iceberg.Schema
		if werr = json.Unmarshal(req.Schema, &sc); werr != nil {
			return
		}
		var ver view.Version
		if werr = json.Unmarshal(req.ViewVersion, &ver); werr != nil {
			return
		}
		var m view.Metadata
		if m, werr = view.NewMetadata(&ver, &sc, loc, req.Properties); werr == nil {
			theirs, werr = json.Marshal(m)
		}
	}()
	if (err == nil) != (werr == nil) {
		t.Fatalf("%s (%s): icemeta %v; iceberg-go %v", c.Test, c.Client, err, werr)
	}
	if err == nil {
		b, _ := json.Marshal(ours)
		compare(t, b, theirs, true)
	}
}
