package gssapi

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/security/sasl"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// TestInitiatorToKerberizedHive: the backend direction. The Go initiator logs in from a keytab, resolves _HOST the
// way Hive's client does (127.0.0.1 -> localhost) and talks to a real Kerberized Hive metastore for each QOP; the
// metastore serves the calls as the proxy's principal. A TGT that runs out is replaced by a new keytab login when
// the next connection is opened, and connections opened before keep working.
func TestInitiatorToKerberizedHive(t *testing.T) {
	for _, v := range []testbed.Version{testbed.Hive313, testbed.Hive410} {
		t.Run(string(v), func(t *testing.T) { testInitiatorToHive(t, v) })
	}
}

func testInitiatorToHive(t *testing.T, v testbed.Version) {
	r := newRealm(t, testbed.KDCOptions{})
	const proxyLife = 8 * time.Second
	if err := r.kdc.AddPrincipalLife("hmsproxy/localhost", proxyLife); err != nil {
		t.Fatal(err)
	}
	proxyKT, err := r.kdc.Keytab("proxy.keytab", "hmsproxy/localhost")
	if err != nil {
		t.Fatal(err)
	}
	m := testbed.StartMetastoreWithT(t, v, testbed.MetastoreOptions{Kerberos: &testbed.MetastoreKerberos{
		KDC: r.kdc, Principal: r.serverP, Keytab: r.serverKT, Protection: "privacy,integrity,authentication"}})
	addr := strings.TrimPrefix(m.URI, "thrift://")
	kt, err := LoadKeytab(proxyKT)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLogin(LoginOptions{Principal: r.kdc.Principal("hmsproxy/localhost"), Keytab: kt, Config: r.cfg})
	if err != nil {
		t.Fatal(err)
	}
	if st := l.Status(); st.State != StatePending || st.LoggedIn {
		t.Fatalf("status before any connection: %+v", st)
	}
	var first *sasl.Conn
	for _, p := range protections {
		c, err := dialGo(t, r, l, r.kdc.Principal("hive/_HOST"), []sasl.QOP{p.qop}, addr)
		if err != nil {
			t.Fatalf("%s: %v", p.conf, err)
		}
		sc := c.(*sasl.Conn)
		if got := callGetAllDatabases(t, c); !slices.Contains(got, "default") {
			t.Fatalf("%s: databases %v", p.conf, got)
		}
		switch {
		case p.qop == sasl.QOPAuth && sc.Layer() != nil,
			p.qop != sasl.QOPAuth && sc.Layer().(*Layer).Sealed() != (p.qop == sasl.QOPAuthConf):
			t.Fatalf("%s: wrong layer %v", p.conf, sc.Layer())
		}
		if first == nil {
			first = sc
		} else {
			c.Close()
		}
	}
	defer first.Close()
	st := l.Status()
	if st.State != StateActive || !st.Healthy || *st.SecondsUntilExpiry > int64(proxyLife/time.Second) {
		t.Fatalf("status after login: %+v", st)
	}
	firstExpiry := st.TGTExpiresAtEpochSecond

	// the metastore knows who called: its audit log names the proxy's principal
	log, _ := os.ReadFile(filepath.Join(m.Dir, "metastore.log"))
	if !strings.Contains(string(log), "ugi=hmsproxy/localhost@"+r.kdc.Realm) {
		t.Fatalf("the metastore's audit log does not show the proxy's principal:\n%s", tailLines(string(log), 20))
	}

	// let the TGT run out
	time.Sleep(time.Until(time.Unix(firstExpiry, 0)) + time.Second)
	if st := l.Status(); st.State != StateStale || *st.SecondsUntilExpiry > 0 || !st.Healthy {
		t.Fatalf("status after expiry: %+v", st)
	}
	// a pooled session opened before still works
	if got := callGetAllDatabases(t, first); !slices.Contains(got, "default") {
		t.Fatalf("pooled session after expiry: %v", got)
	}
	// a new session logs in again by itself (through the pool-shaped dial the proxy uses)
	dial, err := BackendDial(l, BackendOptions{Principal: r.kdc.Principal("hive/_HOST"), Protection: "privacy"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := dial(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("new session after the TGT expired: %v", err)
	}
	defer c.Close()
	if got := callGetAllDatabases(t, c); !slices.Contains(got, "default") {
		t.Fatalf("new session: %v", got)
	}
	if st := l.Status(); st.State != StateActive || st.TGTExpiresAtEpochSecond <= firstExpiry {
		t.Fatalf("status after the re-login: %+v (first TGT expired at %d)", st, firstExpiry)
	}
}

func tailLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
