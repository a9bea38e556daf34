// Package proc starts the benchmark's helper processes so that none outlives
// the run (own process group, SIGKILL on parent death, group kill on Stop),
// and reads their CPU time and resident memory from /proc.
package proc

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Child is one helper process.
type Child struct {
	Name string
	Cmd  *exec.Cmd
	Addr string // what it printed after "listening " on its first stdout line
	log  *os.File
	done chan struct{}
	err  error
}

var live = struct {
	sync.Mutex
	set map[*Child]struct{}
}{set: map[*Child]struct{}{}}

// Start runs bin with args, logs its stderr to logPath, and waits (up to
// timeout) for a first stdout line "listening HOST:PORT".
func Start(name, logPath string, timeout time.Duration, bin string, args ...string) (*Child, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = lf
	out, err := cmd.StdoutPipe()
	if err != nil {
		lf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("%s: start %s: %w", name, bin, err)
	}
	c := &Child{Name: name, Cmd: cmd, log: lf, done: make(chan struct{})}
	live.Lock()
	live.set[c] = struct{}{}
	live.Unlock()
	lines := make(chan string, 1)
	go func() {
		br := bufio.NewReader(out)
		first := true
		for {
			l, err := br.ReadString('\n')
			if first && err == nil {
				lines <- strings.TrimSpace(l)
				first = false
			} else if len(l) > 0 {
				lf.WriteString(l)
			}
			if err != nil {
				if first {
					close(lines)
				}
				return
			}
		}
	}()
	go func() {
		c.err = cmd.Wait()
		live.Lock()
		delete(live.set, c)
		live.Unlock()
		close(c.done)
	}()
	select {
	case l, ok := <-lines:
		if ok {
			if a, found := strings.CutPrefix(l, "listening "); found {
				c.Addr = a
				return c, nil
			}
			c.Stop()
			return nil, fmt.Errorf("%s: first output line %q is not \"listening ADDR\"; log %s:\n%s", name, l, logPath, Tail(logPath, 20))
		}
		c.Stop()
		return nil, fmt.Errorf("%s exited before listening; log %s:\n%s", name, logPath, Tail(logPath, 20))
	case <-time.After(timeout):
		c.Stop()
		return nil, fmt.Errorf("%s did not report its address within %v; log %s:\n%s", name, timeout, logPath, Tail(logPath, 20))
	}
}

// StartWait runs bin and waits until ready() returns nil (for programs such
// as hms-proxy that print no address), up to timeout.
func StartWait(name, logPath string, timeout time.Duration, ready func() error, bin string, args ...string) (*Child, error) {
	return StartCmdWait(name, logPath, timeout, ready, exec.Command(bin, args...))
}

// StartCmdWait is StartWait for a prepared command (its environment, its
// working directory); the process group, Pdeathsig and output are set here.
func StartCmdWait(name, logPath string, timeout time.Duration, ready func() error, cmd *exec.Cmd) (*Child, error) {
	bin := cmd.Path
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = lf
	cmd.Stdout = lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("%s: start %s: %w", name, bin, err)
	}
	c := &Child{Name: name, Cmd: cmd, log: lf, done: make(chan struct{})}
	live.Lock()
	live.set[c] = struct{}{}
	live.Unlock()
	go func() {
		c.err = cmd.Wait()
		live.Lock()
		delete(live.set, c)
		live.Unlock()
		close(c.done)
	}()
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		if err == nil {
			return c, nil
		}
		select {
		case <-c.done:
			return nil, fmt.Errorf("%s exited (%v) before it was ready; log %s:\n%s", name, c.err, logPath, Tail(logPath, 30))
		default:
		}
		if time.Now().After(deadline) {
			c.Stop()
			return nil, fmt.Errorf("%s not ready within %v (%v); log %s:\n%s", name, timeout, err, logPath, Tail(logPath, 30))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Pid is the process id.
func (c *Child) Pid() int { return c.Cmd.Process.Pid }

// Exited reports whether the process has ended.
func (c *Child) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM to the process group, SIGKILL after 5 s, and waits.
func (c *Child) Stop() {
	pg := c.Cmd.Process.Pid
	_ = syscall.Kill(-pg, syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pg, syscall.SIGKILL)
		<-c.done
	}
	_ = syscall.Kill(-pg, syscall.SIGKILL)
	c.log.Close()
}

// StopAll stops every child still running.
func StopAll() {
	live.Lock()
	var cs []*Child
	for c := range live.set {
		cs = append(cs, c)
	}
	live.Unlock()
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() { defer wg.Done(); c.Stop() }()
	}
	wg.Wait()
}

// ClockTick is the kernel's USER_HZ (fixed at 100 on Linux/x86 and arm64).
const ClockTick = 100

// CPU returns the user+system CPU time a process has used so far (all of
// its threads, dead or alive), from /proc/<pid>/stat.
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime/stime", pid)
	}
	return time.Duration(ut+st) * time.Second / ClockTick, nil
}

// Memory is a process's resident set, in KiB, from /proc/<pid>/status.
type Memory struct {
	RSSKiB  int64 // VmRSS now
	PeakKiB int64 // VmHWM: the highest VmRSS so far
}

// Mem reads VmRSS and VmHWM.
func Mem(pid int) (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	defer f.Close()
	var m Memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		for _, k := range []struct {
			p   string
			dst *int64
		}{{"VmRSS:", &m.RSSKiB}, {"VmHWM:", &m.PeakKiB}} {
			if rest, ok := strings.CutPrefix(l, k.p); ok {
				v := strings.Fields(rest)
				if len(v) > 0 {
					*k.dst, _ = strconv.ParseInt(v[0], 10, 64)
				}
			}
		}
	}
	return m, sc.Err()
}

// Tail returns the last n lines of a file.
func Tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 4<<20))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
