package report

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"
)

func TestQuantileIsNearestRank(t *testing.T) {
	var v []time.Duration
	for i := 1; i <= 100; i++ {
		v = append(v, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{.5, 50 * time.Millisecond}, {.9, 90 * time.Millisecond}, {.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {.001, time.Millisecond}} {
		if got := Quantile(v, c.q); got != c.want {
			t.Errorf("Quantile(1..100 ms, %v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := Quantile(nil, .5); got != 0 {
		t.Errorf("Quantile of nothing = %v, want 0", got)
	}
}

func sample() *Results {
	r := &Results{}
	for _, k := range []int{1, 8, 64} {
		for i, s := range []string{DirectHive, ProxyHive} {
			c := &Cell{Workload: "get_table", Setup: s, Concurrency: k, RPCsPerOp: 1}
			for j := 1; j <= 100; j++ {
				c.Lat = append(c.Lat, time.Duration(j*k*(i+1))*time.Microsecond*10)
			}
			c.Finish(time.Second)
			r.Cells = append(r.Cells, c)
		}
	}
	r.Cells = append(r.Cells, &Cell{Workload: "add_partitions", Setup: DirectHive, Concurrency: 64, Skipped: "over the time budget <&>"})
	r.Ratios = []Ratio{{Workload: "get_table", Concurrency: 1, P50: 2}}
	return r
}

// The chart is well-formed SVG with one polyline per setup and quantile in
// each panel that has data, and escapes what it prints.
func TestSVGIsWellFormed(t *testing.T) {
	svg := sample().SVG()
	d := xml.NewDecoder(strings.NewReader(svg))
	lines := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			lines++
		}
	}
	if lines != 4 { // 2 setups x (p50, p99) of get_table; add_partitions was skipped
		t.Fatalf("chart has %d polylines, want 4", lines)
	}
}

func TestMarkdownListsCellsAndSkips(t *testing.T) {
	r := sample()
	c := r.Cell("get_table", ProxyHive, 8)
	if c == nil || c.Ops != 100 || c.P50ms != 8 || c.P99ms != 15.84 || c.OpsPerS != 100 {
		t.Fatalf("cell statistics wrong: %+v", c)
	}
	md := r.Markdown("latency.svg")
	for _, want := range []string{"| get_table | 1 | 0.500 / 0.900 / 0.990 | 1.00 / 1.80 / 1.98 | 2.00 |",
		"add_partitions at 64 connections (real metastore): over the time budget <&>", "![p50"} {
		if !strings.Contains(md, want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
}

// The peer and fan-out tables appear when their setups were measured: one
// column per proxy that ran, a fan-out row per number of catalogs.
func TestMarkdownPeerAndFanOutTables(t *testing.T) {
	r := sample()
	if md := r.Markdown(""); strings.Contains(md, "Waggle Dance") || strings.Contains(md, "## Fan-out") || strings.Contains(md, "its peers") {
		t.Fatal("peer or fan-out table without their setups")
	}
	r.Meta.ListCache = "**This build does not serve the database list cache yet**"
	r.Meta.Peers = []PeerInfo{{Name: "Waggle Dance", Version: "3.13.3", JVM: "-Xmx1g", Setups: []string{WaggleHive}},
		{Name: "Java HMS Proxy", Version: "0.1.161-a111dd3f", JVM: "-Xmx1g", Setups: []string{JavaHive2, JavaHive4}}}
	add := func(w, setup string, k int, ms int, cpu float64, rss int64) {
		c := &Cell{Workload: w, Setup: setup, Concurrency: k, RPCsPerOp: 1, CPUusPerCall: cpu, RSSMaxKiB: rss}
		for j := 0; j < 10; j++ {
			c.Lat = append(c.Lat, time.Duration(ms)*time.Millisecond)
		}
		c.Finish(time.Second)
		r.Cells = append(r.Cells, c)
	}
	r.Cell("get_table", ProxyHive, 8).CPUusPerCall = 21
	add("get_table", WaggleHive, 8, 3, 42, 400<<10)
	add("get_table", JavaHive2, 8, 3, 63, 300<<10)
	for _, s := range fanOutSetups {
		add("fanout_get_all_databases", s, 1, 2, 42, 30<<10)
	}
	r.FanOuts = []FanOut{{Workload: "fanout_get_table_meta", Group: "hive", Catalogs: 4, Concurrency: 8, Single: 10, Proxy: 60, PerN: 1.5, Java: 50, ProxyToJava: 1.2}}
	md := r.Markdown("")
	for _, want := range []string{"## hms-proxy and its peers, real Hive 3.1.3 metastores",
		"| Workload | Conns | hms-proxy | Waggle Dance 3.13.3 | Java HMS Proxy 0.1.161-a111dd3f |",
		"| get_table | 8 | 21.0 · 8.00 / 15.8 | 42.0 (2.00×) · 3.00 / 3.00 | 63.0 (3.00×) · 3.00 / 3.00 |",
		"| fanout_get_all_databases, 2 catalogs | 1 | 42.0 · 2.00 / 2.00 | 42.0 (1.00×) · 2.00 / 2.00 | 42.0 (1.00×) · 2.00 / 2.00 |",
		"| fanout_get_all_databases, 4 catalogs | 1 | 42.0 · 2.00 / 2.00 | - | 42.0 (1.00×) · 2.00 / 2.00 |",
		"| max RSS MiB | | 30.0 | 400.0 | 300.0 |",
		"| fanout_get_table_meta | hive | 4 | 8 | 10.0 | 60.0 | 1.50 | 50.0 | 1.20 | - |",
		"## Fan-out: get_all_databases over 2 and 4 catalogs, cached and uncached", "does not serve the database list cache yet",
		"| `proxy-hive-4cat-cached` | 1 | 2.00 / 2.00 / 2.00 | 10.0 | 42.0 | 30.0 | 0 |", "| `waggle-dance-hive` | 1 |", "| `java-proxy-hive-4cat` | 1 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
}
