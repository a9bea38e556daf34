package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The Ranger phase (`hms-bench ranger`, bench/rangerbench): many distinct
// users read through hms-proxy with Ranger enforcing per-user policies, with
// the shared caches on and off, beside the same calls straight to the
// metastore (no filtering at all). Its results are ranger.json and
// ranger.md, rendered here.

// Ranger setup names, in report order.
const (
	RangerDirect   = "direct (no filtering)"
	RangerCached   = "hms-proxy, Ranger + shared caches"
	RangerUncached = "hms-proxy, Ranger, no cache"
)

// RangerSetups are the setups in report order.
var RangerSetups = []string{RangerDirect, RangerCached, RangerUncached}

// RangerSample is one measured slice of one workload through one setup:
// the latencies of its successful calls, the CPU each process used while
// it ran, and how many calls reached the metastore.
type RangerSample struct {
	Latencies    []time.Duration
	Errors       int
	FirstErr     string
	ProxyCPU     time.Duration // 0 for direct
	MetastoreCPU time.Duration
	BackendCalls int // calls the metastore received (counted on the way in)
}

// RangerAcc adds up the samples of one cell over every round.
type RangerAcc struct {
	lat                  []time.Duration
	errors               int
	first                string
	proxyCPU, metaCPU    time.Duration
	backendCalls, slices int
}

// Add adds one slice.
func (a *RangerAcc) Add(s RangerSample) {
	a.lat = append(a.lat, s.Latencies...)
	a.errors += s.Errors
	if a.first == "" {
		a.first = s.FirstErr
	}
	a.proxyCPU += s.ProxyCPU
	a.metaCPU += s.MetastoreCPU
	a.backendCalls += s.BackendCalls
	a.slices++
}

// RangerCell is one workload through one setup, over every round. CPU is
// per successful client call, in microseconds.
type RangerCell struct {
	Workload       string  `json:"workload"`
	Setup          string  `json:"setup"`
	Calls          int     `json:"calls"`
	Errors         int     `json:"errors"`
	FirstError     string  `json:"firstError,omitempty"`
	ProxyCPUUs     float64 `json:"proxyCpuUs"`
	MetastoreCPUUs float64 `json:"metastoreCpuUs"`
	TotalCPUUs     float64 `json:"totalCpuUs"`
	P50Ms          float64 `json:"p50Ms"`
	P99Ms          float64 `json:"p99Ms"`
	// BackendPer1000 is metastore calls per 1,000 client calls.
	BackendPer1000 float64 `json:"backendPer1000"`
}

// Cell summarizes the accumulated samples.
func (a *RangerAcc) Cell(workload, setup string) RangerCell {
	lat := slices.Clone(a.lat)
	slices.Sort(lat)
	c := RangerCell{Workload: workload, Setup: setup, Calls: len(lat), Errors: a.errors, FirstError: a.first}
	if n := len(lat); n > 0 {
		per := func(d time.Duration) float64 { return round(float64(d.Nanoseconds())/1e3/float64(n), 1) }
		c.ProxyCPUUs, c.MetastoreCPUUs = per(a.proxyCPU), per(a.metaCPU)
		c.TotalCPUUs = per(a.proxyCPU + a.metaCPU)
		c.P50Ms = round(float64(Quantile(lat, 0.5).Microseconds())/1000, 3)
		c.P99Ms = round(float64(Quantile(lat, 0.99).Microseconds())/1000, 3)
		c.BackendPer1000 = round(float64(a.backendCalls)*1000/float64(n), 1)
	}
	return c
}

// RangerResults are the phase's results.
type RangerResults struct {
	Start      string  `json:"start"`
	DurationS  float64 `json:"durationS"`
	Commit     string  `json:"commit,omitempty"`
	LoadBefore string  `json:"loadBefore"`
	LoadAfter  string  `json:"loadAfter"`
	// What the users see: Users users in Groups groups, each group's
	// policies give it its own database and a share of the common one.
	Users     int      `json:"users"`
	Groups    int      `json:"groups"`
	World     string   `json:"world"`
	Workloads []string `json:"workloads"`
	Rounds    int      `json:"rounds"`
	SliceS    float64  `json:"sliceS"`
	// MetastoreJVM is HMS_PROXY_METASTORE_JVM_OPTS ("" for the test bed's default).
	MetastoreJVM string       `json:"metastoreJvm"`
	Cells        []RangerCell `json:"cells"`
	Targets      []Target     `json:"targets"`
	Notes        []string     `json:"notes,omitempty"`
}

// Cell returns the cell of workload w through setup s (nil if absent).
func (r *RangerResults) Cell(w, s string) *RangerCell {
	for i := range r.Cells {
		if r.Cells[i].Workload == w && r.Cells[i].Setup == s {
			return &r.Cells[i]
		}
	}
	return nil
}

// RangerMaxBackendPer1000 is the target's bound on metastore calls per 1,000
// client calls through the shared caches: each cache entry is filled once
// per expiry for every user, so over a measured run almost no call reaches
// the metastore (the bound leaves room for one fill per entry in a short
// quick run).
const RangerMaxBackendPer1000 = 10

// SetTargets states, per workload, the two goals of issue 23 (a Ranger
// filtered shared cache against uncached direct access): backend calls per
// 1,000 client calls through the cache at most RangerMaxBackendPer1000, and
// the proxy's CPU per call with Ranger and the cache at most what the same
// call costs straight to the metastore (the metastore's CPU per call
// direct, the whole cost of that path on the server side).
func (r *RangerResults) SetTargets() {
	r.Targets = nil
	for _, w := range r.Workloads {
		c, d := r.Cell(w, RangerCached), r.Cell(w, RangerDirect)
		if c == nil || d == nil || c.Calls == 0 || d.Calls == 0 {
			continue
		}
		r.Targets = append(r.Targets,
			Target{Goal: fmt.Sprintf("%s, %d users: metastore calls per 1,000 client calls, Ranger + shared caches ≤ %d", w, r.Users, RangerMaxBackendPer1000),
				Measured: fmt.Sprintf("%.1f (direct: %.0f)", c.BackendPer1000, d.BackendPer1000), Met: c.BackendPer1000 <= RangerMaxBackendPer1000},
			Target{Goal: fmt.Sprintf("%s, %d users: proxy CPU per call with Ranger + shared caches ≤ direct's CPU per call (metastore)", w, r.Users),
				Measured: fmt.Sprintf("%.0f µs vs %.0f µs (%.2f×)", c.ProxyCPUUs, d.TotalCPUUs, c.ProxyCPUUs/d.TotalCPUUs), Met: c.ProxyCPUUs <= d.TotalCPUUs})
	}
}

// Markdown renders the phase's tables.
func (r *RangerResults) Markdown() string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# Ranger with shared caches: %d users\n\n", r.Users)
	commit := ""
	if r.Commit != "" {
		commit = " at commit " + r.Commit
	}
	jvm := r.MetastoreJVM
	if jvm == "" {
		jvm = "the test bed's default"
	}
	p("Run %s%s, %.0f s; load average before / after: %s / %s. %d interleaved rounds of %.1f s per workload and setup, the setup order rotated every round. Metastore JVM options: `%s`.\n\n",
		r.Start, commit, r.DurationS, r.LoadBefore, r.LoadAfter, r.Rounds, r.SliceS, jvm)
	p("%d users (one connection each, identified by `set_ugi`) in %d groups; %s\n\n", r.Users, r.Groups, r.World)
	targetsTable(p, r.Targets)
	p("\n## Per call\n\nCPU per successful client call from /proc of each process (the proxy; the metastore JVM); metastore calls counted on their way in.\n\n")
	p("| workload | setup | proxy CPU µs | metastore CPU µs | total CPU µs | vs direct | p50 ms | p99 ms | metastore calls / 1,000 | calls | errors |\n")
	p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, w := range r.Workloads {
		d := r.Cell(w, RangerDirect)
		for _, s := range RangerSetups {
			c := r.Cell(w, s)
			if c == nil {
				continue
			}
			vs := "-"
			if d != nil && d.TotalCPUUs > 0 && c.Calls > 0 {
				vs = fmt.Sprintf("%.2f×", c.TotalCPUUs/d.TotalCPUUs)
			}
			proxy := fmt.Sprintf("%.0f", c.ProxyCPUUs)
			if s == RangerDirect {
				proxy = "-"
			}
			p("| %s | %s | %s | %.0f | %.0f | %s | %.3f | %.3f | %.1f | %d | %d |\n", w, s, proxy, c.MetastoreCPUUs, c.TotalCPUUs, vs,
				c.P50Ms, c.P99Ms, c.BackendPer1000, c.Calls, c.Errors)
		}
	}
	for _, c := range r.Cells {
		if c.FirstError != "" {
			p("\n- %s through %s: first error: %s", c.Workload, c.Setup, c.FirstError)
		}
	}
	for _, n := range r.Notes {
		p("\n- %s", n)
	}
	p("\n")
	return b.String()
}

// Write writes ranger.json and ranger.md under out.
func (r *RangerResults) Write(out string) error { return WritePhase(out, "ranger", r, r.Markdown()) }

// WritePhase writes a phase's results under out: v as <stem>.json and md
// as <stem>.md.
func WritePhase(out, stem string, v any, md string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, stem+".json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, stem+".md"), []byte(md), 0o644)
}

// LoadAvg is the machine's 1, 5 and 15 minute load averages ("unknown"
// when /proc/loadavg cannot be read).
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
