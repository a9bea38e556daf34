package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func us(n int) time.Duration { return time.Duration(n) * time.Microsecond }

// Two slices of one cell add up: CPU and backend calls are per successful
// call over both, the quantiles are over every latency, and the first error
// is kept.
func TestRangerAccAddsSlices(t *testing.T) {
	var a RangerAcc
	a.Add(RangerSample{Latencies: []time.Duration{us(100), us(300)}, ProxyCPU: us(200), MetastoreCPU: us(40), BackendCalls: 1})
	a.Add(RangerSample{Latencies: []time.Duration{us(200), us(400)}, Errors: 2, FirstErr: "NoSuchObjectException",
		ProxyCPU: us(200), MetastoreCPU: us(0), BackendCalls: 0})
	a.Add(RangerSample{Errors: 1, FirstErr: "later"})
	c := a.Cell("get_table", RangerCached)
	want := RangerCell{Workload: "get_table", Setup: RangerCached, Calls: 4, Errors: 3, FirstError: "NoSuchObjectException",
		ProxyCPUUs: 100, MetastoreCPUUs: 10, TotalCPUUs: 110, P50Ms: 0.2, P99Ms: 0.4, BackendPer1000: 250}
	if c != want {
		t.Fatalf("cell:\n got %+v\nwant %+v", c, want)
	}
	if empty := (&RangerAcc{}).Cell("w", RangerDirect); empty.Calls != 0 || empty.TotalCPUUs != 0 || empty.BackendPer1000 != 0 {
		t.Fatalf("a cell without calls: %+v", empty)
	}
}

func rangerSample() *RangerResults {
	r := &RangerResults{Start: "2026-12-02T03:00:00Z", DurationS: 90, LoadBefore: "1.0 1.0 1.0", LoadAfter: "2.0 1.5 1.0",
		Users: 100, Groups: 4, World: "the world.", Workloads: []string{"get_all_databases", "get_table"}, Rounds: 2, SliceS: 1}
	r.Cells = []RangerCell{
		{Workload: "get_all_databases", Setup: RangerDirect, Calls: 1000, MetastoreCPUUs: 400, TotalCPUUs: 400, BackendPer1000: 1000},
		{Workload: "get_all_databases", Setup: RangerCached, Calls: 2000, ProxyCPUUs: 80, MetastoreCPUUs: 5, TotalCPUUs: 85, BackendPer1000: 0.5},
		{Workload: "get_all_databases", Setup: RangerUncached, Calls: 900, ProxyCPUUs: 150, MetastoreCPUUs: 410, TotalCPUUs: 560, BackendPer1000: 1000},
		{Workload: "get_table", Setup: RangerDirect, Calls: 1000, MetastoreCPUUs: 300, TotalCPUUs: 300, BackendPer1000: 1000},
		{Workload: "get_table", Setup: RangerCached, Calls: 1000, ProxyCPUUs: 320, MetastoreCPUUs: 4, TotalCPUUs: 324, BackendPer1000: 12,
			Errors: 1, FirstError: "boom"},
	}
	r.SetTargets()
	return r
}

// The targets compare the cached setup with direct per workload: met or not
// by the stated bounds, measured values shown.
func TestRangerTargets(t *testing.T) {
	r := rangerSample()
	if len(r.Targets) != 4 {
		t.Fatalf("targets: %+v", r.Targets)
	}
	got := map[string]bool{}
	for _, tg := range r.Targets {
		got[tg.Goal] = tg.Met
	}
	want := map[string]bool{
		"get_all_databases, 100 users: metastore calls per 1,000 client calls, Ranger + shared caches ≤ 10":                true,
		"get_all_databases, 100 users: proxy CPU per call with Ranger + shared caches ≤ direct's CPU per call (metastore)": true,
		"get_table, 100 users: metastore calls per 1,000 client calls, Ranger + shared caches ≤ 10":                        false,
		"get_table, 100 users: proxy CPU per call with Ranger + shared caches ≤ direct's CPU per call (metastore)":         false,
	}
	for g, m := range want {
		if v, ok := got[g]; !ok || v != m {
			t.Errorf("target %q: met=%v present=%v, want met=%v", g, v, ok, m)
		}
	}
	if m := r.Targets[1].Measured; m != "80 µs vs 400 µs (0.20×)" {
		t.Errorf("measured %q", m)
	}
}

// The table has one row per workload and setup present, in report order,
// with the ratio to direct, "-" for direct's proxy CPU, and the errors.
func TestRangerMarkdown(t *testing.T) {
	md := rangerSample().Markdown()
	for _, want := range []string{
		"# Ranger with shared caches: 100 users",
		"| get_all_databases | direct (no filtering) | - | 400 | 400 | 1.00× | 0.000 | 0.000 | 1000.0 | 1000 | 0 |",
		"| get_all_databases | hms-proxy, Ranger + shared caches | 80 | 5 | 85 | 0.21× | 0.000 | 0.000 | 0.5 | 2000 | 0 |",
		"| get_all_databases | hms-proxy, Ranger, no cache | 150 | 410 | 560 | 1.40× |",
		"| get_table | hms-proxy, Ranger + shared caches | 320 | 4 | 324 | 1.08× |",
		"- get_table through hms-proxy, Ranger + shared caches: first error: boom",
		"| get_table, 100 users: metastore calls per 1,000 client calls, Ranger + shared caches ≤ 10 | 12.0 (direct: 1000) | no |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in\n%s", want, md)
		}
	}
	if strings.Contains(md, "| get_table | hms-proxy, Ranger, no cache") {
		t.Errorf("a row for an absent cell:\n%s", md)
	}
	if a, b := strings.Index(md, "| get_all_databases | direct"), strings.Index(md, "| get_all_databases | hms-proxy, Ranger + shared"); a > b {
		t.Errorf("direct is not first")
	}
}

// Write leaves ranger.json (which reads back to the same results) and ranger.md.
func TestRangerWrite(t *testing.T) {
	dir := t.TempDir()
	r := rangerSample()
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "ranger.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back RangerResults
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Markdown() != r.Markdown() {
		t.Fatal("ranger.json does not render to the same table")
	}
	md, err := os.ReadFile(filepath.Join(dir, "ranger.md"))
	if err != nil || string(md) != r.Markdown() {
		t.Fatalf("ranger.md: %v", err)
	}
}
