package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/app"
	"github.com/hms-proxy/hms-proxy/fileio"
	"github.com/hms-proxy/hms-proxy/testbed"
)

type sparkStep struct {
	SQL   string `json:"sql"`
	Fetch bool   `json:"fetch,omitempty"`
	// Tolerate: the statement's error is its result, not a failure of the test.
	Tolerate bool `json:"tolerate,omitempty"`
}

type sparkResult struct {
	SQL   string     `json:"sql"`
	Rows  [][]string `json:"rows"`
	Error string     `json:"error"`
}

// runSpark runs testdata/spark_iceberg.py: one local SparkSession with Iceberg's REST catalog "rest" at the proxy
// (cfg adds hadoop settings, a Kerberos login, a Hive metastore) and the statements; any statement error fails t.
func runSpark(t *testing.T, cfg map[string]any, steps ...sparkStep) []sparkResult {
	t.Helper()
	py := testbed.PythonT(t, "pyspark", testbed.PySparkPackages...)
	jar, err := testbed.MavenArtifact(testbed.IcebergSparkRuntime)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	all := map[string]any{"jar": jar, "local": filepath.Join(work, "warehouse"), "steps": steps}
	for k, v := range cfg {
		all[k] = v
	}
	arg, _ := json.Marshal(all)
	script, _ := filepath.Abs(filepath.Join("testdata", "spark_iceberg.py"))
	run, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(run, py, script, string(arg))
	cmd.Dir = work
	jvmOpts, archived := testbed.SparkSubmitOptions(py)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "SPARK_LOCAL_IP=127.0.0.1", "PYSPARK_PYTHON="+py, jvmOpts)
	if k, ok := cfg["kerberos"]; ok && k != nil {
		cmd.Env = append(cmd.Env, "JAVA_TOOL_OPTIONS=-Djava.security.krb5.conf="+kdc.Krb5Conf, "KRB5_CONFIG="+kdc.Krb5Conf)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	testbed.CountLaunch("Spark sessions (spark_iceberg.py)")
	out, err := cmd.Output()
	archived(cmd.ProcessState)
	if err != nil {
		t.Fatalf("spark: %v\nstdout: %s\nstderr tail:\n%s", err, out, lines(stderr.String(), 40))
	}
	ls := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res []sparkResult
	if err := json.Unmarshal([]byte(ls[len(ls)-1]), &res); err != nil {
		t.Fatalf("spark answered %q: %v\nstderr tail:\n%s", ls[len(ls)-1], err, lines(stderr.String(), 40))
	}
	for i, r := range res {
		if r.Error != "" && !steps[i].Tolerate {
			t.Fatalf("spark: %s\n%s\nstderr tail:\n%s", r.SQL, r.Error, lines(stderr.String(), 20))
		}
	}
	return res
}

// sparkFlow is the REST flow in Spark SQL: Iceberg's runtime writes the data files to HDFS itself (HadoopFileIO),
// the proxy the metadata files. (Spark's metadata tables, t.snapshots and t.history, are read through the REST door
// by e2e/rest's TestRESTOAuth2SparkLifecycle.)
func sparkFlow(t *testing.T, cfg map[string]any, ns, loc string) flowResult {
	t.Helper()
	tn, rn := "rest."+ns+".events", "rest."+ns+".events_renamed"
	res := runSpark(t, cfg,
		sparkStep{SQL: "CREATE NAMESPACE rest." + ns + " LOCATION '" + loc + "'"},
		sparkStep{SQL: "CREATE TABLE " + tn + " (id bigint, writer string) USING iceberg"},
		sparkStep{SQL: "INSERT INTO " + tn + " VALUES (1, 'a'), (2, 'a')"},
		sparkStep{SQL: "INSERT INTO " + tn + " VALUES (3, 'b')"},
		sparkStep{SQL: "SELECT id FROM " + tn + " ORDER BY id", Fetch: true},
		sparkStep{SQL: "ALTER TABLE " + tn + " ADD COLUMN note string"},
		sparkStep{SQL: "INSERT INTO " + tn + " VALUES (4, 'c', 'new column')"},
		sparkStep{SQL: "ALTER TABLE " + tn + " RENAME TO " + ns + ".events_renamed"},
		sparkStep{SQL: "SELECT id, writer, note FROM " + rn + " ORDER BY id", Fetch: true},
	)
	f := flowResult{Location: loc + "/events", Schema: []string{"id", "writer"}}
	for _, r := range res[4].Rows {
		f.FirstScan = append(f.FirstScan, map[string]any{"id": atof(r[0])})
	}
	for _, r := range res[8].Rows {
		row := map[string]any{"id": atof(r[0]), "writer": r[1], "note": nil}
		if r[2] != "" {
			row["note"] = r[2]
			f.Schema = append(f.Schema, "note")
		}
		f.Rows = append(f.Rows, row)
	}
	return f
}

func atof(s string) float64 {
	var f float64
	fmt.Sscan(s, &f)
	return f
}

// hdfsFiles lists the files under a location of a cluster (through the proxy's own file layer, as the proxy user).
func hdfsFiles(t *testing.T, h *testbed.HDFS, loc string) []string {
	t.Helper()
	o := fileio.Options{Catalogs: []fileio.Catalog{{Name: "c", Conf: h.ClientConf()}}}
	if h.Kerberos != nil {
		o.ClientPrincipal, o.ClientKeytab, o.Krb5Conf = kdc.Principal(proxyUser), proxyKT, kdc.Krb5Conf
	}
	r, err := fileio.New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fs, err := r.For("c", loc)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := fs.List(ctx(t), loc, func(f fileio.File) error { out = append(out, f.Location); return nil }); err != nil && !fileio.IsNotExist(err) {
		t.Fatalf("list %s: %v", loc, err)
	}
	slices.Sort(out)
	return out
}

// The REST frontend's tables on HDFS, plain and Kerberized: Spark with Iceberg's runtime creates a table through
// the proxy in a namespace on hdfs://, appends twice (its HadoopFileIO writes the data files), scans, adds a column,
// renames the table and scans it; the proxy wrote every metadata file to the same HDFS (on the Kerberized cluster
// with its keytab, data transfer protected). PyIceberg's drop with purge then leaves no file under the table's
// location.
func TestRESTTableOnHDFS(t *testing.T) {
	need(t)
	for _, c := range []struct {
		name string
		h    *testbed.HDFS
		ms   *testbed.Metastore
	}{{"plain", plainHDFS, hms}, {"kerberos", krbHDFS, krbHMS}} {
		t.Run(c.name, func(t *testing.T) {
			conf := c.h.ClientConf()
			props := map[string]string{}
			spark := map[string]any{"warehouse": "cat", "hadoop": conf}
			if c.h.Kerberos != nil {
				props["security.client-principal"] = kdc.Principal(proxyUser)
				props["security.client-keytab"] = proxyKT
				spark["kerberos"] = map[string]string{"principal": kdc.Principal("alice"), "keytab": proxyKT}
			}
			t.Setenv("KRB5_CONFIG", kdc.Krb5Conf)
			p := startProxy(t, c.ms, conf, props, app.TestHooks{})
			spark["uri"] = p.base
			ns := uniq("hdfs" + c.name)
			loc := c.h.URI + "/rest/" + ns
			f := sparkFlow(t, spark, ns, loc)
			// The files: what HDFS holds under the table location, which must include every file the table's
			// metadata (as the proxy serves it) names directly.
			f.Files = hdfsFiles(t, c.h, f.Location)
			f.Snapshots = 3
			checkFlow(t, f)
			code, load := p.do(t, "GET", "/v1/cat/namespaces/"+ns+"/tables/events_renamed", nil)
			if code != 200 {
				t.Fatalf("load the renamed table: %d %v", code, load)
			}
			md := load["metadata"].(map[string]any)
			named := []string{load["metadata-location"].(string)}
			for _, e := range md["metadata-log"].([]any) {
				named = append(named, e.(map[string]any)["metadata-file"].(string))
			}
			for _, s := range md["snapshots"].([]any) {
				named = append(named, s.(map[string]any)["manifest-list"].(string))
			}
			if len(md["snapshots"].([]any)) != 3 {
				t.Fatalf("snapshots: %v", md["snapshots"])
			}
			for _, file := range named {
				if !slices.Contains(f.Files, file) {
					t.Fatalf("%s is named by the metadata but not stored on HDFS (it has %v)", file, f.Files)
				}
			}
			var out map[string]any
			runPy(t, map[string]any{"scenario": "purge", "uri": p.base, "warehouse": "cat", "ns": ns, "table": "events_renamed"}, &out)
			if left := hdfsFiles(t, c.h, f.Location); len(left) != 0 {
				t.Fatalf("after the drop with purge HDFS still holds under %s: %v", f.Location, left)
			}
		})
	}
}
