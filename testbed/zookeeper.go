package testbed

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ZooKeeper is one real Apache ZooKeeper server (Debian's zookeeper package) on 127.0.0.1:Port, standalone, with
// its data under Dir. The lock shim, the delegation-token store and the scale-out tests share state through it.
type ZooKeeper struct {
	Port int
	Addr string // 127.0.0.1:PORT, the connect string
	Dir  string

	mu   sync.Mutex
	proc *jvm

	// extraConfig are more zoo.cfg lines and jvmArgs more JVM options (set before the first start; see
	// StartZooKeeperSASL).
	extraConfig, jvmArgs []string
}

// zooKeeperClasspath is where Debian's zookeeper package puts the server; /etc/zookeeper/conf only adds a log
// configuration.
var zooKeeperClasspath = []string{"/usr/share/java/zookeeper.jar", "/usr/share/java/zookeeper-jute.jar"}

// StartZooKeeper starts a standalone ZooKeeper server and waits until it answers "ruok". Stop it with Stop
// (or use StartZooKeeperT in tests).
func StartZooKeeper() (*ZooKeeper, error) { return startZooKeeper(nil) }

// startZooKeeper starts a server; setup, when given, prepares its folder and options before the first start.
func startZooKeeper(setup func(z *ZooKeeper) error) (*ZooKeeper, error) {
	for _, jar := range zooKeeperClasspath {
		if _, err := os.Stat(jar); err != nil {
			return nil, fmt.Errorf("testbed: ZooKeeper is not installed (%s missing); install it with: sudo apt-get install -y zookeeper (make test does)", jar)
		}
	}
	dir, err := newRunDir("zookeeper-")
	if err != nil {
		return nil, err
	}
	z := &ZooKeeper{Dir: dir}
	if setup != nil {
		if err := setup(z); err != nil {
			return nil, err
		}
	}
	var lastErr error
	for attempt := 0; attempt < 4; attempt++ {
		if z.Port, err = FreePort(); err != nil {
			return nil, err
		}
		z.Addr = fmt.Sprintf("127.0.0.1:%d", z.Port)
		if lastErr = z.start(); lastErr == nil {
			return z, nil
		}
		if !errors.Is(lastErr, errPortTaken) {
			break
		}
	}
	return nil, lastErr
}

// StartZooKeeperT starts a ZooKeeper server that stops when the test ends; its folder is removed if the test
// passed. It skips the test when HMS_PROXY_SKIP_REAL_HIVE=1.
func StartZooKeeperT(t testing.TB) *ZooKeeper {
	t.Helper()
	skipIfRequested(t)
	z, err := StartZooKeeper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = z.Stop()
		if !t.Failed() {
			_ = os.RemoveAll(z.Dir)
		} else {
			t.Logf("ZooKeeper folder kept: %s", z.Dir)
		}
	})
	return z
}

func (z *ZooKeeper) start() error {
	data := filepath.Join(z.Dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	cfg := strings.Join([]string{
		"tickTime=2000",
		"dataDir=" + data,
		fmt.Sprintf("clientPort=%d", z.Port),
		"clientPortAddress=127.0.0.1",
		"admin.enableServer=false",
		"4lw.commands.whitelist=ruok,srvr,mntr",
		"maxSessionTimeout=120000",
	}, "\n") + "\n" + strings.Join(append(z.extraConfig, ""), "\n")
	cfgPath := filepath.Join(z.Dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return err
	}
	java, err := javaBin()
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(z.Dir, "zookeeper.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := []string{"-Xms16m", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-D" + RunProperty + "=" + runID, "-Dzookeeper.log.dir=" + z.Dir, "-Dzookeeper.jmx.log4j.disable=true"}
	args = append(args, z.jvmArgs...)
	args = append(args, "-cp", strings.Join(zooKeeperClasspath, ":"), "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfgPath)
	cmd := exec.Command(java, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = z.Dir, logf, logf
	p, err := startJVM(cmd)
	if err != nil {
		return fmt.Errorf("testbed: starting ZooKeeper: %w", err)
	}
	deadline := time.Now().Add(startTimeout())
	for time.Now().Before(deadline) {
		if p.exited() {
			log := tailFile(filepath.Join(z.Dir, "zookeeper.log"), 30)
			if strings.Contains(log, "Address already in use") {
				return errPortTaken
			}
			return fmt.Errorf("testbed: ZooKeeper exited during start-up (%v); log tail:\n%s", p.err, log)
		}
		if ruok(z.Addr) {
			if owner, err := listeningOwner(z.Port, p.cmd.Process.Pid); err != nil || !owner {
				p.stop(5 * time.Second)
				return errPortTaken // another process answered on the port handed out
			}
			z.mu.Lock()
			z.proc = p
			z.mu.Unlock()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.stop(5 * time.Second)
	return fmt.Errorf("testbed: ZooKeeper on %s did not answer ruok within %v; log tail:\n%s", z.Addr, startTimeout(),
		tailFile(filepath.Join(z.Dir, "zookeeper.log"), 30))
}

// ruok asks ZooKeeper's four-letter-word "ruok"; a serving server answers "imok".
func ruok(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("ruok")); err != nil {
		return false
	}
	var b [4]byte
	n, _ := c.Read(b[:])
	return string(b[:n]) == "imok"
}

// Stop stops the server (SIGTERM, then SIGKILL after 5 s). Its data stays in Dir, so Start brings it back with
// every znode.
func (z *ZooKeeper) Stop() error {
	z.mu.Lock()
	p := z.proc
	z.proc = nil
	z.mu.Unlock()
	if p != nil {
		p.stop(5 * time.Second)
	}
	return nil
}

// Start starts a stopped server again on the same port with the same data.
func (z *ZooKeeper) Start() error {
	z.mu.Lock()
	running := z.proc != nil
	z.mu.Unlock()
	if running {
		return fmt.Errorf("testbed: ZooKeeper on %s is already running", z.Addr)
	}
	return z.start()
}

// Pause freezes the server (SIGSTOP): connections stay open and nothing answers, as with a hung host. It returns
// once every thread is stopped.
func (z *ZooKeeper) Pause() error {
	if err := z.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	z.mu.Lock()
	p := z.proc
	z.mu.Unlock()
	return waitStopped(p.cmd.Process.Pid)
}

// Resume continues a paused server (SIGCONT).
func (z *ZooKeeper) Resume() error { return z.signal(syscall.SIGCONT) }

func (z *ZooKeeper) signal(s syscall.Signal) error {
	z.mu.Lock()
	p := z.proc
	z.mu.Unlock()
	if p == nil {
		return fmt.Errorf("testbed: ZooKeeper on %s is not running", z.Addr)
	}
	return syscall.Kill(-p.cmd.Process.Pid, s)
}
