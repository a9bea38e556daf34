package tokens

import (
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hms-proxy/hms-proxy/testbed"
)

const zkClass = "org.apache.hadoop.hive.metastore.security.ZooKeeperTokenStore"

func openZK(t *testing.T, connect, znode string, clock *fakeClock, extra map[string]string) *Manager {
	t.Helper()
	conf := map[string]string{KeyStoreClass: zkClass, KeyZKConnectString: connect, KeyZKZNode: znode}
	for k, v := range extra {
		conf[k] = v
	}
	c, err := ParseConf(conf, "security.front-door-conf.", false)
	if err != nil {
		t.Fatal(err)
	}
	store, err := NewZKStore(*c.ZooKeeper)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Store: store, Now: clock.Now, KeyUpdateInterval: c.KeyUpdateInterval, RenewInterval: c.RenewInterval,
		MaxLifetime: c.MaxLifetime, GCInterval: c.GCInterval})
	if err != nil {
		t.Fatal(err)
	}
	m.ownsStore = true
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// TestZooKeeperReplicasAndHive: two managers ("replicas") share one real
// ZooKeeper; Hive's own ZooKeeperTokenStore and
// TokenStoreDelegationTokenSecretManager read and verify what they wrote,
// and the replicas verify and renew a token Hive issued into the same store.
func TestZooKeeperReplicasAndHive(t *testing.T) {
	z := testbed.StartZooKeeperT(t)
	const znode = "/hms-proxy-delegation-tokens"
	clock := newClock(time.Now())
	a := openZK(t, z.Addr, znode, clock, nil)
	b := openZK(t, z.Addr, znode, clock, nil)
	if a.current.ID == b.current.ID {
		t.Fatalf("replicas share key id %d", a.current.ID)
	}

	tokA, err := a.Get("alice@EXAMPLE.COM", "hive/hs2@EXAMPLE.COM", "hive/hs2@EXAMPLE.COM")
	if err != nil {
		t.Fatal(err)
	}
	ta, _ := identifierOf(t, tokA)
	if _, err := b.Verify(tokA); err != nil {
		t.Fatalf("token issued by A refused by B: %v", err)
	}

	// The znode layout is Hive's.
	conn, _, err := zk.Connect([]string{z.Addr}, 10*time.Second, zk.WithLogger(zkLogger{a.o.Logger}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	root := znode + ServerMode
	keyNames, _, err := conn.Children(root + "/keys")
	if err != nil {
		t.Fatal(err)
	}
	seqName := regexp.MustCompile(`^\d{10}$`)
	if len(keyNames) != 2 {
		t.Errorf("keys znodes %v, want 2", keyNames)
	}
	for _, n := range keyNames {
		data, _, err := conn.Get(root + "/keys/" + n)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := base64.RawURLEncoding.DecodeString(string(data))
		if err != nil || !seqName.MatchString(n) {
			t.Fatalf("key znode %s: %q (%v)", n, data, err)
		}
		k, err := DecodeDelegationKey(raw)
		if seq, _ := strconv.Atoi(n); err != nil || int(k.ID) != seq {
			t.Errorf("key znode %s holds key %+v (%v)", n, k, err)
		}
	}
	tokenNode := root + "/tokens/" + base64.RawURLEncoding.EncodeToString(ta.Identifier)
	data, _, err := conn.Get(tokenNode)
	if err != nil {
		t.Fatalf("token znode %s: %v", tokenNode, err)
	}
	if info, err := DecodeTokenInfo(data); err != nil || string(info.Password) != string(ta.Password) {
		t.Fatalf("token znode data: %+v, %v", info, err)
	}

	// A token under Hive 4's padded znode name (java.util.Base64 URL encoder) is found too.
	h4 := &Identifier{Owner: "hive4-user", Renewer: "hive", IssueDate: clock.Now().UnixMilli(),
		MaxDate: clock.Now().Add(time.Hour).UnixMilli(), SequenceNumber: 1, MasterKeyID: a.current.ID}
	for len(h4.Encode())%3 == 0 {
		h4.Owner += "x"
	}
	h4raw := h4.Encode()
	h4info := TokenInfo{RenewDate: clock.Now().Add(time.Hour).UnixMilli(), Password: Password(h4raw, a.current.Key)}
	padded := root + "/tokens/" + base64.URLEncoding.EncodeToString(h4raw)
	if !strings.HasSuffix(padded, "=") {
		t.Fatalf("%s has no padding", padded)
	}
	if _, err := conn.Create(padded, h4info.Encode(), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Password(h4raw); err != nil {
		t.Errorf("token under a padded znode name: %v", err)
	}
	if ok, err := b.o.Store.RemoveToken(h4raw); !ok || err != nil {
		t.Errorf("removing the padded token: %v %v", ok, err)
	}

	// Hive's ZooKeeperTokenStore lists the same keys and the token.
	res := hiveJava(t, "zk-read", z.Addr, znode)
	wantKeys := map[string]bool{}
	for _, m := range []*Manager{a, b} {
		wantKeys[fmt.Sprintf("%d %d %s", m.current.ID, m.current.Expiry, base64.StdEncoding.EncodeToString(m.current.Key))] = true
	}
	for _, k := range res["key"] {
		if !wantKeys[k] {
			t.Errorf("Hive read key %q, not one of ours %v", k, wantKeys)
		}
		delete(wantKeys, k)
	}
	if len(wantKeys) != 0 {
		t.Errorf("Hive did not read keys %v", wantKeys)
	}
	info, _ := a.o.Store.Token(ta.Identifier)
	wantToken := fmt.Sprintf("%s %d %s", base64.StdEncoding.EncodeToString(ta.Identifier), info.RenewDate,
		base64.StdEncoding.EncodeToString(info.Encode()))
	if got := one(t, res, "token"); got != wantToken {
		t.Errorf("Hive read token %q, want %q", got, wantToken)
	}

	// Hive's secret manager on the same store verifies our token and issues its own, which the replicas accept.
	res = hiveJava(t, "zk-manager", z.Addr, znode, tokA, "carol", "hive/hs2@EXAMPLE.COM")
	if got := one(t, res, "verifiedUser"); got != "alice" {
		t.Errorf("Hive verified user %q, want alice", got)
	}
	hiveTok := one(t, res, "issued")
	hid, err := b.Verify(hiveTok)
	if err != nil {
		t.Fatalf("token issued by Hive refused: %v", err)
	}
	if hid.Owner != "carol" || hid.Renewer != "hive" {
		t.Errorf("Hive's token: %s", hid)
	}
	if _, err := a.Renew(hiveTok, "hive"); err != nil {
		t.Errorf("renewing Hive's token: %v", err)
	}

	// Renew on B extends the token for A.
	clock.Advance(20 * time.Hour)
	if _, err := b.Renew(tokA, "hive"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Hour) // past the original renew date
	if _, _, err := a.Password(ta.Identifier); err != nil {
		t.Fatalf("A does not see B's renewal: %v", err)
	}
	// Key rolls on A: B verifies A's tokens under both keys.
	if err := a.RollMasterKey(); err != nil {
		t.Fatal(err)
	}
	tokA2, _ := a.Get("dave", "hive", "")
	if _, err := b.Verify(tokA2); err != nil {
		t.Fatalf("B refuses a token under A's new key: %v", err)
	}
	if _, err := b.Verify(tokA); err != nil {
		t.Fatalf("B refuses a token under A's retired key: %v", err)
	}
	// Cancel on A: refused on both.
	if _, err := a.Cancel(tokA, "alice@EXAMPLE.COM"); err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]*Manager{"A": a, "B": b} {
		if _, _, err := m.Password(ta.Identifier); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%s accepts a cancelled token: %v", name, err)
		}
	}
	if _, err := b.Renew(tokA, "hive"); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("B renews a cancelled token: %v", err)
	}
}

// TestZooKeeperOutage: with ZooKeeper stopped every operation fails with an
// error naming the store (not as an invalid token); once it is back the
// same manager serves again, tokens intact.
func TestZooKeeperOutage(t *testing.T) {
	z := testbed.StartZooKeeperT(t)
	clock := newClock(time.Now())
	m := openZK(t, z.Addr, "/outage", clock, map[string]string{KeyZKConnectTimeout: "3000"})
	tok, err := m.Get("alice", "hive", "")
	if err != nil {
		t.Fatal(err)
	}
	ti, _ := identifierOf(t, tok)
	if err := z.Stop(); err != nil {
		t.Fatal(err)
	}
	storeName := "ZooKeeper token store " + z.Addr + " /outageMETASTORE"
	start := time.Now()
	_, _, err = m.Password(ti.Identifier)
	if err == nil || errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), storeName) {
		t.Fatalf("Password with ZooKeeper down: %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("failure took %v", d)
	}
	t.Logf("with ZooKeeper down: %v", err)
	if _, err := m.Get("bob", "hive", ""); err == nil || !strings.Contains(err.Error(), storeName) {
		t.Errorf("Get with ZooKeeper down: %v", err)
	}
	if _, err := m.Renew(tok, "hive"); err == nil || errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), storeName) {
		t.Errorf("Renew with ZooKeeper down: %v", err)
	}

	// A store cannot be opened while ZooKeeper is down.
	c, _ := ParseConf(map[string]string{KeyStoreClass: zkClass, KeyZKConnectString: z.Addr, KeyZKConnectTimeout: "2000"}, "", false)
	if _, err := c.Open(nil, nil); err == nil || !strings.Contains(err.Error(), z.Addr) {
		t.Errorf("Open with ZooKeeper down: %v", err)
	}

	if err := z.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, _, err = m.Password(ti.Identifier)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("no recovery after ZooKeeper came back: %v", err)
	}
	if _, err := m.Get("bob", "hive", ""); err != nil {
		t.Errorf("Get after recovery: %v", err)
	}
}
