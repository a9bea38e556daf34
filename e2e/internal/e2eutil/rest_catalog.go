package e2eutil

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/app"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// RestProxy is a proxy with its REST listener on a free loopback port.
type RestProxy struct {
	*proxytest.Proxy
	Base   string
	Client *http.Client // nil: a plain client with a 2-minute timeout
}

func StartREST(t *testing.T, props map[string]string, hooks app.TestHooks) *RestProxy {
	t.Helper()
	port := proxytest.FreePort(t)
	all := map[string]string{"rest-catalog.enabled": "true", "rest-catalog.bind-host": "127.0.0.1", "rest-catalog.port": strconv.Itoa(port)}
	for k, v := range props {
		all[k] = v
	}
	return &RestProxy{Proxy: proxytest.StartWith(t, all, hooks), Base: "http://127.0.0.1:" + strconv.Itoa(port)}
}

type RestAnswer struct {
	Status int
	Header http.Header
	Body   map[string]any
}

// errorModel returns the ErrorModel's type and message.
func (a RestAnswer) ErrorModel() (string, string) {
	e, _ := a.Body["error"].(map[string]any)
	typ, _ := e["type"].(string)
	msg, _ := e["message"].(string)
	return typ, msg
}

func (p *RestProxy) Do(t *testing.T, method, path string, body any) RestAnswer {
	t.Helper()
	return p.DoAs(t, method, path, "", body)
}

// doAs sends a request with an Authorization header ("" for none).
func (p *RestProxy) DoAs(t *testing.T, method, path, authz string, body any) RestAnswer {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.Base+path, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	client := p.Client
	if client == nil {
		client = &http.Client{Timeout: 2 * time.Minute}
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	a := RestAnswer{Status: resp.StatusCode, Header: resp.Header}
	_ = json.NewDecoder(resp.Body).Decode(&a.Body)
	return a
}

// endpoints is /v1/config's endpoints list for warehouse (a catalog).
func (p *RestProxy) Endpoints(t *testing.T, warehouse string) []string {
	t.Helper()
	a := p.Do(t, "GET", "/v1/config?warehouse="+warehouse, nil)
	if a.Status != 200 {
		t.Fatalf("/v1/config?warehouse=%s: %d %v", warehouse, a.Status, a.Body)
	}
	var out []string
	for _, e := range a.Body["endpoints"].([]any) {
		out = append(out, e.(string))
	}
	return out
}

// RestPy runs testdata/pyiceberg_rest.py with cfg and decodes its answer.
func RestPy(t *testing.T, cfg map[string]any, out any) {
	t.Helper()
	py := PyIceberg(t)
	arg, _ := json.Marshal(cfg)
	run, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(run, py, Testdata("pyiceberg_rest.py"), string(arg))
	// requests lets REQUESTS_CA_BUNDLE (and CURL_CA_BUNDLE) override a
	// session's own trust, so PyIceberg's ssl.cabundle would be ignored.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REQUESTS_CA_BUNDLE=") && !strings.HasPrefix(kv, "CURL_CA_BUNDLE=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "PYICEBERG_HOME="+t.TempDir(), "PYTHONDONTWRITEBYTECODE=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	testbed.CountLaunch("PyIceberg runs (pyiceberg_rest.py)")
	stdout, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	last := lines[len(lines)-1]
	if err != nil {
		tail := stderr.String()
		if len(tail) > 3000 {
			tail = tail[len(tail)-3000:]
		}
		t.Fatalf("PyIceberg %v: %v\n%s\nstderr tail:\n%s", cfg["scenario"], err, last, tail)
	}
	if err := json.Unmarshal([]byte(last), out); err != nil {
		t.Fatalf("PyIceberg %v answered %q: %v", cfg["scenario"], last, err)
	}
}
