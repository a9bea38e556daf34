package report

import (
	"fmt"
	"html"
	"math"
	"os"
	"strings"
)

// setupStyle: colour and legend label of each setup in the chart.
var setupStyle = []struct{ key, color, label string }{
	{DirectHive, "#1f77b4", "direct to Hive 3.1.3"},
	{FwdHive, "#17becf", "TCP forwarder to Hive 3.1.3"},
	{ProxyHive, "#d62728", "hms-proxy to Hive 3.1.3"},
	{ProxyHive4, "#9467bd", "hms-proxy, 4 catalogs on Hive"},
	{ProxyHive2, "#bcbd22", "hms-proxy, 2 catalogs on Hive"},
	{ProxyHive4Cache, "#aec7e8", "hms-proxy, 4 catalogs, list cache set"},
	{WaggleHive, "#000000", "Waggle Dance 3.13.3 to Hive"},
	{JavaHive2, "#8c6d31", "Java HMS Proxy, 2 catalogs on Hive"},
	{JavaHive4, "#e7969c", "Java HMS Proxy, 4 catalogs on Hive"},
	{DirectInstant, "#2ca02c", "direct to instant backend"},
	{FwdInstant, "#7f7f7f", "TCP forwarder to instant"},
	{ProxyInstant, "#ff7f0e", "hms-proxy to instant"},
	{ProxyInstantNoA, "#8c564b", "hms-proxy (audit off) to instant"},
	{ProxyInstant4, "#e377c2", "hms-proxy, 4 catalogs on instant"},
	{ProxyInstantKrbAuth, "#bcbd22", "hms-proxy Kerberos auth to instant"},
	{ProxyInstantKrbConf, "#393b79", "hms-proxy Kerberos auth-conf to instant"},
}

// SVG draws one panel per workload: p50 (solid) and p99 (dashed) latency on a
// log scale against the number of connections, one line per setup.
func (r *Results) SVG() string {
	ws := workloadsOf(r)
	ks := concsOf(r)
	const (
		cols, pw, ph = 4, 290, 230 // panel size
		ml, mr, mt   = 52, 12, 34  // panel margins
		mb           = 34
	)
	used := func(key string) bool {
		for _, c := range r.Cells {
			if c.Setup == key && c.Skipped == "" && c.Ops > 0 {
				return true
			}
		}
		return false
	}
	entries := 0
	for _, s := range setupStyle {
		if used(s.key) {
			entries++
		}
	}
	top := 42 + 18*((max(entries, 1)+3)/4) // title + legend (4 entries a row)
	rows := (len(ws) + cols - 1) / cols
	W, H := cols*pw+20, top+rows*ph+10
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica,Arial,sans-serif" font-size="11">`+"\n", W, H, W, H)
	p(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	p(`<text x="10" y="20" font-size="15" font-weight="bold">hms-proxy benchmark: latency vs concurrent connections (ms, log scale; p50 solid, p99 dashed)</text>` + "\n")
	// legend
	x, y := 10, 42
	for _, s := range setupStyle {
		if !used(s.key) {
			continue
		}
		if x > W-230 {
			x, y = 10, y+18
		}
		p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"/>`, x, y-4, x+22, y-4, s.color)
		p(`<text x="%d" y="%d">%s</text>`+"\n", x+27, y, html.EscapeString(s.label))
		x += 285
	}
	for i, w := range ws {
		ox, oy := 10+(i%cols)*pw, top+(i/cols)*ph
		x0, x1 := ox+ml, ox+pw-mr
		y0, y1 := oy+mt, oy+ph-mb // y0 top
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, c := range r.Cells {
			if c.Workload != w || c.Skipped != "" || c.Ops == 0 {
				continue
			}
			for _, v := range []float64{c.P50ms, c.P99ms} {
				if v > 0 {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
		p(`<text x="%d" y="%d" font-size="12" font-weight="bold">%s</text>`+"\n", x0, oy+18, html.EscapeString(w))
		p(`<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#bbbbbb"/>`+"\n", x0, y0, x1-x0, y1-y0)
		if math.IsInf(lo, 1) {
			p(`<text x="%d" y="%d" fill="#888">no data</text>`+"\n", x0+10, (y0+y1)/2)
			continue
		}
		dlo, dhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		if dhi == dlo {
			dhi++
		}
		ypos := func(v float64) float64 {
			return float64(y1) - (math.Log10(v)-dlo)/(dhi-dlo)*float64(y1-y0)
		}
		for d := dlo; d <= dhi; d++ {
			yy := ypos(math.Pow(10, d))
			p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`, x0, yy, x1, yy)
			p(`<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-4, yy+4, tick(math.Pow(10, d)))
		}
		xpos := func(j int) float64 {
			if len(ks) == 1 {
				return float64(x0+x1) / 2
			}
			return float64(x0) + 18 + float64(j)*float64(x1-x0-36)/float64(len(ks)-1)
		}
		for j, k := range ks {
			p(`<text x="%.1f" y="%d" text-anchor="middle">%d</text>`, xpos(j), y1+14, k)
		}
		p(`<text x="%d" y="%d" text-anchor="middle" fill="#555">connections</text>`+"\n", (x0+x1)/2, y1+28)
		for _, s := range setupStyle {
			for _, q := range []struct {
				dash string
				get  func(*Cell) float64
			}{{"", func(c *Cell) float64 { return c.P50ms }}, {` stroke-dasharray="4,3"`, func(c *Cell) float64 { return c.P99ms }}} {
				var pts []string
				for j, k := range ks {
					c := r.Cell(w, s.key, k)
					if c == nil || c.Skipped != "" || c.Ops == 0 || q.get(c) <= 0 {
						continue
					}
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", xpos(j), ypos(q.get(c))))
				}
				if len(pts) == 0 {
					continue
				}
				width := "2"
				if q.dash != "" {
					width = "1.2"
				}
				p(`<polyline fill="none" stroke="%s" stroke-width="%s"%s points="%s"/>`+"\n", s.color, width, q.dash, strings.Join(pts, " "))
				if q.dash == "" {
					for _, pt := range pts {
						xy := strings.Split(pt, ",")
						p(`<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`, xy[0], xy[1], s.color)
					}
					p("\n")
				}
			}
		}
	}
	p("</svg>\n")
	return b.String()
}

func tick(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0fs", v/1000)
	case v >= 1:
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

// WriteSVG writes the chart.
func (r *Results) WriteSVG(path string) error {
	return os.WriteFile(path, []byte(r.SVG()), 0o644)
}
