package report

import (
	"fmt"
	"os"
	"strings"
)

// Setup keys.
const (
	DirectHive      = "direct-hive"            // (a) client -> Hive 3.1.3
	ProxyHive       = "proxy-hive"             // (b) client -> hms-proxy -> the same Hive
	ProxyHive4      = "proxy-hive-4cat"        // client -> hms-proxy with 4 catalogs -> 2 Hive metastores
	DirectInstant   = "direct-instant"         // client -> instant backend
	FwdInstant      = "forwarder-instant"      // (d) client -> tcpfwd -> instant backend
	ProxyInstant    = "proxy-instant"          // (c) client -> hms-proxy -> instant backend
	ProxyInstantNoA = "proxy-instant-noaudit"  // (c) with audit.enabled=false
	ProxyInstant4   = "proxy-instant-4cat"     // client -> hms-proxy with 4 catalogs -> instant backend
	FwdHive         = "forwarder-hive"         // (a') client -> tcpfwd -> the same Hive: the floor of a hop
	ProxyHive2      = "proxy-hive-2cat"        // client -> hms-proxy with 2 catalogs -> 2 Hive metastores
	ProxyHive2Cache = "proxy-hive-2cat-cached" // the same with routing.database-list-cache.* set
	ProxyHive4Cache = "proxy-hive-4cat-cached" // ProxyHive4 with routing.database-list-cache.* set
	WaggleHive      = "waggle-dance-hive"      // client -> Waggle Dance 3.13.3 (PREFIXED, 2 metastores) -> Hive
	JavaHive2       = "java-proxy-hive-2cat"   // client -> the Java HMS Proxy, 2 catalogs on the 2 metastores
	JavaHive4       = "java-proxy-hive-4cat"   // client -> the Java HMS Proxy, 4 catalogs on the 2 metastores
	// The Kerberized front door (security.mode=KERBEROS, SASL GSSAPI) in front of the instant backend, at QOP
	// auth and auth-conf: get_table only, in the same rounds as ProxyInstant.
	ProxyInstantKrbAuth = "proxy-instant-krb-auth"
	ProxyInstantKrbConf = "proxy-instant-krb-conf"
)

// fanOutSetups are the rows of the fan-out table, in order.
var fanOutSetups = []string{DirectHive, ProxyHive, ProxyHive2, ProxyHive2Cache, ProxyHive4, ProxyHive4Cache, JavaHive2, JavaHive4, WaggleHive}

// proxyCols are the columns of the peer table: which setup serves a
// single-catalog workload, and which one a fan-out over n catalogs.
type proxyCols struct {
	name   string
	single string
	byCats map[int]string
}

// columns returns hms-proxy and the peers that ran, in that order.
func (r *Results) columns() []proxyCols {
	cols := []proxyCols{{name: "hms-proxy", single: ProxyHive, byCats: map[int]string{2: ProxyHive2, 4: ProxyHive4}}}
	known := map[string]proxyCols{
		WaggleHive: {single: WaggleHive, byCats: map[int]string{2: WaggleHive}},
		JavaHive2:  {single: JavaHive2, byCats: map[int]string{2: JavaHive2, 4: JavaHive4}},
	}
	for _, pi := range r.Meta.Peers {
		for _, k := range pi.Setups {
			if c, ok := known[k]; ok {
				c.name = strings.TrimSpace(pi.Name + " " + pi.Version)
				cols = append(cols, c)
			}
		}
	}
	return cols
}

func mib(kib int64) string {
	if kib == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(kib)/1024)
}

func lat3(c *Cell) string {
	if c == nil {
		return "-"
	}
	if c.Skipped != "" {
		return "skipped"
	}
	return fmt.Sprintf("%s / %s / %s", f2(c.P50ms), f2(c.P90ms), f2(c.P99ms))
}

func lat2(c *Cell) string {
	if c == nil {
		return "-"
	}
	if c.Skipped != "" {
		return "skipped"
	}
	return fmt.Sprintf("%s / %s", f2(c.P50ms), f2(c.P99ms))
}

func cpu(c *Cell) string {
	if c == nil || c.Skipped != "" || c.CPUusPerCall == 0 {
		return "-"
	}
	return f2(c.CPUusPerCall)
}

func errs(cs ...*Cell) string {
	var parts []string
	for _, c := range cs {
		if c != nil && c.Errors > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d", c.Setup, c.Errors))
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, ", ")
}

// Markdown renders the results page.
func (r *Results) Markdown(svgName string) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	m := r.Meta
	p("# hms-proxy benchmark results\n\n")
	p("Written by `make bench` (bench/run.sh -> cmd/hms-bench). One run, %s UTC, commit `%s`, %.0f s in all.\n",
		m.Started.Format("2006-01-02 15:04"), m.GitCommit, m.DurationS)
	if m.Tree != "" && m.Tree != "clean" {
		p("Proxy sources: %s.\n", m.Tree)
	}
	p("Machine: %d CPUs (%s), Linux %s, %s. Load average before / after: %s / %s.\n", m.CPUs, m.CPUModel, m.Kernel, m.GoVersion, m.LoadBefore, m.LoadAfter)
	p("Backend: %s", m.Hive)
	if m.MetastoreJV != "" {
		p(", JVM options `%s`", m.MetastoreJV)
	}
	p(".\n")
	if m.Quick {
		p("\n**Quick run (`-quick`): fewer and shorter rounds; numbers are indicative only.**\n")
	}
	p("\nLatencies in milliseconds (p50 / p90 / p99, nearest rank over every operation of every round). Setups of a\n")
	p("table were measured in the same run, in interleaved rounds (the order rotates every round), on the same\n")
	p("connections per setup; CPU per call is the meter process's utime+stime from /proc/<pid>/stat around each\n")
	p("round (10 ms ticks) divided by the calls it served.\n\n")

	targetsTable(p, r.Targets)

	p("\n## Setups\n\n| Setup | What | CPU / RSS of |\n|---|---|---|\n")
	for _, s := range r.Setups {
		meter := s.Process
		if meter == "" {
			meter = "-"
		}
		p("| `%s` %s | %s | %s |\n", s.Key, s.Title, s.Path, meter)
	}

	p("\n## hms-proxy vs direct, real Hive 3.1.3 metastore\n\n")
	p("Ratios are proxy / direct: latency ratios above 1 and throughput ratios below 1 are the proxy's cost.\n")
	p("create_table+drop_table counts one operation as the two calls.\n\n")
	p("The forwarder column is a plain TCP forwarder in front of the same metastore, in the same rounds: the floor any hop costs.\n\n")
	p("| Workload | Conns | direct p50 / p90 / p99 | proxy p50 / p90 / p99 | p50 ratio | p99 ratio | forwarder p50 (ratio) | direct ops/s | proxy ops/s | tput ratio | proxy CPU µs/call | ops direct / proxy | errors |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	var skipped []string
	for _, w := range workloadsOf(r) {
		px := ProxyHive
		if strings.HasPrefix(w, "fanout") {
			px = ProxyHive4
		}
		for _, k := range concsOf(r) {
			a, c := r.Cell(w, DirectHive, k), r.Cell(w, px, k)
			if a == nil && c == nil {
				continue
			}
			if a != nil && a.Skipped != "" {
				skipped = append(skipped, fmt.Sprintf("%s at %d connections (real metastore): %s", w, k, a.Skipped))
				p("| %s | %d | skipped | skipped | | | | | | | | | |\n", w, k)
				continue
			}
			rt := r.ratio(w, k)
			name := w
			if px == ProxyHive4 {
				name = w + " (proxy: 4 catalogs; direct: one get_all_databases)"
			}
			fw := "-"
			if f := r.Cell(w, FwdHive, k); f != nil && f.Skipped == "" && f.Ops > 0 {
				fw = fmt.Sprintf("%s (%s)", f2(f.P50ms), f2(rt.FwdP50))
			}
			p("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d / %d | %s |\n", name, k, lat3(a), lat3(c),
				f2(rt.P50), f2(rt.P99), fw, f2(a.OpsPerS), f2(c.OpsPerS), f2(rt.Throughput), cpu(c), a.Ops, c.Ops, errs(a, c, r.Cell(w, FwdHive, k)))
		}
	}

	r.peerSection(p)
	r.uncachedFanOutSection(p)
	r.fanOutSection(p)

	p("\n## hms-proxy vs a plain TCP forwarder, instant backend (load fixture)\n\n")
	p("Added latency = setup p50 (p99) minus direct-to-instant p50 (p99) of the same rounds.\n\n")
	p("| Workload | Conns | direct p50 / p99 | forwarder p50 / p99 | proxy p50 / p99 | added p50 fwd / proxy (ratio) | added p99 fwd / proxy | CPU µs/call fwd / proxy (ratio) | RSS MiB fwd / proxy | ops/s direct / fwd / proxy |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, o := range r.Overheads {
		e, d, c := r.Cell(o.Workload, DirectInstant, o.Concurrency), r.Cell(o.Workload, FwdInstant, o.Concurrency), r.Cell(o.Workload, o.Proxy, o.Concurrency)
		name := o.Workload
		switch o.Proxy {
		case ProxyInstantNoA:
			name += " (proxy audit off)"
		case ProxyInstant4:
			name += " (proxy: 4 catalogs)"
		}
		p("| %s | %d | %s | %s | %s | %s / %s (%s) | %s / %s | %s / %s (%s) | %s / %s | %s / %s / %s |\n", name, o.Concurrency,
			lat2(e), lat2(d), lat2(c), f2(o.AddedP50FwdMs), f2(o.AddedP50ProxyMs), f2(o.AddedP50Ratio),
			f2(o.AddedP99FwdMs), f2(o.AddedP99ProxyMs), f2(o.CPUFwdUs), f2(o.CPUProxyUs), f2(o.CPURatio),
			mib(o.RSSFwdKiB), mib(o.RSSProxyKiB), f2(o.ThroughputDirect), f2(o.ThroughputFwd), f2(o.ThroughputProxy))
	}
	for _, c := range r.Cells {
		if c.Skipped != "" && (c.Setup == DirectInstant) {
			skipped = append(skipped, fmt.Sprintf("%s at %d connections (instant backend): %s", c.Workload, c.Concurrency, c.Skipped))
		}
	}

	if k := kerberosRows(r); len(k) > 0 {
		p("\n## Kerberized front door: CPU per get_table (instant backend)\n\n")
		p("The same proxy configuration behind a plain listener and behind `security.mode=KERBEROS` (SASL GSSAPI, one\n")
		p("handshake per connection before the rounds), measured in the same interleaved rounds. `auth` frames carry the\n")
		p("calls as they are; `auth-conf` seals every frame (RFC 4121, AES256-CTS-HMAC-SHA1).\n\n")
		p("| Conns | plain p50 / p99 | auth p50 / p99 | auth-conf p50 / p99 | CPU µs/call plain / auth / auth-conf | auth / plain | auth-conf / plain |\n")
		p("|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, row := range k {
			p("| %d | %s | %s | %s | %s / %s / %s | %s | %s |\n", row[0].Concurrency, lat2(row[0]), lat2(row[1]), lat2(row[2]),
				cpu(row[0]), cpu(row[1]), cpu(row[2]), ratio(row[1], row[0]), ratio(row[2], row[0]))
		}
	}

	if len(r.Memory) > 0 {
		p("\n## Memory of an idle proxy\n\nA fresh hms-proxy process (instant backend behind it); every client connection makes one get_table call and then stays open, idle.\n\n")
		p("| Idle client connections | RSS MiB | go_goroutines |\n|---:|---:|---:|\n")
		for _, mp := range r.Memory {
			p("| %d | %s | %d |\n", mp.Conns, mib(mp.RSSKiB), mp.Goroutines)
		}
	}

	if len(r.Allocs) > 0 {
		p("\n## Allocations per call (proxy in-process, instant backend)\n\n")
		p("`hms-bench profile` runs the proxy inside its own process (app, audit on), drives the workload through it\n")
		p("with 4 connections under a CPU profile, and subtracts what the same calls allocate straight to the instant backend.\n")
		p("Profiles: `profiles/<workload>.{cpu,alloc}.prof` (git-ignored) and their `go tool pprof -top` in `profiles/*.top.txt`.\n\n")
		p("| Workload | proxy allocs/op | proxy bytes/op | ops profiled |\n|---|---:|---:|---:|\n")
		for _, a := range r.Allocs {
			p("| %s | %s | %s | %d |\n", a.Workload, f2(a.ProxyAllocsOp), f2(a.ProxyBytesOp), a.Ops)
		}
	}
	if len(r.GoBench) > 0 {
		p("\n`go test -bench . -benchmem ./bench/proxybench` (one connection, synthetic replies of the same shape; allocs/op counts the\nwhole process, proxy-allocs/op only the proxy):\n\n```\n")
		for _, l := range r.GoBench {
			p("%s\n", l)
		}
		p("```\n")
	}
	if svgName != "" {
		p("\n## Latency vs concurrency\n\n![p50 (solid) and p99 (dashed) latency per setup and workload](%s)\n", svgName)
	}
	if len(skipped) > 0 {
		p("\n## Skipped\n\n")
		for _, s := range skipped {
			p("- %s\n", s)
		}
	}
	if len(r.Notes) > 0 {
		p("\n## Notes\n\n")
		for _, n := range r.Notes {
			p("- %s\n", n)
		}
	}
	p("\n## Phases\n\n| Phase | Seconds |\n|---|---:|\n")
	for _, ph := range r.Phases {
		p("| %s | %.1f |\n", ph.Name, ph.S)
	}
	return b.String()
}

func (r *Results) ratio(w string, k int) Ratio {
	for _, x := range r.Ratios {
		if x.Workload == w && x.Concurrency == k {
			return x
		}
	}
	return Ratio{}
}

func workloadsOf(r *Results) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range r.Cells {
		if !seen[c.Workload] {
			seen[c.Workload] = true
			out = append(out, c.Workload)
		}
	}
	return out
}

func concsOf(r *Results) []int {
	var out []int
	seen := map[int]bool{}
	for _, c := range r.Cells {
		if !seen[c.Concurrency] {
			seen[c.Concurrency] = true
			out = append(out, c.Concurrency)
		}
	}
	return out
}

// WriteMarkdown writes results.md.
func (r *Results) WriteMarkdown(path, svgName string) error {
	return os.WriteFile(path, []byte(r.Markdown(svgName)), 0o644)
}

// kerberosRows pairs the plain proxy's get_table cells with the Kerberized ones, per concurrency.
func kerberosRows(r *Results) [][3]*Cell {
	var out [][3]*Cell
	for _, k := range concsOf(r) {
		plain, auth, conf := r.Cell("get_table", ProxyInstant, k), r.Cell("get_table", ProxyInstantKrbAuth, k), r.Cell("get_table", ProxyInstantKrbConf, k)
		if plain != nil && (auth != nil || conf != nil) {
			out = append(out, [3]*Cell{plain, auth, conf})
		}
	}
	return out
}

// ratio is a's CPU per call over b's.
func ratio(a, b *Cell) string {
	if a == nil || b == nil || a.Skipped != "" || b.Skipped != "" || a.CPUusPerCall == 0 || b.CPUusPerCall == 0 {
		return "-"
	}
	return f2(a.CPUusPerCall / b.CPUusPerCall)
}

// peerSection puts hms-proxy and the peers that ran side by side on the
// real metastores: one column per proxy, one row per workload and
// concurrency (a fan-out once per number of catalogs), CPU per call with its
// ratio to hms-proxy's, and p50 / p99.
func (r *Results) peerSection(p func(string, ...any)) {
	cols := r.columns()
	if len(cols) < 2 {
		return
	}
	type row struct {
		name  string
		k     int
		cells []*Cell
	}
	var rows []row
	for _, w := range workloadsOf(r) {
		fan := strings.HasPrefix(w, "fanout")
		cats := []int{0}
		if fan {
			cats = []int{2, 4}
		}
		for _, n := range cats {
			for _, k := range concsOf(r) {
				rw := row{name: w, k: k}
				if fan {
					rw.name = fmt.Sprintf("%s, %d catalogs", w, n)
				}
				peerSeen := false
				for i, c := range cols {
					key := c.single
					if fan {
						key = c.byCats[n]
					}
					cell := r.Cell(w, key, k)
					peerSeen = peerSeen || i > 0 && cell != nil
					rw.cells = append(rw.cells, cell)
				}
				if peerSeen {
					rows = append(rows, rw)
				}
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	p("\n## hms-proxy and its peers, real Hive 3.1.3 metastores\n\n")
	p("The same calls through each proxy in the same interleaved rounds: CPU µs per client call of the proxy process\n")
	p("(its ratio to hms-proxy's in parentheses), then p50 / p99 ms. Single-catalog workloads go to metastore 1 through\n")
	p("every proxy (hms-proxy with 1 catalog, the peers with their default catalog or primary metastore); a fan-out row\n")
	p("asks 2 or 4 catalogs (4: metastores 1, 2, 1, 2). JVMs:")
	for _, pi := range r.Meta.Peers {
		p(" %s `%s`;", pi.Name, pi.JVM)
	}
	p(" each got the same short warm-up per workload as the metastores.\n\n")
	p("| Workload | Conns |")
	for _, c := range cols {
		p(" %s |", c.name)
	}
	p("\n|---|---:|")
	for range cols {
		p("---:|")
	}
	p("\n")
	for _, rw := range rows {
		p("| %s | %d |", rw.name, rw.k)
		base := rw.cells[0]
		for i, c := range rw.cells {
			switch {
			case c == nil:
				p(" - |")
			case c.Skipped != "":
				p(" skipped |")
			case i > 0 && base != nil && base.CPUusPerCall > 0 && c.CPUusPerCall > 0:
				p(" %s (%s×) · %s |", cpu(c), f2(c.CPUusPerCall/base.CPUusPerCall), lat2(c))
			default:
				p(" %s · %s |", cpu(c), lat2(c))
			}
		}
		p("\n")
	}
	p("| max RSS MiB | |")
	for _, c := range cols {
		var m int64
		for _, cell := range r.Cells {
			if cell.Setup == c.single || cell.Setup == c.byCats[2] || cell.Setup == c.byCats[4] {
				m = max(m, cell.RSSMaxKiB)
			}
		}
		p(" %s |", mib(m))
	}
	p("\n")
}

// uncachedFanOutSection: each fan-out against N single-catalog calls of the
// same request and against the peers' fan-out.
func (r *Results) uncachedFanOutSection(p func(string, ...any)) {
	if len(r.FanOuts) == 0 {
		return
	}
	p("\n## Uncached fan-out against N single-catalog calls\n\n")
	p("CPU µs per client call of the proxy process. \"1 catalog\" is the same request through the 1-catalog hms-proxy in\n")
	p("the same rounds (one backend call); \"÷ N×1\" is the fan-out's CPU over N times that (goal: at most 1.3); \"÷ Java\" is\n")
	p("hms-proxy's over the Java HMS Proxy's with the same catalogs (goal: below 1). `get_databases` asks `%s`; the Java\n", "hmsbench*")
	p("HMS Proxy sends that pattern to every backend, hms-proxy to the default catalog's and matches the other catalogs'\n")
	p("external (prefixed) names itself. `get_table_meta` asks `*`, `*` of every catalog in both.\n\n")
	p("| Workload | Backend | Catalogs | Conns | 1 catalog | N catalogs | ÷ N×1 | Java HMS Proxy | ÷ Java | Waggle Dance |\n")
	p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	opt := func(v float64) string {
		if v == 0 {
			return "-"
		}
		return f2(v)
	}
	for _, f := range r.FanOuts {
		p("| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s |\n", f.Workload, f.Group, f.Catalogs, f.Concurrency,
			opt(f.Single), opt(f.Proxy), opt(f.PerN), opt(f.Java), opt(f.ProxyToJava), opt(f.Waggle))
	}
}

// fanOutSection: get_all_databases over 2 and 4 catalogs, with and without
// the database list cache, and Waggle Dance over its 2 metastores.
func (r *Results) fanOutSection(p func(string, ...any)) {
	w := "fanout_get_all_databases"
	found := false
	for _, c := range r.Cells {
		found = found || c.Workload == w && c.Setup == ProxyHive2
	}
	if !found {
		return
	}
	p("\n## Fan-out: get_all_databases over 2 and 4 catalogs, cached and uncached\n\n")
	p("One client call each; the proxy asks every catalog (2 catalogs: metastore 1 and 2; 4 catalogs: 1, 2, 1, 2) and merges the\n")
	p("answers. The cached setups set `routing.database-list-cache.ttl-ms=60000` and `shared-across-users=true`. %s\n\n", r.Meta.ListCache)
	p("| Setup | Conns | p50 / p90 / p99 | ops/s | CPU µs/call | RSS MiB | errors |\n|---|---:|---:|---:|---:|---:|---|\n")
	for _, k := range concsOf(r) {
		for _, key := range fanOutSetups {
			c := r.Cell(w, key, k)
			if c == nil {
				continue
			}
			p("| `%s` | %d | %s | %s | %s | %s | %s |\n", key, k, lat3(c), tput(c), cpu(c), rss(c), errs(c))
		}
	}
}

func tput(c *Cell) string {
	if c == nil || c.Skipped != "" {
		return "-"
	}
	return f2(c.OpsPerS)
}

func rss(c *Cell) string {
	if c == nil || c.Skipped != "" {
		return "-"
	}
	return mib(c.RSSMaxKiB)
}

// targetsTable renders the "Targets" section: each goal, what was measured
// and whether it is met.
func targetsTable(p func(string, ...any), targets []Target) {
	p("## Targets\n\n| Goal | Measured | Met |\n|---|---|---|\n")
	for _, t := range targets {
		met := "no"
		if t.Met {
			met = "yes"
		}
		p("| %s | %s | %s |\n", t.Goal, t.Measured, met)
	}
}
