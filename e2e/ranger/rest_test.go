package ranger

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/app"
	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// The REST door passes the same checks, the caller being the Keycloak
// token's user (preferred_username) with its groups claim: Keycloak's
// service-account-spark (group engineers) may create namespaces matching
// the policy, service-account-pyiceberg (group analysts) may not, is
// answered 403 ForbiddenException and nothing is created; each lists only
// the namespaces its policies give it, loading a namespace it has no access
// to is a 404 as for one that does not exist, and a drop its policies do not
// allow is a 403 that changes nothing.
func TestRangerRESTDoorKeycloakUsers(t *testing.T) {
	e2eutil.NeedHive(t)
	kc := e2eutil.Keycloak(t)
	id := e2eutil.Uniq("")
	ns, other := "rg_ns"+id, "rg_nsx"+id
	direct := proxytest.Client(t, e2eutil.HMS1.URI)
	e2eutil.MkDB(t, direct, other)
	t.Cleanup(func() {
		for _, db := range []string{ns, other} {
			_ = direct.DropDatabase(e2eutil.Ctx(t), db, true, true)
		}
	})
	admin, err := testbed.StartRangerAdmin(testbed.RangerAdminOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	admin.SetPolicies(service, servicePolicies(t, 1,
		policy{id: 30, db: "rg_ns" + id, table: "*", groups: []string{"engineers"}, access: []string{"all"}},
		policy{id: 31, db: other, table: "*", groups: []string{"engineers"}, access: []string{"select"}}))
	files, err := testbed.NewTLSFiles(t.TempDir(), "hms-proxy-rest")
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]string{"catalogs": "catalog1", "routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": e2eutil.HMS1.URI,
		"rest-catalog.oauth2.issuer":                kc.Issuer("hms"), "rest-catalog.oauth2.audience": "hms-proxy",
		"rest-catalog.oauth2.user-claim": "preferred_username", "rest-catalog.oauth2.groups-claim": "groups",
		"rest-catalog.tls.cert-file": files.CertFile, "rest-catalog.tls.key-file": files.KeyFile,
		"ranger.enabled": "true", "ranger.policy.rest.url": admin.URL, "ranger.service-name": service}
	p := e2eutil.StartREST(t, props, app.TestHooks{})
	p.Base = strings.Replace(p.Base, "http://", "https://", 1)
	ca, _ := os.ReadFile(files.CAFile)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	p.Client = &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	token := func(client string) string {
		tok, err := kc.Token("hms", client)
		if err != nil {
			t.Fatal(err)
		}
		return "Bearer " + tok
	}
	spark, analyst := token("spark"), token("pyiceberg")

	a := p.DoAs(t, "POST", "/v1/catalog1/namespaces", analyst, map[string]any{"namespace": []string{ns}})
	if typ, msg := a.ErrorModel(); a.Status != 403 || typ != "ForbiddenException" || !strings.Contains(msg, "service-account-pyiceberg") {
		t.Errorf("analyst creates namespace %s: %d %s %q; want 403 ForbiddenException naming the user", ns, a.Status, typ, msg)
	}
	if _, err := direct.GetDatabase(e2eutil.Ctx(t), ns); err == nil {
		t.Fatalf("the refused namespace %s exists on the metastore", ns)
	}
	if a := p.DoAs(t, "POST", "/v1/catalog1/namespaces", spark, map[string]any{"namespace": []string{ns}}); a.Status != 200 {
		t.Fatalf("engineer creates namespace %s: %d %v", ns, a.Status, a.Body)
	}
	if _, err := direct.GetDatabase(e2eutil.Ctx(t), ns); err != nil {
		t.Fatalf("the engineer's namespace is not on the metastore: %v", err)
	}
	lists := map[string]string{}
	for who, tok := range map[string]string{"engineer": spark, "analyst": analyst} {
		a := p.DoAs(t, "GET", "/v1/catalog1/namespaces", tok, nil)
		if a.Status != 200 {
			t.Fatalf("%s lists namespaces: %d %v", who, a.Status, a.Body)
		}
		var ours []string
		for _, n := range a.Body["namespaces"].([]any) {
			name := n.([]any)[0].(string)
			if strings.HasSuffix(name, id) {
				ours = append(ours, name)
			}
		}
		lists[who] = strings.Join(ours, ",")
	}
	if lists["engineer"] != ns+","+other && lists["engineer"] != other+","+ns {
		t.Errorf("engineer's namespaces: %q; want %s and %s", lists["engineer"], ns, other)
	}
	if lists["analyst"] != "" {
		t.Errorf("analyst's namespaces: %q; want none", lists["analyst"])
	}
	if a := p.DoAs(t, "GET", "/v1/catalog1/namespaces/"+other, analyst, nil); a.Status != 404 {
		t.Errorf("analyst loads namespace %s: %d %v; want 404", other, a.Status, a.Body)
	}
	if a := p.DoAs(t, "DELETE", "/v1/catalog1/namespaces/"+other, spark, nil); a.Status != 403 {
		t.Errorf("engineer (select only) drops namespace %s: %d %v; want 403", other, a.Status, a.Body)
	}
	if _, err := direct.GetDatabase(e2eutil.Ctx(t), other); err != nil {
		t.Errorf("the refused drop changed the metastore: %v", err)
	}
}
