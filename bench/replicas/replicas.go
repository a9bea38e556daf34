// Package replicas is the benchmark's scale-out phase (`hms-bench
// replicas`, run by `make bench` after the main run): throughput of one
// bounded mixed load through HAProxy over 1, 2 and 3 hms-proxy replicas
// (the real binary, testbed/cluster) in front of the same two real Hive
// 3.1.3 metastores, measured side by side in interleaved rounds, plus one
// replica without the balancer (what the HAProxy hop costs). Results:
// replicas.json and replicas.md.
package replicas

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hms-proxy/hms-proxy/bench/load"
	"github.com/hms-proxy/hms-proxy/bench/report"
	"github.com/hms-proxy/hms-proxy/bench/workload"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/testbed/cluster"
)

// Options of the phase.
type Options struct {
	Binary string // hms-proxy
	Out    string // results folder
	Work   string // scratch folder
	Budget time.Duration
	Quick  bool
	Commit string // shown in the results
	Log    func(format string, args ...any)
}

// Setup names (report order).
const (
	Direct1 = "1 replica, no balancer"
	Bal1    = "HAProxy, 1 replica"
	Bal2    = "HAProxy, 2 replicas"
	Bal3    = "HAProxy, 3 replicas"
)

// Setups in report order.
var Setups = []string{Direct1, Bal1, Bal2, Bal3}

// Cell is one setup at one concurrency, over every round.
type Cell struct {
	Setup       string  `json:"setup"`
	Connections int     `json:"connections"`
	Ops         int     `json:"ops"`
	Errors      int     `json:"errors"`
	FirstError  string  `json:"firstError,omitempty"`
	WallS       float64 `json:"wallS"`
	OpsPerS     float64 `json:"opsPerS"`
	P50Ms       float64 `json:"p50Ms"`
	P99Ms       float64 `json:"p99Ms"`
	// RatioTo1 is OpsPerS over the "HAProxy, 1 replica" cell's.
	RatioTo1 float64 `json:"ratioTo1"`
}

// Results of the phase.
type Results struct {
	Start      string  `json:"start"`
	DurationS  float64 `json:"durationS"`
	Commit     string  `json:"commit,omitempty"`
	LoadBefore string  `json:"loadBefore"`
	LoadAfter  string  `json:"loadAfter"`
	// MetastoreJVM is HMS_PROXY_METASTORE_JVM_OPTS ("" for the test bed's default).
	MetastoreJVM string   `json:"metastoreJvm"`
	Mix          []string `json:"mix"`
	Rounds       int      `json:"rounds"`
	SliceS       float64  `json:"sliceS"`
	Cells        []Cell   `json:"cells"`
	Notes        []string `json:"notes,omitempty"`
}

// mixed is one connection's operation: the next call of the mix, in turn.
type mixed struct {
	ops []load.Op
	i   int
}

func (m *mixed) Do(c *load.Conn) error {
	op := m.ops[m.i%len(m.ops)]
	m.i++
	return op.Do(c)
}

// Run runs the phase and writes its results.
func Run(o Options) (*Results, error) {
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	start := time.Now()
	deadline := start.Add(o.Budget)
	res := &Results{Start: start.UTC().Format(time.RFC3339), Commit: o.Commit, LoadBefore: report.LoadAvg(),
		MetastoreJVM: os.Getenv("HMS_PROXY_METASTORE_JVM_OPTS")}
	ms, err := testbed.StartMetastores(testbed.Hive313, testbed.Hive313)
	if err != nil {
		return nil, fmt.Errorf("starting the real metastores: %w", err)
	}
	defer func() {
		for _, m := range ms {
			_ = m.Stop()
			_ = os.RemoveAll(m.Dir)
		}
	}()
	zk, err := testbed.StartZooKeeper()
	if err != nil {
		return nil, err
	}
	defer func() { _ = zk.Stop(); _ = os.RemoveAll(zk.Dir) }()
	o.Log("metastores and ZooKeeper up (%.0fs)", time.Since(start).Seconds())

	// The same data on both metastores: catalog1's through metastore 1,
	// catalog2's through metastore 2.
	data := workload.NewData(fmt.Sprintf("r%x", time.Now().Unix()&0xffffff))
	for _, m := range ms {
		cl, err := workload.Dial(strings.TrimPrefix(m.URI, "thrift://"), 5*time.Minute)
		if err != nil {
			return nil, err
		}
		err = workload.Prepare(context.Background(), cl, data, nil)
		cl.Close()
		if err != nil {
			return nil, err
		}
	}
	defer func() {
		for _, m := range ms {
			if cl, err := workload.Dial(strings.TrimPrefix(m.URI, "thrift://"), 5*time.Minute); err == nil {
				_ = cl.DropDatabase(context.Background(), data.DB, true, true)
				cl.Close()
			}
		}
	}()
	ext2 := data
	ext2.DB = "catalog2__" + data.DB
	r1, err := workload.Encode(data, nil)
	if err != nil {
		return nil, err
	}
	r2, err := workload.Encode(ext2, nil)
	if err != nil {
		return nil, err
	}
	type call struct {
		name string
		req  []byte
	}
	// Reads an HMS client makes when it plans queries, on both catalogs,
	// and the fan-out a client's SHOW DATABASES makes. Partition reads are
	// left out: concurrent get_partitions_by_names on the test bed's
	// embedded-Derby metastores runs at a few calls per second even
	// without the proxy, so the mix would measure Derby, not the replicas.
	mix := []call{
		{"get_table catalog1", r1.Static[workload.GetTable]},
		{"get_table catalog2", r2.Static[workload.GetTable]},
		{"get_all_tables catalog1", r1.Static[workload.GetAllTables]},
		{"get_table catalog1", r1.Static[workload.GetTable]},
		{"get_all_tables catalog2", r2.Static[workload.GetAllTables]},
		{"get_all_databases (fan-out over both catalogs)", r1.Static[workload.GetAllDatabases]},
	}
	for _, m := range mix {
		res.Mix = append(res.Mix, m.name)
	}
	newOp := func() (load.Op, error) {
		m := &mixed{}
		for _, c := range mix {
			s, err := load.NewStatic(c.req)
			if err != nil {
				return nil, err
			}
			m.ops = append(m.ops, s)
		}
		return m, nil
	}

	dir := filepath.Join(o.Work, "replicas")
	_ = os.RemoveAll(dir)
	cl, err := cluster.Start(cluster.Options{Binary: o.Binary, Dir: dir, Replicas: 3,
		Catalogs:  []cluster.Catalog{{Name: "catalog1", URI: ms[0].URI}, {Name: "catalog2", URI: ms[1].URI}},
		ZooKeeper: zk.Addr, Balancers: []int{1, 2},
		Props: map[string]string{"logging.level": "WARN", "catalog.catalog1.shared-session-pool-size": "64",
			"catalog.catalog2.shared-session-pool-size": "64"}})
	if err != nil {
		return nil, err
	}
	defer cl.Stop()
	addrs := map[string]string{Direct1: cl.Replicas[0].Addr(), Bal1: cl.BalancerAddrs[1], Bal2: cl.BalancerAddrs[2], Bal3: cl.Addr}
	o.Log("3 replicas behind HAProxy up (%.0fs)", time.Since(start).Seconds())

	concs := []int{8, 64}
	rounds, slice := 5, 2500*time.Millisecond
	if o.Quick {
		rounds, slice = 2, time.Second
	}
	// Fit the budget: what is left, less a margin for stopping.
	if left := time.Until(deadline) - 20*time.Second; left > 0 {
		need := time.Duration(rounds*len(concs)*len(Setups)) * (slice + 300*time.Millisecond)
		if need > left {
			rounds = max(1, int(float64(rounds)*float64(left)/float64(need)))
			res.Notes = append(res.Notes, fmt.Sprintf("rounds cut to %d to fit the budget %v", rounds, o.Budget))
		}
	}
	res.Rounds, res.SliceS = rounds, slice.Seconds()
	// Warm up every replica and both metastores (the metastores' JIT) through
	// the 3-replica balancer, until two chunks in a row agree within 10% (at
	// most 12 chunks).
	var prev float64
	for i := 0; i < 12; i++ {
		got, err := measure(addrs[Bal3], 64, 4*time.Second, newOp)
		if err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		rate := float64(len(got.Latencies)) / got.Wall.Seconds()
		o.Log("warm-up chunk %d: %.0f calls/s", i+1, rate)
		if prev > 0 && rate < prev*1.1 && rate > prev*0.9 {
			break
		}
		prev = rate
	}
	for _, k := range concs {
		cells := map[string]*acc{}
		conns := map[string][]*load.Conn{}
		ops := map[string][]load.Op{}
		// Each setup keeps its k connections for every round at k, as HMS
		// clients keep theirs: HAProxy spread them over its replicas when
		// they were opened (round robin).
		for _, s := range Setups {
			cells[s] = &acc{}
			cs, sops, err := dialAll(addrs[s], k, newOp)
			if err != nil {
				closeAll(conns)
				return nil, fmt.Errorf("%s at %d connections: %w", s, k, err)
			}
			conns[s], ops[s] = cs, sops
		}
		for r := 0; r < rounds; r++ {
			order := slices.Clone(Setups)
			for i := 0; i < r%len(order); i++ { // rotate: drift lands on every setup alike
				order = append(order[1:], order[0])
			}
			for _, s := range order {
				got := load.RunSlice(conns[s], ops[s], load.Bounds{Dur: slice, MaxOps: 2_000_000, CallTimeout: 30 * time.Second})
				if got.Errors > 0 {
					closeAll(conns)
					return nil, fmt.Errorf("%s at %d connections: %d calls failed, first: %s", s, k, got.Errors, got.FirstErr)
				}
				cells[s].add(got)
			}
		}
		closeAll(conns)
		var base float64
		for _, s := range Setups {
			c := cells[s].cell(s, k)
			if s == Bal1 {
				base = c.OpsPerS
			}
			res.Cells = append(res.Cells, c)
		}
		for i := range res.Cells {
			if res.Cells[i].Connections == k && base > 0 {
				res.Cells[i].RatioTo1 = round(res.Cells[i].OpsPerS/base, 3)
			}
		}
		o.Log("measured at %d connections", k)
	}
	// How HAProxy spread the last connections (sessions per server).
	if states, err := cl.HAProxy.States(); err == nil {
		var parts []string
		for _, st := range states {
			if st.Backend == "proxies" {
				parts = append(parts, fmt.Sprintf("%s %d", st.Server, st.TotalSessions))
			}
		}
		res.Notes = append(res.Notes, "connections HAProxy sent to each replica of the 3-replica backend: "+strings.Join(parts, ", "))
	}
	res.DurationS = round(time.Since(start).Seconds(), 1)
	res.LoadAfter = report.LoadAvg()
	return res, res.write(o.Out)
}

type acc struct {
	lat         []time.Duration
	errors      int
	first       string
	wall        time.Duration
	opsFinished int
}

func (a *acc) add(r load.Result) {
	a.lat = append(a.lat, r.Latencies...)
	a.errors += r.Errors
	if a.first == "" {
		a.first = r.FirstErr
	}
	a.wall += r.Wall
	a.opsFinished += len(r.Latencies)
}

func (a *acc) cell(setup string, conns int) Cell {
	slices.Sort(a.lat)
	c := Cell{Setup: setup, Connections: conns, Ops: a.opsFinished, Errors: a.errors, FirstError: a.first,
		WallS: round(a.wall.Seconds(), 2)}
	if a.wall > 0 {
		c.OpsPerS = round(float64(a.opsFinished)/a.wall.Seconds(), 1)
	}
	if n := len(a.lat); n > 0 {
		c.P50Ms = round(float64(a.lat[n/2].Microseconds())/1000, 3)
		c.P99Ms = round(float64(a.lat[min(n-1, n*99/100)].Microseconds())/1000, 3)
	}
	return c
}

// dialAll opens n connections to addr, each with its own operation.
func dialAll(addr string, n int, newOp func() (load.Op, error)) ([]*load.Conn, []load.Op, error) {
	cs := make([]*load.Conn, n)
	ops := make([]load.Op, n)
	for i := range cs {
		c, err := load.Dial(addr, 10*time.Second)
		if err != nil {
			closeAll(map[string][]*load.Conn{"": cs})
			return nil, nil, err
		}
		cs[i] = c
		if ops[i], err = newOp(); err != nil {
			closeAll(map[string][]*load.Conn{"": cs})
			return nil, nil, err
		}
	}
	return cs, ops, nil
}

func closeAll(m map[string][]*load.Conn) {
	for _, cs := range m {
		for _, c := range cs {
			if c != nil {
				c.Close()
			}
		}
	}
}

// measure opens conns fresh connections to addr (so the balancer spreads
// them over its replicas), runs the mix for d, and closes them.
func measure(addr string, conns int, d time.Duration, newOp func() (load.Op, error)) (load.Result, error) {
	cs, ops, err := dialAll(addr, conns, newOp)
	if err != nil {
		return load.Result{}, err
	}
	defer closeAll(map[string][]*load.Conn{"": cs})
	r := load.RunSlice(cs, ops, load.Bounds{Dur: d, MaxOps: 2_000_000, CallTimeout: 30 * time.Second})
	if r.Errors > 0 {
		return r, fmt.Errorf("%d calls failed, first: %s", r.Errors, r.FirstErr)
	}
	return r, nil
}

func round(v float64, d int) float64 {
	p := 1.0
	for i := 0; i < d; i++ {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}

func (r *Results) write(out string) error { return report.WritePhase(out, "replicas", r, r.Markdown()) }

// Markdown renders the phase's table.
func (r *Results) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Scale-out: throughput through HAProxy over 1, 2 and 3 replicas\n\n")
	fmt.Fprintf(&b, "Run %s%s, %.0f s; load average before / after: %s / %s. %d interleaved rounds of %.1f s per setup and concurrency, the order rotated every round.\n\n",
		r.Start, commitText(r.Commit), r.DurationS, r.LoadBefore, r.LoadAfter, r.Rounds, r.SliceS)
	jvm := r.MetastoreJVM
	if jvm == "" {
		jvm = "the test bed's default"
	}
	fmt.Fprintf(&b, "Metastore JVM options: `%s`.\n\n", jvm)
	fmt.Fprintf(&b, "One operation is the next call of this mix, in turn: %s. Two real Hive 3.1.3 metastores (catalog1, catalog2), one ZooKeeper, the replicas are the real binary; everything on 127.0.0.1 of one 2-core machine.\n\n",
		strings.Join(r.Mix, "; "))
	b.WriteString("| connections | setup | calls/s | vs 1 replica | p50 ms | p99 ms | calls | errors |\n|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range r.Cells {
		fmt.Fprintf(&b, "| %d | %s | %.0f | %.2f | %.3f | %.3f | %d | %d |\n", c.Connections, c.Setup, c.OpsPerS, c.RatioTo1, c.P50Ms, c.P99Ms, c.Ops, c.Errors)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\n- %s", n)
	}
	b.WriteString("\n")
	return b.String()
}

func commitText(c string) string {
	if c == "" {
		return ""
	}
	return " at commit " + c
}
