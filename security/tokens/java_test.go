package tokens

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/testbed"
)

// hive runs testdata/HiveTokens.java: Hive 3.1.3's and Hadoop's own token
// classes from the cached jars. It is compiled once per test binary.
var hive struct {
	once sync.Once
	dir  string
	cp   string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if hive.dir != "" {
		_ = os.RemoveAll(hive.dir)
	}
	os.Exit(code)
}

func hiveJava(t *testing.T, args ...string) map[string][]string {
	t.Helper()
	return hiveJavaOpts(t, nil, args...)
}

// hiveJavaOpts is hiveJava with more JVM options.
func hiveJavaOpts(t *testing.T, jvm []string, args ...string) map[string][]string {
	t.Helper()
	if os.Getenv("HMS_PROXY_SKIP_REAL_HIVE") == "1" {
		t.Skip("HMS_PROXY_SKIP_REAL_HIVE=1: no Hive jars")
	}
	hive.once.Do(func() {
		if hive.err = testbed.Prepare(); hive.err != nil {
			return
		}
		jars, err := filepath.Glob(filepath.Join(testbed.Cache(), "lib", "3.1.3", "*.jar"))
		if err != nil || len(jars) == 0 {
			hive.err = err
			if err == nil {
				hive.err = os.ErrNotExist
			}
			return
		}
		if hive.dir, hive.err = os.MkdirTemp("", "hivetokens-"); hive.err != nil {
			return
		}
		hive.cp = strings.Join(jars, string(os.PathListSeparator))
		out, err := exec.Command("javac", "-nowarn", "-d", hive.dir, "-cp", hive.cp, filepath.Join("testdata", "HiveTokens.java")).CombinedOutput()
		if err != nil {
			hive.err = &javaError{err: err, out: string(out)}
		}
	})
	if hive.err != nil {
		t.Fatalf("preparing the Hive token helper: %v", hive.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	jargs := append([]string{"-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"}, jvm...)
	jargs = append(jargs, "-cp", hive.dir+string(os.PathListSeparator)+hive.cp, "HiveTokens")
	cmd := exec.CommandContext(ctx, "java", append(jargs, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("HiveTokens %s: %v\nstdout:\n%s\nstderr:\n%s", args[0], err, stdout.String(), tail(stderr.String(), 40))
	}
	res := map[string][]string{}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok {
			res[k] = append(res[k], v)
		}
	}
	return res
}

type javaError struct {
	err error
	out string
}

func (e *javaError) Error() string { return e.err.Error() + "\n" + e.out }

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func one(t *testing.T, res map[string][]string, key string) string {
	t.Helper()
	v := res[key]
	if len(v) != 1 {
		t.Fatalf("HiveTokens output has %d values for %q: %v", len(v), key, res)
	}
	return v[0]
}
