package kerberos

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/router"
	"github.com/hms-proxy/hms-proxy/security/digestmd5"
	"github.com/hms-proxy/hms-proxy/security/sasl"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// With impersonation on, the backends see the end user: the Kerberized ones through a backend delegation token
// the proxy (a Hadoop proxy user there) obtains for the caller and a DIGEST-MD5 session on it, the plain one
// through set_ugi at session start. A service principal keeps the proxy's own identity.
func TestImpersonationShowsTheEndUser(t *testing.T) {
	p := proxytest.Start(t, federation(t,
		"security.impersonation-enabled=true",
		"security.service-principals=hs2/localhost@"+kdc.Realm,
		"catalogs=catalog1,catalog2,catalog3",
		"catalog.catalog3.conf.hive.metastore.uris="+plain.URI,
	))
	local, remote, third := uniq("imp"), uniq("impr"), uniq("impp")
	args := append([]string{"--db", local, "--db", "catalog2__" + remote, "--db", "catalog3__" + third},
		javaClient(testbed.Hive313, "alice", aliceKT, "privacy").Args()...)
	testbed.RunScenarioT(t, testbed.Hive313, p.URI("primary"), "ddl", args...)
	for _, c := range []struct {
		ms *testbed.Metastore
		db string
	}{{krb1, local}, {krb2, remote}, {plain, third}} {
		got := auditUsers(t, c.ms, c.db)
		if len(got) == 0 {
			t.Fatalf("no audit line of %s in %s", c.db, c.ms.Dir)
		}
		for _, u := range got {
			if u != "alice" {
				t.Fatalf("the metastore audit of %s shows ugi=%v, want alice throughout", c.db, got)
			}
		}
	}
	// a call of bob's reaches the backend as bob (Hive 3.1.3 records no owner of its own for a database created
	// without one: the owner field is whatever the client sent)
	bobDB := uniq("bobdb")
	bob := kerberosClient(t, login(t, kdc.Principal("bob"), bobKT, kdc.Krb5Conf), "hmsproxy/_HOST@"+kdc.Realm, p.URI("primary"))
	if err := bob.CreateDatabase(ctx(t), &thriftgen.Database{Name: bobDB}); err != nil {
		t.Fatal(err)
	}
	admin := backendAdmin(t, krb1)
	t.Cleanup(func() { _ = admin.DropDatabase(ctx(t), bobDB, true, true) })
	if _, err := admin.GetDatabase(ctx(t), bobDB); err != nil {
		t.Fatal(err)
	}
	if got := auditUsers(t, krb1, bobDB); len(got) == 0 || got[0] != "bob" {
		t.Fatalf("bob's create_database reached the backend as %v, want bob", got)
	}
	// a service principal bypasses impersonation: the backend sees the proxy
	svcDB := uniq("svcdb")
	hs2 := kerberosClient(t, login(t, kdc.Principal("hs2/localhost"), hs2KT, kdc.Krb5Conf), "hmsproxy/_HOST@"+kdc.Realm, p.URI("primary"))
	if err := hs2.CreateDatabase(ctx(t), &thriftgen.Database{Name: svcDB}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.DropDatabase(ctx(t), svcDB, true, true) })
	if got := auditUsers(t, krb1, svcDB); len(got) == 0 || got[0] != proxyP {
		t.Fatalf("the service principal's call reached the backend as %v, want the proxy's %s", got, proxyP)
	}
	users, ok := p.Router.ImpersonationUsers("catalog1")
	if !ok || len(users) != 2 {
		t.Fatalf("catalog1 impersonation pools: %v (want alice and bob)", users)
	}
	if n := p.Metric(t, router.MetricImpersonationUsers); n < 4 { // alice on three catalogs, bob on catalog1 at least
		t.Fatalf("%s = %v, want at least 4", router.MetricImpersonationUsers, n)
	}
}

// Bounded pools: 1,000 distinct users (each authenticated with a delegation token the proxy issued for it) call a
// plain metastore through an impersonating catalog, one after the other. At no time do more than
// impersonation-max-clients users hold a pool, no user holds more than impersonation-pool-max-size sessions even
// with parallel calls, and idle sessions and idle users are closed on time.
func TestImpersonationPoolsAreBounded(t *testing.T) {
	const maxClients, poolSize = 20, 2
	p := proxytest.Start(t, map[string]string{
		"security.mode":             "KERBEROS",
		"security.server-principal": "hmsproxy/_HOST@" + kdc.Realm,
		"security.keytab":           proxyKT,
		"security.front-door-conf.hadoop.proxyuser.hs2.hosts": "*",
		"security.front-door-conf.hadoop.proxyuser.hs2.users": "*",
		"security.impersonation-enabled":                      "true",
		"catalogs":                                            "catalog1",
		"routing.default-catalog":                             "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris":           plain.URI,
		"catalog.catalog1.impersonation-max-clients":          fmt.Sprint(maxClients),
		"catalog.catalog1.impersonation-pool-max-size":        fmt.Sprint(poolSize),
		"catalog.catalog1.impersonation-session-idle-ttl-ms":  "1000",
		"catalog.catalog1.impersonation-client-idle-ttl-ms":   "4000",
	})
	addr := strings.TrimPrefix(p.URI("primary"), "thrift://")
	hs2 := kerberosClient(t, login(t, kdc.Principal("hs2/localhost"), hs2KT, kdc.Krb5Conf), "hmsproxy/_HOST@"+kdc.Realm, p.URI("primary"))
	const users = 1000
	deadline := time.Now().Add(4 * time.Minute)
	for i := 0; i < users; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("only %d users within the time bound", i)
		}
		user := fmt.Sprintf("user%04d", i)
		tok, err := hs2.GetDelegationToken(ctx(t), user, "hs2")
		if err != nil {
			t.Fatalf("token for %s: %v", user, err)
		}
		c := digestClient(t, tok, addr)
		if _, err := c.GetAllDatabases(ctx(t)); err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		if got, _ := p.Router.ImpersonationUsers("catalog1"); len(got) > maxClients {
			t.Fatalf("after %s, %d users hold pools, more than impersonation-max-clients=%d", user, len(got), maxClients)
		}
	}
	// Every user beyond the last maxClients left: pushed out by the capacity, or (on a slow machine, where a
	// round takes longer than impersonation-client-idle-ttl-ms) closed as idle first. The evictions metric
	// counts sessions: a user whose one session was already closed as idle (impersonation-session-idle-ttl-ms)
	// leaves with none, so each user who left shows in exactly one of the three reasons. A pool pushed out is
	// closed, and counted, in the background: wait for the count, bounded.
	var capacity, userIdle, sessionIdle float64
	for wait := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		capacity = p.Metric(t, router.MetricImpersonationEvictions, "reason", router.EvictUserCapacity)
		userIdle = p.Metric(t, router.MetricImpersonationEvictions, "reason", router.EvictUserEvicted)
		sessionIdle = p.Metric(t, router.MetricImpersonationEvictions, "reason", router.EvictIdle)
		if capacity+userIdle+sessionIdle >= users-maxClients || time.Now().After(wait) {
			break
		}
	}
	// (That users were pushed out for capacity is what the bound checked in the loop shows.)
	if capacity+userIdle+sessionIdle < users-maxClients {
		t.Fatalf("sessions evicted: %v for capacity, %v with their idle user, %v idle on their own; want at least %d together, one per user who left",
			capacity, userIdle, sessionIdle, users-maxClients)
	}
	// parallel calls of one user share at most poolSize sessions
	tok, err := hs2.GetDelegationToken(ctx(t), "parallel", "hs2")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := 0; i < 6; i++ {
		c := digestClient(t, tok, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if _, err := c.GetAllDatabases(ctx(t)); err != nil {
					errs <- err
					return
				}
				if n, _ := p.Router.ImpersonationSessions("catalog1", "parallel"); n > poolSize {
					errs <- fmt.Errorf("user parallel holds %d sessions, more than impersonation-pool-max-size=%d", n, poolSize)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n, _ := p.Router.ImpersonationSessions("catalog1", "parallel"); n < 1 || n > poolSize {
		t.Fatalf("user parallel holds %d sessions after its calls", n)
	}
	// idle sessions close after impersonation-session-idle-ttl-ms, idle users after ...client-idle-ttl-ms
	idleBefore := p.Metric(t, router.MetricImpersonationEvictions, "reason", router.EvictIdle)
	waitFor(t, 10*time.Second, func() bool {
		n, ok := p.Router.ImpersonationSessions("catalog1", "parallel")
		return ok && n == 0
	}, "the idle sessions of user parallel were not closed")
	if p.Metric(t, router.MetricImpersonationEvictions, "reason", router.EvictIdle) <= idleBefore {
		t.Fatal("idle session closes were not counted")
	}
	waitFor(t, 15*time.Second, func() bool {
		got, _ := p.Router.ImpersonationUsers("catalog1")
		return len(got) == 0
	}, "idle users kept their pools past impersonation-client-idle-ttl-ms")
	if n := p.Metric(t, router.MetricImpersonationUsers); n != 0 {
		t.Fatalf("%s = %v with no pools left", router.MetricImpersonationUsers, n)
	}
	if n := p.Metric(t, router.MetricImpersonationSessions); n != 0 {
		t.Fatalf("%s = %v with no pools left", router.MetricImpersonationSessions, n)
	}
}

func waitFor(t *testing.T, within time.Duration, ok func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if ok() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal(msg)
}

// digestClient is a typed HMS client authenticated with a delegation token (SASL DIGEST-MD5), closed at test end.
func digestClient(t *testing.T, token, addr string) *thriftgen.Client {
	t.Helper()
	o, err := digestmd5.TokenClientOptions(token, sasl.QOPAuth)
	if err != nil {
		t.Fatal(err)
	}
	mech, err := digestmd5.NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = raw.SetDeadline(time.Now().Add(30 * time.Second))
	c, err := sasl.Client(raw, mech)
	if err != nil {
		raw.Close()
		t.Fatalf("DIGEST-MD5 handshake: %v", err)
	}
	_ = raw.SetDeadline(time.Time{})
	return typedOver(t, c)
}

// A Kerberized Hive 4.1.0 metastore behind the Kerberized proxy: the Hive 4.1.0 and 3.1.3 clients run the DDL
// scenario through it, impersonated (backend token + DIGEST-MD5 on Hive 4 as well).
func TestKerberizedHive410Backend(t *testing.T) {
	ms := testbed.StartMetastoreWithT(t, testbed.Hive410, testbed.MetastoreOptions{Kerberos: &testbed.MetastoreKerberos{
		KDC: kdc, Principal: hiveP, Keytab: hiveKT, Protection: "privacy",
		Conf: []string{"hadoop.proxyuser.hmsproxy.hosts=*", "hadoop.proxyuser.hmsproxy.groups=*"}}})
	p := proxytest.Start(t, federation(t,
		"security.impersonation-enabled=true",
		"catalogs=catalog1",
		"catalog.catalog1.conf.hive.metastore.uris="+ms.URI,
		"catalog.catalog1.runtime-profile=APACHE_4_1_0",
		"catalog.catalog2.conf.hive.metastore.uris=",
		"catalog.catalog2.conf.hive.metastore.sasl.enabled=",
		"catalog.catalog2.conf.hive.metastore.kerberos.principal=",
		"catalog.catalog2.conf.hadoop.rpc.protection=",
	))
	for _, v := range []testbed.Version{testbed.Hive410, testbed.Hive313} {
		listener := "primary"
		if v == testbed.Hive410 {
			listener = "hive4"
		}
		db := uniq("k4" + strings.ReplaceAll(string(v), ".", ""))
		testbed.RunScenarioT(t, v, p.URI(listener), "ddl", append([]string{"--db", db}, javaClient(v, "alice", aliceKT, "privacy").Args()...)...)
		got := auditUsers(t, ms, db)
		if len(got) == 0 {
			t.Fatalf("no audit line of %s in the Hive 4.1.0 metastore's log", db)
		}
		for _, u := range got {
			if u != "alice" {
				t.Fatalf("Hive 4.1.0 audit of %s shows ugi=%v, want alice throughout", db, got)
			}
		}
	}
}
