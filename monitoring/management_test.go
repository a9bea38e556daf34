package monitoring

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fakeSource is a ReadinessSource whose probe can be made slow and whose
// backend states are set by the test.
type fakeSource struct {
	probes  atomic.Int64
	block   chan struct{} // if non-nil, ProbeBackends waits on it (or ctx)
	deaf    bool          // ProbeBackends waits on block even past ctx (a probe that hangs)
	started chan struct{} // receives one value per probe start (buffered)

	mu        sync.Mutex
	states    []BackendState
	listeners []ListenerStatus
}

// ListenerStatuses makes every fakeSource a ListenerSource (none unless
// setListener added them).
func (f *fakeSource) ListenerStatuses() []ListenerStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ListenerStatus(nil), f.listeners...)
}

// setListener adds or changes a listener's state.
func (f *fakeSource) setListener(name string, serving bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.listeners {
		if f.listeners[i].Name == name {
			f.listeners[i].Serving = serving
			return
		}
	}
	f.listeners = append(f.listeners, ListenerStatus{Name: name, Address: "127.0.0.1:9083", Serving: serving})
}

func newFakeSource(states ...BackendState) *fakeSource {
	return &fakeSource{states: states, started: make(chan struct{}, 100)}
}

func (f *fakeSource) ProbeBackends(ctx context.Context) {
	f.probes.Add(1)
	f.started <- struct{}{}
	f.mu.Lock()
	block := f.block
	f.mu.Unlock()
	if block != nil && f.deaf {
		<-block
	} else if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
		}
	}
	f.mu.Lock()
	for i := range f.states {
		f.states[i].LastProbeEpochSecond = time.Now().Unix()
	}
	f.mu.Unlock()
}

func (f *fakeSource) BackendStates() []BackendState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]BackendState(nil), f.states...)
}

func (f *fakeSource) setBlock(ch chan struct{}) {
	f.mu.Lock()
	f.block = ch
	f.mu.Unlock()
}

func (f *fakeSource) setConnected(catalog string, connected bool, lastErr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.states {
		if f.states[i].Catalog == catalog {
			f.states[i].Connected = connected
			f.states[i].LastError = lastErr
		}
	}
}

func startManagement(t *testing.T, cfg ManagementConfig, src ReadinessSource) (*Management, string) {
	t.Helper()
	cfg.BindHost = "127.0.0.1"
	reg := prometheus.NewRegistry()
	NewMetrics(reg, testMethods).ObserveRequest("get_table", "catalog1", "catalog1", StatusOK, time.Millisecond)
	m := NewManagement(cfg, reg, src, nil)
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return m, "http://" + m.Addr().String()
}

var client = &http.Client{Timeout: 20 * time.Second}

type readyz struct {
	Status     string `json:"status"`
	Ready      bool   `json:"ready"`
	Reason     string `json:"reason"`
	ProbeAgeMs *int64 `json:"probeAgeMs"`
	Summary    struct {
		Backends     int      `json:"backends"`
		Connected    int      `json:"connected"`
		Degraded     int      `json:"degraded"`
		Disconnected []string `json:"disconnected"`
	} `json:"summary"`
	Backends  map[string]map[string]any `json:"backends"`
	Kerberos  map[string]map[string]any `json:"kerberos"`
	Listeners []map[string]any          `json:"listeners"`
}

func getReadyz(t *testing.T, base string) (int, readyz) {
	t.Helper()
	resp, err := client.Get(base + "/readyz")
	if err != nil {
		t.Errorf("GET /readyz: %v", err)
		return 0, readyz{}
	}
	defer resp.Body.Close()
	var r readyz
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Errorf("decode /readyz: %v", err)
	}
	return resp.StatusCode, r
}

func get(t *testing.T, url string, timeout time.Duration) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: timeout}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func waitProbeStarted(t *testing.T, f *fakeSource) {
	t.Helper()
	select {
	case <-f.started:
	case <-time.After(time.Minute):
		t.Fatal("probe did not start")
	}
}

func TestReadyzConcurrentCallsDuringSlowFirstProbeShareOneProbe(t *testing.T) {
	src := newFakeSource(BackendState{Catalog: "catalog1", Connected: true})
	release := make(chan struct{})
	src.setBlock(release)
	m, base := startManagement(t, ManagementConfig{Threads: 16, ReadinessCache: time.Hour}, src)

	const callers = 10
	codes := make(chan int, callers)
	for i := 0; i < callers; i++ {
		go func() {
			code, _ := getReadyz(t, base)
			codes <- code
		}()
	}
	waitProbeStarted(t, src)
	// Every caller arrives while the probe hangs (each holds a slot).
	for deadline := time.Now().Add(time.Minute); len(m.readySlots) < callers; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d callers arrived within a minute", len(m.readySlots), callers)
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case c := <-codes:
		t.Fatalf("a /readyz answered (%d) before the first probe finished", c)
	default:
	}
	close(release)
	for i := 0; i < callers; i++ {
		select {
		case c := <-codes:
			if c != http.StatusOK {
				t.Fatalf("caller got %d", c)
			}
		case <-time.After(time.Minute):
			t.Fatal("callers did not finish")
		}
	}
	if n := src.probes.Load(); n != 1 {
		t.Fatalf("want exactly 1 backend probe for %d concurrent callers, got %d", callers, n)
	}
	// Within the cache window no further probe happens.
	code, r := getReadyz(t, base)
	if code != http.StatusOK || src.probes.Load() != 1 || m.ProbeCount() != 1 {
		t.Fatalf("cached call: code %d probes %d", code, src.probes.Load())
	}
	if r.ProbeAgeMs == nil || *r.ProbeAgeMs < 0 {
		t.Fatalf("probeAgeMs missing: %+v", r)
	}
}

func TestReadyzRefreshServesPreviousResultToConcurrentCallers(t *testing.T) {
	src := newFakeSource(BackendState{Catalog: "catalog1", Connected: true})
	_, base := startManagement(t, ManagementConfig{Threads: 8, ReadinessCache: 0}, src)

	if code, _ := getReadyz(t, base); code != http.StatusOK { // first probe, fast
		t.Fatalf("code %d", code)
	}
	waitProbeStarted(t, src)
	release := make(chan struct{})
	src.setBlock(release)

	slowDone := make(chan struct{})
	go func() { getReadyz(t, base); close(slowDone) }() // starts the slow refresh
	waitProbeStarted(t, src)

	// Concurrent callers answer from the previous probe, without waiting
	// for the refresh: it stays blocked until release, and they all answer
	// before that.
	for i := 0; i < 5; i++ {
		code, r := getReadyz(t, base)
		if code != http.StatusOK {
			t.Fatalf("concurrent call: code %d", code)
		}
		if r.ProbeAgeMs == nil {
			t.Fatal("probeAgeMs missing")
		}
	}
	select {
	case <-slowDone:
		t.Fatal("the refreshing call finished before its probe was released")
	default:
	}
	if n := src.probes.Load(); n != 2 {
		t.Fatalf("want 2 probes (initial + one refresh), got %d", n)
	}
	close(release)
	select {
	case <-slowDone:
	case <-time.After(time.Minute):
		t.Fatal("refreshing caller did not finish")
	}
	// Cache 0: the next call probes again.
	getReadyz(t, base)
	if n := src.probes.Load(); n != 3 {
		t.Fatalf("readiness-cache 0 must probe on every request, got %d probes", n)
	}
}

func TestHealthzAndMetricsAnswerWhileReadyzBlocks(t *testing.T) {
	for _, threads := range []int{1, 2, 4} {
		src := newFakeSource(BackendState{Catalog: "catalog1", Connected: true})
		release := make(chan struct{})
		src.setBlock(release)
		m, base := startManagement(t, ManagementConfig{Threads: threads, ReadinessCache: time.Hour}, src)

		// Far more /readyz calls than threads, all stuck behind the first probe.
		for i := 0; i < threads+5; i++ {
			go func() {
				if resp, err := client.Get(base + "/readyz"); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
		}
		waitProbeStarted(t, src)
		// The event: every slot /readyz may take is taken.
		for deadline := time.Now().Add(time.Minute); len(m.readySlots) < cap(m.readySlots); {
			if time.Now().After(deadline) {
				t.Fatalf("threads=%d: /readyz holds %d of its %d slots after a minute", threads, len(m.readySlots), cap(m.readySlots))
			}
			time.Sleep(time.Millisecond)
		}

		// The probe stays blocked until release: /healthz and /metrics
		// answering at all (within a bound far above any machine's
		// slowness) is the proof that they do not wait behind it.
		for i := 0; i < 3; i++ {
			code, body := get(t, base+"/healthz", 30*time.Second)
			if code != http.StatusOK || !strings.Contains(body, `"status":"UP"`) || !strings.Contains(body, `"uptimeMs"`) {
				t.Fatalf("threads=%d /healthz: %d %s", threads, code, body)
			}
			code, body = get(t, base+"/metrics", 30*time.Second)
			if code != http.StatusOK || !strings.Contains(body, "hms_proxy_requests_total{") {
				t.Fatalf("threads=%d /metrics: %d", threads, code)
			}
		}
		close(release)
	}
}

// A disconnected catalog is reported (summary, its fields, the probe that
// could not refresh it) but does not make the replica unready: every replica
// shares that metastore, and failing readiness would take all of them out of
// the balancer and cut the catalogs that still work (issue 20, item 6). A
// listener of this replica that does not accept connections does.
func TestReadyzReportsDisconnectedBackendsAndFailsOnlyForThisReplica(t *testing.T) {
	src := newFakeSource(
		BackendState{Catalog: "catalog1", Connected: true, LastSuccessEpochSecond: 1700000000, LatencyEwmaMs: 1.5, LatencyBudgetMs: 30000, CircuitState: "CLOSED", Endpoint: "thrift://h1:9083", RuntimeProfile: "APACHE_3_1_3"},
		BackendState{Catalog: "catalog2", Connected: false, ConsecutiveFailures: 3, CircuitState: "OPEN", LastError: "dial tcp 10.0.0.2:9083: connection refused"},
	)
	src.setListener("primary", true)
	_, base := startManagement(t, ManagementConfig{Threads: 4, ReadinessCache: 0}, src)

	code, r := getReadyz(t, base)
	if code != http.StatusOK || !r.Ready || r.Status != StatusReady || r.Reason != "" {
		t.Fatalf("one catalog down: want 200 READY, got %d %+v", code, r)
	}
	if len(r.Summary.Disconnected) != 1 || r.Summary.Disconnected[0] != "catalog2" || r.Summary.Connected != 1 {
		t.Fatalf("the summary must name catalog2: %+v", r.Summary)
	}
	c2 := r.Backends["catalog2"]
	if c2["connected"] != false || c2["lastError"] != "dial tcp 10.0.0.2:9083: connection refused" || c2["circuitState"] != "OPEN" || c2["consecutiveFailures"] != float64(3) {
		t.Fatalf("catalog2 fields: %v", c2)
	}
	c1 := r.Backends["catalog1"]
	for _, f := range []string{"connected", "degraded", "lastSuccessEpochSecond", "lastFailureEpochSecond", "lastProbeEpochSecond", "lastLatencyMs", "latencyEwmaMs", "latencyBudgetMs", "circuitState", "consecutiveFailures", "lastError"} {
		if _, ok := c1[f]; !ok {
			t.Errorf("catalog1 lacks field %s: %v", f, c1)
		}
	}
	if c1["lastError"] != nil || c1["latencyEwmaMs"] != 1.5 || c1["endpoint"] != "thrift://h1:9083" {
		t.Errorf("catalog1 fields: %v", c1)
	}
	for _, side := range []string{"frontDoor", "backend"} {
		if r.Kerberos[side]["state"] != KerberosDisabled {
			t.Errorf("kerberos %s: %v", side, r.Kerberos[side])
		}
	}
	if len(r.Listeners) != 1 || r.Listeners[0]["name"] != "primary" || r.Listeners[0]["serving"] != true {
		t.Errorf("listeners: %v", r.Listeners)
	}

	// Every catalog down is still the backends' business.
	src.setConnected("catalog1", false, "timeout")
	if code, r = getReadyz(t, base); code != http.StatusOK || len(r.Summary.Disconnected) != 2 {
		t.Fatalf("every catalog down: want 200 with both named, got %d %+v", code, r)
	}

	src.setListener("primary", false)
	code, r = getReadyz(t, base)
	if code != http.StatusServiceUnavailable || r.Ready || r.Status != StatusNotReady ||
		r.Reason != `listener "primary" is not accepting connections` {
		t.Fatalf("listener down: want 503 naming it (and nothing else), got %d %+v", code, r)
	}
	src.setListener("primary", true)
	if code, _ = getReadyz(t, base); code != http.StatusOK {
		t.Fatalf("listener back: %d", code)
	}
}

// A probe round that does not finish is the backends' business too: it is
// reported in probeError, the answer stays READY.
func TestReadyzProbeTimeoutIsReportedNotFatal(t *testing.T) {
	src := newFakeSource(BackendState{Catalog: "catalog1", Connected: true})
	release := make(chan struct{})
	src.setBlock(release)
	src.deaf = true // a probe that does not even honour its timeout
	_, base := startManagement(t, ManagementConfig{ProbeTimeout: 50 * time.Millisecond}, src)
	t.Cleanup(func() { close(release) }) // before the listener's shutdown waits for the probe
	resp, err := client.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Status     string `json:"status"`
		ProbeError string `json:"probeError"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || r.Status != StatusReady || !strings.Contains(r.ProbeError, "did not finish") {
		t.Fatalf("a hanging probe: %d %+v", resp.StatusCode, r)
	}
}

func TestReadyzPerBackendFieldsAreLiveEvenWhenCached(t *testing.T) {
	src := newFakeSource(BackendState{Catalog: "catalog1", Connected: true})
	_, base := startManagement(t, ManagementConfig{Threads: 4, ReadinessCache: time.Hour}, src)
	if code, _ := getReadyz(t, base); code != http.StatusOK {
		t.Fatal(code)
	}
	src.setConnected("catalog1", false, "broken pipe")
	code, r := getReadyz(t, base)
	if code != http.StatusOK || r.Backends["catalog1"]["lastError"] != "broken pipe" || r.Summary.Disconnected[0] != "catalog1" {
		t.Fatalf("per-backend state must be live: %d %+v", code, r)
	}
	if src.probes.Load() != 1 {
		t.Fatalf("cache window must not probe again, got %d probes", src.probes.Load())
	}
	time.Sleep(20 * time.Millisecond)
	_, r = getReadyz(t, base)
	if r.ProbeAgeMs == nil || *r.ProbeAgeMs < 20 {
		t.Fatalf("probeAgeMs should grow while cached: %v", r.ProbeAgeMs)
	}
}

type kerberosFake struct {
	*fakeSource
	report KerberosReport
}

func (k kerberosFake) KerberosStatus() KerberosReport { return k.report }

func TestReadyzKerberosFrontDoorFailureIsNotReady(t *testing.T) {
	src := kerberosFake{newFakeSource(BackendState{Catalog: "catalog1", Connected: true}), KerberosReport{
		FrontDoor: KerberosStatus{State: KerberosFailed},
		Backend:   KerberosStatus{State: KerberosPending, Healthy: true},
	}}
	_, base := startManagement(t, ManagementConfig{}, src)
	code, r := getReadyz(t, base)
	if code != http.StatusServiceUnavailable || !strings.Contains(r.Reason, "FAILED") || r.Kerberos["backend"]["state"] != KerberosPending {
		t.Fatalf("%d %+v", code, r)
	}
}

func TestReadyzNoBackendsIsNotReady(t *testing.T) {
	_, base := startManagement(t, ManagementConfig{}, newFakeSource())
	if code, r := getReadyz(t, base); code != http.StatusServiceUnavailable || !strings.Contains(r.Reason, "no backend") {
		t.Fatalf("%d %+v", code, r)
	}
}

func TestManagementRejectsOtherMethodsAndPaths(t *testing.T) {
	_, base := startManagement(t, ManagementConfig{}, newFakeSource(BackendState{Catalog: "c", Connected: true}))
	resp, err := client.Post(base+"/healthz", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /healthz: %d", resp.StatusCode)
	}
	if code, _ := get(t, base+"/nope", 5*time.Second); code != http.StatusNotFound {
		t.Fatalf("/nope: %d", code)
	}
}

func TestManagementStartErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	reg := prometheus.NewRegistry()
	m := NewManagement(ManagementConfig{BindHost: "127.0.0.1", Port: port}, reg, newFakeSource(), nil)
	if err := m.Start(); err == nil || !strings.Contains(err.Error(), "bind") {
		t.Fatalf("want bind error for a taken port, got %v", err)
	}
	for _, c := range []struct {
		cfg  ManagementConfig
		want string
	}{
		{ManagementConfig{Threads: -1}, "management.threads"},
		{ManagementConfig{ReadinessCache: -time.Second}, "management.readiness-cache-ms"},
		{ManagementConfig{Port: 70000}, "management.port"},
	} {
		m := NewManagement(c.cfg, reg, newFakeSource(), nil)
		if err := m.Start(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("config %+v: want error naming %s, got %v", c.cfg, c.want, err)
		}
	}
}

func TestShutdownCancelsHangingProbe(t *testing.T) {
	src := newFakeSource(BackendState{Catalog: "c", Connected: true})
	src.setBlock(make(chan struct{})) // never released; probe only ends via ctx
	reg := prometheus.NewRegistry()
	m := NewManagement(ManagementConfig{BindHost: "127.0.0.1"}, reg, src, nil)
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	go http.Get("http://" + m.Addr().String() + "/readyz")
	waitProbeStarted(t, src)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

// lockStoreSource is a readiness source with a synthetic lock store.
type lockStoreSource struct {
	*fakeSource
	st LockStoreStatus
}

func (l *lockStoreSource) LockStoreStatus() (LockStoreStatus, bool) { return l.st, true }

// /readyz shows the synthetic lock store; an unreachable store is shown, not a
// reason to leave the load balancer (every replica shares it).
func TestReadyzShowsTheLockStore(t *testing.T) {
	src := &lockStoreSource{fakeSource: newFakeSource(BackendState{Catalog: "catalog1", Connected: true}),
		st: LockStoreStatus{Mode: "ZOOKEEPER", Store: "ZOOKEEPER store zk1:2181 znode /l", Reachable: false,
			LastProbeEpochSecond: 1700000000, LastError: "synthetic lock ZOOKEEPER store zk1:2181 znode /l: ping failed: no server"}}
	_, base := startManagement(t, ManagementConfig{}, src)
	resp, err := client.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status    string          `json:"status"`
		LockStore LockStoreStatus `json:"syntheticLockStore"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || body.Status != StatusReady || body.LockStore != src.st {
		t.Fatalf("/readyz %d %+v, want READY with the store %+v", resp.StatusCode, body, src.st)
	}
	// Without a shim there is no section.
	_, plain := startManagement(t, ManagementConfig{}, newFakeSource(BackendState{Catalog: "catalog1", Connected: true}))
	if _, text := get(t, plain+"/readyz", 10*time.Second); strings.Contains(text, "syntheticLockStore") {
		t.Fatalf("a proxy without a shim shows a lock store: %s", text)
	}
}

// backgroundSource is a fakeSource whose backends are polled in the background.
type backgroundSource struct {
	*fakeSource
	last time.Time
}

func (b backgroundSource) BackgroundProbes() (time.Time, bool) { return b.last, true }

// With SAFE_FANOUT_READS the per-backend omission count and the summary of
// catalogs a fan-out leaves out now are rendered (and only then); with
// background polling probeAgeMs is the age of the last polling round, null
// before the first.
func TestReadyzFanoutOmissionsAndBackgroundProbeAge(t *testing.T) {
	src := backgroundSource{fakeSource: newFakeSource(
		BackendState{Catalog: "catalog1", Connected: true, CircuitState: "CLOSED", SafeFanout: true},
		BackendState{Catalog: "catalog2", Connected: true, CircuitState: "OPEN", Degraded: true, SafeFanout: true,
			FanoutOmissions: 7, LastFanoutOmissionEpochSecond: 1700000000, OmittedNow: true},
	), last: time.Now().Add(-1500 * time.Millisecond)}
	_, base := startManagement(t, ManagementConfig{Threads: 4}, src)
	_, body := get(t, base+"/readyz", 5*time.Second)
	var r struct {
		ProbeAgeMs *int64 `json:"probeAgeMs"`
		Summary    struct {
			FanoutOmitted *[]string `json:"fanoutOmitted"`
		} `json:"summary"`
		Backends map[string]map[string]any `json:"backends"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	if r.ProbeAgeMs == nil || *r.ProbeAgeMs < 1400 || *r.ProbeAgeMs > 10000 {
		t.Errorf("probeAgeMs = %v, want the polling round's age (~1500)", r.ProbeAgeMs)
	}
	if r.Summary.FanoutOmitted == nil || len(*r.Summary.FanoutOmitted) != 1 || (*r.Summary.FanoutOmitted)[0] != "catalog2" {
		t.Errorf("summary.fanoutOmitted = %v, want [catalog2]", r.Summary.FanoutOmitted)
	}
	if c := r.Backends["catalog2"]; c["fanoutOmissions"] != float64(7) || c["lastFanoutOmissionEpochSecond"] != float64(1700000000) || c["degraded"] != true {
		t.Errorf("catalog2: %v", c)
	}
	if c := r.Backends["catalog1"]; c["fanoutOmissions"] != float64(0) {
		t.Errorf("catalog1 under SAFE_FANOUT_READS must show fanoutOmissions 0: %v", c)
	}

	src2 := backgroundSource{fakeSource: newFakeSource(BackendState{Catalog: "catalog1", Connected: true, CircuitState: "CLOSED"})}
	_, base = startManagement(t, ManagementConfig{Threads: 4}, src2)
	_, body = get(t, base+"/readyz", 5*time.Second)
	if strings.Contains(body, "fanoutOmi") {
		t.Errorf("without SAFE_FANOUT_READS no omission field is rendered: %s", body)
	}
	if !strings.Contains(body, `"probeAgeMs":null`) {
		t.Errorf("before the first polling round probeAgeMs must be null: %s", body)
	}
}
