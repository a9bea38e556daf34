// Package rangerbench is the benchmark's Ranger phase (`hms-bench ranger`,
// run by `make bench` after the main run): 100 distinct users, in 4 groups
// whose Ranger policies each give a different share of the databases and
// tables, call get_all_databases, get_tables(db, '*') and get_table through
// (a) hms-proxy with Ranger and the shared caches
// (shared-across-users=true), (b) hms-proxy with Ranger and no cache, and
// (c) straight to the metastore, where nothing is filtered: the baseline
// issue 23 names. One real Hive 3.1.3 metastore; the policies come from a
// loopback Ranger Admin stand-in (testbed.RangerAdmin) serving Ranger's own
// ServicePolicies download document. Every setup reaches the metastore
// through the same counting relay, so "backend calls" are counted alike.
// Results: ranger.json and ranger.md (bench/report).
package rangerbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hms-proxy/hms-proxy/bench/load"
	"github.com/hms-proxy/hms-proxy/bench/msg"
	"github.com/hms-proxy/hms-proxy/bench/proc"
	"github.com/hms-proxy/hms-proxy/bench/proxybench"
	"github.com/hms-proxy/hms-proxy/bench/report"
	"github.com/hms-proxy/hms-proxy/bench/workload"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Options of the phase.
type Options struct {
	Binary string // hms-proxy
	// PolicyTemplate is a ServicePolicies document whose serviceDef and
	// serviceConfig the phase's policies use (the Hive service definition of
	// security/ranger/testdata/hms_hive-policies.json).
	PolicyTemplate string
	Out, Work      string
	Budget         time.Duration
	Quick          bool
	Commit         string
	Log            func(format string, args ...any)
}

// Shape of the world.
const (
	Users          = 100
	Groups         = 4
	TablesPerGroup = 10 // tables of each group in the common database
	service        = "hms_bench"
)

// Workload names (rows of the results).
const (
	GetAllDatabases = "get_all_databases"
	GetTables       = "get_tables(db, '*')"
	GetTable        = "get_table"
)

// Workloads in report order.
var Workloads = []string{GetAllDatabases, GetTables, GetTable}

type world struct {
	common string   // the database every group has a share of
	own    []string // each group's own database
}

func newWorld() world {
	id := fmt.Sprintf("%x", time.Now().Unix()&0xffffff)
	w := world{common: "rb_common_" + id}
	for g := 0; g < Groups; g++ {
		w.own = append(w.own, fmt.Sprintf("rb_g%d_%s", g, id))
	}
	return w
}

func group(g int) string      { return fmt.Sprintf("grp%d", g) }
func user(u int) string       { return fmt.Sprintf("user%03d", u) }
func table(g, i int) string   { return fmt.Sprintf("g%d_t%02d", g, i) }
func (w world) dbs() []string { return append([]string{w.common}, w.own...) }

func (w world) describe() string {
	return fmt.Sprintf("user`k` is in group grp`k mod %d`. Databases: a common one with %d tables of %d columns "+
		"(%d per group, g`n`_t00…), and one own database per group with 2 tables. Group grp`n`'s policies allow `select` on "+
		"its own database (all tables) and on its tables `g<n>_*` of the common one, so each user lists %d of the %d "+
		"databases and %d of the common database's %d tables. get_tables lists the common database; get_table reads the "+
		"user's group's first table there.", Groups, Groups*TablesPerGroup, workload.TableColumns, TablesPerGroup,
		2, Groups+2, TablesPerGroup, Groups*TablesPerGroup)
}

// prepare creates the databases and tables on the metastore.
func (w world) prepare(addr string) error {
	cl, err := workload.Dial(addr, 5*time.Minute)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx := context.Background()
	for _, db := range w.dbs() {
		if err := cl.CreateDatabase(ctx, &thriftgen.Database{Name: db, Description: "hms-proxy Ranger benchmark (dropped at the end)"}); err != nil {
			return fmt.Errorf("create database %s: %w", db, err)
		}
	}
	for g := 0; g < Groups; g++ {
		for i := 0; i < TablesPerGroup; i++ {
			if err := cl.CreateTable(ctx, workload.Table(w.common, table(g, i), workload.TableColumns, false)); err != nil {
				return fmt.Errorf("create table %s.%s: %w", w.common, table(g, i), err)
			}
		}
		for i := 0; i < 2; i++ {
			if err := cl.CreateTable(ctx, workload.Table(w.own[g], fmt.Sprintf("t%d", i), workload.TableColumns, false)); err != nil {
				return fmt.Errorf("create table %s.t%d: %w", w.own[g], i, err)
			}
		}
	}
	return nil
}

func (w world) drop(addr string) {
	cl, err := workload.Dial(addr, 5*time.Minute)
	if err != nil {
		return
	}
	defer cl.Close()
	for _, db := range w.dbs() {
		_ = cl.DropDatabase(context.Background(), db, true, true)
	}
}

// Policies is the ServicePolicies download document of the world (version
// 1) on the template's service definition, as an operator would write the
// policies in Ranger Admin: per group, one on its own database and one on
// its share of the common database.
func (w world) Policies(template []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(template, &doc); err != nil {
		return nil, fmt.Errorf("policy template: %w", err)
	}
	doc["serviceName"], doc["policyVersion"] = service, 1
	res := func(v string) map[string]any {
		return map[string]any{"values": []string{v}, "isExcludes": false, "isRecursive": false}
	}
	var ps []any
	id := 0
	for g := 0; g < Groups; g++ {
		for _, r := range [][2]string{{w.own[g], "*"}, {w.common, fmt.Sprintf("g%d_*", g)}} {
			id++
			item := map[string]any{"accesses": []any{map[string]any{"type": "select", "isAllowed": true}},
				"users": []string{}, "groups": []string{group(g)}, "roles": []string{}, "conditions": []any{}, "delegateAdmin": false}
			ps = append(ps, map[string]any{"id": id, "guid": fmt.Sprintf("bench-%d", id), "isEnabled": true, "version": 1,
				"service": service, "name": fmt.Sprintf("bench %s %s.%s", group(g), r[0], r[1]), "policyType": 0,
				"policyPriority": 0, "isAuditEnabled": true, "serviceType": "hive",
				"resources":   map[string]any{"database": res(r[0]), "table": res(r[1]), "column": res("*")},
				"policyItems": []any{item}, "denyPolicyItems": []any{}, "allowExceptions": []any{}, "denyExceptions": []any{},
				"dataMaskPolicyItems": []any{}, "rowFilterPolicyItems": []any{}, "validitySchedules": []any{}, "isDenyAllElse": false})
		}
	}
	doc["policies"] = ps
	return json.Marshal(doc)
}

// requests are one user's pre-encoded calls: set_ugi, then one per workload.
func (w world) requests(u int) (setUGI []byte, calls map[string][]byte, err error) {
	g := u % Groups
	if setUGI, err = msg.Encode("set_ugi", &thriftgen.SetUgiArgs{UserName: user(u), GroupNames: []string{group(g)}}); err != nil {
		return nil, nil, err
	}
	calls = map[string][]byte{}
	if calls[GetAllDatabases], err = msg.Encode("get_all_databases", &thriftgen.GetAllDatabasesArgs{}); err != nil {
		return nil, nil, err
	}
	if calls[GetTables], err = msg.Encode("get_tables", &thriftgen.GetTablesArgs{DbName: w.common, Pattern: "*"}); err != nil {
		return nil, nil, err
	}
	if calls[GetTable], err = msg.Encode("get_table", &thriftgen.GetTableArgs{Dbname: w.common, TblName: table(g, 0)}); err != nil {
		return nil, nil, err
	}
	return setUGI, calls, nil
}

// checkFiltered makes sure a Ranger setup measures filtering: each group's
// first user sees exactly its two databases and its share of the common
// one's tables (asked twice, so a cache's answer is checked too).
func (w world) checkFiltered(addr string) error {
	ctx := context.Background()
	for g := 0; g < Groups; g++ {
		cl, err := workload.Dial(addr, time.Minute)
		if err != nil {
			return err
		}
		wantDBs := []string{w.common, w.own[g]}
		var wantTables []string
		for i := 0; i < TablesPerGroup; i++ {
			wantTables = append(wantTables, table(g, i))
		}
		slices.Sort(wantDBs)
		err = func() error {
			if _, err := cl.SetUgi(ctx, user(g), []string{group(g)}); err != nil {
				return err
			}
			for i := 0; i < 2; i++ {
				dbs, err := cl.GetAllDatabases(ctx)
				if err != nil {
					return err
				}
				tables, err := cl.GetTables(ctx, w.common, "*")
				if err != nil {
					return err
				}
				slices.Sort(dbs)
				slices.Sort(tables)
				if !slices.Equal(dbs, wantDBs) || !slices.Equal(tables, wantTables) {
					return fmt.Errorf("%s of %s sees databases %v and tables %v, want %v and %v: the policies are not enforced as the phase expects",
						user(g), group(g), dbs, tables, wantDBs, wantTables)
				}
			}
			return nil
		}()
		cl.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// relay forwards connections to the metastore and counts the calls that
// pass toward it.
type relay struct {
	ln     net.Listener
	target string
	calls  atomic.Int64
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func startRelay(target string) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, target: target}
	go r.serve()
	return r, nil
}

func (r *relay) addr() string { return r.ln.Addr().String() }

func (r *relay) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.DialTimeout("tcp", r.target, 10*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		r.mu.Lock()
		r.conns = append(r.conns, c, up)
		r.mu.Unlock()
		r.wg.Add(2)
		go func() { // toward the metastore: read whole messages, count them
			defer r.wg.Done()
			defer up.Close()
			rd := wire.NewReader(io.TeeReader(c, up), 256<<20)
			var m wire.Message
			for rd.Next(&m) == nil {
				r.calls.Add(1)
			}
		}()
		go func() {
			defer r.wg.Done()
			defer c.Close()
			_, _ = io.Copy(c, up)
		}()
	}
}

func (r *relay) close() {
	r.ln.Close()
	r.mu.Lock()
	for _, c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// setup is one way of reaching the metastore, with its 100 user connections.
type setup struct {
	name  string
	addr  string
	proxy *proc.Child // nil: direct
	conns map[string][]*load.Conn
	ops   map[string][]load.Op
}

func (s *setup) dial(w world) error {
	s.conns, s.ops = map[string][]*load.Conn{}, map[string][]load.Op{}
	for u := 0; u < Users; u++ {
		ugi, calls, err := w.requests(u)
		if err != nil {
			return err
		}
		// One connection per user and workload, each identified once, as a
		// client identifies its connection.
		for _, wl := range Workloads {
			c, err := load.Dial(s.addr, 10*time.Second)
			if err != nil {
				return err
			}
			s.conns[wl] = append(s.conns[wl], c)
			c.SetDeadline(time.Now().Add(time.Minute))
			id, err := load.NewStatic(ugi)
			if err != nil {
				return err
			}
			if err := id.Do(c); err != nil {
				return fmt.Errorf("%s: set_ugi %s: %w", s.name, user(u), err)
			}
			op, err := load.NewStatic(calls[wl])
			if err != nil {
				return err
			}
			s.ops[wl] = append(s.ops[wl], op)
		}
	}
	return nil
}

func (s *setup) close() {
	for _, cs := range s.conns {
		for _, c := range cs {
			if c != nil {
				c.Close()
			}
		}
	}
}

// slice runs one measured slice of workload wl and samples the processes.
func (s *setup) slice(wl string, b load.Bounds, metastorePid int, rl *relay) report.RangerSample {
	var p0, p1 time.Duration
	if s.proxy != nil {
		p0, _ = proc.CPU(s.proxy.Pid())
	}
	m0, _ := proc.CPU(metastorePid)
	n0 := rl.calls.Load()
	got := load.RunSlice(s.conns[wl], s.ops[wl], b)
	n1 := rl.calls.Load()
	m1, _ := proc.CPU(metastorePid)
	if s.proxy != nil {
		p1, _ = proc.CPU(s.proxy.Pid())
	}
	return report.RangerSample{Latencies: got.Latencies, Errors: got.Errors, FirstErr: got.FirstErr,
		ProxyCPU: p1 - p0, MetastoreCPU: m1 - m0, BackendCalls: int(n1 - n0)}
}

// Run runs the phase and writes its results.
func Run(o Options) (*report.RangerResults, error) {
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	start := time.Now()
	deadline := start.Add(o.Budget)
	template, err := os.ReadFile(o.PolicyTemplate)
	if err != nil {
		return nil, fmt.Errorf("policy template: %w", err)
	}
	w := newWorld()
	policies, err := w.Policies(template)
	if err != nil {
		return nil, err
	}
	res := &report.RangerResults{Start: start.UTC().Format(time.RFC3339), Commit: o.Commit, LoadBefore: report.LoadAvg(),
		Users: Users, Groups: Groups, World: w.describe(), Workloads: Workloads,
		MetastoreJVM: os.Getenv("HMS_PROXY_METASTORE_JVM_OPTS")}

	ms, err := testbed.StartMetastores(testbed.Hive313)
	if err != nil {
		return nil, fmt.Errorf("starting the real metastore: %w", err)
	}
	m := ms[0]
	defer func() { _ = m.Stop(); _ = os.RemoveAll(m.Dir) }()
	hms := strings.TrimPrefix(m.URI, "thrift://")
	if err := w.prepare(hms); err != nil {
		return nil, err
	}
	defer w.drop(hms)
	o.Log("metastore up, %d databases prepared (%.0fs)", len(w.dbs()), time.Since(start).Seconds())

	admin, err := testbed.StartRangerAdmin(testbed.RangerAdminOptions{})
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	admin.SetPolicies(service, policies)
	admin.SetRoles(service, []byte(`{"serviceName":"`+service+`","roleVersion":1,"rangerRoles":[]}`))

	rl, err := startRelay(hms)
	if err != nil {
		return nil, err
	}
	defer rl.close()

	ranger := map[string]string{"ranger.enabled": "true", "ranger.policy.rest.url": admin.URL, "ranger.service-name": service,
		"ranger.policy.poll-interval-ms": "600000"}
	cached := map[string]string{"routing.database-list-cache.ttl-ms": "600000", "routing.database-list-cache.shared-across-users": "true",
		"routing.database-metadata-cache.ttl-ms": "600000", "routing.database-metadata-cache.shared-across-users": "true"}
	for k, v := range ranger {
		cached[k] = v
	}
	setups := map[string]*setup{report.RangerDirect: {name: report.RangerDirect, addr: rl.addr()}}
	for name, extra := range map[string]map[string]string{report.RangerCached: cached, report.RangerUncached: ranger} {
		dir := filepath.Join(o.Work, "ranger", strings.NewReplacer(" ", "", ",", "", "+", "-").Replace(name))
		c, _, err := proxybench.StartBinary(name, o.Binary, dir, proxybench.ProxyConfig{
			Backends: []string{"thrift://" + rl.addr()}, PoolSize: 16, Extra: extra})
		if err != nil {
			return nil, err
		}
		defer c.Stop()
		setups[name] = &setup{name: name, addr: c.Addr, proxy: c}
	}
	for _, name := range report.RangerSetups {
		if err := setups[name].dial(w); err != nil {
			return nil, err
		}
		defer setups[name].close()
	}
	for _, name := range []string{report.RangerCached, report.RangerUncached} {
		if err := w.checkFiltered(setups[name].addr); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	o.Log("Ranger Admin, relay, 2 proxies up; %d users connected to each setup (%.0fs)", Users, time.Since(start).Seconds())

	rounds, slice := 4, 2*time.Second
	if o.Quick {
		rounds, slice = 2, time.Second
	}
	bounds := func(d time.Duration) load.Bounds {
		return load.Bounds{Dur: d, MaxOps: 2_000_000, CallTimeout: 30 * time.Second}
	}
	// Warm-up: every workload through every setup (fills the caches, the
	// metastore's JIT), not measured; a setup that fails here fails the
	// phase with its first error.
	for _, wl := range Workloads {
		for _, name := range report.RangerSetups {
			got := setups[name].slice(wl, bounds(slice), m.Pid(), rl)
			if got.Errors > 0 {
				return nil, fmt.Errorf("warm-up %s through %s: %d calls failed, first: %s", wl, name, got.Errors, got.FirstErr)
			}
		}
	}
	if left := time.Until(deadline) - 20*time.Second; left > 0 {
		need := time.Duration(rounds*len(Workloads)*len(report.RangerSetups)) * (slice + 200*time.Millisecond)
		if need > left {
			rounds = max(1, int(float64(rounds)*float64(left)/float64(need)))
			res.Notes = append(res.Notes, fmt.Sprintf("rounds cut to %d to fit the budget %v", rounds, o.Budget))
		}
	}
	res.Rounds, res.SliceS = rounds, slice.Seconds()
	accs := map[[2]string]*report.RangerAcc{}
	for _, wl := range Workloads {
		for _, s := range report.RangerSetups {
			accs[[2]string{wl, s}] = &report.RangerAcc{}
		}
	}
	for r := 0; r < rounds; r++ {
		for _, wl := range Workloads {
			order := slices.Clone(report.RangerSetups)
			for i := 0; i < r%len(order); i++ { // rotate: drift lands on every setup alike
				order = append(order[1:], order[0])
			}
			for _, s := range order {
				accs[[2]string{wl, s}].Add(setups[s].slice(wl, bounds(slice), m.Pid(), rl))
			}
		}
		o.Log("round %d of %d", r+1, rounds)
	}
	for _, wl := range Workloads {
		for _, s := range report.RangerSetups {
			res.Cells = append(res.Cells, accs[[2]string{wl, s}].Cell(wl, s))
		}
	}
	res.SetTargets()
	res.Notes = append(res.Notes, "every setup reaches the metastore through the same counting relay in the driver; the "+
		"proxies' backend pools hold 16 sessions each, direct access has one metastore connection per user and workload")
	res.DurationS = float64(time.Since(start).Milliseconds()/100) / 10
	res.LoadAfter = report.LoadAvg()
	return res, res.Write(o.Out)
}
