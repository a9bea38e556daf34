package rest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/hms-proxy/hms-proxy/app"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// oauthProxy is a proxy whose REST listener takes Keycloak's bearer tokens
// (realm hms, audience hms-proxy, user claim preferred_username) over TLS,
// with impersonation on, so the metastores see the token's user.
type oauthProxy struct {
	*e2eutil.RestProxy // its client trusts the proxy's CA
	kc                 *testbed.Keycloak
	tls                *testbed.TLSFiles
}

func startOAuthREST(t *testing.T, extra ...string) *oauthProxy {
	t.Helper()
	return startOAuthRESTWith(t, app.TestHooks{}, extra...)
}

func startOAuthRESTWith(t *testing.T, hooks app.TestHooks, extra ...string) *oauthProxy {
	t.Helper()
	kc := e2eutil.Keycloak(t)
	files, err := testbed.NewTLSFiles(t.TempDir(), "hms-proxy-rest")
	if err != nil {
		t.Fatal(err)
	}
	props := e2eutil.TwoCatalogs(append([]string{"catalogs=catalog1,catalog2,hive4", "catalog.hive4.conf.hive.metastore.uris=" + e2eutil.HMS4.URI,
		"catalog.hive4.runtime-profile=APACHE_4_1_0",
		"rest-catalog.oauth2.issuer=" + kc.Issuer("hms"), "rest-catalog.oauth2.audience=hms-proxy",
		"rest-catalog.oauth2.user-claim=preferred_username",
		"rest-catalog.tls.cert-file=" + files.CertFile, "rest-catalog.tls.key-file=" + files.KeyFile,
		"security.impersonation-enabled=true"}, extra...)...)
	p := e2eutil.StartREST(t, props, hooks)
	p.Base = strings.Replace(p.Base, "http://", "https://", 1)
	ca, _ := os.ReadFile(files.CAFile)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	p.Client = &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	return &oauthProxy{RestProxy: p, kc: kc, tls: files}
}

func (p *oauthProxy) token(t *testing.T, realm, client string) string {
	t.Helper()
	tok, err := p.kc.Token(realm, client)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// claimsOf decodes a JWT's payload (no check: the test's own token).
func claimsOf(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// Keycloak's real tokens on the TLS listener: a client-credentials token of
// realm hms runs as its service account, with its groups; a token minted for
// another audience, by another issuer (a second realm), tampered with,
// re-encoded unsigned (alg none) or expired is 401 NotAuthorizedException
// with a Bearer challenge; the token endpoint names Keycloak's; plain HTTP
// gets no answer; /readyz reports the listener's TLS and mechanism.
func TestRESTOAuth2KeycloakTokens(t *testing.T) {
	var clock testClock
	p := startOAuthRESTWith(t, app.TestHooks{OAuth2Now: clock.now}, "rest-catalog.oauth2.clock-skew-seconds=0")
	good := p.token(t, "hms", "pyiceberg")
	a := p.DoAs(t, "GET", "/v1/catalog1/namespaces", "Bearer "+good, nil)
	if a.Status != 200 {
		t.Fatalf("a Keycloak token of client pyiceberg: %d %v", a.Status, a.Body)
	}
	if recs := e2eutil.AuditOf(t, p.Proxy, "REST GET /v1/{prefix}/namespaces"); len(recs) != 1 || recs[0]["authenticatedUser"] != "service-account-pyiceberg" {
		t.Fatalf("the REST audit record: %v", recs)
	}

	parts := strings.Split(good, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString(bytes.Replace(payload, []byte("service-account-pyiceberg"), []byte("service-account-admin"), 1)) + "." + parts[2]
	unsigned := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	short := p.token(t, "hms", "shortlived")
	for _, c := range []struct{ name, token, want string }{
		{"another audience", p.token(t, "hms", "other-service"), "audience"},
		{"another issuer", p.token(t, "other", "intruder"), "issued by " + p.kc.Issuer("other")},
		{"tampered", tampered, "not accepted"},
		{"unsigned", unsigned, "not accepted"},
	} {
		a := p.DoAs(t, "GET", "/v1/catalog1/namespaces", "Bearer "+c.token, nil)
		typ, msg := a.ErrorModel()
		if a.Status != 401 || typ != "NotAuthorizedException" || !strings.Contains(msg, c.want) ||
			!strings.HasPrefix(a.Header.Get("WWW-Authenticate"), "Bearer ") {
			t.Errorf("%s: %d %s %q (WWW-Authenticate %q)", c.name, a.Status, typ, msg, a.Header.Get("WWW-Authenticate"))
		}
	}
	if a := p.DoAs(t, "GET", "/v1/config", "", nil); a.Status != 401 || !strings.HasPrefix(a.Header.Get("WWW-Authenticate"), `Bearer realm=`) {
		t.Errorf("without a token: %d %v", a.Status, a.Body)
	}
	// The short-lived token (1 s in realm hms) once its exp has passed
	// on the proxy's clock (the listener allows no skew here).
	exp := time.Unix(int64(claimsOf(t, short)["exp"].(float64)), 0)
	clock.set(exp.Add(time.Second))
	if a := p.DoAs(t, "GET", "/v1/config", "Bearer "+short, nil); a.Status != 401 || !strings.Contains(jsonText(a.Body), "expired") {
		t.Errorf("an expired token: %d %v", a.Status, a.Body)
	}
	clock.set(time.Time{})

	// The token endpoint: Iceberg clients' default; the proxy mints none.
	req, _ := http.NewRequest("POST", p.Base+"/v1/oauth/tokens", strings.NewReader("grant_type=client_credentials&client_id=pyiceberg&client_secret=x"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := p.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), `"error":"invalid_request"`) || !strings.Contains(string(b), p.kc.TokenEndpoint("hms")) {
		t.Errorf("POST /v1/oauth/tokens: %d %s", resp.StatusCode, b)
	}

	// Plain HTTP to the TLS port: no REST answer.
	if resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(strings.Replace(p.Base, "https://", "http://", 1) + "/v1/config"); err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("plain HTTP was answered %d", resp.StatusCode)
		}
	}
	readyz := readyzREST(t, p.Proxy)
	if readyz["tls"] != true || jsonText(readyz["authentication"]) != `["oauth2"]` || readyz["warning"] != nil {
		t.Errorf("/readyz restCatalog: %v", readyz)
	}
}

// readyzREST is /readyz's restCatalog section.
func readyzREST(t *testing.T, p *proxytest.Proxy) map[string]any {
	t.Helper()
	resp, err := (&http.Client{Timeout: time.Minute}).Get(p.ManagementURL() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	rc, _ := body["restCatalog"].(map[string]any)
	return rc
}

// An unauthenticated REST listener says so in /readyz.
func TestRESTAnonymousListenerWarnsInReadyz(t *testing.T) {
	e2eutil.NeedHive(t)
	p := e2eutil.StartREST(t, e2eutil.TwoCatalogs(), app.TestHooks{})
	rc := readyzREST(t, p.Proxy)
	if jsonText(rc["authentication"]) != `["none"]` || !strings.Contains(jsonText(rc["warning"]), "accepts anonymous requests") {
		t.Fatalf("/readyz restCatalog of an anonymous listener: %v", rc)
	}
	if len(p.Config.Warnings) == 0 || !strings.Contains(strings.Join(p.Config.Warnings, "\n"), "accepts anonymous requests") {
		t.Fatalf("configuration warnings: %v", p.Config.Warnings)
	}
}

// assertTokenUser: the proxy's audit of a namespace's REST writes names the
// token's user, and the catalog's metastore saw that user (impersonation).
func assertTokenUser(t *testing.T, p *oauthProxy, ms *testbed.Metastore, db, user string) {
	t.Helper()
	got, err := ms.AuditUsers(db)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Fatalf("the metastore audit has no line naming %s", db)
	}
	for _, u := range got {
		if u != user {
			t.Fatalf("the metastore audit of %s shows ugi=%v, want %s throughout", db, got, user)
		}
	}
	recs := e2eutil.AuditOf(t, p.Proxy, "create_database")
	found := false
	for _, r := range recs {
		if strings.Contains(jsonText(r), db) || r["authenticatedUser"] == user {
			found = found || r["authenticatedUser"] == user
		}
	}
	if !found {
		t.Fatalf("no create_database audit record by %s: %v", user, recs)
	}
}

// PyIceberg's RestCatalog with a Keycloak client credential
// (oauth2-server-uri at Keycloak's token endpoint) over TLS: a table's
// whole life on a non-default Hive 3.1.3 catalog, the metastore seeing the
// token's user.
func TestRESTOAuth2PyIcebergLifecycle(t *testing.T) {
	p := startOAuthREST(t)
	ns := e2eutil.Uniq("oapy")
	t.Cleanup(func() { _ = proxytest.Client(t, e2eutil.HMS2.URI).DropDatabase(e2eutil.Ctx(t), ns, true, true) })
	var got struct {
		Columns       []string `json:"columns"`
		Now           []int64  `json:"now"`
		Then          []int64  `json:"then"`
		V1Format      int      `json:"v1_format"`
		Tables        []string `json:"tables"`
		NamespaceGone bool     `json:"namespace_gone"`
	}
	e2eutil.RestPy(t, map[string]any{"scenario": "lifecycle", "uri": p.Base, "warehouse": "catalog2", "ns": ns,
		"location": "file://" + t.TempDir(),
		"props": map[string]any{"credential": "pyiceberg:" + testbed.KeycloakSecrets["pyiceberg"],
			"oauth2-server-uri": p.kc.TokenEndpoint("hms"), "scope": "catalog", "ssl": map[string]any{"cabundle": p.tls.CAFile}}}, &got)
	if strings.Join(got.Columns, ",") != "id,writer,note" || jsonText(got.Now) != "[0,1,10,11]" || jsonText(got.Then) != "[0,1]" ||
		got.V1Format != 1 || strings.Join(got.Tables, ",") != "events_renamed,v1" || !got.NamespaceGone {
		t.Fatalf("PyIceberg's life cycle saw %+v", got)
	}
	assertTokenUser(t, p, e2eutil.HMS2, ns, "service-account-pyiceberg")
}

// Spark 3.5 with the Iceberg 1.10 runtime (rest.auth.type=oauth2, a
// Keycloak client credential) over TLS on the Hive 4.1.0 catalog: create,
// insert, schema change, the snapshots and history metadata tables
// (SELECT *), time travel, a CTAS of a format-version 1 table, rename, drops.
func TestRESTOAuth2SparkLifecycle(t *testing.T) {
	p := startOAuthREST(t)
	jar, err := testbed.MavenArtifact(testbed.IcebergSparkRuntime)
	if err != nil {
		t.Fatal(err)
	}
	if p.tls.TrustStore == "" {
		t.Fatal("no keytool to make the JVM's trust store")
	}
	ns := e2eutil.Uniq("oasp")
	t.Cleanup(func() { _ = proxytest.Client(t, e2eutil.HMS4.URI).DropDatabase(e2eutil.Ctx(t), ns, true, true) })
	loc := "file://" + t.TempDir()
	tbl := "rest." + ns + ".events"
	steps := []e2eutil.SparkStep{
		{SQL: "CREATE NAMESPACE rest." + ns + " LOCATION '" + loc + "'"},
		{SQL: "CREATE TABLE " + tbl + " (id bigint, data string) USING iceberg"},
		{SQL: "INSERT INTO " + tbl + " VALUES (1, 'a'), (2, 'b')"},
		{SQL: "SELECT snapshot_id FROM " + tbl + ".snapshots", Save: "first"},
		{SQL: "INSERT INTO " + tbl + " VALUES (3, 'c')"},
		{SQL: "ALTER TABLE " + tbl + " ADD COLUMN note string"},
		{SQL: "SELECT id, note FROM " + tbl + " ORDER BY id", Fetch: true},
		{SQL: "SELECT count(*) FROM " + tbl + ".snapshots", Fetch: true},
		{SQL: "SELECT id FROM " + tbl + " VERSION AS OF {first} ORDER BY id", Fetch: true},
		// Metadata tables: Iceberg's client asks for namespace ns.events,
		// table snapshots first and falls back only on NoSuchTableException.
		{SQL: "SELECT * FROM " + tbl + ".snapshots ORDER BY committed_at", Fetch: true},
		{SQL: "SELECT * FROM " + tbl + ".history ORDER BY made_current_at", Fetch: true},
		{SQL: "CREATE TABLE rest." + ns + ".v1 USING iceberg TBLPROPERTIES ('format-version'='1') AS SELECT id, data FROM " + tbl},
		{SQL: "SELECT count(*) FROM rest." + ns + ".v1", Fetch: true},
		{SQL: "SHOW TBLPROPERTIES rest." + ns + ".v1 ('format-version')", Fetch: true},
		{SQL: "ALTER TABLE " + tbl + " RENAME TO " + ns + ".events2"}, // Spark names the target within the catalog
		{SQL: "SHOW TABLES IN rest." + ns, Fetch: true},
		{SQL: "DROP TABLE " + tbl + "2"},
		{SQL: "DROP TABLE rest." + ns + ".v1"},
		{SQL: "DROP NAMESPACE rest." + ns},
	}
	conf := map[string]string{
		"spark.jars":                               jar,
		"spark.sql.extensions":                     "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
		"spark.sql.catalog.rest":                   "org.apache.iceberg.spark.SparkCatalog",
		"spark.sql.catalog.rest.type":              "rest",
		"spark.sql.catalog.rest.uri":               p.Base,
		"spark.sql.catalog.rest.warehouse":         "hive4",
		"spark.sql.catalog.rest.rest.auth.type":    "oauth2",
		"spark.sql.catalog.rest.credential":        "spark:" + testbed.KeycloakSecrets["spark"],
		"spark.sql.catalog.rest.oauth2-server-uri": p.kc.TokenEndpoint("hms"),
		"spark.sql.catalog.rest.scope":             "catalog",
	}
	env := []string{"JAVA_TOOL_OPTIONS=-Djavax.net.ssl.trustStore=" + p.tls.TrustStore + " -Djavax.net.ssl.trustStorePassword=" + p.tls.TrustStorePassword +
		" -Djavax.net.ssl.trustStoreType=PKCS12"}
	res := e2eutil.RunSparkEnv(t, env, e2eutil.SparkPhase{Steps: steps, Conf: conf, NoHive: true})[0]
	for i := range res {
		e2eutil.SparkOK(t, res, i)
	}
	if got := e2eutil.RowsText(res[6].Rows); got != "1,<nil>;2,<nil>;3,<nil>" && got != "1,;2,;3," {
		t.Errorf("rows after the schema change: %q", got)
	}
	if got := e2eutil.RowsText(res[7].Rows); got != "2" {
		t.Errorf("snapshots: %q", got)
	}
	if got := e2eutil.RowsText(res[8].Rows); got != "1;2" {
		t.Errorf("time travel to the first snapshot: %q", got)
	}
	checkMetadataTables(t, res[9].Rows, res[10].Rows)
	if got := e2eutil.RowsText(res[12].Rows); got != "3" {
		t.Errorf("the CTAS copy: %q", got)
	}
	if got := e2eutil.RowsText(res[13].Rows); !strings.HasSuffix(got, ",1") && got != "1" {
		t.Errorf("format-version of the CTAS table: %q", got)
	}
	if got := e2eutil.RowsText(res[15].Rows); !strings.Contains(got, "events2") || strings.Contains(got, "events,") {
		t.Errorf("tables after the rename: %q", got)
	}
	assertTokenUser(t, p, e2eutil.HMS4, ns, "service-account-spark")
}

// checkMetadataTables holds Spark's t.snapshots (committed_at, snapshot_id,
// parent_id, operation, ...) and t.history (made_current_at, snapshot_id,
// parent_id, is_current_ancestor) of a table with two appends: two
// snapshots on one parent chain, both current ancestors, the same ids.
func checkMetadataTables(t *testing.T, snaps, hist [][]string) {
	t.Helper()
	if len(snaps) != 2 || len(hist) != 2 {
		t.Fatalf("metadata tables: snapshots %q, history %q; want two rows each", snaps, hist)
	}
	for i := range snaps {
		if len(snaps[i]) < 4 || len(hist[i]) < 4 {
			t.Fatalf("metadata tables: snapshots %q, history %q", snaps, hist)
		}
		if snaps[i][3] != "append" || hist[i][1] != snaps[i][1] || !strings.EqualFold(hist[i][3], "true") {
			t.Errorf("snapshot %d: snapshots row %q, history row %q", i, snaps[i], hist[i])
		}
	}
	if snaps[1][2] != snaps[0][1] || hist[1][2] != hist[0][1] {
		t.Errorf("the second snapshot's parent is not the first: snapshots %q, history %q", snaps, hist)
	}
}

// Trino 476's Iceberg connector (iceberg.catalog.type=rest,
// iceberg.rest-catalog.security=OAUTH2 with a Keycloak client credential)
// over TLS on the default Hive 3.1.3 catalog: a table's whole life, with
// the snapshots metadata table and time travel.
func TestRESTOAuth2TrinoLifecycle(t *testing.T) {
	if _, err := testbed.TrinoJava(); err != nil {
		t.Fatal(err)
	}
	p := startOAuthREST(t)
	if p.tls.TrustStore == "" {
		t.Fatal("no keytool to make the JVM's trust store")
	}
	tr, err := testbed.StartTrino(testbed.TrinoOptions{
		Catalogs: map[string]map[string]string{"iceberg": {
			"connector.name":                         "iceberg",
			"iceberg.catalog.type":                   "rest",
			"iceberg.rest-catalog.uri":               p.Base,
			"iceberg.rest-catalog.warehouse":         "catalog1",
			"iceberg.rest-catalog.security":          "OAUTH2",
			"iceberg.rest-catalog.oauth2.credential": "trino:" + testbed.KeycloakSecrets["trino"],
			"iceberg.rest-catalog.oauth2.server-uri": p.kc.TokenEndpoint("hms"),
			"iceberg.rest-catalog.oauth2.scope":      "catalog",
			"fs.hadoop.enabled":                      "true",
		}},
		JVM: []string{"-Djavax.net.ssl.trustStore=" + p.tls.TrustStore, "-Djavax.net.ssl.trustStorePassword=" + p.tls.TrustStorePassword,
			"-Djavax.net.ssl.trustStoreType=PKCS12"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Stop() })
	ns := e2eutil.Uniq("oatr")
	t.Cleanup(func() { _ = proxytest.Client(t, e2eutil.HMS1.URI).DropDatabase(e2eutil.Ctx(t), ns, true, true) })
	tbl := "iceberg." + ns + ".events"
	q := func(sql string) [][]any {
		t.Helper()
		c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		rows, err := tr.Query(c, "analyst", sql)
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	q("CREATE SCHEMA iceberg." + ns + " WITH (location = 'file://" + t.TempDir() + "')")
	q("CREATE TABLE " + tbl + " (id bigint, data varchar)")
	q("INSERT INTO " + tbl + " VALUES (1, 'a'), (2, 'b')")
	// Trino commits an empty snapshot when it creates a table: the insert's is the latest.
	first := q(`SELECT snapshot_id FROM iceberg.` + ns + `."events$snapshots" ORDER BY committed_at DESC LIMIT 1`)
	q("INSERT INTO " + tbl + " VALUES (3, 'c')")
	q("ALTER TABLE " + tbl + " ADD COLUMN note varchar")
	if got := jsonText(q("SELECT id, note FROM " + tbl + " ORDER BY id")); got != "[[1,null],[2,null],[3,null]]" {
		t.Errorf("rows after the schema change: %s", got)
	}
	if len(first) != 1 {
		t.Fatalf("snapshots after the first insert: %v", first)
	}
	if got := jsonText(q("SELECT id FROM " + tbl + " FOR VERSION AS OF " + jsonText(first[0][0]) + " ORDER BY id")); got != "[[1],[2]]" {
		t.Errorf("time travel to the first snapshot: %s", got)
	}
	q("ALTER TABLE " + tbl + " RENAME TO " + tbl + "2")
	if got := jsonText(q("SHOW TABLES FROM iceberg." + ns)); got != `[["events2"]]` {
		t.Errorf("tables after the rename: %s", got)
	}
	q("DROP TABLE " + tbl + "2")
	q("DROP SCHEMA iceberg." + ns)
	assertTokenUser(t, p, e2eutil.HMS1, ns, "service-account-trino")
}

// testClock is the proxy's clock for bearer tokens: the real time until a
// test sets one (the zero time gives the real time back).
type testClock struct{ at atomic.Int64 }

func (c *testClock) now() time.Time {
	if n := c.at.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Now()
}

func (c *testClock) set(t time.Time) {
	if t.IsZero() {
		c.at.Store(0)
		return
	}
	c.at.Store(t.UnixNano())
}

// Keycloak's tokens against the proxy's clock with
// rest-catalog.oauth2.clock-skew-seconds=30: a proxy whose clock is behind
// Keycloak's by more than the skew refuses the token as issued in the
// future (iat), by less accepts it; past exp the same 30 s hold. The clock
// is moved, nothing sleeps.
func TestRESTOAuth2KeycloakTokenTimes(t *testing.T) {
	var clock testClock
	p := startOAuthRESTWith(t, app.TestHooks{OAuth2Now: clock.now}, "rest-catalog.oauth2.clock-skew-seconds=30")
	tok := p.token(t, "hms", "rck")
	c := claimsOf(t, tok)
	iatF, ok1 := c["iat"].(float64)
	expF, ok2 := c["exp"].(float64)
	if !ok1 || !ok2 {
		t.Fatalf("Keycloak's token has no iat or exp: %v", c)
	}
	iat, exp := time.Unix(int64(iatF), 0), time.Unix(int64(expF), 0)
	for _, s := range []struct {
		name string
		at   time.Time
		want string // "" accepted
	}{
		{"the real clock", time.Time{}, ""},
		{"31 s behind Keycloak", iat.Add(-31 * time.Second), "in the future"},
		{"29 s behind Keycloak", iat.Add(-29 * time.Second), ""},
		{"29 s past exp", exp.Add(29 * time.Second), ""},
		{"31 s past exp", exp.Add(31 * time.Second), "expired at"},
	} {
		clock.set(s.at)
		a := p.DoAs(t, "GET", "/v1/catalog1/namespaces", "Bearer "+tok, nil)
		typ, msg := a.ErrorModel()
		switch {
		case s.want == "" && a.Status != 200:
			t.Errorf("%s: %d %v, want it accepted", s.name, a.Status, a.Body)
		case s.want != "" && (a.Status != 401 || typ != "NotAuthorizedException" || !strings.Contains(msg, s.want) ||
			!strings.Contains(msg, "rest-catalog.oauth2.clock-skew-seconds")):
			t.Errorf("%s: %d %s %q, want 401 naming %q", s.name, a.Status, typ, msg, s.want)
		}
	}
}
