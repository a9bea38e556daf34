package storage

import (
	"slices"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/app"
)

type flowResult struct {
	FirstScan        []map[string]any `json:"first_scan"`
	Rows             []map[string]any `json:"rows"`
	Schema           []string         `json:"schema"`
	Snapshots        int              `json:"snapshots"`
	Location         string           `json:"location"`
	MetadataLocation string           `json:"metadata_location"`
	Files            []string         `json:"files"`
}

func ids(rows []map[string]any) []int {
	var out []int
	for _, r := range rows {
		out = append(out, int(r["id"].(float64)))
	}
	return out
}

// checkFlow asserts what every storage's flow must show: both appends scanned, the added column, the rename.
func checkFlow(t *testing.T, f flowResult) {
	t.Helper()
	if got := ids(f.FirstScan); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("scan after two appends: ids %v, want [1 2 3]", got)
	}
	if got := ids(f.Rows); !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Fatalf("scan of the renamed table: ids %v, want [1 2 3 4]", got)
	}
	if !slices.Contains(f.Schema, "note") || f.Rows[3]["note"] != "new column" || f.Rows[0]["note"] != nil {
		t.Fatalf("the added column: schema %v, rows %v", f.Schema, f.Rows)
	}
	if f.Snapshots != 3 {
		t.Fatalf("snapshots %d, want 3", f.Snapshots)
	}
	var data, meta int
	for _, file := range f.Files {
		switch {
		case strings.HasSuffix(file, ".parquet"):
			data++
		case strings.HasSuffix(file, ".metadata.json"):
			meta++
		}
		if !strings.HasPrefix(file, f.Location+"/") {
			t.Fatalf("file %s is outside the table location %s", file, f.Location)
		}
	}
	// metadata files: the create, three appends, the schema change (a rename writes none)
	if data != 3 || meta != 5 {
		t.Fatalf("the metadata names %d data files and %d metadata files (want 3 and 5): %v", data, meta, f.Files)
	}
}

// The REST frontend's tables on S3: PyIceberg creates a table in a namespace on s3a://, appends twice with its own
// PyArrowFileIO, scans, adds a column, renames the table and scans it again; the proxy wrote every metadata file to
// the same S3. A drop with purge deletes every file the metadata names, and nothing is left under the table's
// location on the server.
func TestRESTTableOnS3(t *testing.T) {
	need(t)
	p := startProxy(t, hms, merged(s3srv.Conf(), plainHDFS.ClientConf()), nil, app.TestHooks{})
	ns := uniq("s3ns")
	cfg := map[string]any{"uri": p.base, "warehouse": "cat", "ns": ns, "table": "events",
		"location": "s3a://" + bucket + "/" + ns, "props": pyS3Props()}
	var f flowResult
	runPy(t, with(cfg, "scenario", "flow"), &f)
	checkFlow(t, f)
	if !strings.HasPrefix(f.MetadataLocation, "s3a://"+bucket+"/"+ns+"/events/metadata/") {
		t.Fatalf("metadata location %s", f.MetadataLocation)
	}
	onDisk, err := s3srv.Files(bucket, s3Key(t, f.Location)+"/")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range f.Files {
		if !slices.Contains(onDisk, s3Key(t, file)) {
			t.Fatalf("%s is named by the metadata but not stored on the S3 server (it has %v)", file, onDisk)
		}
	}

	runPy(t, with(with(cfg, "scenario", "purge"), "table", "events_renamed"), &map[string]any{})
	left, err := s3srv.Files(bucket, s3Key(t, f.Location)+"/")
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("after the drop with purge the S3 server still holds under %s: %v", f.Location, left)
	}
	if code, body := p.do(t, "GET", "/v1/cat/namespaces/"+ns+"/tables/events_renamed", nil); code != 404 {
		t.Fatalf("the purged table still loads: %d %v", code, body)
	}
}

func with(m map[string]any, k string, v any) map[string]any {
	out := map[string]any{}
	for a, b := range m {
		out[a] = b
	}
	out[k] = v
	return out
}
