package testbed

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The Apache Ranger oracle: Ranger 2.5.0's own policy engine (ranger-plugins-common from Maven Central) in a JVM
// that decides access requests against policy files (testbed/java/ranger/RangerOracle.java). The proxy's Go
// evaluator is checked against it.

var prepareRanger struct {
	sync.Mutex
	done bool
}

// PrepareRanger resolves ranger-plugins-common 2.5.0 into the cache and builds the oracle, once per process and only
// when the cache does not hold it yet (testbed/bin/prepare-ranger.sh).
func PrepareRanger() error {
	if skipped() {
		return ErrSkip
	}
	prepareRanger.Lock()
	defer prepareRanger.Unlock()
	if prepareRanger.done {
		return nil
	}
	script := filepath.Join(repoRoot(), "testbed", "bin", "prepare-ranger.sh")
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(), "HMS_PROXY_CACHE="+Cache())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("testbed: %s failed (%v):\n%s", script, err, tail(out.String(), 40))
	}
	prepareRanger.done = true
	return nil
}

// RangerOracle is a running oracle JVM. Not safe for concurrent use.
type RangerOracle struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *lockedBuffer
	cancel context.CancelFunc
}

// lockedBuffer is the JVM's standard error, read while the JVM writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// StartRangerOracle starts the oracle JVM (PrepareRanger first). Its clock zone is UTC: validity schedules without
// a time zone are read in the JVM's default zone, so the Go side reads them in UTC too.
func StartRangerOracle() (*RangerOracle, error) {
	if err := PrepareRanger(); err != nil {
		return nil, err
	}
	java, err := javaBin()
	if err != nil {
		return nil, err
	}
	dir := resolved(filepath.Join(Cache(), "build", "ranger-2.5.0"))
	cp := filepath.Join(dir, "ranger-oracle.jar") + string(os.PathListSeparator) + filepath.Join(dir, "lib", "*")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, java, "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Duser.timezone=UTC", "-cp", cp, "RangerOracle")
	in, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("testbed: starting the Ranger oracle: %w", err)
	}
	return &RangerOracle{cmd: cmd, in: in, out: bufio.NewReader(outPipe), stderr: stderr, cancel: cancel}, nil
}

// Load makes the oracle evaluate the policy set in policiesFile (the plugin's cache format) with the roles in
// rolesFile ("" for none). timeout bounds the wait.
func (o *RangerOracle) Load(policiesFile, rolesFile string, timeout time.Duration) error {
	if rolesFile == "" {
		rolesFile = "-"
	}
	lines, err := o.exchange([]string{"@" + policiesFile + "\t" + rolesFile}, timeout)
	if err != nil {
		return err
	}
	if lines[0] != "@" {
		return fmt.Errorf("testbed: Ranger oracle answered %q to a policy load", lines[0])
	}
	return nil
}

// Decide sends case lines (see RangerOracle.java) and returns one answer line per case.
func (o *RangerOracle) Decide(cases []string, timeout time.Duration) ([]string, error) {
	return o.exchange(cases, timeout)
}

func (o *RangerOracle) exchange(lines []string, timeout time.Duration) ([]string, error) {
	type reply struct {
		lines []string
		err   error
	}
	done := make(chan reply, 1)
	go func() {
		var out []string
		for range lines {
			s, err := o.out.ReadString('\n')
			if err != nil {
				done <- reply{err: fmt.Errorf("testbed: Ranger oracle: %v\nstderr:\n%s", err, tail(o.stderr.String(), 30))}
				return
			}
			out = append(out, strings.TrimRight(s, "\r\n"))
		}
		done <- reply{lines: out}
	}()
	go func() {
		w := bufio.NewWriter(o.in)
		for _, l := range lines {
			_, _ = w.WriteString(l + "\n")
		}
		_ = w.Flush()
	}()
	select {
	case r := <-done:
		return r.lines, r.err
	case <-time.After(timeout):
		o.Close()
		return nil, fmt.Errorf("testbed: Ranger oracle gave no answer within %v\nstderr:\n%s", timeout, tail(o.stderr.String(), 30))
	}
}

// Close stops the JVM.
func (o *RangerOracle) Close() {
	_ = o.in.Close()
	o.cancel()
	_ = o.cmd.Wait()
}
