package tokens

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hms-proxy/hms-proxy/security/zksasl"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// TestKerberizedZooKeeperWithHive: on a ZooKeeper that requires SASL/Kerberos, the store (security.mode=KERBEROS
// defaults: SASL session, creator-only ACL) and Hive 3.1.3's own ZooKeeperTokenStore, both authenticated as the
// metastore principal (the Java one through its JAAS Client section), read each other's master keys and tokens:
// Hive verifies a token of the store, and the store verifies and renews one Hive issued.
func TestKerberizedZooKeeperWithHive(t *testing.T) {
	kdc := testbed.StartKDCT(t, testbed.KDCOptions{})
	t.Setenv("KRB5_CONFIG", kdc.Krb5Conf)
	const name = "hive/localhost"
	keytab, err := kdc.PrincipalKeytab("hive.keytab", name)
	if err != nil {
		t.Fatal(err)
	}
	z := testbed.StartZooKeeperSASLT(t, testbed.ZooKeeperSASLOptions{KDC: kdc, RequireSASL: true})
	const znode = "/hive-kerberized-tokens"

	c, err := ParseConf(map[string]string{KeyStoreClass: zkClass, KeyZKConnectString: z.Addr, KeyZKZNode: znode}, "security.front-door-conf.", true)
	if err != nil {
		t.Fatal(err)
	}
	login, err := zksasl.NewLogin(zksasl.LoginOptions{Principal: kdc.Principal(name), PrincipalKey: "principal", Keytab: keytab, KeytabKey: "keytab"})
	if err != nil {
		t.Fatal(err)
	}
	auth, err := zksasl.New(zksasl.Options{Store: "delegation token store", Login: login})
	if err != nil {
		t.Fatal(err)
	}
	zo := *c.ZooKeeper
	zo.Dialer, zo.AuthError = auth.Dial, auth.LastError
	store, err := NewZKStore(zo)
	if err != nil {
		t.Fatal(err)
	}
	clock := newClock(time.Now())
	m, err := New(Options{Store: store, Now: clock.Now, KeyUpdateInterval: c.KeyUpdateInterval, RenewInterval: c.RenewInterval,
		MaxLifetime: c.MaxLifetime, GCInterval: c.GCInterval})
	if err != nil {
		t.Fatal(err)
	}
	m.ownsStore = true
	t.Cleanup(func() { _ = m.Close() })
	tok, err := m.Get("alice@"+kdc.Realm, "hive", "")
	if err != nil {
		t.Fatal(err)
	}
	ti, _ := identifierOf(t, tok)

	// the store's znodes are the principal's alone
	acl, _, err := store.conn.GetACL(zo.Root + "/keys")
	want := zk.ACL{Perms: zk.PermAll, Scheme: "sasl", ID: kdc.Principal(name)}
	if err != nil || len(acl) != 1 || acl[0] != want {
		t.Fatalf("ACL of %s/keys: %+v, %v; want [%+v]", zo.Root, acl, err, want)
	}

	jaas := filepath.Join(t.TempDir(), "jaas.conf")
	if err := os.WriteFile(jaas, []byte(fmt.Sprintf(`Client {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true
  keyTab="%s"
  storeKey=true
  useTicketCache=false
  principal="%s";
};
`, keytab, kdc.Principal(name))), 0o644); err != nil {
		t.Fatal(err)
	}
	jvm := []string{"-Djava.security.auth.login.config=" + jaas, "-Djava.security.krb5.conf=" + kdc.Krb5Conf,
		"-Dhivetokens.acl=sasl:" + kdc.Principal(name) + ":cdrwa",
		"--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED", "--add-opens=java.security.jgss/sun.security.krb5=ALL-UNNAMED"}

	// Hive 3.1.3's ZooKeeper 3.4.9 client asks for zookeeper/<host as written>, not the canonical name: give it
	// the name the server's principal has
	hiveConnect := fmt.Sprintf("localhost:%d", z.Port)
	res := hiveJavaOpts(t, jvm, "zk-read", hiveConnect, znode)
	wantKey := fmt.Sprintf("%d %d %s", m.current.ID, m.current.Expiry, base64.StdEncoding.EncodeToString(m.current.Key))
	if got := one(t, res, "key"); got != wantKey {
		t.Errorf("Hive read key %q, want %q", got, wantKey)
	}
	info, _ := store.Token(ti.Identifier)
	wantToken := fmt.Sprintf("%s %d %s", base64.StdEncoding.EncodeToString(ti.Identifier), info.RenewDate,
		base64.StdEncoding.EncodeToString(info.Encode()))
	if got := one(t, res, "token"); got != wantToken {
		t.Errorf("Hive read token %q, want %q", got, wantToken)
	}

	res = hiveJavaOpts(t, jvm, "zk-manager", hiveConnect, znode, tok, "carol", "hive")
	if got := one(t, res, "verifiedUser"); got != "alice" {
		t.Errorf("Hive verified user %q, want alice", got)
	}
	hiveTok := one(t, res, "issued")
	hid, err := m.Verify(hiveTok)
	if err != nil {
		t.Fatalf("the token Hive issued into the Kerberized store is refused: %v", err)
	}
	if hid.Owner != "carol" {
		t.Errorf("Hive's token: %s", hid)
	}
	if _, err := m.Renew(hiveTok, "hive"); err != nil {
		t.Errorf("renewing Hive's token: %v", err)
	}
	// Hive's own znodes carry the same sasl ACL the store gives its own
	keys, _, err := store.conn.Children(zo.Root + "/keys")
	if err != nil || len(keys) < 2 {
		t.Fatalf("keys after Hive's manager ran: %v, %v", keys, err)
	}
	for _, k := range keys {
		acl, _, err := store.conn.GetACL(zo.Root + "/keys/" + k)
		if err != nil || len(acl) != 1 || acl[0] != want {
			t.Errorf("ACL of key %s: %+v, %v", k, acl, err)
		}
	}
}
