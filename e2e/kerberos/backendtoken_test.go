package kerberos

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/router"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Backend delegation tokens of impersonation pools, on a Kerberized Hive 3.1.3 whose tokens live 4 s between
// renewals and 12 s at most, and which trusts the proxy as a proxy user for alice only:
//   - alice's pool outlives many renew intervals and two max lifetimes, opening a new backend session for nearly
//     every call, and no call fails: the proxy renews the token on the metastore and obtains a fresh one before the
//     max date (the metastore's own audit shows the renewals and the fresh tokens);
//   - bob, whom the metastore does not let the proxy impersonate, gets a MetaException naming the catalog and bob.
func TestBackendTokensRenewedAndProxyUserRefusal(t *testing.T) {
	const renew, maxLife = 4 * time.Second, 12 * time.Second
	krb3, err := testbed.StartMetastoreWith(testbed.Hive313, testbed.MetastoreOptions{Kerberos: &testbed.MetastoreKerberos{
		KDC: kdc, Principal: hiveP, Keytab: hiveKT, Protection: "authentication", Conf: []string{
			"hadoop.proxyuser.hmsproxy.hosts=*", "hadoop.proxyuser.hmsproxy.users=alice",
			"hive.cluster.delegation.token.renew-interval=" + strconv.FormatInt(renew.Milliseconds(), 10) + "ms", // the unit is days without a suffix
			"hive.cluster.delegation.token.max-lifetime=" + strconv.FormatInt(maxLife.Milliseconds(), 10) + "ms",
		}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = krb3.Stop() })
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(krb3.Dir, "metastore.log"))
			var keep []string
			for _, line := range strings.Split(string(b), "\n") {
				if strings.Contains(strings.ToLower(line), "token") {
					keep = append(keep, line)
				}
			}
			t.Logf("the metastore's token lines:\n%s", strings.Join(keep[max(0, len(keep)-60):], "\n"))
		}
	})
	p := proxytest.Start(t, federation(t,
		"catalogs=catalog1", "catalog.catalog2.conf.hive.metastore.uris=", "catalog.catalog2.conf.hive.metastore.sasl.enabled=",
		"catalog.catalog2.conf.hive.metastore.kerberos.principal=", "catalog.catalog2.conf.hadoop.rpc.protection=",
		"catalog.catalog1.conf.hive.metastore.uris="+krb3.URI,
		"catalog.catalog1.conf.hadoop.rpc.protection=authentication",
		"security.impersonation-enabled=true",
		// a session idle for 1 s is closed: nearly every call below opens a new one, with the token as it is then
		"catalog.catalog1.impersonation-session-idle-ttl-ms=1000",
	))
	alice := kerberosClient(t, login(t, kdc.Principal("alice"), aliceKT, kdc.Krb5Conf), "hmsproxy/_HOST@"+kdc.Realm, p.URI("primary"))
	db := uniq("renewdb")
	if err := alice.CreateDatabase(ctx(t), &thriftgen.Database{Name: db}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	calls := 0
	for time.Since(start) < maxLife*2+renew { // past two max lifetimes, seven renew intervals
		time.Sleep(1500 * time.Millisecond)
		if _, err := alice.GetDatabase(ctx(t), db); err != nil {
			t.Fatalf("alice's call after %v (renew interval %v, max lifetime %v): %v", time.Since(start).Round(time.Millisecond), renew, maxLife, err)
		}
		calls++
	}
	if idle := p.Metric(t, router.MetricImpersonationEvictions, "reason", router.EvictIdle); idle < float64(calls/2) {
		t.Fatalf("only %v sessions closed idle over %d calls: the calls did not open new sessions, the test proves nothing", idle, calls)
	}
	if got := auditUsers(t, krb3, db); len(got) < calls || got[len(got)-1] != "alice" {
		t.Fatalf("the metastore's audit of %s: %v, want alice's %d calls", db, got, calls)
	}
	renewals, issued := auditCount(t, krb3, "cmd=renew_delegation_token"), auditCount(t, krb3, "cmd=get_delegation_token")
	if renewals < 5 || issued < 3 {
		t.Fatalf("the metastore saw %d renewals and %d tokens issued over %v, want at least 5 and 3", renewals, issued, time.Since(start))
	}
	if err := alice.DropDatabase(ctx(t), db, true, true); err != nil {
		t.Fatal(err)
	}

	bob := kerberosClient(t, login(t, kdc.Principal("bob"), bobKT, kdc.Krb5Conf), "hmsproxy/_HOST@"+kdc.Realm, p.URI("primary"))
	_, err = bob.GetAllDatabases(ctx(t))
	var me *thriftgen.MetaException
	if !errors.As(err, &me) {
		t.Fatalf("bob, not a proxy user's allowed user on the metastore: %T %v, want a MetaException", err, err)
	}
	for _, want := range []string{"catalog1", "bob"} {
		if !strings.Contains(me.Message, want) {
			t.Fatalf("bob's refusal %q does not name %s", me.Message, want)
		}
	}
	t.Logf("bob's refusal: %s", me.Message)
}

func auditCount(t *testing.T, m *testbed.Metastore, needle string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(m.Dir, "metastore.log"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "audit") && strings.Contains(line, needle) {
			n++
		}
	}
	return n
}
