package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/hms-proxy/hms-proxy/bench/load"
	"github.com/hms-proxy/hms-proxy/bench/proxybench"
	"github.com/hms-proxy/hms-proxy/bench/report"
	"github.com/hms-proxy/hms-proxy/bench/workload"
)

// ProfileArgs configure `hms-bench profile`.
type ProfileArgs struct {
	Instant  string // instant backend address
	DB       string // database of the run (names in the requests)
	Workload string
	Out      string
	Dur      time.Duration
	Conc     int // client connections (default 4)
	MaxOps   int
	Catalogs int    // catalogs of the proxy, each on the instant backend (default 1)
	Tag      string // file name stem of the profiles (default: the workload's name)
	// Contention adds mutex and block profiles (<tag>.mutex.prof,
	// <tag>.block.prof): every contended lock and every blocking wait of
	// the process, the load generator's and the instant backend's included.
	Contention bool
}

// MemProfileRate is the allocation sampling rate of the profile helper (one
// sample per 4 KiB on average; the default 512 KiB misses most small objects).
const MemProfileRate = 4096

// Profile runs hms-proxy in this process (app, as cmd/hms-proxy
// assembles it) in front of the instant backend, drives one workload through
// it under a CPU profile, writes the CPU and allocation profiles, and prints
// one JSON report.Alloc on w. Allocations per call are the process's mallocs
// through the proxy minus the same calls straight to the instant backend (what
// the load generator itself allocates).
func Profile(a ProfileArgs, w io.Writer) error {
	if a.Conc < 1 {
		a.Conc = 4
	}
	if a.MaxOps < 1 {
		a.MaxOps = 2_000_000
	}
	if a.Catalogs < 1 {
		a.Catalogs = 1
	}
	if a.Tag == "" {
		a.Tag = a.Workload
	}
	backends := make([]string, a.Catalogs)
	for i := range backends {
		backends[i] = "thrift://" + a.Instant
	}
	port, err := proxybench.FreePort()
	if err != nil {
		return err
	}
	mport, err := proxybench.FreePort()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "hms-bench-profile-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	app, err := proxybench.Start(proxybench.Props(proxybench.ProxyConfig{Port: port, MgmtPort: mport,
		Backends: backends, PoolSize: 64, Audit: true, Dir: tmp}), os.Stderr)
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = app.Shutdown(ctx)
	}()
	d := workload.NewData("")
	d.DB = a.DB
	reqs, err := workload.Encode(d, concs)
	if err != nil {
		return err
	}
	ops := workload.NewOps()
	run := func(addr string, b load.Bounds) (int, error) {
		conns := make([]*load.Conn, a.Conc)
		opl := make([]load.Op, a.Conc)
		for i := range conns {
			if conns[i], err = load.Dial(addr, 10*time.Second); err != nil {
				return 0, err
			}
			defer conns[i].Close()
			if opl[i], err = ops.Op(reqs, a.Workload, 8); err != nil {
				return 0, err
			}
		}
		res := load.RunSlice(conns, opl, b)
		if res.Errors > 0 {
			return 0, fmt.Errorf("%s: %d errors, first: %s", a.Workload, res.Errors, res.FirstErr)
		}
		return len(res.Latencies), nil
	}
	proxyAddr := app.Listener("primary").Addr().String()
	bounds := load.Bounds{Dur: a.Dur, MaxOps: a.MaxOps, CallTimeout: time.Minute}
	warm := load.Bounds{Dur: a.Dur / 8, MaxOps: a.MaxOps, CallTimeout: time.Minute}
	if _, err := run(a.Instant, warm); err != nil {
		return err
	}
	if _, err := run(proxyAddr, warm); err != nil {
		return err
	}
	var m0, m1, m2 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	nDirect, err := run(a.Instant, load.Bounds{Dur: a.Dur / 2, MaxOps: a.MaxOps, CallTimeout: time.Minute})
	if err != nil {
		return err
	}
	runtime.ReadMemStats(&m1)
	cpuName := a.Tag + ".cpu.prof"
	allocName := a.Tag + ".alloc.prof"
	f, err := os.Create(filepath.Join(a.Out, cpuName))
	if err != nil {
		return err
	}
	defer f.Close()
	if a.Contention {
		runtime.SetMutexProfileFraction(1)
		runtime.SetBlockProfileRate(1)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	nProxy, err := run(proxyAddr, bounds)
	pprof.StopCPUProfile()
	if a.Contention {
		runtime.SetMutexProfileFraction(0)
		runtime.SetBlockProfileRate(0)
	}
	if err != nil {
		return err
	}
	if a.Contention {
		for _, k := range []string{"mutex", "block"} {
			pf, err := os.Create(filepath.Join(a.Out, a.Tag+"."+k+".prof"))
			if err != nil {
				return err
			}
			err = pprof.Lookup(k).WriteTo(pf, 0)
			pf.Close()
			if err != nil {
				return err
			}
		}
	}
	runtime.ReadMemStats(&m2)
	af, err := os.Create(filepath.Join(a.Out, allocName))
	if err != nil {
		return err
	}
	defer af.Close()
	if err := pprof.Lookup("allocs").WriteTo(af, 0); err != nil {
		return err
	}
	if nDirect == 0 || nProxy == 0 {
		return fmt.Errorf("%s: no operation completed (direct %d, proxied %d)", a.Workload, nDirect, nProxy)
	}
	baseAllocs := float64(m1.Mallocs-m0.Mallocs) / float64(nDirect)
	baseBytes := float64(m1.TotalAlloc-m0.TotalAlloc) / float64(nDirect)
	res := report.Alloc{Workload: a.Workload, Ops: nProxy,
		ProxyAllocsOp:   roundF(float64(m2.Mallocs-m1.Mallocs)/float64(nProxy)-baseAllocs, 1),
		ProxyBytesOp:    roundF(float64(m2.TotalAlloc-m1.TotalAlloc)/float64(nProxy)-baseBytes, 0),
		LoadgenAllocsOp: roundF(baseAllocs, 1), CPUProfile: cpuName, AllocProfile: allocName}
	return json.NewEncoder(w).Encode(res)
}

// ParseAlloc reads the JSON line Profile prints.
func ParseAlloc(b []byte) (report.Alloc, error) {
	var a report.Alloc
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("unreadable profile report %q: %v", b, err)
	}
	return a, nil
}
