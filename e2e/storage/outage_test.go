package storage

import (
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hms-proxy/hms-proxy/app"
)

// outageHook stops a storage server the first time a metadata write is halfway through after it was armed.
type outageHook struct {
	armed   atomic.Bool
	stop    func()
	stopped atomic.Int32
}

func (h *outageHook) midWrite(loc string) {
	if strings.HasSuffix(loc, ".metadata.json") && h.armed.CompareAndSwap(true, false) {
		h.stop()
		h.stopped.Add(1)
	}
}

// A commit whose metadata write is cut by the S3 server going away (killed halfway through the PUT): PyIceberg's
// append fails, the table stays at its previous snapshot (no half-written metadata file is visible), and once the
// server is back the next append commits.
func TestCommitInterruptedByS3Outage(t *testing.T) {
	need(t)
	hook := &outageHook{stop: s3srv.Stop}
	p := startProxy(t, hms, merged(s3srv.Conf(), plainHDFS.ClientConf()), nil, app.TestHooks{FileMidWrite: hook.midWrite})
	t.Cleanup(func() {
		if err := s3srv.Start(); err != nil && !strings.Contains(err.Error(), "in use") {
			t.Logf("restarting s3proxy: %v", err)
		}
	})
	ns := uniq("s3out")
	cfg := map[string]any{"uri": p.base, "warehouse": "cat", "ns": ns, "table": "events",
		"location": "s3a://" + bucket + "/" + ns, "props": pyS3Props()}
	var f flowResult
	runPy(t, with(cfg, "scenario", "flow"), &f) // three snapshots, ids 1..4, renamed to events_renamed
	cfg["table"] = "events_renamed"
	var before readResult
	runPy(t, with(cfg, "scenario", "read"), &before)

	hook.armed.Store(true)
	var app1 appendResult
	runPy(t, with(with(with(cfg, "scenario", "append"), "start", 100), "n", 2), &app1)
	if hook.stopped.Load() != 1 {
		t.Fatalf("the S3 server was not stopped during a metadata write (append: %+v)", app1)
	}
	if app1.OK {
		t.Fatal("the append whose metadata write was cut reported success")
	}
	if err := s3srv.Start(); err != nil {
		t.Fatal(err)
	}
	var after readResult
	runPy(t, with(cfg, "scenario", "read"), &after)
	if after.MetadataLocation != before.MetadataLocation || after.Snapshots != before.Snapshots ||
		!slices.Equal(ids(after.Rows), ids(before.Rows)) {
		t.Fatalf("after the cut commit the table is %+v, was %+v", after, before)
	}
	meta := metadataFiles(t, f.Location)
	if len(meta) != 5 {
		t.Fatalf("metadata files on S3 after the cut commit: %v (want the 5 published ones: nothing half-written)", meta)
	}
	var app2 appendResult
	runPy(t, with(with(with(cfg, "scenario", "append"), "start", 200), "n", 1), &app2)
	if !app2.OK {
		t.Fatalf("the append after the server returned: %+v", app2)
	}
	runPy(t, with(cfg, "scenario", "read"), &after)
	if got := ids(after.Rows); !slices.Equal(got, []int{1, 2, 3, 4, 200}) || after.Snapshots != before.Snapshots+1 {
		t.Fatalf("after the next append: ids %v, %d snapshots", got, after.Snapshots)
	}
}

// The same on HDFS, with Spark's INSERT as the commit: the NameNode and DataNode are killed halfway through the
// proxy's write of the new metadata file (to its temporary name); the table stays readable at its previous
// snapshot, no file appears under the new metadata file's name, the temporary file is removed or reported by
// name, and after the cluster is back the next INSERT commits.
func TestCommitInterruptedByHDFSOutage(t *testing.T) {
	need(t)
	hook := &outageHook{stop: plainHDFS.Stop}
	p := startProxy(t, hms, plainHDFS.ClientConf(), nil, app.TestHooks{FileMidWrite: hook.midWrite})
	t.Cleanup(func() {
		if !plainHDFS.Running() {
			if err := plainHDFS.Restart(); err != nil {
				t.Logf("restarting HDFS: %v", err)
			}
		}
	})
	// Spark's Hadoop client gives up on a NameNode that is gone at once (its default retries for minutes while
	// it cleans up after the failed commit).
	spark := map[string]any{"warehouse": "cat", "uri": p.base, "hadoop": merged(plainHDFS.ClientConf(),
		map[string]string{"ipc.client.connect.max.retries": "0", "ipc.client.connect.max.retries.on.timeouts": "0"})}
	ns := uniq("hdfsout")
	loc := plainHDFS.URI + "/rest/" + ns
	tn := "rest." + ns + ".events"
	runSpark(t, spark,
		sparkStep{SQL: "CREATE NAMESPACE rest." + ns + " LOCATION '" + loc + "'"},
		sparkStep{SQL: "CREATE TABLE " + tn + " (id bigint) USING iceberg"},
		sparkStep{SQL: "INSERT INTO " + tn + " VALUES (1), (2)"})
	code, before := p.do(t, "GET", "/v1/cat/namespaces/"+ns+"/tables/events", nil)
	if code != 200 {
		t.Fatalf("load: %d %v", code, before)
	}

	hook.armed.Store(true)
	res := runSpark(t, spark, sparkStep{SQL: "INSERT INTO " + tn + " VALUES (3)", Tolerate: true})
	if hook.stopped.Load() != 1 {
		t.Fatalf("HDFS was not stopped during a metadata write (insert: %+v)", res)
	}
	if res[0].Error == "" {
		t.Fatal("the INSERT whose metadata write was cut reported success")
	}
	if err := plainHDFS.Restart(); err != nil {
		t.Fatal(err)
	}
	code, after := p.do(t, "GET", "/v1/cat/namespaces/"+ns+"/tables/events", nil)
	if code != 200 || after["metadata-location"] != before["metadata-location"] {
		t.Fatalf("after the cut commit: %d %v (was at %v)", code, after["metadata-location"], before["metadata-location"])
	}
	meta := hdfsFiles(t, plainHDFS, loc+"/events/metadata")
	var published []string
	for _, m := range meta {
		if strings.HasSuffix(m, ".metadata.json") && !strings.HasPrefix(path.Base(m), ".") {
			published = append(published, m)
		}
	}
	if len(published) != 2 {
		t.Fatalf("metadata files after the cut commit: %v (want the create's and the first insert's)", meta)
	}
	for _, m := range meta {
		if strings.HasPrefix(path.Base(m), ".") && len(p.LogLines("temporary file", path.Base(m))) == 0 {
			t.Fatalf("the temporary file %s of the cut write is neither removed nor reported in the log", m)
		}
	}
	res = runSpark(t, spark,
		sparkStep{SQL: "INSERT INTO " + tn + " VALUES (4)"},
		sparkStep{SQL: "SELECT id FROM " + tn + " ORDER BY id", Fetch: true})
	var got []string
	for _, r := range res[1].Rows {
		got = append(got, r[0])
	}
	if !slices.Equal(got, []string{"1", "2", "4"}) {
		t.Fatalf("after the cluster returned and the next insert: ids %v, want [1 2 4]", got)
	}
}

type readResult struct {
	Rows             []map[string]any `json:"rows"`
	Snapshots        int              `json:"snapshots"`
	MetadataLocation string           `json:"metadata_location"`
}

type appendResult struct {
	OK        bool   `json:"ok"`
	ErrorType string `json:"error_type"`
	Message   string `json:"message"`
}

// metadataFiles lists the *.metadata.json objects of a table on the S3 server's disk.
func metadataFiles(t *testing.T, tableLoc string) []string {
	t.Helper()
	all, err := s3srv.Files(bucket, s3Key(t, tableLoc)+"/metadata/")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range all {
		if strings.HasSuffix(f, ".metadata.json") {
			out = append(out, f)
		}
	}
	return out
}
