package rest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/hms-proxy/hms-proxy/app"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// rckNamespaces are the namespaces the kit's tests create; the kit itself
// purges only ns and newdb before each test, so a run starts without all of
// them.
var rckNamespaces = []string{"a", "newdb", "newdb_1", "newdb_2", "ns", "ns1", "ns2", "ns_1", "ns_2", "other_ns", "parent"}

// rckHiveRule is the one kit test a Hive metastore cannot pass, with Hive's
// rule (docs/rest.md#conformance-icebergs-rest-compatibility-kit): testNamespaceWithSlash creates the
// namespace "new/db", and a Hive database name has only letters, digits and
// '_' (MetaStoreUtils.validateName). The proxy answers 400 naming the rule.
const (
	rckHiveRuleTest = "testNamespaceWithSlash()"
	rckHiveRuleText = "Hive allows only letters, digits and '_'"
)

// rckSkips are the skips the kit declares itself (JUnit assumptions on the
// catalog's capabilities), by test: what a Hive catalog does not have.
var rckSkips = map[string]string{
	"createAndDropEmptyNamespace()":         "empty namespaces",
	"listNamespacesWithEmptyNamespace()":    "empty namespaces",
	"listTablesInEmptyNamespace()":          "empty namespaces",
	"namespacePropertiesOnEmptyNamespace()": "empty namespaces",
	"listViewsInEmptyNamespace()":           "empty namespaces",
	"testListNestedNamespaces()":            "nested namespaces (a namespace is one Hive database)",
	"testNamespaceWithDot()":                "'.' in a database name (Hive's rule; rck.supports-names-with-dot=false)",
	"testTableNameWithDot()":                "'.' in a table name (Hive's rule; rck.supports-names-with-dot=false)",
}

// Apache Iceberg's own REST Compatibility Kit (RESTCompatibilityKitSuite of
// iceberg-open-api 1.10.0, 148 tests: tables and views, format versions 1-3,
// transactions, the reference catalog's error types and messages) against
// the binary's REST listener, on the default catalog (Hive 3.1.3), a
// non-default Hive 3.1.3 catalog (behind the isolating lock shim) and a Hive
// 4.1.0 catalog, and once more on the Hive 4.1.0 catalog as an OAuth2 client
// (Keycloak's token, TLS) of a proxy that requires bearer tokens. Every test
// passes except the one a Hive metastore cannot store, and the kit's
// declared skips; with tokens as many pass as without.
func TestRESTCompatibilityKit(t *testing.T) {
	e2eutil.NeedHive(t)
	if _, err := testbed.RCKLib(); err != nil {
		t.Fatalf("the kit's jars: %v", err)
	}
	p := e2eutil.StartREST(t, e2eutil.TwoCatalogs("catalogs=catalog1,catalog2,hive4", "catalog.hive4.conf.hive.metastore.uris="+e2eutil.HMS4.URI,
		"catalog.hive4.runtime-profile=APACHE_4_1_0"), app.TestHooks{})
	// The default catalog's prefix lists every catalog's namespaces (the
	// kit's listing tests compare whole lists), so it runs alone; the other
	// two prefixes each see only their own catalog and run side by side.
	run := func(t *testing.T, base, warehouse string, ms *testbed.Metastore, props map[string]string) testbed.RCKResult {
		direct := proxytest.Client(t, ms.URI)
		for _, db := range rckNamespaces {
			_ = direct.DropDatabase(e2eutil.Ctx(t), db, true, true) // absent is fine
		}
		c, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
		defer cancel()
		res, err := testbed.RunRCK(c, testbed.RCKOptions{URI: base, Warehouse: warehouse,
			Reports: filepath.Join(t.TempDir(), "rck"), Props: props})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Iceberg REST Compatibility Kit on %s: %s", warehouse, res.Summary())
		assertRCK(t, res)
		return res
	}
	var anonHive4 testbed.RCKResult
	t.Run("default_hive3", func(t *testing.T) { run(t, p.Base, "catalog1", e2eutil.HMS1, rckProps()) })
	t.Run("others", func(t *testing.T) {
		t.Run("hive3", func(t *testing.T) { t.Parallel(); run(t, p.Base, "catalog2", e2eutil.HMS2, rckProps()) })
		t.Run("hive4", func(t *testing.T) { t.Parallel(); anonHive4 = run(t, p.Base, "hive4", e2eutil.HMS4, rckProps()) })
	})
	// The kit as an OAuth2 client: its Java RESTCatalog fetches a token from
	// Keycloak with a client credential and sends it on every request, over
	// TLS, to a proxy that refuses requests without one; the backend calls
	// run as the token's user (impersonation). The same tests pass as
	// anonymously on the same catalog.
	t.Run("oauth2_hive4", func(t *testing.T) {
		op := startOAuthREST(t)
		if op.tls.TrustStore == "" {
			t.Fatal("no keytool to make the JVM's trust store")
		}
		props := rckProps()
		for k, v := range map[string]string{
			"rest.auth.type": "oauth2", "credential": "rck:" + testbed.KeycloakSecrets["rck"],
			"oauth2-server-uri": op.kc.TokenEndpoint("hms"), "scope": "catalog",
			"javax.net.ssl.trustStore": op.tls.TrustStore, "javax.net.ssl.trustStorePassword": op.tls.TrustStorePassword,
			"javax.net.ssl.trustStoreType": "PKCS12",
		} {
			props[k] = v
		}
		res := run(t, op.Base, "hive4", e2eutil.HMS4, props)
		if anonHive4.Cases != nil && res.Count("passed") != anonHive4.Count("passed") {
			t.Errorf("with OAuth2 the kit passed %d tests, anonymously %d (%s / %s)", res.Count("passed"), anonHive4.Count("passed"),
				res.Summary(), anonHive4.Summary())
		}
		assertEveryRESTRequestBy(t, op, "service-account-rck")
	})
}

// assertEveryRESTRequestBy: the proxy audited REST requests, every one as
// user (none anonymous, none refused for its token).
func assertEveryRESTRequestBy(t *testing.T, p *oauthProxy, user string) {
	t.Helper()
	b, err := os.ReadFile(p.Proxy.AuditFile)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		if m, _ := rec["method"].(string); strings.HasPrefix(m, "REST ") {
			n++
			if rec["authenticatedUser"] != user {
				t.Errorf("a REST request not by %s: %s", user, line)
				return
			}
		}
	}
	if n < 100 {
		t.Errorf("the proxy audited %d REST requests of the kit", n)
	}
}

// rckProps are the kit's capability switches for a Hive catalog.
func rckProps() map[string]string {
	return map[string]string{
		"rck.requires-namespace-create":    "true",
		"rck.supports-serverside-retry":    "true",
		"rck.overrides-requested-location": "false",
		"rck.supports-names-with-dot":      "false",
	}
}

// assertRCK: nothing fails but the Hive rule's test, nothing is skipped but
// by the kit's own assumptions.
func assertRCK(t *testing.T, res testbed.RCKResult) {
	t.Helper()
	if len(res.Cases) < 140 {
		t.Errorf("the kit ran %d tests; 1.10.0 has 148", len(res.Cases))
	}
	for _, c := range res.Cases {
		switch c.Outcome {
		case "failed":
			if c.Name == rckHiveRuleTest && strings.Contains(c.Message, rckHiveRuleText) {
				continue
			}
			t.Errorf("%s.%s failed: %s", c.Class, c.Name, c.Message)
		case "skipped":
			if _, ok := rckSkips[c.Name]; !ok || !strings.Contains(c.Message, "AssumptionViolatedException") {
				t.Errorf("%s.%s skipped, and the kit declares no such skip for a Hive catalog: %s", c.Class, c.Name, c.Message)
			}
		}
	}
}
