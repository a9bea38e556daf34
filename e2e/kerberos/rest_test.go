package kerberos

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
)

// The Iceberg REST listener with SPNEGO as the binary builds it from
// rest-catalog.kerberos.*: curl --negotiate (MIT GSS-API) with alice's
// ticket lists namespaces, alice's short name is the router's identity for
// the REST request's metastore calls (their audit records), and with
// impersonation on a namespace alice creates reaches the Kerberized
// metastore as alice. Without a ticket: 401 with WWW-Authenticate: Negotiate.
func TestRESTCatalogSPNEGO(t *testing.T) {
	httpKT, err := kdc.PrincipalKeytab("http-rest.keytab", "HTTP/localhost")
	if err != nil {
		t.Fatal(err)
	}
	port := proxytest.FreePort(t)
	p := proxytest.Start(t, federation(t,
		"rest-catalog.enabled=true", "rest-catalog.bind-host=127.0.0.1", "rest-catalog.port="+strconv.Itoa(port),
		"rest-catalog.kerberos.principal=HTTP/localhost@"+kdc.Realm, "rest-catalog.kerberos.keytab="+httpKT,
		"security.impersonation-enabled=true"))
	base := "http://localhost:" + strconv.Itoa(port)

	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(base + "/v1/catalog1/namespaces")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Negotiate") {
		t.Fatalf("without a ticket: %d WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}

	ccache := "FILE:" + filepath.Join(t.TempDir(), "alice.ccache")
	if err := kdc.Kinit("alice", aliceKT, ccache); err != nil {
		t.Fatal(err)
	}
	curl := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		args := []string{"-sS", "--negotiate", "-u", ":", "-X", method, "-o", "-", "-w", "\n%{http_code}", base + path}
		if body != "" {
			args = append(args, "-H", "Content-Type: application/json", "-d", body)
		}
		cmd := exec.Command("curl", args...)
		cmd.Env = append(os.Environ(), "KRB5_CONFIG="+kdc.Krb5Conf, "KRB5CCNAME="+ccache)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("curl %s %s: %v\n%s", method, path, err, out)
		}
		text := strings.TrimSpace(string(out))
		i := strings.LastIndexByte(text, '\n')
		code, _ := strconv.Atoi(text[i+1:])
		var m map[string]any
		if i > 0 {
			_ = json.Unmarshal([]byte(text[:i]), &m)
		}
		return code, m
	}
	if code, body := curl("GET", "/v1/catalog1/namespaces", ""); code != 200 || body["namespaces"] == nil {
		t.Fatalf("alice lists namespaces: %d %v", code, body)
	}
	db := uniq("restk")
	admin := backendAdmin(t, krb1)
	t.Cleanup(func() { _ = admin.DropDatabase(ctx(t), db, true, true) })
	if code, body := curl("POST", "/v1/catalog1/namespaces", `{"namespace":["`+db+`"]}`); code != 200 {
		t.Fatalf("alice creates namespace %s: %d %v", db, code, body)
	}
	if _, err := admin.GetDatabase(ctx(t), db); err != nil {
		t.Fatalf("the namespace is not in catalog1's metastore: %v", err)
	}
	if got := auditUsers(t, krb1, db); len(got) == 0 || got[0] != "alice" {
		t.Fatalf("alice's REST create reached the metastore as %v, want alice (impersonation)", got)
	}
	// The proxy's audit: the REST record names the principal, the router's
	// records of its metastore calls the short name (the router identity).
	b, err := os.ReadFile(p.AuditFile)
	if err != nil {
		t.Fatal(err)
	}
	var rest, rpc string
	for _, line := range strings.Split(string(b), "\n") {
		var r map[string]any
		if json.Unmarshal([]byte(line), &r) != nil {
			continue
		}
		switch r["method"] {
		case "REST POST /v1/{prefix}/namespaces":
			rest, _ = r["authenticatedUser"].(string)
		case "create_database":
			rpc, _ = r["authenticatedUser"].(string)
		}
	}
	if rest != kdc.Principal("alice") || rpc != "alice" {
		t.Fatalf("audit: REST request by %q, its create_database by %q; want %s and alice", rest, rpc, kdc.Principal("alice"))
	}
}
