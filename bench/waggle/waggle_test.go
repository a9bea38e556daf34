package waggle

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/bench/peer"
	"github.com/hms-proxy/hms-proxy/testbed"
)

const wildcardListener = `
import socket, sys, time
a = socket.socket(socket.AF_INET); a.bind(("0.0.0.0", 0)); a.listen()
b = socket.socket(socket.AF_INET6); b.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0); b.bind(("::", 0)); b.listen()
print(a.getsockname()[1], b.getsockname()[1], flush=True)
time.sleep(60)
`

// TestShimKeepsWildcardBindsOnLoopback runs a real program that binds the
// IPv4 and the dual-stack IPv6 wildcard (as Java's ServerSocket does) with
// and without the shim.
func TestShimKeepsWildcardBindsOnLoopback(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc: the benchmark runs without its Waggle Dance peer on this machine")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed for this test")
	}
	so, err := BuildShim(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	run := func(preload bool) (pid int, ports []string, stop func()) {
		cmd := exec.Command(py, "-c", wildcardListener)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if preload {
			cmd.Env = append(os.Environ(), "LD_PRELOAD="+so)
		}
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			cmd.Process.Kill()
			t.Fatalf("listener program: %v", err)
		}
		return cmd.Process.Pid, strings.Fields(line), func() { cmd.Process.Kill(); cmd.Wait() }
	}
	pid, _, stop := run(false)
	err = peer.CheckLoopbackOnly(pid)
	stop()
	if err == nil {
		t.Fatal("without the shim the wildcard listeners went unnoticed")
	}
	pid, ports, stop := run(true)
	defer stop()
	if err := peer.CheckLoopbackOnly(pid); err != nil {
		t.Fatalf("with the shim: %v", err)
	}
	for _, p := range ports { // both sockets still take connections on 127.0.0.1
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+p, 2*time.Second)
		if err != nil {
			t.Fatalf("127.0.0.1:%s: %v", p, err)
		}
		c.Close()
	}
}

// TestWaggleDanceFederatesOnLoopbackOnly starts the real peer (PREFIXED,
// primary and one federated metastore on a real Hive 3.1.3) with the shim:
// it must answer get_all_databases with both namespaces and hold no
// listening socket outside loopback.
func TestWaggleDanceFederatesOnLoopbackOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a metastore and Waggle Dance")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc: the benchmark runs without its Waggle Dance peer on this machine")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	jar, err := Obtain(ctx, testbed.Cache())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	so, err := BuildShim(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	m := testbed.StartMetastoreT(t, testbed.Hive313)
	wd, err := Start(Config{Jar: jar, Shim: so, Dir: filepath.Join(dir, "wd"), Primary: m.URI,
		Federated: []Federated{{Name: "catalog2", URI: m.URI, Prefix: "catalog2_"}}}, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer wd.Stop()
	if err := peer.CheckLoopbackOnly(wd.Pid()); err != nil {
		t.Fatal(err)
	}
	ls, _ := peer.Listeners(wd.Pid())
	t.Logf("Waggle Dance %s listens on %v", Version, ls)
	names, err := peer.Databases(wd.Addr, time.Minute)
	if err != nil {
		t.Fatalf("get_all_databases through Waggle Dance: %v", err)
	}
	if !slices.Contains(names, "default") || !slices.Contains(names, "catalog2_default") {
		t.Fatalf("PREFIXED federation lists %v, want default and catalog2_default", names)
	}
}
