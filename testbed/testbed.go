// Package testbed starts real Apache Hive metastores (3.1.3 and 4.1.0) and runs the real Hive Java clients against
// any Thrift endpoint, for the tests of every other package.
//
// Nothing here is a fake: the jars come from Maven Central (testbed/bin/prepare.sh resolves them into the cache),
// every metastore is its own JVM with its own Derby database, and scenarios run Hive's own HiveMetaStoreClient
// through the Java driver in testbed/java/driver.
//
// When java or mvn are missing, helpers fail with the install command. Setting HMS_PROXY_SKIP_REAL_HIVE=1 turns
// that into an explicit skip (the *T helpers call t.Skip; the others return an error matching ErrSkip).
package testbed

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Version names a Hive release the test bed can run.
type Version string

// The Hive releases of the test bed.
const (
	Hive313 Version = "3.1.3"
	Hive410 Version = "4.1.0"
)

// versions lists every supported Version, oldest first.
var versions = []Version{Hive313, Hive410}

func (v Version) valid() error {
	for _, k := range versions {
		if v == k {
			return nil
		}
	}
	return fmt.Errorf("testbed: unknown Hive version %q (known: %s, %s)", string(v), Hive313, Hive410)
}

// ErrSkip is matched (errors.Is) by the errors of the helpers when HMS_PROXY_SKIP_REAL_HIVE=1.
var ErrSkip = errors.New("real Hive test bed skipped: HMS_PROXY_SKIP_REAL_HIVE=1")

// skipEnv is the explicit opt-out of the real-Hive test bed.
const skipEnv = "HMS_PROXY_SKIP_REAL_HIVE"

func skipped() bool { return os.Getenv(skipEnv) == "1" }

// skipIfRequested skips tb when the real-Hive bed was explicitly switched off.
func skipIfRequested(tb testing.TB) {
	tb.Helper()
	if skipped() {
		tb.Skip(ErrSkip.Error())
	}
}

// Repo returns the root of the hms-proxy checkout (env HMS_PROXY_REPO overrides the location of this source file).
func repoRoot() string {
	if r := os.Getenv("HMS_PROXY_REPO"); r != "" {
		return r
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "."
	}
	return filepath.Dir(filepath.Dir(file))
}

// Cache returns the cache root: $HMS_PROXY_CACHE, else <repo>/.cache. Maven's repository is Cache()/m2.
func Cache() string {
	if c := os.Getenv("HMS_PROXY_CACHE"); c != "" {
		if abs, err := filepath.Abs(c); err == nil {
			return abs
		}
		return c
	}
	return filepath.Join(repoRoot(), ".cache")
}

// Layout of the cache (written by testbed/bin/prepare.sh). lib/<v>, build/<v> and derby/<v> are symlinks to the
// current build (<kind>/<v>.<hash>); JVMs get the resolved paths, so a rebuild never changes a running classpath.
// A process uses the build its own Prepare made or found (pinned): another checkout sharing the cache (other
// driver sources, another hash) re-points the symlinks to its build, which may lack this checkout's scenarios.
func libDir(v Version) string { return buildOf("lib", v) }

func driverJar(v Version) string { return filepath.Join(buildOf("build", v), "hmsbed-driver.jar") }

// icebergDir holds the jars of Iceberg's Hive catalog (and what it needs beyond libDir) for the iceberg scenario.
func icebergDir(v Version) string { return filepath.Join(buildOf("build", v), "iceberg") }

func derbyTemplate(v Version) string { return filepath.Join(buildOf("derby", v), "metastore_db") }

// buildOf is <kind>/<v.hash> of the build Prepare pinned, else where <kind>/<v> points now.
func buildOf(kind string, v Version) string {
	prepare.Lock()
	tag := prepare.tags[v]
	prepare.Unlock()
	if tag != "" {
		if dir := filepath.Join(Cache(), kind, tag); fileExists(dir) {
			return dir
		}
	}
	return resolved(filepath.Join(Cache(), kind, string(v)))
}

// runRoot holds the run directories: metastores' Derby databases and warehouses, HiveServer2's warehouse, KDCs and the
// other servers' homes. It is <cache>/run, unless Hive would not read transactional tables there: then a directory
// of its own under the system's temporary directory, named after the cache (runRootFor).
func runRoot() string { return runRootFor(Cache(), os.TempDir()) }

// runRootFor is runRoot for a cache and a temporary directory.
//
// Hive's ACID reader leaves out every data file whose directory's path contains "/." or "/_" anywhere
// (AcidUtils.acidTempDirFilter, meant for staging directories such as .hive-staging and _tmp): a full ACID or
// insert-only table whose warehouse lies under such a path, say a checkout's .cache, reads back with no rows, and
// without an error. The default cache is <repo>/.cache, so such run directories go elsewhere.
func runRootFor(cache, tmp string) string {
	if r := filepath.Join(cache, "run"); !hiddenFromHive(r) {
		return r
	}
	sum := sha256.Sum256([]byte(cache))
	return filepath.Join(tmp, fmt.Sprintf("hms-proxy-run-%x", sum[:6]))
}

// hiddenFromHive reports whether Hive's ACID reader would leave out data under dir (see runRootFor).
func hiddenFromHive(dir string) bool {
	return strings.Contains(dir, "/.") || strings.Contains(dir, "/_")
}

// checkRunRoot refuses a run root under which Hive would not read transactional tables: the cache and the temporary
// directory both lie under a path with a component that starts with "." or "_".
func checkRunRoot() error {
	if r := runRoot(); hiddenFromHive(r) {
		return fmt.Errorf("testbed: run directories would go to %s, where Hive's ACID reader leaves out every file (a path "+
			"component starts with \".\" or \"_\"; the cache %s has one too): set TMPDIR or HMS_PROXY_CACHE to a path without one", r, Cache())
	}
	return nil
}

// resolved follows the symlinks in path; a path that cannot be resolved is returned as is (errors show on use).
func resolved(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return path
}

var prepare struct {
	sync.Mutex
	done bool
	tags map[Version]string // the builds prepare.sh made or found ("prepare: tag <v> <v.hash>")
}

// Prepare resolves the Hive jars, builds the Java driver and the Derby schema templates, once per process and only
// when the cache does not hold them yet (testbed/bin/prepare.sh; a file lock serializes parallel test processes).
func Prepare() error {
	if skipped() {
		return ErrSkip
	}
	prepare.Lock()
	defer prepare.Unlock()
	if prepare.done {
		return nil
	}
	if err := checkRunRoot(); err != nil {
		return err
	}
	script := filepath.Join(repoRoot(), "testbed", "bin", "prepare.sh")
	if _, err := os.Stat(script); err != nil {
		return fmt.Errorf("testbed: prepare script missing: %w", err)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		return fmt.Errorf("testbed: bash is needed to run %s: %w", script, err)
	}
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(), "HMS_PROXY_CACHE="+Cache())
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("testbed: %s failed (%v):\n%s", script, err, tail(out.String(), 40))
	}
	prepare.tags = map[Version]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "prepare:" && f[1] == "tag" {
			prepare.tags[Version(f[2])] = f[3]
		}
	}
	prepare.done = true
	return nil
}

// javaBin is the java launcher: $JAVA_HOME/bin/java when set, else java on PATH.
func javaBin() (string, error) {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		p := filepath.Join(h, "bin", "java")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("testbed: java not found; install it with: sudo apt-get install -y openjdk-17-jdk-headless (or run make test)")
	}
	return p, nil
}

// jvmFlags reads testbed/jvm/<version>.flags: the JVM options every Java process of that Hive version needs on the
// machine's JDK 17 (one per line, # comments). The same file is used by prepare.sh for the schema tool.
func jvmFlags(v Version) ([]string, error) {
	path := filepath.Join(repoRoot(), "testbed", "jvm", string(v)+".flags")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("testbed: JVM flags for Hive %s: %w", v, err)
	}
	var flags []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		flags = append(flags, line)
	}
	return flags, sc.Err()
}

// Ports handed out by FreePort come from below Linux's ephemeral range (32768-60999 by default), where the kernel
// picks the local port of every outgoing connection and of every bind to port 0: a port chosen by binding to 0 and
// closing could be handed out again, in this process or another, or taken by a client's connection, before the
// server meant for it (often a JVM, seconds later) binds it. Each port is claimed for the life of the process by
// an flock on a file under the temp directory, which the kernel drops when the process ends, so test binaries run
// side by side never hand out the same port.
const (
	portLow  = 20000
	portHigh = 32767
)

var ports struct {
	sync.Mutex
	claims map[int]*os.File // kept open: closing would drop the claim
}

// FreePort returns a TCP port free on 127.0.0.1 that no other FreePort of this or another process holds.
func FreePort() (int, error) {
	ports.Lock()
	defer ports.Unlock()
	if ports.claims == nil {
		ports.claims = map[int]*os.File{}
	}
	dir := filepath.Join(os.TempDir(), "hms-proxy-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return 0, fmt.Errorf("testbed: port claims: %w", err)
	}
	span := portHigh - portLow + 1
	start := rand.IntN(span)
	for i := 0; i < span; i++ {
		p := portLow + (start+i)%span
		if ports.claims[p] != nil {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return 0, fmt.Errorf("testbed: port claims: %w", err)
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close() // another process holds it
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			f.Close() // in use by something that does not claim ports
			continue
		}
		l.Close()
		ports.claims[p] = f
		return p, nil
	}
	return 0, fmt.Errorf("testbed: no free loopback port in %d-%d", portLow, portHigh)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// tailFile returns the last n lines of a file, or a note why it cannot be read.
func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	return tail(string(data), n)
}
