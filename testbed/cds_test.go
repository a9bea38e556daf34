package testbed

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The first driver JVM of a class path writes the class-data archive, the next one maps it, and neither prints
// anything of it on stdout (which carries the driver's steps); an archive the JVM cannot use is ignored silently.
func TestClassArchiveWrittenOnceThenMapped(t *testing.T) {
	skipIfRequested(t)
	if err := Prepare(); err != nil {
		t.Fatal(err)
	}
	java, err := javaBin()
	if err != nil {
		t.Fatal(err)
	}
	cp := driverJar(Hive410) + string(filepath.ListSeparator) + filepath.Join(libDir(Hive410), "*")
	t.Setenv("HMS_PROXY_CACHE", t.TempDir()) // a cache of its own for the archives; the jars are resolved above
	t.Setenv("HMS_PROXY_CDS", "")            // the mechanism itself, also when a measurement turned it off
	classLog := filepath.Join(t.TempDir(), "classes.log")
	args := []string{"-Xmx256m", "-XX:+UseSerialGC", "-Xlog:class+load=info:file=" + classLog, "-cp", cp, "hmsbed.Driver"}

	// run starts the driver without arguments: it reports its usage as one failed step and exits 2
	run := func(what string) (archive *classArchive, stdout string) {
		t.Helper()
		jargs, archive := withClassArchive(java, args)
		cmd := exec.Command(java, jargs...)
		out, err := cmd.Output()
		archive.publish(cmd.ProcessState)
		if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 2) {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], `{"step":"arguments","ok":false`) {
			t.Fatalf("%s: stdout is not the one usage step:\n%s", what, out)
		}
		return archive, string(out)
	}
	// driverShared: the driver's main class came from the archive (the JVM's class log says where each came from)
	driverShared := func() bool {
		data, err := os.ReadFile(classLog)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(data), "hmsbed.Driver source: shared objects file (top)")
	}

	if a, _ := run("first JVM"); a == nil {
		t.Fatal("the first JVM of a class path was not asked to write the archive")
	}
	archives, _ := filepath.Glob(filepath.Join(Cache(), "cds", "*.jsa"))
	if len(archives) != 1 || !validArchive(archives[0]) {
		t.Fatalf("after the first JVM: archives %v, want one valid", archives)
	}
	if left, _ := filepath.Glob(filepath.Join(Cache(), "cds", "*.tmp")); len(left) > 0 {
		t.Errorf("temporary archives left: %v", left)
	}
	// an archive unused for long goes when the next one is written; one in use stays
	stale := filepath.Join(Cache(), "cds", "0123456789abcdef01234567.jsa")
	if err := os.WriteFile(stale, dynamicArchiveMagic, 0o444); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-archiveUnused - time.Hour)
	for _, f := range []string{stale, archives[0]} {
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if a, _ := run("second JVM"); a != nil {
		t.Fatal("the second JVM was asked to write the archive again")
	}
	sweepArchives(filepath.Dir(stale))
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("an archive unused for %v was kept (%v)", archiveUnused, err)
	}
	if !validArchive(archives[0]) {
		t.Error("the sweep removed the archive the second JVM mapped")
	}
	if !driverShared() {
		t.Error("the second JVM did not load the driver's classes from the archive")
	}

	// a damaged archive (right magic, garbage after it): the JVM runs without it, stdout as clean as before
	bad := append(append([]byte{}, dynamicArchiveMagic...), []byte(strings.Repeat("x", 4096))...)
	if err := os.WriteFile(archives[0], bad, 0o644); err != nil {
		t.Fatal(err)
	}
	run("JVM with a damaged archive")
	if driverShared() {
		t.Error("the JVM loaded the driver's classes from a damaged archive")
	}
}

// What the key leaves out and what stops an archive: trailing configuration directories are not part of it (every
// metastore has its own conf directory), a directory of classes before the jars means no archive at all.
func TestClassArchiveKey(t *testing.T) {
	java, err := javaBin()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	jar := filepath.Join(dir, "a.jar")
	if err := os.WriteFile(jar, []byte("not really a jar"), 0o644); err != nil {
		t.Fatal(err)
	}
	confA, confB, classes := filepath.Join(dir, "confA"), filepath.Join(dir, "confB"), filepath.Join(dir, "classes")
	for _, f := range []string{filepath.Join(confA, "metastore-site.xml"), filepath.Join(confB, "metastore-site.xml"),
		filepath.Join(classes, "p", "Main.class")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	key := func(cp string, opts ...string) (string, bool) {
		return classArchiveKey(java, append(append(opts, "-Dx="+cp, "-cp", cp), "p.Main", "arg"))
	}
	sep := string(filepath.ListSeparator)
	a, okA := key(jar + sep + confA)
	b, okB := key(jar + sep + confB)
	if !okA || !okB || a != b {
		t.Errorf("trailing conf directories: keys %q %v / %q %v, want one key", a, okA, b, okB)
	}
	if c, _ := key(jar+sep+confA, "-Xmx1g"); c == a {
		t.Error("a JVM option did not change the key")
	}
	if _, ok := key(classes + sep + jar); ok {
		t.Error("a class directory before the jars got a key")
	}
	if _, ok := key(jar + sep + classes); ok {
		t.Error("a trailing directory holding classes got a key")
	}
	if _, ok := classArchiveKey(java, []string{"-jar", jar}); ok {
		t.Error("-jar got a key")
	}
	if err := os.WriteFile(jar, []byte("a rebuilt jar"), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, _ := key(jar + sep + confA); d == a {
		t.Error("a changed jar did not change the key")
	}
}
