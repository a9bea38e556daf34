package e2eutil

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/testbed"
)

// RunJavaFile runs one of testdata's single-file Java programs with the real
// HiveMetaStoreClient of version v on the class path (env: more variables of
// its environment, such as HADOOP_USER_NAME) and returns the lines it
// printed; it fails the test when the program fails.
func RunJavaFile(t *testing.T, v testbed.Version, env []string, file string, args ...string) []string {
	t.Helper()
	lib, err := filepath.EvalSymlinks(filepath.Join(testbed.Cache(), "lib", string(v)))
	if err != nil {
		t.Fatal(err)
	}
	run, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	jargs := append([]string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-D" + testbed.RunProperty + "=" + testbed.RunID(), "-cp", filepath.Join(lib, "*"),
		Testdata(file)}, args...)
	cmd, archived := testbed.JavaCommand(run, "java", jargs...)
	defer archived()
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	testbed.CountLaunch("Java client JVMs (" + file + ")")
	out, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil {
		tail := stderr.String()
		if len(tail) > 3000 {
			tail = tail[len(tail)-3000:]
		}
		t.Fatalf("%s with the Hive %s client: %v\n%s\nstderr tail:\n%s", file, v, err, strings.Join(lines, "\n"), tail)
	}
	return lines
}

// RunJDBC runs a single-file Java program that sends SQL statements to
// HiveServer2 over Hive JDBC 4.1.0 (program: its path; args go before the
// statements) and returns its one answer per statement: "ok", "ok <rows>"
// or "error <message>". label names the session in the test log (a user,
// or "" for the program's own). It fails the test when the program fails or
// answers a different number of lines than statements.
func RunJDBC(t *testing.T, program, label string, args []string, stmts ...string) []string {
	t.Helper()
	run, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	jargs := append([]string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-D" + testbed.RunProperty + "=" + testbed.RunID(), "-cp", testbed.HiveServer2ClientClassPath(), program}, args...)
	cmd, archived := testbed.JavaCommand(run, "java", append(jargs, stmts...)...)
	defer archived()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	name := filepath.Base(program)
	testbed.CountLaunch("JDBC client JVMs (" + name + ")")
	out, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || len(lines) != len(stmts) {
		tail := stderr.String()
		if len(tail) > 3000 {
			tail = tail[len(tail)-3000:]
		}
		t.Fatalf("%s %s: %v, %d answers to %d statements:\n%s\nstderr tail:\n%s", name, label, err, len(lines), len(stmts), out, tail)
	}
	for i, l := range lines {
		if label != "" {
			t.Logf("[%s] %s\n    -> %s", label, stmts[i], l)
		} else {
			t.Logf("%s\n    -> %s", stmts[i], l)
		}
	}
	return lines
}
