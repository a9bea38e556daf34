package zksasl_test

import (
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hms-proxy/hms-proxy/security/zksasl"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// env is one KDC with the proxy's and another user's principals.
type env struct {
	kdc                  *testbed.KDC
	proxyKT, otherKT     string
	proxyName, otherName string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	kdc := testbed.StartKDCT(t, testbed.KDCOptions{})
	t.Setenv("KRB5_CONFIG", kdc.Krb5Conf)
	e := &env{kdc: kdc, proxyName: "hms-proxy/localhost", otherName: "alice"}
	var err error
	if e.proxyKT, err = kdc.PrincipalKeytab("proxy.keytab", e.proxyName); err != nil {
		t.Fatal(err)
	}
	if e.otherKT, err = kdc.PrincipalKeytab("alice.keytab", e.otherName); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) auth(t *testing.T, name, keytab string, o zksasl.Options) *zksasl.Authenticator {
	t.Helper()
	l, err := zksasl.NewLogin(zksasl.LoginOptions{Principal: e.kdc.Principal(name), PrincipalKey: "principal",
		Keytab: keytab, KeytabKey: "keytab"})
	if err != nil {
		t.Fatal(err)
	}
	o.Login = l
	if o.Store == "" {
		o.Store = "test store"
	}
	a, err := zksasl.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func connect(t *testing.T, z *testbed.ZooKeeper, a *zksasl.Authenticator) *zk.Conn {
	t.Helper()
	dial := zk.Dialer(func(network, address string, timeout time.Duration) (net.Conn, error) {
		return net.DialTimeout(network, address, timeout)
	})
	if a != nil {
		dial = a.Dial
	}
	c, _, err := zk.Connect([]string{z.Addr}, 20*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}), zk.WithDialer(dial))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// within runs f with a bound: a session the server refuses never answers.
func within(d time.Duration, f func() error) error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(d):
		return errors.New("no answer within " + d.String())
	}
}

// TestSASLZooKeeper runs the proxy's client against a real ZooKeeper 3.8 with
// Kerberos (MIT KDC): authentication, the ACLs it leads to, what clients
// without SASL or with another principal get, and a server restart.
func TestSASLZooKeeper(t *testing.T) {
	e := newEnv(t)
	open := testbed.StartZooKeeperSASLT(t, testbed.ZooKeeperSASLOptions{KDC: e.kdc})
	strict := testbed.StartZooKeeperSASLT(t, testbed.ZooKeeperSASLOptions{KDC: e.kdc, RequireSASL: true})
	proxy := e.auth(t, e.proxyName, e.proxyKT, zksasl.Options{})
	if err := proxy.Check([]string{open.Addr}); err != nil {
		t.Fatal(err)
	}
	if got, err := proxy.ServicePrincipal("127.0.0.1"); err != nil || got != e.kdc.Principal("zookeeper/localhost") {
		t.Fatalf("service principal for 127.0.0.1 = %q, %v; want zookeeper/localhost@realm (ZooKeeper's canonical host name)", got, err)
	}

	t.Run("acl", func(t *testing.T) {
		c := connect(t, open, proxy)
		if _, err := c.Create("/store", []byte("root"), 0, zksasl.DefaultACL()); err != nil {
			t.Fatalf("create with auth ACL as %s: %v", proxy.ClientPrincipal(), err)
		}
		if _, err := c.Create("/store/lock", []byte("secret"), 0, zksasl.DefaultACL()); err != nil {
			t.Fatal(err)
		}
		acl, _, err := c.GetACL("/store/lock")
		if err != nil {
			t.Fatal(err)
		}
		want := zk.ACL{Perms: zk.PermAll, Scheme: "sasl", ID: e.kdc.Principal(e.proxyName)}
		if len(acl) != 1 || acl[0] != want {
			t.Fatalf("ACL of a znode the proxy created = %+v, want [%+v]", acl, want)
		}
		if b, _, err := c.Get("/store/lock"); err != nil || string(b) != "secret" {
			t.Fatalf("the proxy reads its znode: %q, %v", b, err)
		}
		if proxy.Authentications() < 1 {
			t.Fatalf("no authentication counted")
		}

		anon := connect(t, open, nil)
		if _, _, err := anon.Get("/store/lock"); !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("a client without SASL reads the znode: err %v, want %v", err, zk.ErrNoAuth)
		}
		if err := anon.Delete("/store/lock", -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("a client without SASL deletes the znode: err %v, want %v", err, zk.ErrNoAuth)
		}

		other := connect(t, open, e.auth(t, e.otherName, e.otherKT, zksasl.Options{}))
		if _, _, err := other.Get("/store/lock"); !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("%s reads the proxy's znode: err %v, want %v", e.otherName, err, zk.ErrNoAuth)
		}
		if err := other.Delete("/store/lock", -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("%s deletes the proxy's znode: err %v, want %v", e.otherName, err, zk.ErrNoAuth)
		}
		// the other principal's own session works: it is authenticated, just not as the proxy
		if _, err := other.Create("/alice", nil, 0, zksasl.DefaultACL()); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("required-and-restart", func(t *testing.T) {
		anon := connect(t, strict, nil)
		err := within(10*time.Second, func() error { _, err := anon.Create("/x", nil, 0, zk.WorldACL(zk.PermAll)); return err })
		if err == nil {
			t.Fatalf("a client without SASL created a znode on a server that requires SASL")
		}
		c := connect(t, strict, proxy)
		if _, err := c.Create("/locks", []byte("1"), 0, zksasl.DefaultACL()); err != nil {
			t.Fatalf("create through SASL on a server that requires it: %v", err)
		}
		before := proxy.Authentications()
		if err := strict.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := strict.Start(); err != nil {
			t.Fatal(err)
		}
		// the session survives (its timeout is 20 s); the new connection authenticates again
		var b []byte
		err = within(40*time.Second, func() error {
			for {
				var err error
				if b, _, err = c.Get("/locks"); err == nil || !(errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer)) {
					return err
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
		if err != nil || string(b) != "1" {
			t.Fatalf("after the ZooKeeper restart: %q, %v", b, err)
		}
		if proxy.Authentications() <= before {
			t.Fatalf("the reconnect did not authenticate again (%d exchanges before, %d after)", before, proxy.Authentications())
		}
		if _, err := c.Set("/locks", []byte("2"), -1); err != nil {
			t.Fatalf("write after the restart: %v", err)
		}
	})

	t.Run("short-ids", func(t *testing.T) {
		// replicas with per-host principals share znodes when the server keeps short names only
		short := testbed.StartZooKeeperSASLT(t, testbed.ZooKeeperSASLOptions{KDC: e.kdc, RequireSASL: true, ShortIDs: true})
		otherKT, err := e.kdc.PrincipalKeytab(filepath.Join(t.TempDir(), "host2.keytab"), "hms-proxy/host2")
		if err != nil {
			t.Fatal(err)
		}
		a := connect(t, short, proxy)
		if _, err := a.Create("/shared", []byte("v"), 0, zksasl.DefaultACL()); err != nil {
			t.Fatalf("create: %v (last SASL error: %v)", err, proxy.LastError())
		}
		acl, _, err := a.GetACL("/shared")
		if want := (zk.ACL{Perms: zk.PermAll, Scheme: "sasl", ID: "hms-proxy"}); err != nil || len(acl) != 1 || acl[0] != want {
			t.Fatalf("ACL with short ids: %+v, %v; want [%+v]", acl, err, want)
		}
		b := connect(t, short, e.auth(t, "hms-proxy/host2", otherKT, zksasl.Options{}))
		if v, _, err := b.Get("/shared"); err != nil || string(v) != "v" {
			t.Fatalf("the other host's principal reads the znode: %q, %v", v, err)
		}
		other := connect(t, short, e.auth(t, e.otherName, e.otherKT, zksasl.Options{}))
		if _, _, err := other.Get("/shared"); !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("%s reads it: %v, want %v", e.otherName, err, zk.ErrNoAuth)
		}
	})

	t.Run("bad-credentials", func(t *testing.T) {
		// a keytab whose key the KDC no longer has: the principal's key changed after it was written
		if err := e.kdc.AddPrincipal("stale"); err != nil {
			t.Fatal(err)
		}
		staleKT, err := e.kdc.Keytab(filepath.Join(t.TempDir(), "stale.keytab"), "stale")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.kdc.Kadmin("cpw -randkey " + e.kdc.Principal("stale")); err != nil {
			t.Fatal(err)
		}
		// a principal the KDC does not know (deleted after its keytab was written)
		if err := e.kdc.AddPrincipal("gone"); err != nil {
			t.Fatal(err)
		}
		goneKT, err := e.kdc.Keytab(filepath.Join(t.TempDir(), "gone.keytab"), "gone")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.kdc.Kadmin("delprinc -force " + e.kdc.Principal("gone")); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ name, keytab, spn, want string }{
			{"stale", staleKT, "", e.kdc.Principal("stale")},
			{"gone", goneKT, "", e.kdc.Principal("gone")},
			{e.proxyName, e.proxyKT, "zookeeper/nosuchhost", "zookeeper/nosuchhost@" + e.kdc.Realm},
		} {
			a := e.auth(t, c.name, c.keytab, zksasl.Options{ServerPrincipal: c.spn, ServerPrincipalKey: "zk.server-principal"})
			err := a.Check([]string{open.Addr})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "test store") {
				t.Fatalf("%s: Check = %v; want an error naming the store and %s", c.name, err, c.want)
			}
			t.Logf("%s: %v", c.name, err)
		}
		// a keytab without the principal is refused before any KDC contact
		_, err = zksasl.NewLogin(zksasl.LoginOptions{Principal: e.kdc.Principal("bob"), PrincipalKey: "security.server-principal",
			Keytab: e.proxyKT, KeytabKey: "security.keytab"})
		if err == nil || !strings.Contains(err.Error(), "bob@") || !strings.Contains(err.Error(), "security.server-principal") {
			t.Fatalf("keytab without the principal: %v", err)
		}
	})

	t.Run("failed-exchange-is-reported", func(t *testing.T) {
		// the server's keytab is for zookeeper/localhost; a ticket for another
		// principal of the KDC cannot be accepted by it
		if err := e.kdc.AddPrincipal("zookeeper/elsewhere"); err != nil {
			t.Fatal(err)
		}
		a := e.auth(t, e.proxyName, e.proxyKT, zksasl.Options{ServerPrincipal: "zookeeper/elsewhere"})
		c := connect(t, strict, a)
		err := within(20*time.Second, func() error { _, _, err := c.Get("/locks"); return err })
		if err == nil {
			t.Fatalf("a session whose SASL exchange the server refused read a znode")
		}
		last := a.LastError()
		if last == nil || !strings.Contains(last.Error(), "zookeeper/elsewhere@") || !strings.Contains(last.Error(), e.kdc.Principal(e.proxyName)) {
			t.Fatalf("LastError = %v; want the failed exchange naming both principals", last)
		}
		t.Logf("reported: %v", last)
	})
}
