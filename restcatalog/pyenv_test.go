package restcatalog_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/testbed"
)

// pythonPackages are the pinned PyPI packages of the client virtualenv:
// pyiceberg with pyarrow, and DuckDB with its iceberg and httpfs extensions
// (the extension wheels match DuckDB's version, not the newest DuckDB).
var pythonPackages = []string{
	"pyiceberg[pyarrow]==0.12.0",
	"pyarrow==26.0.1",
	"duckdb==1.5.5",
	"duckdb-extension-iceberg==1.5.5",
	"duckdb-extension-httpfs==1.5.5",
	"duckdb-extension-avro==1.5.5",
}

// venvName changes whenever the package list does.
func venvName() string {
	return "restcatalog-" + fmt.Sprintf("%08x", hashStrings(pythonPackages))
}

func hashStrings(ss []string) uint32 {
	h := uint32(2166136261)
	for _, s := range ss {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint32(s[i])) * 16777619
		}
		h *= 16777619 // a separator between the strings
	}
	return h
}

// python returns the interpreter of the client virtualenv under
// $HMS_PROXY_CACHE/python/, creating it (python3 -m venv, pip install from
// PyPI) when missing. A file lock keeps parallel test binaries from building
// it twice; the venv is built in a scratch folder and renamed into place.
func python(t *testing.T) string {
	t.Helper()
	root := filepath.Join(testbed.Cache(), "python")
	dir := filepath.Join(root, venvName())
	py := filepath.Join(dir, "bin", "python")
	if _, err := os.Stat(py); err == nil {
		return py
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(root, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if _, err := os.Stat(py); err == nil {
		return py
	}
	base, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 not found (apt-get install -y python3 python3-venv): %v", err)
	}
	tmp := dir + ".tmp"
	_ = os.RemoveAll(tmp)
	start := time.Now()
	run := func(name string, args ...string) {
		cmd := exec.Command(name, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
		}
	}
	run(base, "-m", "venv", tmp)
	run(filepath.Join(tmp, "bin", "pip"), append([]string{"install", "-q", "--disable-pip-version-check"}, pythonPackages...)...)
	// Only bin/python is used, and it finds its packages relative to
	// itself, so the renamed venv works (its pip scripts name the old path).
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatal(err)
	}
	t.Logf("python client venv built in %s: %s", time.Since(start).Round(time.Second), dir)
	return py
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
