package kerberos

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/security/sasl"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// SASL inside TLS, as Hive 3.1.3 runs them together (its server puts the
// SASL transport over its SSL server socket, its client wraps its SSL socket
// in SASL): the stock Java clients 3.1.3 and 4.1.0 with Kerberos and a trust
// store through the proxy's TLS listeners, to a Kerberized Hive 3.1.3
// metastore that also serves TLS. The proxy authenticates alice inside TLS,
// and reaches the metastore as its own principal inside TLS.
func TestKerberosInsideTLS(t *testing.T) {
	dir := t.TempDir()
	ks, err := testbed.NewMetastoreKeyStore(dir, "localhost", "ip:127.0.0.1,dns:localhost")
	if err != nil {
		t.Fatal(err)
	}
	ms := testbed.StartMetastoreWithT(t, testbed.Hive313, testbed.MetastoreOptions{TLS: ks,
		Kerberos: &testbed.MetastoreKerberos{KDC: kdc, Principal: hiveP, Keytab: hiveKT, Protection: "integrity",
			Conf: []string{"hadoop.proxyuser.hmsproxy.hosts=*", "hadoop.proxyuser.hmsproxy.groups=*"}}})
	backendTrust := filepath.Join(dir, "metastore-trust.p12")
	if err := testbed.KeytoolTrustStore(backendTrust, ks.CertPEM, "PKCS12", "changeit"); err != nil {
		t.Fatal(err)
	}
	files, err := testbed.NewTLSFiles(t.TempDir(), "hms-proxy")
	if err != nil {
		t.Fatal(err)
	}
	cert, key := files.CertFile, files.KeyFile
	clientTrust := filepath.Join(dir, "proxy-trust.jks")
	if err := testbed.KeytoolTrustStore(clientTrust, files.CAFile, "JKS", "changeit"); err != nil {
		t.Fatal(err)
	}
	p := proxytest.Start(t, federation(t,
		"server.tls.enabled=true", "server.tls.certificate-file="+cert, "server.tls.key-file="+key,
		"catalog.catalog2.conf.hive.metastore.uris="+ms.URI,
		"catalog.catalog2.conf.hive.metastore.use.SSL=true",
		"catalog.catalog2.conf.hive.metastore.truststore.path="+backendTrust,
		"catalog.catalog2.conf.hive.metastore.truststore.password=changeit"))
	tls := testbed.ClientTLS{TrustStore: clientTrust, Password: "changeit", Type: "JKS"}
	for _, v := range []testbed.Version{testbed.Hive313, testbed.Hive410} {
		listener := "primary"
		if v == testbed.Hive410 {
			listener = "hive4"
		}
		local, remote := uniq("kt"+strings.ReplaceAll(string(v), ".", "")), uniq("ktr")
		args := append([]string{"--db", local, "--db", "catalog2__" + remote}, javaClient(v, "alice", aliceKT, "privacy").Args()...)
		if steps := testbed.RunScenarioT(t, v, p.URI(listener), "ddl", append(args, tls.Args()...)...); len(steps) < 10 {
			t.Fatalf("Hive %s: only %d steps ran", v, len(steps))
		}
		if got := auditUsers(t, ms, remote); len(got) == 0 || got[0] != proxyP {
			t.Fatalf("the TLS metastore's audit for %s shows ugi=%v, want the proxy's principal %s", remote, got, proxyP)
		}
	}
	if n := p.Metric(t, sasl.MetricHandshakeDurationSecs, "mechanism", "GSSAPI"); n < 2 {
		t.Fatalf("%v GSSAPI handshakes inside TLS timed, want at least 2", n)
	}
}
