package javaproxy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/bench/peer"
	"github.com/hms-proxy/hms-proxy/testbed"
)

func TestJarNamesWhatIsMissing(t *testing.T) {
	if _, err := Jar(""); err == nil || !strings.Contains(err.Error(), JarEnv+" is not set") {
		t.Errorf("no jar: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "hms-proxy-0.1.2-abc-fat.jar")
	if _, err := Jar(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing jar: %v", err)
	}
	dir := t.TempDir()
	if _, err := Jar(dir); err == nil || !strings.Contains(err.Error(), "is not a .jar file") {
		t.Errorf("a folder: %v", err)
	}
	if v := Version("/x/hms-proxy-0.1.161-a111dd3f-fat.jar"); v != "0.1.161-a111dd3f" {
		t.Errorf("Version = %q", v)
	}
}

// TestJavaProxyFederatesOnLoopbackOnly starts the real peer from the jar
// named by BENCH_JAVA_PROXY_JAR over one real Hive 3.1.3 metastore serving
// two catalogs: get_all_databases must list both namespaces (catalog2's
// prefixed with the default separator) and the process must hold no
// listening socket outside loopback.
func TestJavaProxyFederatesOnLoopbackOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a metastore and the Java HMS Proxy")
	}
	jar, err := Jar(os.Getenv(JarEnv))
	if err != nil {
		t.Skipf("the benchmark runs without this peer here: %v", err)
	}
	m := testbed.StartMetastoreT(t, testbed.Hive313)
	p, err := Start("java-proxy", Config{Jar: jar, Dir: t.TempDir(), Backends: []string{m.URI, m.URI}}, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if err := peer.CheckLoopbackOnly(p.Pid()); err != nil {
		t.Fatal(err)
	}
	ls, _ := peer.Listeners(p.Pid())
	t.Logf("%s %s listens on %v", Name, Version(jar), ls)
	names, err := peer.Databases(p.Addr, time.Minute)
	if err != nil {
		t.Fatalf("get_all_databases through the Java HMS Proxy: %v", err)
	}
	if !slices.Contains(names, "default") || !slices.Contains(names, "catalog2.default") {
		t.Fatalf("two catalogs list %v, want default and catalog2.default", names)
	}
}
