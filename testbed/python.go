package testbed

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Pinned PyPI package sets of the real Python clients the tests run. A set's
// virtualenv is named by a hash of its list, so changing a pin builds a new
// one.
var (
	// PyIcebergPackages: PyIceberg with its Hive catalog (thrift) and
	// PyArrow, and DuckDB with its iceberg, httpfs and avro extensions (the
	// extension wheels match DuckDB's version, not the newest DuckDB). The
	// REST frontend's tests and the Hive-catalog lock tests share it.
	PyIcebergPackages = []string{
		"pyiceberg[pyarrow,hive]==0.12.0",
		"pyarrow==26.0.1",
		"duckdb==1.5.5",
		"duckdb-extension-iceberg==1.5.5",
		"duckdb-extension-httpfs==1.5.5",
		"duckdb-extension-avro==1.5.5",
	}
	// PySparkPackages: pyspark with its own Spark (the Hive 2.3.9 client
	// built in), which talks to Hive 3.1.3 metastores over Thrift as it does
	// in production.
	PySparkPackages = []string{"pyspark==3.5.9"}
)

// IcebergSparkRuntime is the Maven coordinate of Iceberg's Spark 3.5 runtime (MavenArtifact fetches it), the
// Iceberg REST client of the Spark tests and of make demo.
const IcebergSparkRuntime = "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0"

// venvDir is where the virtualenv of name with packages lives.
func venvDir(name string, packages []string) string {
	h := uint32(2166136261) // FNV-1a over the list, a separator between entries
	for _, s := range packages {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint32(s[i])) * 16777619
		}
		h *= 16777619
	}
	return filepath.Join(Cache(), "python", fmt.Sprintf("%s-%08x", name, h))
}

// Python returns the interpreter of the virtualenv name with packages under
// $HMS_PROXY_CACHE/python/, building it when missing (python3 -m venv, pip
// install from PyPI). A file lock keeps parallel test binaries from building
// it twice; it is built in a scratch folder and renamed into place (its
// bin/python finds its packages relative to itself, so the renamed venv
// works; its pip scripts would name the old path and are not used).
func Python(name string, packages ...string) (py string, built time.Duration, err error) {
	dir := venvDir(name, packages)
	py = filepath.Join(dir, "bin", "python")
	if _, err := os.Stat(py); err == nil {
		return py, 0, nil
	}
	root := filepath.Dir(dir)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", 0, err
	}
	lock, err := os.OpenFile(filepath.Join(root, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", 0, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", 0, err
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if _, err := os.Stat(py); err == nil {
		return py, 0, nil // another test binary built it meanwhile
	}
	base, err := exec.LookPath("python3")
	if err != nil {
		return "", 0, fmt.Errorf("python3 not found (apt-get install -y python3 python3-venv; make test does): %w", err)
	}
	tmp := dir + ".tmp"
	_ = os.RemoveAll(tmp)
	start := time.Now()
	run := func(name string, args ...string) error {
		cmd := exec.Command(name, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out.String())
		}
		return nil
	}
	if err := run(base, "-m", "venv", tmp); err != nil {
		return "", 0, err
	}
	if err := run(filepath.Join(tmp, "bin", "pip"), append([]string{"install", "-q", "--disable-pip-version-check"}, packages...)...); err != nil {
		_ = os.RemoveAll(tmp)
		return "", 0, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", 0, err
	}
	return py, time.Since(start), nil
}

// PythonT is Python for tests: it fails t when the virtualenv cannot be
// built, and logs how long building took.
func PythonT(t testing.TB, name string, packages ...string) string {
	t.Helper()
	py, built, err := Python(name, packages...)
	if err != nil {
		t.Fatalf("Python client %s: %v", name, err)
	}
	if built > 0 {
		t.Logf("Python client %s: virtualenv built in %s: %s", name, built.Round(time.Second), filepath.Dir(filepath.Dir(py)))
	}
	return py
}
