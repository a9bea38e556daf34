// The peers the suite measures beside hms-proxy (the forwarder, Waggle Dance,
// the Java HMS Proxy) and what is read off them (list caches, scrapes,
// profiles, the report's metadata).

package suite

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hms-proxy/hms-proxy/bench/javaproxy"
	"github.com/hms-proxy/hms-proxy/bench/load"
	"github.com/hms-proxy/hms-proxy/bench/peer"
	"github.com/hms-proxy/hms-proxy/bench/proc"
	"github.com/hms-proxy/hms-proxy/bench/report"
	"github.com/hms-proxy/hms-proxy/bench/waggle"
	"github.com/hms-proxy/hms-proxy/bench/workload"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// startPeers starts the peer proxies at once (each JVM takes tens of
// seconds to start on a loaded machine): Waggle Dance over the two
// metastores, and the Java HMS Proxy with 2 and with 4 catalogs when its
// jar is given. A peer that cannot start is left out with a note.
func (s *suite) startPeers(ms []*testbed.Metastore, add func(key, title, path, addr string, meter *proc.Child)) {
	var wd, j2, j4 *proc.Child
	var wdErr, j2Err, j4Err error
	jar, jarErr := javaproxy.Jar(s.opt.JavaProxyJar)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); wd, wdErr = s.startPeer(ms) }()
	if jarErr == nil {
		java := func(name string, backends []string) (*proc.Child, error) {
			return javaproxy.Start(name, javaproxy.Config{Jar: jar, Dir: filepath.Join(s.opt.Work, name), Backends: backends}, 4*time.Minute)
		}
		wg.Add(2)
		go func() { defer wg.Done(); j2, j2Err = java(JavaHive2, []string{ms[0].URI, ms[1].URI}) }()
		go func() {
			defer wg.Done()
			j4, j4Err = java(JavaHive4, []string{ms[0].URI, ms[1].URI, ms[0].URI, ms[1].URI})
		}()
	}
	wg.Wait()
	if wdErr != nil {
		s.note("Waggle Dance %s peer left out: %v", waggle.Version, wdErr)
	} else {
		add(WaggleHive, "Waggle Dance "+waggle.Version+" to Hive 3.1.3", "client -> Waggle Dance (PREFIXED: primary metastore 1, catalog2_ -> metastore 2) -> the same metastore", wd.Addr, wd)
		s.loopbackNote("Waggle Dance "+waggle.Version, wd)
		s.res.Meta.Peers = append(s.res.Meta.Peers, report.PeerInfo{Name: "Waggle Dance", Version: waggle.Version,
			JVM: strings.Join(waggle.JVMOptions, " "), Setups: []string{WaggleHive}})
	}
	if jarErr != nil {
		s.note("the %s peer left out: %v", javaproxy.Name, jarErr)
		return
	}
	info := report.PeerInfo{Name: javaproxy.Name, Version: javaproxy.Version(jar), JVM: strings.Join(javaproxy.JVMOptions, " ")}
	for _, j := range []struct {
		key, title, path string
		c                *proc.Child
		err              error
	}{
		{JavaHive2, "2 catalogs on 2 Hive 3.1.3", "client -> Java HMS Proxy (catalog1 -> metastore 1, the default; catalog2 -> metastore 2)", j2, j2Err},
		{JavaHive4, "4 catalogs on 2 Hive 3.1.3", "client -> Java HMS Proxy (catalog1,3 -> metastore 1; catalog2,4 -> metastore 2)", j4, j4Err},
	} {
		if j.err != nil {
			s.note("the %s peer with %s left out: %v", javaproxy.Name, j.title, j.err)
			continue
		}
		add(j.key, javaproxy.Name+" "+info.Version+", "+j.title, j.path, j.c.Addr, j.c)
		info.Setups = append(info.Setups, j.key)
		s.loopbackNote(javaproxy.Name+" ("+j.key+")", j.c)
	}
	if len(info.Setups) > 0 {
		s.res.Meta.Peers = append(s.res.Meta.Peers, info)
	}
}

// loopbackNote records where a peer listens (its start checked that every
// listening socket is on loopback).
func (s *suite) loopbackNote(name string, c *proc.Child) {
	ls, _ := peer.Listeners(c.Pid())
	var addrs []string
	for _, l := range ls {
		addrs = append(addrs, l.Addr.String())
	}
	s.note("%s listens only on loopback (checked in /proc/%d/net/tcp and tcp6): %s", name, c.Pid(), strings.Join(addrs, ", "))
}

// startPeer starts Waggle Dance over the two metastores: the jar from the
// cache (fetched with Maven the first time), the loopback shim built with
// gcc, and a check that it listens on loopback only.
func (s *suite) startPeer(ms []*testbed.Metastore) (*proc.Child, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	jar, err := waggle.Obtain(ctx, testbed.Cache())
	if err != nil {
		return nil, err
	}
	so, err := waggle.BuildShim(ctx, s.opt.Bin)
	if err != nil {
		return nil, err
	}
	wd, err := waggle.Start(waggle.Config{Jar: jar, Shim: so, Dir: filepath.Join(s.opt.Work, "waggle-dance"), Primary: ms[0].URI,
		Federated: []waggle.Federated{{Name: "catalog2", URI: ms[1].URI, Prefix: "catalog2_"}}}, 3*time.Minute)
	if err != nil {
		return nil, err
	}
	return wd, nil
}

// listCacheServed tells whether the proxy serves the database list cache: it
// makes one get_all_databases call through p and looks for the cache's
// request counter on p's /metrics.
func (s *suite) listCacheServed(p *proc.Child) string {
	c, err := load.Dial(p.Addr, 10*time.Second)
	if err == nil {
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if op, oerr := load.NewStatic(s.reqs.Static[workload.GetAllDatabases]); oerr == nil {
			err = op.Do(c)
		} else {
			err = oerr
		}
		c.Close()
	}
	if err != nil {
		return fmt.Sprintf("Whether this build serves the cache is unknown (probe call failed: %v).", err)
	}
	has, err := scrapeHas(s.mgmt[p], "hms_proxy_cache_requests_total")
	switch {
	case err != nil:
		return fmt.Sprintf("Whether this build serves the cache is unknown (%v).", err)
	case has:
		return "This build serves the database list cache (hms_proxy_cache_requests_total is exported)."
	}
	return "**This build does not serve the database list cache yet** (its keys are accepted and ignored; no hms_proxy_cache_requests_total): the cached rows measure the uncached path."
}

// scrapeHas reports whether a metric family appears on addr's /metrics.
func scrapeHas(addr, name string) (bool, error) {
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + addr + "/metrics")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+" ") {
			return true, nil
		}
	}
	return false, nil
}

func scrapeGauge(addr, name string) (float64, error) {
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	buf := make([]byte, 0, 64<<10)
	tmp := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(tmp)
		buf = append(buf, tmp[:n]...)
		if err != nil {
			break
		}
	}
	for _, l := range strings.Split(string(buf), "\n") {
		if rest, ok := strings.CutPrefix(l, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(rest), 64)
		}
	}
	return 0, fmt.Errorf("%s not found on http://%s/metrics", name, addr)
}

// profile runs `hms-bench profile` (the proxy in-process with runtime/pprof)
// for get_table and the heaviest workload, get_partitions.
func (s *suite) profile() {
	dir := filepath.Join(s.opt.Out, "profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.note("profiles: %v", err)
		return
	}
	for _, w := range []string{workload.GetTable, workload.GetPartitions} {
		if time.Until(s.deadline) < 50*time.Second {
			s.note("profile of %s skipped: the run's time budget is nearly used up", w)
			continue
		}
		dur := "4s"
		if s.opt.Quick {
			dur = "1500ms"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, s.bin("hms-bench"), "profile", "-instant", s.instant.Addr, "-db", s.data.DB,
			"-workload", w, "-out", dir, "-dur", dur)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		cancel()
		if err != nil {
			s.note("profile of %s failed: %v: %s", w, err, tailStr(stderr.String(), 10))
			continue
		}
		a, err := ParseAlloc(out)
		if err != nil {
			s.note("profile of %s: %v", w, err)
			continue
		}
		a.CPUTop = pprofTop(filepath.Join(dir, a.CPUProfile), "")
		a.AllocTop = pprofTop(filepath.Join(dir, a.AllocProfile), "alloc_space")
		for _, t := range []struct{ name, text string }{{"cpu", a.CPUTop}, {"alloc", a.AllocTop}} {
			if t.text != "" {
				_ = os.WriteFile(filepath.Join(dir, w+"."+t.name+".top.txt"), []byte(t.text), 0o644)
			}
		}
		s.res.Allocs = append(s.res.Allocs, a)
		s.log("allocations: %-16s %.1f allocs/op and %.0f B/op by the proxy (ops %d)", w, a.ProxyAllocsOp, a.ProxyBytesOp, a.Ops)
	}
}

func pprofTop(file, index string) string {
	args := []string{"tool", "pprof", "-top", "-nodecount=25"}
	if index != "" {
		args = append(args, "-sample_index="+index)
	}
	out, err := exec.Command("go", append(args, file)...).CombinedOutput()
	if err != nil {
		return ""
	}
	return string(out)
}

func tailStr(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

func meta(start time.Time, quick bool) report.Meta {
	m := report.Meta{Started: start.UTC().Truncate(time.Second), GoVersion: runtime.Version(), CPUs: runtime.NumCPU(),
		LoadBefore: loadavg(), Hive: "Apache Hive 3.1.3 standalone metastore, embedded Derby (test bed)",
		Quick: quick}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.GitCommit = strings.TrimSpace(string(out))
	}
	// What was measured: HEAD, or HEAD plus uncommitted changes to the proxy.
	m.Tree = "clean"
	if out, err := exec.Command("git", "status", "--porcelain", "--", "router", "compat", "cmd/hms-proxy", "configs", "audit", "monitoring", "thriftgen").Output(); err == nil {
		if f := strings.Fields(string(out)); len(f) > 0 {
			m.Tree = "uncommitted changes measured: " + strings.Join(f, " ")
		}
	} else {
		m.Tree = "unknown (" + err.Error() + ")"
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				m.CPUModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return m
}

// jvmOptions returns the -X options of the metastore JVM working in dir, as
// found on its command line.
func jvmOptions(dir string) string {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(b), "-Dhmsproxy.testbed.dir="+dir+"\x00") {
			continue
		}
		var opts []string
		for _, a := range strings.Split(string(b), "\x00") {
			if strings.HasPrefix(a, "-X") {
				opts = append(opts, a)
			}
		}
		return strings.Join(opts, " ")
	}
	return ""
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
