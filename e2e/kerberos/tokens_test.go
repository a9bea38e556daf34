package kerberos

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/security/tokens"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// tokenReplica is a Kerberized, impersonating proxy in front of the plain metastore that keeps delegation tokens
// in a shared ZooKeeper; hs2 may act for alice (not bob) from anywhere.
func tokenReplica(t *testing.T, zk *testbed.ZooKeeper, znode string, renew time.Duration) *proxytest.Proxy {
	const dt = "security.front-door-conf.hive.cluster.delegation."
	return proxytest.Start(t, map[string]string{
		"security.mode":             "KERBEROS",
		"security.server-principal": "hmsproxy/_HOST@" + kdc.Realm,
		"security.keytab":           proxyKT,
		"security.front-door-conf.hadoop.rpc.protection":      "privacy,authentication",
		"security.front-door-conf.hadoop.proxyuser.hs2.hosts": "*",
		"security.front-door-conf.hadoop.proxyuser.hs2.users": "alice",
		dt + "token.store.class":                              "org.apache.hadoop.hive.metastore.security.ZooKeeperTokenStore",
		dt + "token.store.zookeeper.connectString":            zk.Addr,
		dt + "token.store.zookeeper.znode":                    znode,
		dt + "token.store.zookeeper.acl":                      "world:anyone:cdrwa",
		// this ZooKeeper has no Kerberos (zookeeper_test.go runs the stores on one that has)
		"security.zookeeper.sasl.enabled":           "false",
		dt + "token.renew-interval":                 strconv.FormatInt(renew.Milliseconds(), 10),
		"catalogs":                                  "catalog1",
		"routing.default-catalog":                   "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": plain.URI,
		"security.impersonation-enabled":            "true",
	})
}

// plainAliceCalls counts the plain metastore's audit lines of calls as alice; last is the last audit line.
func plainAliceCalls(t *testing.T) (n int, last string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(plain.Dir, "metastore.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		i := strings.Index(line, "ugi=")
		if !strings.Contains(line, "audit") || i < 0 {
			continue
		}
		last = line
		if f := strings.Fields(line[i+4:]); len(f) > 0 && f[0] == "alice" {
			n++
		}
	}
	return n, last
}

// tokenOp runs the driver's token scenario; it fails t unless the outcome is the expected one.
func tokenOp(t *testing.T, uri string, user, keytab string, args ...string) string {
	t.Helper()
	k := javaClient(testbed.Hive313, user, keytab, "privacy")
	steps := testbed.RunScenarioT(t, testbed.Hive313, uri, "token", append(args, k.Args()...)...)
	return steps[len(steps)-1].Detail
}

// A client obtains a delegation token through replica A and uses it on replica B over DIGEST-MD5 (the real
// HiveMetaStoreClient, as Spark executors and HiveServer2 sessions do); renewal extends it (a renewed token works
// after its first expiry); cancellation makes it fail on both replicas; an expired, a forged and a cancelled token
// are refused; a service may obtain tokens only for the users the proxy-user rules allow, and the token it obtained
// for alice through A works on B, whose backend sees alice.
func TestDelegationTokensAcrossReplicas(t *testing.T) {
	zk := testbed.StartZooKeeperT(t)
	znode := "/" + uniq("hmsproxy_tokens")
	const renew = 20 * time.Second
	a, b := tokenReplica(t, zk, znode, renew), tokenReplica(t, zk, znode, renew)
	ua, ub := a.URI("primary"), b.URI("primary")

	tok := tokenOp(t, ua, "alice", aliceKT, "--op", "get", "--owner", "alice", "--renewer", "alice")
	tt, err := tokens.DecodeToken(tok)
	if err != nil {
		t.Fatalf("get_delegation_token answered %q: %v", tok, err)
	}
	id, err := tokens.DecodeIdentifier(tt.Identifier)
	if err != nil {
		t.Fatal(err)
	}
	if id.Owner != "alice" || id.Renewer != "alice" || id.RealUser != "" {
		t.Fatalf("token identifier %v", id)
	}
	// replica B accepts it over DIGEST-MD5, and runs the calls as alice
	tokenOp(t, ub, "alice", aliceKT, "--op", "use", "--token", tok)
	if n := b.Metric(t, "hms_proxy_authentication_handshake_duration_seconds", "mechanism", "DIGEST-MD5"); n < 1 {
		t.Fatalf("replica B timed %v DIGEST-MD5 handshakes", n)
	}
	audit, _ := os.ReadFile(b.AuditFile)
	if !strings.Contains(string(audit), `"method":"get_databases"`) || !strings.Contains(string(audit), `"authenticatedUser":"alice"`) {
		t.Fatalf("replica B's audit does not show alice's get_databases:\n%.1500s", audit)
	}
	// renewal on A extends the token past its first expiry
	detail := tokenOp(t, ua, "alice", aliceKT, "--op", "renew", "--token", tok)
	exp, err := strconv.ParseInt(strings.TrimPrefix(detail, "expiry="), 10, 64)
	if err != nil {
		t.Fatalf("renew answered %q", detail)
	}
	if first := id.IssueDate + renew.Milliseconds(); exp <= first {
		t.Fatalf("renewal moved the expiry to %d, not past the first expiry %d", exp, first)
	}
	// a forged token (right identifier, wrong password) is refused
	forged := *tt
	forged.Password = append([]byte(nil), tt.Password...)
	forged.Password[0] ^= 1
	tokenOp(t, ub, "alice", aliceKT, "--op", "use", "--expect-fail", "--token", forged.String())
	// cancelled on B, it fails on both
	tokenOp(t, ub, "alice", aliceKT, "--op", "cancel", "--token", tok)
	tokenOp(t, ua, "alice", aliceKT, "--op", "use", "--expect-fail", "--token", tok)
	tokenOp(t, ub, "alice", aliceKT, "--op", "use", "--expect-fail", "--token", tok)

	// a service obtains a token for a user the rules allow (alice), not for another (bob)
	forAlice := tokenOp(t, ua, "hs2/localhost", hs2KT, "--op", "get", "--owner", "alice", "--renewer", "hs2")
	at, _ := tokens.DecodeToken(forAlice)
	aid, err := tokens.DecodeIdentifier(at.Identifier)
	if err != nil || aid.Owner != "alice" || aid.RealUser != kdc.Principal("hs2/localhost") {
		t.Fatalf("hs2's token for alice: %v %v", aid, err)
	}
	// the token hs2 obtained through A works on B over DIGEST-MD5 (the real Java client, as an HS2 session's
	// tasks use it), and the backend sees alice
	before, _ := plainAliceCalls(t)
	tokenOp(t, ub, "hs2/localhost", hs2KT, "--op", "use", "--token", forAlice)
	if after, last := plainAliceCalls(t); after <= before {
		t.Fatalf("hs2's token for alice used on replica B: the metastore shows no new call as alice (%d, then %d; last audit line %q)", before, after, last)
	}
	if users, _ := b.Router.ImpersonationUsers("catalog1"); !slices.Contains(users, "alice") {
		t.Fatalf("replica B's impersonation pools after hs2's token for alice: %v", users)
	}
	k := javaClient(testbed.Hive313, "hs2/localhost", hs2KT, "privacy")
	steps, err := testbed.RunScenario(testbed.Hive313, ua, "token", append([]string{"--op", "get", "--owner", "bob", "--renewer", "hs2"}, k.Args()...)...)
	if err == nil {
		t.Fatalf("hs2 obtained a token for bob: %v", steps)
	}
	why := lastStep(steps)
	for _, want := range []string{"hs2/localhost@" + kdc.Realm, "bob", "127.0.0.1"} {
		if !strings.Contains(why, want) {
			t.Fatalf("the refusal does not name %s: %s", want, why)
		}
	}

	// renewal extends: a token renewed (on A) before its renew date works on B after it; a token not renewed is
	// refused there after its renew date
	ext := tokenOp(t, ua, "alice", aliceKT, "--op", "get", "--owner", "alice", "--renewer", "alice")
	short := tokenOp(t, ua, "alice", aliceKT, "--op", "get", "--owner", "alice", "--renewer", "alice")
	et, _ := tokens.DecodeToken(ext)
	eid, _ := tokens.DecodeIdentifier(et.Identifier)
	st, _ := tokens.DecodeToken(short)
	sid, _ := tokens.DecodeIdentifier(st.Identifier)
	issued := time.UnixMilli(eid.IssueDate)
	time.Sleep(time.Until(issued.Add(renew * 3 / 4)))
	renewedTo := tokenOp(t, ua, "alice", aliceKT, "--op", "renew", "--token", ext)
	newExp, err := strconv.ParseInt(strings.TrimPrefix(renewedTo, "expiry="), 10, 64)
	if err != nil {
		t.Fatalf("renew answered %q", renewedTo)
	}
	time.Sleep(time.Until(issued.Add(renew + time.Second)))
	tokenOp(t, ub, "alice", aliceKT, "--op", "use", "--token", ext)
	if done := time.Now(); !done.After(issued.Add(renew)) || !done.Before(time.UnixMilli(newExp)) {
		t.Fatalf("the renewed token was used at %v, not between its first expiry %v and its renewed one %v",
			done, issued.Add(renew), time.UnixMilli(newExp))
	}
	time.Sleep(time.Until(time.UnixMilli(sid.IssueDate).Add(renew + time.Second)))
	tokenOp(t, ub, "alice", aliceKT, "--op", "use", "--expect-fail", "--token", short)
}
