package tokens

import (
	"bytes"
	"encoding/base64"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *fakeClock { return &fakeClock{t: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestVLongEncoding(t *testing.T) {
	// Bytes as Hadoop's WritableUtils.writeVLong writes them.
	known := []struct {
		v    int64
		want []byte
	}{
		{0, []byte{0x00}},
		{127, []byte{0x7f}},
		{-1, []byte{0xff}},
		{-112, []byte{0x90}},
		{128, []byte{0x8f, 0x80}},
		{255, []byte{0x8f, 0xff}},
		{256, []byte{0x8e, 0x01, 0x00}},
		{-113, []byte{0x87, 0x70}},
		{1700000000000, []byte{0x8a, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00}},
		{math.MaxInt64, []byte{0x88, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{math.MinInt64, []byte{0x80, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	}
	for _, k := range known {
		if got := appendVLong(nil, k.v); !bytes.Equal(got, k.want) {
			t.Errorf("vlong %d = % x, want % x", k.v, got, k.want)
		}
		r := &reader{b: k.want}
		if got, err := r.vlong("v"); err != nil || got != k.v || r.off != len(k.want) {
			t.Errorf("read % x = %d, %v; want %d", k.want, got, err, k.v)
		}
	}
	for _, v := range []int64{1, -2, 1000, -1000, 1 << 31, -(1 << 31), 1<<40 + 5, -(1 << 50)} {
		r := &reader{b: appendVLong(nil, v)}
		if got, err := r.vlong("v"); err != nil || got != v {
			t.Errorf("round trip %d: %d, %v", v, got, err)
		}
	}
	if _, err := (&reader{b: appendVLong(nil, 1<<40)}).vint("masterKeyId"); err == nil || !strings.Contains(err.Error(), "masterKeyId") {
		t.Errorf("vint overflow: %v", err)
	}
	if _, err := (&reader{b: []byte{0x8a, 0x01}}).vlong("issueDate"); err == nil || !strings.Contains(err.Error(), "issueDate") {
		t.Errorf("truncated vlong: %v", err)
	}
}

func TestIdentifierRoundTripAndRefusals(t *testing.T) {
	id := &Identifier{Owner: "alice@EXAMPLE.COM", Renewer: "hive", RealUser: "hive/hs2@EXAMPLE.COM",
		IssueDate: 1700000000000, MaxDate: 1700604800000, SequenceNumber: 42, MasterKeyID: 7}
	raw := id.Encode()
	got, err := DecodeIdentifier(raw)
	if err != nil || *got != *id {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for name, b := range map[string][]byte{
		"empty":     nil,
		"version":   append([]byte{1}, raw[1:]...),
		"truncated": raw[:len(raw)-1],
		"trailing":  append(append([]byte{}, raw...), 0),
		"bad utf-8": {0, 2, 0xff, 0xfe, 0, 0, 0, 0, 0, 0},
		"huge text": {0, 0x8c, 0x7f, 0xff, 0xff, 0xff},
	} {
		if _, err := DecodeIdentifier(b); err == nil {
			t.Errorf("%s: decoded", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}

	tok := &Token{Identifier: raw, Password: []byte{1, 2, 3}, Kind: Kind}
	s := tok.String()
	if strings.ContainsAny(s, "+/=") {
		t.Errorf("token string %q is not URL-safe unpadded Base64", s)
	}
	std := base64.StdEncoding.EncodeToString(tok.Encode())
	for _, in := range []string{s, std} {
		back, err := DecodeToken(in)
		if err != nil || !bytes.Equal(back.Identifier, raw) || !bytes.Equal(back.Password, tok.Password) || back.Service != "" {
			t.Errorf("DecodeToken(%q) = %+v, %v", in, back, err)
		}
	}
	for _, bad := range []string{"", "not base64!", s[:len(s)-3], s + "AAAA",
		(&Token{Identifier: raw, Password: []byte{1}, Kind: "HDFS_DELEGATION_TOKEN"}).String()} {
		if _, err := DecodeToken(bad); err == nil {
			t.Errorf("DecodeToken(%q) accepted", bad)
		}
	}

	k := DelegationKey{ID: 9, Expiry: 1700000000000, Key: []byte("12345678")}
	if back, err := DecodeDelegationKey(k.Encode()); err != nil || back.ID != 9 || back.Expiry != k.Expiry || string(back.Key) != "12345678" {
		t.Errorf("key round trip: %+v, %v", back, err)
	}
	nk := DelegationKey{ID: 3, Expiry: 5}
	if back, err := DecodeDelegationKey(nk.Encode()); err != nil || back.Key != nil {
		t.Errorf("nil key round trip: %+v, %v", back, err)
	}
	info := TokenInfo{RenewDate: 1700086400000, Password: []byte("pw")}
	if back, err := DecodeTokenInfo(info.Encode()); err != nil || back.RenewDate != info.RenewDate || string(back.Password) != "pw" {
		t.Errorf("info round trip: %+v, %v", back, err)
	}
}

func newTestManager(t *testing.T, store Store, clock *fakeClock, reg prometheus.Registerer) *Manager {
	t.Helper()
	m, err := New(Options{Store: store, Now: clock.Now, Metrics: NewMetrics(reg)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func identifierOf(t *testing.T, token string) (*Token, *Identifier) {
	t.Helper()
	tok, err := DecodeToken(token)
	if err != nil {
		t.Fatal(err)
	}
	id, err := DecodeIdentifier(tok.Identifier)
	if err != nil {
		t.Fatal(err)
	}
	return tok, id
}

func TestManagerLifecycle(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := newClock(t0)
	reg := prometheus.NewRegistry()
	m := newTestManager(t, NewMemoryStore(), clock, reg)

	token, err := m.Get("alice", "hive/hs2.example.com@EXAMPLE.COM", "hive/hs2.example.com@EXAMPLE.COM")
	if err != nil {
		t.Fatal(err)
	}
	tok, id := identifierOf(t, token)
	if id.Owner != "alice" || id.Renewer != "hive" || id.RealUser != "hive/hs2.example.com@EXAMPLE.COM" ||
		id.IssueDate != t0.UnixMilli() || id.MaxDate != t0.Add(7*24*time.Hour).UnixMilli() || id.SequenceNumber != 1 {
		t.Fatalf("identifier %s", id)
	}
	pw, pid, err := m.Password(tok.Identifier)
	if err != nil || !bytes.Equal(pw, tok.Password) || pid.Owner != "alice" {
		t.Fatalf("Password: %v", err)
	}
	if _, err := m.Verify(token); err != nil {
		t.Fatalf("Verify: %v", err)
	}

	// Only the renewer renews, and only with the right password.
	if _, err := m.Renew(token, "mallory"); !errors.Is(err, ErrAccessDenied) || !strings.Contains(err.Error(), "non-matching renewer hive") {
		t.Errorf("renew by mallory: %v", err)
	}
	forged := (&Token{Identifier: tok.Identifier, Password: []byte("forged-password-xxxx"), Kind: Kind}).String()
	if _, err := m.Renew(forged, "hive"); !errors.Is(err, ErrAccessDenied) || !strings.Contains(err.Error(), "wrong password") {
		t.Errorf("renew of a forged token: %v", err)
	}
	if _, err := m.Verify(forged); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("verify of a forged token: %v", err)
	}

	// Without renewal the token dies after the renew interval; a renewal moves that.
	clock.Advance(20 * time.Hour)
	exp, err := m.Renew(token, "hive/other-host@EXAMPLE.COM") // any principal with short name hive
	if err != nil || !exp.Equal(t0.Add(44*time.Hour)) {
		t.Fatalf("renew: %v, %v", exp, err)
	}
	clock.Advance(10 * time.Hour) // 30 h: past the first renew date
	if _, _, err := m.Password(tok.Identifier); err != nil {
		t.Fatalf("renewed token refused: %v", err)
	}
	clock.Advance(15 * time.Hour) // 45 h: past the renewed date
	if _, _, err := m.Password(tok.Identifier); !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "is expired") {
		t.Fatalf("expired token: %v", err)
	}

	// Renewals never pass the max date; past it, renewal fails.
	clock.Advance(7*24*time.Hour - 45*time.Hour - time.Hour) // 1 h before max date
	if exp, err := m.Renew(token, "hive"); err != nil || exp.UnixMilli() != id.MaxDate {
		t.Fatalf("renew near max date: %v, %v (max %d)", exp, err, id.MaxDate)
	}
	clock.Advance(2 * time.Hour)
	if _, err := m.Renew(token, "hive"); !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "expired token") {
		t.Errorf("renew past max date: %v", err)
	}
	if _, _, err := m.Password(tok.Identifier); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("token past max date accepted: %v", err)
	}

	// Cancel: owner or renewer only; then the token is gone.
	t2, err := m.Get("bob", "hive", "")
	if err != nil {
		t.Fatal(err)
	}
	tok2, _ := identifierOf(t, t2)
	if _, err := m.Cancel(t2, "mallory"); !errors.Is(err, ErrAccessDenied) || !strings.Contains(err.Error(), "mallory is not authorized to cancel") {
		t.Errorf("cancel by mallory: %v", err)
	}
	if _, err := m.Cancel(t2, "bob"); err != nil {
		t.Errorf("cancel by owner: %v", err)
	}
	if _, _, err := m.Password(tok2.Identifier); !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("cancelled token: %v", err)
	}
	if _, err := m.Cancel(t2, "bob"); !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "not found") {
		t.Errorf("second cancel: %v", err)
	}
	if _, err := m.Renew(t2, "hive"); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("renew of a cancelled token: %v", err)
	}
	t3, _ := m.Get("carol", "hive", "")
	if _, err := m.Cancel(t3, "hive/x@EXAMPLE.COM"); err != nil {
		t.Errorf("cancel by renewer: %v", err)
	}
	t4, _ := m.Get("dave", "", "")
	if _, err := m.Renew(t4, "hive"); !errors.Is(err, ErrAccessDenied) || !strings.Contains(err.Error(), "without a renewer") {
		t.Errorf("renew of a token without renewer: %v", err)
	}
	if _, err := m.Get("", "hive", ""); err == nil {
		t.Error("token without owner issued")
	}

	if got := testutil.ToFloat64(m.o.Metrics.ops.WithLabelValues(OpIssue, ResultOK)); got != 4 {
		t.Errorf("issue ok = %v, want 4", got)
	}
	if got := testutil.ToFloat64(m.o.Metrics.ops.WithLabelValues(OpRenew, ResultDenied)); got != 3 {
		t.Errorf("renew denied = %v, want 3", got)
	}
	if got := testutil.ToFloat64(m.o.Metrics.ops.WithLabelValues(OpCancel, ResultDenied)); got != 1 {
		t.Errorf("cancel denied = %v, want 1", got)
	}
	if n, err := testutil.GatherAndCount(reg, MetricOperationsTotal); err != nil || n != 16 {
		t.Errorf("%s series: %d, %v", MetricOperationsTotal, n, err)
	}
}

func TestKeyRollingAndGC(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	clock := newClock(t0)
	store := NewMemoryStore()
	m := newTestManager(t, store, clock, nil)
	first := m.current.ID

	old, _ := m.Get("alice", "hive", "")
	oldTok, oldID := identifierOf(t, old)
	if oldID.MasterKeyID != first {
		t.Fatalf("signed with key %d, current %d", oldID.MasterKeyID, first)
	}
	clock.Advance(23 * time.Hour)
	if _, err := m.Renew(old, "hive"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour + time.Minute)
	if err := m.Maintain(); err != nil {
		t.Fatal(err)
	}
	if m.current.ID == first {
		t.Fatal("master key not rolled after the update interval")
	}
	fresh, _ := m.Get("alice", "hive", "")
	_, freshID := identifierOf(t, fresh)
	if freshID.MasterKeyID != m.current.ID {
		t.Errorf("new token signed with key %d, current %d", freshID.MasterKeyID, m.current.ID)
	}
	// The old token (renewed) still verifies under the retired key.
	if _, err := m.Renew(old, "hive"); err != nil {
		t.Fatalf("renew under a retired key: %v", err)
	}
	if _, _, err := m.Password(oldTok.Identifier); err != nil {
		t.Fatalf("retired key: %v", err)
	}
	keys, _ := store.Keys()
	if len(keys) != 2 {
		t.Fatalf("store keys %d, want 2", len(keys))
	}
	for _, k := range keys {
		if k.ID == first && k.Expiry != clock.Now().Add(7*24*time.Hour).UnixMilli() {
			t.Errorf("retired key expiry %d, want roll time + max lifetime", k.Expiry)
		}
	}

	// GC: an unrenewed token past its renew date leaves the store.
	clock.Advance(12 * time.Hour)
	if _, err := m.Renew(old, "hive"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(13 * time.Hour)
	n, err := m.RemoveExpired()
	if err != nil || n != 1 {
		t.Fatalf("RemoveExpired = %d, %v; want 1 (the fresh token, not the renewed one)", n, err)
	}
	if _, _, err := m.Password(oldTok.Identifier); err != nil {
		t.Fatalf("renewed token collected: %v", err)
	}

	// After the max lifetime the retired key expires and is dropped at the next roll.
	for i := 0; i < 8; i++ {
		clock.Advance(24*time.Hour + time.Minute)
		if err := m.Maintain(); err != nil {
			t.Fatal(err)
		}
	}
	keys, _ = store.Keys()
	for _, k := range keys {
		if k.ID == first {
			t.Errorf("expired key %d still stored", first)
		}
	}
	// A token whose key is gone is refused, naming the key id.
	id := &Identifier{Owner: "x", Renewer: "hive", IssueDate: clock.Now().UnixMilli(), MaxDate: clock.Now().Add(time.Hour).UnixMilli(),
		SequenceNumber: 1, MasterKeyID: 9999}
	raw := id.Encode()
	_ = store.AddToken(raw, TokenInfo{RenewDate: clock.Now().Add(time.Hour).UnixMilli(), Password: Password(raw, []byte("whatever"))})
	if _, _, err := m.Password(raw); !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "keyId=9999") {
		t.Errorf("unknown key: %v", err)
	}
	// A stored password not made with the named key (tampered store) is refused.
	id.MasterKeyID = m.current.ID
	raw = id.Encode()
	_ = store.AddToken(raw, TokenInfo{RenewDate: clock.Now().Add(time.Hour).UnixMilli(), Password: []byte("01234567890123456789")})
	if _, _, err := m.Password(raw); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("tampered stored password: %v", err)
	}
}

func TestParseConf(t *testing.T) {
	const p = "security.front-door-conf."
	c, err := ParseConf(map[string]string{}, p, false)
	if err != nil || c.ZooKeeper != nil || c.KeyUpdateInterval != 24*time.Hour || c.RenewInterval != 24*time.Hour ||
		c.MaxLifetime != 7*24*time.Hour || c.GCInterval != time.Hour {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	c, err = ParseConf(map[string]string{
		KeyMaxLifetime: "604800000", KeyRenewInterval: "2h", KeyKeyUpdateInterval: "1d", KeyGCInterval: "60000",
		KeyStoreClass:      "org.apache.hadoop.hive.metastore.security.ZooKeeperTokenStore",
		KeyZKConnectString: "zk1:2181, zk2", KeyZKZNode: "/hms-proxy-delegation-tokens", KeyZKACL: "world:anyone:cdrwa,ip:10.0.0.0/8:r",
		KeyZKConnectTimeout: "5000", "hadoop.proxyuser.hive.hosts": "*",
	}, p, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxLifetime != 7*24*time.Hour || c.RenewInterval != 2*time.Hour || c.GCInterval != time.Minute {
		t.Errorf("durations %+v", c)
	}
	z := c.ZooKeeper
	if z == nil || strings.Join(z.Servers, ",") != "zk1:2181,zk2:2181" || z.Root != "/hms-proxy-delegation-tokensMETASTORE" ||
		len(z.ACL) != 2 || z.ACL[1].Scheme != "ip" || z.ACL[1].Perms != 1 || z.OpTimeout != 5*time.Second {
		t.Errorf("zookeeper %+v", z)
	}
	c, err = ParseConf(map[string]string{KeyStoreClass: "org.apache.hadoop.hive.thrift.ZooKeeperTokenStore", KeyZKQuorum: "q1:2181"}, p, false)
	if err != nil || c.ZooKeeper.Root != "/hivedelegationMETASTORE" || c.ZooKeeper.Servers[0] != "q1:2181" {
		t.Errorf("quorum fallback and default znode: %+v, %v", c, err)
	}
	// under Kerberos the session authenticates with SASL: Hive's default
	// CREATOR_ALL_ACL, and the registry's example sasl:hive:cdrwa, are accepted
	c, err = ParseConf(map[string]string{KeyStoreClass: "org.apache.hadoop.hive.metastore.security.ZooKeeperTokenStore", KeyZKQuorum: "q1:2181"}, p, true)
	if err != nil || len(c.ZooKeeper.ACL) != 1 || c.ZooKeeper.ACL[0] != (zk.ACL{Perms: zk.PermAll, Scheme: "auth", ID: ""}) {
		t.Errorf("kerberos, no ACL: want auth::cdrwa, got %+v, %v", c, err)
	}
	c, err = ParseConf(map[string]string{KeyStoreClass: "org.apache.hadoop.hive.metastore.security.ZooKeeperTokenStore", KeyZKQuorum: "q1:2181",
		KeyZKACL: "sasl:hive:cdrwa"}, p, true)
	if err != nil || len(c.ZooKeeper.ACL) != 1 || c.ZooKeeper.ACL[0] != (zk.ACL{Perms: zk.PermAll, Scheme: "sasl", ID: "hive"}) {
		t.Errorf("kerberos, sasl:hive:cdrwa: %+v, %v", c, err)
	}

	zkClass := "org.apache.hadoop.hive.metastore.security.ZooKeeperTokenStore"
	for name, tc := range map[string]struct {
		conf     map[string]string
		kerberos bool
		want     []string
	}{
		"bad duration":   {map[string]string{KeyMaxLifetime: "1.5d"}, false, []string{p + KeyMaxLifetime, "1.5d"}},
		"zero duration":  {map[string]string{KeyRenewInterval: "0"}, false, []string{p + KeyRenewInterval, "positive"}},
		"unknown key":    {map[string]string{"hive.cluster.delegation.token.max-lifetme": "1"}, false, []string{"max-lifetme", "unknown"}},
		"db store":       {map[string]string{KeyStoreClass: "org.apache.hadoop.hive.metastore.security.DBTokenStore"}, false, []string{"DBTokenStore"}},
		"unknown store":  {map[string]string{KeyStoreClass: "com.example.Store"}, false, []string{"com.example.Store"}},
		"zk no connect":  {map[string]string{KeyStoreClass: zkClass}, false, []string{p + KeyZKConnectString, "required"}},
		"memory+zk keys": {map[string]string{KeyZKConnectString: "zk:2181"}, false, []string{"memory token store", p + KeyZKConnectString}},
		"sasl acl": {map[string]string{KeyStoreClass: zkClass, KeyZKConnectString: "zk:2181", KeyZKACL: "sasl:hive:cdrwa"}, false,
			[]string{p + KeyZKACL, "sasl:hive:cdrwa", "security.mode=KERBEROS"}},
		"auth acl": {map[string]string{KeyStoreClass: zkClass, KeyZKConnectString: "zk:2181", KeyZKACL: "auth::cdrwa"}, false,
			[]string{p + KeyZKACL, "security.mode=KERBEROS"}},
		"digest acl, kerberos": {map[string]string{KeyStoreClass: zkClass, KeyZKConnectString: "zk:2181", KeyZKACL: "digest:u:h:cdrwa"}, true,
			[]string{"digest"}},
		"digest acl": {map[string]string{KeyStoreClass: zkClass, KeyZKConnectString: "zk:2181", KeyZKACL: "digest:u:h:cdrwa"}, false,
			[]string{"digest"}},
		"bad perm": {map[string]string{KeyStoreClass: zkClass, KeyZKConnectString: "zk:2181", KeyZKACL: "world:anyone:rwx"}, false,
			[]string{"unknown permission 'x'"}},
		"bad znode": {map[string]string{KeyStoreClass: zkClass, KeyZKConnectString: "zk:2181", KeyZKZNode: "tokens/"}, false,
			[]string{p + KeyZKZNode}},
	} {
		_, err := ParseConf(tc.conf, p, tc.kerberos)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", name, err, w)
			}
		}
	}
}

// TestHiveReadsOurTokens: Hive's own Token and DelegationTokenIdentifier
// decode a token string this package issued, and Hadoop's HMAC over it with
// the same master key gives the same password.
func TestHiveReadsOurTokens(t *testing.T) {
	clock := newClock(time.Now())
	m := newTestManager(t, NewMemoryStore(), clock, nil)
	token, err := m.Get("alice@EXAMPLE.COM", "hive/hs2.example.com@EXAMPLE.COM", "hive/hs2.example.com@EXAMPLE.COM")
	if err != nil {
		t.Fatal(err)
	}
	_, id := identifierOf(t, token)
	res := hiveJava(t, "decode", token, base64.StdEncoding.EncodeToString(m.current.Key))
	want := map[string]string{
		"kind": Kind, "service": "", "owner": "alice@EXAMPLE.COM", "renewer": "hive", "realUser": "hive/hs2.example.com@EXAMPLE.COM",
		"issueDate": strconv.FormatInt(id.IssueDate, 10), "maxDate": strconv.FormatInt(id.MaxDate, 10),
		"sequenceNumber": "1", "masterKeyId": strconv.Itoa(int(id.MasterKeyID)), "user": "alice@EXAMPLE.COM",
		"passwordMatches": "true",
	}
	for k, v := range want {
		if got := one(t, res, k); got != v {
			t.Errorf("Hive read %s=%q, want %q", k, got, v)
		}
	}
}

// TestWeReadHiveTokens: a token made by Hive's classes decodes here, with the
// password this package computes.
func TestWeReadHiveTokens(t *testing.T) {
	key := []byte{9, 8, 7, 6, 5, 4, 3, 2}
	res := hiveJava(t, "issue", "bob@EXAMPLE.COM", "hive/h@EXAMPLE.COM", "oozie/o@EXAMPLE.COM", "1700000000000", "1700604800000",
		"300", "77", base64.StdEncoding.EncodeToString(key))
	tok, id := identifierOf(t, one(t, res, "token"))
	want := Identifier{Owner: "bob@EXAMPLE.COM", Renewer: "hive", RealUser: "oozie/o@EXAMPLE.COM", IssueDate: 1700000000000,
		MaxDate: 1700604800000, SequenceNumber: 300, MasterKeyID: 77}
	if *id != want {
		t.Errorf("identifier %+v, want %+v", id, want)
	}
	if !bytes.Equal(Password(tok.Identifier, key), tok.Password) {
		t.Error("password differs from Hadoop's")
	}
	if !bytes.Equal(id.Encode(), tok.Identifier) {
		t.Error("re-encoded identifier differs from Hive's bytes")
	}
}

func TestStartRollsInBackground(t *testing.T) {
	clock := newClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	m, err := New(Options{Store: NewMemoryStore(), Now: clock.Now, Tick: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	first := m.current.ID
	m.mu.Unlock()
	m.Start()
	clock.Advance(25 * time.Hour)
	deadline := time.Now().Add(10 * time.Second)
	for {
		m.mu.Lock()
		cur := m.current.ID
		m.mu.Unlock()
		if cur != first {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background loop did not roll the master key")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}
