package ha

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/app"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

func catalogProps(cats ...string) map[string]string {
	p := map[string]string{"synthetic-read-lock.store.mode": "IN_MEMORY", "routing.default-catalog": "catalog1"}
	uris := map[string]string{"catalog1": hms1.URI, "catalog2": hms2.URI}
	p["catalogs"] = strings.Join(cats, ",")
	for _, c := range cats {
		p["catalog."+c+".conf.hive.metastore.uris"] = uris[c]
	}
	return p
}

func with(p map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range p {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(out, kv[i])
		} else {
			out[kv[i]] = kv[i+1]
		}
	}
	return out
}

// reload writes props to the proxy's file and reloads it, as an operator's
// edit and SIGHUP do.
func reload(t *testing.T, p *proxytest.Proxy, props map[string]string) (app.ReloadOutcome, error) {
	t.Helper()
	proxytest.WriteConfig(t, p.ConfigFile, props)
	return p.Reload(ctx(t))
}

// traffic runs clients, each on its own connection opened before the
// reloads, until stop is called (bounded: 90 s, 100,000 calls).
type traffic struct {
	calls, failures atomic.Int64
	mu              sync.Mutex
	errs            []string
	stop            chan struct{}
	wg              sync.WaitGroup
}

func startTraffic(t *testing.T, uri string, clients int) *traffic {
	tr := &traffic{stop: make(chan struct{})}
	deadline := time.Now().Add(90 * time.Second)
	for i := 0; i < clients; i++ {
		c := proxytest.Client(t, uri)
		tr.wg.Add(1)
		go func() {
			defer tr.wg.Done()
			for tr.calls.Load() < 100_000 && time.Now().Before(deadline) {
				select {
				case <-tr.stop:
					return
				default:
				}
				_, err := c.GetAllDatabases(context.Background())
				if err == nil {
					_, err = c.GetDatabase(context.Background(), "default")
				}
				tr.calls.Add(1)
				if err != nil {
					tr.failures.Add(1)
					tr.mu.Lock()
					if len(tr.errs) < 5 {
						tr.errs = append(tr.errs, err.Error())
					}
					tr.mu.Unlock()
				}
			}
		}()
	}
	return tr
}

func (tr *traffic) finish(t *testing.T) {
	t.Helper()
	close(tr.stop)
	tr.wg.Wait()
	if n := tr.failures.Load(); n > 0 {
		t.Errorf("%d of %d calls failed on connections that lived through the reloads: %v", n, tr.calls.Load(), tr.errs)
	}
	t.Logf("%d calls on connections opened before the reloads, none failed", tr.calls.Load())
}

func hasDB(dbs []string, name string) bool {
	for _, d := range dbs {
		if d == name {
			return true
		}
	}
	return false
}

func TestReloadAddsAndRemovesACatalogUnderTraffic(t *testing.T) {
	needHive(t)
	db := uniq("added")
	direct := proxytest.Client(t, hms2.URI)
	if err := direct.CreateDatabase(ctx(t), &thriftgen.Database{Name: db}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = direct.DropDatabase(context.Background(), db, true, true) })

	p := proxytest.Start(t, catalogProps("catalog1"))
	props := p.Props
	baseline := tcpTo(t, hms2.URI)
	tr := startTraffic(t, p.URI("primary"), 4)
	c := proxytest.Client(t, p.URI("primary")) // opened before the reload too
	if _, err := c.GetDatabase(ctx(t), "catalog2__"+db); err == nil {
		t.Fatal("catalog2 is served before it is configured")
	}
	time.Sleep(300 * time.Millisecond)

	added := with(props, "catalogs", "catalog1,catalog2", "catalog.catalog2.conf.hive.metastore.uris", hms2.URI)
	out, err := reload(t, p, added)
	if err != nil {
		t.Fatalf("reload adding catalog2: %v", err)
	}
	t.Logf("add: %s", out)
	if d, err := c.GetDatabase(ctx(t), "catalog2__"+db); err != nil || d.Name != "catalog2__"+db {
		t.Fatalf("get_database(catalog2__%s) on a connection older than the reload: %v %+v", db, err, d)
	}
	if dbs, err := c.GetAllDatabases(ctx(t)); err != nil || !hasDB(dbs, "catalog2__"+db) {
		t.Fatalf("get_all_databases after adding catalog2: %v %v", err, dbs)
	}
	if p.Current().Namespace().Lookup("catalog2") == nil {
		t.Fatal("the router in force has no catalog2")
	}
	if n := tcpTo(t, hms2.URI); n <= baseline {
		t.Fatalf("%d connections to catalog2's metastore after serving it, %d before", n, baseline)
	}
	time.Sleep(300 * time.Millisecond)

	out, err = reload(t, p, props)
	if err != nil {
		t.Fatalf("reload removing catalog2: %v", err)
	}
	t.Logf("remove: %s", out)
	var nso *thriftgen.NoSuchObjectException
	if _, err := c.GetDatabase(ctx(t), "catalog2__"+db); !errors.As(err, &nso) {
		t.Fatalf("get_database(catalog2__%s) after removing catalog2: %v, want NoSuchObjectException from catalog1", db, err)
	}
	if dbs, _ := c.GetAllDatabases(ctx(t)); hasDB(dbs, "catalog2__"+db) {
		t.Fatalf("catalog2's databases are still listed after its removal: %v", dbs)
	}
	time.Sleep(300 * time.Millisecond)
	tr.finish(t)

	// The removed catalog's backend sessions are closed once its calls
	// end: the TCP connections to its metastore are gone, and so are they
	// from the gauge.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		n := tcpTo(t, hms2.URI)
		idle := metric(t, p, "hms_proxy_backend_sessions", "catalog", "catalog2", "state", "idle")
		active := metric(t, p, "hms_proxy_backend_sessions", "catalog", "catalog2", "state", "active")
		if n == baseline && idle == 0 && active == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("2 minutes after catalog2's removal: %d connections to its metastore (%d before it was added), gauge %v idle %v active",
				n, baseline, idle, active)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := reloads(t, p, "success"); n != 2 {
		t.Errorf("%s{result=success}=%v, want 2", app.MetricConfigReloads, n)
	}
}

// tcpTo counts the established TCP connections to a thrift://host:port
// (every process of the machine: compare with a baseline).
func tcpTo(t *testing.T, uri string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(strings.TrimPrefix(uri, "thrift://"))
	if err != nil {
		t.Fatal(err)
	}
	pn, _ := strconv.Atoi(port)
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(":%04X", pn)
	n := 0
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		// remote address ends with the port; state 01 = ESTABLISHED
		if len(f) > 3 && strings.HasSuffix(f[2], want) && f[3] == "01" {
			n++
		}
	}
	return n
}

func reloads(t *testing.T, p *proxytest.Proxy, result string) float64 {
	t.Helper()
	mfs, err := p.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != app.MetricConfigReloads {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("%s{result=%s} is not exported", app.MetricConfigReloads, result)
	return 0
}

// metric is the value of one series of the proxy's registry (0 when absent).
func metric(t *testing.T, p *proxytest.Proxy, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := p.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			if g := m.GetGauge(); g != nil {
				return g.GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func gauge(t *testing.T, p *proxytest.Proxy, name string) float64 {
	t.Helper()
	mfs, err := p.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s is not exported", name)
	return 0
}

func TestReloadChangesAnAccessModeOnOpenConnections(t *testing.T) {
	needHive(t)
	p := proxytest.Start(t, catalogProps("catalog1", "catalog2"))
	c := proxytest.Client(t, p.URI("primary"))
	db := uniq("mode")
	if err := c.CreateDatabase(ctx(t), &thriftgen.Database{Name: "catalog2__" + db}); err != nil {
		t.Fatalf("create_database on a READ_WRITE catalog2: %v", err)
	}
	t.Cleanup(func() { _ = proxytest.Client(t, hms2.URI).DropDatabase(context.Background(), db, true, true) })

	if _, err := reload(t, p, with(p.Props, "catalog.catalog2.access-mode", "READ_ONLY")); err != nil {
		t.Fatal(err)
	}
	var me *thriftgen.MetaException
	err := c.CreateDatabase(ctx(t), &thriftgen.Database{Name: "catalog2__" + uniq("refused")})
	if !errors.As(err, &me) || !strings.Contains(me.Message, "READ_ONLY") {
		t.Fatalf("create_database after catalog2 became READ_ONLY: %v", err)
	}
	if _, err := c.GetDatabase(ctx(t), "catalog2__"+db); err != nil {
		t.Fatalf("reads of a READ_ONLY catalog: %v", err)
	}
	if err := c.CreateDatabase(ctx(t), &thriftgen.Database{Name: uniq("default_still_rw")}); err != nil {
		t.Fatalf("catalog1 stays READ_WRITE: %v", err)
	}

	// Exposure too: hide catalog2's databases but the one created above.
	if _, err := reload(t, p, with(p.Props, "catalog.catalog2.expose-mode", "DENY_BY_DEFAULT",
		"catalog.catalog2.expose-db-patterns", "nothing_matches")); err != nil {
		t.Fatal(err)
	}
	var nso *thriftgen.NoSuchObjectException
	if _, err := c.GetDatabase(ctx(t), "catalog2__"+db); !errors.As(err, &nso) {
		t.Fatalf("get_database of a database hidden by the reloaded exposure: %v", err)
	}
	if _, err := reload(t, p, p.Props); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateDatabase(ctx(t), &thriftgen.Database{Name: "catalog2__" + db + "_2"}); err != nil {
		t.Fatalf("create_database after catalog2 is READ_WRITE again: %v", err)
	}
	_ = proxytest.Client(t, hms2.URI).DropDatabase(context.Background(), db+"_2", true, true)
}

func TestReloadRefusesAnInvalidFileAndKeepsServing(t *testing.T) {
	needHive(t)
	p := proxytest.Start(t, catalogProps("catalog1", "catalog2"))
	c := proxytest.Client(t, p.URI("primary"))
	before := gauge(t, p, app.MetricConfigLastReloadSuccess)
	time.Sleep(1100 * time.Millisecond) // the timestamp has a second's resolution

	// A wrong value: refused whole, naming the key and the value; the
	// valid change in the same file is not applied either.
	_, err := reload(t, p, with(p.Props, "catalog.catalog2.access-mode", "READ_SOMETIMES",
		"catalog.catalog1.access-mode", "READ_ONLY"))
	if err == nil || !strings.Contains(err.Error(), "catalog.catalog2.access-mode") || !strings.Contains(err.Error(), "READ_SOMETIMES") {
		t.Fatalf("an invalid file: %v", err)
	}
	if err := c.CreateDatabase(ctx(t), &thriftgen.Database{Name: uniq("still_rw")}); err != nil {
		t.Fatalf("the running configuration (catalog1 READ_WRITE) is not kept after a refused reload: %v", err)
	}
	// A syntax error and a missing file are refused the same way.
	proxytest.WriteConfig(t, p.ConfigFile, p.Props)
	if err := appendFile(p.ConfigFile, "catalog.catalog1.access-mode=READ_ONLY\\u00zz\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Reload(ctx(t)); err == nil {
		t.Fatal("a file with a malformed \\u escape was applied")
	}
	// A catalog added by a reload with a key that needs a restart is refused.
	_, err = reload(t, p, with(p.Props, "catalogs", "catalog1,catalog2,catalog3",
		"catalog.catalog3.conf.hive.metastore.uris", hms2.URI,
		"catalog.catalog3.conf.hms.proxy.external-table-drop-purge.allowed-prefixes", "/tmp/x"))
	if err == nil || !strings.Contains(err.Error(), "catalog.catalog3.conf.hms.proxy.external-table-drop-purge.allowed-prefixes") {
		t.Fatalf("a new catalog with a restart-only key: %v", err)
	}
	if n := reloads(t, p, "failure"); n != 3 {
		t.Errorf("%s{result=failure}=%v, want 3", app.MetricConfigReloads, n)
	}
	if n := reloads(t, p, "success"); n != 0 {
		t.Errorf("%s{result=success}=%v, want 0", app.MetricConfigReloads, n)
	}
	if after := gauge(t, p, app.MetricConfigLastReloadSuccess); after != before {
		t.Errorf("%s moved from %v to %v on refused reloads", app.MetricConfigLastReloadSuccess, before, after)
	}
	if p.Current() != p.Router {
		t.Error("a refused reload replaced the router")
	}

	// A key that needs a restart beside one that does not: the live one is
	// applied, the other keeps its running value and is named.
	out, err := reload(t, p, with(p.Props, "server.max-worker-threads", "700", "catalog.catalog1.access-mode", "READ_ONLY"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(out.Kept, ",") != "server.max-worker-threads" || strings.Join(out.Changed, ",") != "catalog.catalog1.access-mode" {
		t.Fatalf("outcome %+v", out)
	}
	if got := p.CurrentConfig().Server.MaxWorkerThreads; got != p.Config.Server.MaxWorkerThreads {
		t.Errorf("server.max-worker-threads in force is %d, want the running %d", got, p.Config.Server.MaxWorkerThreads)
	}
	if after := gauge(t, p, app.MetricConfigLastReloadSuccess); after <= before {
		t.Errorf("%s did not move on a successful reload", app.MetricConfigLastReloadSuccess)
	}
	var me *thriftgen.MetaException
	if err := c.CreateDatabase(ctx(t), &thriftgen.Database{Name: uniq("now_ro")}); !errors.As(err, &me) {
		t.Fatalf("catalog1 READ_ONLY after the reload: %v", err)
	}
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func TestReloadChangesTheLogLevel(t *testing.T) {
	needHive(t)
	p := proxytest.Start(t, catalogProps("catalog1"))
	if p.Log.Enabled(context.Background(), slog.LevelDebug) {
		t.Fatal("DEBUG is on before the reload")
	}
	if _, err := reload(t, p, with(p.Props, "logging.level", "DEBUG")); err != nil {
		t.Fatal(err)
	}
	if !p.Log.Enabled(context.Background(), slog.LevelDebug) {
		t.Fatal("logging.level=DEBUG was not applied by the reload")
	}
	if _, err := reload(t, p, with(p.Props, "logging.level", "WARN")); err != nil {
		t.Fatal(err)
	}
	if p.Log.Enabled(context.Background(), slog.LevelInfo) {
		t.Fatal("logging.level=WARN was not applied by the reload")
	}
}

func TestReloadOverTheManagementListener(t *testing.T) {
	needHive(t)
	off := proxytest.Start(t, catalogProps("catalog1"))
	if code, _ := post(t, off.ManagementURL()+"/reload"); code != http.StatusNotFound {
		t.Errorf("POST /reload with management.reload-enabled unset: %d, want 404", code)
	}
	p := proxytest.Start(t, with(catalogProps("catalog1"), "management.reload-enabled", "true"))
	proxytest.WriteConfig(t, p.ConfigFile, with(p.Props, "catalog.catalog1.access-mode", "READ_ONLY"))
	code, body := post(t, p.ManagementURL()+"/reload")
	if code != http.StatusOK || !strings.Contains(body, `"RELOADED"`) || !strings.Contains(body, "catalog.catalog1.access-mode") {
		t.Fatalf("POST /reload: %d %s", code, body)
	}
	proxytest.WriteConfig(t, p.ConfigFile, with(p.Props, "catalog.catalog1.access-mode", "NOPE"))
	code, body = post(t, p.ManagementURL()+"/reload")
	if code != http.StatusBadRequest || !strings.Contains(body, `"REFUSED"`) || !strings.Contains(body, "NOPE") {
		t.Fatalf("POST /reload of an invalid file: %d %s", code, body)
	}
	resp, err := http.Get(p.ManagementURL() + "/reload")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /reload: %d, want 405", resp.StatusCode)
	}
}

func post(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
