package monitoring

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
)

var testMethods = []string{"get_table", "get_all_databases", "get_all_tables", "lock", "get_table_req"}

// gather returns every sample of reg as "name{l1=v1,...}" -> value, with
// labels in declaration order (histograms report their sample count).
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var parts []string
			for _, lp := range m.GetLabel() {
				parts = append(parts, lp.GetName()+"="+lp.GetValue())
			}
			key := mf.GetName() + "{" + strings.Join(parts, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func TestMetricsNamesLabelsAndValues(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, testMethods)
	m.ObserveRequest("get_table", "catalog1", "catalog1", StatusOK, 8*time.Millisecond)
	m.ObserveRequest("get_table", "catalog1", "catalog1", StatusOK, 2*time.Second)
	m.ObserveRequest("get_all_databases", FanoutCatalog, FanoutBackend, StatusOK, time.Millisecond)
	m.ObserveRequest("get_table", "catalog2", "catalog2", StatusThrottled, 0)
	m.ObserveRequest("get_table", "catalog2", "catalog2", StatusFallback, 0)
	m.ObserveRequest("no_such_rpc_\xff", "catalog1", "catalog1", StatusError, 0)
	m.ObserveRequest("another_unknown", "catalog1", "catalog1", "weird", 0)
	m.BackendFailure("catalog1", "MetaException")
	m.BackendFallback("get_table", "APACHE_3_1_3", "HORTONWORKS_3_1_0_3_1_0_78")
	m.RoutingAmbiguous()
	m.DefaultCatalogRouted("get_table")
	m.DefaultCatalogRouted("get_table") // the cached counter counts on
	m.DefaultCatalogRouted("no_such_rpc")
	m.FilteredObjects("get_all_tables", "catalog1", "table", 2)
	m.FilteredObjects("get_all_tables", "catalog1", "table", 0)
	m.SessionAcquireTimeout("catalog1", OperationBorrow)
	m.RateLimited("principal", "default", "get_table", "metadata_read", "catalog1")
	m.SetBackendSessions("catalog1", 3, 5)
	m.FrontendConnectionOpened("primary")
	m.FrontendConnectionOpened("primary")
	m.FrontendConnectionClosed("primary")
	m.BadFrame("primary", "oversized")
	m.FrontendInFlight("primary", 1)
	m.FrontendInFlight("primary", 1)
	m.FrontendInFlight("primary", 1)
	m.FrontendInFlight("primary", -1)
	m.FrontendInFlight("rest", 1)

	got := gather(t, reg)
	want := map[string]float64{
		"hms_proxy_requests_total{method=get_table,catalog=catalog1,backend=catalog1,status=ok}":                                        2,
		"hms_proxy_requests_total{method=get_all_databases,catalog=all,backend=fanout,status=ok}":                                       1,
		"hms_proxy_requests_total{method=get_table,catalog=catalog2,backend=catalog2,status=throttled}":                                 1,
		"hms_proxy_requests_total{method=get_table,catalog=catalog2,backend=catalog2,status=fallback}":                                  1,
		"hms_proxy_requests_total{method=other,catalog=catalog1,backend=catalog1,status=error}":                                         1,
		"hms_proxy_requests_total{method=other,catalog=catalog1,backend=catalog1,status=other}":                                         1,
		"hms_proxy_request_duration_seconds{method=get_table,catalog=catalog1,backend=catalog1}":                                        2,
		"hms_proxy_request_duration_seconds{method=other,catalog=catalog1,backend=catalog1}":                                            2,
		"hms_proxy_backend_failures_total{backend=catalog1,exception=MetaException}":                                                    1,
		"hms_proxy_backend_fallback_total{method=get_table,from_api=APACHE_3_1_3,to_api=HORTONWORKS_3_1_0_3_1_0_78}":                    1,
		"hms_proxy_routing_ambiguous_total{}":                                                                                           1,
		"hms_proxy_default_catalog_routed_total{method=get_table}":                                                                      2,
		"hms_proxy_default_catalog_routed_total{method=other}":                                                                          1,
		"hms_proxy_frontend_inflight_calls{frontend=primary}":                                                                           2,
		"hms_proxy_frontend_inflight_calls{frontend=rest}":                                                                              1,
		"hms_proxy_filtered_objects_total{method=get_all_tables,catalog=catalog1,object_type=table}":                                    2,
		"hms_proxy_backend_session_acquire_timeouts_total{catalog=catalog1,operation=borrow}":                                           1,
		"hms_proxy_rate_limited_total{dimension=principal,scope=default,method=get_table,method_family=metadata_read,catalog=catalog1}": 1,
		"hms_proxy_backend_sessions{catalog=catalog1,state=active}":                                                                     3,
		"hms_proxy_backend_sessions{catalog=catalog1,state=idle}":                                                                       5,
		"hms_proxy_frontend_connections{frontend=primary}":                                                                              1,
		"hms_proxy_bad_frames_total{frontend=primary,reason=oversized}":                                                                 1,
	}
	want["hms_proxy_request_duration_seconds{method=get_table,catalog=catalog2,backend=catalog2}"] = 2
	want["hms_proxy_request_duration_seconds{method=get_all_databases,catalog=all,backend=fanout}"] = 1
	want = normalizeKeys(want)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	for k := range got {
		if strings.HasPrefix(k, "hms_proxy_") {
			if _, ok := want[k]; !ok {
				t.Errorf("unexpected series %s", k)
			}
		}
	}
	// Go runtime and process collectors replace the JVM gauges.
	for _, name := range []string{"go_goroutines{}", "go_memstats_heap_alloc_bytes{}", "process_resident_memory_bytes{}"} {
		if _, ok := got[name]; !ok {
			t.Errorf("runtime metric %s missing", name)
		}
	}
}

// normalizeKeys sorts the labels of each "name{a=b,...}" key the way the
// registry reports them, so expectations can be written in declaration order.
func normalizeKeys(in map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range in {
		i := strings.IndexByte(k, '{')
		body := strings.TrimSuffix(k[i+1:], "}")
		var parts []string
		if body != "" {
			parts = strings.Split(body, ",")
		}
		sort.Strings(parts)
		out[k[:i]+"{"+strings.Join(parts, ",")+"}"] = v
	}
	return out
}

func TestHistogramBucketsSpanLatencies(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, testMethods)
	m.ObserveRequest("get_table", "c", "c", StatusOK, 30*time.Millisecond)
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != MetricRequestDurationSeconds {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		for _, b := range h.GetBucket() {
			wantCount := uint64(0)
			if b.GetUpperBound() >= 0.03 {
				wantCount = 1
			}
			if b.GetCumulativeCount() != wantCount {
				t.Errorf("bucket le=%v count %d want %d", b.GetUpperBound(), b.GetCumulativeCount(), wantCount)
			}
		}
		if h.GetSampleSum() < 0.029 || h.GetSampleSum() > 0.031 {
			t.Errorf("sum %v", h.GetSampleSum())
		}
		return
	}
	t.Fatal("histogram not gathered")
}

func TestDynamicLabelValuesAreBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, testMethods)
	for i := 0; i < maxDynamicLabelValues+50; i++ {
		m.BackendFailure("catalog1", "Exception"+strings.Repeat("x", i))
	}
	n := 0
	other := 0.0
	for k, v := range gather(t, reg) {
		if strings.HasPrefix(k, MetricBackendFailuresTotal) {
			n++
			if strings.Contains(k, "exception=other") {
				other = v
			}
		}
	}
	if n != maxDynamicLabelValues+1 || other != 50 {
		t.Fatalf("want %d series with 50 folded into other, got %d series, other=%v", maxDynamicLabelValues+1, n, other)
	}
}

func TestNilMetricsIsNoop(t *testing.T) {
	var m *Metrics
	m.ObserveRequest("get_table", "c", "c", StatusOK, time.Second)
	m.BackendFailure("c", "E")
	m.BackendFallback("get_table", "a", "b")
	m.RoutingAmbiguous()
	m.DefaultCatalogRouted("x")
	m.FilteredObjects("x", "c", "table", 1)
	m.SessionAcquireTimeout("c", OperationBorrow)
	m.RateLimited("a", "b", "c", "d", "e")
	m.SetBackendSessions("c", 1, 1)
	m.FrontendConnectionOpened("f")
	m.FrontendConnectionClosed("f")
	m.BadFrame("f", "r")
}

func TestNewMetricsOnRegistryWithRuntimeCollectors(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewMetrics(reg, nil)
	// A second registry that already holds Go/process collectors (like the
	// default registerer) must be accepted.
	reg2 := prometheus.NewPedanticRegistry()
	reg2.MustRegister(collectors.NewGoCollector())
	NewMetrics(reg2, nil)
	if _, err := reg2.Gather(); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkObserveRequest(b *testing.B) {
	m := NewMetrics(prometheus.NewRegistry(), testMethods)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.ObserveRequest("get_table", "catalog1", "catalog1", StatusOK, 3*time.Millisecond)
		}
	})
}

func BenchmarkWithLabelValuesBaseline(b *testing.B) {
	m := NewMetrics(prometheus.NewRegistry(), testMethods)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.requests.WithLabelValues("get_table", "catalog1", "catalog1", StatusOK).Inc()
			m.duration.WithLabelValues("get_table", "catalog1", "catalog1").Observe(0.003)
		}
	})
}

func TestObserveRequestAllocations(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry(), testMethods)
	m.ObserveRequest("get_table", "catalog1", "catalog1", StatusOK, time.Millisecond)
	a := testing.AllocsPerRun(1000, func() {
		m.ObserveRequest("get_table", "catalog1", "catalog1", StatusOK, time.Millisecond)
	})
	if a != 0 {
		t.Fatalf("ObserveRequest allocates %.1f per call on a known label set", a)
	}
}
