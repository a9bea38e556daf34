// Package resilience runs hms-proxy's latency-aware routing, overload
// protection and database caches against real Hive 3.1.3 metastores of its
// own (the fault tests stop and kill them, so they share them with nobody):
// catalog1 stays healthy, catalog2's metastore is SIGSTOPped or killed under
// load, real client calls measure what a client sees.
package resilience

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

var hms1, hms2 *testbed.Metastore // catalog1 (steady), catalog2 (faulted)

func TestMain(m *testing.M) {
	if os.Getenv("HMS_PROXY_SKIP_REAL_HIVE") == "1" {
		fmt.Println("resilience: HMS_PROXY_SKIP_REAL_HIVE=1, real-Hive tests skipped")
		os.Exit(m.Run())
	}
	if err := testbed.Prepare(); err != nil {
		fmt.Fprintln(os.Stderr, "resilience: test bed not ready:", err)
		os.Exit(1)
	}
	ms, err := testbed.StartMetastores(testbed.Hive313, testbed.Hive313)
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, "resilience: starting metastores:", err)
	} else {
		hms1, hms2 = ms[0], ms[1]
		code = m.Run()
		fmt.Println("resilience: launched", testbed.LaunchSummary())
	}
	for _, m := range ms {
		if m != nil {
			_ = m.Stop()
		}
	}
	os.Exit(code)
}

func needHive(t *testing.T) {
	t.Helper()
	if hms1 == nil {
		t.Skip("HMS_PROXY_SKIP_REAL_HIVE=1")
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// props builds a two-catalog configuration over hms1 and hms2 plus extra
// key=value pairs.
func props(extra ...string) map[string]string {
	p := map[string]string{
		"catalogs":                "catalog1,catalog2",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": hms1.URI,
		"catalog.catalog2.conf.hive.metastore.uris": hms2.URI,
	}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		p[k] = v
	}
	return p
}

func uniq(prefix string) string {
	return fmt.Sprintf("%s_%x", prefix, time.Now().UnixNano()&0xffffffff)
}

// metaErr asserts a MetaException whose message contains every fragment.
func metaErr(t *testing.T, err error, fragments ...string) {
	t.Helper()
	var me *thriftgen.MetaException
	if !errors.As(err, &me) {
		t.Fatalf("want MetaException containing %q, got %v", fragments, err)
	}
	for _, f := range fragments {
		if !strings.Contains(me.Message, f) {
			t.Fatalf("MetaException %q lacks %q", me.Message, f)
		}
	}
}

func isMeta(err error, fragment string) bool {
	var me *thriftgen.MetaException
	return errors.As(err, &me) && strings.Contains(me.Message, fragment)
}

// readyz is the part of /readyz these tests read.
type readyz struct {
	Status  string `json:"status"`
	Summary struct {
		FanoutOmitted *[]string `json:"fanoutOmitted"`
	} `json:"summary"`
	Backends map[string]struct {
		Connected             bool    `json:"connected"`
		Degraded              *bool   `json:"degraded"`
		CircuitState          string  `json:"circuitState"`
		ConsecutiveFailures   int     `json:"consecutiveFailures"`
		CircuitRetryAtEpochMs int64   `json:"circuitRetryAtEpochMs"`
		LatencyEwmaMs         float64 `json:"latencyEwmaMs"`
		LatencyBudgetMs       int64   `json:"latencyBudgetMs"`
		FanoutOmissions       *int64  `json:"fanoutOmissions"`
		LastError             *string `json:"lastError"`
	} `json:"backends"`
}

func getReadyz(t *testing.T, p *proxytest.Proxy) readyz {
	t.Helper()
	resp, err := http.Get(p.ManagementURL() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r readyz
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

// percentile of durations (q in [0,1]), nearest rank.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// auditRecords returns the audit file's records that contain every fragment.
func auditRecords(t *testing.T, p *proxytest.Proxy, fragments ...string) []string {
	t.Helper()
	b, err := os.ReadFile(p.AuditFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
next:
	for _, line := range strings.Split(string(b), "\n") {
		for _, f := range fragments {
			if !strings.Contains(line, f) {
				continue next
			}
		}
		if line != "" {
			out = append(out, line)
		}
	}
	return out
}
