package kerberos

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hms-proxy/hms-proxy/app"
	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/locks"
	"github.com/hms-proxy/hms-proxy/security/tokens"
	"github.com/hms-proxy/hms-proxy/security/zksasl"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// zkStores are the properties of a Kerberized federation whose synthetic lock store and delegation-token store
// live on the SASL ZooKeeper at addr, under lockZnode and tokenZnode, with the default ACLs.
func zkStores(t *testing.T, addr, lockZnode, tokenZnode string, extra ...string) map[string]string {
	const dt = "security.front-door-conf.hive.cluster.delegation."
	kv := []string{
		"synthetic-read-lock.store.mode=ZOOKEEPER",
		"synthetic-read-lock.store.zookeeper.connect-string=" + addr,
		"synthetic-read-lock.store.zookeeper.znode=" + lockZnode,
		"synthetic-read-lock.store.zookeeper.connection-timeout-ms=5000",
		"synthetic-read-lock.store.zookeeper.session-timeout-ms=20000",
		"synthetic-read-lock.store.zookeeper.base-sleep-ms=200",
		"synthetic-read-lock.store.zookeeper.max-retries=2",
		"security.front-door-conf.hadoop.proxyuser.hs2.hosts=*",
		"security.front-door-conf.hadoop.proxyuser.hs2.users=alice",
	}
	if tokenZnode != "" {
		kv = append(kv, dt+"token.store.class=org.apache.hadoop.hive.metastore.security.ZooKeeperTokenStore",
			dt+"token.store.zookeeper.connectString="+addr, dt+"token.store.zookeeper.znode="+tokenZnode)
	}
	return federation(t, append(kv, extra...)...)
}

// saslZK is a go-zookeeper session authenticated as principal (nil login: no SASL at all).
func saslZK(t *testing.T, z *testbed.ZooKeeper, principal, keytab string) *zk.Conn {
	t.Helper()
	dial := zk.Dialer(func(network, address string, timeout time.Duration) (net.Conn, error) {
		return net.DialTimeout(network, address, timeout)
	})
	if principal != "" {
		l, err := zksasl.NewLogin(zksasl.LoginOptions{Principal: principal, PrincipalKey: "test principal", Keytab: keytab, KeytabKey: "test keytab"})
		if err != nil {
			t.Fatal(err)
		}
		a, err := zksasl.New(zksasl.Options{Store: "test client", Login: l})
		if err != nil {
			t.Fatal(err)
		}
		dial = a.Dial
	}
	c, _, err := zk.Connect([]string{z.Addr}, 20*time.Second, zk.WithDialer(dial), zk.WithLogInfo(false), zk.WithLogger(quietZK{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// bounded runs f, giving up after d (a session the server refuses never gets an answer).
func bounded(d time.Duration, f func() error) error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(d):
		return errors.New("no answer within " + d.String())
	}
}

func shimLock(t *testing.T, c *thriftgen.Client, db string) int64 {
	t.Helper()
	op := thriftgen.DataOperationType_SELECT
	req := &thriftgen.LockRequest{User: "alice", Hostname: "localhost", Component: []*thriftgen.LockComponent{{
		Type: thriftgen.LockType_SHARED_READ, Level: thriftgen.LockLevel_DB, Dbname: db, OperationType: &op, IsTransactional: new(bool)}}}
	resp, err := c.Lock(ctx(t), req)
	if err != nil || resp.State != thriftgen.LockState_ACQUIRED {
		t.Fatalf("lock on %s: %+v, %v", db, resp, err)
	}
	if !locks.IsShimLockID(resp.Lockid) {
		t.Fatalf("lock on %s got id %d, not a synthetic lock", db, resp.Lockid)
	}
	return resp.Lockid
}

// Two Kerberized replicas share a ZooKeeper that requires SASL/Kerberos: a synthetic lock taken through A is
// checked and released through B, a delegation token issued through A is accepted over DIGEST-MD5 by B (the real
// Java client) and renewed and cancelled there; the znodes carry the proxy principal's sasl ACL, so a client
// without SASL and one with another principal can neither read nor delete them; after a ZooKeeper restart the
// sessions authenticate again and the locks keep working.
func TestZooKeeperSASLStoresAcrossReplicas(t *testing.T) {
	z := testbed.StartZooKeeperSASLT(t, testbed.ZooKeeperSASLOptions{KDC: kdc, RequireSASL: true})
	lockZnode, tokenZnode := "/"+uniq("sasl_locks"), "/"+uniq("sasl_tokens")
	a := proxytest.Start(t, zkStores(t, z.Addr, lockZnode, tokenZnode))
	b := proxytest.Start(t, zkStores(t, z.Addr, lockZnode, tokenZnode))
	alice := login(t, kdc.Principal("alice"), aliceKT, kdc.Krb5Conf)
	spn := "hmsproxy/_HOST@" + kdc.Realm
	ca, cb := kerberosClient(t, alice, spn, a.URI("primary")), kerberosClient(t, alice, spn, b.URI("primary"))

	// a synthetic lock of catalog2 through A, checked and released through B
	id := shimLock(t, ca, "catalog2__default")
	if st, err := cb.CheckLock(ctx(t), &thriftgen.CheckLockRequest{Lockid: id}); err != nil || st.State != thriftgen.LockState_ACQUIRED {
		t.Fatalf("check_lock through replica B: %+v, %v", st, err)
	}
	if err := cb.Unlock(ctx(t), &thriftgen.UnlockRequest{Lockid: id}); err != nil {
		t.Fatalf("unlock through replica B: %v", err)
	}
	var nsl *thriftgen.NoSuchLockException
	if _, err := ca.CheckLock(ctx(t), &thriftgen.CheckLockRequest{Lockid: id}); !errors.As(err, &nsl) {
		t.Fatalf("check_lock through A after B released it: %v, want NoSuchLockException", err)
	}

	// a token issued through A: the Java client uses it on B over DIGEST-MD5; B renews and cancels it
	tok, err := ca.GetDelegationToken(ctx(t), "alice", "alice")
	if err != nil {
		t.Fatalf("get_delegation_token through A: %v", err)
	}
	tokenOp(t, b.URI("primary"), "alice", aliceKT, "--op", "use", "--token", tok)
	if _, err := cb.RenewDelegationToken(ctx(t), tok); err != nil {
		t.Fatalf("renew_delegation_token through B: %v", err)
	}

	// the znodes: the proxy's principal may do everything, nobody else anything
	proxyZK := saslZK(t, z, proxyP, proxyKT)
	tokenRoot := tokenZnode + tokens.ServerMode
	keys, _, err := proxyZK.Children(tokenRoot + "/keys")
	if err != nil || len(keys) < 2 {
		t.Fatalf("the token store's master keys (one per replica): %v, %v", keys, err)
	}
	held := shimLock(t, ca, "catalog2__default")
	lockNodes, _, err := proxyZK.Children(lockZnode + "/locks")
	if err != nil || len(lockNodes) != 1 {
		t.Fatalf("lock znodes: %v, %v", lockNodes, err)
	}
	lockNode := lockZnode + "/locks/" + lockNodes[0]
	keyNode := tokenRoot + "/keys/" + keys[0]
	want := zk.ACL{Perms: zk.PermAll, Scheme: "sasl", ID: proxyP}
	for _, n := range []string{lockZnode, lockZnode + "/locks", lockNode, tokenRoot, tokenRoot + "/keys", keyNode, tokenRoot + "/tokens"} {
		acl, _, err := proxyZK.GetACL(n)
		if err != nil || len(acl) != 1 || acl[0] != want {
			t.Fatalf("ACL of %s: %+v, %v; want [%+v]", n, acl, err, want)
		}
	}
	bob := saslZK(t, z, kdc.Principal("bob"), bobKT)
	for _, n := range []string{lockNode, keyNode} {
		if _, _, err := bob.Get(n); !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("bob reads %s: %v, want %v", n, err, zk.ErrNoAuth)
		}
		if err := bob.Delete(n, -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("bob deletes %s: %v, want %v", n, err, zk.ErrNoAuth)
		}
	}
	if _, _, err := bob.Children(lockZnode + "/locks"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("bob lists the locks: %v, want %v", err, zk.ErrNoAuth)
	}
	anon := saslZK(t, z, "", "")
	if err := bounded(15*time.Second, func() error { _, _, err := anon.Get(lockNode); return err }); err == nil {
		t.Fatalf("a client without SASL read %s", lockNode)
	}
	if err := bounded(15*time.Second, func() error { return anon.Delete(lockNode, -1) }); err == nil {
		t.Fatalf("a client without SASL deleted %s", lockNode)
	}

	// ZooKeeper restarts: the sessions come back on new connections, which authenticate again
	if err := z.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := z.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := cb.CheckLock(ctx(t), &thriftgen.CheckLockRequest{Lockid: held})
		if err == nil && st.State == thriftgen.LockState_ACQUIRED {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("check_lock through B after the ZooKeeper restart: %+v, %v", st, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err := ca.Unlock(ctx(t), &thriftgen.UnlockRequest{Lockid: held}); err != nil {
		t.Fatalf("unlock through A after the restart: %v", err)
	}
	shimLock(t, cb, "catalog2__default")
	if err := cb.CancelDelegationToken(ctx(t), tok); err != nil {
		t.Fatalf("cancel_delegation_token through B after the restart: %v", err)
	}
	if _, err := ca.RenewDelegationToken(ctx(t), tok); err == nil {
		t.Fatalf("A renewed a token B cancelled")
	}
}

// startErr builds the proxy the binary would run from props and returns the start error.
func startErr(t *testing.T, props map[string]string) error {
	t.Helper()
	props["server.bind-host"] = "127.0.0.1"
	props["server.port"] = "0"
	props["management.port"] = "0"
	props["audit.file"] = t.TempDir() + "/audit.log"
	cfg, err := configs.Parse(props)
	if err != nil {
		return err
	}
	a, err := app.Build(cfg, slog.New(slog.DiscardHandler))
	if err == nil {
		_ = a.Shutdown(ctx(t))
		return errors.New("built")
	}
	return err
}

// Credentials the KDC refuses stop the proxy at start with an error naming them; an exchange the ZooKeeper
// server refuses after start shows in /readyz.
func TestZooKeeperSASLFailures(t *testing.T) {
	z := testbed.StartZooKeeperSASLT(t, testbed.ZooKeeperSASLOptions{KDC: kdc, RequireSASL: true})
	znode := "/" + uniq("sasl_fail")
	// a keytab whose key the KDC no longer has
	if err := kdc.AddPrincipal("stale/localhost"); err != nil {
		t.Fatal(err)
	}
	staleKT, err := kdc.Keytab(t.TempDir()+"/stale.keytab", "stale/localhost")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kdc.Kadmin("cpw -randkey " + kdc.Principal("stale/localhost")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		extra []string
		token bool
		want  []string
	}{
		{"token store, stale keytab", []string{"security.front-door-conf.hive.metastore.kerberos.principal=stale/localhost@" + kdc.Realm,
			"security.front-door-conf.hive.metastore.kerberos.keytab.file=" + staleKT}, true,
			[]string{"delegation token store", "stale/localhost@" + kdc.Realm}},
		{"unknown ZooKeeper principal", []string{"security.zookeeper.server-principal=zookeeper/nosuchhost"}, false,
			[]string{"synthetic lock store", "security.zookeeper.server-principal", "zookeeper/nosuchhost@" + kdc.Realm}},
	} {
		tz := ""
		if c.token {
			tz = znode + "t"
		}
		err := startErr(t, zkStores(t, z.Addr, znode, tz, c.extra...))
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Fatalf("%s: start error %v; want it to name %q", c.name, err, w)
			}
		}
		t.Logf("%s: %v", c.name, err)
	}
	// the front door's own principal, with a key the KDC no longer has: the lock store names it (the front door
	// itself logs in with it first and fails the same way)
	err = startErr(t, zkStores(t, z.Addr, znode, "", "security.server-principal=stale/localhost@"+kdc.Realm, "security.keytab="+staleKT))
	if err == nil || !strings.Contains(err.Error(), "stale/localhost@"+kdc.Realm) {
		t.Fatalf("stale server keytab: %v", err)
	}

	// A ZooKeeper principal the KDC knows but the server has no key for: the proxy starts (the ticket is
	// obtainable), every exchange is refused by the server, and /readyz names the failed SASL exchange.
	if err := kdc.AddPrincipal("zookeeper/elsewhere"); err != nil {
		t.Fatal(err)
	}
	// the token store connects at start: the refused exchange is its start error
	err = startErr(t, zkStores(t, z.Addr, znode, znode+"t", "security.zookeeper.server-principal=zookeeper/elsewhere",
		"security.front-door-conf.hive.cluster.delegation.token.store.zookeeper.connectTimeoutMillis=5000"))
	for _, w := range []string{"ZooKeeper token store", "ZooKeeper SASL (GSSAPI) authentication", "zookeeper/elsewhere@" + kdc.Realm, proxyP} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Fatalf("token store with a ZooKeeper principal the server has no key for: start error %v; want it to name %q", err, w)
		}
	}
	t.Logf("token store, refused exchange: %v", err)
	p := proxytest.Start(t, zkStores(t, z.Addr, znode, "", "security.zookeeper.server-principal=zookeeper/elsewhere"))
	deadline := time.Now().Add(45 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		var r struct {
			LockStore *struct {
				Reachable bool   `json:"reachable"`
				LastError string `json:"lastError"`
			} `json:"syntheticLockStore"`
		}
		resp, err := http.Get(p.ManagementURL() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if r.LockStore != nil {
			last = r.LockStore.LastError
			if !r.LockStore.Reachable && strings.Contains(last, "ZooKeeper SASL") && strings.Contains(last, "zookeeper/elsewhere@"+kdc.Realm) &&
				strings.Contains(last, proxyP) {
				t.Logf("/readyz: %s", last)
				return
			}
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("/readyz never named the failed ZooKeeper SASL exchange; last lock store error: %q", last)
}
