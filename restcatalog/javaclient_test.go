package restcatalog_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/testbed"
)

// javaLib returns the folder of the Java REST client's jars
// ($HMS_PROXY_CACHE/restcatalog-java/<pom hash>), copying them from Maven
// Central with the test bed's Maven repository when missing.
func javaLib(t *testing.T) string {
	t.Helper()
	pom, err := os.ReadFile(filepath.Join("testdata", "java", "pom.xml"))
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(testbed.Cache(), "restcatalog-java")
	h := fnv.New32a()
	h.Write(pom)
	dir := filepath.Join(root, fmt.Sprintf("%08x", h.Sum32()))
	if _, err := os.Stat(filepath.Join(dir, "done")); err == nil {
		return dir
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
	if _, err := os.Stat(filepath.Join(dir, "done")); err == nil {
		return dir
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		t.Fatalf("mvn not found (apt-get install -y maven): %v", err)
	}
	abs, _ := filepath.Abs(filepath.Join("testdata", "java", "pom.xml"))
	cmd := exec.Command(mvn, "-q", "-B", "-f", abs, "-Dmaven.repo.local="+filepath.Join(testbed.Cache(), "m2"),
		"dependency:copy-dependencies", "-DoutputDirectory="+dir)
	cmd.Dir = t.TempDir()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mvn dependency:copy-dependencies: %v\n%s", err, b)
	}
	if err := os.WriteFile(filepath.Join(dir, "done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Iceberg's own Java REST client (RESTCatalog 1.10.1, as Spark and Trino
// embed it) against the listener: namespace and table DDL with a partition
// spec, a schema change, a stale commit it retries by itself, a multi-table
// transaction, a view, rename, the 404 of a missing table, discovery of a
// catalog without writes, drops. Its strict parsers read every answer.
func TestJavaRESTCatalogClient(t *testing.T) {
	e := newEnv(t, nil, nil)
	lib := javaLib(t)
	java, err := exec.LookPath("java")
	if err != nil {
		t.Fatalf("java not found: %v", err)
	}
	ns := uniq("java")
	src, _ := filepath.Abs(filepath.Join("testdata", "java", "JavaRestClient.java"))
	cmd := exec.Command(java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", filepath.Join(lib, "*"), src, e.url, ns, "file:"+t.TempDir()+"/"+ns)
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
			t.Fatalf("java client: %v\n%s\n%s", err, stdout.String(), lastLines(stderr.String(), 40))
		}
	case <-time.After(4 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("java client: no answer in 4 minutes\n%s", lastLines(stderr.String(), 40))
	}
	var r map[string]any
	if err := json.Unmarshal(lastLine(stdout.Bytes()), &r); err != nil {
		t.Fatalf("java client output: %v\n%s", err, stdout.String())
	}
	want := map[string]any{
		"namespace_exists": true, "a_partition_fields": 1.0, "a_property_k": "v",
		"a_columns": []any{"id", "day", "note"}, "b_first_and_second": "1,2", "txn": "1,1",
		"view_sql": "SELECT id FROM a", "views": 1.0, "tables": []any{"a", "b2"}, "missing": "NoSuchTableException",
		"catalog2_write": "UnsupportedOperationException", "catalog2_lists": true, "namespace_exists_after_drop": false,
	}
	for k, w := range want {
		g, _ := json.Marshal(r[k])
		wb, _ := json.Marshal(w)
		if string(g) != string(wb) {
			t.Errorf("%s = %s, want %s", k, g, wb)
		}
	}
	if n := metric(t, e, "hms_proxy_rest_requests_total", "route", "POST /v1/{prefix}/transactions/commit", "status", "204"); n != 1 {
		t.Errorf("transaction commits counted: %v", n)
	}
}
