package kerberos

import (
	"os"
	"os/user"
	"slices"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// setUGIClient is the real Java HiveMetaStoreClient 3.1.3 with a simple (non-Kerberos) Hadoop login as user: it
// sends set_ugi(user, groups) when it opens a connection (hive.metastore.execute.setugi, on by default; set here
// so the test does not rest on the default).
func setUGIClient(t *testing.T, uri, user, db string) {
	t.Helper()
	// UserGroupInformation's simple login takes HADOOP_USER_NAME from the environment the driver JVM inherits
	t.Setenv("HADOOP_USER_NAME", user)
	testbed.RunScenarioT(t, testbed.Hive313, uri, "ddl", "--db", db, "--conf", "hive.metastore.execute.setugi=true")
}

// processUser is the OS user the proxy and the metastores run as: what a plain metastore records for a connection
// that never sent set_ugi (its own login).
func processUser(t *testing.T) string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}

// On a plain front door (security.mode=NONE) with impersonation on, the user a connection's set_ugi names is its
// identity: the plain metastore's audit shows each end user, through that user's own backend sessions (opened with
// set_ugi of the proxy's), and the client's set_ugi is answered by the proxy, never forwarded. Before set_ugi, and
// with impersonation off, the metastore sees the proxy's own login.
func TestSetUGISelectsTheUserOnAPlainFrontDoor(t *testing.T) {
	tap := proxytest.NewTap(t, plain.URI)
	p := proxytest.Start(t, map[string]string{
		"catalogs": "catalog1", "catalog.catalog1.conf.hive.metastore.uris": tap.URI(),
		"security.impersonation-enabled": "true",
	})
	me := processUser(t)
	for _, u := range []string{"alice", "bob"} {
		if u == me {
			t.Fatalf("the test runs as OS user %s; it needs end users that differ from the proxy's login", me)
		}
	}
	dbs := map[string]string{"alice": uniq("ugia"), "bob": uniq("ugib")}
	for _, u := range []string{"alice", "bob"} {
		setUGIClient(t, p.URI("primary"), u, dbs[u])
	}
	for u, db := range dbs {
		got := auditUsers(t, plain, db)
		if len(got) == 0 {
			t.Fatalf("no audit line of %s in %s/metastore.log", db, plain.Dir)
		}
		for _, g := range got {
			if g != u {
				t.Fatalf("the plain metastore's audit of %s shows ugi=%v, want %s throughout", db, got, u)
			}
		}
	}
	users, _ := p.Router.ImpersonationUsers("catalog1")
	slices.Sort(users)
	if !slices.Equal(users, []string{"alice", "bob"}) {
		t.Fatalf("impersonation pools after the Java clients: %v, want alice and bob", users)
	}

	// A Go client: before set_ugi it runs as the proxy; set_ugi is answered as HMS answers it (the groups sent,
	// then the user) and binds carol; the metastore then sees carol; a second set_ugi is not forwarded.
	c := proxytest.Client(t, p.URI("primary"))
	anon := uniq("ugianon")
	if err := c.CreateDatabase(ctx(t), &thriftgen.Database{Name: anon}); err != nil {
		t.Fatal(err)
	}
	if got := auditUsers(t, plain, anon); len(got) == 0 || got[0] != me {
		t.Fatalf("a call before set_ugi reached the metastore as %v, want the proxy's own login %s", got, me)
	}
	tap.Reset()
	groups, err := c.SetUgi(ctx(t), "carol", []string{"analysts", "etl"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"analysts", "etl", "carol"}; !slices.Equal(groups, want) {
		t.Fatalf("set_ugi answered %v, want %v (HMS returns the groups with the user appended)", groups, want)
	}
	if m := tap.Methods(); slices.Contains(m, "set_ugi") {
		t.Fatalf("the client's set_ugi reached the backend: %v", m)
	}
	if _, err := c.GetDatabase(ctx(t), anon); err != nil {
		t.Fatal(err)
	}
	if got := auditUsers(t, plain, anon); got[len(got)-1] != "carol" {
		t.Fatalf("get_database after set_ugi(carol) reached the metastore as %v, want carol last", got)
	}
	var ugis []string
	for _, call := range tap.Calls() {
		if call.Method == "set_ugi" {
			var gs []string
			for _, e := range call.Args.Field(2).Elems {
				gs = append(gs, string(e.Str))
			}
			ugis = append(ugis, call.Args.Field(1).String()+"/"+strings.Join(gs, ","))
		}
	}
	if len(ugis) != 1 || ugis[0] != "carol/analysts,etl" {
		t.Fatalf("set_ugi calls the backend got: %v, want one (carol's first session, the groups asserted)", ugis)
	}
	if _, err := c.SetUgi(ctx(t), "carol", []string{"analysts", "etl"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetDatabase(ctx(t), anon); err != nil {
		t.Fatal(err)
	}
	if n := countMethod(tap.Calls(), "set_ugi"); n != 1 {
		t.Fatalf("the backend got %d set_ugi calls after a repeated set_ugi, want still 1 (calls: %v)", n, tap.Methods())
	}
	if err := c.DropDatabase(ctx(t), anon, true, true); err != nil {
		t.Fatal(err)
	}

	// Impersonation off: the identity still reaches the proxy's audit, the metastore sees the proxy.
	off := proxytest.Start(t, map[string]string{"catalogs": "catalog1", "catalog.catalog1.conf.hive.metastore.uris": plain.URI})
	db := uniq("ugioff")
	setUGIClient(t, off.URI("primary"), "alice", db)
	got := auditUsers(t, plain, db)
	if len(got) == 0 {
		t.Fatalf("no audit line of %s", db)
	}
	for _, g := range got {
		if g != me {
			t.Fatalf("with impersonation off the metastore's audit of %s shows ugi=%v, want the proxy's %s", db, got, me)
		}
	}
	if !auditHas(t, off.AuditFile, `"authenticatedUser":"alice"`) {
		t.Fatalf("the proxy's audit has no record for alice (set_ugi binds the user with impersonation off too)")
	}
	if _, ok := off.Router.ImpersonationUsers("catalog1"); ok {
		t.Fatal("impersonation pools exist with impersonation off")
	}
}

func auditHas(t *testing.T, file, needle string) bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), needle)
}

func countMethod(calls []proxytest.TapCall, method string) int {
	n := 0
	for _, c := range calls {
		if c.Method == method {
			n++
		}
	}
	return n
}

// A plain front door in front of a Kerberized metastore: the user set_ugi names reaches it through the backend
// delegation-token path (the proxy, a Hadoop proxy user there, obtains a token for that user and opens a DIGEST-MD5
// session with it).
func TestSetUGIToAKerberizedBackend(t *testing.T) {
	p := proxytest.Start(t, map[string]string{
		"catalogs": "catalog1", "catalog.catalog1.conf.hive.metastore.uris": krb1.URI,
		"catalog.catalog1.conf.hive.metastore.sasl.enabled":       "true",
		"catalog.catalog1.conf.hive.metastore.kerberos.principal": "hive/_HOST@" + kdc.Realm,
		"catalog.catalog1.conf.hadoop.rpc.protection":             "privacy",
		"security.client-principal":                               proxyP,
		"security.client-keytab":                                  proxyKT,
		"security.impersonation-enabled":                          "true",
	})
	c := proxytest.Client(t, p.URI("primary"))
	if _, err := c.SetUgi(ctx(t), "alice", nil); err != nil {
		t.Fatal(err)
	}
	db := uniq("ugikrb")
	if err := c.CreateDatabase(ctx(t), &thriftgen.Database{Name: db}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = backendAdmin(t, krb1).DropDatabase(ctx(t), db, true, true) })
	if got := auditUsers(t, krb1, db); len(got) == 0 || got[0] != "alice" {
		t.Fatalf("set_ugi(alice) on a plain front door reached the Kerberized metastore as %v, want alice", got)
	}
}
