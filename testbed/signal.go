package testbed

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Pause freezes the metastore (SIGSTOP to its process group): its sockets stay open and nothing answers, as with a
// hung host or a JVM in a stop-the-world pause. It returns once every thread of the JVM is stopped.
func (m *Metastore) Pause() error {
	if err := m.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	m.mu.Lock()
	p := m.proc
	m.mu.Unlock()
	return waitStopped(p.cmd.Process.Pid)
}

// Resume continues a paused metastore (SIGCONT).
func (m *Metastore) Resume() error { return m.signal(syscall.SIGCONT) }

// Kill kills the metastore at once (SIGKILL, no shutdown); Restart brings it back with its data.
func (m *Metastore) Kill() error {
	m.mu.Lock()
	p := m.proc
	m.proc = nil
	m.mu.Unlock()
	if p == nil {
		return fmt.Errorf("testbed: Hive %s metastore %s is not running", m.Version, m.URI)
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	return nil
}

// waitStopped waits until every thread of process pid is in group stop: kill(2) only queues SIGSTOP, and a thread that
// is running on another core finishes what it is doing (answering a call) before it stops.
func waitStopped(pid int) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		if err != nil || len(tasks) == 0 {
			return fmt.Errorf("testbed: cannot read the threads of process %d: %v", pid, err)
		}
		stopped := 0
		for _, path := range tasks {
			b, err := os.ReadFile(path)
			if err != nil {
				continue // the thread ended
			}
			// "pid (comm) S ...": the state follows the last ')'
			if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't') {
				stopped++
			}
		}
		if stopped == len(tasks) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testbed: %d of %d threads of process %d did not stop within 5 s", len(tasks)-stopped, len(tasks), pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (m *Metastore) signal(s syscall.Signal) error {
	m.mu.Lock()
	p := m.proc
	m.mu.Unlock()
	if p == nil {
		return fmt.Errorf("testbed: Hive %s metastore %s is not running", m.Version, m.URI)
	}
	return syscall.Kill(-p.cmd.Process.Pid, s)
}

// Pid is the metastore JVM's process id (0 when it is not running): the benchmark reads its CPU time from /proc.
func (m *Metastore) Pid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return 0
	}
	return m.proc.cmd.Process.Pid
}
