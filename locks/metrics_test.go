package locks

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hms-proxy/hms-proxy/monitoring"
)

func TestMetricsNamesAndLabels(t *testing.T) {
	m, reg := newTestMetrics()
	s := newShim(t, NewMemoryStore(), RulesHive3, withMetrics(m))
	mustLock(t, s, part("cat2", lockReq(1, comp(SR, opSelect, "sales", "orders", ""))))
	m.LockRequestSplit("hive")
	m.failure(OpAcquire, labelZooKeeper, "ConnectionLossException")
	m.handoff(OpCheckLock, "cat2", labelZooKeeper)
	want := map[string]string{
		MetricEvents:           "catalog,operation,result,store_mode",
		MetricStoreFailures:    "exception,operation,store_mode",
		MetricHandoffs:         "catalog,operation,store_mode",
		MetricActive:           "store_mode",
		MetricStoreInfo:        "store_mode",
		MetricLockRequestSplit: "catalog",
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		var labels []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		if w, ok := want[f.GetName()]; !ok || strings.Join(labels, ",") != w {
			t.Errorf("%s labels %v, want %q", f.GetName(), labels, w)
		}
		delete(want, f.GetName())
	}
	if len(want) != 0 {
		t.Errorf("not exported: %v", want)
	}
	if got := testutil.ToFloat64(m.active.WithLabelValues(labelInMemory)); got != 1 {
		t.Errorf("active = %v", got)
	}
	var nilMetrics *Metrics
	nilMetrics.LockRequestSplit("x") // nil-safe
}

// The shim's metrics live on the proxy's registry next to monitoring's (as app
// registers them); a conflicting definition of one of its names is a clear
// error naming it, not a panic.
func TestMetricsConflictIsAnError(t *testing.T) {
	reg := prometheus.NewRegistry()
	monitoring.NewMetrics(reg, nil)
	if _, err := NewMetrics(reg); err != nil {
		t.Fatalf("NewMetrics next to monitoring's metrics: %v", err)
	}
	clash := prometheus.NewRegistry()
	clash.MustRegister(prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricLockRequestSplit, Help: "another meaning"}, []string{"backend"}))
	if _, err := NewMetrics(clash); err == nil || !strings.Contains(err.Error(), MetricLockRequestSplit) {
		t.Fatalf("NewMetrics next to another definition of %s: %v, want an error naming it", MetricLockRequestSplit, err)
	}
	// the same definition twice is shared
	reg2 := prometheus.NewRegistry()
	a, err1 := NewMetrics(reg2)
	b, err2 := NewMetrics(reg2)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	a.LockRequestSplit("hive")
	if got := testutil.ToFloat64(b.split.WithLabelValues("hive")); got != 1 {
		t.Fatalf("shared counter = %v", got)
	}
}
