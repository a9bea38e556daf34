// Package report holds the benchmark's result model and renders it as JSON,
// a Markdown page and an SVG chart (drawn by hand; no dependencies).
package report

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"time"
)

// Quantile returns the nearest-rank q-quantile (0 < q <= 1) of sorted values.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

// Setup describes one way of reaching a metastore.
type Setup struct {
	Key     string `json:"key"`
	Title   string `json:"title"`
	Path    string `json:"path"`            // what sits between client and backend
	Process string `json:"meter,omitempty"` // process whose CPU and memory are attributed to the setup
}

// Cell is one (workload, setup, concurrency) measurement, pooled over its
// interleaved rounds.
type Cell struct {
	Workload    string  `json:"workload"`
	Setup       string  `json:"setup"`
	Concurrency int     `json:"concurrency"`
	Rounds      int     `json:"rounds"`
	Ops         int     `json:"ops"`
	RPCsPerOp   int     `json:"rpcs_per_op"`
	Errors      int     `json:"errors"`
	FirstError  string  `json:"first_error,omitempty"`
	WallS       float64 `json:"wall_s"`
	OpsPerS     float64 `json:"throughput_ops_per_s"`
	P50ms       float64 `json:"p50_ms"`
	P90ms       float64 `json:"p90_ms"`
	P99ms       float64 `json:"p99_ms"`
	MeanMs      float64 `json:"mean_ms"`
	MaxMs       float64 `json:"max_ms"`
	// CPU of the setup's meter process (proxy or forwarder) per RPC, from
	// /proc/<pid>/stat utime+stime around every slice (10 ms ticks).
	CPUusPerCall float64 `json:"cpu_us_per_call,omitempty"`
	CPUTicks     int64   `json:"cpu_ticks,omitempty"`
	RSSMaxKiB    int64   `json:"meter_rss_max_kib,omitempty"`
	Skipped      string  `json:"skipped,omitempty"`

	Lat []time.Duration `json:"-"`
}

// Finish computes the statistics from the pooled latencies.
func (c *Cell) Finish(wall time.Duration) {
	sort.Slice(c.Lat, func(i, j int) bool { return c.Lat[i] < c.Lat[j] })
	c.Ops = len(c.Lat)
	c.WallS = round(wall.Seconds(), 3)
	if wall > 0 {
		c.OpsPerS = round(float64(c.Ops)/wall.Seconds(), 1)
	}
	ms := func(d time.Duration) float64 { return round(float64(d)/1e6, 3) }
	c.P50ms, c.P90ms, c.P99ms = ms(Quantile(c.Lat, .5)), ms(Quantile(c.Lat, .9)), ms(Quantile(c.Lat, .99))
	if c.Ops > 0 {
		var sum time.Duration
		for _, d := range c.Lat {
			sum += d
		}
		c.MeanMs = ms(sum / time.Duration(c.Ops))
		c.MaxMs = ms(c.Lat[c.Ops-1])
	}
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// Ratio compares the proxy with direct access to the same real metastore.
type Ratio struct {
	Workload    string  `json:"workload"`
	Concurrency int     `json:"concurrency"`
	P50         float64 `json:"p50_ratio"`
	P99         float64 `json:"p99_ratio"`
	Throughput  float64 `json:"throughput_ratio"`
	MeetsTarget *bool   `json:"p50_meets_1_05,omitempty"`
	// FwdP50 is the TCP forwarder's p50 over direct on the same metastore:
	// what any extra hop costs this call on this machine.
	FwdP50 float64 `json:"forwarder_p50_ratio,omitempty"`
}

// Overhead compares the proxy and the forwarder in front of the instant
// backend, both against direct access to it.
type Overhead struct {
	Workload         string  `json:"workload"`
	Concurrency      int     `json:"concurrency"`
	Proxy            string  `json:"proxy_setup"`
	AddedP50ProxyMs  float64 `json:"added_p50_proxy_ms"`
	AddedP50FwdMs    float64 `json:"added_p50_forwarder_ms"`
	AddedP50Ratio    float64 `json:"added_p50_ratio"`
	AddedP99ProxyMs  float64 `json:"added_p99_proxy_ms"`
	AddedP99FwdMs    float64 `json:"added_p99_forwarder_ms"`
	CPUProxyUs       float64 `json:"cpu_us_per_call_proxy"`
	CPUFwdUs         float64 `json:"cpu_us_per_call_forwarder"`
	CPURatio         float64 `json:"cpu_ratio"`
	RSSProxyKiB      int64   `json:"rss_max_kib_proxy"`
	RSSFwdKiB        int64   `json:"rss_max_kib_forwarder"`
	ThroughputProxy  float64 `json:"throughput_ops_per_s_proxy"`
	ThroughputFwd    float64 `json:"throughput_ops_per_s_forwarder"`
	ThroughputDirect float64 `json:"throughput_ops_per_s_direct"`
}

// MemPoint is the proxy's footprint with n idle client connections.
type MemPoint struct {
	Conns      int   `json:"idle_connections"`
	RSSKiB     int64 `json:"rss_kib"`
	Goroutines int   `json:"go_goroutines"`
}

// Alloc is the proxy's own heap allocation per call of one workload, measured
// in a helper process that runs the proxy in-process (app).
type Alloc struct {
	Workload        string  `json:"workload"`
	Ops             int     `json:"ops"`
	ProxyAllocsOp   float64 `json:"proxy_allocs_per_op"`
	ProxyBytesOp    float64 `json:"proxy_bytes_per_op"`
	LoadgenAllocsOp float64 `json:"loadgen_and_backend_allocs_per_op"`
	CPUProfile      string  `json:"cpu_profile,omitempty"`
	AllocProfile    string  `json:"alloc_profile,omitempty"`
	CPUTop          string  `json:"cpu_top,omitempty"`
	AllocTop        string  `json:"alloc_top,omitempty"`
}

// Target is one goal of the issue with the measured value.
type Target struct {
	Goal     string `json:"goal"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

// Meta describes the run.
type Meta struct {
	Started     time.Time  `json:"started"`
	DurationS   float64    `json:"duration_s"`
	GitCommit   string     `json:"git_commit"`
	Tree        string     `json:"proxy_sources"` // clean, or the uncommitted files of the proxy that were built`
	GoVersion   string     `json:"go_version"`
	CPUs        int        `json:"cpus"`
	CPUModel    string     `json:"cpu_model"`
	Kernel      string     `json:"kernel"`
	LoadBefore  string     `json:"loadavg_before"`
	LoadAfter   string     `json:"loadavg_after"`
	Hive        string     `json:"hive"`
	MetastoreJV string     `json:"metastore_jvm_opts"`
	Quick       bool       `json:"quick"`
	Peers       []PeerInfo `json:"peers,omitempty"`      // the peer proxies that ran
	ListCache   string     `json:"list_cache,omitempty"` // whether this build's proxy serves the database list cache
}

// PeerInfo is one peer proxy of the run (a JVM program measured in the same
// rounds as hms-proxy).
type PeerInfo struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	JVM     string   `json:"jvm_opts"`
	Setups  []string `json:"setups"`
}

// FanOut compares one uncached fan-out over N catalogs with N times the same
// request through a 1-catalog hms-proxy, and with the peers' fan-out over N
// catalogs, in proxy CPU per client call (µs; 0: not measured).
type FanOut struct {
	Workload    string  `json:"workload"`
	Group       string  `json:"backend"` // "hive" (real metastores) or "instant"
	Catalogs    int     `json:"catalogs"`
	Concurrency int     `json:"concurrency"`
	Single      float64 `json:"cpu_us_single_catalog"`
	Proxy       float64 `json:"cpu_us_proxy"`
	PerN        float64 `json:"proxy_over_n_single"` // Proxy / (Catalogs x Single): the goal is <= 1.3
	Java        float64 `json:"cpu_us_java_proxy,omitempty"`
	ProxyToJava float64 `json:"proxy_over_java,omitempty"` // the goal is < 1
	Waggle      float64 `json:"cpu_us_waggle_dance,omitempty"`
}

// Results is everything one run produced.
type Results struct {
	Meta      Meta       `json:"meta"`
	Setups    []Setup    `json:"setups"`
	Cells     []*Cell    `json:"cells"`
	Ratios    []Ratio    `json:"proxy_vs_direct_hive"`
	Overheads []Overhead `json:"proxy_vs_forwarder_instant"`
	FanOuts   []FanOut   `json:"fanout_vs_single"`
	Memory    []MemPoint `json:"memory_probe"`
	Allocs    []Alloc    `json:"allocations"`
	GoBench   []string   `json:"go_benchmark,omitempty"`
	Targets   []Target   `json:"targets"`
	Phases    []Phase    `json:"phases"`
	Notes     []string   `json:"notes"`
}

// Phase is how long a part of the run took.
type Phase struct {
	Name string  `json:"name"`
	S    float64 `json:"seconds"`
}

// Cell finds a measured cell.
func (r *Results) Cell(w, setup string, conc int) *Cell {
	for _, c := range r.Cells {
		if c.Workload == w && c.Setup == setup && c.Concurrency == conc {
			return c
		}
	}
	return nil
}

// WriteJSON writes results.json.
func (r *Results) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func f2(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}
