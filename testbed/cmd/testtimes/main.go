// Command testtimes reads `go test -json` on stdin and tells where a test run's time went, without hiding what a
// plain `go test` run shows. testbed/bin/test.sh pipes the whole suite through it.
//
// On stdout it prints what `go test` without -v prints: every package's ok/FAIL/skip line, everything a package
// prints outside its tests (TestMain), and the whole output of a failed test; a passing test's output is dropped
// as without -v. Lines that are not JSON (a build error, say) pass through unchanged.
//
// With -log it writes the same text to a file (the per-package lines test.sh's summary reads), with -json the raw
// event stream (nothing lost: every test's output), with -times one line per test and per package:
//
//	seconds<TAB>result<TAB>package<TAB>test
//
// where a package's own line has test "-" (its wall time, TestMain's start and stop included) and a subtest's test
// is "Parent/sub". With -report it writes the slowest packages and the slowest top-level tests, and for each package
// the time spent outside its tests (TestMain: metastores, clusters, clients started once for the package).
//
//	go test -json ./... | go run ./testbed/cmd/testtimes -log L -json J -times T -report R
//	go run ./testbed/cmd/testtimes -from T [-n 20]    # print the report of an earlier run's times file
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent, plus the build-output form of go 1.24+).
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Elapsed    float64
	Output     string
}

// timing is one finished test or package.
type timing struct {
	Seconds float64
	Result  string // pass, fail, skip
	Package string
	Test    string // "-" for the package itself
}

func main() {
	logPath := flag.String("log", "", "write the plain output here too")
	jsonPath := flag.String("json", "", "write the raw go test -json stream here")
	timesPath := flag.String("times", "", "write per-test and per-package durations here (TSV)")
	reportPath := flag.String("report", "", "write the slowest packages and tests here")
	from := flag.String("from", "", "print the report of an earlier run's times file and exit")
	top := flag.Int("n", 16, "how many packages and tests the report lists")
	flag.Parse()
	if *from != "" {
		ts, err := readTimes(*from)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testtimes:", err)
			os.Exit(1)
		}
		report(os.Stdout, ts, *top)
		return
	}
	out := io.Writer(os.Stdout)
	var files []*os.File
	create := func(p string) *os.File {
		f, err := os.Create(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testtimes:", err)
			os.Exit(1)
		}
		files = append(files, f)
		return f
	}
	if *logPath != "" {
		out = io.MultiWriter(os.Stdout, create(*logPath))
	}
	var raw io.Writer = io.Discard
	if *jsonPath != "" {
		raw = create(*jsonPath)
	}
	ts, failed := filter(os.Stdin, out, raw)
	if *timesPath != "" {
		writeTimes(create(*timesPath), ts)
	}
	if *reportPath != "" {
		w := create(*reportPath)
		report(w, ts, *top)
		failures(w, failed)
	}
	for _, f := range files {
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "testtimes:", err)
		}
	}
}

// failure is a failed test and its own output.
type failure struct {
	Package, Test string
	Output        []string
}

// filter copies the stream to raw, prints the plain output to out and returns every finished test and package,
// and the failed tests with their output.
// Two packages run at once and -json streams their events interleaved; a plain run prints each package's output as
// one block, so each package's output (TestMain's lines, its failed tests) is held and printed when it ends.
func filter(in io.Reader, out, raw io.Writer) ([]timing, []failure) {
	var ts []timing
	var failed []failure
	held := map[string][]string{}  // package + "\x00" + test -> output of a running test
	block := map[string][]string{} // package -> what the package's block prints so far
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(raw, line)
		var e event
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
			fmt.Fprintln(out, line)
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch e.Action {
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "output":
			switch {
			case e.Test == "" && e.Output == "PASS\n":
				// a passing binary's last line, printed only with -v
			case e.Test == "":
				if strings.HasPrefix(e.Output, "FAIL") {
					unfinished(block, held, e.Package)
				}
				block[e.Package] = append(block[e.Package], e.Output)
			case framing(e.Output):
				// -json runs tests verbosely; these lines are not in a plain run's output
			default:
				held[key] = append(held[key], e.Output)
			}
		case "pass", "fail", "skip":
			if e.Test == "" {
				unfinished(block, held, e.Package)
				if e.Action == "fail" && !slices.ContainsFunc(failed, func(f failure) bool { return f.Package == e.Package }) {
					failed = append(failed, failure{e.Package, "-", died(block[e.Package])})
				}
				for _, o := range block[e.Package] {
					fmt.Fprint(out, o)
				}
				delete(block, e.Package)
			} else if e.Action == "fail" {
				block[e.Package] = append(block[e.Package], held[key]...)
				failed = append(failed, failure{e.Package, e.Test, held[key]})
			}
			delete(held, key)
			test := e.Test
			if test == "" {
				test = "-"
			}
			ts = append(ts, timing{e.Elapsed, e.Action, e.Package, test})
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "testtimes: reading go test -json:", err)
	}
	// The stream ended before some package did (go test was killed): print what there is.
	var pkgs []string
	for p := range block {
		pkgs = append(pkgs, p)
	}
	for p := range held {
		pkgs = append(pkgs, p[:strings.IndexByte(p, 0)])
	}
	sort.Strings(pkgs)
	for _, p := range slices.Compact(pkgs) {
		unfinished(block, held, p)
		for _, o := range block[p] {
			fmt.Fprint(out, o)
		}
	}
	return ts, failed
}

// unfinished moves the output of pkg's tests that never finished into its block: a binary that panicked or hit
// -timeout reports no end for its running tests, and their output is all there is to go on.
func unfinished(block, held map[string][]string, pkg string) {
	var keys []string
	for k := range held {
		if strings.HasPrefix(k, pkg+"\x00") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		block[pkg] = append(block[pkg], held[k]...)
		delete(held, k)
	}
}

// framing tells the lines a verbose run adds around each test: a plain run prints none of them for a passing test,
// and a failing test's own "--- FAIL" line is kept (it is not framing).
func framing(o string) bool {
	s := strings.TrimLeft(o, " ")
	for _, p := range []string{"=== RUN ", "=== PAUSE ", "=== CONT ", "=== NAME ", "--- PASS: ", "--- SKIP: "} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func writeTimes(w io.Writer, ts []timing) {
	for _, t := range ts {
		fmt.Fprintf(w, "%.2f\t%s\t%s\t%s\n", t.Seconds, t.Result, t.Package, t.Test)
	}
}

func readTimes(path string) ([]timing, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ts []timing
	for n, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("%s:%d: want 4 tab-separated fields, got %q", path, n+1, line)
		}
		s, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: seconds %q: %v", path, n+1, f[0], err)
		}
		ts = append(ts, timing{s, f[1], f[2], f[3]})
	}
	return ts, nil
}

// report lists the slowest packages (with the time outside their top-level tests), and the slowest top-level tests
// and subtests, each with its package.
func report(w io.Writer, ts []timing, top int) {
	type pkg struct {
		timing
		tests float64 // the top-level tests' summed time
	}
	pkgs := map[string]*pkg{}
	var tests, subs []timing
	for _, t := range ts {
		switch {
		case t.Test == "-":
			pkgs[t.Package] = &pkg{timing: t}
		case strings.Contains(t.Test, "/"):
			subs = append(subs, t)
		default:
			tests = append(tests, t)
		}
	}
	for _, t := range tests {
		if p := pkgs[t.Package]; p != nil {
			p.tests += t.Seconds
		}
	}
	list := make([]*pkg, 0, len(pkgs))
	var sum float64
	for _, p := range pkgs {
		list = append(list, p)
		sum += p.Seconds
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Seconds > list[j].Seconds })
	fmt.Fprintf(w, "---- slowest packages (wall; tests: top-level tests summed; outside: TestMain's set-up and stop) ----\n")
	for i, p := range list {
		if i == top {
			break
		}
		outside := p.Seconds - p.tests
		if outside < 0 {
			outside = 0 // parallel tests overlap: their sum is more than the wall time
		}
		fmt.Fprintf(w, "  %8.1fs %-4s %-50s tests %7.1fs  outside %6.1fs\n", p.Seconds, p.Result, short(p.Package), p.tests, outside)
	}
	fmt.Fprintf(w, "  %8.1fs summed over %d packages\n", sum, len(list))
	for _, l := range []struct {
		title string
		ts    []timing
	}{{"slowest tests", tests}, {"slowest subtests", subs}} {
		sort.SliceStable(l.ts, func(i, j int) bool { return l.ts[i].Seconds > l.ts[j].Seconds })
		fmt.Fprintf(w, "---- %s ----\n", l.title)
		for i, t := range l.ts {
			if i == top {
				break
			}
			fmt.Fprintf(w, "  %8.1fs %-4s %s %s\n", t.Seconds, t.Result, short(t.Package), t.Test)
		}
	}
}

// died is what a package that failed with no failed test printed from its panic on (a -timeout or a crash kills
// the binary before its running tests report an end): the panic and the running tests it names come first.
func died(block []string) []string {
	for i, o := range block {
		if strings.HasPrefix(o, "panic: ") {
			return block[i:]
		}
	}
	return block
}

// failureLines is how many of a failed test's last lines the closing summary repeats.
const failureLines = 25

// failures closes the report with each failed test's last lines, so that the end of a long CI log, which is often
// all a reader gets, says what failed and why. Records a test dumps as JSON (a proxy's audit trail on failure) are
// left out here: they bury the assertion's own message, and the whole output is in the log above.
func failures(w io.Writer, failed []failure) {
	if len(failed) == 0 {
		return
	}
	fmt.Fprintf(w, "---- failed tests (each one's last %d lines without JSON records; the whole output is above) ----\n", failureLines)
	for _, f := range failed {
		var lines []string
		for _, o := range f.Output {
			if t := strings.TrimSpace(o); t != "" && !strings.HasPrefix(t, "{") && !strings.HasPrefix(t, "--- FAIL") {
				lines = append(lines, strings.TrimRight(o, "\n"))
			}
		}
		switch {
		case len(lines) <= failureLines:
		case f.Test == "-":
			lines = lines[:failureLines] // a binary that died: its panic and the tests it was running
		default:
			lines = lines[len(lines)-failureLines:]
		}
		if len(lines) == 0 && slices.ContainsFunc(failed, func(o failure) bool {
			return o.Package == f.Package && strings.HasPrefix(o.Test, f.Test+"/")
		}) {
			continue // a parent that failed through its subtests, listed below it
		}
		fmt.Fprintf(w, "FAIL %s %s\n", short(f.Package), f.Test)
		for _, l := range lines {
			if len(l) > 400 {
				l = l[:400] + " …"
			}
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
}

// short drops the module path from a package path.
func short(p string) string {
	return strings.TrimPrefix(p, "github.com/hms-proxy/hms-proxy/")
}
