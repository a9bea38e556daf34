package ranger

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hms-proxy/hms-proxy/testbed"
)

// The plugin against the test bed's Ranger Admin stand-in
// (testbed.RangerAdmin, serving the download formats on loopback).

func testdataBytes(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withVersion returns the policies document with another policyVersion and,
// when f is not nil, changed by f.
func withVersion(t *testing.T, doc []byte, v int64, f func(sp map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	m["policyVersion"] = v
	if f != nil {
		f(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func startAdmin(t *testing.T, o testbed.RangerAdminOptions) *testbed.RangerAdmin {
	t.Helper()
	a, err := testbed.StartRangerAdmin(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	a.SetPolicies("hms_hive", testdataBytes(t, "hms_hive-policies.json"))
	a.SetRoles("hms_hive", testdataBytes(t, "hms_hive-roles.json"))
	return a
}

func newPlugin(t *testing.T, urls []string, cacheDir string, mod func(*Options)) *Plugin {
	t.Helper()
	o := Options{ServiceType: "hive", CacheDir: cacheDir, PollInterval: time.Hour,
		Admin: AdminOptions{URLs: urls, ServiceName: "hms_hive", AppID: "hms-proxy", Hostname: "proxy1",
			ConnectTimeout: 5 * time.Second, ReadTimeout: 20 * time.Second},
		Engine: EngineOptions{Location: time.UTC}}
	if mod != nil {
		mod(&o)
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func refresh(t *testing.T, p *Plugin) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return p.Refresh(ctx)
}

var analystSelect = Request{User: "alice", Groups: []string{"analysts"}, Database: "marketing", Table: "campaigns", Access: "select"}

// closedURL is a loopback URL nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String()
	ln.Close()
	return u
}

// Download: the Java plugin's paths and parameters, the cache files in the
// Java plugin's names, then an unchanged set costs one 304 per document and
// nothing else (the engine in force stays the same object).
func TestDownloadAndUnchanged(t *testing.T) {
	a := startAdmin(t, testbed.RangerAdminOptions{})
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	p := newPlugin(t, []string{a.URL + "/"}, dir, func(o *Options) { o.Metrics = NewMetrics(reg) })
	if err := p.Ready(); err == nil || !strings.Contains(err.Error(), "not been downloaded yet") {
		t.Fatalf("before the first download: %v", err)
	}
	if d := p.For("c1").IsAllowed(&analystSelect); d.Allowed || !strings.Contains(d.Reason, "not ready") {
		t.Fatalf("a check before any policies must be denied with the reason: %+v", d)
	}
	if err := refresh(t, p); err != nil {
		t.Fatal(err)
	}
	if err := p.Ready(); err != nil {
		t.Fatal(err)
	}
	if d := p.For("c1").IsAllowed(&analystSelect); !d.Allowed || d.PolicyID != 10 {
		t.Fatalf("analyst select: %+v", d)
	}
	reqs := a.Requests()
	if len(reqs) != 2 || reqs[0].Path != "/service/roles/download/hms_hive" || reqs[1].Path != "/service/plugins/policies/download/hms_hive" {
		t.Fatalf("requests: %+v", reqs)
	}
	q := reqs[1].Query
	for k, want := range map[string]string{"lastKnownVersion": "-1", "pluginId": "hms-proxy@proxy1-hms_hive", "supportsPolicyDeltas": "false",
		"clusterName": "", "lastActivationTime": "0", "pluginCapabilities": pluginCapabilities} {
		if got, ok := q[k]; !ok || got != want {
			t.Errorf("policy download parameter %s=%q (present %v), want %q", k, got, ok, want)
		}
	}
	if q := reqs[0].Query; q["lastKnownRoleVersion"] != "-1" {
		t.Errorf("roles download parameters %v", q)
	}
	for _, f := range []string{"hms-proxy_hms_hive.json", "hms-proxy_hms_hive_roles.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("policy cache file: %v", err)
		}
	}
	e := p.Engine()
	if err := refresh(t, p); err != nil {
		t.Fatal(err)
	}
	reqs = a.Requests()[2:]
	if len(reqs) != 2 || reqs[0].Status != 304 || reqs[1].Status != 304 || reqs[1].Query["lastKnownVersion"] != "5" || reqs[0].Query["lastKnownRoleVersion"] != "3" {
		t.Fatalf("second round: %+v", reqs)
	}
	if reqs[1].Query["lastActivationTime"] == "0" {
		t.Errorf("lastActivationTime not sent after activation")
	}
	if p.Engine() != e {
		t.Fatal("an unchanged policy set rebuilt the engine")
	}
	// a new version replaces the policies
	a.SetPolicies("hms_hive", withVersion(t, testdataBytes(t, "hms_hive-policies.json"), 6, func(m map[string]any) {
		m["policies"] = m["policies"].([]any)[:2] // only hive's own policies are left
	}))
	if err := refresh(t, p); err != nil {
		t.Fatal(err)
	}
	if d := p.For("c1").IsAllowed(&analystSelect); d.Allowed {
		t.Fatalf("after the grant was removed: %+v", d)
	}
	if got := testutil.ToFloat64(p.o.Metrics.policyVer.WithLabelValues("hms_hive")); got != 6 {
		t.Errorf("policy version gauge %v", got)
	}
	if got := testutil.ToFloat64(p.o.Metrics.downloads.WithLabelValues("hms_hive", "policies", "unchanged")); got != 1 {
		t.Errorf("unchanged downloads %v", got)
	}
	if got := testutil.ToFloat64(p.o.Metrics.evaluations.WithLabelValues("c1", "table", "select", "allowed")); got != 1 {
		t.Errorf("allowed evaluations %v", got)
	}
	if got := testutil.ToFloat64(p.o.Metrics.info.WithLabelValues("c1", "hms_hive", "hive", "hms-proxy")); got != 1 {
		t.Errorf("plugin info %v", got)
	}
}

// Admin down at start: with the cache of an earlier run the last policies
// are enforced; without one the plugin is not ready and says why.
func TestAdminDownAtStart(t *testing.T) {
	a := startAdmin(t, testbed.RangerAdminOptions{})
	dir := t.TempDir()
	if err := refresh(t, newPlugin(t, []string{a.URL}, dir, nil)); err != nil {
		t.Fatal(err)
	}
	down := closedURL(t)

	p := newPlugin(t, []string{down}, dir, nil)
	if err := p.Ready(); err != nil {
		t.Fatalf("with a policy cache: %v", err)
	}
	err := refresh(t, p)
	if err == nil || !strings.Contains(err.Error(), "no Ranger Admin answered") {
		t.Fatalf("refresh with Admin down: %v", err)
	}
	if d := p.For("c1").IsAllowed(&analystSelect); !d.Allowed || d.PolicyID != 10 {
		t.Fatalf("cached policies not enforced: %+v", d)
	}
	if in := p.Info(); !in.Ready || in.PolicyVersion != 5 || !strings.HasPrefix(in.Source, "cache ") || in.LastError == "" {
		t.Fatalf("info %+v", in)
	}

	p = newPlugin(t, []string{down}, "", nil)
	_ = refresh(t, p)
	err = p.Ready()
	if err == nil || !strings.Contains(err.Error(), "no policies of service hms_hive") || !strings.Contains(err.Error(), strings.TrimPrefix(down, "http://")) {
		t.Fatalf("without a cache: %v", err)
	}
	if d := p.For("c1").IsAllowed(&analystSelect); d.Allowed || !strings.Contains(d.Reason, "not ready") {
		t.Fatalf("a check without policies: %+v", d)
	}
	if kept, err := p.For("c1").FilterDatabases(Subject{User: "alice"}, []string{"marketing"}); len(kept) != 0 || err == nil {
		t.Fatalf("filtering without policies kept %v (%v)", kept, err)
	}
}

// Failover: a dead first URL, a live second; the next round starts with the
// URL that answered.
func TestFailover(t *testing.T) {
	a := startAdmin(t, testbed.RangerAdminOptions{})
	p := newPlugin(t, []string{closedURL(t), a.URL}, "", nil)
	if err := refresh(t, p); err != nil {
		t.Fatal(err)
	}
	if err := p.Ready(); err != nil {
		t.Fatal(err)
	}
	n := len(a.Requests())
	if err := refresh(t, p); err != nil {
		t.Fatal(err)
	}
	if got := len(a.Requests()) - n; got != 2 {
		t.Fatalf("second round made %d requests to the live Admin", got)
	}
	if in := p.Info(); in.Source != a.URL {
		t.Fatalf("source %q", in.Source)
	}
}

// A service Admin does not know: not ready, and the cache is set aside so a
// restart does not enforce a deleted service's policies.
func TestServiceNotFound(t *testing.T) {
	a := startAdmin(t, testbed.RangerAdminOptions{})
	dir := t.TempDir()
	p := newPlugin(t, []string{a.URL}, dir, func(o *Options) { o.Admin.ServiceName = "gone" })
	err := refresh(t, p)
	if err == nil || !strings.Contains(p.Ready().Error(), "service gone is unknown to Ranger Admin") {
		t.Fatalf("refresh %v, ready %v", err, p.Ready())
	}
}

// Tag policies, zones and missing roles leave the plugin not ready with the
// reason; ranger.ignore-tag-policies accepts tag policies knowingly.
func TestNotEnforceable(t *testing.T) {
	doc := testdataBytes(t, "hms_hive-policies.json")
	for _, c := range []struct {
		name   string
		doc    []byte
		roles  bool
		ignore bool
		want   string
	}{
		{"tags", withVersion(t, doc, 7, func(m map[string]any) {
			m["tagPolicies"] = map[string]any{"serviceName": "tags", "policyVersion": 2, "policies": []any{map[string]any{"id": 100, "name": "pii"}}}
		}), true, false, "1 tag-based policies (tag service tags)"},
		{"tags ignored", withVersion(t, doc, 7, func(m map[string]any) {
			m["tagPolicies"] = map[string]any{"serviceName": "tags", "policies": []any{map[string]any{"id": 100, "name": "pii"}}}
		}), true, true, ""},
		{"zones", withVersion(t, doc, 7, func(m map[string]any) { m["securityZones"] = map[string]any{"finance": map[string]any{}} }), true, false, "security zones (finance)"},
		{"roles missing", doc, false, false, "name roles, but the roles of the service could not be downloaded"},
	} {
		a := startAdmin(t, testbed.RangerAdminOptions{})
		a.SetPolicies("hms_hive", c.doc)
		if !c.roles {
			a.SetRoles("hms_hive", nil)
		}
		p := newPlugin(t, []string{a.URL}, "", func(o *Options) { o.IgnoreTagPolicies = c.ignore })
		_ = refresh(t, p)
		err := p.Ready()
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: ready = %v, want %q", c.name, err, c.want)
		}
	}
}

// Listing filters keep order and count what they hide.
func TestFilters(t *testing.T) {
	a := startAdmin(t, testbed.RangerAdminOptions{})
	reg := prometheus.NewRegistry()
	p := newPlugin(t, []string{a.URL}, "", func(o *Options) { o.Metrics = NewMetrics(reg) })
	if err := refresh(t, p); err != nil {
		t.Fatal(err)
	}
	az := p.For("apache")
	alice := Subject{User: "alice", Groups: []string{"analysts"}}
	dbs, err := az.FilterDatabases(alice, []string{"sales", "marketing", "hr", "alice", "tmp"})
	if err != nil || fmt.Sprint(dbs) != "[marketing alice]" {
		t.Fatalf("databases %v %v", dbs, err)
	}
	tables, err := az.FilterTables(Subject{User: "bob", Groups: []string{"etl"}}, "sales", []string{"orders", "tmp_load", "items"})
	if err != nil || fmt.Sprint(tables) != "[orders items]" {
		t.Fatalf("tables %v %v", tables, err)
	}
	if got := testutil.ToFloat64(p.o.Metrics.filtered.WithLabelValues("apache", "database")); got != 3 {
		t.Errorf("filtered databases %v", got)
	}
	if got := testutil.ToFloat64(p.o.Metrics.filtered.WithLabelValues("apache", "table")); got != 1 {
		t.Errorf("filtered tables %v", got)
	}
}

// Start refreshes at once and then on its interval; stop ends the loop.
func TestStart(t *testing.T) {
	a := startAdmin(t, testbed.RangerAdminOptions{})
	p := newPlugin(t, []string{a.URL}, "", func(o *Options) { o.PollInterval = 10 * time.Millisecond })
	stop := p.Start(context.Background())
	deadline := time.Now().Add(time.Minute)
	for len(a.Requests()) < 6 && time.Now().Before(deadline) { // three rounds
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	if err := p.Ready(); err != nil {
		t.Fatal(err)
	}
	n := len(a.Requests())
	if n < 6 {
		t.Fatalf("%d requests in a minute", n)
	}
	for _, r := range a.Requests()[2:] {
		if r.Status != 304 {
			t.Fatalf("later rounds must be 304s: %+v", r)
		}
	}
}

// The metric names and labels are those the dashboard, the alerts and
// docs/ranger.md use (monitoring/dashboard_test.go repeats them).
func TestMetricNamesAndLabels(t *testing.T) {
	a := startAdmin(t, testbed.RangerAdminOptions{})
	reg := prometheus.NewRegistry()
	p := newPlugin(t, []string{a.URL}, "", func(o *Options) { o.Metrics = NewMetrics(reg) })
	if err := refresh(t, p); err != nil {
		t.Fatal(err)
	}
	if _, err := p.For("c1").FilterDatabases(Subject{User: "alice"}, []string{"sales", "alice"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		MetricEvaluationsTotal:          "access_type,catalog,resource_type,result",
		MetricEvaluationDurationSeconds: "catalog,resource_type",
		MetricFilteredObjectsTotal:      "catalog,resource_type",
		MetricPluginInfo:                "app_id,catalog,service_name,service_type",
		MetricPolicyDownloadsTotal:      "kind,result,service_name",
		MetricPolicyVersion:             "service_name",
		MetricPolicyLastSuccess:         "service_name",
		MetricPluginReady:               "service_name",
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, mf := range mfs {
		var names []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			names = append(names, l.GetName())
		}
		got[mf.GetName()] = strings.Join(names, ",")
	}
	for n, labels := range want {
		if got[n] != labels {
			t.Errorf("%s: labels %q, want %q", n, got[n], labels)
		}
	}
	if len(got) != len(want) {
		t.Errorf("exported %v", got)
	}
}
