package promtest

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMetricNames(t *testing.T) {
	cases := map[string][]string{
		`sum(rate(hms_proxy_requests_total{method=~".*", status="error"}[1m]))`:                                      {"hms_proxy_requests_total"},
		`histogram_quantile(0.95, sum by (method, le) (rate(hms_proxy_request_duration_seconds_bucket{a="b"}[5m])))`: {"hms_proxy_request_duration_seconds_bucket"},
		`sum(rate(a_total[1m])) by (x) / ignoring(y) group_left sum without (z) (b_total offset 5m)`:                 {"a_total", "b_total"},
		`(sum(rate(x{s="a{b}[c]"}[1m])) or vector(0)) / on (i) c:recorded:rule`:                                      {"c:recorded:rule", "x"},
		`topk(10, sum by (method) (rate(m[1m]))) > 0.5e3 and bool up`:                                                {"m", "up"},
		`rate(go_gc_duration_seconds_sum[1m]) / rate(go_gc_duration_seconds_count[1m])`:                              {"go_gc_duration_seconds_count", "go_gc_duration_seconds_sum"},
		`max_over_time(process_resident_memory_bytes[1h:1m] @ start())`:                                              {"process_resident_memory_bytes"},
		`count by (catalog) (hms_proxy_requests_total)`:                                                              {"hms_proxy_requests_total"},
	}
	for expr, want := range cases {
		got, err := MetricNames(expr)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("MetricNames(%q) = %v, %v; want %v", expr, got, err, want)
		}
	}
	for _, bad := range []string{`x{a="b"`, `x{a="b}`, `rate(x[1m)`} {
		if _, err := MetricNames(bad); err == nil {
			t.Errorf("MetricNames(%q): want error", bad)
		}
	}
}

const fixture = `{
  "panels": [
    {"type": "timeseries", "title": "A", "targets": [
      {"refId": "A", "expr": "sum(rate(m_total{c=~\"$catalog\", b=~\"${backend}\", x=~\"${method:regex}\", y=~\"[[catalog]]\"}[$__rate_interval]))"},
      {"refId": "B", "expr": "hidden_metric", "hide": true}
    ]},
    {"type": "row", "title": "Collapsed", "collapsed": true, "panels": [
      {"type": "stat", "title": "Inner", "targets": [{"refId": "A", "expr": "increase(n_total[$__range])"}]}
    ]}
  ],
  "templating": {"list": [
    {"name": "datasource", "type": "datasource", "query": "prometheus"},
    {"name": "catalog", "type": "query", "query": {"query": "label_values(m_total, catalog)"}},
    {"name": "backend", "type": "query", "query": "label_values(m_total{c=~\"$catalog\"}, backend)"},
    {"name": "method", "type": "custom", "query": "a,b"}
  ]}
}`

func writeFixture(t *testing.T, content string) string {
	p := filepath.Join(t.TempDir(), "d.json")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDashboardExprs(t *testing.T) {
	exprs, err := DashboardExprs(writeFixture(t, fixture))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range exprs {
		got[e.Source] = e.Query
	}
	want := map[string]string{
		`variable "catalog"`:                     `count by (catalog) (m_total)`,
		`variable "backend"`:                     `count by (backend) (m_total{c=~".*"})`,
		`panel "A" target A`:                     `sum(rate(m_total{c=~".*", b=~".*", x=~".*", y=~".*"}[1m]))`,
		`row "Collapsed" panel "Inner" target A`: `increase(n_total[1h])`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %#v\nwant %#v", got, want)
	}
}

func TestDashboardExprsRejectsUnknownVariable(t *testing.T) {
	p := writeFixture(t, `{"panels":[{"type":"timeseries","title":"P","targets":[{"refId":"A","expr":"x{a=~\"$nope\"}"}]}]}`)
	_, err := DashboardExprs(p)
	if err == nil || !strings.Contains(err.Error(), "$nope") || !strings.Contains(err.Error(), `panel "P"`) {
		t.Fatalf("want error naming $nope and the panel, got %v", err)
	}
}

func TestFindBinaryMissingGivesInstallHint(t *testing.T) {
	_, err := FindBinary("/nonexistent/prometheus")
	if err == nil || !strings.Contains(err.Error(), "apt-get install -y prometheus") {
		t.Fatalf("want apt-get hint, got %v", err)
	}
}

func TestStartQueryStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Prometheus server")
	}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "# TYPE promtest_probe gauge")
		fmt.Fprintln(w, `promtest_probe{kind="a"} 1`)
		fmt.Fprintln(w, `promtest_probe{kind="b"} 2`)
	}))
	defer target.Close()

	s, err := Start(strings.TrimPrefix(target.URL, "http://"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	pid := s.cmd.Process.Pid
	if err := s.WaitForScrapes(2, 60*time.Second); err != nil {
		s.Stop()
		t.Fatal(err)
	}
	n, err := s.Query(`promtest_probe`)
	if err != nil || n != 2 {
		t.Errorf("Query(promtest_probe) = %d, %v; want 2 series", n, err)
	}
	if n, err := s.Query(`absent_metric_xyz`); err != nil || n != 0 {
		t.Errorf("absent metric: %d, %v", n, err)
	}
	if _, err := s.Query(`sum(`); err == nil || !strings.Contains(err.Error(), "bad_data") {
		t.Errorf("syntax error must be reported, got %v", err)
	}
	if n, err := s.Query(`scalar(sum(promtest_probe))`); err != nil || n != 1 {
		t.Errorf("scalar: %d, %v", n, err)
	}
	dir := s.dir
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil { // idempotent
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("prometheus pid %d still exists after Stop: %v", pid, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp dir %s not removed: %v", dir, err)
	}
}

func TestStartRejectsBadTarget(t *testing.T) {
	if _, err := Start("no-port", Options{}); err == nil || !strings.Contains(err.Error(), "host:port") {
		t.Fatalf("want host:port error, got %v", err)
	}
}

func TestRuleFilesAreLoadedAndReported(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Prometheus server")
	}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "# TYPE promtest_probe gauge")
		fmt.Fprintln(w, `promtest_probe{kind="a"} 3`)
	}))
	defer target.Close()
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(rules, []byte(`groups:
  - name: g
    rules:
      - alert: ProbeHigh
        expr: promtest_probe > 1
        for: 1h
        labels: {severity: warning}
        annotations: {summary: "probe {{ $labels.kind }} is {{ $value }}"}
      - record: probe:sum
        expr: sum(promtest_probe)
`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := StartT(t, strings.TrimPrefix(target.URL, "http://"), Options{RuleFiles: []string{rules}})
	if err := s.WaitForScrapes(2, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := s.Rules()
		if err != nil {
			t.Fatal(err)
		}
		var alert, record *Rule
		for i := range got {
			switch got[i].Name {
			case "ProbeHigh":
				alert = &got[i]
			case "probe:sum":
				record = &got[i]
			}
		}
		if alert == nil || record == nil {
			t.Fatalf("rules loaded: %+v", got)
		}
		if alert.State == "pending" && len(alert.Alerts) == 1 && record.Health == "ok" {
			a := alert.Alerts[0]
			if alert.Health != "ok" || alert.Type != "alerting" || alert.Group != "g" || a.Labels["kind"] != "a" ||
				a.Labels["severity"] != "warning" || a.Annotations["summary"] != "probe a is 3" || a.Value != "3e+00" {
				t.Fatalf("alert %+v", *alert)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ProbeHigh not pending within 30 s: %+v %+v", *alert, *record)
		}
		time.Sleep(250 * time.Millisecond)
	}

	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte("groups:\n  - name: g\n    rules:\n      - alert: X\n        expr: sum(\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := Start(strings.TrimPrefix(target.URL, "http://"), Options{RuleFiles: []string{bad}, StartTimeout: 30 * time.Second}); err == nil {
		s.Stop()
		t.Fatal("a rule file with a syntax error must fail Start")
	} else if !strings.Contains(err.Error(), "bad.yml") {
		t.Errorf("the error should name the file: %v", err)
	}
}
