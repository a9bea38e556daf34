package restcatalog_test

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

// python returns the interpreter of the PyIceberg and DuckDB client
// virtualenv (testbed.PyIcebergPackages), building it when missing.
func python(t *testing.T) string {
	return testbed.PythonT(t, "pyiceberg", testbed.PyIcebergPackages...)
}

// runPy runs testdata/<script> with cfg as its JSON argument and decodes its
// JSON answer into out.
func runPy(t *testing.T, script string, cfg map[string]any, out any) {
	t.Helper()
	py := python(t)
	arg, _ := json.Marshal(cfg)
	cmd := exec.Command(py, filepath.Join("testdata", script), string(arg))
	cmd.Env = append(os.Environ(), "PYICEBERG_HOME="+t.TempDir(), "PYTHONDONTWRITEBYTECODE=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s %v: %v\nstdout: %s\nstderr: %s", script, cfg["scenario"], err, stdout.String(), lastLines(stderr.String(), 30))
		}
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("%s %v: no answer within 5 minutes\nstderr: %s", script, cfg["scenario"], lastLines(stderr.String(), 30))
	}
	if err := json.Unmarshal(bytes.TrimSpace(lastLine(stdout.Bytes())), out); err != nil {
		t.Fatalf("%s: answer is not JSON: %v\n%s", script, err, stdout.String())
	}
}

func lastLine(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
