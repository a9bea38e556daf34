// Readiness and the process as operators see it: /readyz following a
// stopped metastore, concurrent probes, the audit record of a hostile client,
// debug tracing in the real binary.

package policy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/wire"
)

func TestObsReadyzFollowsAStoppedAndRestartedMetastore(t *testing.T) {
	e2eutil.NeedHive(t)
	edge := testbed.StartMetastoreT(t, testbed.Hive313) // private: it is stopped below
	const cache = 200 * time.Millisecond
	p := proxytest.Start(t, map[string]string{
		"catalogs":                "catalog1,edge",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": e2eutil.HMS1.URI,
		"catalog.edge.conf.hive.metastore.uris":     edge.URI,
		"management.readiness-cache-ms":             strconv.Itoa(int(cache / time.Millisecond)),
	})

	r := obsReady(t, p)
	if r.code != http.StatusOK || r.Status != "READY" || !r.Ready || r.Summary.Backends != 2 || r.Summary.Connected != 2 {
		t.Fatalf("both metastores up: want 200 READY with 2 connected, got %d %s", r.code, r.raw)
	}
	e := r.Backends["edge"]
	if !e.Connected || e.LastSuccessEpochSecond == 0 || e.LastProbeEpochSecond == 0 || e.LastError != nil || r.ProbeAgeMs == nil {
		t.Fatalf("edge backend state after a good probe: %s", r.raw)
	}
	if r.Kerberos["frontDoor"].State != "DISABLED" || r.Kerberos["backend"].State != "DISABLED" {
		t.Errorf("kerberos section: %s", r.raw)
	}

	if err := edge.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	// One probe interval later the very next /readyz probes afresh.
	time.Sleep(cache + 50*time.Millisecond)
	r = obsReady(t, p)
	// A metastore every replica shares is reported, never a reason to take
	// this replica out of the balancer (issue 20, item 6): catalog1's
	// clients keep being served.
	if r.code != http.StatusOK || r.Status != "READY" || !r.Ready || r.Reason != "" {
		t.Fatalf("%s after the edge metastore stopped (cache %s): want 200 READY, got %d %s",
			time.Since(stopped).Round(time.Millisecond), cache, r.code, r.raw)
	}
	e = r.Backends["edge"]
	if e.Connected || e.LastError == nil || *e.LastError == "" || e.LastFailureEpochSecond == 0 || e.ConsecutiveFailures == 0 {
		t.Errorf("edge must show connected=false with lastError: %s", r.raw)
	}
	if len(r.Summary.Disconnected) != 1 || r.Summary.Disconnected[0] != "edge" {
		t.Errorf("the summary must name catalog edge (and only it): %s", r.raw)
	}
	if !r.Backends["catalog1"].Connected {
		t.Errorf("catalog1 is still up: %s", r.raw)
	}
	// /healthz is about the process only.
	if code, body, _ := obsGet(t, p.ManagementURL()+"/healthz"); code != http.StatusOK || !strings.Contains(string(body), `"UP"`) {
		t.Errorf("/healthz while a backend is down: %d %s", code, body)
	}

	if err := edge.Restart(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(cache + 50*time.Millisecond)
	r = obsReady(t, p)
	if r.code != http.StatusOK || r.Status != "READY" || !r.Backends["edge"].Connected {
		t.Fatalf("one probe interval after the restart: want 200 READY with edge connected, got %d %s", r.code, r.raw)
	}
}

func TestObsConcurrentReadyzShareOneSlowProbe(t *testing.T) {
	e2eutil.NeedHive(t)
	silent := obsSilentListener(t)
	const cache = 3 * time.Second
	p := proxytest.Start(t, map[string]string{
		"catalogs":                "catalog1,mute",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": e2eutil.HMS1.URI,
		"catalog.mute.conf.hive.metastore.uris":     silent.URI(),
		// Longer than the router's 5 s probe deadline, so the probe ends at
		// that deadline (see the report about retries after a read timeout).
		"catalog.mute.conf.hive.metastore.client.socket.timeout": "60s",
		"management.readiness-cache-ms":                          strconv.Itoa(int(cache / time.Millisecond)),
		"management.threads":                                     "16",
	})

	burst := func() []obsReadyz {
		out := make([]obsReadyz, 10)
		var wg sync.WaitGroup
		for i := range out {
			wg.Add(1)
			go func() { defer wg.Done(); out[i] = obsReady(t, p) }()
		}
		wg.Wait()
		return out
	}
	checkAll := func(round string, rs []obsReadyz) {
		t.Helper()
		for _, r := range rs {
			if r.code != http.StatusOK || len(r.Summary.Disconnected) != 1 || r.Summary.Disconnected[0] != "mute" {
				t.Errorf("%s: want 200 with catalog mute disconnected, got %d %s", round, r.code, r.raw)
			}
		}
	}

	// Round 1: the first probe ever; all ten wait for that same probe.
	start := time.Now()
	rs := burst()
	checkAll("first burst", rs)
	if n := silent.accepted.Load(); n != 1 {
		t.Errorf("ten concurrent /readyz during the first probe opened %d probe connections to the silent metastore, want 1", n)
	}
	// At its 5 s deadline: not before, and well before the 60 s socket
	// timeout it would otherwise wait for (a bound a slow machine keeps).
	if took := time.Since(start); took < 4*time.Second || took > 45*time.Second {
		t.Errorf("first probe round took %s; the probe of a silent metastore should end at its 5 s deadline", took)
	}
	if p.Mgmt.ProbeCount() != 1 {
		t.Errorf("%d probes started, want 1", p.Mgmt.ProbeCount())
	}

	// Round 2, inside the cache period: answered from the cache, without a
	// probe (which takes its 5 s deadline against the silent metastore).
	rs = burst()
	checkAll("cached burst", rs)
	for _, r := range rs {
		if r.took > 4*time.Second || r.ProbeAgeMs == nil {
			t.Errorf("cached /readyz took %s (probeAgeMs %v)", r.took, r.ProbeAgeMs)
		}
	}
	if n := silent.accepted.Load(); n != 1 {
		t.Errorf("within the cache period: %d probe connections, want still 1", n)
	}

	// Round 3, cache expired: exactly one new probe; the other nine answer
	// from the previous result without waiting, and /healthz and /metrics
	// stay fast meanwhile.
	time.Sleep(cache + 100*time.Millisecond)
	var side sync.WaitGroup
	side.Add(1)
	go func() {
		defer side.Done()
		time.Sleep(time.Second) // the new probe is running now
		for _, path := range []string{"/healthz", "/metrics"} {
			if code, _, took := obsGet(t, p.ManagementURL()+path); code != http.StatusOK || took > 4*time.Second {
				t.Errorf("%s during a slow probe: %d after %s", path, code, took)
			}
		}
	}()
	rs = burst()
	side.Wait()
	checkAll("burst after expiry", rs)
	fast := 0
	for _, r := range rs {
		if r.took < 4*time.Second { // the probe they did not wait for takes 5 s
			fast++
		}
	}
	if fast < 9 {
		t.Errorf("only %d of 10 /readyz answered from the previous result while one probe ran", fast)
	}
	if n := silent.accepted.Load(); n != 2 {
		t.Errorf("two cache periods, two probes: %d probe connections to the silent metastore, want 2", n)
	}
	if p.Mgmt.ProbeCount() != 2 {
		t.Errorf("%d probes started, want 2", p.Mgmt.ProbeCount())
	}
}

func TestObsAuditRecordOfAHostileClient(t *testing.T) {
	e2eutil.NeedHive(t)
	p := proxytest.Start(t, e2eutil.TwoCatalogs())
	hostileUser := "eve\"},\n{\"event\":\"forged\",\"x\":\"\r\t\x00\x01\x1b\x7f\\ ünïcødé 日本 \u2028 \xff"
	hostileMethod := "get_\"table\"\n{\"event\":\"forged\"}\x00\x07é"

	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(p.URI("primary"), "thrift://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	rd := bufio.NewReader(conn)
	call := func(name string, args wire.Value) *wire.Message {
		t.Helper()
		if _, err := conn.Write(wire.AppendMessage(nil, wire.Header{Name: name, Type: wire.Call, SeqID: 1}, &args)); err != nil {
			t.Fatal(err)
		}
		m, err := wire.ReadMessage(rd, wire.Limits{MaxMessage: 16 << 20}, nil)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		return m
	}
	call("set_ugi", wire.Struct(wire.Field{ID: 1, V: wire.Str(hostileUser)},
		wire.Field{ID: 2, V: wire.List(wire.TString, wire.Str("g\n1"))}))
	if m := call("get_database", wire.Struct(wire.Field{ID: 1, V: wire.Str("default")})); m.Type != wire.Reply {
		t.Fatalf("get_database: message type %d", m.Type)
	}
	if m := call(hostileMethod, wire.Struct()); m.Type != wire.Exception {
		t.Fatalf("unknown hostile method: message type %d", m.Type)
	}
	local := conn.LocalAddr().String()

	// The records are written before the replies leave the proxy.
	data, err := os.ReadFile(p.AuditFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("three requests, want three audit lines, got %d:\n%s", len(lines), data)
	}
	wantUser := strings.ToValidUTF8(hostileUser, "\uFFFD")
	type rec = map[string]any
	var recs []rec
	for i, line := range lines {
		for _, b := range []byte(line) {
			if b < 0x20 || b == 0x7f {
				t.Errorf("line %d holds raw control byte 0x%02x: %q", i, b, line)
			}
		}
		var r rec
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("audit line %d is not JSON: %v\n%q", i, err, line)
		}
		if dec.More() {
			t.Fatalf("audit line %d holds more than one JSON value: %q", i, line)
		}
		// Exactly the spec's fields, with their JSON types.
		want := map[string]string{"event": "string", "requestId": "number", "method": "string", "operationClass": "string",
			"catalog": "string", "backend": "string", "status": "string", "durationMs": "number",
			"remoteAddress": "string", "authenticatedUser": "string", "routed": "bool", "fanout": "bool",
			"fallback": "bool", "defaultCatalogRouted": "bool"}
		for k, typ := range want {
			v, ok := r[k]
			got := ""
			switch v.(type) {
			case string:
				got = "string"
			case json.Number:
				got = "number"
			case bool:
				got = "bool"
			}
			if !ok || got != typ {
				t.Errorf("line %d: field %s = %#v, want a %s", i, k, v, typ)
			}
		}
		if len(r) != len(want) {
			t.Errorf("line %d has %d fields, want %d: %s", i, len(r), len(want), line)
		}
		if r["event"] != "hms_proxy_audit" || r["remoteAddress"] != local {
			t.Errorf("line %d: event %v remoteAddress %v (client is %s)", i, r["event"], r["remoteAddress"], local)
		}
		recs = append(recs, r)
	}
	setUGI, getDB, unknown := recs[0], recs[1], recs[2]
	if setUGI["method"] != "set_ugi" || setUGI["authenticatedUser"] != wantUser {
		t.Errorf("set_ugi record: %v", setUGI)
	}
	for k, v := range map[string]any{"method": "get_database", "operationClass": "metadata_read", "catalog": "catalog1",
		"backend": "catalog1", "status": "ok", "authenticatedUser": wantUser, "routed": true, "fanout": false,
		"fallback": false, "defaultCatalogRouted": true} {
		if getDB[k] != v {
			t.Errorf("get_database record: %s = %#v, want %#v", k, getDB[k], v)
		}
	}
	if getDB["authenticatedUser"] != wantUser {
		t.Errorf("principal did not survive escaping:\n got %q\nwant %q", getDB["authenticatedUser"], wantUser)
	}
	if unknown["method"] != hostileMethod || unknown["status"] != "error" || unknown["authenticatedUser"] != wantUser {
		t.Errorf("hostile method record: %v", unknown)
	}
	ids := []string{string(setUGI["requestId"].(json.Number)), string(getDB["requestId"].(json.Number)), string(unknown["requestId"].(json.Number))}
	if !sort.SliceIsSorted(ids, func(i, j int) bool { a, _ := strconv.Atoi(ids[i]); b, _ := strconv.Atoi(ids[j]); return a < b }) || ids[0] == ids[1] {
		t.Errorf("request ids not increasing: %v", ids)
	}
}

func TestObsDebugTracingInTheRealBinary(t *testing.T) {
	e2eutil.NeedHive(t)
	direct := proxytest.Client(t, e2eutil.HMS2.URI)
	db := e2eutil.Uniq("obstr")
	e2eutil.MkDB(t, direct, db)
	e2eutil.MkTable(t, direct, db, "orders")

	bin := filepath.Join(t.TempDir(), "hms-proxy")
	bctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	build := exec.CommandContext(bctx, "go", "build", "-o", bin, "github.com/hms-proxy/hms-proxy/cmd/hms-proxy")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/hms-proxy: %v\n%s", err, out)
	}

	run := func(tracing bool) string {
		dir := t.TempDir()
		port := proxytest.FreePort(t)
		logFile := filepath.Join(dir, "proxy.log")
		props := strings.Join([]string{
			"server.bind-host=127.0.0.1",
			"server.port=" + strconv.Itoa(port),
			"management.enabled=false",
			"catalogs=catalog1,catalog2",
			"routing.default-catalog=catalog1",
			"synthetic-read-lock.store.mode=IN_MEMORY",
			"catalog.catalog1.conf.hive.metastore.uris=" + e2eutil.HMS1.URI,
			"catalog.catalog2.conf.hive.metastore.uris=" + e2eutil.HMS2.URI,
			"audit.file=" + filepath.Join(dir, "audit.log"),
			"logging.level=DEBUG",
			"logging.file=" + logFile,
			"logging.debug-tracing=" + strconv.FormatBool(tracing),
		}, "\n") + "\n"
		propsFile := filepath.Join(dir, "hms-proxy.properties")
		if err := os.WriteFile(propsFile, []byte(props), 0o644); err != nil {
			t.Fatal(err)
		}
		stop := obsStartProcess(t, bin, propsFile, port)
		c := proxytest.Client(t, "thrift://127.0.0.1:"+strconv.Itoa(port))
		tb, err := c.GetTable(e2eutil.Ctx(t), "catalog2__"+db, "orders")
		if err != nil {
			t.Fatalf("get_table through the binary: %v", err)
		}
		if tb.DbName != "catalog2__"+db {
			t.Fatalf("get_table answered dbName %q", tb.DbName)
		}
		stop()
		data, err := os.ReadFile(logFile)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}

	log := run(true)
	stageRE := regexp.MustCompile(`\bstage=(\S+)`)
	idRE := regexp.MustCompile(`\brequestId=(\d+)`)
	// The request id of the get_table call.
	var id string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "msg=trace") && strings.Contains(line, "stage=client-request") &&
			strings.Contains(line, "method=get_table") {
			if m := idRE.FindStringSubmatch(line); m != nil {
				id = m[1]
			}
		}
	}
	if id == "" {
		t.Fatalf("no client-request trace of get_table in the log:\n%s", obsTail(log, 30))
	}
	byStage := map[string]string{}
	var order []string
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "msg=trace") || !strings.Contains(line, " requestId="+id+" ") {
			continue
		}
		if !strings.Contains(line, "level=DEBUG") {
			t.Errorf("trace record not at DEBUG: %s", line)
		}
		if m := stageRE.FindStringSubmatch(line); m != nil {
			byStage[m[1]] = line
			order = append(order, m[1])
		}
	}
	wantOrder := []string{"client-request", "plan", "backend-selected", "backend-request", "backend-response", "client-response"}
	if strings.Join(order, ",") != strings.Join(wantOrder, ",") {
		t.Fatalf("trace stages of request %s: %v, want %v\n%s", id, order, wantOrder, obsTail(log, 30))
	}
	ext, internal := "catalog2__"+db, db
	checks := []struct{ stage, must, mustNot string }{
		{"client-request", "get_table(dbname='" + ext + "', tbl_name='orders')", ""},
		{"plan", "single catalog2 mode=native", "default catalog"},
		{"backend-selected", "catalog=catalog2", ""},
		{"backend-request", "get_table(dbname='" + internal + "', tbl_name='orders')", "catalog2__"},
		{"backend-response", "success=Table{tableName='orders', dbName='" + internal + "'", "catalog2__"},
		{"client-response", "success=Table{tableName='orders', dbName='" + ext + "'", ""},
	}
	for _, c := range checks {
		line := byStage[c.stage]
		t.Log(line)
		if !strings.Contains(line, c.must) || (c.mustNot != "" && strings.Contains(line, c.mustNot)) {
			t.Errorf("%s trace: want %q (and not %q) in\n%s", c.stage, c.must, c.mustNot, line)
		}
		if len(line) > 4500 {
			t.Errorf("%s trace record is %d characters long", c.stage, len(line))
		}
	}

	// Off by default: DEBUG logging alone writes no trace.
	if log := run(false); strings.Contains(log, "msg=trace") {
		t.Errorf("logging.debug-tracing=false still traced:\n%s", obsTail(log, 10))
	}
}

// obsStartProcess runs the proxy binary until the returned stop function (or
// the test's cleanup) sends SIGTERM; it waits until the port accepts.
func obsStartProcess(t *testing.T, bin, props string, port int) (stop func()) {
	t.Helper()
	var out bytes.Buffer
	var outMu sync.Mutex
	cmd := exec.Command(bin, props)
	w := obsLockedWriter{w: &out, mu: &outMu}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(15 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
				t.Errorf("hms-proxy did not stop within 15 s of SIGTERM")
			}
		})
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
			return stop
		}
		select {
		case <-exited:
			outMu.Lock()
			defer outMu.Unlock()
			t.Fatalf("hms-proxy exited at start-up: %s\n%s", cmd.ProcessState, out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("hms-proxy did not listen on %d within 30 s", port)
		}
	}
}

type obsLockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l obsLockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func obsTail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Issue 10 A9 on the real router: /readyz reports only what it computes
// (circuitState is the breaker's state, DISABLED without one, never a
// CLOSED nothing computes; runtimeProfile is the catalog's), and per-catalog failure and acquire
// timeout series are exported at zero before the first call, so alerts and
// dashboards see them from the start.
func TestReadyzAndZeroSeriesAreComputedNotHardCoded(t *testing.T) {
	e2eutil.NeedHive(t)
	for _, withBreaker := range []bool{false, true} {
		t.Run(fmt.Sprintf("breaker=%v", withBreaker), func(t *testing.T) {
			props := e2eutil.TwoCatalogs("catalog.catalog2.runtime-profile=APACHE_3_1_3")
			if withBreaker {
				props["routing.circuit-breaker.enabled"] = "true"
			}
			p := proxytest.Start(t, props)
			for _, cat := range []string{"catalog1", "catalog2"} {
				for _, e := range []string{"TTransportException", "PoolExhausted", "BadReply", "BudgetExceeded"} {
					if !p.HasSeries(t, "hms_proxy_backend_failures_total", "backend", cat, "exception", e) {
						t.Errorf("no zero series hms_proxy_backend_failures_total{backend=%q,exception=%q} before the first call", cat, e)
					}
				}
				if !p.HasSeries(t, "hms_proxy_backend_session_acquire_timeouts_total", "catalog", cat) {
					t.Errorf("no zero series of session acquire timeouts for %s before the first call", cat)
				}
			}
			r := obsReady(t, p)
			var raw struct {
				Backends map[string]map[string]any `json:"backends"`
			}
			if err := json.Unmarshal([]byte(r.raw), &raw); err != nil {
				t.Fatal(err)
			}
			for _, cat := range []string{"catalog1", "catalog2"} {
				b := raw.Backends[cat]
				if b["runtimeProfile"] != "APACHE_3_1_3" {
					t.Errorf("%s: runtimeProfile %v", cat, b["runtimeProfile"])
				}
				_, hasDegraded := b["degraded"]
				if withBreaker && (b["circuitState"] != "CLOSED" || !hasDegraded) {
					t.Errorf("%s with a breaker: circuitState %v, degraded present %v; want CLOSED and present", cat, b["circuitState"], hasDegraded)
				}
				if !withBreaker && b["circuitState"] != "DISABLED" {
					t.Errorf("%s without a breaker reports circuitState %v, want DISABLED (no breaker computes CLOSED or OPEN)", cat, b["circuitState"])
				}
			}
		})
	}
}
