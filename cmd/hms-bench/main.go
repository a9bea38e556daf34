// Command hms-bench is the load generator and driver behind `make bench`.
//
//	hms-bench run [-out bench/results] [-work DIR] [-bin DIR] [-budget 11m] [-quick] [-gobench FILE] [-no-peer]
//	              [-java-proxy-jar FILE]
//	    start the real metastores, the instant backend (load fixture), the TCP forwarder, the
//	    hms-proxy processes and the peers (Waggle Dance; the Java HMS Proxy from a prebuilt jar),
//	    measure every workload on every setup, write results.json, results.md and latency.svg
//	    under -out
//	hms-bench profile -instant ADDR -db NAME -workload W -out DIR [-dur 4s] [-conc 4] [-catalogs 1]
//	                  [-tag NAME] [-contention]
//	    run hms-proxy in-process in front of the instant backend and write CPU and allocation
//	    profiles of workload W (used by run); -contention adds mutex and block profiles
//	hms-bench replicas [-out bench/results] [-work DIR] [-bin DIR] [-budget 3m] [-quick]
//	    the scale-out phase: throughput through HAProxy over 1, 2 and 3 replicas
//	    (bench/replicas), written to replicas.json and replicas.md under -out
//	hms-bench ranger [-out bench/results] [-work DIR] [-bin DIR] [-budget 3m] [-quick] [-policy-template FILE]
//	    the Ranger phase: 100 users through hms-proxy with Ranger and the shared caches, with Ranger and no
//	    cache, and straight to the metastore (bench/rangerbench), written to ranger.json and ranger.md under -out
//	hms-bench render -out DIR
//	    re-render results.md and latency.svg from DIR/results.json
//	hms-bench instr -bin DIR -out FILE [-work DIR] [-calls 2000] [-gogc off] [-cases W:Ncat:CONN,...] [-set k=v,...]
//	    instructions per call of hms-proxy (and the TCP forwarder) under valgrind's callgrind,
//	    by category (bench/instr): repeatable on a loaded machine
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/hms-proxy/hms-proxy/bench/instr"
	"github.com/hms-proxy/hms-proxy/bench/javaproxy"
	"github.com/hms-proxy/hms-proxy/bench/rangerbench"
	"github.com/hms-proxy/hms-proxy/bench/replicas"
	"github.com/hms-proxy/hms-proxy/bench/report"
	"github.com/hms-proxy/hms-proxy/bench/suite"
)

const usage = `usage:
  hms-bench run [-out DIR] [-work DIR] [-bin DIR] [-budget 11m] [-quick] [-gobench FILE] [-no-peer] [-java-proxy-jar FILE]
  hms-bench profile -instant ADDR -db NAME -workload W -out DIR [-dur 4s] [-conc 4] [-catalogs 1] [-tag NAME] [-contention]
  hms-bench replicas [-out DIR] [-work DIR] [-bin DIR] [-budget 3m] [-quick]
  hms-bench render -out DIR
  hms-bench instr -bin DIR -out FILE [-work DIR] [-calls 2000] [-gogc off] [-cases W:Ncat:CONN,...] [-set k=v,...]
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "run":
		os.Exit(run(os.Args[2:]))
	case "profile":
		os.Exit(profile(os.Args[2:]))
	case "render":
		os.Exit(render(os.Args[2:]))
	case "replicas":
		os.Exit(replicasPhase(os.Args[2:]))
	case "instr":
		os.Exit(instructions(os.Args[2:]))
	case "ranger":
		os.Exit(rangerPhase(os.Args[2:]))
	}
	fmt.Fprint(os.Stderr, usage)
	os.Exit(2)
}

func run(args []string) int {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	out := fs.String("out", "bench/results", "results folder")
	work := fs.String("work", ".cache/bench/work", "scratch folder (configs, logs, recorded replies)")
	bin := fs.String("bin", ".cache/bench/bin", "folder with hms-proxy, hms-instant, tcpfwd and hms-bench")
	budget := fs.Duration("budget", 11*time.Minute, "the whole run, from start to results")
	quick := fs.Bool("quick", false, "short smoke run: fewer and shorter rounds")
	gobench := fs.String("gobench", "", "file with `go test -bench` output to include in the results")
	noPeer := fs.Bool("no-peer", false, "leave out the peers (Waggle Dance, the Java HMS Proxy)")
	javaJar := fs.String("java-proxy-jar", os.Getenv(javaproxy.JarEnv), "the Java HMS Proxy's prebuilt fat jar (default $"+javaproxy.JarEnv+"); empty leaves that peer out")
	_ = fs.Parse(args)
	if *budget < 2*time.Minute {
		fmt.Fprintf(os.Stderr, "hms-bench: -budget %v is too short (at least 2m: the metastores alone take ~20 s to start)\n", *budget)
		return 2
	}
	for _, b := range []string{"hms-proxy", "hms-instant", "tcpfwd", "hms-bench"} {
		if _, err := os.Stat(filepath.Join(*bin, b)); err != nil {
			fmt.Fprintf(os.Stderr, "hms-bench: -bin %s: %v (bench/run.sh builds them)\n", *bin, err)
			return 2
		}
	}
	start := time.Now()
	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, a...))
	}
	res, err := suite.Run(suite.Options{Out: *out, Work: *work, Bin: *bin, Budget: *budget, Quick: *quick, GoBench: *gobench, NoPeer: *noPeer,
		JavaProxyJar: *javaJar, Log: logf})
	if res != nil {
		if werr := write(res, *out); werr != nil {
			fmt.Fprintln(os.Stderr, "hms-bench: writing results:", werr)
			return 1
		}
		logf("results: %s", filepath.Join(*out, "results.md"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hms-bench:", err)
		return 1
	}
	return 0
}

// benchMetastoreJVM is bench/run.sh's default HMS_PROXY_METASTORE_JVM_OPTS.
const benchMetastoreJVM = "-Xms512m -Xmx2g -XX:+UseSerialGC -XX:-UsePerfData"

// phase holds the flags the phases after `run` share (replicas, ranger).
type phase struct {
	fs                     *flag.FlagSet
	out, work, bin, commit *string
	budget                 *time.Duration
	quick                  *bool
	start                  time.Time
}

func newPhase(name string) *phase {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	return &phase{fs: fs, out: fs.String("out", "bench/results", "results folder"),
		work: fs.String("work", ".cache/bench/work", "scratch folder"), bin: fs.String("bin", ".cache/bench/bin", "folder with hms-proxy"),
		budget: fs.Duration("budget", 3*time.Minute, "the whole phase"), quick: fs.Bool("quick", false, "short smoke run"),
		commit: fs.String("commit", "", "commit shown in the results")}
}

// begin parses args and returns the phase's logger. The metastores get
// bench/run.sh's JVM when a phase runs alone: the test bed's small C1-only
// heap thrashes under many connections.
func (p *phase) begin(args []string) func(format string, a ...any) {
	_ = p.fs.Parse(args)
	p.start = time.Now()
	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "[%6.1fs] %s: %s\n", time.Since(p.start).Seconds(), p.fs.Name(), fmt.Sprintf(format, a...))
	}
	if os.Getenv("HMS_PROXY_METASTORE_JVM_OPTS") == "" {
		_ = os.Setenv("HMS_PROXY_METASTORE_JVM_OPTS", benchMetastoreJVM)
		logf("HMS_PROXY_METASTORE_JVM_OPTS unset: using %q (as bench/run.sh)", benchMetastoreJVM)
	}
	return logf
}

func replicasPhase(args []string) int {
	p := newPhase("replicas")
	logf := p.begin(args)
	res, err := replicas.Run(replicas.Options{Binary: filepath.Join(*p.bin, "hms-proxy"), Out: *p.out, Work: *p.work,
		Budget: *p.budget, Quick: *p.quick, Commit: *p.commit, Log: logf})
	if err != nil {
		fmt.Fprintln(os.Stderr, "hms-bench replicas:", err)
		return 1
	}
	logf("results: %s (%.0f s)", filepath.Join(*p.out, "replicas.md"), res.DurationS)
	return 0
}

func rangerPhase(args []string) int {
	p := newPhase("ranger")
	template := p.fs.String("policy-template", "security/ranger/testdata/hms_hive-policies.json",
		"a Ranger ServicePolicies download whose Hive service definition the phase's policies use")
	logf := p.begin(args)
	res, err := rangerbench.Run(rangerbench.Options{Binary: filepath.Join(*p.bin, "hms-proxy"), PolicyTemplate: *template,
		Out: *p.out, Work: *p.work, Budget: *p.budget, Quick: *p.quick, Commit: *p.commit, Log: logf})
	if err != nil {
		fmt.Fprintln(os.Stderr, "hms-bench ranger:", err)
		return 1
	}
	fmt.Print(res.Markdown())
	logf("results: %s (%.0f s)", filepath.Join(*p.out, "ranger.md"), res.DurationS)
	return 0
}

func write(res *report.Results, out string) error {
	if err := res.WriteJSON(filepath.Join(out, "results.json")); err != nil {
		return err
	}
	if err := res.WriteSVG(filepath.Join(out, "latency.svg")); err != nil {
		return err
	}
	return res.WriteMarkdown(filepath.Join(out, "results.md"), "latency.svg")
}

func render(args []string) int {
	fs := flag.NewFlagSet("render", flag.ExitOnError)
	out := fs.String("out", "bench/results", "results folder holding results.json")
	_ = fs.Parse(args)
	b, err := os.ReadFile(filepath.Join(*out, "results.json"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "hms-bench render:", err)
		return 1
	}
	var res report.Results
	if err := json.Unmarshal(b, &res); err != nil {
		fmt.Fprintf(os.Stderr, "hms-bench render: %s/results.json: %v\n", *out, err)
		return 1
	}
	if err := write(&res, *out); err != nil {
		fmt.Fprintln(os.Stderr, "hms-bench render:", err)
		return 1
	}
	return 0
}

func profile(args []string) int {
	runtime.MemProfileRate = suite.MemProfileRate
	fs := flag.NewFlagSet("profile", flag.ExitOnError)
	var a suite.ProfileArgs
	fs.StringVar(&a.Instant, "instant", "", "instant backend HOST:PORT (required)")
	fs.StringVar(&a.DB, "db", "", "database name of the run (required)")
	fs.StringVar(&a.Workload, "workload", "get_partitions", "workload to profile")
	fs.StringVar(&a.Out, "out", "bench/results/profiles", "folder for the .prof files")
	fs.DurationVar(&a.Dur, "dur", 4*time.Second, "how long to drive the workload through the proxy")
	fs.IntVar(&a.Conc, "conc", 4, "client connections")
	fs.IntVar(&a.Catalogs, "catalogs", 1, "catalogs of the proxy, each on the instant backend (fan-out workloads)")
	fs.StringVar(&a.Tag, "tag", "", "file name stem of the profiles (default: the workload)")
	fs.BoolVar(&a.Contention, "contention", false, "also write mutex and block profiles")
	_ = fs.Parse(args)
	if a.Instant == "" || a.DB == "" {
		fmt.Fprintln(os.Stderr, "hms-bench profile: -instant and -db are required")
		return 2
	}
	if err := suite.Profile(a, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hms-bench profile:", err)
		return 1
	}
	return 0
}

func instructions(args []string) int {
	fs := flag.NewFlagSet("instr", flag.ExitOnError)
	bin := fs.String("bin", ".cache/bench/bin", "folder with hms-proxy and tcpfwd")
	out := fs.String("out", "", "Markdown file for the results (default: stdout)")
	work := fs.String("work", ".cache/bench/instr", "folder for the callgrind files, configs and logs")
	calls := fs.Int("calls", 2000, "measured calls per case")
	gogc := fs.String("gogc", "off", "GOGC of the measured process (off: no collection, the steadiest count; 100: the default, GC included)")
	cases := fs.String("cases", "", "comma-separated workload:<N>cat:<connections> or workload:fwd:<connections> (default: get_table at 1, 8, 64 through hms-proxy and the forwarder, get_partitions_by_names, each fan-out over 1, 2, 4 catalogs)")
	set := fs.String("set", "", "comma-separated key=value properties of the measured proxy beyond the defaults (e.g. audit.flush-interval-ms=100)")
	_ = fs.Parse(args)
	opt := instr.Options{Bin: *bin, Work: *work, Calls: *calls, GOGC: *gogc, Cases: instr.DefaultCases(),
		Log: func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }}
	if *set != "" {
		opt.Set = map[string]string{}
		for _, kv := range strings.Split(*set, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || k == "" {
				fmt.Fprintf(os.Stderr, "hms-bench instr: -set %q: want key=value\n", kv)
				return 2
			}
			opt.Set[k] = v
		}
	}
	if *cases != "" {
		opt.Cases = nil
		for _, c := range strings.Split(*cases, ",") {
			cs, err := instr.ParseCase(strings.TrimSpace(c))
			if err != nil {
				fmt.Fprintln(os.Stderr, "hms-bench instr:", err)
				return 2
			}
			opt.Cases = append(opt.Cases, cs)
		}
	}
	res, err := instr.Run(opt)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hms-bench instr:", err)
		return 1
	}
	w := os.Stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "hms-bench instr:", err)
			return 1
		}
		defer f.Close()
		w = f
	}
	instr.Markdown(w, res, opt)
	for _, r := range res {
		if r.Err != "" {
			return 1
		}
	}
	return 0
}
