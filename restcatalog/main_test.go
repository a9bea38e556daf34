package restcatalog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/restcatalog"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Shared metastores, started once per test binary: two Hive 3.1.3 (the
// default catalog1 and catalog2) and one Hive 4.1.0 (hive4).
var hms1, hms2, hms4 *testbed.Metastore

func TestMain(m *testing.M) {
	if os.Getenv("HMS_PROXY_SKIP_REAL_HIVE") == "1" {
		fmt.Println("restcatalog: HMS_PROXY_SKIP_REAL_HIVE=1, real-Hive tests skipped")
		os.Exit(m.Run())
	}
	ms, err := testbed.StartMetastores(testbed.Hive313, testbed.Hive313, testbed.Hive410)
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, "restcatalog: starting metastores:", err)
	} else {
		hms1, hms2, hms4 = ms[0], ms[1], ms[2]
		code = m.Run()
	}
	for _, m := range ms {
		if m != nil {
			_ = m.Stop()
		}
	}
	os.Exit(code)
}

// env is one in-process proxy over the shared metastores with a REST
// listener in front of it whose metastore access dials the proxy's Thrift
// listener, as a Hive client would.
type env struct {
	t     *testing.T
	proxy *proxytest.Proxy
	srv   *restcatalog.Server
	url   string
	// url2 is a second REST handler (a second proxy instance's: its own
	// per-table queue) over the same proxy router.
	url2     string
	reg      *prometheus.Registry
	mu       sync.Mutex
	isolated map[string]bool
	requests []restcatalog.RequestInfo
}

func needHive(t *testing.T) {
	t.Helper()
	if hms1 == nil {
		t.Skip("HMS_PROXY_SKIP_REAL_HIVE=1")
	}
}

func baseProps() map[string]string {
	return map[string]string{
		"catalogs":                "catalog1,catalog2,hive4",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": hms1.URI,
		"catalog.catalog2.conf.hive.metastore.uris": hms2.URI,
		"catalog.hive4.conf.hive.metastore.uris":    hms4.URI,
		"catalog.hive4.runtime-profile":             "APACHE_4_1_0",
	}
}

// newEnv starts the proxy (props over baseProps) and the REST listener;
// only the default catalog is write-isolated until a test flips another.
func newEnv(t *testing.T, props map[string]string, tune func(*restcatalog.Options)) *env {
	t.Helper()
	needHive(t)
	all := baseProps()
	for k, v := range props {
		all[k] = v
	}
	p := proxytest.Start(t, all)
	e := &env{t: t, proxy: p, reg: prometheus.NewRegistry(), isolated: map[string]bool{"catalog1": true}}
	metrics, err := restcatalog.NewMetrics(e.reg)
	if err != nil {
		t.Fatal(err)
	}
	uri := strings.TrimPrefix(p.URI("primary"), "thrift://")
	opts := restcatalog.Options{
		Naming:    p.Router.Namespace(),
		Metastore: dialer(uri),
		WriteIsolated: func(c string) bool {
			e.mu.Lock()
			defer e.mu.Unlock()
			return e.isolated[c]
		},
		CompareAndSwap: func(catalog string) bool {
			c := p.Config.Catalog(catalog)
			if c == nil {
				return false
			}
			rt, err := compat.Lookup(string(c.RuntimeProfile))
			return err == nil && rt.CompareAndSwap
		},
		CatalogConf: func(catalog, key string) (string, bool) {
			c := p.Config.Catalog(catalog)
			if c == nil {
				return "", false
			}
			v, ok := c.Conf[key]
			return v, ok
		},
		HiveEngineDescriptor: true,
		Metrics:              metrics,
		OnRequest: func(ri restcatalog.RequestInfo) {
			e.mu.Lock()
			e.requests = append(e.requests, ri)
			e.mu.Unlock()
		},
		LockTimeout: 40 * time.Second,
	}
	if tune != nil {
		tune(&opts)
	}
	for i := 0; i < 2; i++ {
		h, err := restcatalog.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := restcatalog.Listen(h, restcatalog.ServerOptions{BindHost: "127.0.0.1", Port: 0, Metrics: metrics})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
		})
		if i == 0 {
			e.srv, e.url = srv, captureFront(t, srv.URL())
			metrics = nil // one listener_info / request series source
		} else {
			e.url2 = captureFront(t, srv.URL())
		}
	}
	return e
}

func (e *env) setIsolated(catalog string, v bool) {
	e.mu.Lock()
	e.isolated[catalog] = v
	e.mu.Unlock()
}

// dialer opens one Thrift connection to the proxy per REST request.
func dialer(addr string) restcatalog.Metastore {
	return func(ctx context.Context, _ restcatalog.Caller) (*thriftgen.Client, func(), error) {
		cfg := &thrift.TConfiguration{ConnectTimeout: 10 * time.Second, SocketTimeout: 120 * time.Second}
		trans := thrift.NewTBufferedTransport(thrift.NewTSocketConf(addr, cfg), 64<<10)
		if err := trans.Open(); err != nil {
			return nil, nil, err
		}
		proto := thrift.NewTBinaryProtocolConf(trans, cfg)
		return thriftgen.NewClient(thrift.NewTStandardClient(proto, proto)), func() { trans.Close() }, nil
	}
}

// hms is a typed client of the proxy's Thrift listener (the Hive view of
// the same metastores).
func (e *env) hms() *thriftgen.Client { return proxytest.Client(e.t, e.proxy.URI("primary")) }

// direct is a typed client of one backend metastore, past the proxy.
func direct(t *testing.T, m *testbed.Metastore) *thriftgen.Client { return proxytest.Client(t, m.URI) }

func tctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func uniq(prefix string) string {
	return fmt.Sprintf("%s_%x", prefix, time.Now().UnixNano()&0xffffffff)
}

// answer is one HTTP answer of the REST listener.
type answer struct {
	Status int
	Header http.Header
	Body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.Body, &m); err != nil {
		t.Fatalf("answer %d is not JSON: %v: %s", a.Status, err, a.Body)
	}
	return m
}

// errorType checks the answer is an ErrorModel with the given status and
// returns its type and message.
func (a answer) errorModel(t *testing.T, status int) (string, string) {
	t.Helper()
	if a.Status != status {
		t.Fatalf("status %d, want %d: %s", a.Status, status, a.Body)
	}
	var m struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(a.Body, &m); err != nil {
		t.Fatalf("error answer is not an ErrorModel: %v: %s", err, a.Body)
	}
	if m.Error.Code != status || m.Error.Type == "" || m.Error.Message == "" {
		t.Fatalf("incomplete ErrorModel: %s", a.Body)
	}
	if strings.Contains(string(a.Body), "goroutine ") || strings.Contains(string(a.Body), ".go:") {
		t.Fatalf("error answer carries a stack trace: %s", a.Body)
	}
	return m.Error.Type, m.Error.Message
}

// do sends a request; body may be a string, []byte or a value to encode.
func (e *env) do(method, path string, body any, header ...string) answer {
	e.t.Helper()
	return e.doAt(e.url, method, path, body, header...)
}

func (e *env) doAt(base, method, path string, body any, header ...string) answer {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// metric sums the samples of a family whose labels include every pair.
func metric(t *testing.T, e *env, name string, labels ...string) float64 {
	t.Helper()
	families, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
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
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum
}

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
