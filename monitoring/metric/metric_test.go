package metric

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Two parts defining the same metric on one registry share its series; a
// second definition under the same name with other labels is an error
// naming the metric and the owner.
func TestRegistrarSharesIdenticalMetricsAndNamesClashes(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := New(reg, "part a").CounterVec("x_total", "X.", "catalog")
	b := New(reg, "part b").CounterVec("x_total", "X.", "catalog")
	a.WithLabelValues("c1").Inc()
	b.WithLabelValues("c1").Inc()
	if a != b {
		t.Fatal("an identical definition was not shared")
	}
	r := New(reg, "part c")
	r.GaugeVec("x_total", "X.", "other")
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "part c") || !strings.Contains(err.Error(), "x_total") {
		t.Fatalf("clash: %v", err)
	}
	n := New(nil, "unregistered")
	n.Counter("y_total", "Y.").Inc()
	if n.Err() != nil {
		t.Fatal(n.Err())
	}
}
