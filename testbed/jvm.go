// The JVMs of the test bed: starting and stopping them, killing every one a
// test process started when it is interrupted, and the run directories they
// work in.

package testbed

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// jvm is a started Java process in its own process group, killed with its parent (Pdeathsig).
type jvm struct {
	cmd     *exec.Cmd
	done    chan struct{}
	err     error         // set when done is closed
	archive *classArchive // the class-data archive it writes at its exit, if any (cds.go)
}

// archiveGrace is how long stop waits after SIGTERM for a JVM that writes its class-data archive at exit.
const archiveGrace = time.Minute

var live = struct {
	sync.Mutex
	set map[*jvm]struct{}
}{set: map[*jvm]struct{}{}}

func startJVM(cmd *exec.Cmd) (*jvm, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	watchSignals()
	var archive *classArchive
	if filepath.Base(cmd.Path) == "java" {
		var args []string
		args, archive = withClassArchive(cmd.Path, cmd.Args[1:])
		cmd.Args = append([]string{cmd.Args[0]}, args...)
	}
	if err := cmd.Start(); err != nil {
		archive.publish(nil)
		return nil, err
	}
	CountLaunch(launchName(cmd))
	p := &jvm{cmd: cmd, done: make(chan struct{}), archive: archive}
	live.Lock()
	live.set[p] = struct{}{}
	live.Unlock()
	go func() {
		p.err = cmd.Wait()
		archive.publish(cmd.ProcessState)
		live.Lock()
		delete(live.set, p)
		live.Unlock()
		close(p.done)
	}()
	return p, nil
}

func (p *jvm) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace (longer for a JVM writing its class-data
// archive; a grace of 0 is a kill), and waits for the exit.
func (p *jvm) stop(grace time.Duration) {
	if p.archive != nil && grace > 0 && grace < archiveGrace {
		grace = archiveGrace
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// the group leader is gone; make sure nothing else of its group survives
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// stopAllJVMs stops every JVM this process started that is still running.
func stopAllJVMs() {
	live.Lock()
	ps := make([]*jvm, 0, len(live.set))
	for p := range live.set {
		ps = append(ps, p)
	}
	live.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func(p *jvm) {
			defer wg.Done()
			p.stop(5 * time.Second)
		}(p)
	}
	wg.Wait()
}

var signalsOnce sync.Once

// watchSignals makes an interrupted test binary stop its JVMs before it dies (Pdeathsig would SIGKILL them anyway;
// this lets them shut down). Commands such as hmsbed handle their own signals.
func watchSignals() {
	if !testing.Testing() {
		return
	}
	signalsOnce.Do(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
		go func() {
			s := <-ch
			stopAllJVMs()
			signal.Reset(os.Interrupt, syscall.SIGTERM)
			if sig, ok := s.(syscall.Signal); ok {
				_ = syscall.Kill(os.Getpid(), sig) // die of the signal, as without this handler
				time.Sleep(time.Second)
			}
			os.Exit(2)
		}()
	})
}

// copyTree copies a directory of regular files.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", path)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// newRunDir makes a run directory runRoot()/<prefix>NNN owned by this process (stale ones of gone processes are
// swept first).
func newRunDir(prefix string) (string, error) {
	if err := os.MkdirAll(runRoot(), 0o755); err != nil {
		return "", fmt.Errorf("testbed: %w", err)
	}
	sweepRunDirs()
	dir, err := os.MkdirTemp(runRoot(), prefix)
	if err != nil {
		return "", fmt.Errorf("testbed: %w", err)
	}
	return dir, writeOwner(dir)
}

// The owner file of a run directory names the process that created it (pid and start time), so later runs can
// remove the directories of processes that are gone.
func writeOwner(dir string) error {
	pid := os.Getpid()
	return os.WriteFile(filepath.Join(dir, "owner"), []byte(fmt.Sprintf("%d %s\n", pid, procStart(pid))), 0o644)
}

// procStart returns the start time of a process (field 22 of /proc/PID/stat), or "" when it does not exist.
func procStart(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// sweepRunDirs removes run directories whose owner process is gone.
func sweepRunDirs() {
	entries, err := os.ReadDir(runRoot())
	if err != nil {
		return
	}
	for _, e := range entries {
		dir := filepath.Join(runRoot(), e.Name())
		data, err := os.ReadFile(filepath.Join(dir, "owner"))
		if err != nil {
			continue // being created, or not ours
		}
		f := strings.Fields(string(data))
		if len(f) != 2 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		if procStart(pid) == f[1] {
			continue // owner still running
		}
		os.RemoveAll(dir)
	}
}
