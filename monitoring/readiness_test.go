package monitoring

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrape reads /metrics and returns every sample as "name{labels}" -> value.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	code, body := get(t, base+"/metrics", 10*time.Second)
	if code != 200 {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

func wantSamples(t *testing.T, step string, got map[string]float64, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: /metrics lacks %s", step, k)
		} else if g != v {
			t.Errorf("%s: %s = %v, want %v", step, k, g, v)
		}
	}
}

// The readiness gauges follow what /readyz answered, the connectivity gauge
// follows the live backend state, and both are served next to the proxy's
// own registry.
func TestReadinessMetricsFollowReadyz(t *testing.T) {
	src := newFakeSource(BackendState{Catalog: "catalog1", Connected: true}, BackendState{Catalog: "catalog2", Connected: true})
	_, base := startManagement(t, ManagementConfig{}, src) // readiness cache 0: every /readyz probes

	m := scrape(t, base)
	wantSamples(t, "before any /readyz", m, map[string]float64{
		`hms_proxy_ready`: 0,
		`hms_proxy_readiness_checks_total{result="ready"}`:     0,
		`hms_proxy_readiness_checks_total{result="not_ready"}`: 0,
		`hms_proxy_readiness_transitions_total`:                0,
		`hms_proxy_backend_connected{catalog="catalog1"}`:      1,
		`hms_proxy_backend_connected{catalog="catalog2"}`:      1,
	})
	if _, ok := m[`hms_proxy_requests_total{backend="catalog1",catalog="catalog1",method="get_table",status="ok"}`]; !ok {
		t.Errorf("the proxy registry's metrics are not served next to the readiness metrics")
	}

	if code, _ := getReadyz(t, base); code != 200 {
		t.Fatalf("/readyz %d", code)
	}
	wantSamples(t, "after READY", scrape(t, base), map[string]float64{
		`hms_proxy_ready`: 1, `hms_proxy_readiness_checks_total{result="ready"}`: 1, `hms_proxy_readiness_transitions_total`: 0,
	})

	// The connectivity gauge is live: it drops before anyone asks /readyz,
	// and a lost catalog leaves readiness alone (every replica shares it).
	src.setConnected("catalog2", false, "connection refused")
	wantSamples(t, "catalog2 lost", scrape(t, base), map[string]float64{
		`hms_proxy_backend_connected{catalog="catalog2"}`: 0, `hms_proxy_backend_connected{catalog="catalog1"}`: 1, `hms_proxy_ready`: 1,
	})
	if code, _ := getReadyz(t, base); code != 200 {
		t.Fatalf("/readyz %d with catalog2 lost, want 200", code)
	}
	// This replica's own listener down: NOT_READY.
	src.setListener("primary", false)
	for range 2 {
		if code, _ := getReadyz(t, base); code != 503 {
			t.Fatalf("/readyz %d, want 503", code)
		}
	}
	wantSamples(t, "after NOT_READY twice", scrape(t, base), map[string]float64{
		`hms_proxy_ready`: 0, `hms_proxy_readiness_checks_total{result="not_ready"}`: 2, `hms_proxy_readiness_transitions_total`: 1,
	})
	src.setListener("primary", true)
	src.setConnected("catalog2", true, "")
	getReadyz(t, base)
	wantSamples(t, "recovered", scrape(t, base), map[string]float64{
		`hms_proxy_ready`: 1, `hms_proxy_readiness_checks_total{result="ready"}`: 3, `hms_proxy_readiness_transitions_total`: 2,
		`hms_proxy_backend_connected{catalog="catalog2"}`: 1,
	})
}

// A proxy that has never been asked is not reported ready, and its first
// NOT_READY answer is no transition.
func TestReadinessFirstAnswerIsNoTransition(t *testing.T) {
	_, base := startManagement(t, ManagementConfig{}, newFakeSource()) // no catalogs: NOT_READY
	getReadyz(t, base)
	wantSamples(t, "first NOT_READY", scrape(t, base), map[string]float64{
		`hms_proxy_ready`: 0, `hms_proxy_readiness_checks_total{result="not_ready"}`: 1, `hms_proxy_readiness_transitions_total`: 0,
	})
}
