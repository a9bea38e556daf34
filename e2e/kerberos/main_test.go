// Package kerberos tests the proxy's security boundary end to end: a real MIT
// KDC, Kerberized real Hive 3.1.3 metastores that trust the proxy as a Hadoop
// proxy user, a plain one, and the real Java HiveMetaStoreClient 3.1.3 and
// 4.1.0 with hive.metastore.sasl.enabled=true talking to an in-process proxy
// with security.mode=KERBEROS.
package kerberos

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/security/gssapi"
	"github.com/hms-proxy/hms-proxy/security/sasl"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// The realm and what lives in it.
var (
	kdc *testbed.KDC
	// proxyP is the proxy's own principal (front door and backends): hmsproxy/localhost, since the proxy listens
	// on 127.0.0.1, which resolves back to localhost.
	proxyP, proxyKT string
	// hiveP is the metastores' principal.
	hiveP, hiveKT string
	// users: alice and bob; hs2 is a service principal (HiveServer2-like) that asks tokens for others.
	aliceKT, bobKT, hs2KT string

	krb1, krb2 *testbed.Metastore // Kerberized Hive 3.1.3: privacy, integrity
	plain      *testbed.Metastore // plain Hive 3.1.3 (set_ugi impersonation)
)

func TestMain(m *testing.M) {
	if os.Getenv("HMS_PROXY_SKIP_REAL_HIVE") == "1" {
		fmt.Println("kerberos e2e: HMS_PROXY_SKIP_REAL_HIVE=1, skipped")
		os.Exit(0)
	}
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kerberos e2e:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	if err := testbed.Prepare(); err != nil {
		return 1, fmt.Errorf("test bed not ready: %w", err)
	}
	var err error
	if kdc, err = testbed.StartKDC(testbed.KDCOptions{}); err != nil {
		return 1, err
	}
	defer func() {
		kdc.Stop()
		_ = os.RemoveAll(kdc.Dir)
	}()
	// the proxy's Go side reads $KRB5_CONFIG (as MIT tools do)
	os.Setenv("KRB5_CONFIG", kdc.Krb5Conf)
	proxyP, hiveP = kdc.Principal("hmsproxy/localhost"), kdc.Principal("hive/localhost")
	for _, kt := range []struct {
		dst  *string
		file string
		name string
	}{{&proxyKT, "proxy.keytab", "hmsproxy/localhost"}, {&hiveKT, "hive.keytab", "hive/localhost"},
		{&aliceKT, "alice.keytab", "alice"}, {&bobKT, "bob.keytab", "bob"}, {&hs2KT, "hs2.keytab", "hs2/localhost"}} {
		if *kt.dst, err = kdc.PrincipalKeytab(kt.file, kt.name); err != nil {
			return 1, err
		}
	}
	// the proxy may act for anyone from anywhere on both Kerberized metastores (Hadoop proxy user)
	trust := []string{"hadoop.proxyuser.hmsproxy.hosts=*", "hadoop.proxyuser.hmsproxy.groups=*"}
	var wg sync.WaitGroup
	var errs [3]error
	start := func(i int, dst **testbed.Metastore, o testbed.MetastoreOptions) {
		defer wg.Done()
		*dst, errs[i] = testbed.StartMetastoreWith(testbed.Hive313, o)
	}
	// Two metastores started at the same moment were seen listening on the same port (both bound it: the test
	// bed's free-port pick races), so the Kerberized pair starts one after the other, the plain one alongside.
	wg.Add(2)
	go start(2, &plain, testbed.MetastoreOptions{})
	go func() {
		defer wg.Done()
		krb1, errs[0] = testbed.StartMetastoreWith(testbed.Hive313, testbed.MetastoreOptions{Kerberos: &testbed.MetastoreKerberos{
			KDC: kdc, Principal: hiveP, Keytab: hiveKT, Protection: "privacy", Conf: trust}})
		if errs[0] == nil {
			krb2, errs[1] = testbed.StartMetastoreWith(testbed.Hive313, testbed.MetastoreOptions{Kerberos: &testbed.MetastoreKerberos{
				KDC: kdc, Principal: hiveP, Keytab: hiveKT, Protection: "integrity", Conf: trust}})
		}
	}()
	wg.Wait()
	defer func() {
		for _, ms := range []*testbed.Metastore{krb1, krb2, plain} {
			if ms != nil {
				_ = ms.Stop()
			}
		}
	}()
	for _, e := range errs {
		if e != nil {
			return 1, e
		}
	}
	code := m.Run()
	fmt.Println("kerberos e2e: launched", testbed.LaunchSummary())
	return code, nil
}

// federation is the proxy of these tests: catalog1 (default) and catalog2 on the Kerberized metastores, the proxy
// Kerberized with every QOP offered on its primary listener (Hive 3.1.3 clients) and the hive4 listener (Hive 4.1
// clients). extra are key=value overrides ("key=" removes a key).
func federation(t *testing.T, extra ...string) map[string]string {
	p := map[string]string{
		"additional-frontends":                           "hive4",
		"additional-frontends.hive4.port":                strconv.Itoa(proxytest.FreePort(t)),
		"additional-frontends.hive4.bind-host":           "127.0.0.1",
		"additional-frontends.hive4.frontend-profile":    "APACHE_4_1_0",
		"security.mode":                                  "KERBEROS",
		"security.server-principal":                      "hmsproxy/_HOST@" + kdc.Realm,
		"security.keytab":                                proxyKT,
		"security.front-door-conf.hadoop.rpc.protection": "privacy,integrity,authentication",
		"catalogs":                "catalog1,catalog2",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris":               krb1.URI,
		"catalog.catalog1.conf.hive.metastore.sasl.enabled":       "true",
		"catalog.catalog1.conf.hive.metastore.kerberos.principal": "hive/_HOST@" + kdc.Realm,
		"catalog.catalog1.conf.hadoop.rpc.protection":             "privacy",
		"catalog.catalog2.conf.hive.metastore.uris":               krb2.URI,
		"catalog.catalog2.conf.hive.metastore.sasl.enabled":       "true",
		"catalog.catalog2.conf.hive.metastore.kerberos.principal": "hive/_HOST@" + kdc.Realm,
		"catalog.catalog2.conf.hadoop.rpc.protection":             "integrity",
	}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		if v == "" {
			delete(p, k)
			continue
		}
		p[k] = v
	}
	return p
}

// javaClient is the Java driver's Kerberos login as user, asking for the proxy's principal as a client of that
// version does (Hive 4.1.0 does not canonicalize _HOST, so it gets the name written out).
func javaClient(v testbed.Version, user, keytab, protection string) testbed.KerberosClient {
	spn := "hmsproxy/_HOST@" + kdc.Realm
	if v == testbed.Hive410 {
		spn = proxyP
	}
	return testbed.KerberosClient{KDC: kdc, Principal: kdc.Principal(user), Keytab: keytab, ServerPrincipal: spn, Protection: protection}
}

func uniq(prefix string) string {
	return fmt.Sprintf("%s_%x", prefix, time.Now().UnixNano()&0xffffffff)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// login logs a principal in from a keytab with the Go Kerberos client.
func login(t *testing.T, principal, keytabPath, krb5conf string) *gssapi.Login {
	t.Helper()
	kt, err := gssapi.LoadKeytab(keytabPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := gssapi.LoadConfig(krb5conf)
	if err != nil {
		t.Fatal(err)
	}
	l, err := gssapi.NewLogin(gssapi.LoginOptions{Principal: principal, Keytab: kt, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// saslDial opens a Kerberized connection as l to spn at addr ("host:port"), negotiating one of qops.
func saslDial(t *testing.T, l *gssapi.Login, spn string, qops []sasl.QOP, addr string) (net.Conn, error) {
	t.Helper()
	in, err := gssapi.NewInitiator(gssapi.InitiatorOptions{Login: l, Principal: spn, QOPs: qops})
	if err != nil {
		t.Fatal(err)
	}
	c, err := in.Dial(&net.Dialer{Timeout: 10 * time.Second})(ctx(t), "tcp", addr)
	return c, err
}

// kerberosClient is a typed HMS client over a Kerberized connection (closed at test end).
func kerberosClient(t *testing.T, l *gssapi.Login, spn string, uri string) *thriftgen.Client {
	t.Helper()
	c, err := saslDial(t, l, spn, []sasl.QOP{sasl.QOPAuthConf, sasl.QOPAuthInt, sasl.QOPAuth}, strings.TrimPrefix(uri, "thrift://"))
	if err != nil {
		t.Fatalf("Kerberos connection to %s as %s: %v", uri, l.Principal(), err)
	}
	return typedOver(t, c)
}

func typedOver(t *testing.T, c net.Conn) *thriftgen.Client {
	cfg := &thrift.TConfiguration{SocketTimeout: 120 * time.Second}
	trans := thrift.NewTBufferedTransport(thrift.NewTSocketFromConnConf(c, cfg), 64<<10)
	t.Cleanup(func() { trans.Close() })
	proto := thrift.NewTBinaryProtocolConf(trans, cfg)
	return thriftgen.NewClient(thrift.NewTStandardClient(proto, proto))
}

// backendAdmin is a Kerberos client straight to a Kerberized metastore, as the metastore's own principal.
func backendAdmin(t *testing.T, ms *testbed.Metastore) *thriftgen.Client {
	t.Helper()
	return kerberosClient(t, login(t, hiveP, hiveKT, kdc.Krb5Conf), "hive/_HOST@"+kdc.Realm, ms.URI)
}

// auditUsers returns the metastore audit log's ugi= values for commands naming needle, in order.
func auditUsers(t *testing.T, ms *testbed.Metastore, needle string) []string {
	t.Helper()
	users, err := ms.AuditUsers(needle)
	if err != nil {
		t.Fatal(err)
	}
	return users
}
