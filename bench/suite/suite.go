// Package suite is `make bench`: it starts two real Hive 3.1.3 metastores
// (the test bed), the instant backend (a load fixture), a plain TCP
// forwarder and several hms-proxy processes (the real binary), prepares the
// data, measures every workload on every setup in interleaved rounds,
// probes the proxy's memory with idle connections, profiles the proxy
// in-process, cleans up and writes bench/results.
package suite

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hms-proxy/hms-proxy/bench/instant"
	"github.com/hms-proxy/hms-proxy/bench/javaproxy"
	"github.com/hms-proxy/hms-proxy/bench/load"
	"github.com/hms-proxy/hms-proxy/bench/proc"
	"github.com/hms-proxy/hms-proxy/bench/proxybench"
	"github.com/hms-proxy/hms-proxy/bench/report"
	"github.com/hms-proxy/hms-proxy/bench/waggle"
	"github.com/hms-proxy/hms-proxy/bench/workload"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// Options configure a run.
type Options struct {
	Out     string        // results folder (bench/results)
	Work    string        // scratch folder (configs, logs, recorded replies)
	Bin     string        // folder holding hms-proxy, hms-instant, tcpfwd and hms-bench
	Budget  time.Duration // the whole run, start to results
	Quick   bool          // a short smoke run (fewer, shorter rounds)
	GoBench string        // file with `go test -bench` output to include
	NoPeer  bool          // leave out the peers (Waggle Dance, the Java HMS Proxy)
	// JavaProxyJar is the Java HMS Proxy's prebuilt fat jar ($BENCH_JAVA_PROXY_JAR);
	// "" leaves that peer out (the notes say so).
	JavaProxyJar string
	Log          func(format string, args ...any)
}

// Setup keys.
const (
	DirectHive      = report.DirectHive
	ProxyHive       = report.ProxyHive
	ProxyHive4      = report.ProxyHive4
	DirectInstant   = report.DirectInstant
	FwdInstant      = report.FwdInstant
	ProxyInstant    = report.ProxyInstant
	ProxyInstantNoA = report.ProxyInstantNoA
	ProxyInstant4   = report.ProxyInstant4
	FwdHive         = report.FwdHive
	ProxyHive2      = report.ProxyHive2
	ProxyHive2Cache = report.ProxyHive2Cache
	ProxyHive4Cache = report.ProxyHive4Cache
	WaggleHive      = report.WaggleHive
	JavaHive2       = report.JavaHive2
	JavaHive4       = report.JavaHive4
)

// listCache are the keys of the cached fan-out setups.
var listCache = map[string]string{
	"routing.database-list-cache.ttl-ms":              "60000",
	"routing.database-list-cache.shared-across-users": "true",
}

var concs = []int{1, 8, 64}

// realOrder runs add_partitions, by far the slowest on a real metastore, last.
var realOrder = []string{workload.GetTable, workload.GetAllDatabases, workload.GetAllTables, workload.GetPartitionsByNames,
	workload.GetPartitions, workload.CreateDropTable, workload.FanOutDatabases, workload.FanOutGetDatabases,
	workload.FanOutTableMeta, workload.AddPartitions}

// sortCells puts the cells in report order (workload.All, then concurrency).
func (s *suite) sortCells() {
	idx := map[string]int{}
	for i, w := range workload.All {
		idx[w] = i
	}
	sort.SliceStable(s.res.Cells, func(i, j int) bool {
		a, b := s.res.Cells[i], s.res.Cells[j]
		if idx[a.Workload] != idx[b.Workload] {
			return idx[a.Workload] < idx[b.Workload]
		}
		return a.Concurrency < b.Concurrency
	})
}

type setup struct {
	report.Setup
	addr  string
	meter *proc.Child
	dial  func() (*load.Conn, error) // nil: plain TCP (kerberos.go)
}

type suite struct {
	opt      Options
	start    time.Time
	deadline time.Time
	res      *report.Results
	data     workload.Data
	reqs     *workload.Requests
	ops      *workload.Ops
	hms      []*testbed.Metastore
	setups   map[string]*setup
	instant  *proc.Child
	log      func(format string, args ...any)
	phaseT   time.Time
	mgmt     map[*proc.Child]string // management address of each proxy
	kdc      *testbed.KDC           // the Kerberized setups' KDC (kerberos.go)
}

// Run performs the whole benchmark.
func Run(opt Options) (*report.Results, error) {
	s := &suite{opt: opt, start: time.Now(), setups: map[string]*setup{}, mgmt: map[*proc.Child]string{}, log: opt.Log, ops: workload.NewOps()}
	if s.log == nil {
		s.log = func(string, ...any) {}
	}
	s.deadline = s.start.Add(opt.Budget)
	s.phaseT = s.start
	s.res = &report.Results{Meta: meta(s.start, opt.Quick)}
	for _, d := range []string{opt.Out, opt.Work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	// Whatever happens, no process of ours outlives the run.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		if _, ok := <-sig; ok {
			s.log("interrupted: stopping every process of the run")
			s.stopAll()
			os.Exit(130)
		}
	}()
	defer func() {
		signal.Stop(sig)
		close(sig)
		s.stopAll()
	}()
	err := s.run()
	s.res.Meta.DurationS = time.Since(s.start).Seconds()
	s.res.Meta.LoadAfter = loadavg()
	return s.res, err
}

func (s *suite) phase(name string) {
	now := time.Now()
	d := now.Sub(s.phaseT)
	s.res.Phases = append(s.res.Phases, report.Phase{Name: name, S: roundS(d)})
	s.phaseT = now
	s.log("== %s: %.1fs (run at %.0fs of %v)", name, d.Seconds(), now.Sub(s.start).Seconds(), s.opt.Budget)
}

func roundS(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }

func (s *suite) stopAll() {
	proc.StopAll()
	s.stopKerberos()
	for _, m := range s.hms {
		if m != nil {
			_ = m.Stop()
			os.RemoveAll(m.Dir)
		}
	}
	s.hms = nil
}

func (s *suite) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	s.res.Notes = append(s.res.Notes, n)
	s.log("note: %s", n)
}

func (s *suite) run() error {
	// 1. Two real Hive 3.1.3 metastores: hms1 serves every single-catalog
	// workload; the 4-catalog fan-out maps catalog1,3 -> hms1, catalog2,4 -> hms2.
	ms, err := testbed.StartMetastores(testbed.Hive313, testbed.Hive313)
	if err != nil {
		return fmt.Errorf("starting the real metastores (test bed): %w", err)
	}
	s.hms = ms
	s.res.Meta.MetastoreJV = jvmOptions(ms[0].Dir)
	s.phase("start 2 Hive 3.1.3 metastores")
	hms1 := strings.TrimPrefix(ms[0].URI, "thrift://")

	// 2. Data.
	s.data = workload.NewData(fmt.Sprintf("%x", time.Now().Unix()&0xffffff))
	cl, err := workload.Dial(hms1, 5*time.Minute)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := workload.Prepare(context.Background(), cl, s.data, concs); err != nil {
		return fmt.Errorf("preparing the data on %s: %w", ms[0].URI, err)
	}
	if s.reqs, err = workload.Encode(s.data, concs); err != nil {
		return err
	}
	s.phase("prepare data")

	// 3. Record what the real metastore answers, for the instant backend.
	repliesDir := filepath.Join(s.opt.Work, "replies")
	if err := s.record(hms1, repliesDir); err != nil {
		return err
	}

	// 4. Helper processes.
	if err := s.startHelpers(ms, repliesDir); err != nil {
		return err
	}
	s.phase("record replies, start helpers")

	// 5. Instant backend: direct, forwarder, proxy, interleaved. First,
	// because the proxy's own cost is the core of the comparison.
	instEnd := s.start.Add(s.opt.Budget * 45 / 100)
	for _, w := range workload.All {
		setups := []string{DirectInstant, FwdInstant, ProxyInstant}
		switch w {
		case workload.GetTable:
			setups = append(setups, ProxyInstantNoA)
			for _, k := range []string{ProxyInstantKrbAuth, ProxyInstantKrbConf} {
				if s.setups[k] != nil {
					setups = append(setups, k)
				}
			}
		case workload.FanOutDatabases:
			setups = []string{DirectInstant, FwdInstant, ProxyInstant, ProxyInstant4}
		case workload.FanOutGetDatabases, workload.FanOutTableMeta:
			setups = []string{DirectInstant, ProxyInstant, ProxyInstant4}
		}
		s.measureWorkload(w, setups, instEnd, true)
	}
	s.phase("measure: instant backend")

	// 6. Real metastore: direct vs proxy (and the forwarder, for the fast
	// calls, as the floor of any hop), interleaved, after a JIT warm-up of
	// the metastore (and the proxy) on the read workloads. The expensive
	// add_partitions comes last: it gets what time is left.
	s.warmUp()
	s.phase("warm up the metastore JIT")
	realEnd := s.deadline.Add(-50 * time.Second)
	for _, w := range realOrder {
		// A fan-out's single-catalog reference is the same request through
		// the 1-catalog proxy, in the same rounds.
		setups := []string{DirectHive, ProxyHive}
		switch w {
		case workload.GetTable, workload.GetAllDatabases, workload.GetAllTables, workload.GetPartitionsByNames:
			setups = append(setups, FwdHive)
		case workload.FanOutDatabases:
			setups = append(setups, ProxyHive2, ProxyHive2Cache, ProxyHive4, ProxyHive4Cache)
		case workload.FanOutGetDatabases, workload.FanOutTableMeta:
			setups = append(setups, ProxyHive2, ProxyHive4)
		}
		for _, k := range []string{WaggleHive, JavaHive2, JavaHive4} {
			if s.setups[k] != nil && (k != JavaHive4 || workload.IsFanOut(w)) {
				setups = append(setups, k)
			}
		}
		s.measureWorkload(w, setups, realEnd, false)
		if w == workload.AddPartitions {
			s.dropAddTables(cl)
		}
	}
	s.phase("measure: real metastore")
	s.sortCells()

	// 7. Memory with idle connections (a fresh proxy process).
	if err := s.memoryProbe(); err != nil {
		s.note("memory probe failed: %v", err)
	}
	s.phase("memory probe")

	// 8. In-process profiles and allocations per call.
	s.profile()
	s.phase("profiles")

	// 9. Clean the metastore.
	s.cleanup(cl)
	s.phase("clean up")
	s.derive()
	if s.opt.GoBench != "" {
		if b, err := os.ReadFile(s.opt.GoBench); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "Benchmark") {
					s.res.GoBench = append(s.res.GoBench, strings.Join(strings.Fields(l), " "))
				}
			}
		} else {
			s.note("go benchmark output %s: %v", s.opt.GoBench, err)
		}
	}
	return nil
}

// record sends every workload's calls once to the real metastore and keeps
// its replies byte for byte.
func (s *suite) record(addr, dir string) error {
	c, err := load.Dial(addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Minute))
	replies := instant.Replies{}
	keep := func(method string, req []byte) error {
		off := 8 + len(method)
		m, err := c.Call(req, off)
		if err != nil {
			return fmt.Errorf("recording %s: %w", method, err)
		}
		replies[method] = append([]byte(nil), m.Raw...)
		return nil
	}
	for _, w := range []string{workload.GetTable, workload.GetAllDatabases, workload.GetAllTables,
		workload.GetPartitionsByNames, workload.GetPartitions, workload.FanOutGetDatabases, workload.FanOutTableMeta} {
		if err := keep(workload.Methods(w)[0], append([]byte(nil), s.reqs.Static[w]...)); err != nil {
			return err
		}
	}
	name := []byte("bc99999999999999")
	if err := keep("create_table", s.reqs.Create.Fill(nil, name)); err != nil {
		return err
	}
	if err := keep("drop_table", s.reqs.Drop.Fill(nil, name)); err != nil {
		return err
	}
	if err := keep("add_partitions", s.reqs.AddByConc[concs[0]].Fill(nil, []byte("999999999999"))); err != nil {
		return err
	}
	return instant.SaveDir(dir, replies)
}

func (s *suite) bin(name string) string { return filepath.Join(s.opt.Bin, name) }

func (s *suite) startHelpers(ms []*testbed.Metastore, repliesDir string) error {
	var err error
	s.instant, err = proc.Start("instant backend", filepath.Join(s.opt.Work, "instant.log"), 20*time.Second,
		s.bin("hms-instant"), "-listen", "127.0.0.1:0", "-replies", repliesDir)
	if err != nil {
		return err
	}
	fw, err := proc.Start("tcp forwarder", filepath.Join(s.opt.Work, "tcpfwd.log"), 20*time.Second,
		s.bin("tcpfwd"), "-listen", "127.0.0.1:0", "-to", s.instant.Addr)
	if err != nil {
		return err
	}
	inst := "thrift://" + s.instant.Addr
	add := func(key, title, path string, addr string, meter *proc.Child) {
		st := &setup{Setup: report.Setup{Key: key, Title: title, Path: path}, addr: addr, meter: meter}
		if meter != nil {
			st.Process = meter.Name
		}
		s.setups[key] = st
		s.res.Setups = append(s.res.Setups, st.Setup)
	}
	add(DirectHive, "(a) direct to Hive 3.1.3", "client -> Hive 3.1.3 metastore", strings.TrimPrefix(ms[0].URI, "thrift://"), nil)
	fh, err := proc.Start("tcp forwarder to hive", filepath.Join(s.opt.Work, "tcpfwd-hive.log"), 20*time.Second,
		s.bin("tcpfwd"), "-listen", "127.0.0.1:0", "-to", strings.TrimPrefix(ms[0].URI, "thrift://"))
	if err != nil {
		return err
	}
	add(FwdHive, "(a') TCP forwarder to Hive 3.1.3", "client -> tcpfwd -> the same metastore (the floor of any hop)", fh.Addr, fh)
	p, err := s.startProxy("proxy-hive", []string{ms[0].URI}, true)
	if err != nil {
		return err
	}
	add(ProxyHive, "(b) hms-proxy to Hive 3.1.3", "client -> hms-proxy (1 catalog) -> the same metastore", p.Addr, p)
	p, err = s.startProxy("proxy-hive-4cat", []string{ms[0].URI, ms[1].URI, ms[0].URI, ms[1].URI}, true)
	if err != nil {
		return err
	}
	add(ProxyHive4, "hms-proxy, 4 catalogs on 2 Hive 3.1.3", "client -> hms-proxy (catalog1,3 -> metastore 1; catalog2,4 -> metastore 2)", p.Addr, p)
	p, err = s.startProxy("proxy-hive-4cat-cached", []string{ms[0].URI, ms[1].URI, ms[0].URI, ms[1].URI}, true, listCache)
	if err != nil {
		return err
	}
	add(ProxyHive4Cache, "hms-proxy, 4 catalogs, database list cache set", "as the 4-catalog proxy, with routing.database-list-cache.ttl-ms=60000", p.Addr, p)
	p, err = s.startProxy("proxy-hive-2cat", []string{ms[0].URI, ms[1].URI}, true)
	if err != nil {
		return err
	}
	add(ProxyHive2, "hms-proxy, 2 catalogs on 2 Hive 3.1.3", "client -> hms-proxy (catalog1 -> metastore 1; catalog2 -> metastore 2)", p.Addr, p)
	p, err = s.startProxy("proxy-hive-2cat-cached", []string{ms[0].URI, ms[1].URI}, true, listCache)
	if err != nil {
		return err
	}
	add(ProxyHive2Cache, "hms-proxy, 2 catalogs, database list cache set", "as the 2-catalog proxy, with routing.database-list-cache.ttl-ms=60000", p.Addr, p)
	s.res.Meta.ListCache = s.listCacheServed(p)
	if s.opt.NoPeer {
		s.note("the peers (Waggle Dance %s, the %s) were left out (-no-peer, BENCH_NO_PEER=1)", waggle.Version, javaproxy.Name)
	} else {
		s.startPeers(ms, add)
	}
	add(DirectInstant, "(e) direct to the instant backend", "client -> instant backend (load fixture)", s.instant.Addr, nil)
	add(FwdInstant, "(d) TCP forwarder to the instant backend", "client -> tcpfwd -> instant backend", fw.Addr, fw)
	p, err = s.startProxy("proxy-instant", []string{inst}, true)
	if err != nil {
		return err
	}
	add(ProxyInstant, "(c) hms-proxy to the instant backend", "client -> hms-proxy (1 catalog, audit on) -> instant backend", p.Addr, p)
	p, err = s.startProxy("proxy-instant-noaudit", []string{inst}, false)
	if err != nil {
		return err
	}
	add(ProxyInstantNoA, "(c') hms-proxy, audit off, to the instant backend", "client -> hms-proxy (audit.enabled=false) -> instant backend", p.Addr, p)
	p, err = s.startProxy("proxy-instant-4cat", []string{inst, inst, inst, inst}, true)
	if err != nil {
		return err
	}
	add(ProxyInstant4, "hms-proxy, 4 catalogs on the instant backend", "client -> hms-proxy (4 catalogs) -> instant backend x4", p.Addr, p)
	if err := s.startKerberos(inst, add); err != nil {
		s.note("the Kerberized front-door setups were not run: %v", err)
	}
	return nil
}

// startProxy runs the real hms-proxy binary with a config written to the
// work folder; Addr is its Thrift port, MgmtAddr-style metrics at port+mgmt.
func (s *suite) startProxy(name string, backends []string, audit bool, extra ...map[string]string) (*proc.Child, error) {
	cfg := proxybench.ProxyConfig{Backends: backends, PoolSize: concs[len(concs)-1], Audit: audit}
	if len(extra) > 0 {
		cfg.Extra = extra[0]
	}
	c, mgmt, err := proxybench.StartBinary(name, s.bin("hms-proxy"), filepath.Join(s.opt.Work, name), cfg)
	if err != nil {
		return nil, err
	}
	s.mgmt[c] = mgmt
	return c, nil
}

// plan is how one cell is measured.
type plan struct {
	rounds int
	slice  load.Bounds
	warm   load.Bounds
}

func (s *suite) planFor(w string, conc int, instantGroup bool) plan {
	// Many short rounds: the setups alternate often, so drift of a shared
	// machine (other processes, JIT, Derby) lands on all of them alike.
	p := plan{rounds: 6, slice: load.Bounds{Dur: 300 * time.Millisecond, MaxOps: 50000, CallTimeout: 90 * time.Second},
		warm: load.Bounds{Dur: 300 * time.Millisecond, MaxOps: 2000, CallTimeout: 90 * time.Second}}
	if instantGroup {
		p.rounds, p.slice.Dur, p.warm.Dur = 4, 250*time.Millisecond, 100*time.Millisecond
		if w == workload.GetTable { // the CPU-per-call comparison needs many 10 ms ticks
			p.rounds, p.slice.Dur = 6, 600*time.Millisecond
		}
	}
	if s.opt.Quick {
		p.rounds = 2
		p.slice.Dur /= 2
		p.warm.Dur /= 3
	}
	// The slow workloads on a real metastore: warm up with a few operations only.
	if !instantGroup {
		switch w {
		case workload.GetPartitions, workload.AddPartitions, workload.CreateDropTable, workload.GetPartitionsByNames:
			p.warm.MaxOps = conc
			if conc > 8 {
				p.warm.MaxOps = 8
			}
		}
	}
	return p
}

// cellCap bounds any one (workload, concurrency) measurement over all its
// setups and rounds.
const cellCap = 35 * time.Second

// measureWorkload runs every concurrency level of w over setups, rounds
// interleaved (the order of setups rotates every round), until end.
func (s *suite) measureWorkload(w string, keys []string, end time.Time, instantGroup bool) {
	var prevTput float64 // ops/s of the previous (lower) concurrency, slowest setup
	prevConc := 0
	for _, conc := range concs {
		p := s.planFor(w, conc, instantGroup)
		cells := make([]*report.Cell, len(keys))
		for i, k := range keys {
			cells[i] = &report.Cell{Workload: w, Setup: k, Concurrency: conc, RPCsPerOp: workload.RPCs(w)}
			s.res.Cells = append(s.res.Cells, cells[i])
		}
		skip := func(why string) {
			for _, c := range cells {
				c.Skipped = why
			}
			s.log("%-26s c=%-2d skipped: %s", w, conc, why)
		}
		left := time.Until(end)
		// A slice cannot be shorter than one operation per connection: predict a
		// wave from the lower concurrency's throughput.
		wave := p.slice.Dur
		if prevTput > 0 {
			if d := time.Duration(float64(conc) / prevTput * float64(time.Second)); d > wave {
				wave = d
			}
		}
		per := time.Duration(len(keys)) * (wave + p.warm.Dur)
		for p.rounds > 1 && (time.Duration(p.rounds)*per > left || time.Duration(p.rounds)*per > cellCap) {
			p.rounds--
		}
		switch {
		case per > left:
			skip(fmt.Sprintf("the phase's time budget was used up (%.0f s left, one round of %d setups needs about %.0f s)", left.Seconds(), len(keys), per.Seconds()))
			prevConc = conc
			continue
		case per > cellCap:
			skip(fmt.Sprintf("over the per-cell cap of %.0f s: one round (%d setups x one wave of %d operations) is predicted at %.0f s from the %d-connection throughput (%.2f ops/s)",
				cellCap.Seconds(), len(keys), conc, per.Seconds(), prevConc, prevTput))
			prevConc = conc
			continue
		}
		walls := make([]time.Duration, len(keys))
		var ticks = make([]int64, len(keys))
		conns := make([][]*load.Conn, len(keys))
		ops := make([][]load.Op, len(keys))
		failed := false
		for i, k := range keys {
			st := s.setups[k]
			conns[i] = make([]*load.Conn, conc)
			ops[i] = make([]load.Op, conc)
			for j := 0; j < conc; j++ {
				var err error
				if conns[i][j], err = s.dialSetup(st); err != nil {
					skip(fmt.Sprintf("cannot connect to %s: %v", k, err))
					failed = true
					break
				}
				if ops[i][j], err = s.ops.Op(s.reqs, w, conc); err != nil {
					skip(err.Error())
					failed = true
					break
				}
			}
			if failed {
				break
			}
		}
		if !failed {
			for i := range keys {
				_ = load.RunSlice(conns[i], ops[i], p.warm)
			}
			for r := 0; r < p.rounds; r++ {
				for n := range keys {
					i := (n + r) % len(keys)
					st := s.setups[keys[i]]
					for j := range conns[i] { // redial connections a failure dropped
						if conns[i][j] == nil {
							conns[i][j], _ = s.dialSetup(st)
						}
					}
					var cpu0 time.Duration
					if st.meter != nil {
						cpu0, _ = proc.CPU(st.meter.Pid())
					}
					res := load.RunSlice(conns[i], ops[i], p.slice)
					if st.meter != nil {
						cpu1, _ := proc.CPU(st.meter.Pid())
						ticks[i] += int64((cpu1 - cpu0) * proc.ClockTick / time.Second)
						if m, err := proc.Mem(st.meter.Pid()); err == nil && m.RSSKiB > cells[i].RSSMaxKiB {
							cells[i].RSSMaxKiB = m.RSSKiB
						}
					}
					c := cells[i]
					c.Lat = append(c.Lat, res.Latencies...)
					c.Errors += res.Errors
					if c.FirstError == "" {
						c.FirstError = res.FirstErr
					}
					walls[i] += res.Wall
				}
			}
			slowest := 0.0
			for i, c := range cells {
				c.Rounds = p.rounds
				c.Finish(walls[i])
				if s.setups[keys[i]].meter != nil && c.Ops > 0 {
					c.CPUTicks = ticks[i]
					c.CPUusPerCall = roundF(float64(ticks[i])*1e6/proc.ClockTick/float64(c.Ops*c.RPCsPerOp), 1)
				}
				if slowest == 0 || (c.OpsPerS > 0 && c.OpsPerS < slowest) {
					slowest = c.OpsPerS
				}
				s.log("%-26s c=%-2d %-22s n=%-6d err=%-3d p50=%8.3fms p99=%8.3fms %8.1f ops/s cpu=%6.1fus/call",
					w, conc, keys[i], c.Ops, c.Errors, c.P50ms, c.P99ms, c.OpsPerS, c.CPUusPerCall)
			}
			prevTput = slowest
		}
		prevConc = conc
		for i := range conns {
			for _, c := range conns[i] {
				if c != nil {
					c.Close()
				}
			}
		}
	}
}

// warmUp runs the read workloads for a short while on both real setups, so
// that the metastore's JIT compiles the paths the measurement takes.
func (s *suite) warmUp() {
	// About 0.7 s per (workload, setup) job (0.27 s when quick): 11 s for the
	// 16 jobs of direct and hms-proxy, more with the peers.
	per := 8 * time.Second / 11
	if s.opt.Quick {
		per = 3 * time.Second / 11
	}
	ws := []string{workload.GetTable, workload.GetAllDatabases, workload.GetAllTables, workload.GetPartitionsByNames, workload.GetPartitions}
	type job struct{ w, setup string }
	var jobs []job
	for _, w := range ws {
		jobs = append(jobs, job{w, DirectHive}, job{w, ProxyHive})
	}
	// The second metastore serves only the fan-out: warm it up too.
	for _, w := range workload.FanOuts {
		jobs = append(jobs, job{w, ProxyHive4}, job{w, ProxyHive2})
	}
	// A peer is a JVM: its JIT needs the same warm-up as the metastore's.
	for _, k := range []string{WaggleHive, JavaHive2} {
		if s.setups[k] != nil {
			for _, w := range append(append([]string(nil), ws...), workload.FanOuts...) {
				jobs = append(jobs, job{w, k})
			}
		}
	}
	if s.setups[JavaHive4] != nil {
		for _, w := range workload.FanOuts {
			jobs = append(jobs, job{w, JavaHive4})
		}
	}
	for _, j := range jobs {
		w, k := j.w, j.setup
		conns := make([]*load.Conn, 4)
		ops := make([]load.Op, 4)
		for i := range conns {
			c, err := load.Dial(s.setups[k].addr, 10*time.Second)
			if err != nil {
				s.note("warm-up: %v", err)
				return
			}
			defer c.Close()
			conns[i] = c
			if ops[i], err = s.ops.Op(s.reqs, w, 1); err != nil {
				s.note("warm-up: %v", err)
				return
			}
		}
		res := load.RunSlice(conns, ops, load.Bounds{Dur: per, MaxOps: 100000, CallTimeout: time.Minute})
		if res.Errors > 0 {
			s.note("warm-up of %s on %s: %d errors, first: %s", w, k, res.Errors, res.FirstErr)
		}
	}
}

func roundF(v float64, d int) float64 {
	p := 1.0
	for ; d > 0; d-- {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}

// dropAddTables removes what add_partitions created (bounded).
func (s *suite) dropAddTables(cl *workload.Client) {
	t0 := time.Now()
	for _, k := range concs {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		err := cl.DropTable(ctx, s.data.DB, s.data.AddTable(k), false)
		cancel()
		if err != nil {
			s.note("dropping %s.%s after add_partitions: %v", s.data.DB, s.data.AddTable(k), err)
		}
	}
	s.log("dropped the add_partitions tables in %.1fs", time.Since(t0).Seconds())
}

func (s *suite) cleanup(cl *workload.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	if err := cl.DropDatabase(ctx, s.data.DB, true, true); err != nil {
		s.note("dropping database %s at the end: %v (the metastore and its Derby files are deleted anyway)", s.data.DB, err)
	}
}

// memoryProbe starts a fresh proxy to the instant backend and opens idle
// client connections (each makes one get_table call, then stays open).
func (s *suite) memoryProbe() error {
	p, err := s.startProxy("proxy-memory-probe", []string{"thrift://" + s.instant.Addr}, true)
	if err != nil {
		return err
	}
	defer p.Stop()
	var conns []*load.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	op, err := load.NewStatic(s.reqs.Static[workload.GetTable])
	if err != nil {
		return err
	}
	probeEnd := time.Now().Add(40 * time.Second)
	for _, n := range []int{1, 100, 1000} {
		for len(conns) < n {
			if time.Now().After(probeEnd) {
				return fmt.Errorf("opening %d connections took longer than 40 s", n)
			}
			c, err := load.Dial(p.Addr, 10*time.Second)
			if err != nil {
				return fmt.Errorf("connection %d: %w", len(conns)+1, err)
			}
			c.SetDeadline(time.Now().Add(30 * time.Second))
			if err := op.Do(c); err != nil {
				c.Close()
				return fmt.Errorf("get_table on connection %d: %w", len(conns)+1, err)
			}
			conns = append(conns, c)
		}
		time.Sleep(700 * time.Millisecond)
		m, err := proc.Mem(p.Pid())
		if err != nil {
			return err
		}
		g, err := scrapeGauge(s.mgmt[p], "go_goroutines")
		if err != nil {
			return err
		}
		s.res.Memory = append(s.res.Memory, report.MemPoint{Conns: n, RSSKiB: m.RSSKiB, Goroutines: int(g)})
		s.log("memory probe: %4d idle connections: RSS %6.1f MiB, %d goroutines", n, float64(m.RSSKiB)/1024, int(g))
	}
	return nil
}
