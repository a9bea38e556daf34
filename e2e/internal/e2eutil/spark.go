package e2eutil

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/testbed"
)

// SparkPython returns the interpreter of the PySpark virtualenv
// (testbed.PySparkPackages), building it when missing.
func SparkPython(t *testing.T) string {
	return testbed.PythonT(t, "pyspark", testbed.PySparkPackages...)
}

// SparkStep is one SQL statement of a Spark run; with fetch its rows are
// collected.
type SparkStep struct {
	SQL   string `json:"sql"`
	Fetch bool   `json:"fetch,omitempty"`
	// Save keeps the first value of the rows; later statements' {Save} is
	// replaced by it.
	Save string `json:"save,omitempty"`
}

// SparkResult is what one statement gave: rows or an error.
type SparkResult struct {
	SQL   string     `json:"sql"`
	Rows  [][]string `json:"rows"`
	Error string     `json:"error"`
}

// SparkPhase is a list of statements run in one SparkSession against the
// metastore at URI.
type SparkPhase struct {
	URI   string      `json:"uri"`
	Steps []SparkStep `json:"steps"`
	// Conf are more Spark settings (an Iceberg REST catalog, spark.jars);
	// NoHive runs the session without Hive support (URI unused).
	Conf   map[string]string `json:"conf,omitempty"`
	NoHive bool              `json:"-"`
	Hive   *bool             `json:"hive,omitempty"`
}

// RunSparkEnv is runSpark with more environment for the Spark JVM (e.g.
// JAVA_TOOL_OPTIONS with a trust store).
func RunSparkEnv(t *testing.T, env []string, phases ...SparkPhase) [][]SparkResult {
	t.Helper()
	for i := range phases {
		if phases[i].NoHive {
			off := false
			phases[i].Hive = &off
		}
	}
	py := SparkPython(t)
	work := t.TempDir()
	arg, _ := json.Marshal(map[string]any{"warehouse": filepath.Join(work, "warehouse"), "phases": phases})
	script, err := filepath.Abs(Testdata("spark_sql.py"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, script, string(arg))
	cmd.Dir = work // derby.log, metastore_db of a misconfigured session, spark-warehouse
	jvmOpts, archived := testbed.SparkSubmitOptions(py)
	cmd.Env = append(append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "SPARK_LOCAL_IP=127.0.0.1", "PYSPARK_PYTHON="+py, jvmOpts), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	testbed.CountLaunch("Spark sessions (spark_sql.py)")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		archived(cmd.ProcessState)
		done <- err
	}()
	start := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("spark run: %v\nstdout: %s\nstderr: %s", err, stdout.String(), TailLines(stderr.String(), 40))
		}
	case <-time.After(8 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("spark run: no answer within 8 minutes\nstderr: %s", TailLines(stderr.String(), 40))
	}
	out := bytes.TrimSpace(stdout.Bytes())
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	var res []struct {
		URI     string        `json:"uri"`
		Results []SparkResult `json:"results"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(phases) {
		t.Fatalf("spark run: answer is not one result list per phase (%v): %s\nstderr: %s", err, stdout.String(), TailLines(stderr.String(), 40))
	}
	var all [][]SparkResult
	for i, ph := range res {
		if ph.URI != phases[i].URI || len(ph.Results) != len(phases[i].Steps) {
			t.Fatalf("spark phase %d ran against %s with %d results, want %s with %d", i, ph.URI, len(ph.Results), phases[i].URI, len(phases[i].Steps))
		}
		all = append(all, ph.Results)
	}
	t.Logf("spark run: %d phases in %s", len(phases), time.Since(start).Round(time.Second))
	return all
}

func TailLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// SparkOK fails the test when statement i failed, and returns its rows.
func SparkOK(t *testing.T, res []SparkResult, i int) [][]string {
	t.Helper()
	if res[i].Error != "" {
		t.Fatalf("spark: %s: %s", res[i].SQL, res[i].Error)
	}
	return res[i].Rows
}

// RowsText renders rows for comparisons ("1,a;2,b").
func RowsText(rows [][]string) string {
	var parts []string
	for _, r := range rows {
		parts = append(parts, strings.Join(r, ","))
	}
	return strings.Join(parts, ";")
}
