// Package instr counts the instructions one call costs the hms-proxy process
// (or the TCP forwarder) with valgrind's callgrind: the real binary runs
// under callgrind in front of an instant backend with synthetic replies,
// collection is switched on only around a fixed number of calls, and the
// total is divided by the calls. Unlike CPU time on a shared machine, the
// count repeats from run to run whatever else the machine does (to about 1
// % with GOGC=off; the Go scheduler's spinning varies by a few thousand
// instructions per call with timing), so it can attribute costs and
// measure a change on a loaded machine. The self cost of every function is
// summed into categories (Thrift reading, router, stack growth, scheduler,
// GC, ...), which is where a change shows.
//
// Limits: user-space instructions only (the kernel's work in system calls
// is not counted: count those with perf stat's software events), and
// valgrind runs the process's threads one at a time, so lock contention and
// parallel speed-ups do not show; concurrency shows only as more goroutines
// and wake-ups per call.
package instr

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hms-proxy/hms-proxy/bench/instant"
	"github.com/hms-proxy/hms-proxy/bench/load"
	"github.com/hms-proxy/hms-proxy/bench/proxybench"
	"github.com/hms-proxy/hms-proxy/bench/workload"
)

// Case is one measurement: workload W through a proxy with Catalogs
// catalogs (all on the instant backend; 0: the TCP forwarder instead), at
// Conc connections.
type Case struct {
	Workload string
	Catalogs int
	Conc     int
}

func (c Case) String() string {
	via := strconv.Itoa(c.Catalogs) + "cat"
	if c.Catalogs == 0 {
		via = "fwd"
	}
	return fmt.Sprintf("%s:%s:%d", c.Workload, via, c.Conc)
}

// ParseCase reads "workload:Ncat:conc" or "workload:fwd:conc".
func ParseCase(s string) (Case, error) {
	f := strings.Split(s, ":")
	if len(f) != 3 {
		return Case{}, fmt.Errorf("case %q: want workload:<N>cat:<connections> or workload:fwd:<connections>", s)
	}
	c := Case{Workload: f[0]}
	known := false
	for _, w := range workload.All {
		known = known || w == c.Workload
	}
	if !known || c.Workload == workload.CreateDropTable || c.Workload == workload.AddPartitions {
		return Case{}, fmt.Errorf("case %q: workload %q is not a read workload of bench/workload", s, c.Workload)
	}
	if f[1] != "fwd" {
		n, err := strconv.Atoi(strings.TrimSuffix(f[1], "cat"))
		if err != nil || n < 1 || !strings.HasSuffix(f[1], "cat") {
			return Case{}, fmt.Errorf("case %q: %q is not <N>cat or fwd", s, f[1])
		}
		c.Catalogs = n
	}
	k, err := strconv.Atoi(f[2])
	if err != nil || k < 1 {
		return Case{}, fmt.Errorf("case %q: %q is not a number of connections", s, f[2])
	}
	c.Conc = k
	return c, nil
}

// DefaultCases are get_table at 1, 8 and 64 connections through hms-proxy
// and the forwarder, get_partitions_by_names(100), and each fan-out over 1,
// 2 and 4 catalogs at one connection.
func DefaultCases() []Case {
	var cs []Case
	for _, k := range []int{1, 8, 64} {
		cs = append(cs, Case{workload.GetTable, 1, k}, Case{workload.GetTable, 0, k})
	}
	cs = append(cs, Case{workload.GetPartitionsByNames, 1, 1})
	for _, w := range workload.FanOuts {
		for _, n := range []int{1, 2, 4} {
			cs = append(cs, Case{w, n, 1})
		}
	}
	return cs
}

// Options configure a run.
type Options struct {
	Bin   string            // folder holding hms-proxy and tcpfwd
	Work  string            // callgrind files, configs, logs
	Calls int               // measured calls per case (as many again warm up first)
	GOGC  string            // the measured process's GOGC ("off": no collection, the steadiest count)
	Set   map[string]string // properties set in the proxy's configuration beyond the defaults (-set)
	Cases []Case
	Log   func(format string, args ...any)
}

// Result is one case's count.
type Result struct {
	Case
	Calls      int
	PerCall    float64            // instructions per call
	Categories map[string]float64 // per call
	Top        []Fn               // the costliest functions, per call
	File       string             // the callgrind file (callgrind_annotate reads it)
	Err        string
}

// Fn is one function's self cost per call.
type Fn struct {
	Name string
	Cost float64
}

// Run measures every case, one fresh process each.
func Run(opt Options) ([]Result, error) {
	for _, tool := range []string{"valgrind", "callgrind_control"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s not found (apt-get install valgrind): %w", tool, err)
		}
	}
	if opt.Calls < 1 {
		opt.Calls = 2000
	}
	if opt.Log == nil {
		opt.Log = func(string, ...any) {}
	}
	if err := os.MkdirAll(opt.Work, 0o755); err != nil {
		return nil, err
	}
	d := workload.NewData("instr")
	replies, err := proxybench.SyntheticReplies(d)
	if err != nil {
		return nil, err
	}
	srv, err := instant.New(replies)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go srv.Serve(ln)
	defer srv.Close()
	reqs, err := workload.Encode(d, []int{1, 8, 64})
	if err != nil {
		return nil, err
	}
	var out []Result
	for i, c := range opt.Cases {
		r, err := measure(opt, c, i, ln.Addr().String(), reqs)
		if err != nil {
			r = Result{Case: c, Err: err.Error()}
			opt.Log("%-40s failed: %v", c, err)
		} else {
			opt.Log("%-40s %9.0f instructions per call", c, r.PerCall)
		}
		out = append(out, r)
	}
	return out, nil
}

func measure(opt Options, c Case, i int, backend string, reqs *workload.Requests) (Result, error) {
	name := fmt.Sprintf("%02d-%s", i, strings.NewReplacer(":", "-").Replace(c.String()))
	dir := filepath.Join(opt.Work, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Result{}, err
	}
	port, err := proxybench.FreePort()
	if err != nil {
		return Result{}, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	var args []string
	if c.Catalogs == 0 {
		args = []string{filepath.Join(opt.Bin, "tcpfwd"), "-listen", addr, "-to", backend}
	} else {
		mport, err := proxybench.FreePort()
		if err != nil {
			return Result{}, err
		}
		uris := make([]string, c.Catalogs)
		for j := range uris {
			uris[j] = "thrift://" + backend
		}
		props := proxybench.Props(proxybench.ProxyConfig{Port: port, MgmtPort: mport, Backends: uris, PoolSize: 64, Audit: true, Dir: dir})
		for k, v := range opt.Set {
			props[k] = v
		}
		file := filepath.Join(dir, "hms-proxy.properties")
		if err := os.WriteFile(file, []byte(proxybench.PropsText(props)), 0o644); err != nil {
			return Result{}, err
		}
		args = []string{filepath.Join(opt.Bin, "hms-proxy"), file}
	}
	out := filepath.Join(dir, "callgrind.out")
	cmd := exec.Command("valgrind", append([]string{"--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=" + out}, args...)...)
	// asyncpreemptoff: callgrind asserts on the preemption signals Go sends.
	cmd.Env = append(os.Environ(), "GOGC="+opt.GOGC, "GODEBUG=asyncpreemptoff=1")
	logf, err := os.Create(filepath.Join(dir, "valgrind.log"))
	if err != nil {
		return Result{}, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return Result{}, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}()
	if err := waitListening(addr, exited, 3*time.Minute); err != nil {
		return Result{}, fmt.Errorf("%v (log %s)", err, logf.Name())
	}
	drive := func(n int) error {
		conns := make([]*load.Conn, c.Conc)
		ops := make([]load.Op, c.Conc)
		for j := range conns {
			cn, err := load.Dial(addr, 30*time.Second)
			if err != nil {
				return err
			}
			defer cn.Close()
			conns[j] = cn
			if ops[j], err = workload.NewOps().Op(reqs, c.Workload, 8); err != nil {
				return err
			}
		}
		res := load.RunSlice(conns, ops, load.Bounds{Dur: 30 * time.Minute, MaxOps: n, CallTimeout: 5 * time.Minute})
		if res.Errors > 0 {
			return fmt.Errorf("%d of %d calls failed, first: %s", res.Errors, n, res.FirstErr)
		}
		if len(res.Latencies) != n {
			return fmt.Errorf("%d of %d calls completed", len(res.Latencies), n)
		}
		return nil
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	control := func(args ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		b, err := exec.CommandContext(ctx, "callgrind_control", append(args, pid)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("callgrind_control %s: %v: %s", strings.Join(args, " "), err, b)
		}
		return nil
	}
	if err := drive(opt.Calls / 2); err != nil { // warm-up: pools, caches, stacks
		return Result{}, fmt.Errorf("warm-up: %w", err)
	}
	if err := control("-i", "on"); err != nil {
		return Result{}, err
	}
	if err := drive(opt.Calls); err != nil {
		return Result{}, err
	}
	if err := control("-i", "off"); err != nil {
		return Result{}, err
	}
	if err := control("-d"); err != nil {
		return Result{}, err
	}
	dumps, _ := filepath.Glob(out + ".*")
	if len(dumps) == 0 {
		return Result{}, fmt.Errorf("callgrind wrote no dump next to %s", out)
	}
	sort.Strings(dumps)
	costs, err := parseSelf(dumps[len(dumps)-1])
	if err != nil {
		return Result{}, err
	}
	r := Result{Case: c, Calls: opt.Calls, Categories: map[string]float64{}, File: dumps[len(dumps)-1]}
	var fns []Fn
	for fn, v := range costs {
		per := float64(v) / float64(opt.Calls)
		r.PerCall += per
		r.Categories[Category(fn)] += per
		fns = append(fns, Fn{fn, per})
	}
	sort.Slice(fns, func(a, b int) bool { return fns[a].Cost > fns[b].Cost })
	r.Top = fns[:min(len(fns), 25)]
	return r, nil
}

func waitListening(addr string, exited <-chan error, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case e := <-exited:
			return fmt.Errorf("the process under valgrind exited (%v) before it listened on %s", e, addr)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listened on %s within %v", addr, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

var nameRe = regexp.MustCompile(`^(c?fn|cf[il]|f[lie]|c?ob)=\((\d+)\)(?: (.*))?$`)

// parseSelf sums a callgrind file's self cost (its first event) per
// function: cost lines after fn= are the function's own, except the line
// after a calls= line, which is the callee's inclusive cost.
func parseSelf(path string) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names := map[string]string{}
	costs := map[string]int64{}
	fn, skip := "", false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		switch c := line[0]; {
		case c >= '0' && c <= '9' || c == '+' || c == '-' || c == '*':
			if skip {
				skip = false
				continue
			}
			fields := strings.Fields(line)
			if len(fields) >= 2 && fn != "" {
				v, err := strconv.ParseInt(fields[1], 10, 64)
				if err == nil {
					costs[fn] += v
				}
			}
			continue
		}
		if strings.HasPrefix(line, "calls=") {
			skip = true
			continue
		}
		if m := nameRe.FindStringSubmatch(line); m != nil {
			kind := "file" // fl, fi, fe, cfi, cfl share one table of names
			switch m[1] {
			case "fn", "cfn":
				kind = "fn"
			case "ob", "cob":
				kind = "ob"
			}
			key := kind + m[2]
			if m[3] != "" {
				names[key] = m[3]
			}
			if m[1] == "fn" {
				fn = names[key]
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(costs) == 0 {
		return nil, errors.New(path + ": no costs (was instrumentation on?)")
	}
	return costs, nil
}

// categories assign a function to where its cost belongs; the first that
// matches wins.
var categories = []struct {
	name string
	re   *regexp.Regexp
}{
	{"stack growth", regexp.MustCompile(`^runtime\.(step|pcvalue|\(\*moduledata\)\.textAddr|adjust|\(\*stkframe\)|findfunc|\(\*unwinder\)|funcMaxSPDelta|copystack|pcdatavalue|newstack|morestack|stackalloc|stackfree|stackcache|funcspdelta|funcdata|readvarint|fillstack|stackpool|syncadjustsudogs|\(\*_func\)|findmoduledatap|funcInfo)`)},
	{"GC", regexp.MustCompile(`^runtime\.(scan|tryDeferToSpanScan|findObject|greyobject|gcDrain|gcMark|markBits|typePointers|extractHeapBits|wbBuf|\(\*gcWork\)|spanOf|heapBitsForAddr|\(\*mspan\)\.(typePointers|heapBits|markBits|base|objIndex|isFree)|gcAssist|sweep|\(\*sweepLocked\)|\(\*mheap\)|bgsweep|gcBgMarkWorker|markroot|shade|\(\*gcBits\)|spanInlineMarkBits|\(\*spanInlineMarkBits\)|\(\*spanQueue\)|scanSpan|\(\*mcentral\)|\(\*mcache\)\.(refill|releaseAll)|wbBufFlush|bulkBarrier|gcWriteBarrier|\(\*pageAlloc\)|\(\*pallocBits\))`)},
	{"malloc", regexp.MustCompile(`^runtime\.(mallocgc|newobject|makeslice|growslice|nextFreeFast|\(\*mspan\)\.writeHeapBits|heapSetType|memclrNoHeapPointers|makemap|makechan|rawstring|slicebytetostring|concatstring|newarray|\(\*mcache\)\.nextFree|roundupsize|deductAssistCredit)`)},
	{"Thrift reading (wire)", regexp.MustCompile(`hms-proxy/wire\.`)},
	{"router", regexp.MustCompile(`hms-proxy/router`)},
	{"audit", regexp.MustCompile(`hms-proxy/audit\.|^strconv\.|^unicode/utf8\.DecodeRune`)},
	{"metrics", regexp.MustCompile(`prometheus|hms-proxy/monitoring|^unicode/utf8\.ValidString`)},
	{"regexp", regexp.MustCompile(`^regexp`)},
	{"timers, clock", regexp.MustCompile(`^runtime\.(\(\*timers\)|\(\*timer\)|modtimer|addtimer|deltimer|nanotime)|^time\.|runtime_pollSetDeadline|^internal/poll\.\(\*FD\)\.SetDeadline|^internal/poll\.setDeadlineImpl|^net\.\(\*conn\)\.SetDeadline`)},
	{"syscalls, net, os", regexp.MustCompile(`^(syscall\.|internal/poll\.|net\.|os\.|internal/syscall|internal/runtime/syscall)|^runtime\.(entersyscall|exitsyscall|reentersyscall)`)},
	{"maps, context, sync, memmove", regexp.MustCompile(`^(context\.|sync\.\(|sync/atomic|internal/runtime/maps|aeshash|memeqbody|indexbytebody|indexbody|cmpbody|runtime\.(map|memmove|memequal|memhash|strhash|cmpstring|efaceeq|ifaceeq|assertE2I|typeAssert|getitab))`)},
	{"scheduler, netpoll, runtime locks", regexp.MustCompile(`^runtime\.|^internal/runtime/atomic|^sync\.runtime_|^internal/poll\.runtime_`)},
}

// Category is where fn's cost belongs.
func Category(fn string) string {
	for _, c := range categories {
		if c.re.MatchString(fn) {
			return c.name
		}
	}
	return "other"
}

// Markdown writes the results as a table (one row per case, the categories
// as columns) and each case's costliest functions.
func Markdown(w io.Writer, rs []Result, opt Options) {
	var cats []string
	for _, c := range categories {
		cats = append(cats, c.name)
	}
	cats = append(cats, "other")
	fmt.Fprintf(w, "Instructions per call of the process under test (callgrind, GOGC=%s, %d measured calls per case after %d\n", opt.GOGC, opt.Calls, opt.Calls/2)
	fmt.Fprintf(w, "warm-up calls; instant backend with synthetic replies; audit on). Categories sum the self cost of the functions\n")
	fmt.Fprintf(w, "they match (bench/instr).\n\n")
	if len(opt.Set) > 0 {
		keys := make([]string, 0, len(opt.Set))
		for k := range opt.Set {
			keys = append(keys, k+"="+opt.Set[k])
		}
		sort.Strings(keys)
		fmt.Fprintf(w, "The proxy's configuration also sets %s.\n\n", strings.Join(keys, ", "))
	}
	fmt.Fprint(w, "| Case | total |")
	for _, c := range cats {
		fmt.Fprintf(w, " %s |", c)
	}
	fmt.Fprint(w, "\n|---|---:|")
	for range cats {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w)
	for _, r := range rs {
		if r.Err != "" {
			fmt.Fprintf(w, "| %s | failed: %s |\n", r.Case, strings.ReplaceAll(r.Err, "|", "/"))
			continue
		}
		fmt.Fprintf(w, "| %s | %.0f |", r.Case, r.PerCall)
		for _, c := range cats {
			fmt.Fprintf(w, " %.0f |", r.Categories[c])
		}
		fmt.Fprintln(w)
	}
	for _, r := range rs {
		if r.Err != "" {
			continue
		}
		fmt.Fprintf(w, "\n%s (%s), costliest functions per call:\n\n", r.Case, r.File)
		for _, f := range r.Top[:min(len(r.Top), 12)] {
			fmt.Fprintf(w, "    %8.0f  %s\n", f.Cost, f.Name)
		}
	}
	fmt.Fprintln(w)
}
