package testbed

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv switches TestHelperProcessStartsMetastore from "skip" to "act as the child of TestNoJavaLeftBehind".
const helperEnv = "HMSBED_LEAK_HELPER"

// TestNoJavaLeftBehind re-runs this test binary as a child that starts a real metastore and then ends badly in
// several ways; afterwards no JVM carrying the child's run marker may be alive.
func TestNoJavaLeftBehind(t *testing.T) {
	skipIfRequested(t)
	if err := Prepare(); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"fail", "panic", "sigkill", "sigterm"} {
		t.Run(mode, func(t *testing.T) {
			marker := newMarker(t)
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessStartsMetastore$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), helperEnv+"="+mode, runIDEnv+"="+marker)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// kill the child whatever happens; its JVM must then die with it
			defer cmd.Process.Kill()

			ready := make(chan string, 1)
			var output strings.Builder
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					line := sc.Text()
					output.WriteString(line + "\n")
					if strings.HasPrefix(line, "HELPER-READY ") {
						ready <- line
					}
				}
				close(ready)
			}()
			var line string
			select {
			case l, ok := <-ready:
				if !ok {
					cmd.Wait()
					t.Fatalf("child ended before its metastore was ready:\n%s\n%s", output.String(), stderr.String())
				}
				line = l
			case <-time.After(startTimeout() + 60*time.Second):
				t.Fatalf("child did not report a ready metastore in time:\n%s", output.String())
			}
			// the scan must see the child's JVM while it runs, or the final check proves nothing
			if pids := javaWithMarker(marker); len(pids) == 0 {
				t.Fatalf("child reported %q but no java process carries marker %s", line, marker)
			}

			switch mode {
			case "sigkill":
				cmd.Process.Signal(syscall.SIGKILL)
			case "sigterm":
				cmd.Process.Signal(syscall.SIGTERM)
			default:
				// the child's test goes on and fails or panics by itself; tell it to proceed
				if f, err := os.OpenFile(filepath.Join(os.TempDir(), "hmsbed-go-"+marker), os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
					f.Close()
					defer os.Remove(f.Name())
				}
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var waitErr error
			select {
			case waitErr = <-done:
			case <-time.After(90 * time.Second):
				t.Fatalf("child did not end after %s", mode)
			}
			var exitErr *exec.ExitError
			if !errors.As(waitErr, &exitErr) {
				t.Fatalf("child ended with %v, want a failing exit (mode %s)", waitErr, mode)
			}

			deadline := time.Now().Add(30 * time.Second)
			for {
				pids := javaWithMarker(marker)
				if len(pids) == 0 {
					break
				}
				if time.Now().After(deadline) {
					for _, pid := range pids {
						syscall.Kill(pid, syscall.SIGKILL)
					}
					t.Fatalf("after the child %s, java processes %v with marker %s are still alive", mode, pids, marker)
				}
				time.Sleep(200 * time.Millisecond)
			}
			t.Logf("child exit: %v; no JVM left with marker %s", waitErr, marker)
		})
	}
}

// TestHelperProcessStartsMetastore is not a test of its own: TestNoJavaLeftBehind runs it in a child process.
func TestHelperProcessStartsMetastore(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper of TestNoJavaLeftBehind; runs only in its child process")
	}
	m := StartMetastoreT(t, Hive313)
	fmt.Printf("HELPER-READY %s %d\n", m.URI, os.Getpid())
	os.Stdout.Sync()
	if mode == "sigkill" || mode == "sigterm" {
		time.Sleep(10 * time.Minute) // the parent kills this process
		return
	}
	goFile := filepath.Join(os.TempDir(), "hmsbed-go-"+RunID())
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(goFile); err == nil {
			break
		}
	}
	switch mode {
	case "fail":
		t.Fatalf("deliberate failure with a running metastore")
	case "panic":
		panic("deliberate panic with a running metastore")
	}
}

func newMarker(t *testing.T) string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "leaktest-" + hex.EncodeToString(b[:])
}

// javaWithMarker lists the processes whose command line carries -Dhmsproxy.testbed.run=<marker>.
func javaWithMarker(marker string) []int {
	want := "-D" + RunProperty + "=" + marker
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, arg := range strings.Split(string(data), "\x00") {
			if arg == want {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
