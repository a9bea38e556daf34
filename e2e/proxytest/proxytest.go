// Package proxytest starts an in-process hms-proxy, assembled exactly as
// cmd/hms-proxy assembles it, for end-to-end tests against real metastores.
package proxytest

import (
	"context"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/hms-proxy/hms-proxy/app"
	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// Proxy is a running in-process proxy.
type Proxy struct {
	*app.App
	AuditFile string
	log       *testWriter
	// ConfigFile holds the properties the proxy was started with (ports and
	// defaults filled in); rewrite it and call Reload, as SIGHUP does.
	ConfigFile string
	Props      map[string]string
}

// WriteConfig writes props as a .properties file (WriteConfig(p.ConfigFile,
// ...) before p.Reload is what an operator's edit and SIGHUP do).
func WriteConfig(t testing.TB, path string, props map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	esc := strings.NewReplacer("\\", "\\\\", "\n", "\\n", "\r", "\\r", "\t", "\\t")
	for _, k := range keys {
		b.WriteString(esc.Replace(k) + "=" + esc.Replace(props[k]) + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// URI of a listener ("primary" or an additional frontend name).
func (p *Proxy) URI(name string) string {
	return "thrift://" + p.Listener(name).Addr().String()
}

// ManagementURL is the base URL of the management listener.
func (p *Proxy) ManagementURL() string { return "http://" + p.Mgmt.Addr().String() }

// FreePort is a free loopback port no other test of any test binary has been handed (testbed.FreePort).
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := testbed.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Start parses props and starts the proxy; server.port, management.port and
// audit.file default to free loopback ports and a temp file. With more than
// one catalog and no synthetic-read-lock.store.* key, the lock store is
// IN_MEMORY (one in-process instance; the binary has no such default: an
// operator chooses). It stops when the test ends.
func Start(t testing.TB, props map[string]string) *Proxy {
	t.Helper()
	return StartWith(t, props, app.TestHooks{})
}

// StartWith is Start with test hooks (app.TestHooks).
func StartWith(t testing.TB, props map[string]string, hooks app.TestHooks) *Proxy {
	t.Helper()
	props = clone(props)
	setDefault(props, "server.bind-host", "127.0.0.1")
	if strings.Contains(props["catalogs"], ",") {
		lockKey := false
		for k := range props {
			lockKey = lockKey || strings.HasPrefix(k, "synthetic-read-lock.store.")
		}
		if !lockKey {
			props["synthetic-read-lock.store.mode"] = "IN_MEMORY"
		}
	}
	if _, ok := props["server.port"]; !ok {
		props["server.port"] = strconv.Itoa(FreePort(t))
	}
	if _, ok := props["management.port"]; !ok {
		props["management.port"] = strconv.Itoa(FreePort(t))
	}
	setDefault(props, "audit.file", t.TempDir()+"/audit.log")
	cfg, err := configs.Parse(props)
	if err != nil {
		t.Fatalf("proxy config: %v", err)
	}
	w := &testWriter{t: t, quiet: os.Getenv("HMS_PROXY_TEST_QUIET") != ""}
	level := new(slog.LevelVar) // logging.level, changed by a reload
	if err := level.UnmarshalText([]byte(cfg.Logging.Level)); err != nil {
		t.Fatal(err)
	}
	a, err := app.BuildWith(cfg, slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), hooks)
	if err != nil {
		t.Fatalf("proxy build: %v", err)
	}
	a.LogLevel = level
	file := t.TempDir() + "/hms-proxy.properties"
	WriteConfig(t, file, props)
	a.SetSource(file, props)
	if err := a.Start(); err != nil {
		t.Fatalf("proxy start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Shutdown(ctx)
		if t.Failed() {
			if b, err := os.ReadFile(cfg.Audit.File); err == nil {
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				if len(lines) > 40 {
					lines = lines[len(lines)-40:]
				}
				t.Logf("last audit records of the proxy:\n%s", strings.Join(lines, "\n"))
			}
		}
	})
	return &Proxy{App: a, AuditFile: cfg.Audit.File, ConfigFile: file, Props: props, log: w}
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func setDefault(m map[string]string, k, v string) {
	if _, ok := m[k]; !ok {
		m[k] = v
	}
}

// logKeep bounds the log lines a Proxy keeps for LogLines.
const logKeep = 8192

// testWriter sends the proxy's log to the test log and keeps the last
// logKeep lines for LogLines.
type testWriter struct {
	t     testing.TB
	quiet bool
	mu    sync.Mutex
	lines []string
}

func (w *testWriter) Write(p []byte) (int, error) {
	line := strings.TrimSuffix(string(p), "\n")
	if !w.quiet {
		w.t.Log(line)
	}
	w.mu.Lock()
	if len(w.lines) >= logKeep {
		w.lines = append(w.lines[:0], w.lines[len(w.lines)-logKeep/2:]...)
	}
	w.lines = append(w.lines, line)
	w.mu.Unlock()
	return len(p), nil
}

// LogLines returns the proxy's recent log lines (slog text format) that
// contain every fragment.
func (p *Proxy) LogLines(fragments ...string) []string {
	p.log.mu.Lock()
	defer p.log.mu.Unlock()
	var out []string
next:
	for _, l := range p.log.lines {
		for _, f := range fragments {
			if !strings.Contains(l, f) {
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}

// WaitInFlight waits (bounded: a minute) until listener serves at least n
// calls: the event "the call reached the proxy" that a test otherwise
// guesses with a sleep.
func (p *Proxy) WaitInFlight(t testing.TB, listener string, n float64) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); p.Metric(t, monitoring.MetricFrontendInFlightCalls, "frontend", listener) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %v calls in flight on listener %s after a minute", n, listener)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Metric sums the samples of a metric family whose labels include every
// given pair, read from the proxy's registry as a scrape would.
func (p *Proxy) Metric(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	var sum float64
	for _, m := range p.series(t, name, labels) {
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// AwaitMetric waits until Metric reaches want: for counts the proxy takes
// after the test's own step returned (the server side of a connection the
// client already left). It fails the test after a minute.
func (p *Proxy) AwaitMetric(t testing.TB, want float64, name string, labels ...string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := p.Metric(t, name, labels...)
		if got >= want {
			if got > want {
				t.Fatalf("%s%v = %v, want %v", name, labels, got, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v = %v after a minute, want %v", name, labels, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// HasSeries reports whether the registry has a series of the family whose
// labels include every given pair, whatever its value (a counter exported at
// zero, a gauge back at 0).
func (p *Proxy) HasSeries(t testing.TB, name string, labels ...string) bool {
	t.Helper()
	return len(p.series(t, name, labels)) > 0
}

func (p *Proxy) series(t testing.TB, name string, labels []string) []*dto.Metric {
	t.Helper()
	families, err := p.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []*dto.Metric
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			out = append(out, m)
		}
	}
	return out
}
