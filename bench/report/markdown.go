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
	// The Kerberized front door (security.mode=KERBEROS, SASL GSSAPI) in front of the instant backend, at QOP
	// auth and auth-conf: get_table only, in the same rounds as ProxyInstant.
	ProxyInstantKrbAuth = "proxy-instant-krb-auth"
	ProxyInstantKrbConf = "proxy-instant-krb-conf"
)

// fanOutSetups are the rows of the fan-out table, in order.
var fanOutSetups = []string{DirectHive, ProxyHive2, ProxyHive2Cache, ProxyHive4, ProxyHive4Cache, WaggleHive}

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

	p("## Targets\n\n| Goal | Measured | Met |\n|---|---|---|\n")
	for _, t := range r.Targets {
		met := "no"
		if t.Met {
			met = "yes"
		}
		p("| %s | %s | %s |\n", t.Goal, t.Measured, met)
	}

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

// peerSection compares hms-proxy with Waggle Dance on the single-catalog
// workloads (both route them to metastore 1).
func (r *Results) peerSection(p func(string, ...any)) {
	var rows [][]*Cell
	var ws []string
	var ks []int
	for _, w := range workloadsOf(r) {
		if strings.HasPrefix(w, "fanout") {
			continue
		}
		for _, k := range concsOf(r) {
			if c := r.Cell(w, WaggleHive, k); c != nil {
				rows = append(rows, []*Cell{r.Cell(w, DirectHive, k), r.Cell(w, ProxyHive, k), c})
				ws, ks = append(ws, w), append(ks, k)
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	p("\n## hms-proxy vs Waggle Dance %s, real Hive 3.1.3 metastore\n\n", r.Meta.Peer)
	p("Waggle Dance (Expedia's metastore federation proxy, a JVM) runs PREFIXED federation over the same two metastores\n")
	p("(primary = metastore 1, unprefixed; metastore 2 as `catalog2_`), measured in the same interleaved rounds as direct\n")
	p("access and hms-proxy (here with one catalog on metastore 1); both send these calls to metastore 1. CPU and RSS are\n")
	p("those of the proxy process (the Waggle Dance JVM: %s).\n\n", r.Meta.PeerJVM)
	p("| Workload | Conns | direct p50 / p99 | hms-proxy p50 / p99 | Waggle Dance p50 / p99 | ops/s direct / hms-proxy / WD | CPU µs/call hms-proxy / WD | RSS MiB hms-proxy / WD | errors |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for i, row := range rows {
		a, b, c := row[0], row[1], row[2]
		p("| %s | %d | %s | %s | %s | %s / %s / %s | %s / %s | %s / %s | %s |\n", ws[i], ks[i], lat2(a), lat2(b), lat2(c),
			tput(a), tput(b), tput(c), cpu(b), cpu(c), rss(b), rss(c), errs(a, b, c))
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
