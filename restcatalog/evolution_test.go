package restcatalog_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// PyIceberg evolves tables of format v1, v2 and v3 through the listener:
// schema, partition spec and sort order changes between appends, a delete,
// tags and a branch, table statistics set and removed, properties, snapshot
// expiry and a v1 to v2 upgrade (PyIceberg 0.12 writes no v3 manifests: the
// v3 table gets the metadata steps only). Every change is a commit the
// server applies to the table metadata; a fresh load must show all of them
// and the data must still read.
func TestPyIcebergMetadataEvolution(t *testing.T) {
	e := newEnv(t, nil, nil)
	var r map[string]struct {
		FormatVersion int               `json:"format_version"`
		IDs           []int64           `json:"ids"`
		Columns       []string          `json:"columns"`
		Schemas       int               `json:"schemas"`
		SpecFields    []string          `json:"spec_fields"`
		Specs         int               `json:"specs"`
		Sort          [][]any           `json:"sort"`
		Refs          []string          `json:"refs"`
		Snapshots     int               `json:"snapshots"`
		Statistics    int               `json:"statistics"`
		Properties    map[string]string `json:"properties"`
		MetadataLog   int               `json:"metadata_log"`
	}
	runPy(t, "pyiceberg_scenario.py", map[string]any{"scenario": "evolution", "uri": e.url, "ns": uniq("evo"), "location": "file:" + t.TempDir() + "/evo"}, &r)
	for name, wantVersion := range map[string]int{"evo_v1": 2, "evo_v2": 2, "evo_v3": 3} {
		got, ok := r[name]
		if !ok {
			t.Errorf("%s: not reported: %v", name, r)
			continue
		}
		data := wantVersion < 3
		if got.FormatVersion != wantVersion {
			t.Errorf("%s: format version %d, want %d", name, got.FormatVersion, wantVersion)
		}
		wantIDs, wantRefs, wantSnapshots, wantLog := []int64{0, 2, 10, 11, 20}, []string{"audit", "first", "main"}, 3, 12
		if !data {
			wantIDs, wantRefs, wantSnapshots, wantLog = []int64{}, []string{}, 0, 5
		}
		if !slices.Equal(got.IDs, wantIDs) {
			t.Errorf("%s: reads ids %v, want %v", name, got.IDs, wantIDs)
		}
		if want := []string{"id", "label", "score"}; !slices.Equal(got.Columns, want) || got.Schemas != 2 {
			t.Errorf("%s: columns %v in %d schemas, want %v in 2", name, got.Columns, got.Schemas, want)
		}
		if want := []string{"name_part", "id_part"}; !slices.Equal(got.SpecFields, want) || got.Specs != 2 {
			t.Errorf("%s: spec fields %v in %d specs, want %v in 2", name, got.SpecFields, got.Specs, want)
		}
		if len(got.Sort) != 1 || got.Sort[0][0] != 1.0 || !strings.Contains(strings.ToLower(got.Sort[0][1].(string)), "desc") {
			t.Errorf("%s: sort order %v, want id descending", name, got.Sort)
		}
		if !slices.Equal(got.Refs, wantRefs) {
			t.Errorf("%s: refs %v, want %v", name, got.Refs, wantRefs)
		}
		// Four snapshots were committed (three appends, one delete); the
		// third append was expired.
		if got.Snapshots != wantSnapshots || got.Statistics != 0 {
			t.Errorf("%s: %d snapshots and %d statistics files, want %d and 0", name, got.Snapshots, got.Statistics, wantSnapshots)
		}
		if b, _ := json.Marshal(got.Properties); string(b) != `{"owner_team":"lake"}` {
			t.Errorf("%s: properties %s", name, b)
		}
		// One previous file per commit after the create.
		if got.MetadataLog < wantLog {
			t.Errorf("%s: %d metadata log entries, want at least %d", name, got.MetadataLog, wantLog)
		}
	}
}
