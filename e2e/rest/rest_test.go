package rest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
)

// The Iceberg REST listener as the binary starts it from the configuration:
// its metastore calls go through the router (routing, access modes, audit),
// not straight to a backend. (The frontend's protocol is tested with
// pyiceberg, DuckDB and Iceberg's Java client in restcatalog.)
func TestRESTListenerGoesThroughTheRouter(t *testing.T) {
	e2eutil.NeedHive(t)
	port := proxytest.FreePort(t)
	p := proxytest.Start(t, e2eutil.TwoCatalogs(
		"rest-catalog.enabled=true", "rest-catalog.bind-host=127.0.0.1", "rest-catalog.port="+strconv.Itoa(port),
		"catalog.catalog2.access-mode=READ_ONLY"))
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	do := func(method, path string, body any) (int, map[string]any) {
		t.Helper()
		var r io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			r = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, base+path, r)
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	if code, cfg := do("GET", "/v1/config?warehouse=catalog2", nil); code != 200 || cfg["overrides"].(map[string]any)["prefix"] != "catalog2" {
		t.Fatalf("/v1/config?warehouse=catalog2: %d %v", code, cfg)
	}
	ns := e2eutil.Uniq("restns")
	if code, body := do("POST", "/v1/catalog1/namespaces", map[string]any{"namespace": []string{ns}}); code != 200 {
		t.Fatalf("create namespace on the default catalog: %d %v", code, body)
	}
	t.Cleanup(func() { _ = proxytest.Client(t, e2eutil.HMS1.URI).DropDatabase(e2eutil.Ctx(t), ns, true, true) })
	if _, err := proxytest.Client(t, e2eutil.HMS1.URI).GetDatabase(e2eutil.Ctx(t), ns); err != nil {
		t.Fatalf("the namespace is not a database of catalog1's metastore: %v", err)
	}
	// catalog2 is READ_ONLY: the REST write gate refuses with the router's
	// access mode before any metastore call.
	if code, body := do("POST", "/v1/catalog2/namespaces", map[string]any{"namespace": []string{ns}}); code != 403 ||
		!strings.Contains(jsonText(body), "is READ_ONLY (catalog.catalog2.access-mode)") {
		t.Fatalf("a namespace on a READ_ONLY catalog: want 403 from the access mode, got %d %v", code, body)
	}
	if code, body := do("GET", "/v1/catalog1/namespaces", nil); code != 200 || !strings.Contains(jsonText(body), "catalog2__default") {
		t.Fatalf("the default prefix lists every catalog's databases: %d %v", code, body)
	}
	if n := p.Metric(t, "hms_proxy_rest_requests_total", "prefix", "catalog1", "route", "POST /v1/{prefix}/namespaces", "status", "200"); n != 1 {
		t.Fatalf("hms_proxy_rest_requests_total for the create = %v", n)
	}
	recs := e2eutil.AuditOf(t, p, "create_database")
	if len(recs) != 1 || recs[0]["catalog"] != "catalog1" || recs[0]["status"] != "ok" {
		t.Fatalf("the REST request's metastore call is audited by the router (catalog1 ok; catalog2's never sent): %v", recs)
	}
	if recs := e2eutil.AuditOf(t, p, "REST POST /v1/{prefix}/namespaces"); len(recs) != 2 || recs[1]["catalog"] != "catalog2" || recs[1]["status"] != "error" {
		t.Fatalf("each REST request is audited once, the refused one as an error of catalog2: %v", recs)
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
