package kerberos

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/router/proxytest"
	"github.com/hms-proxy/hms-proxy/security/tokens"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// tokenReplica is a Kerberized proxy in front of the plain metastore that keeps delegation tokens in a shared
// ZooKeeper; hs2 may act for alice (not bob) from anywhere.
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
	})
}

// tokenOp runs the driver's token scenario; it fails t unless the outcome is the expected one.
func tokenOp(t *testing.T, uri string, user, keytab string, args ...string) string {
	t.Helper()
	k := javaClient(testbed.Hive313, user, keytab, "privacy")
	steps := testbed.RunScenarioT(t, testbed.Hive313, uri, "token", append(args, k.Args()...)...)
	return steps[len(steps)-1].Detail
}

// A client obtains a delegation token through replica A and uses it on replica B over DIGEST-MD5 (the real
// HiveMetaStoreClient, as Spark executors and HiveServer2 sessions do); renewal extends it; cancellation makes it
// fail on both replicas; an expired, a forged and a cancelled token are refused; a service may obtain tokens only
// for the users the proxy-user rules allow.
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

	// a token past its renew date is refused
	short := tokenOp(t, ua, "alice", aliceKT, "--op", "get", "--owner", "alice", "--renewer", "alice")
	st, _ := tokens.DecodeToken(short)
	sid, _ := tokens.DecodeIdentifier(st.Identifier)
	time.Sleep(time.Until(time.UnixMilli(sid.IssueDate).Add(renew + time.Second)))
	tokenOp(t, ub, "alice", aliceKT, "--op", "use", "--expect-fail", "--token", short)
}
