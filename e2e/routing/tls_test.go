package routing

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Issue 22, TLS on the Thrift side: the stock Java clients with a trust
// store through TLS listeners, and the proxy to a real Hive 3.1.3 metastore
// started with hive.metastore.use.SSL=true and a keystore made by keytool.

// tlsListenerProps turns TLS on for every listener (the additional ones
// inherit server.tls.*) with a certificate of a fresh CA for 127.0.0.1.
func tlsListenerProps(t *testing.T, p map[string]string) (*testbed.TLSFiles, string) {
	t.Helper()
	dir := t.TempDir()
	files, err := testbed.NewTLSFiles(dir, "hms-proxy")
	if err != nil {
		t.Fatal(err)
	}
	p["server.tls.enabled"], p["server.tls.certificate-file"], p["server.tls.key-file"] = "true", files.CertFile, files.KeyFile
	return files, dir
}

// The stock HiveMetaStoreClient 3.1.3 (JKS trust store) and 4.1.0 (PKCS#12
// trust store, on the APACHE_4_1_0 listener) run the federated DDL scenario
// through TLS listeners; a client without TLS is told to use it; a client
// that trusts another certificate fails its handshake.
func TestTLSFrontDoorWithTheJavaClients(t *testing.T) {
	e2eutil.NeedHive(t)
	props := e2eutil.WithHive4Frontend(t, e2eutil.TwoCatalogs())
	files, dir := tlsListenerProps(t, props)
	p := proxytest.Start(t, props)
	jks, p12 := filepath.Join(dir, "truststore.jks"), files.TrustStore // (NewTLSFiles writes the PKCS#12 one with keytool)
	if err := testbed.KeytoolTrustStore(jks, files.CAFile, "JKS", "changeit"); err != nil {
		t.Fatal(err)
	}
	if p12 == "" || files.TrustStorePassword != "changeit" {
		t.Fatalf("no PKCS#12 trust store from keytool: %+v", files)
	}
	for _, c := range []struct {
		v        testbed.Version
		listener string
		tls      testbed.ClientTLS
	}{
		{testbed.Hive313, "primary", testbed.ClientTLS{TrustStore: jks, Password: "changeit", Type: "JKS"}},
		{testbed.Hive410, "hive4", testbed.ClientTLS{TrustStore: p12, Password: "changeit", Type: "PKCS12"}},
	} {
		db := e2eutil.Uniq("tls" + strings.ReplaceAll(string(c.v), ".", ""))
		args := append([]string{"--db", db, "--db", "catalog2__" + db + "r"}, c.tls.Args()...)
		if steps := testbed.RunScenarioT(t, c.v, p.URI(c.listener), "ddl", args...); len(steps) < 10 {
			t.Fatalf("Hive %s over TLS: only %d steps ran", c.v, len(steps))
		}
	}
	if n := p.Metric(t, "hms_proxy_frontend_connections"); n < 0 {
		t.Fatal("no connection gauge")
	}
	// A client without TLS: its calls are answered with the reason.
	steps, err := testbed.RunScenario(testbed.Hive313, p.URI("primary"), "version")
	if err == nil || !stepsSay(steps, "speaks TLS (server.tls.enabled=true)") {
		t.Fatalf("a plain Java client on the TLS listener: %v\n%v", err, steps)
	}
	// A client trusting another CA: its handshake fails (Hive's client logs
	// the PKIX error and its calls fail on the closed connection); the
	// proxy logs and counts the refused handshake.
	other, err := testbed.NewTLSFiles(t.TempDir(), "other")
	if err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(dir, "wrong.jks")
	if err := testbed.KeytoolTrustStore(wrong, other.CAFile, "JKS", "changeit"); err != nil {
		t.Fatal(err)
	}
	steps, err = testbed.RunScenario(testbed.Hive313, p.URI("primary"), "ddl",
		append([]string{"--db", e2eutil.Uniq("tlsno")}, testbed.ClientTLS{TrustStore: wrong, Password: "changeit", Type: "JKS"}.Args()...)...)
	if err == nil {
		t.Fatalf("a Java client trusting another CA got through: %v", steps)
	}
	p.AwaitMetric(t, 1, "hms_proxy_bad_frames_total", "frontend", "primary", "reason", "plaintext_on_tls")
	if n := p.Metric(t, "hms_proxy_bad_frames_total", "frontend", "primary", "reason", "tls_handshake"); n < 1 {
		t.Fatalf("the refused handshakes were not counted: %v", n)
	}
	if lines := p.LogLines("TLS handshake failed", "certificate"); len(lines) == 0 {
		t.Fatal("the proxy did not log the handshake the client refused for its certificate")
	}
}

func stepsSay(steps []testbed.Step, text string) bool {
	for _, s := range steps {
		if strings.Contains(s.Error, text) || strings.Contains(s.Detail, text) {
			return true
		}
	}
	return false
}

// The proxy to a real Hive 3.1.3 metastore serving TLS (its keystore made
// by keytool): with the metastore's certificate in a keytool-made JKS trust
// store, calls go through and land on the metastore; trusting another
// certificate, every call is refused with a MetaException saying the
// certificate is not trusted, naming the catalog; without TLS, the call
// fails instead of talking plain Thrift to it.
func TestTLSToARealHive313Backend(t *testing.T) {
	e2eutil.NeedHive(t)
	dir := t.TempDir()
	ks, err := testbed.NewMetastoreKeyStore(dir, "localhost", "ip:127.0.0.1,dns:localhost")
	if err != nil {
		t.Fatal(err)
	}
	ms := testbed.StartMetastoreWithT(t, testbed.Hive313, testbed.MetastoreOptions{TLS: ks})
	trust := filepath.Join(dir, "truststore.jks")
	if err := testbed.KeytoolTrustStore(trust, ks.CertPEM, "JKS", "changeit"); err != nil {
		t.Fatal(err)
	}
	backend := func(extra ...string) map[string]string {
		p := e2eutil.TwoCatalogs(append([]string{"catalog.catalog2.conf.hive.metastore.uris=" + ms.URI,
			"catalog.catalog2.conf.hive.metastore.connect.retries=1"}, extra...)...)
		return p
	}
	p := proxytest.Start(t, backend("catalog.catalog2.conf.hive.metastore.use.SSL=true",
		"catalog.catalog2.conf.hive.metastore.truststore.path="+trust,
		"catalog.catalog2.conf.metastore.truststore.password=changeit"))
	c := proxytest.Client(t, p.URI("primary"))
	db := e2eutil.Uniq("tlsb")
	if err := c.CreateDatabase(e2eutil.Ctx(t), &thriftgen.Database{Name: "catalog2__" + db, Description: "over TLS"}); err != nil {
		t.Fatalf("create_database through the proxy to the TLS metastore: %v", err)
	}
	e2eutil.MkTable(t, c, "catalog2__"+db, "t1")
	// read directly from the metastore, over TLS, trusting its certificate
	pemBytes, err := os.ReadFile(ks.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pemBytes)
	direct, err := proxytest.TLSClient(t, ms.URI, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := direct.GetTable(e2eutil.Ctx(t), db, "t1"); err != nil || got.TableName != "t1" {
		t.Fatalf("the metastore does not hold %s.t1: %v %v", db, got, err)
	}
	t.Cleanup(func() { _ = direct.DropDatabase(e2eutil.Ctx(t), db, true, true) })
	// trusting another certificate
	other, err := testbed.NewTLSFiles(t.TempDir(), "other")
	if err != nil {
		t.Fatal(err)
	}
	wrong := proxytest.Start(t, backend("catalog.catalog2.conf.hive.metastore.use.SSL=true",
		"catalog.catalog2.conf.hive.metastore.truststore.path="+other.CAFile))
	_, err = proxytest.Client(t, wrong.URI("primary")).GetDatabase(e2eutil.Ctx(t), "catalog2__"+db)
	e2eutil.MetaErr(t, err, "catalog2", "not signed by any certificate of the trust store")
	// plain Thrift to the TLS metastore: refused by it, and the call fails
	plain := proxytest.Start(t, backend())
	if _, err := proxytest.Client(t, plain.URI("primary")).GetDatabase(e2eutil.Ctx(t), "catalog2__"+db); err == nil {
		t.Fatal("plain Thrift to a TLS metastore answered")
	}
}
