package testbed

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// TestKDCIssuesTickets starts a realm, makes a user and a service principal and has MIT's own kinit and klist use
// the keytab: the KDC is real and the keytabs hold the principals' current keys.
func TestKDCIssuesTickets(t *testing.T) {
	k := StartKDCT(t, KDCOptions{MaxLife: 10 * time.Minute})
	kt, err := k.PrincipalKeytab("alice.keytab", "alice", "hive/localhost")
	if err != nil {
		t.Fatal(err)
	}
	cc := k.Dir + "/alice.ccache"
	if err := k.Kinit("alice", kt, cc); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cc); err != nil {
		t.Fatalf("kinit wrote no credential cache: %v", err)
	}
	if err := k.Kinit("hive/localhost", kt, cc+"2"); err != nil {
		t.Fatal(err)
	}
	// a principal that does not exist is refused with kadmin's own message
	if _, err := k.Keytab("x.keytab", "nobody"); err == nil || !strings.Contains(err.Error(), "nobody") {
		t.Fatalf("ktadd of a missing principal: %v", err)
	}
	// Stop ends the krb5kdc process: nothing listens on its port any more
	k.Stop()
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", k.Port), time.Second); err == nil {
		c.Close()
		t.Fatalf("something still listens on the stopped KDC's port %d", k.Port)
	}
}

// TestKerberizedMetastore starts a Kerberized real Hive metastore (3.1.3 and 4.1.0, privacy) and has the real Java
// client of the same version log in from a keytab and list databases over SASL/GSSAPI; a plain client is refused.
func TestKerberizedMetastore(t *testing.T) {
	for _, v := range []Version{Hive313, Hive410} {
		t.Run(string(v), func(t *testing.T) { testKerberizedMetastore(t, v) })
	}
}

func testKerberizedMetastore(t *testing.T, v Version) {
	k := StartKDCT(t, KDCOptions{})
	hiveKT, err := k.PrincipalKeytab("hive.keytab", "hive/localhost")
	if err != nil {
		t.Fatal(err)
	}
	aliceKT, err := k.PrincipalKeytab("alice.keytab", "alice")
	if err != nil {
		t.Fatal(err)
	}
	m := StartMetastoreWithT(t, v, MetastoreOptions{Kerberos: &MetastoreKerberos{
		KDC: k, Principal: k.Principal("hive/localhost"), Keytab: hiveKT, Protection: "privacy"}})
	kc := KerberosClient{KDC: k, Principal: k.Principal("alice"), Keytab: aliceKT,
		ServerPrincipal: k.Principal("hive/_HOST"), Protection: "privacy"}
	uri := m.URI
	if v == Hive410 {
		uri = fmt.Sprintf("thrift://localhost:%d", m.Port) // Hive 4.1's client puts the URI host in for _HOST
	}
	steps := RunScenarioT(t, v, uri, "version", kc.Args()...)
	var login, dbs bool
	for _, s := range steps {
		login = login || (s.Step == "kerberosLogin" && strings.Contains(s.Detail, "alice@"+k.Realm))
		dbs = dbs || (s.Step == "getAllDatabases" && strings.Contains(s.Detail, "default"))
	}
	if !login || !dbs {
		t.Fatalf("want a kerberosLogin step for alice and getAllDatabases listing default; got %v", steps)
	}
	// the same client without Kerberos speaks plain Thrift to a SASL port and fails
	if _, err := RunScenario(v, m.URI, "version"); err == nil {
		t.Fatal("a plain client was served by a Kerberized metastore")
	}
}
