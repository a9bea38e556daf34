// Package cluster runs hms-proxy the way operators scale it out: N replicas
// of the real binary (each its own configuration file, ports and process)
// behind a real HAProxy in TCP mode that health-checks each replica's
// /readyz, sharing one real ZooKeeper (synthetic lock store, delegation
// token store when Kerberos is on), over the same metastores. Everything
// listens on 127.0.0.1. The HA tests, `make demo-ha` (testbed/cmd/hmscluster)
// and the benchmark's scale-out phase use it.
package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hms-proxy/hms-proxy/testbed"
)

// Catalog is one backend metastore of the proxies.
type Catalog struct {
	Name string
	URI  string // thrift://host:port
}

// Options describe a cluster.
type Options struct {
	// Binary is the hms-proxy binary (see Build).
	Binary string
	// Dir holds the configurations, logs and HAProxy's files (created).
	Dir string
	// Replicas is the number of proxies (default 3).
	Replicas int
	// Catalogs: the first one is routing.default-catalog.
	Catalogs []Catalog
	// ZooKeeper is the connect string of the shared ZooKeeper (required with
	// more than one replica and more than one catalog: the lock store).
	ZooKeeper string
	// LockZnode is the synthetic lock store's root (default
	// /hms-proxy-synthetic-read-locks).
	LockZnode string
	// Props are added to every replica's configuration (Kerberos, tokens,
	// caches, ...); a value "" removes a key the cluster would set.
	Props map[string]string
	// Port is the main frontend's port (0: a free one).
	Port int
	// Balancers are extra HAProxy frontends over the first n replicas, one
	// per entry (the benchmark's 1, 2, 3 replicas side by side); the main
	// frontend always spans every replica.
	Balancers []int
	// CheckInterval is HAProxy's health-check interval (default 500 ms);
	// a replica is taken out after 2 failed checks and back after 2 good
	// ones.
	CheckInterval time.Duration
	// Log receives progress lines (nil: none).
	Log io.Writer
}

// Cluster is a running set of replicas behind HAProxy.
type Cluster struct {
	Opts     Options
	Replicas []*Replica
	HAProxy  *HAProxy
	// Addr is the main frontend (every replica), host:port.
	Addr string
	// BalancerAddrs are the Options.Balancers frontends, by replica count.
	BalancerAddrs map[int]string
}

// URI is the main frontend as a thrift:// URI (what clients configure).
func (c *Cluster) URI() string { return "thrift://" + c.Addr }

// Build compiles cmd/hms-proxy into dir and returns its path. from is any
// folder inside the module (a test passes its own, "."): the package is
// named by its import path, so the caller's depth in the tree does not
// matter.
func Build(from, dir string) (string, error) {
	bin := filepath.Join(dir, "hms-proxy")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/hms-proxy/hms-proxy/cmd/hms-proxy")
	cmd.Dir = from
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cluster: go build ./cmd/hms-proxy: %v\n%s", err, out)
	}
	return bin, nil
}

// Start writes every configuration, starts the replicas, waits until each
// is ready (/readyz 200), then starts HAProxy and waits until it sees every
// replica UP. On error it stops what it started.
func Start(o Options) (*Cluster, error) {
	if o.Replicas == 0 {
		o.Replicas = 3
	}
	if o.CheckInterval == 0 {
		o.CheckInterval = 500 * time.Millisecond
	}
	if o.LockZnode == "" {
		o.LockZnode = "/hms-proxy-synthetic-read-locks"
	}
	if len(o.Catalogs) == 0 {
		return nil, errors.New("cluster: no catalogs")
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	c := &Cluster{Opts: o, BalancerAddrs: map[int]string{}}
	for i := 1; i <= o.Replicas; i++ {
		r, err := c.newReplica(fmt.Sprintf("r%d", i))
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Replicas = append(c.Replicas, r)
		if err := r.Start(); err != nil {
			c.Stop()
			return nil, err
		}
	}
	for _, r := range c.Replicas {
		if err := r.WaitReady(90 * time.Second); err != nil {
			c.Stop()
			return nil, err
		}
	}
	h, err := startHAProxy(o, c.Replicas)
	if err != nil {
		c.Stop()
		return nil, err
	}
	c.HAProxy, c.Addr = h, h.frontends[0]
	for i, n := range o.Balancers {
		c.BalancerAddrs[n] = h.frontends[i+1]
	}
	for _, r := range c.Replicas {
		if err := h.WaitState(r.Name, "UP", 30*time.Second); err != nil {
			c.Stop()
			return nil, err
		}
	}
	c.logf("cluster: %d replicas behind HAProxy %s", len(c.Replicas), c.Addr)
	return c, nil
}

func (c *Cluster) logf(format string, args ...any) {
	if c.Opts.Log != nil {
		fmt.Fprintf(c.Opts.Log, format+"\n", args...)
	}
}

// Replica returns a replica by name.
func (c *Cluster) Replica(name string) *Replica {
	for _, r := range c.Replicas {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// Stop stops HAProxy and every replica (SIGTERM, then SIGKILL).
func (c *Cluster) Stop() {
	if c.HAProxy != nil {
		c.HAProxy.Stop()
	}
	var wg sync.WaitGroup
	for _, r := range c.Replicas {
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.Terminate(20 * time.Second) }()
	}
	wg.Wait()
}

// Replica is one hms-proxy process.
type Replica struct {
	Name     string
	Port     int // Thrift
	MgmtPort int
	Conf     string // its hms-proxy.properties
	LogPath  string // standard error (the main log)
	Props    map[string]string
	bin      string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	exit error
}

func (c *Cluster) newReplica(name string) (*Replica, error) {
	o := c.Opts
	port, err := testbed.FreePort()
	if err != nil {
		return nil, err
	}
	mport, err := testbed.FreePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(o.Dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := map[string]string{
		"server.bind-host":                "127.0.0.1",
		"server.port":                     strconv.Itoa(port),
		"management.port":                 strconv.Itoa(mport),
		"management.readiness-cache-ms":   "1000",
		"management.reload-enabled":       "true",
		"server.shutdown-timeout-seconds": "20",
		"audit.file":                      filepath.Join(dir, "audit.log"),
		"routing.default-catalog":         o.Catalogs[0].Name,
	}
	var names []string
	for _, cat := range o.Catalogs {
		names = append(names, cat.Name)
		p["catalog."+cat.Name+".conf.hive.metastore.uris"] = cat.URI
	}
	p["catalogs"] = strings.Join(names, ",")
	if len(o.Catalogs) > 1 {
		if o.ZooKeeper == "" {
			return nil, errors.New("cluster: several catalogs on several replicas need a ZooKeeper lock store (Options.ZooKeeper)")
		}
		p["synthetic-read-lock.store.mode"] = "ZOOKEEPER"
		p["synthetic-read-lock.store.zookeeper.connect-string"] = o.ZooKeeper
		p["synthetic-read-lock.store.zookeeper.znode"] = o.LockZnode
		p["synthetic-read-lock.store.zookeeper.session-timeout-ms"] = "20000"
	}
	for k, v := range o.Props {
		if v == "" {
			delete(p, k)
		} else {
			p[k] = strings.ReplaceAll(v, "@REPLICA@", name)
		}
	}
	r := &Replica{Name: name, Port: port, MgmtPort: mport, Conf: filepath.Join(dir, "hms-proxy.properties"),
		LogPath: filepath.Join(dir, "proxy.log"), Props: p, bin: o.Binary}
	if err := r.WriteConfig(p); err != nil {
		return nil, err
	}
	return r, nil
}

// WriteConfig writes props as the replica's configuration file (a reload
// re-reads it).
func (r *Replica) WriteConfig(props map[string]string) error {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	esc := strings.NewReplacer("\\", "\\\\", "\n", "\\n")
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(esc.Replace(k) + "=" + esc.Replace(props[k]) + "\n")
	}
	return os.WriteFile(r.Conf, []byte(b.String()), 0o644)
}

// Addr is the replica's Thrift address.
func (r *Replica) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.Port) }

// URI is the replica's own thrift:// URI (bypassing the balancer).
func (r *Replica) URI() string { return "thrift://" + r.Addr() }

// ManagementURL is the base URL of the replica's management listener.
func (r *Replica) ManagementURL() string { return "http://127.0.0.1:" + strconv.Itoa(r.MgmtPort) }

// Start starts the process (again, after Kill or Terminate); its standard
// error is appended to LogPath.
func (r *Replica) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		return fmt.Errorf("cluster: replica %s is running", r.Name)
	}
	logf, err := os.OpenFile(r.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(r.bin, "serve", r.Conf)
	cmd.Dir = filepath.Dir(r.Conf)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Die with the test process, whatever happens to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("cluster: start replica %s: %w", r.Name, err)
	}
	done := make(chan struct{})
	r.cmd, r.done, r.exit = cmd, done, nil
	go func() {
		err := cmd.Wait()
		logf.Close()
		r.mu.Lock()
		r.exit = err
		r.mu.Unlock()
		close(done)
	}()
	return nil
}

// Pid is the process id (0 when not running).
func (r *Replica) Pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// Running reports whether the process is alive.
func (r *Replica) Running() bool {
	r.mu.Lock()
	done := r.done
	r.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Signal sends sig to the process.
func (r *Replica) Signal(sig syscall.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return fmt.Errorf("cluster: replica %s is not running", r.Name)
	}
	return r.cmd.Process.Signal(sig)
}

// Kill SIGKILLs the process and waits for it.
func (r *Replica) Kill() error {
	if err := r.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	_, err := r.Wait(10 * time.Second)
	return err
}

// Terminate sends SIGTERM and waits up to grace, then SIGKILLs. It returns
// the process's exit error (nil for status 0).
func (r *Replica) Terminate(grace time.Duration) error {
	if !r.Running() {
		r.reap()
		return nil
	}
	if err := r.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	exit, err := r.Wait(grace)
	if err != nil {
		_ = r.Signal(syscall.SIGKILL)
		_, _ = r.Wait(10 * time.Second)
		return err
	}
	return exit
}

// Wait waits until the process has exited and returns its exit error;
// err is set when it did not exit within d. The replica can then be
// started again.
func (r *Replica) Wait(d time.Duration) (exit error, err error) {
	r.mu.Lock()
	done := r.done
	r.mu.Unlock()
	if done == nil {
		return nil, fmt.Errorf("cluster: replica %s was not started", r.Name)
	}
	select {
	case <-done:
	case <-time.After(d):
		return nil, fmt.Errorf("cluster: replica %s still running %s later", r.Name, d)
	}
	r.mu.Lock()
	exit = r.exit
	r.mu.Unlock()
	r.reap()
	return exit, nil
}

func (r *Replica) reap() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done != nil {
		select {
		case <-r.done:
			r.cmd = nil
		default:
		}
	}
}

// Ready asks /readyz once: its status code (0 when it did not answer).
func (r *Replica) Ready() int {
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(r.ManagementURL() + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// WaitReady waits until /readyz answers 200.
func (r *Replica) WaitReady(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		if r.Ready() == http.StatusOK {
			return nil
		}
		if !r.Running() {
			return fmt.Errorf("cluster: replica %s exited:\n%s", r.Name, r.LogTail(30))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster: replica %s not ready after %s:\n%s", r.Name, d, r.LogTail(30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// LogTail returns the last n lines of the replica's log.
func (r *Replica) LogTail(n int) string {
	b, _ := os.ReadFile(r.LogPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Metric reads one series from the replica's /metrics (0 when absent):
// name, then label pairs, matched as a prefix-free set.
func (r *Replica) Metric(name string, labels ...string) (float64, error) {
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(r.ManagementURL() + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	sum := 0.0
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			if !strings.Contains(rest, labels[i]+`="`+labels[i+1]+`"`) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		f := strings.Fields(rest[strings.LastIndex(rest, "}")+1:])
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err == nil {
			sum += v
		}
	}
	return sum, sc.Err()
}

// listening reports whether addr accepts TCP connections.
func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
